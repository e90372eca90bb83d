//! What the language tests share: the adapter, and a kernel's GPU and oracle results at a
//! size, past 65535 workgroups when the size asks for it.

#![allow(dead_code, unused_macros)]

use wgsl_forge::prelude::*;

/// Tuning options for tests: one round of short timings, nothing stored.
pub fn quick_tune() -> wgsl_forge::tune::TuneOptions {
    wgsl_forge::tune::TuneOptions {
        timing: wgsl_forge::timing::TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 3,
            target_pass_ns: 2.0e5,
            max_repeats: 64,
            ..Default::default()
        },
        rounds: 1,
        store: false,
        ..Default::default()
    }
}

pub fn rt() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never skip.
    ForgeRuntime::new(1 << 30, None).expect("a GPU adapter (lavapipe in CI) is required")
}

/// A schedule of one invocation a workgroup: `n` invocations are `n` workgroups, so
/// 70001 of them fold past the 65535-per-dimension limit.
pub fn one_per_group(declared: Schedule) -> Schedule {
    declared
        .with_settings("wg=1")
        .expect("a workgroup of one is a schedule")
}

/// `(GPU, oracle)` results of kernel `$k` on `$args`: with the runtime's schedule, or, when
/// `$n` is past 65535, with one invocation a workgroup, so that the launch folds.
macro_rules! gpu_and_cpu {
    ($rt:expr, $k:ident, $n:expr, ($($arg:expr),* $(,)?)) => {{
        if $n > 65535 {
            let s = common::one_per_group($k::DEFAULT_SCHEDULE);
            (
                $k::run_with($rt, &s, $($arg),*).unwrap(),
                $k::cpu_with(&s, $($arg),*).unwrap(),
            )
        } else {
            ($k::run($rt, $($arg),*).unwrap(), $k::cpu($($arg),*).unwrap())
        }
    }};
}
