//! Timing on a CUDA device (the `cuda` feature): the CUDA form of
//! [`ForgeRuntime::time_kernel_with`] and [`ForgeRuntime::time_calls`], which branch here at
//! their start. Layer 5, as the rest of timing: it launches through the runtime's CUDA
//! operations ([`crate::runtime::cuda`]).
//!
//! Each dispatch is bracketed by two CUDA events, with the resets (pristine copies, cleared
//! outputs) outside them, as the wgpu timer puts them outside its timestamps; the batches,
//! calibration, warm-up, input sets and medians are the wgpu timer's.

use super::{input_sets, median, next_repeats, TimedRun, Timer, Timing, TimingOptions, TimingPlan};
use crate::device::cuda::{CudaGpu, CudaKernel, DeviceMem, Event};
use crate::error::{ForgeError, Result};
use crate::kernel::{Access, DynArgs, HostBuffer, Kernel};
use crate::plan::LaunchPlan;
use crate::records::valid_sample;
use crate::runtime::ForgeRuntime;
use crate::schedule::Schedule;
use std::sync::Arc;
use web_time::Instant;

impl ForgeRuntime {
    /// [`ForgeRuntime::time_kernel_with`] on CUDA; see the [module docs](self).
    pub(crate) fn cuda_time_kernel(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
        opts: &TimingOptions,
    ) -> Result<TimedRun> {
        let mut rig = self.cuda_rig(kernel, schedule, args, opts.rotate_bytes)?;
        let input_sets = rig.sets.len() as u32;
        let gpu = self.cuda_dev()?;
        let timing = measure(gpu, &mut rig, opts)?;
        let outputs = if opts.read_back {
            let mut outs = Vec::with_capacity(rig.writable.len());
            for &(i, exact) in &rig.writable {
                let mut data = vec![0u8; exact];
                gpu.download(&rig.mems[i], &mut data)?;
                outs.push(HostBuffer::from_slice::<u8>(kernel.layout()[i].elem, &data));
            }
            Some(outs)
        } else {
            None
        };
        Ok(TimedRun {
            timing,
            outputs,
            input_sets,
        })
    }

