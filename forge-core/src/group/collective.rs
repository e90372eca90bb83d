//! Collectives over a group: all-reduce, all-gather and reduce-scatter, on one tensor per
//! device (tensor `i` on device `i`, which is its rank). Part of the groups (layer 7).
//!
//! Two engines run them:
//! - **host staging**, the default and the only one on wgpu, which has no peer-to-peer
//!   between devices: every device's tensor is downloaded (all at once, a thread each),
//!   reduced on the host in rank order (`((t0 ∘ t1) ∘ t2) ∘ …`, by
//!   [`ReduceOp::fold`]), and the result uploaded (written in place, or new tensors).
//!   It moves every byte through the host twice: a correct path everywhere, not a fast one.
//! - **NCCL**, on CUDA, once [`DeviceGroup::use_nccl`] opened its communicators (the
//!   `nccl` feature): the devices exchange the data themselves, over NVLink or PCIe, as
//!   NCCL chooses. Floats may then differ from host staging in their last bits: NCCL's
//!   reduction order is its own (a ring, a tree).
//!
//! A collective whose download fails changes nothing and names the device
//! ([`ForgeError::DeviceFailed`]); one whose write fails on a device leaves the tensors in
//! an unspecified state, and names that device.

use super::parallel::{run_parts, Part};
use super::DeviceGroup;
use crate::backend::collective::check_elem;
use crate::backend::{Memory, ReduceOp};
use crate::error::{ForgeError, Result};
use crate::runtime::ForgeRuntime;
use crate::tensor::{Element, GpuTensor};

/// A collective, as errors name it.
#[derive(Clone, Copy)]
enum Which {
    AllReduce,
    AllGather,
    ReduceScatter,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::AllReduce => "all_reduce",
            Which::AllGather => "all_gather",
            Which::ReduceScatter => "reduce_scatter",
        }
    }
}

impl DeviceGroup {
    /// The engine collectives go through: `host staging`, or NCCL's name and version once
    /// [`DeviceGroup::use_nccl`] succeeded.
    pub fn collectives_engine(&self) -> String {
        self.engine
            .as_ref()
            .map_or_else(|| "host staging".into(), |e| e.name())
    }

