//! `attention` and `attention_rows` (cooperative matrices, `f16`) and `attention_f32` (the
//! fallback): the oracles of the cooperative kernels and the GPU through `rt.attention` against an independent f64
//! reference over random data, causal and not, at one key, at sequence lengths that are not
//! multiples of any block, at every head dimension the kernels take, and with large logits
//! (the online softmax must not overflow); certification at every schedule (the cooperative
//! kernel where the adapter has the feature, else its `MissingFeature`); bad input as errors.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::kernels::attention::{
    attention, attention_f32, attention_reference, attention_rows,
};
use wgsl_forge::prelude::*;

/// A cooperative kernel's oracle at a schedule, with options: `cpu_with_options`.
type CoopOracle = fn(
    &Schedule,
    &OracleOptions,
    &[[f16; 8]],
    &[[f16; 8]],
    &[[f16; 8]],
    u32,
    u32,
    u32,
    u32,
    f32,
) -> Result<Vec<[f16; 8]>, ForgeError>;

/// The two kernels on cooperative matrices, with their oracles.
fn coop_kernels() -> [(&'static dyn Kernel, CoopOracle); 2] {
    [
        (&attention::Kernel, attention::cpu_with_options),
        (&attention_rows::Kernel, attention_rows::cpu_with_options),
    ]
}

/// A kernel's declared schedule and every schedule of its tuning space.
fn every_schedule(kern: &dyn Kernel) -> Vec<Schedule> {
    std::iter::once(kern.default_schedule())
        .chain(kern.tune_space().candidates())
        .collect()
}

fn runtime() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never pass silently.
    ForgeRuntime::new(512 << 20, None).expect("a GPU adapter (lavapipe in CI)")
}

fn uniform(rng: &mut ChaCha8Rng, n: usize, r: f32) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-r..r)).collect()
}

fn halves(v: &[f32]) -> Vec<f16> {
    v.iter().map(|x| f16::from_f32(*x)).collect()
}

/// Rows of halves as the cooperative kernels take them: `HVec8`s (`d` is a multiple of 16).
fn octets(x: &[f16]) -> Vec<[f16; 8]> {
    x.chunks(8).map(|c| std::array::from_fn(|i| c[i])).collect()
}

fn floats(v: &[f16]) -> Vec<f32> {
    v.iter().map(|x| x.to_f32()).collect()
}

/// Outputs are weighted means of `V`'s rows: within `tol` of the reference, scaled by the
/// largest `|V|`.
fn assert_close(what: &str, got: &[f32], want: &[f32], v: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let vmax = v.iter().fold(0f32, |a, x| a.max(x.abs())).max(1.0);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * vmax,
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

/// (b·h, s, d, causal, input range): one key, one block, ragged lengths, every `d`.
const SHAPES: [(u32, u32, u32, u32, f32); 7] = [
    (1, 1, 16, 0, 1.0),
    (1, 16, 16, 1, 1.0),
    (2, 37, 64, 0, 1.0),
    (2, 37, 64, 1, 1.0),
    (1, 33, 128, 1, 1.0),
    (3, 50, 48, 0, 1.0),
    // Logits up to ±64·4²·0.125·... : the maximum must be subtracted before exponentials.
    (1, 40, 64, 1, 4.0),
];

#[test]
fn the_cooperative_oracle_matches_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    for (bh, s, d, causal, r) in SHAPES {
        let n = (bh * s * d) as usize;
        let (q, k, v) = (
            halves(&uniform(&mut rng, n, r)),
            halves(&uniform(&mut rng, n, r)),
            halves(&uniform(&mut rng, n, r)),
        );
        let scale = 1.0 / (d as f32).sqrt();
        let (qf, kf, vf) = (floats(&q), floats(&k), floats(&v));
        let want = attention_reference(&qf, &kf, &vf, bh, s, d, causal, scale).unwrap();
        let opts = OracleOptions::default();
        let (q8, k8, v8) = (octets(&q), octets(&k), octets(&v));
        for (kern, cpu) in coop_kernels() {
            for sch in every_schedule(kern) {
                let got = cpu(&sch, &opts, &q8, &k8, &v8, bh, s, d, causal, scale).unwrap();
                let got: Vec<f16> = got.as_flattened().to_vec();
                // f16 output and f16 probabilities: a few f16 ulps of |V|.
                assert_close(
                    &format!(
                        "{} oracle {bh}x{s}x{d} causal={causal} at {sch}",
                        kern.name()
                    ),
                    &floats(&got),
                    &want,
                    &vf,
                    2e-3,
                );
            }
        }
    }
}

