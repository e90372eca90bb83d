//! Cooperative matrices: `CoopA<f16>`, `CoopB<f16>`, `CoopC<f32>`, their loads and stores
//! (row- and column-major, from bindings and workgroup memory) and `a.mul_add(b, c)`. The
//! oracle against an f64 reference on random data; the GPU against the oracle where the
//! adapter has `EXPERIMENTAL_COOPERATIVE_MATRIX`, and the runtime's `MissingFeature`
//! where it has not (lavapipe); the WGSL form naga 30 needs; the CUDA form (tensor-core
//! `mma.sync`, which `tests/cuda_runtime.rs` runs on the H200). The kernels are in
//! `tests/coop_kernels`; `coop_tile` holds its matrices in helpers too.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;

mod common;
mod coop_kernels;
use common::rt;
use coop_kernels::*;

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
    // CUDA: the fragments of `mma.sync.m16n8k16`, loaded by `ldmatrix` where rows allow.
    let cuda = coop_tile::Kernel
        .cuda(&coop_tile::DEFAULT_SCHEDULE)
        .unwrap();
    for needle in [
        "fg_coop_load_a<true, 0>(",
        "fg_coop_load_b<false, 0>(",
        "fg_coop_mul_add(",
        "fg_coop_store<true>(",
        "fg_coop_store<false>(",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "ldmatrix.sync.aligned.m8n8.x4",
        "__shared__ __align__(16)",
    ] {
        assert!(cuda.contains(needle), "{needle} in\n{cuda}");
    }
}

/// The CUDA emitter proves where a tile's rows start (`emit_cuda::align`): in the built-ins,
/// every fragment load from workgroup memory is proved to start its rows on 16 bytes, at
/// every schedule, so it takes `ldmatrix` with no test at run time (`LDSM` 2); a load whose
/// stride is a parameter keeps the test (1), and a load from a binding never takes it (0).
#[test]
fn the_cuda_emitter_proves_the_built_ins_fragment_rows_aligned() {
    use wgsl_forge::kernels::{
        attention::attention, attention::attention_rows, gemm_f16::gemm_f16,
    };
    let kernels: [&dyn Kernel; 3] = [
        &gemm_f16::Kernel,
        &attention::Kernel,
        &attention_rows::Kernel,
    ];
    for kernel in kernels {
        for schedule in kernel.tune_space().candidates() {
            let cuda = kernel.cuda(&schedule).unwrap();
            let loads: Vec<&str> = cuda
                .split("fg_coop_load_")
                .skip(1)
                .filter(|call| call.starts_with("a<") || call.starts_with("b<"))
                .collect();
            assert!(!loads.is_empty(), "{} at {schedule}", kernel.name());
            for call in loads {
                let args = &call[..call.find('>').unwrap()];
                assert!(
                    args.ends_with(", 2"),
                    "{} at {schedule}: fg_coop_load_{args}",
                    kernel.name()
                );
            }
        }
    }
    // `coop_layouts` reads workgroup memory at a stride given at run time.
    let cuda = coop_layouts::Kernel
        .cuda(&coop_layouts::DEFAULT_SCHEDULE)
        .unwrap();
    assert!(cuda.contains("fg_coop_load_a<true, 1>(("), "{cuda}");
    assert!(cuda.contains("fg_coop_load_a<true, 0>(("), "{cuda}");
}

/// Random `f16` operands for `coop_layouts` with stride `s`, and an `f32` accumulator.
fn layouts_inputs(rng: &mut ChaCha8Rng, s: usize) -> (Vec<f16>, Vec<f16>, Vec<f32>) {
    let c = (0..16 * s).map(|_| rng.gen_range(-4.0f32..4.0)).collect();
    (
        random_f16(rng, 16 * s + 16),
        random_f16(rng, 16 * s + 16),
        c,
    )
}

/// Two 16-deep steps at most, whose sums stay under 140: the kernel's tolerance (1e-3
/// absolute and relative) is a few hundred f32 ulps there, for tensor cores' rounding
/// inside a step, while an element from the wrong place is off by units.
fn assert_layouts(got: &(Vec<f32>, Vec<f16>), want: &(Vec<f32>, Vec<f16>), what: &str) {
    for (i, (g, w)) in got.0.iter().zip(&want.0).enumerate() {
        assert!(
            (g - w).abs() <= 1e-3 + 1e-3 * w.abs(),
            "{what}: out[{i}] (tile {}) {g} vs {w}",
            i / 256
        );
    }
    assert_eq!(got.1, want.1, "{what}: the stored operands");
}

