//! Timing a whole call of a multi-pass built-in: every launch that one call records (several
//! kernels, several passes) between two GPU timestamps. Part of timing (layer 5).
//!
//! [`ForgeRuntime::time_kernel`] times one dispatch of one kernel. A call such as a
//! two-pass FFT or a radix-select top-k records several launches on device tensors; what a
//! user waits for is all of them, so [`ForgeRuntime::time_calls`] measures that:
//! 1. launches recorded earlier are submitted and waited for, so they are not counted;
//! 2. **warm-up**: the call runs at least [`TimingOptions::warmup`] times and for at least
//!    [`TimingOptions::warmup_ns`] (300 ms by default), in growing batches, so that an idle
//!    GPU's clocks have come up;
//! 3. each timed pass records an empty compute pass that writes the start timestamp, then
//!    the call ([`TimingOptions::repeats`] times, once by default), then an empty compute
//!    pass that writes the end timestamp, and submits them. Vulkan writes both timestamps
//!    once every earlier command has finished, so the interval covers exactly the call's
//!    launches and the barriers between them;
//! 4. samples that are not positive and finite are rejected, as in
//!    [`ForgeRuntime::time_kernel`], and the **median** of the rest is reported, per call.
//!
//! Without `TIMESTAMP_QUERY` each pass is timed with the wall clock from submission to idle.

use super::{ticks_to_ns, Timer, Timing, TimingOptions};
use crate::device::STAGING_USAGE;
use crate::error::{ForgeError, Result};
use crate::runtime::ForgeRuntime;
use web_time::Instant;

impl ForgeRuntime {
    /// The median GPU time of one call that `record` records, in the sense of the [module
    /// docs](crate::timing::calls). `record` must only record launches on device tensors
    /// (`launch`, [`ForgeRuntime::launch_tensors`], [`ForgeRuntime::clear`]): it must not
    /// download, which would submit half a pass.
    ///
    /// [`TimingOptions::passes`], `warmup`, `warmup_ns`, `repeats` (calls per timed pass,
    /// default 1), `max_retries` and `wall_clock` apply; `target_pass_ns` and `max_repeats` do not (the
    /// calls measured here are long enough to time one at a time).
    ///
    /// ```
    /// use forge_core::timing::TimingOptions;
    /// let mut rt = forge_core::ForgeRuntime::new(64 << 20, None)?;
    /// let t = rt.zeros::<f32>(1 << 16)?;
    /// let timing = rt.time_calls("clear", &TimingOptions::default(), |rt| rt.clear(&t))?;
    /// assert!(timing.median_ns > 0.0 && timing.samples.len() == 7);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn time_calls(
        &mut self,
        label: &'static str,
        opts: &TimingOptions,
        record: impl FnMut(&mut ForgeRuntime) -> Result<()>,
    ) -> Result<Timing> {
        crate::blocking::block_on("`time_calls`", self.time_calls_async(label, opts, record))
    }

    /// [`ForgeRuntime::time_calls`], awaited: the form a browser calls.
    pub async fn time_calls_async(
        &mut self,
        label: &'static str,
        opts: &TimingOptions,
        mut record: impl FnMut(&mut ForgeRuntime) -> Result<()>,
    ) -> Result<Timing> {
        #[cfg(feature = "cuda")]
        if self.is_cuda() {
            return self.cuda_time_calls(label, opts, record);
        }
        let passes = opts.passes.max(1);
        let repeats = opts.repeats.unwrap_or(1).max(1);
        self.flush()?;
        self.gpu().wait_async().await?;
        // Warm-up: at least `warmup` calls and `warmup_ns` of wall time, in batches that
        // double until one takes 10 ms, so that an idle GPU's clocks come up first.
        let start = Instant::now();
        let mut batch = opts.warmup.max(1);
        let mut done = 0u32;
        while done < opts.warmup || (start.elapsed().as_nanos() as f64) < opts.warmup_ns {
            for _ in 0..batch {
                record(self)?;
            }
            let t = Instant::now();
            self.flush()?;
            self.gpu().wait_async().await?;
            done = done.saturating_add(batch);
            if t.elapsed().as_secs_f64() < 0.01 && batch < 4096 {
                batch *= 2;
            }
        }

        let timer = if opts.wall_clock || !self.has_timestamps() {
            Timer::WallClock
        } else {
            Timer::Timestamp
        };
        let mut pass_ns = Vec::with_capacity(passes as usize);
        let mut rejected = 0u32;
        let mut retries_left = opts.max_retries;
        while (pass_ns.len() as u32) < passes {
            let ns = match timer {
                Timer::Timestamp => self.timed_call_pass(label, repeats, &mut record).await?,
                Timer::WallClock => {
                    for _ in 0..repeats {
                        record(self)?;
                    }
                    let start = Instant::now();
                    self.flush()?;
                    self.gpu().wait_async().await?;
                    Some(start.elapsed().as_nanos() as f64)
                }
            };
            match ns {
                Some(ns) if ns.is_finite() && ns > 0.0 => pass_ns.push(ns),
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
                    "all {rejected} timed passes were rejected: the timer did not advance; \
                     check the adapter's timestamp support"
                ),
            }
        })?;
        timing.rejected = rejected;
        Ok(timing)
    }

    /// Records an empty compute pass on the pending encoder that writes timestamp `index`
    /// of `set`.
    fn timestamp_marker(&mut self, set: &wgpu::QuerySet, index: u32) -> Result<()> {
        self.gpu_mut().record("timing a call", |encoder| {
            let _pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("forge call timestamp"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(index),
                    end_of_pass_write_index: None,
                }),
            });
        })
    }

    /// One timed pass of `repeats` calls between two timestamps: the duration, or `None`
    /// when the timer did not advance.
    async fn timed_call_pass(
        &mut self,
        label: &'static str,
        repeats: u32,
        record: &mut impl FnMut(&mut ForgeRuntime) -> Result<()>,
    ) -> Result<Option<f64>> {
        let q = self.queries(label, 2)?;
        self.timestamp_marker(&q.set, 0)?;
        for _ in 0..repeats {
            record(self)?;
        }
        self.timestamp_marker(&q.set, 1)?;
        let bytes = 2 * wgpu::QUERY_SIZE as u64;
        let gpu = self.gpu_mut();
        let staging = gpu.acquire(bytes, STAGING_USAGE, &|| format!("`{label}`: timestamps"))?;
        let mut encoder = gpu.encoder(label);
        encoder.resolve_query_set(&q.set, 0..2, &q.resolve, 0);
        encoder.copy_buffer_to_buffer(&q.resolve, 0, staging.buffer(), 0, bytes);
        gpu.submit(Some(encoder), "timing a call")?;
        let period = gpu.queue().get_timestamp_period();
        let ticks = gpu
            .read_async(staging.buffer(), bytes, |b| {
                bytemuck::cast_slice::<u8, u64>(b).to_vec()
            })
            .await;
        gpu.release(staging);
        let ticks = ticks?;
        Ok(ticks_to_ns(ticks[0], ticks[1], period))
    }
}
