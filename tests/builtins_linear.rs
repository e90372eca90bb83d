//! The linear built-ins (`gemm`, `gemv`, `ternary_gemv`, `ternary_gemv_w2a8`, `p64_project`)
//! on a real adapter,
//! through the seed's signatures: GPU results against independent f64 references over
//! seeded random inputs, at 1×1×1, prime shapes and shapes past one workgroup; every
//! schedule of each tune space against the oracle; and bad inputs as errors.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::kernels::{
    gemm::gemm,
    gemv::gemv,
    p64_project::p64_project,
    ternary_gemv::ternary_gemv,
    ternary_w2a8::{ternary_gemv_w2a8, W2A8_MAX_K},
};
use wgsl_forge::prelude::*;

fn runtime() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never pass silently.
    ForgeRuntime::new(512 << 20, None).expect("a GPU adapter (lavapipe in CI)")
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn floats(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// Checks `got` against an f64 `want`, element by element, within the error bound of an
/// f32 dot product: `tol · magnitude[i]`, where `magnitude[i]` is `Σ|terms|` of element `i`.
fn assert_close(what: &str, got: &[f32], want: &[f64], magnitude: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((g, w), mag)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let err = (*g as f64 - w).abs();
        assert!(
            err <= tol * mag + 1e-30,
            "{what}: element {i} is {g}, expected {w} (error {err:e}, bound {:e})",
            tol * mag
        );
    }
}

const EPS: f64 = f32::EPSILON as f64;

/// `v` as the vec4s `gemv` binds, zero-padded to a whole last vec4.
fn quads(v: &[f32]) -> Vec<[f32; 4]> {
    v.chunks(4)
        .map(|c| {
            let mut q = [0.0; 4];
            q[..c.len()].copy_from_slice(c);
            q
        })
        .collect()
}

// ---- gemm ----------------------------------------------------------------------------

/// `C = A·B` in f64, with `Σ|a·b|` for each element.
fn gemm_f64(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut mag) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let t = a[i * k + p] as f64 * b[p * n + j] as f64;
                c[i * n + j] += t;
                mag[i * n + j] += t.abs();
            }
        }
    }
    (c, mag)
}

#[test]
fn gemm_seed_example() {
    let mut rt = runtime();
    let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
    assert_eq!(
        rt.gemm(&a, &b, 2, 3, 2).unwrap(),
        vec![58.0, 64.0, 139.0, 154.0]
    );
}

#[test]
fn gemm_matches_f64_reference() {
    let mut rt = runtime();
    let mut r = rng(1);
    // 1×1×1, primes, tiles past one workgroup in each dimension, k past one slice of 16.
    for (m, k, n) in [
        (1, 1, 1),
        (7, 13, 29),
        (2, 3, 2),
        (67, 71, 73),
        (1, 257, 1),
        (131, 1, 2),
        (3, 17, 131),
        (128, 128, 128),
    ] {
        let a = floats(&mut r, m * k);
        let b = floats(&mut r, k * n);
        let got = rt.gemm(&a, &b, m, k, n).unwrap();
        let (want, mag) = gemm_f64(&a, &b, m, k, n);
        assert_close(
            &format!("gemm {m}×{k}×{n}"),
            &got,
            &want,
            &mag,
            2.0 * k as f64 * EPS,
        );
    }
}

#[test]
fn gemm_every_schedule_gives_the_same_result() {
    let mut rt = runtime();
    let mut r = rng(2);
    // 130×133 has an odd number of 64-blocks each way, so the 128-row tiles outnumber the
    // launched workgroups and some workgroups take a second tile.
    for (m, k, n) in [(1, 1, 1), (7, 13, 29), (67, 33, 70), (130, 37, 133)] {
        let a = floats(&mut r, m * k);
        let b = floats(&mut r, k * n);
        let (m, k, n) = (m as u32, k as u32, n as u32);
        let oracle = gemm::cpu(&a, &b, m, k, n).unwrap();
        let (_, mag) = gemm_f64(&a, &b, m as usize, k as usize, n as usize);
        for s in gemm::Kernel.tune_space().candidates() {
            let cpu = gemm::cpu_with(&s, &a, &b, m, k, n).unwrap();
            assert_eq!(
                cpu, oracle,
                "gemm {m}×{k}×{n}: the oracle at {s} differs from the declared schedule"
            );
            let gpu = gemm::run_with(&mut rt, &s, &a, &b, m, k, n).unwrap();
            let cpu64: Vec<f64> = cpu.iter().map(|v| *v as f64).collect();
            assert_close(
                &format!("gemm {m}×{k}×{n} at {s}"),
                &gpu,
                &cpu64,
                &mag,
                4.0 * EPS,
            );
        }
    }
}

