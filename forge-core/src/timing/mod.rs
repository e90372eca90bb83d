//! Timing: how long one call of a kernel takes on the device, measured on buffers that
//! stay on the GPU. The tuner ranks schedules with it and `forge bench` reports it.
//! Layer 5 (procedures): built on the runtime; it checks and binds each timed launch with
//! the runtime's one [`LaunchPlan`] and bind-group builder.
//!
//! This module owns [`ForgeRuntime::time_kernel`], its options ([`TimingOptions`]) and its
//! result ([`Timing`]). The method:
//! 1. uploads the arguments once; every `&mut` (read_write) binding also gets a pristine
//!    copy on the device. Read-only inputs smaller than [`TimingOptions::rotate_bytes`]
//!    (256 MiB by default, several times the L2 cache of current GPUs) are copied on the
//!    device into several **input sets** that together span that many bytes (at most
//!    [`MAX_INPUT_SETS`], and what the capacity allows), and consecutive dispatches take
//!    the sets in turn: a dispatch reads inputs that the ones before it pushed out of the
//!    cache, as a call on fresh data would, not the cache's copy of the last dispatch's;
//! 2. **warms up** for [`TimingOptions::warmup_ns`] (300 ms by default) of back-to-back
//!    dispatches: pipeline compiled, caches filled, and the clocks of a GPU that sat idle
//!    ramped up;
//! 3. times each dispatch **alone**: a dispatch sits in a compute pass of its own, between
//!    that pass's two timestamps, so a sample is what one call costs the GPU, launch and
//!    tail included. Before it, outside the timestamps, every read_write binding is copied
//!    back from its pristine copy and every `#[out]` binding is cleared, so each dispatch
//!    starts from the same inputs (an in-place kernel cannot drift or blow up to
//!    infinities);
//! 4. submits the timed dispatches in **batches** of `R` ([`Timing::repeats`]), one
//!    submission each; `R` starts at 1 and grows by powers of two until a batch keeps the
//!    GPU busy for [`TimingOptions::target_pass_ns`] (2 ms by default) or reaches
//!    [`TimingOptions::max_repeats`], so short kernels are measured back to back at the
//!    clocks a busy GPU runs at;
//! 5. **rejects** samples that are not positive and finite (a timer that did not advance,
//!    or went backwards); a batch left with none is retried, and if nothing usable remains
//!    the call fails with [`ForgeError::TimingFailed`] instead of returning a meaningless
//!    zero;
//! 6. takes the median of each batch's dispatches as the batch's sample
//!    ([`Timing::samples`], [`TimingOptions::passes`] of them) and reports the **median**
//!    of those.
//!
//! Why: before 2026-11-30 this module timed many dispatches back to back between two
//! timestamps after a two-dispatch warm-up, and on the H200 it read 2–4× slower than the
//! kernels' own examples. The packing was not the cause (kept as
//! [`TimingOptions::dispatches_per_pass`]; it agrees within a few percent): an idle GPU's
//! clocks take a few hundred milliseconds of load to come up, which the warm-up now covers.
//! One dispatch per pass is what a call costs, launch and tail included; the rotation keeps
//! inputs that fit in L2 from being read from it. `docs/PERFORMANCE.md` ("Timing") has the
//! measurements.
//!
//! Every timer is written once, as an `async fn` ([`ForgeRuntime::time_kernel_with_async`],
//! [`ForgeRuntime::time_calls_async`]); the blocking forms drive it on the calling thread,
//! as the rest of the runtime does ([`crate::blocking`]). In a browser the waits await the
//! queue's `onSubmittedWorkDone` and the readbacks' maps, and the clock is
//! `performance.now()`.
//!
//! Timestamps come from `wgpu::QueryType::Timestamp` queries written at the start and end of
//! each compute pass (Vulkan writes both once every earlier command has finished),
//! converted with `Queue::get_timestamp_period`. An adapter without `TIMESTAMP_QUERY` falls
//! back to wall-clock time around a submission of a whole batch and a wait, with a warning:
//! that includes submission overhead, which the batch amortises, and no resets run between
//! the batch's dispatches.

pub mod calls;
#[cfg(feature = "cuda")]
mod cuda;

