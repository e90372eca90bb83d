//! The certifier on a real adapter: every built-in kernel passes, and kernels that are wrong
//! in each of the three ways certification checks fail with a message that names the kernel
//! and the element.

use wgsl_forge::certify::{
    certify, certify_async, certify_default, CertOptions, Distribution, Verdict,
};
use wgsl_forge::prelude::*;

fn runtime() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never pass silently.
    ForgeRuntime::new(256 << 20, None).expect("a GPU adapter (lavapipe in CI)")
}

/// `y = 2x + 1`, with a reference that computes `2x + 2`: the algorithm and the reference
/// disagree, so the oracle-vs-reference check must fail while GPU-vs-oracle passes.
#[forge_kernel(threads = n, reference = off_by_one_reference, case(n = 10), case(n = 100))]
pub fn off_by_one(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = 2.0 * x[i] + 1.0;
    }
}

fn off_by_one_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    Ok(x.iter().map(|v| 2.0 * v + 2.0).collect())
}

/// Leaves the last element unwritten. The oracle and the zeroed GPU output agree (both 0),
/// so only the poisoned run can catch it.
#[forge_kernel(threads = n, reference = skips_last_reference, case(n = 10), case(n = 257))]
pub fn skips_last(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n - 1 {
        y[i] = x[i] * x[i];
    }
}

fn skips_last_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    let mut y: Vec<f32> = x.iter().map(|v| v * v).collect();
    // The reference mirrors the bug: only the poison check is left to find it.
    if let Some(last) = y.last_mut() {
        *last = 0.0;
    }
    Ok(y)
}

/// Indexes `x` with data: with the default `[0, 1000)` integers it reads out of bounds,
/// which the oracle reports; with a distribution override it passes.
#[forge_kernel(threads = n, case(n = 64))]
pub fn gather(x: &[f32; 16], idx: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[idx[i]];
    }
}

/// Writes the poison pattern itself: an element whose correct value is the pattern was
/// written, and must pass.
#[forge_kernel(threads = n, case(n = 100))]
pub fn writes_poison(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = 0x7FF0_BAAD;
    }
}

/// Complex multiplication on `Vec2` bindings: vector elements go through the certifier's
/// dyn path (generation, oracle, poison, comparison) like scalars.
#[forge_kernel(threads = n, reference = cmul_reference, case(n = 1), case(n = 300))]
pub fn cmul(a: &[Vec2; n], b: &[Vec2; n], #[out] c: &mut [Vec2; n], n: u32) {
    let i = global_index();
    if i < n {
        let x = a[i];
        let y = b[i];
        c[i] = Vec2::new(x.x * y.x - x.y * y.y, x.x * y.y + x.y * y.x);
    }
}

fn cmul_reference(a: &[[f32; 2]], b: &[[f32; 2]], _n: u32) -> Result<Vec<[f32; 2]>, ForgeError> {
    Ok(a.iter()
        .zip(b)
        .map(|(x, y)| {
            let (x0, x1, y0, y1) = (x[0] as f64, x[1] as f64, y[0] as f64, y[1] as f64);
            [(x0 * y0 - x1 * y1) as f32, (x0 * y1 + x1 * y0) as f32]
        })
        .collect())
}

/// The built-ins whose features the adapter has. Each of the others (`gemm_f16` on an
/// adapter without cooperative matrices, such as lavapipe) must be refused by name.
fn runnable(rt: &mut ForgeRuntime) -> Vec<&'static dyn Kernel> {
    let (ok, refused): (Vec<_>, Vec<_>) = wgsl_forge::kernels::registry::builtin()
        .into_iter()
        .partition(|k| k.features().iter().all(|f| rt.supports(*f)));
    for k in refused {
        let e = certify_default(rt, k, &CertOptions::default()).unwrap_err();
        assert!(
            matches!(e, ForgeError::MissingFeature { .. }),
            "{}: {e}",
            k.name()
        );
    }
    ok
}

#[test]
fn every_builtin_kernel_passes() {
    let mut rt = runtime();
    let opts = CertOptions::new(0x5EED);
    for kernel in runnable(&mut rt) {
        let report = certify_default(&mut rt, kernel, &opts).unwrap();
        assert!(
            report.passed(),
            "{} failed:\n{}",
            kernel.name(),
            report.failures.join("\n")
        );
        assert!(report.cases > 0, "{}: no case ran", kernel.name());
        assert!(report.max_abs_err.is_finite());
    }
}

/// `certify_async`, awaited, is the certification `certify` runs: the same report, and
/// it fails what `certify` fails.
#[test]
fn certify_async_reports_what_certify_reports() {
    let mut rt = runtime();
    let opts = CertOptions::new(0xA5);
    let kernels: Vec<&dyn Kernel> = vec![
        &wgsl_forge::kernels::gemv::gemv::Kernel,
        &off_by_one::Kernel,
        &skips_last::Kernel,
    ];
    for kernel in kernels {
        let schedule = rt.schedule_for(kernel);
        let blocking = certify(&mut rt, kernel, &schedule, &opts).unwrap();
        let awaited = pollster::block_on(certify_async(&mut rt, kernel, &schedule, &opts)).unwrap();
        assert_eq!(blocking, awaited, "{}", kernel.name());
    }
    let schedule = rt.schedule_for(&off_by_one::Kernel);
    let failed = pollster::block_on(certify_async(
        &mut rt,
        &off_by_one::Kernel,
        &schedule,
        &opts,
    ))
    .unwrap();
    assert_eq!(failed.verdict, Verdict::Fail);
}

