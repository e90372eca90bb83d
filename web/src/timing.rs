//! The page's timings: every kernel that certified, timed at the schedule it certified at
//! by [`time_kernel_with_async`](ForgeRuntime::time_kernel_with_async), the timer
//! `forge bench` and the tuner use, with the browser's timestamp queries. An adapter
//! without them is not timed: the wall clock in a page measures the event loop as much as
//! the GPU.
//!
//! The problem is the kernel's largest certification case within [`PROBLEM_BYTES`], as the
//! tuner picks one, drawn from the page's seed. The options are short ([`options`]): the
//! browser's adapter is often a CPU, and the page shows the GPU's work, not a benchmark's
//! precision.

use crate::{Outcome, Row, SEED};
use wgsl_forge::certify::CertOptions;
use wgsl_forge::timing::TimingOptions;
use wgsl_forge::tune::{describe_problem, problem_args, representative_problem};
use wgsl_forge::{ForgeError, ForgeRuntime, Timing};

/// The largest problem the page times, in bytes of bindings.
pub const PROBLEM_BYTES: u64 = 16 << 20;

/// One timed kernel.
#[derive(Debug)]
pub struct Timed {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The schedule, as `forge certify` prints it.
    pub schedule: String,
    /// The problem, `name=value, ...`.
    pub problem: String,
    /// The measurement.
    pub timing: Timing,
}

impl Timed {
    /// The line the page prints.
    pub fn line(&self) -> String {
        format!(
            "{:<24} {:<36} {:>10.1} µs  (median of {}, {} per batch)  {}",
            self.kernel,
            self.schedule,
            self.timing.median_ns / 1e3,
            self.timing.samples.len(),
            self.timing.repeats,
            self.problem
        )
    }
}

/// The page's timing options: a 20 ms warm-up, five batches, each aimed at 1 ms.
pub fn options() -> TimingOptions {
    TimingOptions {
        warmup_ns: 2.0e7,
        passes: 5,
        target_pass_ns: 1.0e6,
        max_repeats: 64,
        ..TimingOptions::default()
    }
}

/// Times every row of `rows` that passed, logging a line for each, or returns `None`
/// when the adapter has no timestamp queries (having logged why). A timing that fails
/// is an error: after a certification passed, the same kernel must also run timed.
pub async fn time_passed(
    rt: &mut ForgeRuntime,
    rows: &[Row],
    log: &mut dyn FnMut(&str),
) -> Result<Option<Vec<Timed>>, ForgeError> {
    if !rt.has_timestamps() {
        log("timing: skipped, the adapter has no timestamp queries (`timestamp-query`)");
        return Ok(None);
    }
    log(&format!(
        "timing with timestamp queries, on each kernel's largest case within {} MiB:",
        PROBLEM_BYTES >> 20
    ));
    let cert = CertOptions::new(SEED);
    let opts = options();
    let mut timed = Vec::new();
    for row in rows {
        let Outcome::Certified(report) = &row.outcome else {
            continue;
        };
        if !report.passed() {
            continue;
        }
        let kernel = row.kernel;
        let Some(scalars) = representative_problem(kernel, PROBLEM_BYTES) else {
            log(&format!(
                "{:<24} {:<36} not timed: no certification case within {} MiB",
                kernel.name(),
                row.schedule,
                PROBLEM_BYTES >> 20
            ));
            continue;
        };
        let args = problem_args(kernel, &scalars, &cert)?;
        let run = rt
            .time_kernel_with_async(kernel, &row.schedule, &args, &opts)
            .await?;
        let t = Timed {
            kernel: kernel.name(),
            schedule: row.schedule.to_string(),
            problem: describe_problem(kernel, &scalars),
            timing: run.timing,
        };
        log(&t.line());
        timed.push(t);
    }
    Ok(Some(timed))
}
