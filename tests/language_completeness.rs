//! The completeness items of the second edition: the rest of `f32`'s math methods and
//! constants, vector compound assignment, `cross` and `distance`, `match` on integers
//! (a WGSL `switch`), and `f64`. GPU == oracle == an independent reference written from
//! the definitions in f64, on odd sizes and past 65535 workgroups.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify_default, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

/// The odd sizes every test runs, the last past 65535 workgroups of one invocation.
const SIZES: [usize; 4] = [1, 7, 1001, 70001];

fn near(got: f64, want: f64, abs: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= abs.max(rel * got.abs().max(want.abs()))
}

// ---- math methods and constants ---------------------------------------------------------

/// The math methods new in the second edition, each on inputs inside its domain.
#[forge_kernel(threads = n)]
pub fn math2(x: &[f32; n], #[out] y: &mut [f32; n * 16], n: u32) {
    let i = global_index();
    if i < n {
        let v = x[i];
        let o = i * 16;
        y[o] = v.atan2(0.75);
        y[o + 1] = (-0.5f32).atan2(v);
        y[o + 2] = v.asin();
        y[o + 3] = v.acos();
        y[o + 4] = (v * 10.0).atan();
        y[o + 5] = (v * 3.0).sinh();
        y[o + 6] = (v * 3.0).cosh();
        y[o + 7] = (v * 5.0).asinh();
        y[o + 8] = (v.abs() * 4.0 + 1.5).acosh();
        y[o + 9] = (v * 0.9).atanh();
        y[o + 10] = v.hypot(0.3) + (v * 1.0e30).hypot(2.0e30);
        y[o + 11] = (v.abs() * 1000.0 + 0.001).log10();
        y[o + 12] = (v * 7.0).to_degrees();
        y[o + 13] = (v * 200.0).to_radians();
        y[o + 14] = (v * 10.0).rem_euclid(3.0) + ((v * 100.0) as i32).rem_euclid(7) as f32;
        y[o + 15] = f32::consts::PI * v + f32::consts::E - std::f32::consts::LN_2
            + core::f32::consts::FRAC_1_SQRT_2 * f32::consts::TAU;
    }
}

/// The same from the definitions, in f64 on the f32 inputs.
fn math2_reference(x: &[f32]) -> Vec<f64> {
    use std::f64::consts as c;
    let mut out = Vec::new();
    for &v in x {
        let v = v as f64;
        let f = |x: f32| x as f64;
        // Each input is formed in f32 first, as the kernel forms it.
        let (v10, v3, v5, v09) = (
            f(v as f32 * 10.0),
            f(v as f32 * 3.0),
            f(v as f32 * 5.0),
            f(v as f32 * 0.9),
        );
        let acosh_in = f((v as f32).abs() * 4.0 + 1.5);
        let log_in = f((v as f32).abs() * 1000.0 + 0.001);
        let big = f(v as f32 * 1.0e30);
        let rem = v10 - 3.0 * (v10 / 3.0).floor();
        let int = ((v as f32 * 100.0) as i32) as i64;
        out.extend([
            v.atan2(0.75),
            (-0.5f64).atan2(v),
            v.asin(),
            v.acos(),
            v10.atan(),
            v3.sinh(),
            v3.cosh(),
            v5.asinh(),
            acosh_in.acosh(),
            v09.atanh(),
            (v * v + 0.09).sqrt() + (big * big + 4.0e60).sqrt(),
            log_in.log10(),
            f(v as f32 * 7.0) * 180.0 / c::PI,
            f(v as f32 * 200.0) * c::PI / 180.0,
            rem + int.rem_euclid(7) as f64,
            c::PI * v + c::E - c::LN_2 + c::FRAC_1_SQRT_2 * c::TAU,
        ]);
    }
    out
}

#[test]
fn math_methods_and_constants_match_the_definitions() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut rt = rt();
    for n in SIZES {
        let mut x: Vec<f32> = (0..n).map(|_| rng.gen_range(-0.999f32..0.999)).collect();
        x[0] = 0.5;
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, math2, n, (&x, n as u32));
        let want = math2_reference(&x);
        for (j, ((g, c), w)) in gpu.iter().zip(&cpu).zip(&want).enumerate() {
            // The oracle is Rust's f32 math (within an ulp or two of the definition; the
            // hypot of 1e30s in f32 is finite, as Rust's is).
            assert!(
                near(*c as f64, *w, 1e-6, 2e-6),
                "oracle y[{j}] (method {}): {c} vs {w}",
                j % 16
            );
            // The GPU's are approximations (WGSL allows far more error than this: 4096 ulp
            // for `atan2`); lavapipe's worst here is 3.4e-6, in the `atan` family.
            assert!(
                near(*g as f64, *c as f64, 1e-5, 1e-5),
                "GPU y[{j}] (method {}): {g} vs {c}",
                j % 16
            );
        }
    }
}