#[test]
fn builtins_pass_for_other_seeds_and_every_schedule() {
    let mut rt = runtime();
    for seed in [1, 2] {
        let opts = CertOptions::new(seed);
        for kernel in runnable(&mut rt) {
            for schedule in kernel.tune_space().candidates() {
                let report = certify(&mut rt, kernel, &schedule, &opts).unwrap();
                assert!(
                    report.passed(),
                    "{} at {schedule}:\n{}",
                    kernel.name(),
                    report.failures.join("\n")
                );
            }
        }
    }
}

#[test]
fn a_wrong_reference_fails_naming_the_kernel_and_element() {
    let mut rt = runtime();
    let report = certify_default(&mut rt, &off_by_one::Kernel, &CertOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Fail);
    assert_eq!(report.cases, 2);
    let all = report.failures.join("\n");
    assert!(
        report
            .failures
            .iter()
            .all(|f| f.contains("oracle vs reference")),
        "{all}"
    );
    assert!(all.contains("kernel `off_by_one`"), "{all}");
    assert!(all.contains("elements of `y` differ"), "{all}");
    assert!(all.contains("worst `y["), "{all}");
    // Every element is off by exactly one.
    assert!(
        (report.max_abs_err - 1.0).abs() < 1e-6,
        "{}",
        report.max_abs_err
    );
}

#[test]
fn an_unwritten_element_fails_naming_the_kernel_and_element() {
    let mut rt = runtime();
    let report = certify_default(&mut rt, &skips_last::Kernel, &CertOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Fail);
    let all = report.failures.join("\n");
    assert_eq!(report.failures.len(), 2, "one per case:\n{all}");
    assert!(all.contains("kernel `skips_last` case 0 (n=10)"), "{all}");
    assert!(
        all.contains("output element `y[9]` was never written"),
        "{all}"
    );
    assert!(
        all.contains("output element `y[256]` was never written"),
        "{all}"
    );
    // Without the poison check the bug is invisible: that is why the check exists.
    let blind = CertOptions {
        poison: false,
        ..CertOptions::default()
    };
    assert!(certify_default(&mut rt, &skips_last::Kernel, &blind)
        .unwrap()
        .passed());
}

#[test]
fn distributions_are_overridable_per_binding() {
    let mut rt = runtime();
    let report = certify_default(&mut rt, &gather::Kernel, &CertOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Fail);
    let all = report.failures.join("\n");
    assert!(
        all.contains("the CPU oracle failed") && all.contains("out of bounds for length 16"),
        "{all}"
    );

    let opts = CertOptions::default().with_distribution(
        "gather",
        "idx",
        Distribution::Uniform { lo: 0.0, hi: 16.0 },
    );
    let report = certify_default(&mut rt, &gather::Kernel, &opts).unwrap();
    assert!(report.passed(), "{}", report.failures.join("\n"));
    assert_eq!(report.max_abs_err, 0.0, "a gather is exact");
}

#[test]
fn oversized_cases_are_skipped_and_reported() {
    let mut rt = runtime();
    let opts = CertOptions {
        max_case_bytes: 1000,
        ..CertOptions::default()
    };
    // off_by_one: case n=10 takes 80 bytes, n=100 takes 800; all run.
    let report = certify_default(&mut rt, &off_by_one::Kernel, &opts).unwrap();
    assert_eq!((report.cases, report.skipped.len()), (2, 0));
    let opts = CertOptions {
        max_case_bytes: 100,
        ..CertOptions::default()
    };
    let report = certify_default(&mut rt, &off_by_one::Kernel, &opts).unwrap();
    assert_eq!((report.cases, report.skipped.len()), (1, 1));
    assert!(
        report.skipped[0].contains("over the certifier's limit"),
        "{:?}",
        report.skipped
    );
    // No case at all is a failure, never a silent pass.
    let opts = CertOptions {
        max_case_bytes: 10,
        ..CertOptions::default()
    };
    let report = certify_default(&mut rt, &gemv_like(), &opts).unwrap();
    assert_eq!(report.verdict, Verdict::Fail);
    assert!(
        report.failures[0].contains("none of its"),
        "{:?}",
        report.failures
    );
}

fn gemv_like() -> wgsl_forge::kernels::gemv::gemv::Kernel {
    wgsl_forge::kernels::gemv::gemv::Kernel
}

#[test]
fn an_output_whose_value_is_the_poison_pattern_passes() {
    assert_eq!(wgsl_forge::certify::POISON_WORD, 0x7FF0_BAAD);
    let mut rt = runtime();
    let report = certify_default(&mut rt, &writes_poison::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{}", report.failures.join("\n"));
}

#[test]
fn vector_bindings_are_certified() {
    let mut rt = runtime();
    let report = certify_default(&mut rt, &cmul::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{}", report.failures.join("\n"));
    assert_eq!(report.cases, 2);
    assert!(
        report.max_abs_err > 0.0 && report.max_abs_err < 1e-5,
        "{}",
        report.max_abs_err
    );
}
