//! Dispatch: checks a call's arguments against the kernel and the adapter, binds buffers,
//! folds workgroup counts past the per-dimension limit, records, submits once and reads
//! back once.
//!
//! This module owns the two ways to launch a kernel and the pending command encoder:
//! - [`ForgeRuntime::launch_host`] takes host slices: it uploads them, runs the kernel and
//!   returns the writable bindings, in one submission and one readback;
//! - [`ForgeRuntime::launch_tensors`] binds device-resident tensors and only records the
//!   dispatch. Launches accumulate in a pending encoder until [`ForgeRuntime::flush`] or a
//!   download submits them, all in one submission.
//!
//! Every check that can fail on bad input runs before the GPU is touched. Workgroup
//! folding is the pure function [`fold_groups`].

use crate::buffers::{align_up, Lease, COPY_ALIGN, STAGING_ALIGN};
use crate::context::{error_scope, error_text};
use crate::error::{ForgeError, Result};
use crate::kernel::{Access, Binding, HostBuffer, Kernel};
use crate::schedule::Schedule;
use crate::tensor::RawTensor;
use crate::ForgeRuntime;
use std::sync::mpsc;

/// One binding's host data for [`crate::ForgeRuntime::launch_host`].
pub enum HostArg<'a> {
    /// Read-only: uploaded.
    In(&'a [u8]),
    /// Read-write: uploaded, then written back into the slice.
    InOut(&'a mut [u8]),
    /// Output: this many zeroed bytes are allocated and returned.
    Out(u64),
}

impl HostArg<'_> {
    /// The binding's size in bytes, before padding.
    pub fn len(&self) -> u64 {
        match self {
            HostArg::In(s) => s.len() as u64,
            HostArg::InOut(s) => s.len() as u64,
            HostArg::Out(n) => *n,
        }
    }

    /// Whether the binding has no bytes (an error at launch).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> &'static str {
        match self {
            HostArg::In(_) => "HostArg::In",
            HostArg::InOut(_) => "HostArg::InOut",
            HostArg::Out(_) => "HostArg::Out",
        }
    }
}

/// Workgroups that cannot be launched even folded over x, y and z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{groups} workgroups cannot be folded into three dimensions of at most {limit} each")]
pub struct FoldError {
    /// Workgroups needed.
    pub groups: u64,
    /// The per-dimension limit.
    pub limit: u32,
}

/// Spreads `groups` workgroups over (x, y, z), each at most `limit`, so that
/// `x * y * z >= groups` with little overshoot.
///
/// Up to `limit` groups run as `(groups, 1, 1)`. Past that, y is the fewest rows that fit
/// and x the fewest columns for those rows; z is used the same way once y would pass the
/// limit. A kernel computes its linear workgroup index as
/// `wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y` and returns early at or past `groups`,
/// so the overshoot does no work. Zero groups fold to `[0, 1, 1]`, an empty dispatch.
///
/// ```
/// use forge_core::dispatch::fold_groups;
/// assert_eq!(fold_groups(1000, 65535).unwrap(), [1000, 1, 1]);
/// assert_eq!(fold_groups(65536, 65535).unwrap(), [32768, 2, 1]);
/// assert!(fold_groups(u64::MAX, 65535).is_err());
/// ```
pub fn fold_groups(groups: u64, limit: u32) -> std::result::Result<[u32; 3], FoldError> {
    let err = FoldError { groups, limit };
    let lim = limit as u64;
    if groups == 0 {
        return Ok([0, 1, 1]);
    }
    if lim == 0 {
        return Err(err);
    }
    if groups <= lim {
        return Ok([groups as u32, 1, 1]);
    }
    let z = groups.div_ceil(lim * lim);
    if z > lim {
        return Err(err);
    }
    let per_slice = groups.div_ceil(z);
    let y = per_slice.div_ceil(lim);
    let x = per_slice.div_ceil(y);
    // Each of these is at most `lim` by construction; checked anyway, never wrapped.
    match (u32::try_from(x), u32::try_from(y), u32::try_from(z)) {
        (Ok(x), Ok(y), Ok(z)) if x <= limit && y <= limit && z <= limit => Ok([x, y, z]),
        _ => Err(err),
    }
}

/// Dispatches recorded by [`ForgeRuntime::launch_tensors`] and not yet submitted, with the
/// uniform buffers they read, which must not be reused before the submission.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) encoder: wgpu::CommandEncoder,
    pub(crate) retained: Vec<Lease>,
}

