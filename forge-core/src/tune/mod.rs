//! The auto-tuner: picks the fastest *certified* schedule of a kernel on this adapter and
//! stores it in the manifest cache. Layer 6 (procedures): built on the runtime, the
//! certifier and timing.
//!
//! This module owns [`tune`], its options ([`TuneOptions`]) and its result
//! ([`TuneReport`]). For one kernel and one problem:
//! 1. **Candidates** are [`Kernel::tune_space`]'s schedules, plus the declared schedule
//!    when the space lacks it (it is the baseline a speedup is measured against). Those the
//!    adapter cannot run ([`ForgeRuntime::check_schedule`]) are recorded as skipped.
//! 2. **Certification first.** Every runnable candidate is certified with
//!    [`crate::certify::certify`] on the kernel's own certification cases. A candidate that
//!    fails is recorded with its first failure and is never timed, so a fast wrong schedule
//!    can never win.
//! 3. **Timing** of each certified candidate on the problem, with
//!    [`ForgeRuntime::time_kernel_with`]: timestamp queries, warm-up, repeats far above the
//!    timer's quantum, several passes, in-place bindings reset. The candidates are timed in
//!    [`TuneOptions::rounds`] interleaved rounds (every candidate once per round, the repeat
//!    count fixed after the first), so a burst of load on a shared machine spreads over all
//!    candidates instead of sinking one; a candidate's time is the median over all its
//!    passes.
//! 4. **The winner** is the certified candidate with the smallest median.
//! 5. **The manifest** gets this problem's bucket (other buckets already cached are kept),
//!    is written atomically to `<cache>/<topology>/<name>-<short hash>.json`, and becomes what the
//!    runtime uses. A cache that cannot be written (read-only, or not a directory) is a
//!    warning: the runtime still uses the result, which is just not persisted.
//!
//! # The problem timed
//! Unless [`TuneOptions::problem`] names one, the problem is the kernel's **largest
//! certification case** (by the bytes of its bindings, then by its threads), among those
//! whose bindings fit [`TuneOptions::max_problem_bytes`]: [`representative_problem`]. The
//! built-in kernels declare cases up to a few hundred KiB, big enough to fill a workgroup
//! grid and small enough that tuning every built-in takes about a minute on lavapipe. Tune
//! a real workload's size with [`TuneOptions::problem`] (the CLI's `forge tune KERNEL
//! --problem m=4096,n=4096`); each size lands in its own bucket of the manifest.
//!
//! Test vectors for the timed problem come from the same seeded generator as
//! certification's, with the same per-binding distributions.

use crate::certify::{case_rng, certify, generate, CertOptions, Verdict, DEFAULT_SEED};
use crate::error::{ForgeError, Result};
use crate::kernel::{Access, DynArgs, Kernel, ScalarType, ScalarValue};
use crate::manifest::{bucket_of, BucketTuning, CandidateResult, TuningManifest};
use crate::runtime::ForgeRuntime;
use crate::schedule::Schedule;
use crate::shown::shown;
use crate::timing::{Timer, Timing, TimingOptions};
use std::path::PathBuf;

/// The default limit on the timed problem's binding bytes: 64 MiB.
pub const DEFAULT_MAX_PROBLEM_BYTES: u64 = 64 << 20;

/// The certification-case index the timed problem's vectors are drawn with: far from any
/// real case, so the timed data differs from every case's.
const TUNING_CASE: usize = 0x7075_6e65;

/// How [`tune`] works.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOptions {
    /// Certification options: the seed and per-binding distributions (also used for the
    /// timed problem's data).
    pub cert: CertOptions,
    /// The scalar arguments of the problem to time; `None` picks
    /// [`representative_problem`].
    pub problem: Option<Vec<ScalarValue>>,
    /// The largest problem [`representative_problem`] may pick, in binding bytes.
    pub max_problem_bytes: u64,
    /// How each candidate is timed in each round.
    pub timing: TimingOptions,
    /// Interleaved timing rounds; each candidate's median is over all its rounds' passes.
    pub rounds: u32,
    /// Write the manifest to the runtime's cache (when it has one).
    pub store: bool,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            cert: CertOptions::new(DEFAULT_SEED),
            problem: None,
            max_problem_bytes: DEFAULT_MAX_PROBLEM_BYTES,
            timing: TimingOptions::default(),
            rounds: 3,
            store: true,
        }
    }
}