#[test]
fn gemm_rejects_bad_input() {
    let mut rt = runtime();
    let a = [1.0f32; 6];
    let b = [1.0f32; 6];
    assert!(matches!(
        rt.gemm(&a[..5], &b, 2, 3, 2),
        Err(ForgeError::LengthMismatch { arg: "a", .. })
    ));
    assert!(matches!(
        rt.gemm(&a, &b[..5], 2, 3, 2),
        Err(ForgeError::LengthMismatch { arg: "b", .. })
    ));
    assert!(matches!(
        rt.gemm(&[], &[], 0, 3, 2),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemm(&[], &[], 2, 0, 2),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemm(&a, &[], 2, 3, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemm(&a, &b, 1 << 33, 3, 2),
        Err(ForgeError::InvalidArgument { .. })
    ));
}

// ---- gemv ----------------------------------------------------------------------------

fn gemv_f64(a: &[f32], x: &[f32], m: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut y, mut mag) = (vec![0.0; m], vec![0.0; m]);
    for i in 0..m {
        for j in 0..n {
            let t = a[i * n + j] as f64 * x[j] as f64;
            y[i] += t;
            mag[i] += t.abs();
        }
    }
    (y, mag)
}

#[test]
fn gemv_matches_f64_reference() {
    let mut rt = runtime();
    assert_eq!(
        rt.gemv(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 1.0, 1.0], 2, 3)
            .unwrap(),
        vec![6.0, 15.0]
    );
    let mut r = rng(3);
    for (m, n) in [
        (1, 1),
        (7, 13),
        (13, 7),
        (300, 17),
        (5, 1031),
        (1031, 5),
        (257, 640),
    ] {
        let a = floats(&mut r, m * n);
        let x = floats(&mut r, n);
        let got = rt.gemv(&a, &x, m, n).unwrap();
        let (want, mag) = gemv_f64(&a, &x, m, n);
        assert_close(
            &format!("gemv {m}×{n}"),
            &got,
            &want,
            &mag,
            2.0 * n as f64 * EPS,
        );
    }
}

#[test]
fn gemv_every_schedule_gives_the_same_result() {
    let mut rt = runtime();
    let mut r = rng(4);
    // Both paths: rows on whole vec4s (n % 4 == 0) and rows that straddle them.
    for (m, n) in [(1, 1), (7, 13), (67, 300), (9, 1028), (5, 2051)] {
        let a = floats(&mut r, m * n);
        let x = floats(&mut r, n);
        let (_, mag) = gemv_f64(&a, &x, m, n);
        let (m, n) = (m as u32, n as u32);
        let (a, x) = (quads(&a), quads(&x));
        let oracle = gemv::cpu(&a, &x, m, n).unwrap();
        for s in gemv::Kernel.tune_space().candidates() {
            let cpu = gemv::cpu_with(&s, &a, &x, m, n).unwrap();
            assert_eq!(
                cpu, oracle,
                "gemv {m}×{n}: the oracle at {s} differs from the declared schedule"
            );
            let gpu = gemv::run_with(&mut rt, &s, &a, &x, m, n).unwrap();
            let cpu64: Vec<f64> = cpu.iter().map(|v| *v as f64).collect();
            assert_close(
                &format!("gemv {m}×{n} at {s}"),
                &gpu,
                &cpu64,
                &mag,
                4.0 * EPS,
            );
        }
    }
}

/// 65,537 rows at 64 invocations a workgroup: past the 65,535 workgroups of one dimension,
/// so the launch folds into y.
#[test]
fn gemv_past_65535_workgroups() {
    let mut rt = runtime();
    let mut r = rng(5);
    let (m, n) = (65_537usize, 3usize);
    let a = floats(&mut r, m * n);
    let x = floats(&mut r, n);
    let s = Schedule::new(64, 1, 1);
    let got = gemv::run_with(&mut rt, &s, &quads(&a), &quads(&x), m as u32, n as u32).unwrap();
    let (want, mag) = gemv_f64(&a, &x, m, n);
    assert_close("gemv 65537×3", &got, &want, &mag, 2.0 * n as f64 * EPS);
    // And the seed method, whose default schedule covers 4 rows a workgroup.
    assert_eq!(rt.gemv(&a, &x, m, n).unwrap(), got);
}

