//! Timing: how long one dispatch of a kernel takes on the device, measured on buffers that
//! stay on the GPU. The tuner ranks schedules with it and `forge bench` reports it.
//!
//! This module owns [`ForgeRuntime::time_kernel`], its options ([`TimingOptions`]) and its
//! result ([`Timing`]). The method:
//! 1. uploads the arguments once; every `&mut` (read_write) binding also gets a pristine
//!    copy on the device;
//! 2. **warms up** (pipeline compiled, caches and clocks settled);
//! 3. **calibrates** the repeat count `R`: a timed pass records `R` dispatches between two
//!    timestamps, and `R` starts at 1 and grows by powers of two until one pass takes at
//!    least [`TimingOptions::target_pass_ns`] (2 ms by default), far above the timer's
//!    quantum, or reaches [`TimingOptions::max_repeats`];
//! 4. records [`TimingOptions::passes`] timed passes. Before each, outside the timestamps,
//!    every read_write binding is copied back from its pristine copy and every `#[out]`
//!    binding is cleared, so each pass starts from the same inputs: an in-place kernel's
//!    data cannot drift or blow up to infinities over thousands of repeats;
//! 5. turns each pass into a per-dispatch time (`pass / R`) and **rejects** samples that
//!    are not positive and finite (a timer that did not advance, or went backwards); the
//!    rejected passes are retried, and if nothing usable remains the call fails with
//!    [`ForgeError::TimingFailed`] instead of returning a meaningless zero;
//! 6. reports the **median** per-dispatch time.
//!
//! Timestamps come from `wgpu::QueryType::Timestamp` queries written at the start and end of
//! each compute pass, converted with `Queue::get_timestamp_period`. An adapter without
//! `TIMESTAMP_QUERY` falls back to wall-clock time around a submission and a wait, with a
//! warning: that includes submission overhead, which the repeats amortise.

use crate::buffers::{align_up, Lease, COPY_ALIGN};
use crate::context::{error_scope, error_text};
use crate::dispatch::{
    binding_resource, write_padded, STAGING_USAGE, STORAGE_USAGE, UNIFORM_USAGE,
};
use crate::error::{ForgeError, Result};
use crate::kernel::{check_scalar_count, Access, DynArgs, HostBuffer, Kernel};
use crate::pipeline::CompiledPipeline;
use crate::schedule::Schedule;
use crate::ForgeRuntime;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The default length of one timed pass: 2 ms, some thousands of timer ticks on any
/// adapter.
pub const DEFAULT_TARGET_PASS_NS: f64 = 2.0e6;

/// The default cap on dispatches per timed pass.
pub const DEFAULT_MAX_REPEATS: u32 = 1024;

/// Which clock a [`Timing`] was measured with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Timer {
    /// GPU timestamp queries around each compute pass.
    #[default]
    Timestamp,
    /// Host wall-clock time around a submission and a wait (adapters without
    /// `TIMESTAMP_QUERY`).
    WallClock,
}

/// How long one dispatch of a kernel takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// The median over [`Timing::samples`], in nanoseconds per dispatch.
    pub median_ns: f64,
    /// One per-dispatch time per accepted pass, in nanoseconds, in the order measured.
    pub samples: Vec<f64>,
    /// Dispatches recorded in each timed pass.
    pub repeats: u32,
    /// The clock used.
    #[serde(default)]
    pub timer: Timer,
    /// Passes whose time was not positive and finite, and so were thrown away.
    #[serde(default)]
    pub rejected: u32,
}

impl Timing {
    /// A timing from the duration of each timed pass of `repeats` dispatches. Passes that
    /// are not positive and finite are rejected and counted; `None` when none is left.
    ///
    /// ```
    /// use forge_core::timing::{Timer, Timing};
    /// let t = Timing::from_pass_ns(&[4000.0, 0.0, 2000.0, -7.0, 3000.0], 10, Timer::Timestamp).unwrap();
    /// assert_eq!(t.samples, vec![400.0, 200.0, 300.0]);
    /// assert_eq!((t.median_ns, t.rejected), (300.0, 2));
    /// assert!(Timing::from_pass_ns(&[0.0, f64::NAN], 10, Timer::Timestamp).is_none());
    /// ```
    pub fn from_pass_ns(pass_ns: &[f64], repeats: u32, timer: Timer) -> Option<Timing> {
        let repeats = repeats.max(1);
        let samples: Vec<f64> = pass_ns
            .iter()
            .filter(|ns| valid_sample(**ns))
            .map(|ns| ns / repeats as f64)
            .collect();
        let rejected = (pass_ns.len() - samples.len()) as u32;
        let median_ns = median(&samples)?;
        Some(Timing {
            median_ns,
            samples,
            repeats,
            timer,
            rejected,
        })
    }

