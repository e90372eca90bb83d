//! Several devices as one program: [`DeviceGroup`]. Layer 7 (groups), above the procedures:
//! a group owns several runtimes ([`ForgeRuntime`], one per device) and runs the
//! procedures (certification, tuning) on them; nothing below it names a group.
//!
//! A group opens one runtime per device: every adapter ([`DeviceGroup::all`]), those
//! picked ([`DeviceGroup::select`]), CUDA devices by ordinal ([`DeviceGroup::cuda`]),
//! runtimes built elsewhere ([`DeviceGroup::from_runtimes`]), or several devices on one
//! adapter ([`DeviceGroup::replicate`]: lavapipe in CI stands in for several GPUs this
//! way). Each runtime keeps its own memory budget, pipelines, tensors and pending work, its
//! topology hash and its manifests: a group adds no state to a device.
//!
//! Its submodules:
//! - [`parallel`]: work on every device at once (a thread each), and the rule for failures:
//!   one device failing fails the whole call, naming that device
//!   ([`crate::ForgeError::DeviceFailed`]), and no partial result is returned;
//! - [`shard`]: a batched call split across the devices and gathered ([`Shard`],
//!   [`DeviceGroup::map_shards`]; [`Split`] and [`DeviceGroup::run_sharded`] for any
//!   kernel along a `u32` dimension), and the split's certificate
//!   ([`DeviceGroup::certify_split`]);
//! - [`types`]: the devices grouped by type ([`DeviceType`]: the topology hash and the
//!   emission), and certification and tuning once per type, shared by its devices;
//! - [`tensors`]: tensors on a named device, and moves between devices (through the host);
//! - [`collective`]: all-reduce, all-gather and reduce-scatter over one tensor per device,
//!   through host staging, or NCCL on CUDA ([`DeviceGroup::use_nccl`], the `nccl` feature).
//!
//! The typed sharded forms of the built-in kernels (`gemm`, `gemm_f16`, `attention`,
//! `fft`) are in `forge_kernels::sharded`.

pub mod collective;
pub mod parallel;
pub mod shard;
pub mod tensors;
pub mod types;

pub use shard::{Shard, Split, SplitReport};
pub use types::DeviceType;

use crate::backend::Collectives;
use crate::error::{ForgeError, Result};
use crate::runtime::{group_adapters, ForgeRuntime, RuntimeBuilder};
use std::fmt;

/// Several devices, one runtime each, driven as one: see the [module docs](self).
///
/// ```
/// use forge_core::backend::ReduceOp;
/// use forge_core::group::DeviceGroup;
/// use forge_core::ForgeRuntime;
/// // Two devices on the one adapter: what CI has; on a machine with several GPUs,
/// // `DeviceGroup::all` opens one runtime on each.
/// let mut group = DeviceGroup::replicate(ForgeRuntime::builder().capacity(16 << 20), 2)?;
/// assert_eq!(group.len(), 2);
/// // A tensor on each device, then their sum on both.
/// let t = vec![group.upload(0, &[1.0f32, 2.0])?, group.upload(1, &[10.0f32, 20.0])?];
/// group.all_reduce(&t, ReduceOp::Sum)?;
/// assert_eq!(group.download(&t[1])?, vec![11.0, 22.0]);
/// // A batch split across the devices, each shard run where it landed, gathered in order.
/// let squares = group.map_shards("squares", 5, |_rt, shard| {
///     Ok(shard.range.clone().map(|i| i * i).collect::<Vec<_>>())
/// })?;
/// assert_eq!(squares.concat(), vec![0, 1, 4, 9, 16]);
/// # Ok::<(), forge_core::ForgeError>(())
/// ```
pub struct DeviceGroup {
    members: Vec<ForgeRuntime>,
    /// The engine collectives go through where one is open; host staging otherwise.
    engine: Option<Box<dyn Collectives>>,
}

impl fmt::Debug for DeviceGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceGroup")
            .field("devices", &self.members)
            .field("collectives", &self.collectives_engine())
            .finish()
    }
}