#[test]
fn half_precision_math_methods_round_once_from_f32() {
    #[forge_kernel(threads = n, tolerance(abs = 4e-3, rel = 8e-3))]
    pub fn half_math2(x: &[f16; n], #[out] y: &mut [f16; n * 4], n: u32) {
        let i = global_index();
        if i < n {
            let v = x[i];
            y[i * 4] = v.atan2(0.5f16);
            y[i * 4 + 1] = v.hypot(v);
            y[i * 4 + 2] = v.rem_euclid(0.375f16);
            y[i * 4 + 3] = v.to_degrees();
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    let n = 333;
    let x: Vec<f16> = (0..n)
        .map(|_| f16::from_f32(rng.gen_range(-1024i32..1024) as f32 / 1024.0))
        .collect();
    let mut rt = rt();
    let gpu = rt.half_math2(&x, n as u32).unwrap();
    let cpu = half_math2::cpu(&x, n as u32).unwrap();
    for i in 0..n {
        let v = x[i].to_f64();
        let rem = v - 0.375 * (v / 0.375).floor();
        let want = [v.atan2(0.5), (2.0 * v * v).sqrt(), rem, v.to_degrees()];
        for k in 0..4 {
            let (g, c) = (gpu[i * 4 + k].to_f64(), cpu[i * 4 + k].to_f64());
            // One rounding to f16 (2^-11 relative) of an f32 result.
            assert!(
                near(c, want[k], 1e-4, 2f64.powi(-10)),
                "oracle {i}/{k}: {c} vs {}",
                want[k]
            );
            assert!(near(g, c, 4e-3, 8e-3), "GPU {i}/{k}: {g} vs {c}");
        }
    }
}

// ---- vectors: compound assignment, cross, distance ----------------------------------------

#[forge_kernel(threads = n)]
pub fn vec_ops(
    a: &[Vec4; n],
    b: &[Vec4; n],
    #[out] o: &mut [Vec4; n],
    #[out] c: &mut [Vec4; n],
    #[out] d: &mut [f32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let mut v = a[i];
        v += b[i];
        v *= 0.5;
        v -= Vec4::splat(0.25);
        v /= b[i].abs() + Vec4::ONE;
        let mut w = UVec2::new(i, i + 1);
        w *= 3u32;
        w += UVec2::splat(1);
        w -= UVec2::new(1, 0);
        o[i] = v;
        o[i] += Vec4::new(w.x as f32, w.y as f32, 0.0, 0.0);
        let p = a[i].xyz();
        let q = b[i].xyz();
        let x = p.cross(q);
        c[i] = Vec4::new(x.x, x.y, x.z, p.distance(q));
        d[i] = a[i].distance(b[i]);
    }
}

#[test]
fn vector_compound_assignment_cross_and_distance() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let mut rt = rt();
    for n in SIZES {
        let gen = |rng: &mut ChaCha8Rng| -> Vec<[f32; 4]> {
            (0..n)
                .map(|_| [0; 4].map(|_: i32| rng.gen_range(-4.0f32..4.0)))
                .collect()
        };
        let (a, b) = (gen(&mut rng), gen(&mut rng));
        let (g, cpu) = gpu_and_cpu!(&mut rt, vec_ops, n, (&a, &b, n as u32));
        for i in 0..n {
            let (p, q) = (a[i].map(|x| x as f64), b[i].map(|x| x as f64));
            let w = [(3 * i + 1 - 1) as f64, (3 * (i + 1) + 1) as f64];
            let o: Vec<f64> = (0..4)
                .map(|k| {
                    ((p[k] + q[k]) * 0.5 - 0.25) / (q[k].abs() + 1.0)
                        + w.get(k).copied().unwrap_or(0.0)
                })
                .collect();
            let cross = [
                p[1] * q[2] - p[2] * q[1],
                p[2] * q[0] - p[0] * q[2],
                p[0] * q[1] - p[1] * q[0],
            ];
            let dist3 = (0..3).map(|k| (p[k] - q[k]).powi(2)).sum::<f64>().sqrt();
            let dist4 = (0..4).map(|k| (p[k] - q[k]).powi(2)).sum::<f64>().sqrt();
            let want_c = [cross[0], cross[1], cross[2], dist3];
            for k in 0..4 {
                // Relative to the operands' size: `cross` cancels.
                assert!(
                    near(cpu.0[i][k] as f64, o[k], 1e-5, 1e-6),
                    "oracle o[{i}][{k}]"
                );
                assert!(
                    near(cpu.1[i][k] as f64, want_c[k], 1e-5, 1e-6),
                    "oracle c[{i}][{k}]"
                );
                assert!(
                    near(g.0[i][k] as f64, cpu.0[i][k] as f64, 1e-5, 1e-5),
                    "GPU o[{i}][{k}]"
                );
                assert!(
                    near(g.1[i][k] as f64, cpu.1[i][k] as f64, 1e-5, 1e-5),
                    "GPU c[{i}][{k}]"
                );
            }
            assert!(near(cpu.2[i] as f64, dist4, 1e-6, 1e-6), "oracle d[{i}]");
            assert!(
                near(g.2[i] as f64, cpu.2[i] as f64, 1e-6, 1e-5),
                "GPU d[{i}]"
            );
        }
    }
}