#[test]
fn every_layout_of_the_oracle_matches_its_definition() {
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    for s in [16usize, 17, 24] {
        let (a, b, c) = layouts_inputs(&mut rng, s);
        let got = coop_layouts::cpu(&a, &b, &c, s as u32).unwrap();
        let want = coop_layouts_reference(&a, &b, &c, s as u32).unwrap();
        assert_layouts(&got, &want, &format!("oracle, s = {s}"));
    }
    // The workgroup arrays hold 16 rows of `MAX_STRIDE`: a larger stride is out of bounds.
    let s = MAX_STRIDE as usize + 8;
    let (a, b, c) = layouts_inputs(&mut rng, s);
    assert!(coop_layouts::cpu(&a, &b, &c, s as u32).is_err());
}

#[test]
fn every_layout_on_the_gpu_matches_the_oracle_where_the_adapter_has_them() {
    let mut rt = rt();
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    for s in [16usize, 17, 24] {
        let (a, b, c) = layouts_inputs(&mut rng, s);
        let got = coop_layouts::run(&mut rt, &a, &b, &c, s as u32);
        if !rt.supports(Feature::CooperativeMatrix) {
            assert!(
                matches!(got, Err(ForgeError::MissingFeature { .. })),
                "{got:?}"
            );
            continue;
        }
        let want = coop_layouts::cpu(&a, &b, &c, s as u32).unwrap();
        assert_layouts(&got.unwrap(), &want, &format!("gpu, s = {s}"));
    }
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

/// Random tiles and flags for `coop_vote`: every third tile has no flag set, the others one
/// or more.
fn vote_inputs(rng: &mut ChaCha8Rng, tiles: usize) -> (Vec<f32>, Vec<u32>) {
    let c = (0..tiles * 256)
        .map(|_| rng.gen_range(-4.0f32..4.0))
        .collect();
    let mut flags = vec![0u32; tiles * 32];
    for t in (0..tiles).filter(|t| t % 3 != 1) {
        for _ in 0..rng.gen_range(1..4) {
            flags[t * 32 + rng.gen_range(0..32)] = 1;
        }
    }
    (c, flags)
}

/// Cooperative-matrix operations under a subgroup's vote, with the two subgroups of a
/// workgroup voting apart: the oracle (its race checker on) against the definition, and
/// the GPU against the oracle where the adapter has cooperative matrices.
#[test]
fn cooperative_matrices_run_under_a_subgroups_vote() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let mut rt = rt();
    for tiles in [1usize, 2, 3, 5, 8] {
        let (c, flags) = vote_inputs(&mut rng, tiles);
        let want = coop_vote_reference(&c, &flags, tiles as u32).unwrap();
        let opts = OracleOptions::default().with_race_detection(true);
        let sch = coop_vote::DEFAULT_SCHEDULE;
        let got = coop_vote::cpu_with_options(&sch, &opts, &c, &flags, tiles as u32).unwrap();
        assert_eq!(got, want, "oracle, {tiles} tiles");
        let gpu = coop_vote::run(&mut rt, &c, &flags, tiles as u32);
        if rt.supports(Feature::CooperativeMatrix) {
            assert_eq!(gpu.unwrap(), want, "gpu, {tiles} tiles");
        } else {
            assert!(
                matches!(gpu, Err(ForgeError::MissingFeature { .. })),
                "{gpu:?}"
            );
        }
    }
    // The WGSL turns naga's check of workgroup uniformity off, as `check` made its own.
    assert!(coop_vote::WGSL.contains("diagnostic(off, derivative_uniformity);"));
    assert!(!coop_tile::WGSL.contains("diagnostic("));
}

/// Random scores for `coop_rows`, in `[-8, 8)`, and `v` in `f16`.
fn rows_inputs(rng: &mut ChaCha8Rng, tiles: usize) -> (Vec<f32>, Vec<f16>) {
    let x = (0..tiles * 512)
        .map(|_| rng.gen_range(-8.0f32..8.0))
        .collect();
    (x, random_f16(rng, 512))
}