/// What [`tune`] did for one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneReport {
    /// The kernel's name.
    pub kernel: String,
    /// The manifest after this tuning: this bucket and any others that were cached.
    pub manifest: TuningManifest,
    /// This tuning's bucket.
    pub bucket: BucketTuning,
    /// The declared schedule.
    pub default_schedule: Schedule,
    /// Where the manifest was written; `None` without a cache, or when writing failed.
    pub stored: Option<PathBuf>,
    /// Why the manifest could not be written, if it could not.
    pub store_error: Option<String>,
}

impl TuneReport {
    /// The winning schedule, if any candidate qualified.
    pub fn winner(&self) -> Option<Schedule> {
        self.bucket.winner
    }

    /// The winner's median time per dispatch.
    pub fn winner_ns(&self) -> Option<f64> {
        self.bucket
            .winner_result()
            .and_then(CandidateResult::median_ns)
    }

    /// The declared schedule's median time per dispatch, where it was timed.
    pub fn default_ns(&self) -> Option<f64> {
        self.bucket
            .candidate(&self.default_schedule)
            .and_then(CandidateResult::median_ns)
    }

    /// How many times faster the winner is than the declared schedule.
    pub fn speedup(&self) -> Option<f64> {
        Some(self.default_ns()? / self.winner_ns()?)
    }
}

/// What [`tune`] reports while it works, for progress bars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TuneEvent<'a> {
    /// About to take step `step` of at most `steps` ([`steps`]) for this kernel.
    Step {
        /// The kernel's name.
        kernel: &'a str,
        /// The candidate.
        schedule: &'a Schedule,
        /// `"certifying"`, or `"timing"` with the round.
        what: &'a str,
        /// The step, from 0.
        step: usize,
        /// The most steps this kernel takes.
        steps: usize,
    },
}

/// The most steps [`tune_with_progress`] reports for `kernel`: one certification per
/// candidate and one timing per candidate and round.
pub fn steps(kernel: &dyn Kernel, opts: &TuneOptions) -> usize {
    candidates(kernel).len() * (1 + opts.rounds.max(1) as usize)
}