/// The oracle's race checker at every schedule, the declared one included: the rescale's
/// round trips through `so` and the scores through `sx` and `sp` are ordered by barriers, at
/// a head dimension that takes one round trip (`d = 32`) and one that takes several
/// (`d = 128` at `OF` 2 and 4), causal and not.
#[test]
fn the_cooperative_kernel_has_no_race_at_any_schedule() {
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let opts = OracleOptions::default().with_race_detection(true);
    for (bh, s, d, causal) in [(2u32, 37u32, 32u32, 1u32), (1, 40, 128, 0)] {
        let n = (bh * s * d) as usize;
        let octets_of = |rng: &mut ChaCha8Rng| octets(&halves(&uniform(rng, n, 1.0)));
        let (q, k, v) = (
            octets_of(&mut rng),
            octets_of(&mut rng),
            octets_of(&mut rng),
        );
        for (kern, cpu) in coop_kernels() {
            for sch in every_schedule(kern) {
                let scale = 1.0 / (d as f32).sqrt();
                if let Err(e) = cpu(&sch, &opts, &q, &k, &v, bh, s, d, causal, scale) {
                    panic!("{} {bh}x{s}x{d} causal={causal} at {sch}: {e}", kern.name());
                }
            }
        }
    }
}

/// Scores that climb block after block (and fall, and jump): the running maximum moves by
/// more than the kernel's slack at some blocks and not at others, so the accumulators are
/// rescaled at some blocks only, in some subgroups' rows and not others'.
#[test]
fn the_cooperative_oracle_matches_the_reference_when_the_maximum_moves() {
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let (bh, s, d) = (2u32, 150u32, 32u32);
    let n = (bh * s * d) as usize;
    // Row `j` of K is a random unit-ish direction times a profile of `j`: climbing in head
    // 0, a sawtooth in head 1; Q's rows share that direction, so a score follows its key's
    // profile, up to ~40 in log2 units.
    let dir = uniform(&mut rng, d as usize, 1.0);
    let profile = |h: u32, j: u32| -> f32 {
        match h {
            0 => j as f32 / 12.0,
            _ => ((j % 37) as f32 - 18.0) / 3.0,
        }
    };
    let mut k = vec![0f32; n];
    let mut q = vec![0f32; n];
    for h in 0..bh {
        for j in 0..s {
            let at = ((h * s + j) * d) as usize;
            for c in 0..d as usize {
                k[at + c] = dir[c] * profile(h, j) + rng.gen_range(-0.05..0.05);
                q[at + c] = dir[c] * (1.0 + rng.gen_range(-0.1..0.1));
            }
        }
    }
    let v = uniform(&mut rng, n, 1.0);
    let (q, k, v) = (halves(&q), halves(&k), halves(&v));
    let (qf, kf, vf) = (floats(&q), floats(&k), floats(&v));
    for causal in [0, 1] {
        let scale = 1.0;
        let want = attention_reference(&qf, &kf, &vf, bh, s, d, causal, scale).unwrap();
        let opts = OracleOptions::default();
        let (q8, k8, v8) = (octets(&q), octets(&k), octets(&v));
        for (kern, cpu) in coop_kernels() {
            for sch in every_schedule(kern) {
                let got = cpu(&sch, &opts, &q8, &k8, &v8, bh, s, d, causal, scale).unwrap();
                assert_close(
                    &format!(
                        "{} oracle, moving maximum, causal={causal} at {sch}",
                        kern.name()
                    ),
                    &floats(got.as_flattened()),
                    &want,
                    &vf,
                    2e-3,
                );
            }
        }
    }
}

/// Scales of either sign, zero and a NaN: `attention_rows` folds the scale into its
/// exponentials and negates `Q` where the scale is negative (its row maxima are of raw
/// scores), and takes a zero scale as the least normal float; the results must be the
/// definition's at every schedule, and a NaN scale must give NaNs, not a finite result.
#[test]
fn the_cooperative_oracle_matches_the_reference_at_any_scale() {
    let mut rng = ChaCha8Rng::seed_from_u64(35);
    let (bh, s, d) = (2u32, 40u32, 32u32);
    let n = (bh * s * d) as usize;
    let (q, k, v) = (
        halves(&uniform(&mut rng, n, 2.0)),
        halves(&uniform(&mut rng, n, 2.0)),
        halves(&uniform(&mut rng, n, 1.0)),
    );
    let (qf, kf, vf) = (floats(&q), floats(&k), floats(&v));
    let (q8, k8, v8) = (octets(&q), octets(&k), octets(&v));
    let opts = OracleOptions::default();
    for scale in [-0.7f32, -0.0, 0.0, 0.3, 2.5, f32::NAN] {
        for causal in [0, 1] {
            let want = attention_reference(&qf, &kf, &vf, bh, s, d, causal, scale).unwrap();
            for (kern, cpu) in coop_kernels() {
                for sch in every_schedule(kern) {
                    let got = cpu(&sch, &opts, &q8, &k8, &v8, bh, s, d, causal, scale).unwrap();
                    let got = floats(got.as_flattened());
                    let what = format!("{} scale={scale} causal={causal} at {sch}", kern.name());
                    if scale.is_nan() {
                        assert!(got.iter().all(|x| x.is_nan()), "{what}: not all NaN");
                    } else {
                        assert_close(&what, &got, &want, &vf, 2e-3);
                    }
                }
            }
        }
    }
}