fn assert_rows_near(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-3 + 2e-3 * w.abs(),
            "{what}[{i}] (tile {}, row {}): {g} vs {w}",
            i / 512,
            i % 512 / 32
        );
    }
}

/// An accumulator's rows (`c.row_max()`, `c.exp2_rows(..)`, `c.to_a()`, `CoopRow`'s
/// arithmetic, ...) in a masked softmax and its product with `v`: the oracle (race checker
/// on) against an `f64` reference at masks that cut rows at different columns, and the
/// GPU against the oracle where the adapter has cooperative matrices.
#[test]
fn an_accumulators_rows_make_a_softmax() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let mut rt = rt();
    let opts = OracleOptions::default().with_race_detection(true);
    let sch = coop_rows::DEFAULT_SCHEDULE;
    for (tiles, first, step, scale) in [
        (1usize, 5, 1, 0.5f32),
        (2, 20, -1, 0.25),
        (3, 40, 0, 1.5),
        (5, 1, 2, 1.0),
    ] {
        let (x, v) = rows_inputs(&mut rng, tiles);
        let t = tiles as u32;
        let want = coop_rows_reference(&x, &v, t, first, step, scale).unwrap();
        let got = coop_rows::cpu_with_options(&sch, &opts, &x, &v, t, first, step, scale).unwrap();
        let what = format!("oracle, {tiles} tiles, first {first}, step {step}");
        assert_rows_near(&got.0, &want.0, &format!("{what}: probs"));
        assert_rows_near(&got.1, &want.1, &format!("{what}: pv"));
        assert_rows_near(&got.2, &want.2, &format!("{what}: rows"));
        let gpu = coop_rows::run(&mut rt, &x, &v, t, first, step, scale);
        if rt.supports(Feature::CooperativeMatrix) {
            let gpu = gpu.unwrap();
            assert_rows_near(&gpu.0, &got.0, &format!("gpu {what}: probs"));
            assert_rows_near(&gpu.1, &got.1, &format!("gpu {what}: pv"));
            assert_rows_near(&gpu.2, &got.2, &format!("gpu {what}: rows"));
        } else {
            assert!(
                matches!(gpu, Err(ForgeError::MissingFeature { .. })),
                "{gpu:?}"
            );
        }
    }
}

/// The forms of the row operations: WGSL's through each subgroup's scratch of workgroup
/// memory (a `f16` one for `to_a`), with the subgroup's builtins read; CUDA's in the
/// registers of `mma.sync`'s fragments, with no workgroup memory of their own.
#[test]
fn row_operations_have_their_forms_on_each_backend() {
    let wgsl = coop_rows::WGSL;
    for needle in [
        "var<workgroup> fg_rows: array<f32, (WG + 31u) / 32u * 256u>;",
        "var<workgroup> fg_rows_h: array<f16, (WG + 31u) / 32u * 256u>;",
        "fn fg_row_max(",
        "fn fg_row_sum(",
        "fn fg_mask_from(",
        "fn fg_exp2_rows(",
        "fn fg_scale_rows(",
        "fn fg_to_a(",
        "@builtin(subgroup_id)",
        "@builtin(subgroup_invocation_id)",
        "subgroupShuffle(m, r)",
    ] {
        assert!(wgsl.contains(needle), "{needle} in\n{wgsl}");
    }
    let cuda = coop_rows::Kernel
        .cuda(&coop_rows::DEFAULT_SCHEDULE)
        .unwrap();
    for needle in [
        "fg_coop_row_reduce(",
        "fg_coop_mask_from(",
        "fg_coop_exp2_rows(",
        "fg_coop_scale_rows(",
        "fg_coop_to_a(",
        "fg_coop_row_zip(",
        "fg_coop_r m = ",
    ] {
        assert!(cuda.contains(needle), "{needle} in\n{cuda}");
    }
    assert!(!cuda.contains("fg_rows"), "{cuda}");
    // naga's SPIR-V writer takes the row functions' stores and loads.
    let spirv = wgsl_forge::emit::emit(
        &coop_rows::Kernel,
        &coop_rows::DEFAULT_SCHEDULE,
        wgsl_forge::emit::Target::Spirv,
    );
    assert!(spirv.is_ok(), "{spirv:?}");
}
