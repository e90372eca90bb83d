//! Timing: how long one call of a kernel takes on the device, measured on buffers that
//! stay on the GPU. The tuner ranks schedules with it and `forge bench` reports it.
//! Layer 6 (procedures): built on the runtime, and through it on the backend seam
//! ([`crate::backend::Device`]): it checks each timed launch with the runtime's one
//! [`LaunchPlan`], binds it ahead of time ([`crate::backend::Device::prepare`]), and times
//! it with the device's timestamps, the same on every backend.
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
//! **One batch timer.** The warm-up, the calibration of `R`, the timed batches with their
//! retries and [`ForgeError::TimingFailed`] are written once, for both things this module
//! times: one kernel's dispatches ([`ForgeRuntime::time_kernel`]) and the calls a closure
//! records ([`ForgeRuntime::time_calls`], [`calls`]). Only what a batch records differs.
//! The timer is an `async fn` ([`ForgeRuntime::time_kernel_with_async`],
//! [`ForgeRuntime::time_calls_async`]); the blocking forms drive it on the calling thread,
//! as the rest of the runtime does ([`crate::blocking`]). In a browser the waits await the
//! queue's `onSubmittedWorkDone` and the readbacks' maps, and the clock is
//! `performance.now()`.
//!
//! Timestamps are the device's ([`crate::backend::Stamps`]): on wgpu, timestamp queries
//! written at the start and end of each compute pass (Vulkan writes both once every earlier
//! command has finished), converted with `Queue::get_timestamp_period`; on CUDA, events
//! recorded on the stream before and after the pass's launches. A device without
//! `TIMESTAMP_QUERY` falls back to wall-clock time around a submission of a whole batch
//! and a wait, with a warning: that includes submission overhead, which the batch
//! amortises, and no resets run between the batch's dispatches.

pub mod calls;

use crate::backend::{Command, Launch, Memory, Prepared, Stamps};
use crate::error::{ForgeError, Result};
use crate::kernel::{Access, DynArgs, HostBuffer, Kernel};
use crate::plan::LaunchPlan;
use crate::records::valid_sample;
pub use crate::records::{median, ticks_to_ns, Timer, Timing};
use crate::runtime::launch::{dyn_sizes, params_bytes};
use crate::runtime::ForgeRuntime;
use crate::schedule::Schedule;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Everything one timing of a kernel needs on the device, made once per call.
struct Rig {
    /// Every allocation, in the order made: one per binding, the pristine copies, the
    /// other input sets, the print buffer.
    memory: Vec<Memory>,
    /// The launches, bound to each input set.
    prepared: Option<Prepared>,
    /// (pristine, target, bytes) for every read_write binding.
    resets: Vec<(usize, usize, u64)>,
    /// (binding, bytes) for every `#[out]` binding.
    clears: Vec<(usize, u64)>,
    /// (binding, exact bytes) for every writable binding, in layout order.
    writable: Vec<(usize, usize)>,
    /// How many input sets the dispatches rotate through.
    sets: usize,
    /// Dispatches recorded so far: which input set the next one takes.
    next: usize,
}

impl Rig {
    /// Appends the commands that restore the inputs, which run outside any timestamps.
    fn reset<'a>(&'a self, commands: &mut Vec<Command<'a>>) {
        for &(from, to, bytes) in &self.resets {
            commands.push(Command::Copy {
                from: &self.memory[from],
                from_offset: 0,
                to: &self.memory[to],
                to_offset: 0,
                bytes,
            });
        }
        for &(i, bytes) in &self.clears {
            commands.push(Command::Clear {
                to: &self.memory[i],
                bytes,
            });
        }
    }
}

