//! `forge run KERNEL --problem ... [--schedule ...] [--repeat N]`: one kernel at one
//! problem, on the seeded inputs the tuner draws, launched `N` times with nothing else in
//! the process's GPU work but the upload and the readback. For profilers and checkers
//! (`ncu`, `compute-sanitizer`), which want a program that runs exactly the launches asked
//! for.

use forge_core::tune::problem_args;
use std::time::Instant;
use wgsl_forge::certify::CertOptions;
use wgsl_forge::{ForgeError, ForgeRuntime, Kernel, Schedule};

/// What one `forge run` did: the launches and their wall time (upload, launches and
/// readback together, blocking).
pub struct Ran {
    /// Launches made.
    pub launches: u32,
    /// Wall time of all of them, in milliseconds.
    pub wall_ms: f64,
}

/// Runs `kernel` at `schedule` on the problem `scalars`, `repeat` times (at least once).
pub fn run(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    scalars: &[wgsl_forge::ScalarValue],
    repeat: u32,
    seed: u64,
) -> Result<Ran, ForgeError> {
    let args = problem_args(kernel, scalars, &CertOptions::new(seed))?;
    let launches = repeat.max(1);
    let start = Instant::now();
    for _ in 0..launches {
        rt.run_dyn(kernel, schedule, &args)?;
    }
    Ok(Ran {
        launches,
        wall_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}
