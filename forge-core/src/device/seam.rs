//! [`Gpu`]'s side of the backend seam: [`crate::backend::Device`] on wgpu. Part of the
//! device layer (layer 4).
//!
//! What each part of the seam is on wgpu:
//! - **memory:** a pooled [`Lease`] ([`crate::backend::Device::lease`]), or a buffer of its
//!   own ([`OwnedBuffer`]: a tensor's, or the application's);
//! - **commands** are recorded into the pending encoder inside one set of error scopes per
//!   slice. An upload goes through the queue (it lands before the next submission); a
//!   tensor's write too when nothing is pending, and otherwise as a copy from a staging
//!   buffer, behind the pending work, in the same encoder;
//! - **a launch** takes its `Params` uniform from the pool, writes it only when its bytes
//!   changed since that buffer's last launch, and keeps it until the submission; on pooled
//!   buffers it binds the cached bind group of an earlier launch on the same ones; each
//!   launch is a compute pass of its own, timed on the trace's GPU track where there is one;
//! - **a readback** copies everything it reads into one staging buffer, at 256-byte-aligned
//!   offsets, in the submission's last commands, and maps it once;
//! - **timestamps** are a query set and its resolve buffer; a timed dispatch's pass writes
//!   them as it begins and ends, and they are resolved and copied out in the submission
//!   that reads them.

use super::buffers::{Lease, STAGING_ALIGN};
use super::guard::LoopGuard;
use super::indirect::{IndirectPrep, ARGS_USAGE, PREP_PARAMS_BYTES};
use super::pipeline::{Bound, CompiledPipeline};
use super::trace::launch_args;
use super::{
    error_text, write_padded, ErrorScope, Gpu, STAGING_USAGE, STORAGE_USAGE, UNIFORM_USAGE,
};
use crate::backend::{
    foreign, Command, Compiled, Device, Identity, IndirectSource, Launch, Memory, MemoryBudget,
    Prepared, RawMemory, Reservation, RuntimeStats, Stamps, Wait, WgpuParts, What,
};
use crate::error::{ForgeError, Result};
use crate::kernel::Kernel;
use crate::plan::{align_up, LaunchPlan, COPY_ALIGN};
use crate::records::ticks_to_ns;
use crate::schedule::Schedule;
use crate::topology::HardwareProfile;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A buffer outside the pool: a tensor's, holding its share of the budget, or the
/// application's, holding none.
#[derive(Debug)]
pub struct OwnedBuffer {
    buffer: wgpu::Buffer,
    _reservation: Option<Reservation>,
}

impl RawMemory for OwnedBuffer {
    fn same_memory(&self, other: &dyn RawMemory) -> bool {
        other.wgpu_buffer() == Some(&self.buffer)
    }
    fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        Some(&self.buffer)
    }
}

/// Launches prepared on wgpu: one bind group per set of memory, and the uniform they share.
#[derive(Debug)]
struct Prebound {
    compiled: Compiled,
    name: &'static str,
    grid: [u32; 3],
    bind_groups: Vec<wgpu::BindGroup>,
    /// Taken back into the pool when the launches are retired.
    uniform: Mutex<Option<Box<Lease>>>,
}

/// Timestamp queries and the buffer they resolve to.
#[derive(Debug)]
struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    capacity: u32,
}

/// Fails with [`ForgeError::BufferUsage`] when `buffer` (the application's, where it fails)
/// lacks `flag` (named `missing`), which `what` needs.
fn need_usage(
    what: &'static str,
    buffer: &wgpu::Buffer,
    flag: wgpu::BufferUsages,
    missing: &'static str,
) -> Result<()> {
    if buffer.usage().contains(flag) {
        Ok(())
    } else {
        Err(ForgeError::BufferUsage {
            what,
            have: format!("{:?}", buffer.usage()),
            missing,
        })
    }
}

