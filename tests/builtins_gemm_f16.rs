//! `gemm_f16` (cooperative matrices) and `gemm_f16_simt` (the fallback): the oracle of the
//! cooperative kernel at every schedule and the GPU through `rt.gemm_f16` against an
//! independent f64 reference over random `f16` data, at 1×1×1, shapes that are not
//! multiples of 16 and shapes past one tile; certification at every schedule (the
//! cooperative kernel where the adapter has the feature, else its `MissingFeature`); bad
//! input as errors.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::kernels::gemm_f16::{gemm_f16, gemm_f16_simt};
use wgsl_forge::prelude::*;

fn runtime() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never pass silently.
    ForgeRuntime::new(512 << 20, None).expect("a GPU adapter (lavapipe in CI)")
}

fn halves(rng: &mut ChaCha8Rng, n: usize) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f32(rng.gen_range(-1.0f32..1.0)))
        .collect()
}

/// `rows × cols` halves as rows of `width / 8` `HVec8`s, zero past `cols`.
fn octets(x: &[f16], rows: usize, cols: usize, width: usize) -> Vec<[f16; 8]> {
    let mut out = vec![[f16::ZERO; 8]; rows * width / 8];
    for (r, src) in x.chunks(cols).enumerate() {
        out.as_flattened_mut()[r * width..r * width + cols].copy_from_slice(src);
    }
    out
}

/// `C = A·B` in f64 from the definition, and `Σ|a·b|` of each element.
fn reference(a: &[f16], b: &[f16], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut mag) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let t = a[i * k + p].to_f64() * b[p * n + j].to_f64();
                c[i * n + j] += t;
                mag[i * n + j] += t.abs();
            }
        }
    }
    (c, mag)
}

/// Within `k` f32 roundings of `Σ|a·b|` (the fallback's `mul_add`s; the cooperative
/// kernel rounds once per 16 terms, well inside).
fn assert_close(what: &str, got: &[f32], want: &[f64], mag: &[f64], k: usize) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = k as f64 * f32::EPSILON as f64;
    for (i, ((g, w), m)) in got.iter().zip(want).zip(mag).enumerate() {
        let err = (*g as f64 - w).abs();
        assert!(
            err <= tol * m + 1e-30,
            "{what}: element {i} is {g}, expected {w} (error {err:e})"
        );
    }
}

const SHAPES: [(usize, usize, usize); 7] = [
    (1, 1, 1),
    (16, 16, 16),
    (7, 13, 29),
    (17, 33, 15),
    (130, 37, 133),
    (64, 128, 200),
    (129, 300, 65),
];

#[test]
fn the_cooperative_oracle_matches_the_reference_at_every_schedule() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x16);
    for (m, k, n) in SHAPES {
        let (a, b) = (halves(&mut rng, m * k), halves(&mut rng, k * n));
        let (want, mag) = reference(&a, &b, m, k, n);
        // The kernel reads rows of `HVec8`s: `k` and `n` padded to multiples of 8 with
        // zeros, the padded columns of `C` dropped.
        let (k8, n8) = (k.div_ceil(8) * 8, n.div_ceil(8) * 8);
        let (a8, b8) = (octets(&a, m, k, k8), octets(&b, k, n, n8));
        let b8 = [b8, vec![[f16::ZERO; 8]; (k8 - k) * n8 / 8]].concat();
        for s in gemm_f16::Kernel.tune_space().candidates() {
            let got = gemm_f16::cpu_with(&s, &a8, &b8, m as u32, k8 as u32, n8 as u32).unwrap();
            let got: Vec<f32> = got.chunks(n8).flat_map(|r| &r[..n]).copied().collect();
            assert_close(&format!("oracle {m}×{k}×{n} at {s}"), &got, &want, &mag, k);
        }
    }
}

#[test]
fn rt_gemm_f16_matches_the_reference() {
    let mut rt = runtime();
    let mut rng = ChaCha8Rng::seed_from_u64(0x61);
    for (m, k, n) in SHAPES {
        let (a, b) = (halves(&mut rng, m * k), halves(&mut rng, k * n));
        let (want, mag) = reference(&a, &b, m, k, n);
        let got = rt.gemm_f16(&a, &b, m, k, n).unwrap();
        assert_close(&format!("gpu {m}×{k}×{n}"), &got, &want, &mag, k);
        for s in gemm_f16_simt::Kernel.tune_space().candidates() {
            let got = gemm_f16_simt::run_with(&mut rt, &s, &a, &b, m as u32, k as u32, n as u32);
            assert_close(
                &format!("simt {m}×{k}×{n} at {s}"),
                &got.unwrap(),
                &want,
                &mag,
                k,
            );
        }
    }
}

#[test]
fn both_kernels_certify_at_every_schedule_or_name_the_missing_feature() {
    let mut rt = runtime();
    let opts = CertOptions::default();
    for s in gemm_f16_simt::Kernel.tune_space().candidates() {
        let r = certify(&mut rt, &gemm_f16_simt::Kernel, &s, &opts).unwrap();
        assert!(r.passed() && r.cases >= 3, "simt at {s}: {r:?}");
    }
    let coop = rt.supports(Feature::CooperativeMatrix);
    for s in gemm_f16::Kernel.tune_space().candidates() {
        match certify(&mut rt, &gemm_f16::Kernel, &s, &opts) {
            Ok(r) if coop => assert!(r.passed() && r.cases >= 5, "coop at {s}: {r:?}"),
            Err(ForgeError::MissingFeature { feature, .. }) if !coop => {
                assert_eq!(feature, "EXPERIMENTAL_COOPERATIVE_MATRIX")
            }
            other => panic!("coop at {s} (adapter has it: {coop}): {other:?}"),
        }
    }
}

#[test]
fn gemm_f16_rejects_bad_input() {
    let mut rt = runtime();
    let a = [f16::ONE; 6];
    assert!(matches!(
        rt.gemm_f16(&a[..5], &a, 2, 3, 2),
        Err(ForgeError::LengthMismatch { arg: "a", .. })
    ));
    assert!(matches!(
        rt.gemm_f16(&a, &a[..5], 2, 3, 2),
        Err(ForgeError::LengthMismatch { arg: "b", .. })
    ));
    assert!(matches!(
        rt.gemm_f16(&[], &[], 2, 0, 2),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemm_f16(&a, &a, 1 << 33, 3, 2),
        Err(ForgeError::InvalidArgument { .. })
    ));
}