// ---- match on integers --------------------------------------------------------------------

/// `match` with literal, `|` and range arms, a binding catch-all, a `break` out of the
/// enclosing loop from an arm, and `match` as a value.
#[forge_kernel(threads = n)]
pub fn classify(x: &[i32; n], #[out] y: &mut [f32; n], #[out] steps: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut acc = 0.0f32;
        let mut k = 0u32;
        loop {
            match x[i] + k as i32 {
                -3 | -2 => acc += 1.0,
                0..=4 => {
                    acc += 2.0;
                }
                5..8 => break,
                -50..=-40 => {}
                _ => acc += 0.5,
            }
            k += 1;
            if k > 10 {
                break;
            }
        }
        let v = match i % 3 {
            0 => 1.0,
            1 => {
                let t = acc * 2.0;
                t
            }
            r => r as f32 * acc,
        };
        y[i] = v;
        steps[i] = k;
    }
}

/// The same with Rust's own `match`.
fn classify_reference(x: &[i32]) -> (Vec<f32>, Vec<u32>) {
    let (mut y, mut steps) = (Vec::new(), Vec::new());
    for (i, &xi) in x.iter().enumerate() {
        let (mut acc, mut k) = (0.0f32, 0u32);
        loop {
            match xi.wrapping_add(k as i32) {
                -3 | -2 => acc += 1.0,
                0..=4 => acc += 2.0,
                5..8 => break,
                -50..=-40 => {}
                _ => acc += 0.5,
            }
            k += 1;
            if k > 10 {
                break;
            }
        }
        y.push(match i % 3 {
            0 => 1.0,
            1 => acc * 2.0,
            r => r as f32 * acc,
        });
        steps.push(k);
    }
    (y, steps)
}

#[test]
fn match_on_integers_is_a_switch_with_rust_semantics() {
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let mut rt = rt();
    for n in SIZES {
        let x: Vec<i32> = (0..n).map(|_| rng.gen_range(-60..12)).collect();
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, classify, n, (&x, n as u32));
        let want = classify_reference(&x);
        assert_eq!(cpu, want, "oracle, n = {n}");
        assert_eq!(gpu, want, "GPU, n = {n}");
    }
}

/// A `match` whose arms hold barriers: the whole workgroup takes the same arm.
#[forge_kernel(workgroup = 64, threads = n, case(n = 640, mode = 0), case(n = 1000, mode = 2), case(n = 7, mode = 9))]
pub fn modal_sum(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(64)], n: u32, mode: u32) {
    #[shared]
    let mut tile = [0.0f32; 64];
    let lid = local_index();
    let i = global_index();
    tile[lid] = if i < n { x[i] } else { 0.0 };
    workgroup_barrier();
    match mode {
        0 | 1 => {
            if lid == 0 {
                let mut s = 0.0f32;
                for k in 0..64u32 {
                    s += tile[k];
                }
                tile[0] = s;
            }
            workgroup_barrier();
        }
        2..=4 => {
            let mut stride = 32u32;
            while stride > 0 {
                if lid < stride {
                    tile[lid] += tile[lid + stride];
                }
                workgroup_barrier();
                stride /= 2;
            }
        }
        _ => {
            if lid == 0 {
                tile[0] = -1.0;
            }
            workgroup_barrier();
        }
    }
    if lid == 0 && workgroup_index() < n.div_ceil(64) {
        sums[workgroup_index()] = tile[0];
    }
}