impl Pending {
    pub(crate) fn new(device: &wgpu::Device) -> Self {
        Pending {
            encoder: device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forge pending"),
            }),
            retained: Vec::new(),
        }
    }
}

pub(crate) const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);
pub(crate) const UNIFORM_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);
pub(crate) const STAGING_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

/// Writes `data` at offset 0, zero-padded to a multiple of `pad_to` bytes.
pub(crate) fn write_padded(queue: &wgpu::Queue, buffer: &wgpu::Buffer, data: &[u8], pad_to: u64) {
    let padded = align_up(data.len() as u64, pad_to) as usize;
    if padded == data.len() {
        queue.write_buffer(buffer, 0, data);
    } else {
        let mut tmp = Vec::with_capacity(padded);
        tmp.extend_from_slice(data);
        tmp.resize(padded, 0);
        queue.write_buffer(buffer, 0, &tmp);
    }
}

pub(crate) fn binding_resource(buffer: &wgpu::Buffer, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset: 0,
        size: wgpu::BufferSize::new(size),
    })
}

/// A uniform buffer's size for `len` bytes of params: a multiple of 16, at least 16.
pub fn uniform_size(len: usize) -> u64 {
    align_up(len as u64, 16).max(16)
}

impl ForgeRuntime {
    /// Checks a schedule against the adapter's workgroup limits.
    pub fn check_schedule(&self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<()> {
        let bad = |reason: String| ForgeError::BadSchedule {
            kernel: kernel.name(),
            schedule: schedule.to_string(),
            reason,
        };
        if schedule.workgroup == 0 || schedule.items == 0 || schedule.vector == 0 {
            return Err(bad(
                "workgroup, items and vector must each be at least 1".into()
            ));
        }
        let max_x = self
            .limits
            .max_compute_workgroup_size_x
            .min(self.limits.max_compute_invocations_per_workgroup);
        if schedule.workgroup > max_x {
            return Err(bad(format!(
                "workgroup size {} is over the adapter's limit of {max_x} (`max_compute_workgroup_size_x` / \
                 `max_compute_invocations_per_workgroup`)",
                schedule.workgroup
            )));
        }
        Ok(())
    }

    /// The folded workgroup counts for `threads` logical invocations.
    pub fn workgroups(
        &self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        threads: u64,
    ) -> Result<[u32; 3]> {
        if threads == 0 {
            return Err(ForgeError::EmptyWork {
                kernel: kernel.name(),
                what: "`threads` is 0".into(),
            });
        }
        let groups = schedule.groups_for(threads);
        fold_groups(groups, self.limits.max_compute_workgroups_per_dimension).map_err(|e| {
            ForgeError::TooManyWorkgroups {
                kernel: kernel.name(),
                groups: e.groups,
                limit: e.limit,
            }
        })
    }

    /// Checks one storage binding's size; returns it padded to whole words.
    pub(crate) fn check_binding_size(
        &self,
        kernel: &'static str,
        arg: &'static str,
        bytes: u64,
    ) -> Result<u64> {
        if bytes == 0 {
            return Err(ForgeError::EmptyWork {
                kernel,
                what: format!("argument `{arg}` has no elements"),
            });
        }
        let padded = align_up(bytes, COPY_ALIGN);
        let (limit_name, limit) =
            if self.limits.max_storage_buffer_binding_size <= self.limits.max_buffer_size {
                (
                    "max_storage_buffer_binding_size",
                    self.limits.max_storage_buffer_binding_size,
                )
            } else {
                ("max_buffer_size", self.limits.max_buffer_size)
            };
        if padded > limit {
            return Err(ForgeError::BindingTooLarge {
                kernel,
                arg,
                bytes: padded,
                limit_name,
                limit,
            });
        }
        Ok(padded)
    }

    /// Checks the params uniform's size; returns the uniform buffer's size, `None` without
    /// params.
    pub(crate) fn check_params(&self, kernel: &'static str, params: &[u8]) -> Result<Option<u64>> {
        if params.is_empty() {
            return Ok(None);
        }
        let size = uniform_size(params.len());
        let limit = self.limits.max_uniform_buffer_binding_size;
        if size > limit {
            return Err(ForgeError::BindingTooLarge {
                kernel,
                arg: "Params",
                bytes: size,
                limit_name: "max_uniform_buffer_binding_size",
                limit,
            });
        }
        Ok(Some(size))
    }

    /// Fails with `CapacityExceeded` when one call's buffers could never fit the budget.
    pub(crate) fn check_total(
        &self,
        kernel: &'static str,
        sizes: impl IntoIterator<Item = u64>,
    ) -> Result<()> {
        let total = sizes.into_iter().fold(0u64, u64::saturating_add);
        if total > self.capacity() {
            return Err(ForgeError::CapacityExceeded {
                what: format!("kernel `{kernel}`: its bindings"),
                requested: total,
                capacity: self.capacity(),
                in_use: self.pool.budget().in_use(),
            });
        }
        Ok(())
    }

    /// Runs a kernel on host data, in one submission and one readback.
    ///
    /// `args` follow [`Kernel::layout`]: `HostArg::In` for `Access::Read`, `HostArg::InOut`
    /// for `Access::ReadWrite`, `HostArg::Out` for `Access::Out`. Bindings `0..n` are storage
    /// buffers; non-empty `params` become the uniform at binding `n`, padded to 16 bytes.
    /// Buffers are padded to whole words with zeros.
    ///
    /// Returns one [`HostBuffer`] per `HostArg::Out`, in order; `HostArg::InOut` slices are
    /// overwritten with the kernel's results. Pending tensor launches, if any, go in the
    /// same submission, ahead of this one.
    ///
    /// Errors, all before the GPU is touched: a wrong argument count or kind
    /// ([`ForgeError::InvalidArgument`]), `threads == 0` or an empty binding
    /// ([`ForgeError::EmptyWork`]), a binding past the adapter's limit
    /// ([`ForgeError::BindingTooLarge`]), more bytes than the capacity
    /// ([`ForgeError::CapacityExceeded`]), too many workgroups
    /// ([`ForgeError::TooManyWorkgroups`]), a bad schedule ([`ForgeError::BadSchedule`]).
    pub fn launch_host(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: u64,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        let name = kernel.name();
        let layout = kernel.layout();
        check_arity(name, layout.len(), args.len(), "arguments")?;
        for (b, a) in layout.iter().zip(args.iter()) {
            let fits = matches!(
                (b.access, a),
                (Access::Read, HostArg::In(_))
                    | (Access::ReadWrite, HostArg::InOut(_))
                    | (Access::Out, HostArg::Out(_))
            );
            if !fits {
                return Err(ForgeError::InvalidArgument {
                    kernel: name,
                    message: format!(
                        "argument `{}` is declared {:?} but was passed as {}; use {}",
                        b.name,
                        b.access,
                        a.kind(),
                        match b.access {
                            Access::Read => "HostArg::In",
                            Access::ReadWrite => "HostArg::InOut",
                            Access::Out => "HostArg::Out",
                        }
                    ),
                });
            }
        }
        self.check_schedule(kernel, schedule)?;
        let dims = self.workgroups(kernel, schedule, threads)?;
        let sizes: Vec<u64> = layout
            .iter()
            .zip(args.iter())
            .map(|(b, a)| self.check_binding_size(name, b.name, a.len()))
            .collect::<Result<_>>()?;
        let uniform = self.check_params(name, params)?;
        self.check_total(name, sizes.iter().copied().chain(uniform))?;
        self.check_lost()?;

        let compiled = self.pipeline(kernel, schedule, uniform.is_some())?;

        // Buffers: one per binding, the uniform, and one staging buffer for every writable
        // binding at 256-byte-aligned offsets, so the results come back in a single map.
        let max_buffer = self.limits.max_buffer_size;
        let mut leases = Vec::with_capacity(layout.len());
        for (b, &size) in layout.iter().zip(&sizes) {
            let what = || format!("kernel `{name}`: argument `{}`", b.name);
            leases.push(
                self.pool
                    .acquire(&self.device, size, STORAGE_USAGE, max_buffer, &what)?,
            );
        }
        let uniform_lease = match uniform {
            Some(size) => {
                let what = || format!("kernel `{name}`: `Params`");
                Some(
                    self.pool
                        .acquire(&self.device, size, UNIFORM_USAGE, max_buffer, &what)?,
                )
            }
            None => None,
        };
        let mut staging_offsets = vec![None; layout.len()];
        let mut staging_size = 0u64;
        for (i, b) in layout.iter().enumerate() {
            if b.access.writable() {
                let offset = align_up(staging_size, STAGING_ALIGN);
                staging_offsets[i] = Some(offset);
                staging_size = offset + sizes[i];
            }
        }
        let staging = if staging_size > 0 {
            let what = || format!("kernel `{name}`: readback");
            Some(
                self.pool
                    .acquire(&self.device, staging_size, STAGING_USAGE, max_buffer, &what)?,
            )
        } else {
            None
        };

        let device = self.device.clone();
        let queue = &self.queue;
        let (encoder, err) = error_scope(&device, || {
            for ((b, a), lease) in layout.iter().zip(args.iter()).zip(&leases) {
                match a {
                    HostArg::In(data) => write_padded(queue, lease.buffer(), data, COPY_ALIGN),
                    HostArg::InOut(data) => write_padded(queue, lease.buffer(), data, COPY_ALIGN),
                    HostArg::Out(_) => debug_assert_eq!(b.access, Access::Out),
                }
            }
            if let Some(lease) = &uniform_lease {
                write_padded(queue, lease.buffer(), params, 16);
            }
            let mut entries: Vec<wgpu::BindGroupEntry<'_>> = layout
                .iter()
                .zip(&leases)
                .zip(&sizes)
                .map(|((b, lease), &size)| wgpu::BindGroupEntry {
                    binding: b.binding,
                    resource: binding_resource(lease.buffer(), size),
                })
                .collect();
            if let (Some(lease), Some(size)) = (&uniform_lease, uniform) {
                entries.push(wgpu::BindGroupEntry {
                    binding: layout.len() as u32,
                    resource: binding_resource(lease.buffer(), size),
                });
            }
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &compiled.layout,
                entries: &entries,
            });
            let mut encoder = device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(name) });
            for ((b, lease), &size) in layout.iter().zip(&leases).zip(&sizes) {
                if b.access == Access::Out {
                    // Pooled buffers hold the last call's data: outputs start zeroed.
                    encoder.clear_buffer(lease.buffer(), 0, Some(size));
                }
            }
            record_pass(&mut encoder, name, &compiled.pipeline, &bind_group, dims);
            if let Some(staging) = &staging {
                for ((lease, &size), offset) in leases.iter().zip(&sizes).zip(&staging_offsets) {
                    if let Some(offset) = offset {
                        encoder.copy_buffer_to_buffer(
                            lease.buffer(),
                            0,
                            staging.buffer(),
                            *offset,
                            size,
                        );
                    }
                }
            }
            encoder
        });
        if let Some(e) = err {
            return Err(self.explain(ForgeError::Gpu {
                context: "recording a dispatch",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            }));
        }
        self.stats.dispatches += 1;
        self.submit_with_pending(encoder)?;

        let mut outputs = Vec::new();
        if let Some(staging) = &staging {
            self.read_staging(staging.buffer(), staging_size, |bytes| {
                for (((b, a), offset), _) in layout
                    .iter()
                    .zip(args.iter_mut())
                    .zip(&staging_offsets)
                    .zip(&sizes)
                {
                    let Some(offset) = *offset else { continue };
                    let start = offset as usize;
                    match a {
                        HostArg::InOut(slice) => {
                            let len = slice.len();
                            slice.copy_from_slice(&bytes[start..start + len]);
                        }
                        HostArg::Out(n) => {
                            let len = *n as usize;
                            outputs.push(HostBuffer::from_slice::<u8>(
                                b.elem,
                                &bytes[start..start + len],
                            ));
                        }
                        HostArg::In(_) => {}
                    }
                }
            })?;
        }
        for lease in leases.into_iter().chain(uniform_lease).chain(staging) {
            self.pool.release(lease);
        }
        Ok(outputs)
    }

    /// Records a launch of `kernel` on device-resident tensors without submitting it.
    ///
    /// `tensors` follow [`Kernel::layout`]; each must have its binding's element type.
    /// Launches accumulate in one pending encoder; [`ForgeRuntime::flush`], a download, or
    /// a [`ForgeRuntime::launch_host`] submits them all in one submission, in order.
    pub fn launch_tensors(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: u64,
        tensors: &[&RawTensor],
    ) -> Result<()> {
        let name = kernel.name();
        let layout = kernel.layout();
        check_arity(name, layout.len(), tensors.len(), "tensors")?;
        for (b, t) in layout.iter().zip(tensors) {
            check_elem(name, b, t)?;
        }
        check_aliasing(name, layout, tensors)?;
        self.check_schedule(kernel, schedule)?;
        let dims = self.workgroups(kernel, schedule, threads)?;
        let sizes: Vec<u64> = layout
            .iter()
            .zip(tensors)
            .map(|(b, t)| self.check_binding_size(name, b.name, t.bytes()))
            .collect::<Result<_>>()?;
        let uniform = self.check_params(name, params)?;
        self.check_lost()?;

        let compiled = self.pipeline(kernel, schedule, uniform.is_some())?;
        let uniform_lease = match uniform {
            Some(size) => {
                let what = || format!("kernel `{name}`: `Params`");
                Some(self.pool.acquire(
                    &self.device,
                    size,
                    UNIFORM_USAGE,
                    self.limits.max_buffer_size,
                    &what,
                )?)
            }
            None => None,
        };

        let device = self.device.clone();
        let queue = &self.queue;
        let (bind_group, err) = error_scope(&device, || {
            if let Some(lease) = &uniform_lease {
                write_padded(queue, lease.buffer(), params, 16);
            }
            let mut entries: Vec<wgpu::BindGroupEntry<'_>> = layout
                .iter()
                .zip(tensors)
                .zip(&sizes)
                .map(|((b, t), &size)| wgpu::BindGroupEntry {
                    binding: b.binding,
                    resource: binding_resource(t.buffer(), size),
                })
                .collect();
            if let (Some(lease), Some(size)) = (&uniform_lease, uniform) {
                entries.push(wgpu::BindGroupEntry {
                    binding: layout.len() as u32,
                    resource: binding_resource(lease.buffer(), size),
                });
            }
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &compiled.layout,
                entries: &entries,
            })
        });
        if let Some(e) = err {
            return Err(self.explain(ForgeError::Gpu {
                context: "binding tensors",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            }));
        }
        let pending = self.pending.get_or_insert_with(|| Pending::new(&device));
        record_pass(
            &mut pending.encoder,
            name,
            &compiled.pipeline,
            &bind_group,
            dims,
        );
        pending.retained.extend(uniform_lease);
        self.stats.dispatches += 1;
        Ok(())
    }

    /// Submits every pending launch in one submission. Does nothing when none is pending.
    /// Does not wait for the GPU; downloads do.
    pub fn flush(&mut self) -> Result<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        self.check_lost()?;
        let device = self.device.clone();
        let queue = &self.queue;
        let ((), err) = error_scope(&device, || {
            queue.submit([pending.encoder.finish()]);
        });
        self.stats.submissions += 1;
        for lease in pending.retained {
            self.pool.release(lease);
        }
        match err {
            Some(e) => Err(self.explain(ForgeError::Gpu {
                context: "submitting pending launches",
                message: error_text(&e),
            })),
            None => Ok(()),
        }
    }

    /// Whether launches are recorded but not yet submitted.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Finishes `encoder` and submits it after any pending launches, in one submission.
    pub(crate) fn submit_with_pending(&mut self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.check_lost()?;
        let pending = self.pending.take();
        let device = self.device.clone();
        let queue = &self.queue;
        let (retained, err) = error_scope(&device, || {
            let mut buffers = Vec::with_capacity(2);
            let mut retained = Vec::new();
            if let Some(p) = pending {
                buffers.push(p.encoder.finish());
                retained = p.retained;
            }
            buffers.push(encoder.finish());
            queue.submit(buffers);
            retained
        });
        self.stats.submissions += 1;
        for lease in retained {
            self.pool.release(lease);
        }
        match err {
            Some(e) => Err(self.explain(ForgeError::Gpu {
                context: "submitting work",
                message: error_text(&e),
            })),
            None => Ok(()),
        }
    }

    /// Maps `buffer[0..size]` for reading, waits for the GPU, and hands the bytes to `read`.
    /// Counts one readback.
    pub(crate) fn read_staging<R>(
        &mut self,
        buffer: &wgpu::Buffer,
        size: u64,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let (tx, rx) = mpsc::channel();
        let device = self.device.clone();
        let ((), err) = error_scope(&device, || {
            buffer.map_async(wgpu::MapMode::Read, 0..size, move |result| {
                // The receiver outlives the wait below; a send error cannot happen in practice.
                let _ = tx.send(result);
            });
        });
        if let Some(e) = err {
            return Err(self.explain(ForgeError::Gpu {
                context: "reading results back",
                message: error_text(&e),
            }));
        }
        self.stats.readbacks += 1;
        self.wait()?;
        match rx.try_recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(self.explain(ForgeError::Gpu {
                    context: "reading results back",
                    message: e.to_string(),
                }))
            }
            Err(_) => {
                self.check_lost()?;
                return Err(ForgeError::Gpu {
                    context: "reading results back",
                    message: "the buffer was not mapped after the GPU went idle".into(),
                });
            }
        }
        let out = {
            let view = buffer
                .get_mapped_range(0..size)
                .map_err(|e| ForgeError::Gpu {
                    context: "reading results back",
                    message: e.to_string(),
                })?;
            read(&view)
        };
        buffer.unmap();
        Ok(out)
    }
}