#[test]
fn rt_attention_matches_the_reference_on_this_adapter() {
    let mut rt = runtime();
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    for (bh, s, d, causal, r) in SHAPES {
        let n = (bh * s * d) as usize;
        let (q, k, v) = (
            halves(&uniform(&mut rng, n, r)),
            halves(&uniform(&mut rng, n, r)),
            halves(&uniform(&mut rng, n, r)),
        );
        // b·h split as b = bh, h = 1: the method flattens them again.
        let (b, sz, dz) = (bh as usize, s as usize, d as usize);
        let got = rt.attention(&q, &k, &v, b, 1, sz, dz, causal == 1).unwrap();
        let (qf, kf, vf) = (floats(&q), floats(&k), floats(&v));
        let scale = 1.0 / (d as f32).sqrt();
        let want = attention_reference(&qf, &kf, &vf, bh, s, d, causal, scale).unwrap();
        assert_close(
            &format!("gpu {bh}x{s}x{d} causal={causal}"),
            &floats(&got),
            &want,
            &vf,
            2e-3,
        );
    }
}

#[test]
fn the_fallback_on_the_gpu_matches_the_reference_in_f32() {
    let mut rt = runtime();
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    for (bh, s, d, causal, r) in SHAPES {
        let n = (bh * s * d) as usize;
        let (q, k, v) = (
            uniform(&mut rng, n, r),
            uniform(&mut rng, n, r),
            uniform(&mut rng, n, r),
        );
        let scale = 1.0 / (d as f32).sqrt();
        let got = attention_f32::run(&mut rt, &q, &k, &v, bh, s, d, causal, scale).unwrap();
        let want = attention_reference(&q, &k, &v, bh, s, d, causal, scale).unwrap();
        assert_close(
            &format!("fallback {bh}x{s}x{d} causal={causal}"),
            &got,
            &want,
            &v,
            1e-5,
        );
    }
}

#[test]
fn every_schedule_certifies_or_names_the_missing_feature() {
    let mut rt = runtime();
    for kernel in [
        &attention::Kernel as &dyn Kernel,
        &attention_rows::Kernel,
        &attention_f32::Kernel,
    ] {
        if let Some(why) = rt.cannot_run(kernel) {
            assert_ne!(kernel.name(), "attention_f32", "{why}");
            assert!(why.contains("EXPERIMENTAL_COOPERATIVE_MATRIX"), "{why}");
            continue;
        }
        for s in kernel.tune_space().candidates() {
            // A schedule past this adapter's workgroup memory is refused by name, and skipped.
            if let Err(why) = rt.check_schedule(kernel, &s) {
                assert!(
                    why.to_string()
                        .contains("max_compute_workgroup_storage_size"),
                    "{why}"
                );
                continue;
            }
            let report = certify(&mut rt, kernel, &s, &CertOptions::default()).unwrap();
            assert!(
                report.passed(),
                "{} at {s}: {:?}",
                kernel.name(),
                report.failures
            );
        }
    }
}

#[test]
fn bad_shapes_are_errors() {
    let mut rt = runtime();
    let x = vec![f16::ZERO; 2 * 16];
    // d not a multiple of 16.
    let odd = [f16::ZERO; 2 * 24];
    for d in [8usize, 24] {
        let y = &odd[..2 * d];
        let e = rt.attention(y, y, y, 1, 1, 2, d, false).unwrap_err();
        assert!(matches!(e, ForgeError::InvalidArgument { .. }), "{e}");
    }
    let big = vec![f16::ZERO; 144];
    let e = rt
        .attention(&big, &big, &big, 1, 1, 1, 144, false)
        .unwrap_err();
    assert!(e.to_string().contains("up to 128"), "{e}");
    // A zero dimension.
    let e = rt.attention(&[], &[], &[], 0, 1, 2, 16, false).unwrap_err();
    assert!(matches!(e, ForgeError::EmptyWork { .. }), "{e}");
    // A slice of the wrong length names it.
    let e = rt
        .attention(&x, &x[..16], &x, 1, 1, 2, 16, true)
        .unwrap_err();
    match e {
        ForgeError::LengthMismatch {
            arg,
            expected,
            actual,
            ..
        } => assert_eq!((arg, expected, actual), ("k", 32, 16)),
        e => panic!("expected LengthMismatch, got {e}"),
    }
    // b·h past u32.
    let e = rt
        .attention(&x, &x, &x, 1 << 20, 1 << 20, 1, 16, false)
        .unwrap_err();
    assert!(matches!(e, ForgeError::InvalidArgument { .. }), "{e}");
}