/// Records a launch's dispatch in a compute pass of its own, which writes its timestamps
/// to `queries` where the trace times it on the GPU.
/// An indirect launch dispatches the workgroup counts in `indirect`, which its prep wrote.
fn record_pass(
    encoder: &mut wgpu::CommandEncoder,
    plan: &LaunchPlan,
    compiled: &CompiledPipeline,
    bind_group: &wgpu::BindGroup,
    queries: Option<&(wgpu::QuerySet, u32)>,
    indirect: Option<&wgpu::Buffer>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(plan.kernel),
        timestamp_writes: queries.map(|(set, first)| wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(*first),
            end_of_pass_write_index: Some(*first + 1),
        }),
    });
    pass.set_pipeline(&compiled.pipeline);
    pass.set_bind_group(0, bind_group, &[]);
    match indirect {
        Some(args) => pass.dispatch_workgroups_indirect(args, 0),
        None => compiled.dispatch(&mut pass, plan.grid.dispatch),
    }
}

impl Gpu {
    /// The wgpu buffer of memory this device made.
    fn buffer<'m>(&self, memory: &'m Memory) -> Result<&'m wgpu::Buffer> {
        match memory.wgpu_buffer() {
            Some(b) if memory.device_id() == self.id() => Ok(b),
            _ => Err(foreign("wgpu memory")),
        }
    }

    /// The pipeline of a kernel this device compiled.
    fn pipeline_of<'c>(&self, compiled: &'c Compiled) -> Result<&'c CompiledPipeline> {
        match compiled.raw::<CompiledPipeline>() {
            Some(p) if compiled.device_id() == self.id() => Ok(p),
            _ => Err(foreign("a wgpu pipeline")),
        }
    }

    /// The queries of stamps this device made.
    fn queries<'s>(&self, stamps: &'s Stamps) -> Result<&'s Queries> {
        match stamps.raw::<Queries>() {
            Some(q) if stamps.device_id() == self.id() => Ok(q),
            _ => Err(foreign("wgpu timestamps")),
        }
    }

    /// Records one command; a launch's trace queries go to `traced`, to be given back if
    /// the slice fails.
    fn record_one(&mut self, command: &Command<'_>, traced: &mut Vec<u32>) -> Result<()> {
        match *command {
            Command::Upload { to, data } => write_padded(&self.queue, self.buffer(to)?, data),
            Command::Write { to, data } => {
                let target = self.buffer(to)?;
                need_usage("write", target, wgpu::BufferUsages::COPY_DST, "COPY_DST")?;
                if self.pending.is_none() {
                    write_padded(&self.queue, target, data);
                } else {
                    // `queue.write_buffer` would run before the pending launches at
                    // submission, so behind them the write travels as a copy in the same
                    // encoder.
                    let size = align_up(data.len() as u64, COPY_ALIGN);
                    let staging = self.create_staging(data, size);
                    self.pending()
                        .copy_buffer_to_buffer(&staging, 0, target, 0, size);
                }
            }
            Command::Clear { to, bytes } => {
                let target = self.buffer(to)?;
                need_usage("clear", target, wgpu::BufferUsages::COPY_DST, "COPY_DST")?;
                self.pending().clear_buffer(target, 0, Some(bytes));
            }
            Command::Copy {
                from,
                from_offset,
                to,
                to_offset,
                bytes,
            } => {
                let (from, to) = (self.buffer(from)?, self.buffer(to)?);
                self.pending()
                    .copy_buffer_to_buffer(from, from_offset, to, to_offset, bytes);
            }
            Command::Launch(ref launch) => self.record_launch(launch, traced)?,
            Command::Dispatch {
                prepared,
                set,
                count,
                timed,
            } => self.record_dispatch(prepared, set, count, timed)?,
            Command::Stamp { stamps, index } => {
                let q = self.queries(stamps)?;
                let _pass = self
                    .pending()
                    .begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("forge call timestamp"),
                        timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                            query_set: &q.set,
                            beginning_of_pass_write_index: Some(index),
                            end_of_pass_write_index: None,
                        }),
                    });
            }
        }
        Ok(())
    }

    /// Records one launch: its uniform, its bind group, its pass.
    fn record_launch(&mut self, launch: &Launch<'_>, traced: &mut Vec<u32>) -> Result<()> {
        let compiled = self.pipeline_of(launch.compiled)?;
        let plan = launch.plan;
        if compiled.guard_binding.is_some() {
            self.ensure_loop_guard();
        }
        // A launch on pooled buffers only gets the same buffers back on its next call, and
        // binds the group made for them.
        let mut pooled = true;
        let mut storage: Vec<&wgpu::Buffer> = Vec::with_capacity(launch.bindings.len());
        for memory in launch.bindings {
            storage.push(self.buffer(memory)?);
            pooled &= memory.raw::<Lease>().is_some();
        }
        let prints = match launch.prints {
            Some((binding, memory)) => {
                pooled &= memory.raw::<Lease>().is_some();
                Some((binding, self.buffer(memory)?))
            }
            None => None,
        };
        let uniform = match plan.uniform_size() {
            Some(size) => {
                let mut lease = self.acquire(size, UNIFORM_USAGE, &|| {
                    format!("kernel `{}`: `Params`", plan.kernel)
                })?;
                // Written only when its `Params` changed since its last launch.
                lease.write_tracked(&self.queue, &plan.params);
                Some(lease)
            }
            None => None,
        };
        let bound = Bound {
            storage: &storage,
            uniform: uniform.as_ref().map(|u| u.buffer()),
            prints,
            guard: self.loop_guard.as_ref().map(LoopGuard::buffer),
        };
        let bind_group = if pooled {
            let frees = self.pool.frees();
            self.bind_groups
                .get(&self.device, frees, compiled, plan, bound)
        } else {
            Ok(compiled.bind_group(&self.device, plan, bound))
        };
        let bind_group = match bind_group {
            Ok(g) => g,
            Err(e) => {
                if let Some(u) = uniform {
                    self.pool.release(u);
                }
                return Err(e);
            }
        };
        // An indirect launch's workgroup counts, written by a pass of its own before it.
        // Where the kernel takes its workgroup counts as immediates (HLSL), only the host's
        // dispatch can give them: the bound's grid then runs, its surplus leaving at once.
        let indirect = match launch.indirect {
            Some(source) if !compiled.workgroup_counts_as_immediates => {
                match self.record_indirect_prep(plan, source) {
                    Ok(args) => Some(args),
                    Err(e) => {
                        if let Some(u) = uniform {
                            self.pool.release(u);
                        }
                        return Err(e);
                    }
                }
            }
            _ => None,
        };
        let queries = self.pass_queries(plan.kernel, || {
            launch_args(&plan.schedule, plan.grid.dispatch)
        });
        if let Some((_, first)) = &queries {
            traced.push(*first);
        }
        record_pass(
            self.pending(),
            plan,
            compiled,
            &bind_group,
            queries.as_ref(),
            indirect.as_ref().map(|args| args.buffer()),
        );
        if let Some(u) = uniform {
            // Read at submission: it must not be reused before.
            self.retain(u);
        }
        if let Some(args) = indirect {
            self.retain(args);
        }
        if let (Some(_), Some(g)) = (compiled.guard_binding, self.loop_guard.as_mut()) {
            g.note(plan.kernel);
        }
        self.note_in_flight(plan.kernel);
        self.dispatches += 1;
        Ok(())
    }

    /// Records an indirect launch's prep: a pass of one invocation that writes the workgroup
    /// counts for `source`'s count into the returned buffer ([`super::indirect`]).
    fn record_indirect_prep(
        &mut self,
        plan: &LaunchPlan,
        source: IndirectSource<'_>,
    ) -> Result<Box<Lease>> {
        let pipeline = self
            .indirect_prep
            .get_or_insert_with(|| IndirectPrep::new(&self.device))
            .pipeline
            .clone();
        let count = self.buffer(source.count)?.clone();
        let what = || format!("kernel `{}`: its workgroup counts", plan.kernel);
        let args = self.acquire(16, ARGS_USAGE, &what)?;
        let mut uniform = match self.acquire(PREP_PARAMS_BYTES, UNIFORM_USAGE, &what) {
            Ok(u) => u,
            Err(e) => {
                self.pool.release(args);
                return Err(e);
            }
        };
        let per_group = plan.schedule.workgroup_shape()[0] * plan.schedule.items;
        let params =
            IndirectPrep::params(source.element, source.bound, per_group, plan.grid.dispatch);
        uniform.write_tracked(&self.queue, &params);
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("forge indirect prep"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: count.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: args.buffer(),
                        offset: 0,
                        size: wgpu::BufferSize::new(16),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: uniform.buffer(),
                        offset: 0,
                        size: wgpu::BufferSize::new(PREP_PARAMS_BYTES),
                    }),
                },
            ],
        });
        {
            let mut pass = self
                .pending()
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("forge indirect prep"),
                    timestamp_writes: None,
                });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        // Read at submission: neither may be reused before.
        self.retain(uniform);
        Ok(args)
    }

    /// Records `count` prepared dispatches in one pass, on the sets in turn from `set`.
    fn record_dispatch(
        &mut self,
        prepared: &Prepared,
        set: usize,
        count: u32,
        timed: Option<(&Stamps, u32)>,
    ) -> Result<()> {
        let bound = match prepared.raw::<Prebound>() {
            Some(b) if prepared.device_id() == self.id() && !b.bind_groups.is_empty() => b,
            _ => return Err(foreign("prepared wgpu launches")),
        };
        let compiled = self.pipeline_of(&bound.compiled)?;
        let timestamp_writes = match timed {
            Some((stamps, index)) => Some(wgpu::ComputePassTimestampWrites {
                query_set: &self.queries(stamps)?.set,
                beginning_of_pass_write_index: Some(index),
                end_of_pass_write_index: Some(index + 1),
            }),
            None => None,
        };
        let sets = bound.bind_groups.len();
        let mut pass = self
            .pending()
            .begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(bound.name),
                timestamp_writes,
            });
        pass.set_pipeline(&compiled.pipeline);
        let mut last = usize::MAX;
        for k in 0..count as usize {
            let s = (set % sets + k) % sets;
            if s != last {
                pass.set_bind_group(0, &bound.bind_groups[s], &[]);
                last = s;
            }
            compiled.dispatch(&mut pass, bound.grid);
        }
        drop(pass);
        if let (Some(_), Some(g)) = (compiled.guard_binding, self.loop_guard.as_mut()) {
            g.note(bound.name);
        }
        self.note_in_flight(bound.name);
        self.dispatches += u64::from(count);
        Ok(())
    }

    /// [`Device::read`]'s work: see the [module docs](self).
    async fn read_into(&mut self, from: &[&Memory], into: &mut [&mut [u8]]) -> Result<()> {
        if from.len() != into.len() {
            return Err(ForgeError::InvalidArgument {
                kernel: "read",
                message: format!("{} memories to read into {} slices", from.len(), into.len()),
            });
        }
        let mut sources: Vec<(&wgpu::Buffer, u64, u64)> = Vec::with_capacity(from.len());
        let mut total = 0u64;
        for (memory, dest) in from.iter().zip(into.iter()) {
            let buffer = self.buffer(memory)?;
            need_usage("download", buffer, wgpu::BufferUsages::COPY_SRC, "COPY_SRC")?;
            let size = align_up(dest.len() as u64, COPY_ALIGN);
            let offset = align_up(total, STAGING_ALIGN);
            sources.push((buffer, offset, size));
            total = offset + size;
        }
        if total == 0 {
            return self.submit("submitting work", None);
        }
        let staging = self.acquire(total, STAGING_USAGE, &|| "a readback".to_string())?;
        let submitted = self.submit(
            "submitting work",
            Some(&mut |encoder: &mut wgpu::CommandEncoder| {
                for &(buffer, offset, size) in &sources {
                    encoder.copy_buffer_to_buffer(buffer, 0, staging.buffer(), offset, size);
                }
            }),
        );
        let read = match submitted {
            Ok(()) => {
                self.read_async(staging.buffer(), total, |bytes| {
                    for (&(_, offset, _), dest) in sources.iter().zip(into.iter_mut()) {
                        let at = offset as usize;
                        dest.copy_from_slice(&bytes[at..at + dest.len()]);
                    }
                })
                .await
            }
            Err(e) => Err(e),
        };
        self.pool.release(staging);
        read
    }

    /// [`Device::read_stamps`]'s work: the queries resolved and copied out in the
    /// submission of the work that wrote them.
    async fn stamps_into(&mut self, stamps: &Stamps, pairs: u32) -> Result<Vec<Option<f64>>> {
        let q = self.queries(stamps)?;
        let count = (2 * pairs).min(q.capacity);
        let bytes = count as u64 * wgpu::QUERY_SIZE as u64;
        let staging = self.acquire(bytes, STAGING_USAGE, &|| "timestamps".to_string())?;
        let submitted = self.submit(
            "timing a kernel",
            Some(&mut |encoder: &mut wgpu::CommandEncoder| {
                encoder.resolve_query_set(&q.set, 0..count, &q.resolve, 0);
                encoder.copy_buffer_to_buffer(&q.resolve, 0, staging.buffer(), 0, bytes);
            }),
        );
        let period = self.queue.get_timestamp_period();
        let ticks = match submitted {
            Ok(()) => {
                self.read_async(staging.buffer(), bytes, |b| {
                    bytemuck::pod_collect_to_vec::<u8, u64>(b)
                })
                .await
            }
            Err(e) => Err(e),
        };
        self.pool.release(staging);
        Ok(ticks?
            .chunks_exact(2)
            .map(|pair| ticks_to_ns(pair[0], pair[1], period))
            .collect())
    }
}

