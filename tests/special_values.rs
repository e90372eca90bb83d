//! Special float values in certification, on the real adapter (lavapipe in CI).
//!
//! A kernel that declares it handles NaN, infinities and subnormals
//! (`#[forge_kernel(special_values = true)]`, `Kernel::special_values`) is certified on inputs that mix them in, and a NaN matches
//! only a NaN. The certifier passes it only where its GPU results match the oracle on those
//! inputs: a kernel whose result depends on what WGSL leaves open (here `NaN as i32`,
//! which WGSL calls indeterminate: the oracle gives 0, lavapipe `i32::MIN`) fails, naming
//! the element; the same kernel without the claim is certified on finite inputs and passes.

use wgsl_forge::certify::{certify, CertOptions, Distribution};
use wgsl_forge::prelude::*;

/// `y = 2x`: IEEE arithmetic carries NaN and infinities through, and a doubled subnormal
/// stays within the float tolerance of zero where the GPU flushes it.
#[forge_kernel(threads = n, special_values = true, case(n = 1), case(n = 300), case(n = 5000))]
pub fn doubled(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * 2.0f32;
    }
}

/// `y = i32(1000 x)`: clamped to `i32`'s range as WGSL defines, except for NaN.
#[forge_kernel(threads = n, case(n = 300), case(n = 5000))]
pub fn truncated(x: &[f32; n], #[out] y: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = (x[i] * 1000.0f32) as i32;
    }
}

/// The same, declared to handle special values, which it does not.
#[forge_kernel(threads = n, special_values = true, case(n = 300), case(n = 5000))]
pub fn truncated_special(x: &[f32; n], #[out] y: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = (x[i] * 1000.0f32) as i32;
    }
}

fn runtime() -> ForgeRuntime {
    ForgeRuntime::new(64 << 20, None).unwrap_or_else(|e| {
        panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}")
    })
}

#[test]
fn a_kernel_that_carries_special_values_through_passes() {
    let mut rt = runtime();
    let k = doubled::Kernel;
    assert!(k.special_values());
    let report = certify(&mut rt, &k, &k.default_schedule(), &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    assert!(report.special_values);
    assert_eq!(report.cases, 3);
}

#[test]
fn special_inputs_reach_the_kernel_and_nan_must_match_nan() {
    // The oracle on the certifier's own vectors: NaN and infinities come out where they
    // went in, so the comparison really met them.
    let x: Vec<f32> = {
        let mut rng = wgsl_forge::certify::case_rng(1, "doubled", 0, "x");
        let b = wgsl_forge::certify::generate(
            &mut rng,
            wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32),
            5000,
            Distribution::Special,
        );
        bytemuck::cast_slice(b.bytes()).to_vec()
    };
    let y = doubled::cpu(&x, 5000).unwrap();
    assert!(y.iter().any(|v| v.is_nan()));
    assert!(y.contains(&f32::INFINITY) && y.contains(&f32::NEG_INFINITY));
    let mut rt = runtime();
    let gpu = doubled::run(&mut rt, &x, 5000).unwrap();
    for (i, (g, c)) in gpu.iter().zip(&y).enumerate() {
        assert_eq!(g.is_nan(), c.is_nan(), "y[{i}]: GPU {g}, oracle {c}");
        if c.is_infinite() {
            assert_eq!(g, c, "y[{i}]");
        }
    }
}

#[test]
fn a_kernel_whose_result_wgsl_leaves_open_fails_only_when_it_claims_special_values() {
    let mut rt = runtime();
    let schedule = truncated::Kernel.default_schedule();
    // Finite inputs: WGSL defines every conversion, GPU and oracle agree.
    let plain = certify(
        &mut rt,
        &truncated::Kernel,
        &schedule,
        &CertOptions::default(),
    )
    .unwrap();
    assert!(plain.passed(), "{:?}", plain.failures);
    assert!(!plain.special_values);

    // With the claim the inputs hold NaN, whose conversion WGSL leaves indeterminate: the
    // GPU and the oracle disagree, and the certifier says where.
    assert!(!truncated::Kernel.special_values() && truncated_special::Kernel.special_values());
    let report = certify(
        &mut rt,
        &truncated_special::Kernel,
        &schedule,
        &CertOptions::default(),
    )
    .unwrap();
    assert!(!report.passed(), "a NaN conversion must not pass");
    assert!(
        report
            .failures
            .iter()
            .any(|f| f.contains("GPU vs oracle") && f.contains("`y[")),
        "{:?}",
        report.failures
    );
}