#[test]
fn gemv_rejects_bad_input() {
    let mut rt = runtime();
    let a = [1.0f32; 6];
    assert!(matches!(
        rt.gemv(&a, &[1.0; 2], 2, 3),
        Err(ForgeError::LengthMismatch { arg: "x", .. })
    ));
    assert!(matches!(
        rt.gemv(&a[..4], &[1.0; 3], 2, 3),
        Err(ForgeError::LengthMismatch { arg: "a", .. })
    ));
    assert!(matches!(
        rt.gemv(&[], &[], 0, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemv(&[], &[1.0], 0, 1),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.gemv(&a, &[1.0; 3], 2, 1 << 33),
        Err(ForgeError::InvalidArgument { .. })
    ));
}

// ---- ternary_gemv --------------------------------------------------------------------

fn ternary_weights(rng: &mut ChaCha8Rng, n: usize) -> Vec<i8> {
    (0..n).map(|_| rng.gen_range(-1i8..=1)).collect()
}

/// The product from the unpacked `i8` weights, independent of the packing.
fn ternary_f64(x: &[f32], w: &[i8], scale: &[f32], m: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut y, mut mag) = (vec![0.0; m], vec![0.0; m]);
    for r in 0..m {
        let (mut s, mut a) = (0.0f64, 0.0f64);
        for c in 0..k {
            let t = w[r * k + c] as f64 * x[c] as f64;
            s += t;
            a += t.abs();
        }
        y[r] = s * scale[r] as f64;
        mag[r] = a * (scale[r] as f64).abs();
    }
    (y, mag)
}

#[test]
fn ternary_gemv_seed_example() {
    let mut rt = runtime();
    let y = rt
        .ternary_gemv(&[1.0, 2.0, 3.0, 4.0], &[0x55, 0xAA], &[2.0, 10.0], 2, 4)
        .unwrap();
    assert_eq!(y, vec![20.0, -100.0]);
    assert_eq!(
        pack_ternary(&[1, 1, 1, 1, -1, -1, -1, -1], 2, 4).unwrap(),
        vec![0x55, 0xAA]
    );
}

#[test]
fn ternary_gemv_matches_f64_reference() {
    let mut rt = runtime();
    let mut r = rng(6);
    // k = 1, below, at and past one word of 16 codes, primes, and past 64 words a row.
    for (m, k) in [
        (1, 1),
        (2, 4),
        (7, 13),
        (3, 16),
        (4, 17),
        (300, 17),
        (5, 1031),
        (131, 2053),
        (33, 4096),
        (70, 4100),
    ] {
        let x = floats(&mut r, k);
        let w = ternary_weights(&mut r, m * k);
        let scale: Vec<f32> = (0..m).map(|_| r.gen_range(0.1f32..4.0)).collect();
        let packed = pack_ternary(&w, m, k).unwrap();
        assert_eq!(packed.len(), m * k.div_ceil(16));
        let got = rt.ternary_gemv(&x, &packed, &scale, m, k).unwrap();
        let (want, mag) = ternary_f64(&x, &w, &scale, m, k);
        assert_close(
            &format!("ternary_gemv {m}×{k}"),
            &got,
            &want,
            &mag,
            2.0 * (k as f64 + 1.0) * EPS,
        );
    }
}

#[test]
fn ternary_gemv_ignores_code_3_and_bits_past_k() {
    let mut rt = runtime();
    let x = [1.0, 2.0, 4.0, 8.0, 16.0];
    // Row 0: codes 1, 3, 2, 0, 1 → 1 − 4 + 16 = 13. Every bit past k = 5 is set.
    let row0 = 0b01_00_10_11_01 | (u32::MAX << 10);
    // Row 1: all codes 3 → 0.
    let row1 = u32::MAX;
    let y = rt
        .ternary_gemv(&x, &[row0, row1], &[1.0, 1.0], 2, 5)
        .unwrap();
    assert_eq!(y, vec![13.0, 0.0]);
}

// ---- ternary_gemv_w2a8 ---------------------------------------------------------------

/// The int8 product written from the definitions, independent of both packings: absmax
/// quantisation, then an exact integer dot product of the `i8` weights and activations.
fn w2a8_reference(x: &[f32], w: &[i8], scale: &[f32], m: usize, k: usize) -> Vec<f32> {
    let max = x.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let step = if max == 0.0 { 1.0 } else { max / 127.0 };
    let q: Vec<i64> = x.iter().map(|v| (v / step).round() as i64).collect();
    (0..m)
        .map(|r| {
            let dot: i64 = (0..k).map(|c| w[r * k + c] as i64 * q[c]).sum();
            dot as f32 * step * scale[r]
        })
        .collect()
}