use crate::device::buffers::{Lease, STAGING_ALIGN};
use crate::device::pipeline::CompiledPipeline;
use crate::device::{
    error_scope, error_text, write_padded, Gpu, STAGING_USAGE, STORAGE_USAGE, UNIFORM_USAGE,
};
use crate::error::{ForgeError, Result};
use crate::kernel::{Access, DynArgs, HostBuffer, Kernel};
use crate::plan::{align_up, LaunchPlan};
use crate::records::valid_sample;
pub use crate::records::{median, Timer, Timing};
use crate::runtime::launch::{check_dyn_data, dyn_sizes, params_bytes};
use crate::runtime::ForgeRuntime;
use crate::schedule::Schedule;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use web_time::Instant;

/// The default length of one timed pass: 2 ms, some thousands of timer ticks on any
/// adapter.
pub const DEFAULT_TARGET_PASS_NS: f64 = 2.0e6;

/// The default warm-up: 300 ms of back-to-back dispatches. On the H200 an idle GPU's
/// first few hundred milliseconds of work ran at a fraction of its speed (the clocks
/// ramp up under load); a handful of warm-up dispatches left the measurement inside that.
pub const DEFAULT_WARMUP_NS: f64 = 3.0e8;

/// The default cap on dispatches per timed pass.
pub const DEFAULT_MAX_REPEATS: u32 = 1024;

/// The default span of the rotated input sets: 256 MiB, several times the L2 cache of
/// current GPUs (50–60 MB on an H100/H200).
pub const DEFAULT_ROTATE_BYTES: u64 = 256 << 20;

/// The most input sets a timing rotates through.
pub const MAX_INPUT_SETS: u32 = 8;

/// The duration between two raw timestamps in nanoseconds, or `None` when the timer did
/// not advance, went backwards, or has no period. Such a pass is rejected, never counted
/// as zero.
///
/// ```
/// use forge_core::timing::ticks_to_ns;
/// assert_eq!(ticks_to_ns(100, 350, 2.0), Some(500.0));
/// assert_eq!(ticks_to_ns(350, 350, 1.0), None);
/// assert_eq!(ticks_to_ns(400, 350, 1.0), None);
/// assert_eq!(ticks_to_ns(100, 350, 0.0), None);
/// ```
pub fn ticks_to_ns(start: u64, end: u64, period_ns: f32) -> Option<f64> {
    if end <= start || !period_ns.is_finite() || period_ns <= 0.0 {
        return None;
    }
    Some((end - start) as f64 * period_ns as f64)
}

/// The repeat count after a pass of `repeats` dispatches took `pass_ns` (`None`: too short
/// to register). Grows by powers of two, at least doubling and at most ×16 a step, aiming
/// at `target_ns`; never past `max`.
///
/// ```
/// use forge_core::timing::next_repeats;
/// assert_eq!(next_repeats(1, Some(1000.0), 2.0e6, 1024), 16);
/// assert_eq!(next_repeats(16, Some(1.5e6), 2.0e6, 1024), 32);
/// assert_eq!(next_repeats(512, None, 2.0e6, 1024), 1024);
/// ```
pub fn next_repeats(repeats: u32, pass_ns: Option<f64>, target_ns: f64, max: u32) -> u32 {
    let repeats = repeats.max(1);
    let factor = match pass_ns {
        Some(ns) if ns > 0.0 => (target_ns / ns).ceil().clamp(2.0, 16.0) as u32,
        _ => 16,
    };
    repeats
        .saturating_mul(factor.next_power_of_two().min(16))
        .min(max.max(1))
}

/// How many input sets a timing rotates through: enough copies of `read_bytes` of
/// read-only inputs to span `rotate_bytes`, at most [`MAX_INPUT_SETS`], with the copies
/// beyond the first fitting in `available` bytes. At least 1.
///
/// ```
/// use forge_core::timing::input_sets;
/// assert_eq!(input_sets(1 << 30, 256 << 20, u64::MAX), 1); // already past the span
/// assert_eq!(input_sets(64 << 20, 256 << 20, u64::MAX), 4);
/// assert_eq!(input_sets(1 << 10, 256 << 20, u64::MAX), 8); // at most MAX_INPUT_SETS
/// assert_eq!(input_sets(64 << 20, 256 << 20, 130 << 20), 3); // what the budget allows
/// assert_eq!(input_sets(64 << 20, 0, u64::MAX), 1); // rotation off
/// assert_eq!(input_sets(0, 256 << 20, u64::MAX), 1); // nothing to rotate
/// ```
pub fn input_sets(read_bytes: u64, rotate_bytes: u64, available: u64) -> u32 {
    if read_bytes == 0 || rotate_bytes <= read_bytes {
        return 1;
    }
    let wanted = rotate_bytes.div_ceil(read_bytes).min(MAX_INPUT_SETS as u64);
    let affordable = available / read_bytes + 1;
    wanted.min(affordable).max(1) as u32
}