/// The candidates [`tune`] considers, in order: the tuning space without duplicates, with
/// the declared schedule first when the space lacks it.
pub fn candidates(kernel: &dyn Kernel) -> Vec<Schedule> {
    let default = kernel.default_schedule();
    let mut out: Vec<Schedule> = Vec::new();
    let space = kernel.tune_space().candidates();
    if !space.contains(&default) {
        out.push(default);
    }
    for s in space {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// The bytes of every binding of the problem `scalars`, or `None` when the problem is
/// invalid or empty.
fn problem_bytes(kernel: &dyn Kernel, scalars: &[ScalarValue]) -> Option<(u64, u64)> {
    let lens = kernel.binding_lens(scalars).ok()?;
    let threads = kernel.threads(scalars).ok()?;
    if threads == 0 || lens.contains(&0) {
        return None;
    }
    let bytes = kernel
        .layout()
        .iter()
        .zip(&lens)
        .map(|(b, l)| l.saturating_mul(b.elem.size() as u64))
        .fold(0u64, u64::saturating_add);
    Some((bytes, threads))
}

/// The problem [`tune`] times by default: the certification case whose bindings take the
/// most bytes (then the most threads) within `max_bytes`. `None` when no case qualifies.
pub fn representative_problem(kernel: &dyn Kernel, max_bytes: u64) -> Option<Vec<ScalarValue>> {
    kernel
        .cert_cases()
        .into_iter()
        .filter_map(|case| problem_bytes(kernel, &case).map(|size| (size, case)))
        .filter(|((bytes, _), _)| *bytes <= max_bytes)
        .max_by_key(|(size, _)| *size)
        .map(|(_, case)| case)
}

/// Parses `name=value,...` into a kernel's scalar arguments, in declaration order. Every
/// scalar must be given once; values are parsed as the parameter's type.
///
/// ```
/// # use forge_core::kernel::*;
/// # use forge_core::*;
/// # struct K;
/// # impl Kernel for K {
/// #     fn name(&self) -> &'static str { "k" }
/// #     fn wgsl(&self, _: &Schedule) -> String { String::new() }
/// #     fn layout(&self) -> &'static [Binding] { &[] }
/// #     fn scalars(&self) -> &'static [ScalarParam] {
/// #         &[ScalarParam { name: "m", ty: ScalarType::U32 }, ScalarParam { name: "a", ty: ScalarType::F32 }]
/// #     }
/// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
/// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
/// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
/// #     fn binding_lens_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
/// #     fn grid_threads_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(1u64)) }
/// #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
/// # }
/// use forge_core::tune::parse_problem;
/// assert_eq!(parse_problem(&K, "a=0.5, m=4096").unwrap(), vec![ScalarValue::U32(4096), ScalarValue::F32(0.5)]);
/// assert!(parse_problem(&K, "m=4096").is_err());
/// assert!(parse_problem(&K, "m=-1,a=1").is_err());
/// ```
pub fn parse_problem(kernel: &dyn Kernel, text: &str) -> Result<Vec<ScalarValue>> {
    let bad = |message: String| ForgeError::InvalidArgument {
        kernel: kernel.name(),
        message,
    };
    let mut given: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("`{}` is not `name=value`", shown(part))))?;
        given.push((name.trim().to_string(), value.trim().to_string()));
    }
    let params = kernel.scalars();
    if let Some((name, _)) = given
        .iter()
        .find(|(n, _)| !params.iter().any(|p| p.name == n))
    {
        return Err(bad(format!(
            "the kernel has no scalar parameter `{}`; its parameters are: {}",
            shown(name),
            params.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )));
    }
    params
        .iter()
        .map(|p| {
            let values: Vec<&String> = given
                .iter()
                .filter(|(n, _)| n == p.name)
                .map(|(_, v)| v)
                .collect();
            let [value] = values.as_slice() else {
                return Err(bad(format!(
                    "give `{}` exactly once, as `{}=VALUE`",
                    p.name, p.name
                )));
            };
            let parsed = match p.ty {
                ScalarType::U32 => value
                    .parse()
                    .map(ScalarValue::U32)
                    .map_err(|e| e.to_string()),
                ScalarType::I32 => value
                    .parse()
                    .map(ScalarValue::I32)
                    .map_err(|e| e.to_string()),
                ScalarType::F32 => value
                    .parse()
                    .map(ScalarValue::F32)
                    .map_err(|e| e.to_string()),
                other => Err(format!("scalar type `{}` cannot be given", other.wgsl())),
            };
            parsed.map_err(|e| bad(format!("`{}={}`: {e}", p.name, shown(value))))
        })
        .collect()
}

/// `name=value, ...` for a problem.
pub fn describe_problem(kernel: &dyn Kernel, scalars: &[ScalarValue]) -> String {
    crate::kernel::describe_scalars(kernel, scalars)
}

/// The seeded test vectors for a problem: every non-`#[out]` binding drawn as certification
/// draws it.
pub fn problem_args(
    kernel: &dyn Kernel,
    scalars: &[ScalarValue],
    cert: &CertOptions,
) -> Result<DynArgs> {
    problem_args_at(kernel, &kernel.default_schedule(), scalars, cert)
}

/// [`problem_args`] sized at `schedule`, for a kernel whose LENs name the schedule's
/// constants (`&[f32; rows * WG]`).
pub fn problem_args_at(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    scalars: &[ScalarValue],
    cert: &CertOptions,
) -> Result<DynArgs> {
    let lens = kernel.binding_lens_at(schedule, scalars)?;
    let mut buffers: Vec<_> = kernel
        .layout()
        .iter()
        .zip(&lens)
        .map(|(b, &len)| match b.access {
            Access::Out => None,
            _ => {
                let mut rng = case_rng(cert.seed, kernel.name(), TUNING_CASE, b.name);
                Some(generate(
                    &mut rng,
                    b.elem,
                    len as usize,
                    cert.distribution(kernel.name(), b.name),
                ))
            }
        })
        .collect();
    // An indirect kernel runs its whole bound, the most work a launch of it does.
    if kernel.declarations().indirect.is_some() {
        let bound = kernel.grid_threads_at(schedule, scalars)?.indirect_bound();
        crate::certify::put_indirect_count(kernel, cert, &mut buffers, bound);
    }
    Ok(DynArgs {
        scalars: scalars.to_vec(),
        buffers,
    })
}