#[test]
fn a_uniform_match_may_hold_barriers() {
    let mut rng = ChaCha8Rng::seed_from_u64(35);
    let n: usize = 64 * 9 + 5;
    let x: Vec<f32> = (0..n)
        .map(|_| rng.gen_range(-1024i32..1024) as f32 / 1024.0)
        .collect();
    let mut rt = rt();
    for mode in [0u32, 3, 7] {
        let want: Vec<f32> = if mode >= 5 {
            vec![-1.0; n.div_ceil(64)]
        } else {
            x.chunks(64)
                .map(|c| c.iter().map(|v| *v as f64).sum::<f64>() as f32)
                .collect()
        };
        assert_eq!(
            modal_sum::cpu(&x, n as u32, mode).unwrap(),
            want,
            "oracle, mode {mode}"
        );
        assert_eq!(
            rt.modal_sum(&x, n as u32, mode).unwrap(),
            want,
            "GPU, mode {mode}"
        );
    }
    let report = certify_default(&mut rt, &modal_sum::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
}

// ---- f64 ----------------------------------------------------------------------------------

/// f64 bindings, locals, vectors and the methods GPUs compute on 64-bit floats.
#[forge_kernel(threads = n)]
pub fn dbl(
    x: &[f64; n],
    v: &[DVec2; n],
    #[out] y: &mut [f64; n * 3],
    #[out] z: &mut [DVec2; n],
    n: u32,
    s: f32,
) {
    let i = global_index();
    if i < n {
        let a = x[i];
        // 1e-10 steps vanish in f32 next to 1.0; in f64 they add up.
        let mut acc = 1.0f64;
        for k in 0..100u32 {
            acc += a * 1.0e-10 + (k as f64) * 1.0e-12;
        }
        y[i * 3] = acc - 1.0;
        y[i * 3 + 1] = (a.abs() + 2.0).sqrt()
            + a.max(0.25).min(0.75)
            + a.mul_add(3.0, 1.0)
            + (a * 1.0e8).round() / 1.0e8
            + (a * 16.0).floor()
            + (a * 16.0).fract()
            + a.clamp(-0.5, 0.5)
            + a.signum()
            + (a + 3.0).recip()
            + f64::consts::PI
            + (a * 1.0e9) as i32 as f64
            + (s as f64) * a;
        y[i * 3 + 2] = (a as f32) as f64 - a;
        let mut w = v[i];
        w *= 2.0;
        w += DVec2::new(w.length(), w.dot(v[i]));
        z[i] = w;
    }
}

fn dbl_reference(x: &[f64], v: &[[f64; 2]], s: f32) -> (Vec<f64>, Vec<[f64; 2]>) {
    let (mut y, mut z) = (Vec::new(), Vec::new());
    for (a, w) in x.iter().zip(v) {
        let a = *a;
        let mut acc = 1.0f64;
        for k in 0..100 {
            acc += a * 1.0e-10 + k as f64 * 1.0e-12;
        }
        y.push(acc - 1.0);
        y.push(
            (a.abs() + 2.0).sqrt()
                + a.clamp(0.25, 0.75)
                + (a * 3.0 + 1.0)
                + (a * 1.0e8).round() / 1.0e8
                + (a * 16.0).floor()
                + (a * 16.0).fract()
                + a.clamp(-0.5, 0.5)
                + a.signum()
                + 1.0 / (a + 3.0)
                + std::f64::consts::PI
                + (a * 1.0e9).trunc()
                + s as f64 * a,
        );
        y.push(a as f32 as f64 - a);
        let w2 = [w[0] * 2.0, w[1] * 2.0];
        let len = (w2[0] * w2[0] + w2[1] * w2[1]).sqrt();
        z.push([w2[0] + len, w2[1] + w2[0] * w[0] + w2[1] * w[1]]);
    }
    (y, z)
}

#[test]
fn f64_is_double_precision_on_gpu_oracle_and_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(36);
    let mut rt = rt();
    assert!(rt.supports(Feature::F64), "lavapipe has SHADER_F64");
    assert_eq!(dbl::Kernel.features(), [Feature::F64]);
    for n in SIZES {
        let x: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let v: Vec<[f64; 2]> = (0..n)
            .map(|_| [rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)])
            .collect();
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, dbl, n, (&x, &v, n as u32, 0.5));
        let (wy, wz) = dbl_reference(&x, &v, 0.5);
        for (j, ((g, c), w)) in gpu.0.iter().zip(&cpu.0).zip(&wy).enumerate() {
            assert!(near(*c, *w, 1e-15, 1e-14), "oracle y[{j}]: {c} vs {w}");
            // The GPU may reassociate and fuse (SPIR-V allows both): `Tolerance::DOUBLE`.
            assert!(near(*g, *c, 1e-13, 1e-12), "GPU y[{j}]: {g} vs {c}");
        }
        for i in 0..n {
            // The small steps survived: more than f32 could hold next to 1.0.
            assert!(
                (gpu.0[i * 3] - (x[i] * 1e-8 + 4.95e-9)).abs() < 1e-13,
                "y[{}]",
                i * 3
            );
            // `a as f32 as f64 - a` is the f32 rounding error, not zero.
            assert_eq!(gpu.0[i * 3 + 2], x[i] as f32 as f64 - x[i]);
            for (k, w) in wz[i].iter().enumerate() {
                assert!(near(cpu.1[i][k], *w, 1e-15, 1e-14), "oracle z[{i}][{k}]");
                assert!(
                    near(gpu.1[i][k], cpu.1[i][k], 1e-13, 1e-12),
                    "GPU z[{i}][{k}]"
                );
            }
        }
    }
    let report = certify_default(&mut rt, &dbl::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
}