/// How [`ForgeRuntime::time_kernel_with`] measures.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingOptions {
    /// Untimed dispatches first, at least.
    pub warmup: u32,
    /// And untimed dispatches for at least this long, in nanoseconds of wall time, in
    /// batches that keep the GPU busy: a GPU that sat idle (while the host generated the
    /// next case's data, say) runs at low clocks until it has been loaded for a while.
    pub warmup_ns: f64,
    /// Timed batches; each gives one sample, the median of its dispatches, and the result is
    /// the median of the samples.
    pub passes: u32,
    /// The GPU time one batch should take, in nanoseconds: the number of dispatches in a
    /// batch grows until a batch takes this long.
    pub target_pass_ns: f64,
    /// The most dispatches in one batch.
    pub max_repeats: u32,
    /// A fixed number of dispatches per batch, instead of calibrating one: to compare runs
    /// with the same work per batch.
    pub repeats: Option<u32>,
    /// Rejected batches that are retried before giving up with what was accepted.
    pub max_retries: u32,
    /// After timing, read every writable binding back into [`TimedRun::outputs`], as the
    /// last timed dispatch left it, to check what the timed buffers computed.
    pub read_back: bool,
    /// Use the wall clock even where timestamp queries exist.
    pub wall_clock: bool,
    /// Read-only inputs are copied into input sets until the sets span this many bytes
    /// (at most [`MAX_INPUT_SETS`]); consecutive dispatches take them in turn. 0 times every
    /// dispatch on the same buffers, which measures the cache for inputs that fit in it.
    pub rotate_bytes: u64,
    /// Dispatches recorded back to back inside one timed compute pass, the pass's time then
    /// divided by this count. 1, the default, times each dispatch alone: what one call
    /// costs. More measures the throughput of a stream of dispatches with the barriers wgpu
    /// puts between them; `forge bench --compare-timers` shows both.
    pub dispatches_per_pass: u32,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            warmup: 3,
            warmup_ns: DEFAULT_WARMUP_NS,
            passes: 7,
            target_pass_ns: DEFAULT_TARGET_PASS_NS,
            max_repeats: DEFAULT_MAX_REPEATS,
            repeats: None,
            max_retries: 7,
            read_back: false,
            wall_clock: false,
            rotate_bytes: DEFAULT_ROTATE_BYTES,
            dispatches_per_pass: 1,
        }
    }
}

/// What [`ForgeRuntime::time_kernel_with`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedRun {
    /// The measurement.
    pub timing: Timing,
    /// With [`TimingOptions::read_back`]: every writable binding as the last timed dispatch
    /// left it, in layout order, as [`ForgeRuntime::run_dyn`] returns them. With timestamps each
    /// dispatch starts from the pristine inputs, so this is the result of one call. With
    /// the wall clock the batch's [`Timing::repeats`] dispatches run without resets between
    /// them, so an in-place kernel shows that many applications.
    pub outputs: Option<Vec<HostBuffer>>,
    /// How many input sets the dispatches rotated through (1: no rotation).
    pub input_sets: u32,
}

/// [`ForgeRuntime::timing_plan`]'s result.
pub(crate) struct TimingPlan {
    /// Each binding's length in elements.
    pub lens: Vec<u64>,
    /// The launch, checked against the limits.
    pub plan: LaunchPlan,
    /// Bytes of the read-only bindings.
    pub read: u64,
    /// Bytes of the read_write bindings.
    pub pristine: u64,
}

/// Everything one timing needs on the device, built once per call.
struct Rig {
    name: &'static str,
    compiled: Arc<CompiledPipeline>,
    /// One bind group per input set.
    bind_groups: Vec<wgpu::BindGroup>,
    /// The checked launch: sizes, grid, uniform.
    plan: LaunchPlan,
    /// (pristine, target, bytes) for every read_write binding.
    resets: Vec<(usize, usize, u64)>,
    /// (binding, bytes) for every `#[out]` binding.
    clears: Vec<(usize, u64)>,
    /// (binding, padded bytes, exact bytes) for every writable binding, in layout order.
    writable: Vec<(usize, u64, usize)>,
    leases: Vec<Lease>,
    /// Dispatches recorded so far: which input set the next one takes.
    next: Cell<usize>,
}

impl Rig {
    fn buffer(&self, i: usize) -> &wgpu::Buffer {
        self.leases[i].buffer()
    }