    /// The timing's device memory: every binding, a pristine copy of every read_write one,
    /// input sets of the read-only ones; the arguments uploaded.
    fn cuda_rig(
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
        let gpu = self.cuda_dev()?;
        let (capacity, in_use) = (gpu.budget().capacity(), gpu.budget().in_use());
        plan.check_capacity(pristine, capacity, in_use)?;
        // Launches enqueued earlier are not part of this measurement.
        gpu.sync("timing a kernel")?;
        let compiled = gpu.kernel(kernel, schedule)?;
        let available = capacity
            .saturating_sub(in_use)
            .saturating_sub(plan.device_bytes() + pristine);
        let sets = input_sets(read, rotate_bytes, available);

        let mut mems: Vec<DeviceMem> = Vec::new();
        let mut resets = Vec::new();
        let mut clears = Vec::new();
        let mut writable = Vec::new();
        for (b, &size) in layout.iter().zip(&plan.bindings) {
            mems.push(gpu.alloc(size, &|| format!("kernel `{name}`: argument `{}`", b.name))?);
        }
        for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
            match (b.access, &args.buffers[i]) {
                (Access::Read, Some(data)) => gpu.upload(&mems[i], data.bytes())?,
                (Access::ReadWrite, Some(data)) => {
                    let copy = gpu.alloc(size, &|| {
                        format!("kernel `{name}`: pristine copy of `{}`", b.name)
                    })?;
                    gpu.upload(&copy, data.bytes())?;
                    mems.push(copy);
                    resets.push((mems.len() - 1, i, size));
                }
                _ => clears.push((i, size)),
            }
            if b.access.writable() {
                writable.push((i, lens[i] as usize * b.elem.size()));
            }
        }
        let mut set_slots: Vec<Vec<usize>> = vec![(0..layout.len()).collect()];
        for set in 1..sets {
            let mut slots: Vec<usize> = (0..layout.len()).collect();
            for (i, (b, &size)) in layout.iter().zip(&plan.bindings).enumerate() {
                if b.access == Access::Read {
                    let copy = gpu.alloc(size, &|| {
                        format!("kernel `{name}`: input set {set} of `{}`", b.name)
                    })?;
                    gpu.copy(&mems[i], &copy, size)?;
                    mems.push(copy);
                    slots[i] = mems.len() - 1;
                }
            }
            set_slots.push(slots);
        }
        gpu.sync("preparing a timing")?;
        Ok(Rig {
            block: schedule.workgroup_shape(),
            compiled,
            plan,
            mems,
            sets: set_slots,
            resets,
            clears,
            writable,
            next: 0,
            events: Vec::new(),
        })
    }

    /// [`ForgeRuntime::time_calls`] on CUDA: each timed pass is the calls `record`
    /// enqueues between two events.
    pub(crate) fn cuda_time_calls(
        &mut self,
        label: &'static str,
        opts: &TimingOptions,
        mut record: impl FnMut(&mut ForgeRuntime) -> Result<()>,
    ) -> Result<Timing> {
        let passes = opts.passes.max(1);
        let repeats = opts.repeats.unwrap_or(1).max(1);
        self.cuda_dev()?.sync("timing a call")?;
        let start = Instant::now();
        let mut batch = opts.warmup.max(1);
        let mut done = 0u32;
        while done < opts.warmup || (start.elapsed().as_nanos() as f64) < opts.warmup_ns {
            for _ in 0..batch {
                record(self)?;
            }
            let t = Instant::now();
            self.cuda_dev()?.sync("timing a call")?;
            done = done.saturating_add(batch);
            if t.elapsed().as_secs_f64() < 0.01 && batch < 4096 {
                batch *= 2;
            }
        }
        let timer = if opts.wall_clock {
            Timer::WallClock
        } else {
            Timer::Timestamp
        };
        let (first, last) = {
            let gpu = self.cuda_dev()?;
            (gpu.event()?, gpu.event()?)
        };
        let mut pass_ns = Vec::with_capacity(passes as usize);
        let mut rejected = 0u32;
        let mut retries_left = opts.max_retries;
        while (pass_ns.len() as u32) < passes {
            let ns = match timer {
                Timer::Timestamp => {
                    self.cuda_dev()?.record(&first)?;
                    for _ in 0..repeats {
                        record(self)?;
                    }
                    let gpu = self.cuda_dev()?;
                    gpu.record(&last)?;
                    gpu.sync("timing a call")?;
                    gpu.elapsed_ns(&first, &last)?
                }
                Timer::WallClock => {
                    let t = Instant::now();
                    for _ in 0..repeats {
                        record(self)?;
                    }
                    self.cuda_dev()?.sync("timing a call")?;
                    Some(t.elapsed().as_nanos() as f64)
                }
            };
            match ns {
                Some(ns) if valid_sample(ns) => pass_ns.push(ns),
                _ => {
                    rejected += 1;
                    if retries_left == 0 {
                        break;
                    }
                    retries_left -= 1;
                }
            }
        }
        let mut timing = Timing::from_pass_ns(&pass_ns, repeats, timer).ok_or_else(|| {
            ForgeError::TimingFailed {
                kernel: label,
                message: format!(
                    "all {rejected} timed passes were rejected: the CUDA events measured no time"
                ),
            }
        })?;
        timing.rejected = rejected;
        Ok(timing)
    }
}

/// Everything one CUDA timing needs, made once per call.
struct Rig {
    compiled: Arc<CudaKernel>,
    plan: LaunchPlan,
    block: [u32; 3],
    mems: Vec<DeviceMem>,
    /// For each input set, the allocation of each binding.
    sets: Vec<Vec<usize>>,
    /// (pristine, target, bytes) for every read_write binding.
    resets: Vec<(usize, usize, u64)>,
    /// (binding, bytes) for every `#[out]` binding.
    clears: Vec<(usize, u64)>,
    /// (binding, exact bytes) for every writable binding, in layout order.
    writable: Vec<(usize, usize)>,
    /// Dispatches so far: which input set the next one takes.
    next: usize,
    /// Two events per timed pass, made as batches grow.
    events: Vec<Event>,
}

impl Rig {
    /// Restores the inputs.
    fn reset(&self, gpu: &mut CudaGpu) -> Result<()> {
        for &(src, dst, bytes) in &self.resets {
            gpu.copy(&self.mems[src], &self.mems[dst], bytes)?;
        }
        for &(i, bytes) in &self.clears {
            gpu.zero(&self.mems[i], bytes)?;
        }
        Ok(())
    }

    /// One dispatch on the next input set.
    fn dispatch(&mut self, gpu: &mut CudaGpu) -> Result<()> {
        let set = self.next % self.sets.len();
        self.next = self.next.wrapping_add(1);
        let ptrs: Vec<_> = self.sets[set].iter().map(|&i| self.mems[i].ptr()).collect();
        let params = self.plan.has_params().then_some(&self.plan.params[..]);
        gpu.launch(
            &self.compiled,
            self.plan.grid.dispatch,
            self.block,
            &ptrs,
            params,
        )
    }
}

