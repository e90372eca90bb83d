//! Cooperative matrices: `CoopA<f16>`, `CoopB<f16>`, `CoopC<f32>`, their loads and stores
//! (row- and column-major, from bindings and workgroup memory) and `a.mul_add(b, c)`. The
//! oracle against an f64 reference on random data; the GPU against the oracle where the
//! adapter has `EXPERIMENTAL_COOPERATIVE_MATRIX`, and the runtime's `MissingFeature`
//! where it has not (lavapipe); the WGSL form naga 30 needs; CUDA's refusal.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;

mod common;
use common::rt;

/// `c = a·b` and `ct = (a·b)ᵀ` for row-major `a` (`m×k`) and `b` given transposed (`bt`,
/// `n×k`), `m`, `n`, `k` multiples of 16: a workgroup of one 32-lane subgroup computes a
/// 16×16 tile, loading `a` row-major and `b` column-major, storing row-major to `c` and
/// column-major through workgroup memory for `ct`.
#[forge_kernel(workgroup = 32, threads = (m / 16) * (n / 16) * 32,
    case(m = 16, k = 16, n = 16), case(m = 32, k = 48, n = 16), case(m = 16, k = 32, n = 48))]
pub fn coop_tile(
    a: &[f16; m * k],
    bt: &[f16; n * k],
    #[out] c: &mut [f32; m * n],
    #[out] ct: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    #[shared]
    let mut stage = [0.0f32; 256];
    let tile = workgroup_index();
    let r0 = (tile / (n / 16)) * 16;
    let c0 = (tile % (n / 16)) * 16;
    let mut acc: CoopC<f32> = CoopC::zeroed();
    for kk in 0..k / 16 {
        let x = CoopA::load_row_major(&a[r0 * k + kk * 16], k);
        // B(p, j) = bt[j·k + p]: column-major with stride k.
        let y = CoopB::load_col_major(&bt[c0 * k + kk * 16], k);
        acc = x.mul_add(y, acc);
    }
    acc.store_row_major(&mut c[r0 * n + c0], n);
    acc.store_col_major(&mut stage[0], 16);
    workgroup_barrier();
    // `stage` holds element (r, j) at j·16 + r: row j of the transposed tile.
    let l = local_index();
    for e in 0..8 {
        let i = l * 8 + e;
        ct[(c0 + i / 16) * m + r0 + i % 16] = stage[i];
    }
}

fn random_f16(rng: &mut ChaCha8Rng, len: usize) -> Vec<f16> {
    (0..len)
        .map(|_| f16::from_f32(rng.gen_range(-2.0f32..2.0)))
        .collect()
}

/// `a·b` in f64, from the definition, and `(a·b)ᵀ`.
fn reference(a: &[f16], bt: &[f16], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; m * n];
    let mut ct = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| a[i * k + p].to_f64() * bt[j * k + p].to_f64())
                .sum();
            c[i * n + j] = s;
            ct[j * m + i] = s;
        }
    }
    (c, ct)
}

/// Each 16-deep step of the oracle is exact and rounds to f32 once: within `k / 16`
/// roundings of the largest partial sum (|a|, |b| ≤ 2, so ≤ 4k).
fn assert_near(got: &[f32], want: &[f64], k: usize, what: &str) {
    let bound = (k / 16) as f64 * 4.0 * k as f64 * f32::EPSILON as f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() <= bound,
            "{what}[{i}]: {g} vs {w} (bound {bound})"
        );
    }
}

#[test]
fn the_oracle_multiplies_as_the_definition_says() {
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for (m, k, n) in [(16, 16, 16), (32, 48, 16), (48, 64, 32)] {
        let a = random_f16(&mut rng, m * k);
        let bt = random_f16(&mut rng, n * k);
        let (c, ct) = coop_tile::cpu(&a, &bt, m as u32, k as u32, n as u32).unwrap();
        let (rc, rct) = reference(&a, &bt, m, k, n);
        assert_near(&c, &rc, k, "c");
        assert_near(&ct, &rct, k, "ct");
    }
}

#[test]
fn the_kernel_declares_the_feature_and_the_wgsl_form() {
    let features = coop_tile::Kernel.features();
    assert!(
        features.contains(&Feature::CooperativeMatrix),
        "{features:?}"
    );
    assert!(features.contains(&Feature::F16), "{features:?}");
    let wgsl = coop_tile::WGSL;
    assert!(wgsl.contains("enable wgpu_cooperative_matrix;"), "{wgsl}");
    assert!(wgsl.contains("coopLoadT<coop_mat16x16<f16, A>>"), "{wgsl}");
    assert!(wgsl.contains("coopLoad<coop_mat16x16<f16, B>>"), "{wgsl}");
    assert!(wgsl.contains("coopMultiplyAdd("), "{wgsl}");
    // naga 30's SPIR-V writer needs coopStore's index and stride bound first.
    for line in wgsl.lines().filter(|l| l.contains("coopStore")) {
        assert!(
            line.contains("[fg_coop_i")
                && line.trim_end().ends_with(");")
                && line.contains(", fg_coop_s"),
            "{line}"
        );
    }
    let e = coop_tile::Kernel
        .cuda(&coop_tile::DEFAULT_SCHEDULE)
        .unwrap_err();
    assert!(e.to_string().contains("cooperative matrices"), "{e}");
}

#[test]
fn the_gpu_agrees_with_the_oracle_or_the_runtime_names_the_missing_feature() {
    let mut rt = rt();
    let mut rng = ChaCha8Rng::seed_from_u64(61);
    let (m, k, n) = (32usize, 64usize, 48usize);
    let a = random_f16(&mut rng, m * k);
    let bt = random_f16(&mut rng, n * k);
    let got = coop_tile::run(&mut rt, &a, &bt, m as u32, k as u32, n as u32);
    if rt.supports(Feature::CooperativeMatrix) {
        let (gc, gct) = got.unwrap();
        let (rc, rct) = reference(&a, &bt, m, k, n);
        assert_near(&gc, &rc, k, "gpu c");
        assert_near(&gct, &rct, k, "gpu ct");
    } else {
        match got {
            Err(ForgeError::MissingFeature { feature, .. }) => {
                assert_eq!(feature, "EXPERIMENTAL_COOPERATIVE_MATRIX")
            }
            other => panic!("expected MissingFeature, got {other:?}"),
        }
    }
}