    /// Restores the inputs, outside any timestamps.
    fn reset(&self, encoder: &mut wgpu::CommandEncoder) {
        for &(src, dst, bytes) in &self.resets {
            encoder.copy_buffer_to_buffer(self.buffer(src), 0, self.buffer(dst), 0, bytes);
        }
        for &(i, bytes) in &self.clears {
            encoder.clear_buffer(self.buffer(i), 0, Some(bytes));
        }
    }

    /// One compute pass of `dispatches` dispatches, each on the next input set, with
    /// timestamps at `query` and `query + 1`.
    fn pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: u32,
        query: Option<(&wgpu::QuerySet, u32)>,
    ) {
        let timestamp_writes = query.map(|(set, i)| wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(i),
            end_of_pass_write_index: Some(i + 1),
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(self.name),
            timestamp_writes,
        });
        pass.set_pipeline(&self.compiled.pipeline);
        let grid = self.plan.grid.dispatch;
        let mut last = usize::MAX;
        for _ in 0..dispatches {
            let set = self.next.get() % self.bind_groups.len();
            self.next.set(self.next.get().wrapping_add(1));
            if set != last {
                pass.set_bind_group(0, &self.bind_groups[set], &[]);
                last = set;
            }
            self.compiled.dispatch(&mut pass, grid);
        }
    }
}

/// What one timed batch gave.
struct Batch {
    /// The batch's sample: the median per-dispatch time of its dispatches (timestamps), or
    /// the batch's time over its dispatches (wall clock); `None` when nothing was usable.
    per_dispatch: Option<f64>,
    /// The GPU time the timed passes took together, for calibration.
    busy_ns: Option<f64>,
    /// Timed passes whose time was not positive and finite.
    rejected: u32,
}

/// Timestamp queries and the buffers their results come back through.
struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    capacity: u32,
}

static WALL_CLOCK_WARNED: AtomicBool = AtomicBool::new(false);