/// What one timed batch gave: its sample (the median per-dispatch time), the GPU time of
/// its passes together, and the passes rejected.
struct Batch {
    per_dispatch: Option<f64>,
    busy_ns: Option<f64>,
    rejected: u32,
}

/// Warm-up, calibration and the timed batches, as [`crate::timing`]'s wgpu timer does.
fn measure(gpu: &mut CudaGpu, rig: &mut Rig, opts: &TimingOptions) -> Result<Timing> {
    let passes = opts.passes.max(1);
    let per_pass = opts.dispatches_per_pass.max(1);
    let max_repeats = opts.max_repeats.clamp(1, 4096);
    let timer = if opts.wall_clock {
        Timer::WallClock
    } else {
        Timer::Timestamp
    };
    let fixed = opts.repeats.map(|r| r.clamp(1, max_repeats));

    let start = Instant::now();
    let mut batch = opts.warmup.max(1);
    let mut done = 0u32;
    while done < opts.warmup || (start.elapsed().as_nanos() as f64) < opts.warmup_ns {
        for _ in 0..batch {
            rig.reset(gpu)?;
            rig.dispatch(gpu)?;
        }
        let t = Instant::now();
        gpu.sync("timing a kernel")?;
        done = done.saturating_add(batch);
        if t.elapsed().as_secs_f64() < 0.01 && batch < 4096 {
            batch *= 2;
        }
    }

    let mut repeats = fixed.unwrap_or(1);
    while fixed.is_none() {
        let busy = timed_batch(gpu, rig, timer, repeats, per_pass)?.busy_ns;
        if busy.is_some_and(|ns| ns >= opts.target_pass_ns) || repeats >= max_repeats {
            break;
        }
        repeats = next_repeats(repeats, busy, opts.target_pass_ns, max_repeats);
    }

    let mut samples = Vec::with_capacity(passes as usize);
    let mut rejected = 0u32;
    let mut retries_left = opts.max_retries;
    while (samples.len() as u32) < passes {
        let batch = timed_batch(gpu, rig, timer, repeats, per_pass)?;
        rejected += batch.rejected;
        match batch.per_dispatch {
            Some(ns) => samples.push(ns),
            None if retries_left == 0 => break,
            None => retries_left -= 1,
        }
    }
    let mut timing = Timing::from_pass_ns(&samples, 1, timer).ok_or_else(|| {
        ForgeError::TimingFailed {
            kernel: rig.compiled.name(),
            message: format!(
                "all {rejected} timed passes of batches of {repeats} dispatches were rejected: the CUDA events measured no time"
            ),
        }
    })?;
    timing.repeats = repeats;
    timing.rejected = rejected;
    Ok(timing)
}

/// One batch of `repeats` timed passes of `per_pass` dispatches: with events, each pass
/// follows a reset and sits between its own two events; with the wall clock, the batch
/// follows one reset and is timed from its first launch to idle.
fn timed_batch(
    gpu: &mut CudaGpu,
    rig: &mut Rig,
    timer: Timer,
    repeats: u32,
    per_pass: u32,
) -> Result<Batch> {
    if timer == Timer::WallClock {
        rig.reset(gpu)?;
        gpu.sync("timing a kernel")?;
        let start = Instant::now();
        for _ in 0..repeats.saturating_mul(per_pass) {
            rig.dispatch(gpu)?;
        }
        gpu.sync("timing a kernel")?;
        let ns = start.elapsed().as_nanos() as f64;
        let ok = valid_sample(ns);
        return Ok(Batch {
            per_dispatch: ok.then(|| ns / (repeats as f64 * per_pass as f64)),
            busy_ns: ok.then_some(ns),
            rejected: u32::from(!ok),
        });
    }
    while rig.events.len() < 2 * repeats as usize {
        rig.events.push(gpu.event()?);
    }
    for p in 0..repeats as usize {
        rig.reset(gpu)?;
        gpu.record(&rig.events[2 * p])?;
        for _ in 0..per_pass {
            rig.dispatch(gpu)?;
        }
        gpu.record(&rig.events[2 * p + 1])?;
    }
    gpu.sync("timing a kernel")?;
    let mut valid = Vec::with_capacity(repeats as usize);
    for p in 0..repeats as usize {
        if let Some(ns) = gpu.elapsed_ns(&rig.events[2 * p], &rig.events[2 * p + 1])? {
            valid.push(ns);
        }
    }
    Ok(Batch {
        per_dispatch: median(&valid).map(|ns| ns / per_pass as f64),
        busy_ns: (!valid.is_empty()).then(|| valid.iter().sum()),
        rejected: repeats - valid.len() as u32,
    })
}