fn record_pass(
    encoder: &mut wgpu::CommandEncoder,
    name: &'static str,
    pipeline: &wgpu::ComputePipeline,
    bind_group: &wgpu::BindGroup,
    [x, y, z]: [u32; 3],
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(name),
        timestamp_writes: None,
    });
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, bind_group, &[]);
    pass.dispatch_workgroups(x, y, z);
}

fn check_arity(kernel: &'static str, expected: usize, got: usize, what: &str) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "expected {expected} {what}, one per binding in layout order, got {got}"
            ),
        })
    }
}

fn check_elem(kernel: &'static str, b: &Binding, t: &RawTensor) -> Result<()> {
    // Atomic bindings are plain integers on the host.
    let (want, have) = (b.elem, t.elem());
    if want.scalar == have.scalar && want.width == have.width {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "argument `{}` holds `{}`, but the tensor holds `{}`",
                b.name,
                want.wgsl(),
                have.wgsl()
            ),
        })
    }
}

fn check_aliasing(kernel: &'static str, layout: &[Binding], tensors: &[&RawTensor]) -> Result<()> {
    for i in 0..tensors.len() {
        for j in i + 1..tensors.len() {
            let writes = layout[i].access.writable() || layout[j].access.writable();
            if writes && tensors[i].buffer() == tensors[j].buffer() {
                return Err(ForgeError::InvalidArgument {
                    kernel,
                    message: format!(
                        "arguments `{}` and `{}` are the same tensor, and one of them is written; \
                         pass a copy",
                        layout[i].name, layout[j].name
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(groups: u64, limit: u32) {
        let [x, y, z] = fold_groups(groups, limit).expect("foldable");
        assert!(
            x <= limit && y <= limit && z <= limit,
            "{groups}: {x} {y} {z}"
        );
        let total = x as u64 * y as u64 * z as u64;
        assert!(total >= groups, "{groups} groups but only {total} launched");
        // Overshoot stays under one row (or one slice) of the folded shape.
        assert!(
            total - groups < x as u64 * y as u64,
            "{groups}: {x} {y} {z}"
        );
    }

    #[test]
    fn small_counts_stay_one_dimensional() {
        assert_eq!(fold_groups(1, 65535), Ok([1, 1, 1]));
        assert_eq!(fold_groups(65535, 65535), Ok([65535, 1, 1]));
        assert_eq!(fold_groups(0, 65535), Ok([0, 1, 1]));
    }

    #[test]
    fn folds_into_y() {
        assert_eq!(fold_groups(65536, 65535), Ok([32768, 2, 1]));
        assert_eq!(fold_groups(15_626, 1000), Ok([977, 16, 1]));
        for groups in [65536u64, 100_000, 1_000_000, 65535 * 65535] {
            covers(groups, 65535);
            assert_eq!(fold_groups(groups, 65535).map(|d| d[2]), Ok(1));
        }
    }

    #[test]
    fn folds_into_z() {
        let groups = 65535u64 * 65535 + 1;
        let [_, _, z] = fold_groups(groups, 65535).expect("foldable");
        assert_eq!(z, 2);
        covers(groups, 65535);
        covers(65535u64 * 65535 * 65535, 65535);
        for groups in 1..=343u64 {
            covers(groups, 7);
        }
    }

    #[test]
    fn rejects_the_impossible() {
        let limit = 65535u32;
        let max = limit as u64 * limit as u64 * limit as u64;
        assert_eq!(
            fold_groups(max + 1, limit),
            Err(FoldError {
                groups: max + 1,
                limit
            })
        );
        assert!(fold_groups(u64::MAX, limit).is_err());
        assert!(fold_groups(5, 0).is_err());
        assert_eq!(fold_groups(343, 7), Ok([7, 7, 7]));
        assert!(fold_groups(344, 7).is_err());
    }

    #[test]
    fn uniform_sizes_are_padded() {
        assert_eq!(uniform_size(1), 16);
        assert_eq!(uniform_size(16), 16);
        assert_eq!(uniform_size(20), 32);
    }
}