impl DeviceGroup {
    /// A group of runtimes built elsewhere, in this order (a device's index, and its rank
    /// in collectives, is its place here): the most general form, for runtimes with
    /// budgets, backends or caches of their own. Errors: no runtime
    /// ([`ForgeError::InvalidArgument`]).
    pub fn from_runtimes(runtimes: Vec<ForgeRuntime>) -> Result<Self> {
        if runtimes.is_empty() {
            return Err(ForgeError::InvalidArgument {
                kernel: "DeviceGroup",
                message: "a group needs at least one runtime".into(),
            });
        }
        Ok(DeviceGroup {
            members: runtimes,
            engine: None,
        })
    }

    /// One runtime on every device, each built by `template` (its capacity, cache, emission
    /// and the rest apply to each): every CUDA device where the template runs on CUDA
    /// ([`RuntimeBuilder::cuda`] or `FORGE_BACKEND=cuda`), else every GPU wgpu sees
    /// ([`group_adapters`]: each GPU once, CPU rasterisers only where there is none).
    ///
    /// Errors: no device ([`ForgeError::NoAdapter`], [`ForgeError::NoCudaDevice`]); a
    /// device that cannot be opened ([`ForgeError::DeviceFailed`], naming it).
    pub fn all(template: RuntimeBuilder) -> Result<Self> {
        if template.targets_cuda()? {
            let count = crate::runtime::cuda_device_count()?;
            if count == 0 {
                return Err(ForgeError::NoCudaDevice {
                    index: 0,
                    detail: "the driver sees no CUDA device".into(),
                });
            }
            let ordinals: Vec<usize> = (0..count).collect();
            return Self::cuda(template, &ordinals);
        }
        Self::select(template, |_, _| true)
    }