/// Checks, before a test vector is drawn, that every binding of the problem `scalars` fits
/// the adapter's per-binding limit and that all of them fit the runtime's capacity: the
/// host data the tuner draws is as large as the bindings, so a problem too large to run is
/// an error before it allocates ([`ForgeError::BindingTooLarge`],
/// [`ForgeError::CapacityExceeded`]).
pub fn check_problem_fits(
    rt: &ForgeRuntime,
    kernel: &dyn Kernel,
    scalars: &[ScalarValue],
) -> Result<()> {
    let lens = kernel.binding_lens(scalars)?;
    let mut total = 0u64;
    for (b, &len) in kernel.layout().iter().zip(&lens) {
        let bytes = len.saturating_mul(b.elem.size() as u64);
        total = total.saturating_add(crate::plan::binding_size(
            kernel.name(),
            b.name,
            bytes,
            rt.limits(),
        )?);
    }
    if total > rt.capacity() {
        return Err(ForgeError::CapacityExceeded {
            what: format!(
                "kernel `{}`: the problem {}",
                kernel.name(),
                describe_problem(kernel, scalars)
            ),
            requested: total,
            capacity: rt.capacity(),
            in_use: 0,
        });
    }
    Ok(())
}

/// Tunes `kernel` on `rt`: see the [module docs](self).
pub fn tune(rt: &mut ForgeRuntime, kernel: &dyn Kernel, opts: &TuneOptions) -> Result<TuneReport> {
    tune_with_progress(rt, kernel, opts, &mut |_| {})
}

