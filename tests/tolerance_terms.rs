//! Error bounds that scale with the work (`tolerance(.., terms = k)`): each output may
//! differ from the other side by `2·terms·u·Σ|terms|`, the forward error bound of a sum
//! reordered or fused, beside the fixed tolerance, which stays as a floor. A correct kernel
//! with a long reduction passes where a tight fixed tolerance rejects it, and a wrong one
//! still fails.

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// Row dot products summed in 8 interleaved partial sums, as a split-K kernel does.
#[forge_kernel(threads = m, reference = dot_reference, tolerance(abs = 1e-7, rel = 1e-7, terms = k),
    case(m = 5, k = 4096), case(m = 1, k = 1))]
pub fn split_dot(a: &[f32; m * k], b: &[f32; k], #[out] y: &mut [f32; m], m: u32, k: u32) {
    let r = global_index();
    if r < m {
        let mut part = [0.0f32; 8];
        for j in 0..k {
            part[j % 8] += a[r * k + j] * b[j];
        }
        let mut s = 0.0f32;
        for p in 0..8u32 {
            s += part[p];
        }
        y[r] = s;
    }
}

/// The same kernel under the fixed tolerance alone.
#[forge_kernel(threads = m, reference = dot_reference, tolerance(abs = 1e-7, rel = 1e-7),
    case(m = 5, k = 4096))]
pub fn split_dot_fixed(a: &[f32; m * k], b: &[f32; k], #[out] y: &mut [f32; m], m: u32, k: u32) {
    let r = global_index();
    if r < m {
        let mut part = [0.0f32; 8];
        for j in 0..k {
            part[j % 8] += a[r * k + j] * b[j];
        }
        let mut s = 0.0f32;
        for p in 0..8u32 {
            s += part[p];
        }
        y[r] = s;
    }
}

/// A wrong kernel (it drops every 64th term) under the scaled tolerance.
#[forge_kernel(threads = m, reference = dot_reference, tolerance(abs = 1e-7, rel = 1e-7, terms = k),
    case(m = 5, k = 4096))]
pub fn split_dot_wrong(a: &[f32; m * k], b: &[f32; k], #[out] y: &mut [f32; m], m: u32, k: u32) {
    let r = global_index();
    if r < m {
        let mut s = 0.0f32;
        for j in 0..k {
            if j % 64 != 63 {
                s += a[r * k + j] * b[j];
            }
        }
        y[r] = s;
    }
}

/// The dot products, summed in order.
pub fn dot_reference(a: &[f32], b: &[f32], m: u32, k: u32) -> Result<Vec<f32>, ForgeError> {
    let k = k as usize;
    Ok((0..m as usize)
        .map(|r| (0..k).fold(0.0f32, |s, j| s + a[r * k + j] * b[j]))
        .collect())
}

#[test]
fn a_tolerance_that_scales_with_the_terms() {
    let mut rt = ForgeRuntime::new(1 << 28, None).expect("a GPU adapter (lavapipe in CI)");
    let opts = CertOptions::default();
    let k = split_dot::Kernel;
    let r = certify(&mut rt, &k, &k.default_schedule(), &opts).unwrap();
    assert!(r.passed(), "{:?}", r.failures);
    // Under the fixed tolerance alone, the reordered sum is rejected: its error is real
    // rounding, of the order of √k·u·Σ|terms|.
    let k = split_dot_fixed::Kernel;
    let r = certify(&mut rt, &k, &k.default_schedule(), &opts).unwrap();
    assert!(!r.passed(), "the reordered sum is beyond 1e-7");
    assert!(
        r.failures.iter().any(|f| f.contains("oracle vs reference")),
        "{:?}",
        r.failures
    );
    // A wrong kernel does not hide under the scaled tolerance.
    let k = split_dot_wrong::Kernel;
    let r = certify(&mut rt, &k, &k.default_schedule(), &opts).unwrap();
    assert!(!r.passed(), "a dropped term is far beyond 2·k·u·Σ|terms|");
}
