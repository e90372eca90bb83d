//! Records: what the procedures find and the manifest cache stores. Layer 1 (values).
//!
//! This module owns the plain, serializable results that travel between the layers: a
//! certification's [`Verdict`], a [`Timing`] and the clock it used ([`Timer`]), and what a
//! [`TuningManifest`] holds for each problem-size bucket ([`BucketTuning`], one
//! [`CandidateResult`] per schedule tried). [`crate::certify`], [`crate::timing`] and
//! [`crate::manifest`] produce and read them, and re-export them where users look for them;
//! none of them is needed to describe one here, so the manifest cache (layer 2) stores them
//! without importing the procedures (layer 6) that make them.
//!
//! Fields added later are `#[serde(default)]`, so older cache files still load.

use crate::kernel::ScalarValue;
use crate::schedule::Schedule;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The manifest format this version writes. Files of a newer format are ignored.
pub const MANIFEST_FORMAT: u32 = 1;

/// The crate version written into manifests; a manifest of another version is stale.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The outcome of certifying a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Every case that ran passed every check, and at least one case ran.
    Pass,
    /// A check failed, a run returned an error, or no case could run.
    Fail,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
        })
    }
}

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
    /// One per-dispatch time per accepted batch (the median of the batch's dispatches), in
    /// nanoseconds, in the order measured.
    pub samples: Vec<f64>,
    /// Dispatches timed in each batch.
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

/// Whether a measured duration can be a real one.
pub(crate) fn valid_sample(ns: f64) -> bool {
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

/// One candidate schedule as the tuner saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateResult {
    /// The schedule.
    pub schedule: Schedule,
    /// The certification verdict; `None` when the candidate was not certified because the
    /// adapter cannot run it.
    pub verdict: Option<Verdict>,
    /// Certification cases that ran.
    #[serde(default)]
    pub cases: usize,
    /// The largest absolute error certification saw.
    #[serde(default)]
    pub max_abs_err: f64,
    /// The largest relative error certification saw.
    #[serde(default)]
    pub max_rel_err: f64,
    /// The time of one dispatch on the bucket's problem; only certified candidates are
    /// timed.
    #[serde(default)]
    pub timing: Option<Timing>,
    /// Why the candidate cannot win: the first certification failure, the reason it was
    /// skipped, or the timing error.
    #[serde(default)]
    pub note: Option<String>,
}

impl CandidateResult {
    /// Whether the candidate passed certification and has a valid timing: only such a
    /// candidate can win.
    pub fn eligible(&self) -> bool {
        self.verdict == Some(Verdict::Pass) && self.timing.as_ref().is_some_and(Timing::is_valid)
    }

    /// The median time of one dispatch, where the candidate was timed.
    pub fn median_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .filter(|t| t.is_valid())
            .map(|t| t.median_ns)
    }
}

/// The tuning of one problem-size bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketTuning {
    /// `floor(log2(threads))`; see [`bucket_of`].
    pub bucket: u32,
    /// The logical invocations of the problem timed.
    pub threads: u64,
    /// The problem timed: the kernel's scalar arguments, in declaration order.
    pub scalars: Vec<ScalarValue>,
    /// The problem as `name=value, ...`, for people.
    #[serde(default)]
    pub problem: String,
    /// Every candidate, in the order tried.
    pub candidates: Vec<CandidateResult>,
    /// The fastest certified candidate; `None` when no candidate qualified.
    pub winner: Option<Schedule>,
    /// When it was tuned, in seconds since the Unix epoch.
    #[serde(default)]
    pub tuned_at: u64,
}

impl BucketTuning {
    /// The winner's result.
    pub fn winner_result(&self) -> Option<&CandidateResult> {
        let w = self.winner?;
        self.candidates.iter().find(|c| c.schedule == w)
    }

    /// The result of the candidate with this schedule.
    pub fn candidate(&self, schedule: &Schedule) -> Option<&CandidateResult> {
        self.candidates.iter().find(|c| c.schedule == *schedule)
    }

    /// The fastest eligible candidate.
    pub fn fastest(&self) -> Option<Schedule> {
        self.candidates
            .iter()
            .filter(|c| c.eligible())
            .min_by(|a, b| {
                a.median_ns()
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.median_ns().unwrap_or(f64::INFINITY))
            })
            .map(|c| c.schedule)
    }
}

/// What the tuner found for one kernel on one adapter: see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningManifest {
    /// The file format; see [`MANIFEST_FORMAT`].
    #[serde(default)]
    pub format: u32,
    /// The kernel's name.
    pub kernel: String,
    /// The hash of the kernel the manifest was tuned for ([`crate::kernel::KernelId::hash`]).
    pub kernel_hash: String,
    /// The topology hash of the adapter.
    pub topology: String,
    /// The adapter's name.
    pub adapter: String,
    /// The emission backend (`wgsl`, `spirv`) the candidates ran with.
    #[serde(default)]
    pub backend: String,
    /// The version of the crate that wrote it.
    pub crate_version: String,
    /// The kernel's declared schedule.
    pub default_schedule: Schedule,
    /// One entry per tuned problem-size bucket, sorted by bucket.
    pub buckets: Vec<BucketTuning>,
}

impl TuningManifest {
    /// The schedule to use when the problem's size is not known: the winner of the
    /// largest bucket that has one.
    pub fn winner(&self) -> Option<Schedule> {
        self.buckets.iter().rev().find_map(|b| b.winner)
    }

    /// The winner of the tuned bucket nearest to `threads` (ties go to the larger bucket).
    pub fn winner_for(&self, threads: u64) -> Option<Schedule> {
        let want = bucket_of(threads) as i64;
        self.buckets
            .iter()
            .filter(|b| b.winner.is_some())
            .min_by_key(|b| ((b.bucket as i64 - want).abs(), -(b.bucket as i64)))
            .and_then(|b| b.winner)
    }

    /// The tuning of one bucket.
    pub fn bucket(&self, bucket: u32) -> Option<&BucketTuning> {
        self.buckets.iter().find(|b| b.bucket == bucket)
    }

    /// Adds `tuning`, replacing the bucket of the same number; keeps buckets sorted.
    pub fn insert(&mut self, tuning: BucketTuning) {
        self.buckets.retain(|b| b.bucket != tuning.bucket);
        self.buckets.push(tuning);
        self.buckets.sort_by_key(|b| b.bucket);
    }
}

/// The problem-size bucket of a problem with `threads` logical invocations:
/// `floor(log2(threads))`, and 0 for 0 or 1.
///
/// ```
/// use forge_core::manifest::bucket_of;
/// assert_eq!((bucket_of(1), bucket_of(1023), bucket_of(1024), bucket_of(0)), (0, 9, 10, 0));
/// ```
pub fn bucket_of(threads: u64) -> u32 {
    63 - threads.max(1).leading_zeros()
}
