//! Timing a whole call of a multi-pass built-in: every launch that one call records (several
//! kernels, several passes) between two GPU timestamps. Part of timing (layer 6).
//!
//! [`ForgeRuntime::time_kernel`] times one dispatch of one kernel. A call such as a
//! two-pass FFT or a radix-select top-k records several launches on device tensors; what a
//! user waits for is all of them, so [`ForgeRuntime::time_calls`] measures that:
//! 1. launches recorded earlier are submitted and waited for, so they are not counted;
//! 2. **warm-up**: the call runs at least [`TimingOptions::warmup`] times and for at least
//!    [`TimingOptions::warmup_ns`] (300 ms by default), in growing batches, so that an idle
//!    GPU's clocks have come up;
//! 3. each timed pass records a timestamp ([`crate::backend::Command::Stamp`]: on wgpu an
//!    empty compute pass that writes it, on CUDA an event), then the call
//!    ([`TimingOptions::repeats`] times, once by default), then the end timestamp, and
//!    submits them. Vulkan writes both timestamps once every earlier command has finished
//!    (CUDA's stream orders its events the same way), so the interval covers exactly the
//!    call's launches and the barriers between them;
//! 4. samples that are not positive and finite are rejected, as in
//!    [`ForgeRuntime::time_kernel`], and the **median** of the rest is reported, per call.
//!
//! It is [`crate::timing`]'s one batch timer, with calls instead of dispatches: a batch is
//! one timed pass of `repeats` calls.
//!
//! Without `TIMESTAMP_QUERY` each pass is timed with the wall clock from submission to idle.

use super::{Subject, Timing, TimingOptions};
use crate::error::Result;
use crate::runtime::ForgeRuntime;

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
        self.measure(label, &mut Subject::Calls(&mut record), opts)
            .await
    }
}