    /// One runtime on each adapter of [`group_adapters`] that `pick` keeps, given its
    /// index in that list and its description, each built by `template`: the devices the
    /// user names.
    ///
    /// ```
    /// use forge_core::group::DeviceGroup;
    /// use forge_core::ForgeRuntime;
    /// let group = DeviceGroup::select(ForgeRuntime::builder().capacity(1 << 20), |index, _info| index == 0)?;
    /// assert_eq!(group.len(), 1);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    ///
    /// Errors: `pick` keeps none ([`ForgeError::NoAdapter`], listing the adapters); a
    /// device that cannot be opened ([`ForgeError::DeviceFailed`], naming it).
    pub fn select(
        template: RuntimeBuilder,
        mut pick: impl FnMut(usize, &wgpu::AdapterInfo) -> bool,
    ) -> Result<Self> {
        let adapters = group_adapters();
        let seen: Vec<String> = adapters
            .iter()
            .map(|a| format!("`{}`", a.get_info().name))
            .collect();
        let picked: Vec<wgpu::Adapter> = adapters
            .into_iter()
            .enumerate()
            .filter(|(i, a)| pick(*i, &a.get_info()))
            .map(|(_, a)| a)
            .collect();
        if picked.is_empty() {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    " for the group (none was picked); adapters seen: {}",
                    if seen.is_empty() {
                        "none".into()
                    } else {
                        seen.join(", ")
                    }
                ),
            });
        }
        let runtimes = picked
            .into_iter()
            .enumerate()
            .map(|(i, adapter)| {
                let name = format!("`{}`", adapter.get_info().name);
                template
                    .clone()
                    .on_adapter(adapter)
                    .build()
                    .map_err(|e| opening_failed(i, name, e))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_runtimes(runtimes)
    }

    /// One runtime on each CUDA device of `ordinals`, in that order, each built by
    /// `template` with [`RuntimeBuilder::cuda`]. Errors: those of building each
    /// ([`ForgeError::NotBuilt`] without the `cuda` feature, [`ForgeError::NoCudaDevice`]),
    /// as [`ForgeError::DeviceFailed`] naming the device; no ordinal
    /// ([`ForgeError::InvalidArgument`]).
    pub fn cuda(template: RuntimeBuilder, ordinals: &[usize]) -> Result<Self> {
        let runtimes = ordinals
            .iter()
            .enumerate()
            .map(|(i, &ordinal)| {
                template
                    .clone()
                    .cuda(ordinal)
                    .build()
                    .map_err(|e| opening_failed(i, format!("CUDA device {ordinal}"), e))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::from_runtimes(runtimes)
    }

    /// `n` runtimes on the one device `template` opens: `n` logical devices on one
    /// adapter (each its own wgpu device, budget and queue; on CUDA, the same device's
    /// context `n` times). What tests and CI run groups on where there is one adapter
    /// (lavapipe): the devices share the hardware, so they show the group's logic, not its
    /// speed. Errors: `n == 0` ([`ForgeError::InvalidArgument`]); those of building a
    /// runtime.
    pub fn replicate(template: RuntimeBuilder, n: usize) -> Result<Self> {
        if n == 0 {
            return Err(ForgeError::InvalidArgument {
                kernel: "DeviceGroup::replicate",
                message: "a group of 0 devices; ask for at least one".into(),
            });
        }
        let first = template.clone().build()?;
        // The others open on the adapter the first one found, wherever the template's
        // search would look next.
        let next = match first.wgpu() {
            Some(w) => template.on_adapter(w.adapter.clone()),
            None => template,
        };
        let mut runtimes = vec![first];
        for i in 1..n {
            let name = format!("`{}`", runtimes[0].adapter_info().name);
            let rt = next
                .clone()
                .build()
                .map_err(|e| opening_failed(i, name, e))?;
            runtimes.push(rt);
        }
        Self::from_runtimes(runtimes)
    }

    /// How many devices the group has (at least one).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: a group has at least one device.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The runtimes, by device index.
    pub fn runtimes(&self) -> &[ForgeRuntime] {
        &self.members
    }

    /// The runtimes, by device index, to launch on one of them.
    pub fn runtimes_mut(&mut self) -> &mut [ForgeRuntime] {
        &mut self.members
    }

    /// Device `device`'s runtime. Errors: no such device ([`ForgeError::InvalidArgument`]).
    pub fn runtime(&mut self, device: usize) -> Result<&mut ForgeRuntime> {
        let n = self.members.len();
        self.members
            .get_mut(device)
            .ok_or_else(|| no_such_device("DeviceGroup::runtime", device, n))
    }

    /// The runtimes back, in order (the engine of collectives closes).
    pub fn into_runtimes(self) -> Vec<ForgeRuntime> {
        self.members
    }

    /// Device `device` as errors name it: its adapter's name and its emission.
    pub fn describe(&self, device: usize) -> String {
        self.members
            .get(device)
            .map_or_else(|| "no such device".into(), describe)
    }
}

/// A runtime's device as errors name it: `` `llvmpipe (LLVM 15.0.7, 256 bits)`, wgsl ``.
pub(crate) fn describe(rt: &ForgeRuntime) -> String {
    format!("`{}`, {}", rt.adapter_info().name, rt.emission())
}

/// The error for device `device` of a group of `n`.
pub(crate) fn no_such_device(what: &'static str, device: usize, n: usize) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel: what,
        message: format!(
            "device #{device}: the group has {n} device{} (#0..#{})",
            if n == 1 { "" } else { "s" },
            n - 1
        ),
    }
}

/// Device `device` (its adapter as [`describe`] names it) failed `work` with `e`, alone.
pub(crate) fn device_failed(
    device: usize,
    adapter: String,
    work: String,
    e: ForgeError,
) -> ForgeError {
    ForgeError::DeviceFailed {
        device,
        adapter,
        work,
        others: 0,
        source: Box::new(e),
    }
}

/// Device `i`'s runtime could not be opened.
fn opening_failed(i: usize, adapter: String, e: ForgeError) -> ForgeError {
    device_failed(i, adapter, "the opening of its runtime".into(), e)
}
