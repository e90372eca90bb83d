//! `forge first-call`: how long a fresh process waits before each kernel's first result.
//!
//! A first call compiles the kernel's pipeline (naga's translation, then the driver's
//! compiler) before it runs; every later call only runs. This command times, in the
//! process it starts, the first and then the second call of each kernel on its first
//! certification case (at the schedule the runtime would run it with), so the difference
//! is the cold-start cost; `--all-schedules` times every schedule of the tuning space the
//! adapter can hold, each a pipeline of its own. Run it twice with the same cache directory to see what the
//! persisted pipeline cache saves: the second process finds the driver's binaries on disk.
//! With `--warm-up`, [`ForgeRuntime::warm_up`] compiles every kernel first, on threads,
//! and that time is reported instead.

use forge_core::certify::CertOptions;
use forge_core::kernel::DynArgs;
use forge_core::tune::problem_args;
use forge_core::{ForgeError, ForgeRuntime, Kernel};
use serde::Serialize;
use std::time::Instant;

/// The seed of the inputs: any fixed one; the values do not change the timing.
const SEED: u64 = 0xc01d;

/// One kernel's first and second call, in milliseconds of wall time.
#[derive(Clone, Debug, Serialize)]
pub struct FirstCall {
    /// The kernel.
    pub kernel: String,
    /// The schedule it ran with.
    pub schedule: String,
    /// The first call: pipeline compile (unless warmed up), upload, run, readback.
    pub first_ms: f64,
    /// The second call, on the same inputs: upload, run, readback.
    pub second_ms: f64,
}

/// Which schedules of a kernel `forge first-call` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedules {
    /// The one the runtime would run it with (a tuned winner, else the declared one).
    Runtime,
    /// Every schedule of its tuning space that the adapter can hold, each a pipeline of
    /// its own, so each first call compiles: the cold start of every choice a tuner can
    /// make.
    All,
}

/// Runs every kernel of `kernels` twice on its first certification case, at the schedules
/// `which` names, and returns the timings, in order. Errors: a kernel without
/// certification cases, or any error of the calls.
pub fn measure(
    rt: &mut ForgeRuntime,
    kernels: &[&dyn Kernel],
    which: Schedules,
) -> Result<Vec<FirstCall>, ForgeError> {
    let mut rows = Vec::with_capacity(kernels.len());
    for &kernel in kernels {
        let args = first_case(kernel)?;
        let schedules = match which {
            Schedules::Runtime => vec![rt.schedule_for(kernel)],
            Schedules::All => forge_core::tune::candidates(kernel)
                .into_iter()
                .filter(|s| rt.check_schedule(kernel, s).is_ok())
                .collect(),
        };
        for schedule in schedules {
            rows.push(first_and_second(rt, kernel, &schedule, &args)?);
        }
    }
    Ok(rows)
}

/// One kernel's first and second call at one schedule.
fn first_and_second(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &forge_core::Schedule,
    args: &DynArgs,
) -> Result<FirstCall, ForgeError> {
    let t = Instant::now();
    rt.run_dyn(kernel, schedule, args)?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    rt.run_dyn(kernel, schedule, args)?;
    let second_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok(FirstCall {
        kernel: kernel.name().to_string(),
        schedule: schedule.to_string(),
        first_ms,
        second_ms,
    })
}

/// The arguments of a kernel's first certification case, with the seeded inputs the tuner
/// draws for a problem.
fn first_case(kernel: &dyn Kernel) -> Result<DynArgs, ForgeError> {
    let scalars =
        kernel
            .cert_cases()
            .into_iter()
            .next()
            .ok_or_else(|| ForgeError::InvalidArgument {
                kernel: kernel.name(),
                message: "the kernel declares no certification case to time a first call on".into(),
            })?;
    problem_args(kernel, &scalars, &CertOptions::new(SEED))
}

/// The table `forge first-call` prints.
pub fn table(rows: &[FirstCall]) -> String {
    let mut out = format!(
        "{:<24} {:<28} {:>10} {:>10}\n",
        "kernel", "schedule", "first ms", "second ms"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<24} {:<28} {:>10.2} {:>10.2}\n",
            r.kernel, r.schedule, r.first_ms, r.second_ms
        ));
    }
    let first: f64 = rows.iter().map(|r| r.first_ms).sum();
    let second: f64 = rows.iter().map(|r| r.second_ms).sum();
    out.push_str(&format!(
        "{:<24} {:<28} {:>10.2} {:>10.2}\n",
        "total", "", first, second
    ));
    out
}