impl Device for Gpu {
    fn identity(&self) -> &Identity {
        &self.identity
    }

    /// From the adapter's limits and features (what the hardware offers), not the device's.
    fn profile(&self) -> HardwareProfile {
        HardwareProfile::from_parts(
            &self.identity.info,
            &self.adapter.limits(),
            self.adapter.features(),
        )
    }

    fn stats(&self) -> RuntimeStats {
        RuntimeStats {
            pipelines_compiled: self.pipelines.compiled(),
            submissions: self.submissions,
            readbacks: self.readbacks,
            buffers_created: self.pool.created() + self.tensors_created,
            buffers_reused: self.pool.reused(),
            dispatches: self.dispatches,
            bytes_in_use: self.pool.budget().in_use(),
            bind_groups_created: self.bind_groups.created(),
        }
    }

    fn wgpu(&self) -> Option<WgpuParts<'_>> {
        Some(WgpuParts {
            adapter: &self.adapter,
            device: &self.device,
            queue: &self.queue,
        })
    }

    fn set_timeout(&mut self, timeout: Option<std::time::Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    fn check_lost(&self) -> Result<()> {
        if let Some(t) = &self.timed_out {
            return Err(t.error());
        }
        match self.lost.lock() {
            Ok(slot) => match slot.as_ref() {
                Some(msg) => Err(ForgeError::DeviceLost(msg.clone())),
                None => Ok(()),
            },
            Err(_) => Err(ForgeError::DeviceLost(
                "the device-lost state was poisoned".into(),
            )),
        }
    }

    fn failure(&mut self, context: &'static str, message: String) -> ForgeError {
        self.explain(ForgeError::Gpu { context, message })
    }

    fn budget(&self) -> &MemoryBudget {
        self.pool.budget()
    }

    fn idle_bytes(&self) -> u64 {
        self.pool.idle_bytes()
    }

    fn create(&mut self, bytes: u64, init: Option<&[u8]>, what: What<'_>) -> Result<Memory> {
        self.check_lost()?;
        let reservation = self.reserve(bytes, what)?;
        let buffer = self.create_buffer(bytes, STORAGE_USAGE, init)?;
        Ok(Memory::new(
            self.identity.id,
            bytes,
            Box::new(OwnedBuffer {
                buffer,
                _reservation: Some(reservation),
            }),
        ))
    }

    fn lease(&mut self, bytes: u64, what: What<'_>) -> Result<Memory> {
        let lease = self.acquire(bytes, STORAGE_USAGE, what)?;
        Ok(Memory::new(self.identity.id, lease.size(), lease))
    }

    fn release(&mut self, memory: Memory) {
        if memory.device_id() == self.identity.id {
            if let Some(lease) = memory.into_raw::<Lease>() {
                self.pool.release(lease);
            }
        }
    }

    fn import_wgpu_buffer(&mut self, buffer: wgpu::Buffer, bytes: u64) -> Result<Memory> {
        self.check_lost()?;
        self.owns(&buffer, bytes)
            .map_err(|message| ForgeError::ForeignBuffer {
                what: "tensor_from_buffer",
                message,
            })?;
        Ok(Memory::new(
            self.identity.id,
            bytes,
            Box::new(OwnedBuffer {
                buffer,
                _reservation: None,
            }),
        ))
    }

    fn compile(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: bool,
    ) -> Result<Compiled> {
        let pipeline = self.pipeline(kernel, schedule, self.identity.emission, params)?;
        Ok(Compiled::new(self.identity.id, pipeline))
    }

    fn warm_up(&mut self, jobs: &[(&dyn Kernel, Schedule, bool)]) -> Result<usize> {
        let emission = self.identity.emission;
        self.compile_ahead(jobs, emission)
    }

    fn prepare(&mut self, launch: &Launch<'_>, more: &[&[&Memory]]) -> Result<Prepared> {
        let Launch {
            compiled,
            plan,
            bindings,
            prints,
            ..
        } = *launch;
        let pipeline = self.pipeline_of(compiled)?;
        if pipeline.guard_binding.is_some() {
            self.ensure_loop_guard();
        }
        let prints = match prints {
            Some((binding, memory)) => Some((binding, self.buffer(memory)?)),
            None => None,
        };
        let mut storage: Vec<Vec<&wgpu::Buffer>> = Vec::with_capacity(more.len() + 1);
        for set in std::iter::once(bindings).chain(more.iter().copied()) {
            storage.push(set.iter().map(|m| self.buffer(m)).collect::<Result<_>>()?);
        }
        let uniform = match plan.uniform_size() {
            Some(size) => Some(self.acquire(size, UNIFORM_USAGE, &|| {
                format!("kernel `{}`: `Params`", plan.kernel)
            })?),
            None => None,
        };
        let scope = ErrorScope::open(&self.device);
        if let Some(u) = &uniform {
            write_padded(&self.queue, u.buffer(), &plan.params);
        }
        let bind_groups: Vec<wgpu::BindGroup> = storage
            .iter()
            .map(|set| {
                let bound = Bound {
                    storage: set,
                    uniform: uniform.as_ref().map(|u| u.buffer()),
                    prints,
                    guard: self.loop_guard.as_ref().map(LoopGuard::buffer),
                };
                pipeline.bind_group(&self.device, plan, bound)
            })
            .collect();
        if let Some(e) = scope.close() {
            if let Some(u) = uniform {
                self.pool.release(u);
            }
            return Err(self.explain(ForgeError::Gpu {
                context: "preparing launches",
                message: format!("kernel `{}`: {}", plan.kernel, error_text(&e)),
            }));
        }
        let prebound = Prebound {
            compiled: compiled.clone(),
            name: plan.kernel,
            grid: plan.grid.dispatch,
            bind_groups,
            uniform: Mutex::new(uniform),
        };
        Ok(Prepared::new(self.identity.id, Arc::new(prebound)))
    }

    fn retire(&mut self, prepared: Prepared) {
        if prepared.device_id() != self.identity.id {
            return;
        }
        let uniform = prepared
            .raw::<Prebound>()
            .and_then(|b| b.uniform.lock().ok()?.take());
        if let Some(uniform) = uniform {
            self.retain(uniform);
        }
    }

    fn record(&mut self, context: &'static str, commands: &[Command<'_>]) -> Result<()> {
        // After a timeout nothing more is queued behind work that may never end.
        self.check_lost()?;
        let mut traced = Vec::new();
        let scope = ErrorScope::open(&self.device);
        let mut recorded = Ok(());
        for command in commands {
            recorded = self.record_one(command, &mut traced);
            if recorded.is_err() {
                break;
            }
        }
        let err = scope.close();
        if recorded.is_err() || err.is_some() {
            // A query resolved but never written would stall the trace's copy.
            if let Some(t) = self.trace.as_mut() {
                for first in traced.iter().rev() {
                    t.cancel_pass(*first);
                }
            }
        }
        recorded?;
        match err {
            None => Ok(()),
            Some(e) => {
                let launched = commands.iter().find_map(|c| match c {
                    Command::Launch(l) => Some(l.plan.kernel),
                    _ => None,
                });
                Err(self.explain(ForgeError::Gpu {
                    context,
                    message: match launched {
                        Some(kernel) => format!("kernel `{kernel}`: {}", error_text(&e)),
                        None => error_text(&e),
                    },
                }))
            }
        }
    }

    fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    fn flush(&mut self) -> Result<()> {
        self.submit("submitting pending launches", None)
    }

    fn wait(&mut self) -> Wait<'_, ()> {
        Wait::of(self.wait_async())
    }

    fn read<'a, 'b: 'a>(
        &'a mut self,
        from: &'a [&'a Memory],
        into: &'a mut [&'b mut [u8]],
    ) -> Wait<'a, ()> {
        Wait::of(self.read_into(from, into))
    }

    fn max_stamps(&self) -> u32 {
        wgpu::QUERY_SET_MAX_QUERIES
    }

    fn stamps(&mut self, label: &'static str, count: u32) -> Result<Stamps> {
        let capacity = count.clamp(2, wgpu::QUERY_SET_MAX_QUERIES) & !1;
        let device = &self.device;
        let scope = ErrorScope::open(device);
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some(label),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("forge timestamps"),
            size: align_up(
                capacity as u64 * wgpu::QUERY_SIZE as u64,
                wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT,
            ),
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        if let Some(e) = scope.close() {
            return Err(self.explain(ForgeError::Gpu {
                context: "creating timestamp queries",
                message: format!("`{label}`: {}", error_text(&e)),
            }));
        }
        let queries = Queries {
            set,
            resolve,
            capacity,
        };
        Ok(Stamps::new(self.identity.id, Arc::new(queries)))
    }

    fn read_stamps<'a>(&'a mut self, stamps: &'a Stamps, pairs: u32) -> Wait<'a, Vec<Option<f64>>> {
        Wait::of(self.stamps_into(stamps, pairs))
    }

    /// Compiles and, where the device has timestamps, launches on its GPU track
    /// ([`super::trace`]).
    fn attach_trace(&mut self, recorder: Arc<crate::trace::Recorder>) {
        self.trace = Some(super::trace::DeviceTrace::new(
            recorder,
            &self.device,
            &self.queue,
            self.identity.id,
            &self.identity.info.name,
        ));
    }

    fn finish_trace(&mut self) -> Result<bool> {
        let timed_out = self.timed_out.is_some();
        match &mut self.trace {
            Some(t) => {
                if timed_out {
                    t.abandon();
                }
                t.finish().map(|()| true)
            }
            None => Ok(false),
        }
    }

    fn pipeline_cache(&self) -> Option<(&Path, usize)> {
        self.disk_cache
            .as_ref()
            .map(|c| (c.path(), c.loaded_bytes()))
    }

    fn save_pipeline_cache(&mut self) -> Result<bool> {
        match &mut self.disk_cache {
            Some(c) => c.save(),
            None => Ok(false),
        }
    }
}