    /// The fastest sample, in nanoseconds per dispatch.
    pub fn min_ns(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// Whether the timing is usable: a positive, finite median over at least one sample.
    /// A timing read from a file is checked with this before it is trusted.
    pub fn is_valid(&self) -> bool {
        valid_sample(self.median_ns) && !self.samples.is_empty()
    }
}

/// Whether a measured duration can be a real one.
fn valid_sample(ns: f64) -> bool {
    ns.is_finite() && ns > 0.0
}

/// The median of `values` (the mean of the middle two for an even count); `None` when
/// empty. NaN sorts last and so never hides a real value.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

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

/// How [`ForgeRuntime::time_kernel_with`] measures.
#[derive(Clone, Debug, PartialEq)]
pub struct TimingOptions {
    /// Untimed dispatches first.
    pub warmup: u32,
    /// Timed passes whose median is taken.
    pub passes: u32,
    /// The shortest timed pass worth having, in nanoseconds: the repeat count grows until
    /// a pass takes this long.
    pub target_pass_ns: f64,
    /// The most dispatches in one pass.
    pub max_repeats: u32,
    /// A fixed number of dispatches per pass, instead of calibrating one: to compare runs
    /// with the same work per pass.
    pub repeats: Option<u32>,
    /// Rejected passes that are retried before giving up with what was accepted.
    pub max_retries: u32,
    /// After timing, read every writable binding back into [`TimedRun::outputs`], as the
    /// last timed pass left it, to check what the timed buffers computed.
    pub read_back: bool,
    /// Use the wall clock even where timestamp queries exist.
    pub wall_clock: bool,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            warmup: 2,
            passes: 7,
            target_pass_ns: DEFAULT_TARGET_PASS_NS,
            max_repeats: DEFAULT_MAX_REPEATS,
            repeats: None,
            max_retries: 7,
            read_back: false,
            wall_clock: false,
        }
    }
}

/// What [`ForgeRuntime::time_kernel_with`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct TimedRun {
    /// The measurement.
    pub timing: Timing,
    /// With [`TimingOptions::read_back`]: every writable binding as the last timed pass
    /// left it, in layout order, as [`Kernel::run_dyn`] returns them. Each pass starts from
    /// the pristine inputs, so this is [`Timing::repeats`] dispatches applied to them: for
    /// a kernel that only reads its inputs, the result of one call.
    pub outputs: Option<Vec<HostBuffer>>,
}

/// Everything one timing needs on the device, built once per call.
struct Rig {
    name: &'static str,
    compiled: Arc<CompiledPipeline>,
    bind_group: wgpu::BindGroup,
    dims: [u32; 3],
    /// (pristine, target, bytes) for every read_write binding.
    resets: Vec<(usize, usize, u64)>,
    /// (binding, bytes) for every `#[out]` binding.
    clears: Vec<(usize, u64)>,
    /// (binding, padded bytes, exact bytes) for every writable binding, in layout order.
    writable: Vec<(usize, u64, usize)>,
    leases: Vec<Lease>,
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