#[test]
fn ternary_gemv_w2a8_matches_the_int8_reference_and_the_f32_product() {
    let mut rt = runtime();
    let mut r = rng(16);
    for (m, k) in [
        (1, 1),
        (2, 4),
        (7, 13),
        (3, 16),
        (300, 17),
        (5, 1031),
        (131, 2053),
        (33, 4096),
        (70, 4100),
        (4, 9000),
    ] {
        let x = floats(&mut r, k);
        let w = ternary_weights(&mut r, m * k);
        let scale: Vec<f32> = (0..m).map(|_| r.gen_range(0.1f32..4.0)).collect();
        let packed = pack_ternary(&w, m, k).unwrap();
        let got = rt.ternary_gemv_w2a8(&x, &packed, &scale, m, k).unwrap();
        // Exact but for the two f32 products of the scales.
        let want = w2a8_reference(&x, &w, &scale, m, k);
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - e).abs() <= 2.0 * f32::EPSILON * e.abs(),
                "w2a8 {m}×{k}: row {i} is {g}, the int8 reference {e}"
            );
        }
        // Against the f32 product: within the quantisation error, half a step a term.
        let (exact, _) = ternary_f64(&x, &w, &scale, m, k);
        let half_step = x.iter().fold(0.0f32, |a, v| a.max(v.abs())) as f64 / 254.0;
        for row in 0..m {
            let terms: f64 = w[row * k..(row + 1) * k]
                .iter()
                .map(|v| v.abs() as f64)
                .sum();
            let bound = (half_step * terms + 1e-6) * scale[row] as f64 * 1.001;
            let err = (got[row] as f64 - exact[row]).abs();
            assert!(
                err <= bound,
                "w2a8 {m}×{k}: row {row} is off the f32 product by {err:e} > {bound:e}"
            );
        }
    }
}

#[test]
fn ternary_gemv_w2a8_ignores_code_3_and_bits_past_k() {
    let mut rt = runtime();
    // x = 127 · (1, 2, 4, 8, 16) / 16 quantises exactly: q = 8, 16, 32, 64, 127 (127 · 16/16).
    let x = [8.0, 16.0, 32.0, 64.0, 127.0];
    let row0 = 0b01_00_10_11_01 | (u32::MAX << 10);
    let y = rt
        .ternary_gemv_w2a8(&x, &[row0, u32::MAX], &[1.0, 1.0], 2, 5)
        .unwrap();
    assert_eq!(y, vec![8.0 - 32.0 + 127.0, 0.0]);
}

#[test]
fn ternary_gemv_w2a8_is_bit_identical_at_every_schedule() {
    let mut rt = runtime();
    let mut r = rng(17);
    for (m, k) in [(1, 1), (7, 13), (67, 1031), (9, 4100), (40, 8200)] {
        let x = floats(&mut r, k);
        let w = ternary_weights(&mut r, m * k);
        let scale = floats(&mut r, m);
        let packed = pack_ternary(&w, m, k).unwrap();
        let q = quantize_activations(&x).unwrap();
        let (m, k) = (m as u32, k as u32);
        let oracle = ternary_gemv_w2a8::cpu(&q.packed, &packed, &scale, m, k, q.scale).unwrap();
        for s in ternary_gemv_w2a8::Kernel.tune_space().candidates() {
            let cpu = ternary_gemv_w2a8::cpu_with(&s, &q.packed, &packed, &scale, m, k, q.scale);
            assert_eq!(cpu.unwrap(), oracle, "w2a8 {m}×{k}: the oracle at {s}");
            let gpu =
                ternary_gemv_w2a8::run_with(&mut rt, &s, &q.packed, &packed, &scale, m, k, q.scale);
            assert_eq!(gpu.unwrap(), oracle, "w2a8 {m}×{k}: the GPU at {s}");
        }
    }
}