/// What a timing measures: one kernel's dispatches, on memory of its own ([`Rig`]), or
/// the calls a closure records ([`ForgeRuntime::time_calls`]). The batch timer is the
/// same for both; only what a batch records differs.
enum Subject<'s> {
    Dispatches(&'s mut Rig),
    Calls(&'s mut dyn FnMut(&mut ForgeRuntime) -> Result<()>),
}

/// What one timed batch gave.
struct Batch {
    /// The batch's sample: the median per-dispatch (or per-call) time of its timed
    /// passes; `None` when nothing was usable.
    per_dispatch: Option<f64>,
    /// The GPU time the timed passes took together, for calibration.
    busy_ns: Option<f64>,
    /// Timed passes whose time was not positive and finite.
    rejected: u32,
}

impl Batch {
    /// The batch of timed passes that lasted `durations` (`None` where the timer gave
    /// nothing), each of `units` dispatches or calls.
    fn of(durations: &[Option<f64>], units: u32) -> Batch {
        let valid: Vec<f64> = durations
            .iter()
            .flatten()
            .copied()
            .filter(|ns| valid_sample(*ns))
            .collect();
        Batch {
            per_dispatch: median(&valid).map(|ns| ns / units.max(1) as f64),
            busy_ns: (!valid.is_empty()).then(|| valid.iter().sum()),
            rejected: (durations.len() - valid.len()) as u32,
        }
    }
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
    /// #     fn binding_lens_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![s[0].bits() as u64]) }
    /// #     fn grid_threads_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(s[0].bits() as u64)) }
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
        let mut rig = self.rig(kernel, schedule, args, opts.rotate_bytes)?;
        let input_sets = rig.sets as u32;
        let measured = self
            .measure(kernel.name(), &mut Subject::Dispatches(&mut rig), opts)
            .await;
        let result = match measured {
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
        self.release_rig(rig);
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
        let (lens, threads) = dyn_sizes(kernel, schedule, args)?;
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
        args.check_data(kernel, &lens)?;
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

    /// Checks the arguments, leases memory for every binding (and a pristine copy of every
    /// read_write one), uploads them, copies the read-only ones into input sets that span
    /// up to `rotate_bytes`, and binds the launches to each set.
    fn rig(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
        rotate_bytes: u64,
    ) -> Result<Rig> {
        let plan = self.timing_plan(kernel, schedule, args)?;
        let budget = self.device.budget();
        let (capacity, in_use) = (budget.capacity(), budget.in_use());
        plan.plan.check_capacity(plan.pristine, capacity, in_use)?;
        // Launches recorded earlier are not part of this measurement.
        self.flush()?;
        self.device.check_lost()?;
        let compiled = self
            .device
            .compile(kernel, schedule, plan.plan.has_params())?;
        // Input sets: as many copies of the read-only inputs as span `rotate_bytes`, within
        // what the budget has left (idle pooled memory can be freed for them).
        let available = (capacity + self.device.idle_bytes())
            .saturating_sub(in_use)
            .saturating_sub(plan.plan.device_bytes() + plan.pristine);
        let sets = input_sets(plan.read, rotate_bytes, available) as usize;
        let mut rig = Rig {
            memory: Vec::new(),
            prepared: None,
            resets: Vec::new(),
            clears: Vec::new(),
            writable: Vec::new(),
            sets,
            next: 0,
        };
        match self.fill_rig(&mut rig, kernel, args, &plan, &compiled) {
            Ok(()) => Ok(rig),
            Err(e) => {
                self.release_rig(rig);
                Err(e)
            }
        }
    }

    /// [`ForgeRuntime::rig`]'s memory, uploads and prepared launches.
    fn fill_rig(
        &mut self,
        rig: &mut Rig,
        kernel: &dyn Kernel,
        args: &DynArgs,
        TimingPlan { lens, plan, .. }: &TimingPlan,
        compiled: &crate::backend::Compiled,
    ) -> Result<()> {
        let name = kernel.name();
        let layout = kernel.layout();
        let sets = rig.sets;
        let memory = &mut rig.memory;
        let mut lease = |rt: &mut ForgeRuntime, size: u64, what: String| -> Result<usize> {
            memory.push(rt.device.lease(size, &|| what.clone())?);
            Ok(memory.len() - 1)
        };
        for (b, &size) in layout.iter().zip(&plan.bindings) {
            lease(
                self,
                size,
                format!("kernel `{name}`: argument `{}`", b.name),
            )?;
        }
        // What each binding's memory starts as: (slot, data) uploads.
        let mut uploads: Vec<(usize, &HostBuffer)> = Vec::new();
        let mut resets = Vec::new();
        let mut clears = Vec::new();
        let mut writable = Vec::new();
        for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
            match (b.access, &args.buffers[i]) {
                (Access::Read, Some(data)) => uploads.push((i, data)),
                (Access::ReadWrite, Some(data)) => {
                    let copy = lease(
                        self,
                        size,
                        format!("kernel `{name}`: pristine copy of `{}`", b.name),
                    )?;
                    uploads.push((copy, data));
                    resets.push((copy, i, size));
                }
                _ => clears.push((i, size)),
            }
            if b.access.writable() {
                writable.push((i, lens[i] as usize * b.elem.size()));
            }
        }
        // For each input set, the slot of each binding; and the copies on the device that
        // fill sets 1.. from set 0.
        let mut set_slots: Vec<Vec<usize>> = vec![(0..layout.len()).collect()];
        let mut set_copies: Vec<(usize, usize, u64)> = Vec::new();
        for set in 1..sets {
            let mut slots: Vec<usize> = (0..layout.len()).collect();
            for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
                if b.access == Access::Read {
                    slots[i] = lease(
                        self,
                        size,
                        format!("kernel `{name}`: input set {set} of `{}`", b.name),
                    )?;
                    set_copies.push((i, slots[i], size));
                }
            }
            set_slots.push(slots);
        }
        // A kernel that prints gets a print buffer of one record: timed runs' prints are
        // dropped, and never read.
        let print_slot = match kernel.prints() {
            Some(table) => Some((
                table.binding,
                lease(
                    self,
                    table.buffer_bytes(1),
                    format!("kernel `{name}`: print buffer"),
                )?,
            )),
            None => None,
        };
        let memory = &rig.memory;
        let mut commands: Vec<Command<'_>> = uploads
            .iter()
            .map(|&(slot, data)| Command::Upload {
                to: &memory[slot],
                data: data.bytes(),
            })
            .collect();
        // The copies run behind the uploads, in the warm-up's submission.
        commands.extend(set_copies.iter().map(|&(from, to, bytes)| Command::Copy {
            from: &memory[from],
            from_offset: 0,
            to: &memory[to],
            to_offset: 0,
            bytes,
        }));
        self.device.record("preparing a timing", &commands)?;
        let sets: Vec<Vec<&Memory>> = set_slots
            .iter()
            .map(|slots| slots.iter().map(|&s| &memory[s]).collect())
            .collect();
        let more: Vec<&[&Memory]> = sets[1..].iter().map(Vec::as_slice).collect();
        let launch = Launch {
            compiled,
            plan,
            bindings: &sets[0],
            prints: print_slot.map(|(binding, slot)| (binding, &memory[slot])),
            // Timed at the bound's grid.
            indirect: None,
        };
        let prepared = self.device.prepare(&launch, &more)?;
        rig.prepared = Some(prepared);
        rig.resets = resets;
        rig.clears = clears;
        rig.writable = writable;
        Ok(())
    }

    /// Gives a timing's memory and prepared launches back.
    fn release_rig(&mut self, rig: Rig) {
        if let Some(prepared) = rig.prepared {
            self.device.retire(prepared);
        }
        for memory in rig.memory {
            self.device.release(memory);
        }
    }

    /// The batch timer: warm-up, calibration and the timed batches, for either subject.
    /// See the [module docs](self).
    async fn measure(
        &mut self,
        label: &'static str,
        subject: &mut Subject<'_>,
        opts: &TimingOptions,
    ) -> Result<Timing> {
        let passes = opts.passes.max(1);
        let kernel = matches!(subject, Subject::Dispatches(_));
        let per_pass = if kernel {
            opts.dispatches_per_pass.max(1)
        } else {
            1
        };
        // Two timestamps a timed pass, one submission's worth at most.
        let max_repeats = opts
            .max_repeats
            .clamp(1, (self.device.max_stamps() / 2).max(1));
        let timer = if opts.wall_clock || !self.has_timestamps() {
            if !opts.wall_clock && !WALL_CLOCK_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    adapter = %self.adapter_info().name,
                    "the device has no TIMESTAMP_QUERY; timing with the wall clock, which includes submission overhead"
                );
            }
            Timer::WallClock
        } else {
            Timer::Timestamp
        };
        // A kernel's batches grow until they are long enough, unless fixed; a call is
        // timed `repeats` times a pass, one pass a batch.
        let fixed = match kernel {
            true => opts.repeats.map(|r| r.clamp(1, max_repeats)),
            false => Some(opts.repeats.unwrap_or(1).max(1)),
        };
        let stamps = match timer {
            Timer::Timestamp if kernel => Some(
                self.device
                    .stamps(label, 2 * fixed.unwrap_or(max_repeats))?,
            ),
            Timer::Timestamp => Some(self.device.stamps(label, 2)?),
            Timer::WallClock => None,
        };
        // Launches recorded earlier are not part of this measurement.
        self.flush()?;
        self.device.wait().await?;

        // Warm-up: at least `warmup` dispatches (or calls) and `warmup_ns` of wall time, in
        // batches that double until one takes 10 ms, so the GPU, not the host, is busy.
        let start = Instant::now();
        let mut batch = opts.warmup.max(1);
        let mut done = 0u32;
        while done < opts.warmup || (start.elapsed().as_nanos() as f64) < opts.warmup_ns {
            self.record_work(subject, batch, 1, true, None)?;
            let t = Instant::now();
            self.flush()?;
            self.device.wait().await?;
            done = done.saturating_add(batch);
            if t.elapsed().as_secs_f64() < 0.01 && batch < 4096 {
                batch *= 2;
            }
        }

        let mut repeats = fixed.unwrap_or(1);
        while fixed.is_none() {
            let busy = self
                .timed_batch(subject, stamps.as_ref(), repeats, per_pass)
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
                .timed_batch(subject, stamps.as_ref(), repeats, per_pass)
                .await?;
            rejected += batch.rejected;
            match batch.per_dispatch {
                Some(ns) => samples.push(ns),
                None if retries_left == 0 => break,
                None => {
                    tracing::debug!(kernel = label, rejected, "retrying a rejected timing batch");
                    retries_left -= 1;
                }
            }
        }
        let unit = if kernel { "dispatches" } else { "calls" };
        let mut timing = Timing::from_pass_ns(&samples, 1, timer).ok_or_else(|| ForgeError::TimingFailed {
            kernel: label,
            message: format!(
                "all {rejected} timed passes of batches of {repeats} {unit} were rejected: the timer did not advance; \
                 check the device's timestamp support"
            ),
        })?;
        timing.repeats = repeats;
        timing.rejected = rejected;
        if rejected > 0 {
            tracing::warn!(
                kernel = label,
                rejected,
                kept = timing.samples.len(),
                "rejected timing samples that were not positive"
            );
        }
        Ok(timing)
    }

    /// Records `count` of the subject's work: a kernel's `count` passes of `per_pass`
    /// dispatches (each after a reset where `resets`, and each between a pair of `stamps`
    /// of its own where given), or `count` calls (between one pair of `stamps` where
    /// given). Returns the pairs of stamps written, and the dispatches or calls each covers.
    fn record_work(
        &mut self,
        subject: &mut Subject<'_>,
        count: u32,
        per_pass: u32,
        resets: bool,
        stamps: Option<&Stamps>,
    ) -> Result<(u32, u32)> {
        let rig = match subject {
            Subject::Dispatches(rig) => rig,
            Subject::Calls(record) => {
                let stamp = |index| stamps.map(|stamps| [Command::Stamp { stamps, index }]);
                if let Some(start) = stamp(0) {
                    self.device.record("timing a call", &start)?;
                }
                for _ in 0..count {
                    record(self)?;
                }
                if let Some(end) = stamp(1) {
                    self.device.record("timing a call", &end)?;
                }
                return Ok((1, count));
            }
        };
        let first = rig.next;
        rig.next = first.wrapping_add(count as usize * per_pass as usize);
        let rig: &Rig = rig;
        let Some(prepared) = rig.prepared.as_ref() else {
            return Err(crate::backend::foreign("a timing without launches"));
        };
        let mut commands = Vec::new();
        for p in 0..count {
            if resets {
                rig.reset(&mut commands);
            }
            commands.push(Command::Dispatch {
                prepared,
                set: first.wrapping_add(p as usize * per_pass as usize) % rig.sets.max(1),
                count: per_pass,
                timed: stamps.map(|stamps| (stamps, 2 * p)),
            });
        }
        self.device.record("timing a kernel", &commands)?;
        Ok((count, per_pass))
    }

    /// One batch of `repeats`: with timestamps, a kernel's `repeats` timed passes of
    /// `per_pass` dispatches (each after a reset, outside its timestamps), or one timed pass
    /// of `repeats` calls between two timestamps; with the wall clock, the same work (a
    /// kernel's after one reset) timed from submission to idle.
    async fn timed_batch(
        &mut self,
        subject: &mut Subject<'_>,
        stamps: Option<&Stamps>,
        repeats: u32,
        per_pass: u32,
    ) -> Result<Batch> {
        if let Some(stamps) = stamps {
            let (pairs, units) =
                self.record_work(subject, repeats, per_pass, true, Some(stamps))?;
            let durations = self.device.read_stamps(stamps, pairs).await?;
            return Ok(Batch::of(&durations, units));
        }
        if let Subject::Dispatches(rig) = subject {
            let mut commands = Vec::new();
            rig.reset(&mut commands);
            self.device.record("timing a kernel", &commands)?;
            self.flush()?;
            self.device.wait().await?;
        }
        // From submission to idle: on a device that runs work as it is recorded, the work
        // is submitted as it is recorded.
        let mut start = Instant::now();
        self.record_work(subject, repeats, per_pass, false, None)?;
        if !self.device.eager() {
            start = Instant::now();
        }
        self.flush()?;
        self.device.wait().await?;
        let ns = start.elapsed().as_nanos() as f64;
        Ok(Batch::of(&[Some(ns)], repeats.saturating_mul(per_pass)))
    }

    /// Reads every writable binding back as the last timed dispatch left it.
    async fn read_back(&mut self, rig: &Rig, kernel: &dyn Kernel) -> Result<Vec<HostBuffer>> {
        let layout = kernel.layout();
        let mut outputs = Vec::with_capacity(rig.writable.len());
        for &(i, exact) in &rig.writable {
            let elem = layout[i].elem;
            outputs.push(HostBuffer::zeroed(elem, exact / elem.size().max(1))?);
        }
        let from: Vec<&Memory> = rig.writable.iter().map(|&(i, _)| &rig.memory[i]).collect();
        let mut into: Vec<&mut [u8]> = outputs.iter_mut().map(HostBuffer::bytes_mut).collect();
        self.device.read(&from, &mut into).await?;
        drop(into);
        Ok(outputs)
    }
}