    /// One compute pass of `repeats` dispatches, with timestamps at `query` and `query + 1`.
    fn pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        repeats: u32,
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
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.dims;
        for _ in 0..repeats {
            pass.dispatch_workgroups(x, y, z);
        }
    }
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
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// The median time of one dispatch of `kernel` at `schedule` on `args`, measured on the
    /// device with the default [`TimingOptions`]; see the [module docs](crate::timing).
    ///
    /// `args` are as for [`Kernel::run_dyn`]: every non-`#[out]` binding holds data of its
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
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace { workgroup: &[64], items: &[1], vector: &[1] } }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
    /// #     fn binding_lens(&self, s: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![s[0].bits() as u64]) }
    /// #     fn threads(&self, s: &[ScalarValue]) -> Result<u64> { Ok(s[0].bits() as u64) }
    /// #     fn run_dyn(&self, _: &mut ForgeRuntime, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { unimplemented!() }
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
        let rig = self.rig(kernel, schedule, args)?;
        let result = self.measure(&rig, opts);
        let result = match result {
            Ok(timing) if opts.read_back => self.read_back(&rig, kernel).map(|outputs| TimedRun {
                timing,
                outputs: Some(outputs),
            }),
            Ok(timing) => Ok(TimedRun {
                timing,
                outputs: None,
            }),
            Err(e) => Err(e),
        };
        for lease in rig.leases {
            self.pool.release(lease);
        }
        result
    }

    /// Checks the arguments, uploads them and builds the bind group.
    fn rig(&mut self, kernel: &dyn Kernel, schedule: &Schedule, args: &DynArgs) -> Result<Rig> {
        let name = kernel.name();
        let layout = kernel.layout();
        check_scalar_count(name, kernel.scalars().len(), args.scalars.len())?;
        if args.buffers.len() != layout.len() {
            return Err(ForgeError::InvalidArgument {
                kernel: name,
                message: format!(
                    "expected {} buffers, one per binding in layout order, got {}",
                    layout.len(),
                    args.buffers.len()
                ),
            });
        }
        self.check_schedule(kernel, schedule)?;
        let lens = kernel.binding_lens(&args.scalars)?;
        let threads = kernel.threads(&args.scalars)?;
        let dims = self.workgroups(kernel, schedule, threads)?;
        let mut sizes = Vec::with_capacity(layout.len());
        for ((b, buf), &len) in layout.iter().zip(&args.buffers).zip(&lens) {
            if b.access != Access::Out {
                let actual = buf.as_ref().map_or(0, |h| h.len);
                if actual as u64 != len {
                    return Err(ForgeError::LengthMismatch {
                        kernel: name,
                        arg: b.name,
                        expr: b.len,
                        expected: len,
                        actual,
                    });
                }
            }
            sizes.push(self.check_binding_size(
                name,
                b.name,
                len.saturating_mul(b.elem.size() as u64),
            )?);
        }
        let params: Vec<u8> = args
            .scalars
            .iter()
            .flat_map(|s| s.bits().to_le_bytes())
            .collect();
        let uniform = self.check_params(name, &params)?;
        let pristine: Vec<u64> = layout
            .iter()
            .zip(&sizes)
            .filter(|(b, _)| b.access == Access::ReadWrite)
            .map(|(_, s)| *s)
            .collect();
        self.check_total(name, sizes.iter().chain(&pristine).copied().chain(uniform))?;
        // Launches recorded earlier are not part of this measurement.
        self.flush()?;
        self.check_lost()?;
        let compiled = self.pipeline(kernel, schedule, uniform.is_some())?;

        let max_buffer = self.limits.max_buffer_size;
        let mut leases: Vec<Lease> = Vec::new();
        let mut acquire =
            |rt: &mut ForgeRuntime, size: u64, usage, what: String| -> Result<usize> {
                let lease = rt
                    .pool
                    .acquire(&rt.device, size, usage, max_buffer, &|| what.clone())?;
                leases.push(lease);
                Ok(leases.len() - 1)
            };
        let mut resets = Vec::new();
        let mut clears = Vec::new();
        let mut writable = Vec::new();
        let mut uploads: Vec<(usize, &HostBuffer)> = Vec::new();
        let acquired: Result<Option<usize>> = (|| {
            for (i, (b, &size)) in layout.iter().zip(&sizes).enumerate() {
                let slot = acquire(
                    self,
                    size,
                    STORAGE_USAGE,
                    format!("kernel `{name}`: argument `{}`", b.name),
                )?;
                debug_assert_eq!(slot, i);
            }
            for (i, (b, &size)) in layout.iter().zip(&sizes).enumerate() {
                match (b.access, &args.buffers[i]) {
                    (Access::Read, Some(data)) => uploads.push((i, data)),
                    (Access::ReadWrite, Some(data)) => {
                        let copy = acquire(
                            self,
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
            match uniform {
                Some(size) => Ok(Some(acquire(
                    self,
                    size,
                    UNIFORM_USAGE,
                    format!("kernel `{name}`: `Params`"),
                )?)),
                None => Ok(None),
            }
        })();
        let uniform_slot = match acquired {
            Ok(slot) => slot,
            Err(e) => {
                for lease in leases {
                    self.pool.release(lease);
                }
                return Err(e);
            }
        };

        let device = self.device.clone();
        let queue = &self.queue;
        let (bind_group, err) = error_scope(&device, || {
            for &(slot, data) in &uploads {
                write_padded(queue, leases[slot].buffer(), data.bytes(), COPY_ALIGN);
            }
            if let Some(slot) = uniform_slot {
                write_padded(queue, leases[slot].buffer(), &params, 16);
            }
            let mut entries: Vec<wgpu::BindGroupEntry<'_>> = layout
                .iter()
                .zip(&sizes)
                .enumerate()
                .map(|(i, (b, &size))| wgpu::BindGroupEntry {
                    binding: b.binding,
                    resource: binding_resource(leases[i].buffer(), size),
                })
                .collect();
            if let (Some(slot), Some(size)) = (uniform_slot, uniform) {
                entries.push(wgpu::BindGroupEntry {
                    binding: layout.len() as u32,
                    resource: binding_resource(leases[slot].buffer(), size),
                });
            }
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &compiled.layout,
                entries: &entries,
            })
        });
        if let Some(e) = err {
            for lease in leases {
                self.pool.release(lease);
            }
            return Err(self.explain(ForgeError::Gpu {
                context: "preparing a timing",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            }));
        }
        Ok(Rig {
            name,
            compiled,
            bind_group,
            dims,
            resets,
            clears,
            writable,
            leases,
        })
    }

    /// Warm-up, calibration and the timed passes.
    fn measure(&mut self, rig: &Rig, opts: &TimingOptions) -> Result<Timing> {
        let passes = opts.passes.max(1);
        let max_repeats = opts.max_repeats.max(1);
        let timer = if opts.wall_clock || !self.has_timestamps() {
            if !opts.wall_clock && !WALL_CLOCK_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    adapter = %self.info.name,
                    "the adapter has no TIMESTAMP_QUERY; timing with the wall clock, which includes submission overhead"
                );
            }
            Timer::WallClock
        } else {
            Timer::Timestamp
        };
        let queries = match timer {
            Timer::Timestamp => Some(self.queries(rig.name, 2 * passes)?),
            Timer::WallClock => None,
        };

        if opts.warmup > 0 {
            let mut encoder = self.encoder(rig.name);
            rig.reset(&mut encoder);
            rig.pass(&mut encoder, opts.warmup, None);
            self.submit_and_wait(encoder)?;
        }

        let mut repeats = opts.repeats.unwrap_or(1).max(1);
        while opts.repeats.is_none() {
            let ns = self.timed_passes(rig, queries.as_ref(), repeats, 1)?[0];
            let long_enough = ns.is_some_and(|ns| ns >= opts.target_pass_ns);
            if long_enough || repeats >= max_repeats {
                break;
            }
            repeats = next_repeats(repeats, ns, opts.target_pass_ns, max_repeats);
        }

        let mut pass_ns: Vec<f64> = Vec::with_capacity(passes as usize);
        let mut rejected = 0u32;
        let mut retries_left = opts.max_retries;
        let mut wanted = passes;
        loop {
            for ns in self.timed_passes(rig, queries.as_ref(), repeats, wanted)? {
                match ns {
                    Some(ns) => pass_ns.push(ns),
                    None => rejected += 1,
                }
            }
            wanted = passes.saturating_sub(pass_ns.len() as u32);
            if wanted == 0 || retries_left == 0 {
                break;
            }
            if rejected > 0 {
                tracing::debug!(
                    kernel = rig.name,
                    rejected,
                    "retrying rejected timing passes"
                );
            }
            retries_left = retries_left.saturating_sub(wanted);
        }
        let mut timing = Timing::from_pass_ns(&pass_ns, repeats, timer).ok_or_else(|| ForgeError::TimingFailed {
            kernel: rig.name,
            message: format!(
                "all {rejected} timed passes of {repeats} dispatches were rejected: the timer did not advance; \
                 check the adapter's timestamp support"
            ),
        })?;
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

    /// `count` timed passes of `repeats` dispatches, each after a reset. `None` for a pass
    /// whose duration is not positive.
    fn timed_passes(
        &mut self,
        rig: &Rig,
        queries: Option<&Queries>,
        repeats: u32,
        count: u32,
    ) -> Result<Vec<Option<f64>>> {
        let Some(q) = queries else {
            // Wall clock: the reset goes in a submission of its own, then the pass alone is
            // timed from submission to idle.
            let mut out = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let mut encoder = self.encoder(rig.name);
                rig.reset(&mut encoder);
                self.submit_and_wait(encoder)?;
                let mut encoder = self.encoder(rig.name);
                rig.pass(&mut encoder, repeats, None);
                let start = Instant::now();
                self.submit_and_wait(encoder)?;
                let ns = start.elapsed().as_nanos() as f64;
                out.push(valid_sample(ns).then_some(ns));
            }
            return Ok(out);
        };
        let mut out = Vec::with_capacity(count as usize);
        let mut done = 0;
        while done < count {
            let batch = (count - done).min(q.capacity / 2);
            let mut encoder = self.encoder(rig.name);
            for p in 0..batch {
                rig.reset(&mut encoder);
                rig.pass(&mut encoder, repeats, Some((&q.set, 2 * p)));
            }
            let bytes = 2 * batch as u64 * wgpu::QUERY_SIZE as u64;
            encoder.resolve_query_set(&q.set, 0..2 * batch, &q.resolve, 0);
            let staging = self.pool.acquire(
                &self.device,
                bytes,
                STAGING_USAGE,
                self.limits.max_buffer_size,
                &|| format!("kernel `{}`: timestamps", rig.name),
            )?;
            encoder.copy_buffer_to_buffer(&q.resolve, 0, staging.buffer(), 0, bytes);
            self.submit(encoder, rig.name)?;
            let period = self.queue.get_timestamp_period();
            let ticks = self.read_staging(staging.buffer(), bytes, |b| {
                bytemuck::cast_slice::<u8, u64>(b).to_vec()
            });
            self.pool.release(staging);
            for pair in ticks?.chunks_exact(2) {
                out.push(ticks_to_ns(pair[0], pair[1], period));
            }
            done += batch;
        }
        Ok(out)
    }

    /// Reads every writable binding back as the last pass left it.
    fn read_back(&mut self, rig: &Rig, kernel: &dyn Kernel) -> Result<Vec<HostBuffer>> {
        let layout = kernel.layout();
        let mut offsets = Vec::with_capacity(rig.writable.len());
        let mut total = 0u64;
        for &(_, size, _) in &rig.writable {
            let offset = align_up(total, crate::buffers::STAGING_ALIGN);
            offsets.push(offset);
            total = offset + size;
        }
        if rig.writable.is_empty() {
            return Ok(Vec::new());
        }
        let staging = self.pool.acquire(
            &self.device,
            total,
            STAGING_USAGE,
            self.limits.max_buffer_size,
            &|| format!("kernel `{}`: readback", rig.name),
        )?;
        let mut encoder = self.encoder(rig.name);
        for (&(i, size, _), &offset) in rig.writable.iter().zip(&offsets) {
            encoder.copy_buffer_to_buffer(rig.buffer(i), 0, staging.buffer(), offset, size);
        }
        self.submit(encoder, rig.name)?;
        let result = self.read_staging(staging.buffer(), total, |bytes| {
            rig.writable
                .iter()
                .zip(&offsets)
                .map(|(&(i, _, exact), &offset)| {
                    let start = offset as usize;
                    HostBuffer::from_slice::<u8>(layout[i].elem, &bytes[start..start + exact])
                })
                .collect()
        });
        self.pool.release(staging);
        result
    }

    fn encoder(&self, label: &'static str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    fn submit(&mut self, encoder: wgpu::CommandEncoder, name: &'static str) -> Result<()> {
        let device = self.device.clone();
        let queue = &self.queue;
        let ((), err) = error_scope(&device, || {
            queue.submit([encoder.finish()]);
        });
        self.stats.submissions += 1;
        match err {
            Some(e) => Err(self.explain(ForgeError::Gpu {
                context: "timing a kernel",
                message: format!("kernel `{name}`: {}", error_text(&e)),
            })),
            None => Ok(()),
        }
    }

    fn submit_and_wait(&mut self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.submit(encoder, "timing")?;
        self.wait()
    }

    fn queries(&self, name: &'static str, count: u32) -> Result<Queries> {
        let capacity = count.clamp(2, wgpu::QUERY_SET_MAX_QUERIES) & !1;
        let device = &self.device;
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
            return Err(self.explain(ForgeError::Gpu {
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