#[test]
fn ternary_gemv_w2a8_refuses_bad_input() {
    let mut rt = runtime();
    let w = [0x55u32; 2];
    assert!(matches!(
        rt.ternary_gemv_w2a8(&[1.0, f32::NAN, 0.0, 0.0], &w, &[1.0, 1.0], 2, 4),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.ternary_gemv_w2a8(&[1.0; 3], &w, &[1.0, 1.0], 2, 4),
        Err(ForgeError::LengthMismatch { .. })
    ));
    assert!(matches!(
        rt.ternary_gemv_w2a8(&[1.0; 4], &w[..1], &[1.0, 1.0], 2, 4),
        Err(ForgeError::LengthMismatch { .. })
    ));
    let q = quantize_activations(&vec![1.0; W2A8_MAX_K + 1]).unwrap();
    let err = rt
        .ternary_gemv_w2a8_quantized(&q, &[], &[1.0], 1, W2A8_MAX_K + 1)
        .unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
}

#[test]
fn ternary_gemv_every_schedule_gives_the_same_result() {
    let mut rt = runtime();
    let mut r = rng(7);
    for (m, k) in [(1, 1), (7, 13), (67, 1031), (9, 4100)] {
        let x = floats(&mut r, k);
        let w = ternary_weights(&mut r, m * k);
        let scale = floats(&mut r, m);
        let packed = pack_ternary(&w, m, k).unwrap();
        let (_, mag) = ternary_f64(&x, &w, &scale, m, k);
        let (m, k) = (m as u32, k as u32);
        let oracle = ternary_gemv::cpu(&x, &packed, &scale, m, k).unwrap();
        // Schedules outside the tune space are refused (a kernel runs only at the
        // schedules it declares), on the GPU and in the oracle alike.
        for vector in [1, 2] {
            let mut s = Schedule::with_workgroup(64);
            s.vector = vector;
            assert!(matches!(
                ternary_gemv::cpu_with(&s, &x, &packed, &scale, m, k),
                Err(ForgeError::BadSchedule { .. })
            ));
            assert!(matches!(
                ternary_gemv::run_with(&mut rt, &s, &x, &packed, &scale, m, k),
                Err(ForgeError::BadSchedule { .. })
            ));
        }
        for s in ternary_gemv::Kernel.tune_space().candidates() {
            let cpu = ternary_gemv::cpu_with(&s, &x, &packed, &scale, m, k).unwrap();
            assert_eq!(
                cpu, oracle,
                "ternary_gemv {m}×{k}: the oracle at {s} differs from the declared schedule"
            );
            let gpu = ternary_gemv::run_with(&mut rt, &s, &x, &packed, &scale, m, k).unwrap();
            let cpu64: Vec<f64> = cpu.iter().map(|v| *v as f64).collect();
            assert_close(
                &format!("ternary_gemv {m}×{k} at {s}"),
                &gpu,
                &cpu64,
                &mag,
                4.0 * EPS,
            );
        }
    }
}