    /// Runs the group's collectives through NCCL from now on: opens its communicators over
    /// the devices, in order (every device must be a distinct CUDA device).
    ///
    /// Errors, in the order they are checked: a build without the `nccl` feature
    /// ([`ForgeError::NotBuilt`]), libnccl missing ([`ForgeError::MissingLibrary`], with a
    /// hint), a device that is not CUDA or an ordinal twice
    /// ([`ForgeError::InvalidArgument`]), NCCL's refusal. On error the group stays on its
    /// engine.
    pub fn use_nccl(&mut self) -> Result<()> {
        // The build and the library first: without them nothing else matters.
        crate::runtime::nccl_version()?;
        let ordinals = self
            .members
            .iter()
            .enumerate()
            .map(|(i, rt)| {
                rt.cuda_ordinal().ok_or_else(|| ForgeError::InvalidArgument {
                    kernel: "DeviceGroup::use_nccl",
                    message: format!(
                        "device #{i} ({}) is not a CUDA device; NCCL runs between CUDA devices, and a wgpu group's collectives go through the host",
                        super::describe(rt)
                    ),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.engine = Some(crate::runtime::open_nccl(&ordinals)?);
        Ok(())
    }

    /// Every tensor becomes the element-wise `op` of all of them, in place: after the call,
    /// each device holds the same reduction. `tensors[i]` must be on device `i`, all of
    /// one length.
    ///
    /// Errors: a tensor count other than the group's, a tensor on another device than its
    /// rank's, lengths that differ, an element type that cannot be reduced
    /// ([`ForgeError::InvalidArgument`]); a device that failed
    /// ([`ForgeError::DeviceFailed`]).
    pub fn all_reduce<T: Element + Send + Sync>(
        &mut self,
        tensors: &[GpuTensor<T>],
        op: ReduceOp,
    ) -> Result<()> {
        let len = self.check_ranks(Which::AllReduce, tensors)?;
        if let Some(engine) = self.engine.as_mut() {
            let mems = memories(tensors);
            return engine.all_reduce(&mems, &mems, T::ELEM, len as u64, op);
        }
        let reduced = self.staged_reduction(Which::AllReduce, tensors, op)?;
        let writes: Vec<Part<'_, (&GpuTensor<T>, &[T])>> = self
            .members
            .iter_mut()
            .zip(tensors)
            .enumerate()
            .map(|(device, (rt, t))| Part {
                device,
                rt,
                input: (t, &reduced[..]),
            })
            .collect();
        run_parts(
            writes,
            &|_, _| "`all_reduce`: writing the reduction".into(),
            &|rt, (t, data)| rt.write(t, data),
        )?;
        Ok(())
    }

    /// Every device gets every tensor, one after another in rank order: returns, for each
    /// device, a new tensor of `n · len` elements there. `tensors[i]` must be on device
    /// `i`, all of one length. Errors: those of [`DeviceGroup::all_reduce`].
    pub fn all_gather<T: Element + Send + Sync>(
        &mut self,
        tensors: &[GpuTensor<T>],
    ) -> Result<Vec<GpuTensor<T>>> {
        let len = self.check_ranks(Which::AllGather, tensors)?;
        let n = self.len();
        if self.engine.is_some() {
            let outputs = self.outputs(Which::AllGather, n * len)?;
            let (send, recv) = (memories(tensors), memories(&outputs));
            if let Some(engine) = self.engine.as_mut() {
                engine.all_gather(&send, &recv, T::ELEM, len as u64)?;
            }
            return Ok(outputs);
        }
        let parts = self.staged_downloads(Which::AllGather, tensors)?;
        let gathered: Vec<T> = parts.concat();
        self.upload_each(Which::AllGather, |_| &gathered[..])
    }

    /// The element-wise `op` of every tensor, cut in `n` blocks: returns, for each device
    /// `r`, a new tensor there with block `r` (`len / n` elements). `tensors[i]` must be on
    /// device `i`, all of one length, a multiple of the group's size. Errors: those of
    /// [`DeviceGroup::all_reduce`], and a length that is not a multiple of `n`.
    pub fn reduce_scatter<T: Element + Send + Sync>(
        &mut self,
        tensors: &[GpuTensor<T>],
        op: ReduceOp,
    ) -> Result<Vec<GpuTensor<T>>> {
        let len = self.check_ranks(Which::ReduceScatter, tensors)?;
        let n = self.len();
        if len % n != 0 {
            return Err(ForgeError::InvalidArgument {
                kernel: "reduce_scatter",
                message: format!(
                    "tensors of {len} elements cannot be cut in {n} equal blocks, one per device; give a multiple of {n}"
                ),
            });
        }
        let block = len / n;
        if self.engine.is_some() {
            let outputs = self.outputs(Which::ReduceScatter, block)?;
            let (send, recv) = (memories(tensors), memories(&outputs));
            if let Some(engine) = self.engine.as_mut() {
                engine.reduce_scatter(&send, &recv, T::ELEM, block as u64, op)?;
            }
            return Ok(outputs);
        }
        let reduced = self.staged_reduction(Which::ReduceScatter, tensors, op)?;
        self.upload_each(Which::ReduceScatter, |r| {
            &reduced[r * block..(r + 1) * block]
        })
    }

    /// Checks one tensor per device, each on its rank's device, all of one length and of
    /// a type collectives carry; returns the length.
    fn check_ranks<T: Element + Send + Sync>(
        &self,
        which: Which,
        tensors: &[GpuTensor<T>],
    ) -> Result<usize> {
        let what = which.name();
        check_elem(what, T::ELEM)?;
        let invalid = |message: String| ForgeError::InvalidArgument {
            kernel: what,
            message,
        };
        if tensors.len() != self.len() {
            return Err(invalid(format!(
                "{} tensors for {} devices; give one per device, tensor `i` on device `i`",
                tensors.len(),
                self.len()
            )));
        }
        for (rank, t) in tensors.iter().enumerate() {
            let device = self.holder(what, &|| format!("tensor #{rank}"), t)?;
            if device != rank {
                return Err(invalid(format!(
                    "tensor #{rank} is on device #{device}; tensor `i` must be on device `i` (move it with `DeviceGroup::move_to`)"
                )));
            }
        }
        let len = tensors[0].len();
        if let Some((rank, t)) = tensors.iter().enumerate().find(|(_, t)| t.len() != len) {
            return Err(invalid(format!(
                "tensor #{rank} has {} elements, tensor #0 {len}; every device's must have as many",
                t.len()
            )));
        }
        Ok(len)
    }

    /// Every tensor downloaded, each from its device, all at once; in rank order.
    fn staged_downloads<T: Element + Send + Sync>(
        &mut self,
        which: Which,
        tensors: &[GpuTensor<T>],
    ) -> Result<Vec<Vec<T>>> {
        let parts = self
            .members
            .iter_mut()
            .zip(tensors)
            .enumerate()
            .map(|(device, (rt, input))| Part { device, rt, input })
            .collect();
        let what = which.name();
        run_parts(
            parts,
            &|_, _| format!("`{what}`: downloading its tensor for host staging"),
            &|rt, t| rt.download(t),
        )
    }

    /// Every tensor downloaded and folded on the host in rank order.
    fn staged_reduction<T: Element + Send + Sync>(
        &mut self,
        which: Which,
        tensors: &[GpuTensor<T>],
        op: ReduceOp,
    ) -> Result<Vec<T>> {
        let mut parts = self.staged_downloads(which, tensors)?.into_iter();
        let mut acc = parts.next().unwrap_or_default();
        for part in parts {
            op.fold(
                T::ELEM,
                bytemuck::cast_slice_mut(&mut acc),
                bytemuck::cast_slice(&part),
            );
        }
        Ok(acc)
    }

    /// A new tensor on every device, device `r`'s holding `data(r)`, uploaded at once.
    fn upload_each<'d, T: Element + Send + Sync>(
        &mut self,
        which: Which,
        data: impl Fn(usize) -> &'d [T],
    ) -> Result<Vec<GpuTensor<T>>> {
        let parts: Vec<Part<'_, &[T]>> = self
            .members
            .iter_mut()
            .enumerate()
            .map(|(device, rt)| Part {
                device,
                rt,
                input: data(device),
            })
            .collect();
        let what = which.name();
        run_parts(
            parts,
            &|_, _| format!("`{what}`: uploading its result"),
            &|rt: &mut ForgeRuntime, d: &&[T]| rt.upload(d),
        )
    }

    /// A new zeroed tensor of `len` elements on every device, for an engine to fill.
    fn outputs<T: Element + Send + Sync>(
        &mut self,
        which: Which,
        len: usize,
    ) -> Result<Vec<GpuTensor<T>>> {
        let what = which.name();
        self.members
            .iter_mut()
            .enumerate()
            .map(|(device, rt)| {
                rt.zeros(len).map_err(|e| {
                    let work = format!("`{what}`: allocating its result");
                    super::device_failed(device, super::describe(rt), work, e)
                })
            })
            .collect()
    }
}

/// The tensors' memories, in rank order.
fn memories<T: Element>(tensors: &[GpuTensor<T>]) -> Vec<&Memory> {
    tensors.iter().map(|t| t.raw().memory()).collect()
}