impl ForgeRuntime {
    /// Whether [`ForgeRuntime::time_kernel`] uses GPU timestamps here (else the wall clock).
    pub fn has_timestamps(&self) -> bool {
        self.features().contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The median time of one dispatch of `kernel` at `schedule` on `args`, measured on the
    /// device with the default [`TimingOptions`]; see the [module docs](crate::timing).
    ///
    /// `args` are as for [`ForgeRuntime::run_dyn`]: every non-`#[out]` binding holds data of its
    /// LEN, `#[out]` bindings are `None`. The arguments are not changed: read_write bindings
    /// are restored before each timed pass.
    ///
    /// ```
    /// use forge_core::kernel::{DynArgs, ElemType, HostBuffer, ScalarType, ScalarValue};
    /// # use forge_core::*;
    /// # struct Fill;
    /// # impl Kernel for Fill {
    /// #     fn name(&self) -> &'static str { "fill" }
    /// #     fn wgsl(&self, s: &Schedule) -> String {
    /// #         format!("{}struct Params {{ n: u32 }}\n@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
    /// #             @group(0) @binding(1) var<uniform> p: Params;\n@compute @workgroup_size(WG) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n\
    /// #             if g.x < p.n {{ y[g.x] = g.x; }} }}", s.wgsl_header())
    /// #     }
    /// #     fn layout(&self) -> &'static [Binding] {
    /// #         static LAYOUT: [Binding; 1] = [Binding { binding: 0, name: "y", elem: ElemType::scalar(ScalarType::U32), access: Access::Out, len: "n" }];
    /// #         &LAYOUT
    /// #     }
    /// #     fn scalars(&self) -> &'static [ScalarParam] { &[ScalarParam { name: "n", ty: ScalarType::U32 }] }
    /// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
    /// #     fn binding_lens(&self, s: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![s[0].bits() as u64]) }
    /// #     fn threads(&self, s: &[ScalarValue]) -> Result<u64> { Ok(s[0].bits() as u64) }
    /// #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { unimplemented!() }
    /// # }
    /// let mut rt = ForgeRuntime::new(64 << 20, None)?;
    /// let args = DynArgs { scalars: vec![ScalarValue::U32(4096)], buffers: vec![None] };
    /// let t = rt.time_kernel(&Fill, &Schedule::with_workgroup(64), &args)?;
    /// assert!(t.median_ns > 0.0 && t.repeats >= 1 && !t.samples.is_empty());
    /// # Ok::<(), ForgeError>(())
    /// ```
    pub fn time_kernel(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<Timing> {
        Ok(self
            .time_kernel_with(kernel, schedule, args, &TimingOptions::default())?
            .timing)
    }

    /// [`ForgeRuntime::time_kernel`], awaited: the form a browser calls.
    pub async fn time_kernel_async(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<Timing> {
        Ok(self
            .time_kernel_with_async(kernel, schedule, args, &TimingOptions::default())
            .await?
            .timing)
    }

    /// [`ForgeRuntime::time_kernel`] with explicit options, and optionally the outputs of
    /// the timed buffers.
    ///
    /// Errors: the argument errors of [`ForgeRuntime::launch_host`] (wrong count, length,
    /// schedule, size), GPU errors, and [`ForgeError::TimingFailed`] when every pass was
    /// rejected.
    pub fn time_kernel_with(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
        opts: &TimingOptions,
    ) -> Result<TimedRun> {
        crate::blocking::block_on(
            "`time_kernel_with`",
            self.time_kernel_with_async(kernel, schedule, args, opts),
        )
    }

    /// [`ForgeRuntime::time_kernel_with`], awaited: the form a browser calls. In a browser
    /// the warm-up and the wall clock use `performance.now()`, and every wait for the GPU
    /// awaits the queue instead of blocking.
    pub async fn time_kernel_with_async(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
        opts: &TimingOptions,
    ) -> Result<TimedRun> {
        #[cfg(feature = "cuda")]
        if self.is_cuda() {
            return self.cuda_time_kernel(kernel, schedule, args, opts);
        }
        let rig = self.rig(kernel, schedule, args, opts.rotate_bytes)?;
        let input_sets = rig.bind_groups.len() as u32;
        let result = self.measure(&rig, opts).await;
        let result = match result {
            Ok(timing) if opts.read_back => {
                self.read_back(&rig, kernel).await.map(|outputs| TimedRun {
                    timing,
                    outputs: Some(outputs),
                    input_sets,
                })
            }
            Ok(timing) => Ok(TimedRun {
                timing,
                outputs: None,
                input_sets,
            }),
            Err(e) => Err(e),
        };
        for lease in rig.leases {
            self.gpu_mut().release(lease);
        }
        result
    }

    /// What a timed launch's memory is sized from, on any device: the arguments checked, the
    /// binding lengths, the launch plan, and the bytes of the read-only bindings (what the
    /// input sets copy) and of the read_write ones (their pristine copies).
    pub(crate) fn timing_plan(
        &self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<TimingPlan> {
        let layout = kernel.layout();
        let (lens, threads) = dyn_sizes(kernel, args)?;
        // Sized from the LEN expressions, so a bad schedule is named before a bad length.
        let bytes: Vec<u64> = layout
            .iter()
            .zip(&lens)
            .map(|(b, &len)| len.saturating_mul(b.elem.size() as u64))
            .collect();
        let plan = LaunchPlan::new(
            kernel,
            schedule,
            &params_bytes(args),
            threads,
            &bytes,
            self.limits(),
        )?;
        check_dyn_data(kernel, args, &lens)?;
        let sum = |access: Access| -> u64 {
            layout
                .iter()
                .zip(&plan.bindings)
                .filter(|(b, _)| b.access == access)
                .map(|(_, s)| *s)
                .sum()
        };
        Ok(TimingPlan {
            read: sum(Access::Read),
            pristine: sum(Access::ReadWrite),
            lens,
            plan,
        })
    }

    /// Checks the arguments, uploads them, copies the read-only ones into input sets that
    /// span up to `rotate_bytes`, and builds a bind group per set.
    fn rig(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
        rotate_bytes: u64,
    ) -> Result<Rig> {
        let name = kernel.name();
        let layout = kernel.layout();
        let TimingPlan {
            lens,
            plan,
            read,
            pristine,
        } = self.timing_plan(kernel, schedule, args)?;
        {
            let gpu = self.gpu();
            plan.check_capacity(pristine, gpu.capacity(), gpu.pool().budget().in_use())?;
        }
        // Launches recorded earlier are not part of this measurement.
        self.flush()?;
        self.gpu().check_lost()?;
        let compiled = self.pipeline(kernel, schedule, plan.has_params())?;

        // Input sets: as many copies of the read-only inputs as span `rotate_bytes`, within
        // what the budget has left (idle pooled buffers can be freed for them).
        let gpu = self.gpu_mut();
        let available = (gpu.capacity() + gpu.pool().idle_bytes())
            .saturating_sub(gpu.pool().budget().in_use())
            .saturating_sub(plan.device_bytes() + pristine);
        let sets = input_sets(read, rotate_bytes, available);

        let mut leases: Vec<Lease> = Vec::new();
        let mut acquire = |gpu: &mut Gpu, size: u64, usage, what: String| -> Result<usize> {
            leases.push(gpu.acquire(size, usage, &|| what.clone())?);
            Ok(leases.len() - 1)
        };
        let mut resets = Vec::new();
        let mut clears = Vec::new();
        let mut writable = Vec::new();
        let mut uploads: Vec<(usize, &HostBuffer)> = Vec::new();
        // For each input set, the lease of each binding; and the device copies that fill
        // sets 1.. from set 0.
        let mut set_slots: Vec<Vec<usize>> = vec![(0..layout.len()).collect()];
        let mut set_copies: Vec<(usize, usize, u64)> = Vec::new();
        let mut print_slot: Option<(u32, usize)> = None;
        let acquired: Result<Option<usize>> = (|| {
            for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
                let slot = acquire(
                    gpu,
                    size,
                    STORAGE_USAGE,
                    format!("kernel `{name}`: argument `{}`", b.name),
                )?;
                debug_assert_eq!(slot, i);
            }
            for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
                match (b.access, &args.buffers[i]) {
                    (Access::Read, Some(data)) => uploads.push((i, data)),
                    (Access::ReadWrite, Some(data)) => {
                        let copy = acquire(
                            gpu,
                            size,
                            STORAGE_USAGE,
                            format!("kernel `{name}`: pristine copy of `{}`", b.name),
                        )?;
                        uploads.push((copy, data));
                        resets.push((copy, i, size));
                    }
                    _ => clears.push((i, size)),
                }
                if b.access.writable() {
                    writable.push((i, size, lens[i] as usize * b.elem.size()));
                }
            }
            for set in 1..sets {
                let mut slots: Vec<usize> = (0..layout.len()).collect();
                for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
                    if b.access == Access::Read {
                        slots[i] = acquire(
                            gpu,
                            size,
                            STORAGE_USAGE,
                            format!("kernel `{name}`: input set {set} of `{}`", b.name),
                        )?;
                        set_copies.push((i, slots[i], size));
                    }
                }
                set_slots.push(slots);
            }
            // A kernel that prints gets a print buffer of one record: timed runs' prints
            // are dropped, and never read.
            if let Some(table) = kernel.prints() {
                let slot = acquire(
                    gpu,
                    table.buffer_bytes(1),
                    STORAGE_USAGE,
                    format!("kernel `{name}`: print buffer"),
                )?;
                print_slot = Some((table.binding, slot));
            }
            match plan.uniform_size() {
                Some(size) => Ok(Some(acquire(
                    gpu,
                    size,
                    UNIFORM_USAGE,
                    format!("kernel `{name}`: `Params`"),
                )?)),
                None => Ok(None),
            }
        })();
        let release = |gpu: &mut Gpu, leases: Vec<Lease>| {
            for lease in leases {
                gpu.release(lease);
            }
        };
        let uniform_slot = match acquired {
            Ok(slot) => slot,
            Err(e) => {
                release(gpu, leases);
                return Err(e);
            }
        };

        let queue = gpu.queue();
        for &(slot, data) in &uploads {
            write_padded(queue, leases[slot].buffer(), data.bytes());
        }
        if let Some(slot) = uniform_slot {
            write_padded(queue, leases[slot].buffer(), &plan.params);
        }
        if !set_copies.is_empty() {
            // Written data lands before the commands of the next submission.
            let mut encoder = gpu.encoder(name);
            for &(src, dst, size) in &set_copies {
                encoder.copy_buffer_to_buffer(
                    leases[src].buffer(),
                    0,
                    leases[dst].buffer(),
                    0,
                    size,
                );
            }
            if let Err(e) = gpu.submit(Some(encoder), "preparing a timing") {
                release(gpu, leases);
                return Err(e);
            }
        }
        let device = gpu.device();
        let (bind_groups, err) = error_scope(device, || {
            set_slots
                .iter()
                .map(|slots| {
                    let storage: Vec<&wgpu::Buffer> =
                        slots.iter().map(|&slot| leases[slot].buffer()).collect();
                    let uniform = uniform_slot.map(|slot| leases[slot].buffer());
                    let prints = print_slot.map(|(binding, slot)| (binding, leases[slot].buffer()));
                    compiled.bind_group(device, &plan, &storage, uniform, prints)
                })
                .collect::<Vec<_>>()
        });
        if let Some(e) = err {
            let err = gpu.explain(ForgeError::Gpu {
                context: "preparing a timing",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            });
            release(gpu, leases);
            return Err(err);
        }
        Ok(Rig {
            name,
            compiled,
            bind_groups,
            plan,
            resets,
            clears,
            writable,
            leases,
            next: Cell::new(0),
        })
    }

    /// Warm-up, calibration and the timed batches.
    async fn measure(&mut self, rig: &Rig, opts: &TimingOptions) -> Result<Timing> {
        let passes = opts.passes.max(1);
        let per_pass = opts.dispatches_per_pass.max(1);
        // Two queries a timed pass, one submission's worth at most.
        let max_repeats = opts.max_repeats.clamp(1, wgpu::QUERY_SET_MAX_QUERIES / 2);
        let timer = if opts.wall_clock || !self.has_timestamps() {
            if !opts.wall_clock && !WALL_CLOCK_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    adapter = %self.adapter_info().name,
                    "the adapter has no TIMESTAMP_QUERY; timing with the wall clock, which includes submission overhead"
                );
            }
            Timer::WallClock
        } else {
            Timer::Timestamp
        };
        let fixed = opts.repeats.map(|r| r.clamp(1, max_repeats));
        let queries = match timer {
            Timer::Timestamp => Some(self.queries(rig.name, 2 * fixed.unwrap_or(max_repeats))?),
            Timer::WallClock => None,
        };