/// [`tune`], calling `progress` before each candidate.
///
/// Errors: no problem to time ([`ForgeError::InvalidArgument`]), a problem whose sizes
/// cannot be evaluated, and a lost device. A candidate that fails certification or timing
/// is not an error: it is recorded in the report.
pub fn tune_with_progress(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    opts: &TuneOptions,
    progress: &mut dyn FnMut(TuneEvent<'_>),
) -> Result<TuneReport> {
    let name = kernel.name();
    let _span = tracing::info_span!("tune", kernel = name).entered();
    let scalars = match &opts.problem {
        Some(p) => p.clone(),
        None => representative_problem(kernel, opts.max_problem_bytes).ok_or_else(|| ForgeError::InvalidArgument {
            kernel: name,
            message: format!(
                "no certification case fits {} bytes, so there is no problem to time; give one explicitly",
                opts.max_problem_bytes
            ),
        })?,
    };
    let threads = kernel.threads(&scalars)?;
    check_problem_fits(rt, kernel, &scalars)?;
    let args = problem_args(kernel, &scalars, &opts.cert)?;
    let declared_lens = kernel.binding_lens(&scalars).ok();
    let problem = describe_problem(kernel, &scalars);
    let all = candidates(kernel);
    let steps = steps(kernel, opts);
    let mut step = 0;
    let mut results = Vec::with_capacity(all.len());
    for schedule in &all {
        progress(TuneEvent::Step {
            kernel: name,
            schedule,
            what: "certifying",
            step,
            steps,
        });
        step += 1;
        results.push(certify_candidate(rt, kernel, schedule, &opts.cert)?);
    }

    // Interleaved rounds: every certified candidate once per round.
    let rounds = opts.rounds.max(1);
    let mut passes: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    let mut rejected = vec![0u32; all.len()];
    let mut timing_opts = opts.timing.clone();
    timing_opts.read_back = false;
    let mut repeats: Vec<Option<u32>> = vec![None; all.len()];
    for round in 0..rounds {
        let what = format!("timing, round {} of {rounds}", round + 1);
        for (i, result) in results.iter_mut().enumerate() {
            if result.verdict != Some(Verdict::Pass) || result.note.is_some() {
                continue;
            }
            progress(TuneEvent::Step {
                kernel: name,
                schedule: &result.schedule,
                what: &what,
                step,
                steps,
            });
            step += 1;
            // Later rounds reuse the first round's repeat count: the same work per pass.
            timing_opts.repeats = repeats[i].or(opts.timing.repeats);
            let mut event = rt.trace_event("tune", name);
            event.arg("schedule", || result.schedule.to_string());
            event.arg("round", || round + 1);
            event.arg("problem", || problem.as_str());
            // A candidate whose LENs name the schedule's constants takes inputs of its own
            // lengths, drawn as the declared schedule's are.
            let own = match kernel.binding_lens_at(&result.schedule, &scalars) {
                Ok(l) if Some(&l) != declared_lens.as_ref() => Some(problem_args_at(
                    kernel,
                    &result.schedule,
                    &scalars,
                    &opts.cert,
                )?),
                _ => None,
            };
            let args = own.as_ref().unwrap_or(&args);
            match rt.time_kernel_with(kernel, &result.schedule, args, &timing_opts) {
                Ok(run) => {
                    event.arg("median_ns", || run.timing.median_ns);
                    repeats[i] = Some(run.timing.repeats);
                    rejected[i] += run.timing.rejected;
                    passes[i].extend(run.timing.samples);
                }
                Err(e @ ForgeError::DeviceLost(_)) => return Err(e),
                Err(e) => result.note = Some(format!("timing failed: {e}")),
            }
        }
    }
    for (i, result) in results.iter_mut().enumerate() {
        if result.note.is_some() {
            continue;
        }
        if let (Some(r), false) = (repeats[i], passes[i].is_empty()) {
            // The samples are already per dispatch: rebuild with one repeat, then record R.
            if let Some(mut t) = Timing::from_pass_ns(&passes[i], 1, timer_of(rt, &opts.timing)) {
                t.repeats = r;
                t.rejected = rejected[i];
                result.timing = Some(t);
            }
        }
        tracing::info!(
            kernel = name,
            schedule = %result.schedule,
            verdict = ?result.verdict,
            median_ns = ?result.median_ns(),
            note = ?result.note,
            "tuning candidate"
        );
    }
    let mut bucket = BucketTuning {
        bucket: bucket_of(threads),
        threads,
        scalars,
        problem,
        candidates: results,
        winner: None,
        tuned_at: web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    bucket.winner = bucket.fastest();

    // Merge with what the cache already holds for other sizes, if it can be trusted; when
    // storing, under the cache's lock, so that a tuner racing on another size keeps its
    // bucket too.
    let key = rt.manifest_key(kernel);
    let cache = rt.manifest_cache();
    let merged = || {
        let mut manifest = cache
            .as_ref()
            .and_then(|c| c.load(&key, kernel, rt.limits()))
            .unwrap_or_else(|| key.manifest(&rt.adapter_info().name, kernel.default_schedule()));
        manifest.insert(bucket.clone());
        manifest
    };
    let (manifest, written) = match (&cache, opts.store) {
        (Some(c), true) => match c.with_lock(&key, || {
            let manifest = merged();
            let written = c.store(&manifest);
            (manifest, written)
        }) {
            Ok((manifest, written)) => (manifest, Some(written)),
            Err(e) => (merged(), Some(Err(e))),
        },
        _ => (merged(), None),
    };
    let (mut stored, mut store_error) = (None, None);
    match written {
        Some(Ok(path)) => stored = Some(path),
        Some(Err(e)) => {
            tracing::warn!(kernel = name, error = %e, "cannot write the tuning manifest; continuing without caching it");
            store_error = Some(e.to_string());
        }
        None => {}
    }
    rt.remember_tuning(kernel, manifest.clone());
    Ok(TuneReport {
        kernel: name.to_string(),
        manifest,
        bucket,
        default_schedule: kernel.default_schedule(),
        stored,
        store_error,
    })
}

/// The clock [`ForgeRuntime::time_kernel_with`] uses with `opts` on `rt`.
fn timer_of(rt: &ForgeRuntime, opts: &TimingOptions) -> Timer {
    if opts.wall_clock || !rt.has_timestamps() {
        Timer::WallClock
    } else {
        Timer::Timestamp
    }
}

/// Certifies one candidate; one the adapter cannot run is recorded as skipped. Only a
/// lost device is an error.
fn certify_candidate(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    cert: &CertOptions,
) -> Result<CandidateResult> {
    let mut result = CandidateResult {
        schedule: *schedule,
        verdict: None,
        cases: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        timing: None,
        note: None,
    };
    if let Err(e) = rt.check_schedule(kernel, schedule) {
        result.note = Some(format!("skipped: {e}"));
        return Ok(result);
    }
    let report = certify(rt, kernel, schedule, cert)?;
    result.verdict = Some(report.verdict);
    result.cases = report.cases;
    result.max_abs_err = report.max_abs_err;
    result.max_rel_err = report.max_rel_err;
    if report.verdict != Verdict::Pass {
        result.note = Some(
            report
                .failures
                .first()
                .cloned()
                .unwrap_or_else(|| "certification failed".to_string()),
        );
    }
    Ok(result)
}