#[test]
fn ternary_gemv_rejects_bad_input() {
    let mut rt = runtime();
    let x = [1.0f32; 17];
    // k = 17 needs 2 words a row: m·k/16 rounded down is one word short.
    assert!(matches!(
        rt.ternary_gemv(&x, &[0; 3], &[1.0; 2], 2, 17),
        Err(ForgeError::LengthMismatch {
            arg: "packed_w",
            ..
        })
    ));
    assert!(matches!(
        rt.ternary_gemv(&x, &[0; 4], &[1.0; 3], 2, 17),
        Err(ForgeError::LengthMismatch { arg: "scale", .. })
    ));
    assert!(matches!(
        rt.ternary_gemv(&x[..16], &[0; 4], &[1.0; 2], 2, 17),
        Err(ForgeError::LengthMismatch { arg: "x", .. })
    ));
    assert!(matches!(
        rt.ternary_gemv(&[], &[], &[1.0], 1, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.ternary_gemv(&x, &[], &[], 0, 17),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        pack_ternary(&[0, 1, 2], 1, 3),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        pack_ternary(&[0, 1, -2], 1, 3),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        pack_ternary(&[0, 1], 1, 3),
        Err(ForgeError::LengthMismatch { .. })
    ));
    assert!(matches!(
        pack_ternary(&[], 0, 3),
        Err(ForgeError::EmptyWork { .. })
    ));
}

// ---- p64_project ---------------------------------------------------------------------

fn records(rng: &mut ChaCha8Rng, n: usize) -> Vec<P64GpuWords64> {
    (0..n)
        .map(|_| {
            let mut f = [0u64; 8];
            for v in &mut f {
                // Full-range fields, and small ones as counts and flags would be.
                *v = if rng.gen_bool(0.5) {
                    rng.gen()
                } else {
                    rng.gen_range(0..1000)
                };
            }
            P64GpuWords64::from_u64_fields(f)
        })
        .collect()
}

/// `Σ_w weights[w]·f32(word[w])` in f64, with `Σ|terms|`.
fn p64_f64(recs: &[P64GpuWords64], weights: &[f32]) -> (Vec<f64>, Vec<f64>) {
    recs.iter()
        .map(|rec| {
            let terms = rec
                .words
                .iter()
                .zip(weights)
                .map(|(&word, &w)| w as f64 * (word as f32) as f64);
            (terms.clone().sum::<f64>(), terms.map(f64::abs).sum::<f64>())
        })
        .unzip()
}

#[test]
fn p64_project_seed_example() {
    let mut rt = runtime();
    let rec = P64GpuWords64::from_u64_fields([1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        rt.p64_project(rec.as_bytes(), &[1.0; 16], 1).unwrap(),
        vec![1.0]
    );
    let rec = P64GpuWords64::from_u64_fields([0x1_0000_0002, 0, 0, 0, 0, 0, 0, u64::MAX]);
    assert_eq!(rec.words[0..2], [2, 1]);
    assert_eq!(rec.words[14..16], [u32::MAX, u32::MAX]);
}

#[test]
fn p64_project_matches_f64_reference() {
    let mut rt = runtime();
    let mut r = rng(8);
    for n in [1, 7, 257, 1031, 100_003] {
        let recs = records(&mut r, n);
        let weights = floats(&mut r, 16);
        let bytes = P64GpuWords64::slice_as_bytes(&recs);
        let got = rt.p64_project(bytes, &weights, n).unwrap();
        let (want, mag) = p64_f64(&recs, &weights);
        assert_close(&format!("p64_project {n}"), &got, &want, &mag, 40.0 * EPS);
        assert_eq!(rt.p64_project_records(&recs, &weights).unwrap(), got);
        // Bytes at an odd address take the copying path and give the same result.
        let mut shifted = vec![0u8; bytes.len() + 1];
        shifted[1..].copy_from_slice(bytes);
        assert_eq!(rt.p64_project(&shifted[1..], &weights, n).unwrap(), got);
    }
}

#[test]
fn p64_project_every_schedule_gives_the_same_result() {
    let mut rt = runtime();
    let mut r = rng(9);
    for n in [1usize, 7, 1031] {
        let recs = records(&mut r, n);
        let weights = floats(&mut r, 16);
        let words: &[[u32; 4]] = &recs
            .iter()
            .flat_map(|r| r.words)
            .collect::<Vec<u32>>()
            .chunks(4)
            .map(|q| [q[0], q[1], q[2], q[3]])
            .collect::<Vec<_>>();
        let (_, mag) = p64_f64(&recs, &weights);
        let oracle = p64_project::cpu(words, &weights, n as u32).unwrap();
        for s in p64_project::Kernel.tune_space().candidates() {
            let cpu = p64_project::cpu_with(&s, words, &weights, n as u32).unwrap();
            assert_eq!(
                cpu, oracle,
                "p64_project {n}: the oracle at {s} differs from the declared schedule"
            );
            let gpu = p64_project::run_with(&mut rt, &s, words, &weights, n as u32).unwrap();
            let cpu64: Vec<f64> = cpu.iter().map(|v| *v as f64).collect();
            // WGSL may round `f32(u32)` either way for words past 2^24.
            assert_close(
                &format!("p64_project {n} at {s}"),
                &gpu,
                &cpu64,
                &mag,
                8.0 * EPS,
            );
        }
    }
}

#[test]
fn p64_project_rejects_bad_input() {
    let mut rt = runtime();
    let w = [1.0f32; 16];
    let rec = P64GpuWords64::from_u64_fields([1; 8]);
    assert!(matches!(
        rt.p64_project(&rec.as_bytes()[..63], &w, 1),
        Err(ForgeError::LengthMismatch { arg: "bytes", .. })
    ));
    assert!(matches!(
        rt.p64_project(rec.as_bytes(), &w, 2),
        Err(ForgeError::LengthMismatch { arg: "bytes", .. })
    ));
    assert!(matches!(
        rt.p64_project(rec.as_bytes(), &w[..15], 1),
        Err(ForgeError::LengthMismatch { arg: "weights", .. })
    ));
    assert!(matches!(
        rt.p64_project(&[], &w, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.p64_project_records(&[], &w),
        Err(ForgeError::EmptyWork { .. })
    ));
}