        // Warm-up: at least `warmup` dispatches and `warmup_ns` of wall time, in batches
        // that double until one takes 10 ms, so the GPU, not the host, is busy.
        let start = Instant::now();
        let mut batch = opts.warmup.max(1);
        let mut done = 0u32;
        while done < opts.warmup || (start.elapsed().as_nanos() as f64) < opts.warmup_ns {
            let mut encoder = self.encoder(rig.name);
            for _ in 0..batch {
                rig.reset(&mut encoder);
                rig.pass(&mut encoder, 1, None);
            }
            let t = Instant::now();
            self.submit_and_wait(encoder).await?;
            done = done.saturating_add(batch);
            if t.elapsed().as_secs_f64() < 0.01 && batch < 4096 {
                batch *= 2;
            }
        }

        let mut repeats = fixed.unwrap_or(1);
        while fixed.is_none() {
            let busy = self
                .timed_batch(rig, queries.as_ref(), repeats, per_pass)
                .await?
                .busy_ns;
            let long_enough = busy.is_some_and(|ns| ns >= opts.target_pass_ns);
            if long_enough || repeats >= max_repeats {
                break;
            }
            repeats = next_repeats(repeats, busy, opts.target_pass_ns, max_repeats);
        }

        let mut samples: Vec<f64> = Vec::with_capacity(passes as usize);
        let mut rejected = 0u32;
        let mut retries_left = opts.max_retries;
        while (samples.len() as u32) < passes {
            let batch = self
                .timed_batch(rig, queries.as_ref(), repeats, per_pass)
                .await?;
            rejected += batch.rejected;
            match batch.per_dispatch {
                Some(ns) => samples.push(ns),
                None if retries_left == 0 => break,
                None => {
                    tracing::debug!(
                        kernel = rig.name,
                        rejected,
                        "retrying a rejected timing batch"
                    );
                    retries_left -= 1;
                }
            }
        }
        let mut timing = Timing::from_pass_ns(&samples, 1, timer).ok_or_else(|| ForgeError::TimingFailed {
            kernel: rig.name,
            message: format!(
                "all {rejected} timed passes of batches of {repeats} dispatches were rejected: the timer did not advance; \
                 check the adapter's timestamp support"
            ),
        })?;
        timing.repeats = repeats;
        timing.rejected = rejected;
        if rejected > 0 {
            tracing::warn!(
                kernel = rig.name,
                rejected,
                kept = timing.samples.len(),
                "rejected timing samples that were not positive"
            );
        }
        Ok(timing)
    }

    /// One batch: `repeats` timed passes of `per_pass` dispatches each, in one submission.
    /// With timestamps each pass follows a reset and has its own pair of timestamps; with
    /// the wall clock the batch follows one reset and is timed from submission to idle.
    async fn timed_batch(
        &mut self,
        rig: &Rig,
        queries: Option<&Queries>,
        repeats: u32,
        per_pass: u32,
    ) -> Result<Batch> {
        let Some(q) = queries else {
            let mut encoder = self.encoder(rig.name);
            rig.reset(&mut encoder);
            self.submit_and_wait(encoder).await?;
            let mut encoder = self.encoder(rig.name);
            for _ in 0..repeats {
                rig.pass(&mut encoder, per_pass, None);
            }
            let start = Instant::now();
            self.submit_and_wait(encoder).await?;
            let ns = start.elapsed().as_nanos() as f64;
            let ok = valid_sample(ns);
            return Ok(Batch {
                per_dispatch: ok.then(|| ns / (repeats as f64 * per_pass as f64)),
                busy_ns: ok.then_some(ns),
                rejected: u32::from(!ok),
            });
        };
        debug_assert!(2 * repeats <= q.capacity);
        let mut encoder = self.encoder(rig.name);
        for p in 0..repeats {
            rig.reset(&mut encoder);
            rig.pass(&mut encoder, per_pass, Some((&q.set, 2 * p)));
        }
        let bytes = 2 * repeats as u64 * wgpu::QUERY_SIZE as u64;
        encoder.resolve_query_set(&q.set, 0..2 * repeats, &q.resolve, 0);
        let gpu = self.gpu_mut();
        let staging = gpu.acquire(bytes, STAGING_USAGE, &|| {
            format!("kernel `{}`: timestamps", rig.name)
        })?;
        encoder.copy_buffer_to_buffer(&q.resolve, 0, staging.buffer(), 0, bytes);
        gpu.submit(Some(encoder), "timing a kernel")?;
        let period = gpu.queue().get_timestamp_period();
        let ticks = gpu
            .read_async(staging.buffer(), bytes, |b| {
                bytemuck::cast_slice::<u8, u64>(b).to_vec()
            })
            .await;
        gpu.release(staging);
        let passes: Vec<Option<f64>> = ticks?
            .chunks_exact(2)
            .map(|pair| ticks_to_ns(pair[0], pair[1], period))
            .collect();
        let valid: Vec<f64> = passes.iter().flatten().copied().collect();
        Ok(Batch {
            per_dispatch: median(&valid).map(|ns| ns / per_pass as f64),
            busy_ns: (!valid.is_empty()).then(|| valid.iter().sum()),
            rejected: (passes.len() - valid.len()) as u32,
        })
    }

    /// Reads every writable binding back as the last timed dispatch left it.
    async fn read_back(&mut self, rig: &Rig, kernel: &dyn Kernel) -> Result<Vec<HostBuffer>> {
        let layout = kernel.layout();
        let mut offsets = Vec::with_capacity(rig.writable.len());
        let mut total = 0u64;
        for &(_, size, _) in &rig.writable {
            let offset = align_up(total, STAGING_ALIGN);
            offsets.push(offset);
            total = offset + size;
        }
        if rig.writable.is_empty() {
            return Ok(Vec::new());
        }
        let gpu = self.gpu_mut();
        let staging = gpu.acquire(total, STAGING_USAGE, &|| {
            format!("kernel `{}`: readback", rig.name)
        })?;
        let mut encoder = gpu.encoder(rig.name);
        for (&(i, size, _), &offset) in rig.writable.iter().zip(&offsets) {
            encoder.copy_buffer_to_buffer(rig.buffer(i), 0, staging.buffer(), offset, size);
        }
        gpu.submit(Some(encoder), "timing a kernel")?;
        let result = gpu
            .read_async(staging.buffer(), total, |bytes| {
                rig.writable
                    .iter()
                    .zip(&offsets)
                    .map(|(&(i, _, exact), &offset)| {
                        let start = offset as usize;
                        HostBuffer::from_slice::<u8>(layout[i].elem, &bytes[start..start + exact])
                    })
                    .collect()
            })
            .await;
        gpu.release(staging);
        result
    }

    fn encoder(&self, label: &'static str) -> wgpu::CommandEncoder {
        self.gpu().encoder(label)
    }

    async fn submit_and_wait(&mut self, encoder: wgpu::CommandEncoder) -> Result<()> {
        let gpu = self.gpu_mut();
        gpu.submit(Some(encoder), "timing a kernel")?;
        gpu.wait_async().await
    }

    fn queries(&self, name: &'static str, count: u32) -> Result<Queries> {
        let capacity = count.clamp(2, wgpu::QUERY_SET_MAX_QUERIES) & !1;
        let gpu = self.gpu();
        let device = gpu.device();
        let ((set, resolve), err) = error_scope(device, || {
            let set = device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some(name),
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
            (set, resolve)
        });
        if let Some(e) = err {
            return Err(gpu.explain(ForgeError::Gpu {
                context: "creating timestamp queries",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            }));
        }
        Ok(Queries {
            set,
            resolve,
            capacity,
        })
    }
}