#[test]
fn a_device_without_f64_refuses_f64_kernels_by_name() {
    let mut rt = ForgeRuntime::builder()
        .capacity(64 << 20)
        .without_feature(Feature::F64)
        .build()
        .unwrap();
    assert!(!rt.supports(Feature::F64));
    let err = rt.dbl(&[1.0], &[[1.0, 2.0]], 1, 1.0).unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::MissingFeature {
                feature: "SHADER_F64",
                kernel: "dbl",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("`f64` values"), "{err}");
}

// ---- packed 4x8-bit dot products --------------------------------------------------------

/// `dot4_i8_packed` and `dot4_u8_packed`, WGSL's `dot4I8Packed` and `dot4U8Packed`: the
/// integer dot products that quantised kernels (int8 activations) are built on.
#[forge_kernel(threads = n)]
pub fn packed_dots(
    a: &[u32; n],
    b: &[u32; n],
    #[out] s: &mut [i32; n],
    #[out] u: &mut [u32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        s[i] = dot4_i8_packed(a[i], b[i]);
        u[i] = dot4_u8_packed(a[i], b[i]) + dot4_u8_packed(b[i], 0x01010101);
    }
}

/// The same from the definition, byte by byte.
fn packed_dots_reference(a: &[u32], b: &[u32]) -> (Vec<i32>, Vec<u32>) {
    let bytes = |w: u32| w.to_le_bytes();
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let (bx, by) = (bytes(x), bytes(y));
            let signed = (0..4)
                .map(|j| bx[j] as i8 as i32 * by[j] as i8 as i32)
                .sum::<i32>();
            let unsigned = (0..4).map(|j| bx[j] as u32 * by[j] as u32).sum::<u32>()
                + by.iter().map(|&v| v as u32).sum::<u32>();
            (signed, unsigned)
        })
        .unzip()
}

#[test]
fn packed_dot_products_follow_their_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(35);
    let mut rt = rt();
    for n in SIZES {
        // Random words, and the extremes: every byte -128, 127, 255 or 0.
        let edge = [0x8080_8080u32, 0x7f7f_7f7f, 0xffff_ffff, 0];
        let a: Vec<u32> = (0..n)
            .map(|i| if i < 4 { edge[i] } else { rng.gen() })
            .collect();
        let b: Vec<u32> = (0..n)
            .map(|i| if i < 4 { edge[i % 2] } else { rng.gen() })
            .collect();
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, packed_dots, n, (&a, &b, n as u32));
        let want = packed_dots_reference(&a, &b);
        assert_eq!(cpu, want, "oracle, n = {n}");
        assert_eq!(gpu, want, "GPU, n = {n}");
    }
}

#[test]
fn completeness_kernels_certify() {
    let mut rt = rt();
    for kernel in [
        &math2::Kernel as &dyn Kernel,
        &vec_ops::Kernel,
        &classify::Kernel,
        &packed_dots::Kernel,
    ] {
        let report = certify_default(&mut rt, kernel, &CertOptions::default()).unwrap();
        assert!(report.passed(), "{}: {:?}", kernel.name(), report.failures);
    }
}
