//! The remaining built-ins, `topk` and `fft`, on a real adapter through their runtime
//! methods: top-k against a sort of the input in `f64` with torch's order (NaN largest,
//! `-inf`, duplicates, signed zeros, tail blocks shorter than `k`, past 65535 workgroups, a
//! global top-k over several passes), FFTs against `rustfft` at lengths from 1 to 2^20,
//! batched and inverse; every schedule of each kernel against its oracle; bad inputs as
//! errors.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustfft::{num_complex::Complex, FftPlanner};
use std::cmp::Ordering;
use wgsl_forge::kernels::{
    fft::{fft_pass, fft_pass16, fft_pass_reference, fft_record_plan, FftPlan},
    topk::topk_select,
};
use wgsl_forge::prelude::*;

fn runtime() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never pass silently.
    ForgeRuntime::new(1 << 30, None).expect("a GPU adapter (lavapipe in CI)")
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

// ---- topk ----------------------------------------------------------------------------

/// Values with the hard cases mixed in: NaN (with a payload and a sign), ±inf, ±0 and
/// many duplicates.
fn nasty(r: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match r.gen_range(0..20) {
            0 => f32::NAN,
            1 => f32::from_bits(0xffc0_1234), // a negative NaN with a payload
            2 => f32::NEG_INFINITY,
            3 => f32::INFINITY,
            4 => 0.0,
            5 => -0.0,
            6..=9 => r.gen_range(-4..4) as f32, // duplicates
            _ => r.gen_range(-1e3f32..1e3),
        })
        .collect()
}

/// Torch's order on CUDA: NaN above everything (all NaNs equal), `+0.0` above `-0.0`,
/// otherwise the order of the `f64` values. `Less` means `a` comes first (is larger).
fn torch_cmp(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => (b as f64)
            .partial_cmp(&(a as f64))
            .unwrap()
            .then(a.is_sign_negative().cmp(&b.is_sign_negative())),
    }
}

/// The top `k` of `x[range]` as (value, index in `x`), ties by lower index, by sorting.
fn sorted_top(x: &[f32], range: std::ops::Range<usize>, k: usize) -> Vec<(f32, usize)> {
    let mut idx: Vec<usize> = range.collect();
    idx.sort_by(|&i, &j| torch_cmp(x[i], x[j]).then(i.cmp(&j)));
    idx.truncate(k);
    idx.into_iter().map(|i| (x[i], i)).collect()
}

/// Block top-k by sorting each block; padding is `(-inf, u32::MAX)`.
fn blocks_reference(x: &[f32], k: usize, block: usize) -> (Vec<f32>, Vec<u32>) {
    let (mut v, mut ix) = (Vec::new(), Vec::new());
    for start in (0..x.len()).step_by(block) {
        let top = sorted_top(x, start..(start + block).min(x.len()), k);
        for i in 0..k {
            match top.get(i) {
                Some(&(val, at)) => {
                    v.push(val);
                    ix.push((at - start) as u32);
                }
                None => {
                    v.push(f32::NEG_INFINITY);
                    ix.push(TOPK_PAD_INDEX);
                }
            }
        }
    }
    (v, ix)
}

/// Values must match bit for bit: NaN payloads and the sign of zero are kept.
fn assert_bits(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{what}: element {i} is {g}, expected {w}"
        );
    }
}

#[test]
fn topk_seed_examples() {
    let mut rt = runtime();
    assert_eq!(
        rt.topk(&[3.0, 9.0, 1.0, 7.0, 5.0], 3).unwrap(),
        vec![9.0, 7.0, 5.0]
    );
    assert_eq!(rt.topk(&[5.0, 1.0, 9.0, 2.0], 2).unwrap(), vec![9.0, 5.0]);
}

#[test]
fn topk_blocks_match_a_sort_with_torch_order() {
    let mut rt = runtime();
    let mut r = rng(10);
    // (n, block, k): single elements, the seed's block, blocks that are not powers of two,
    // k = block, k = 1, the largest block, and tail blocks shorter than k.
    for (n, block, k) in [
        (1, 1, 1),
        (5, 64, 3),
        (1000, 64, 8),
        (4096, 64, 64),
        (1000, 100, 7),
        (777, 13, 13),
        (3000, 1024, 1000),
        (2049, 1024, 5),
        (65, 64, 64),
        (130, 64, 10),
        (999, 3, 2),
        (12345, 1000, 1),
        (5000, 257, 129),
    ] {
        let x = nasty(&mut r, n);
        let (want_v, want_i) = blocks_reference(&x, k, block);
        let (got_v, got_i) = rt.topk_with_indices(&x, k, block).unwrap();
        let what = format!("topk n={n} block={block} k={k}");
        assert_bits(&what, &got_v, &want_v);
        assert_eq!(got_i, want_i, "{what}: indices");
        assert_bits(&what, &rt.topk_blocks(&x, k, block).unwrap(), &want_v);
        if block == 64 {
            assert_bits(&what, &rt.topk(&x, k).unwrap(), &want_v);
        }
    }
}

#[test]
fn topk_orders_nan_inf_and_zeros_as_torch_does() {
    let mut rt = runtime();
    let nan = f32::NAN;
    let x = [
        1.0,
        nan,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        f32::INFINITY,
        nan,
        -0.0,
    ];
    let (v, i) = rt.topk_with_indices(&x, 8, 8).unwrap();
    assert_eq!(i, vec![1, 6, 5, 0, 4, 3, 7, 2]);
    assert!(v[0].is_nan() && v[1].is_nan());
    assert_eq!(
        v[2..],
        [f32::INFINITY, 1.0, 0.0, -0.0, -0.0, f32::NEG_INFINITY]
    );
    assert!(v[5].is_sign_negative() && !v[4].is_sign_negative());
    // A tail of one `-inf` with k = 3: the real `-inf` first, then padding.
    let inf = f32::INFINITY;
    let (v, i) = rt.topk_with_indices(&[5.0, 6.0, 7.0, -inf], 3, 3).unwrap();
    assert_eq!(v, vec![7.0, 6.0, 5.0, -inf, -inf, -inf]);
    assert_eq!(i, vec![2, 1, 0, 0, TOPK_PAD_INDEX, TOPK_PAD_INDEX]);
}

#[test]
fn topk_every_schedule_gives_the_same_result() {
    let mut rt = runtime();
    let mut r = rng(11);
    for (n, b, k, chained) in [
        (1000u32, 64u32, 8, 0),
        (777, 13, 13, 0),
        (3000, 1024, 900, 0),
        (5000, 2048, 100, 1),
    ] {
        let x = nasty(&mut r, n as usize);
        let ids: Vec<u32> = if chained == 1 {
            (0..n).map(|i| i * 3).collect()
        } else {
            vec![0]
        };
        let p = b.next_power_of_two();
        let oracle = topk_select::cpu(&x, &ids, n, b, k, p, chained, 0).unwrap();
        let reference =
            wgsl_forge::kernels::topk::topk_select_reference(&x, &ids, n, b, k, p, chained, 0)
                .unwrap();
        assert_bits(
            &format!("oracle vs reference n={n}"),
            &oracle.0,
            &reference.0,
        );
        assert_eq!(oracle.1, reference.1);
        for s in topk_select::Kernel.tune_space().candidates() {
            let cpu = topk_select::cpu_with(&s, &x, &ids, n, b, k, p, chained, 0).unwrap();
            assert_bits(&format!("oracle at {s}, n={n}"), &cpu.0, &oracle.0);
            assert_eq!(cpu.1, oracle.1, "oracle at {s}, n={n}");
            let gpu = topk_select::run_with(&mut rt, &s, &x, &ids, n, b, k, p, chained, 0).unwrap();
            assert_bits(&format!("gpu at {s}, n={n}"), &gpu.0, &oracle.0);
            assert_eq!(gpu.1, oracle.1, "gpu at {s}, n={n}");
        }
    }
}

#[test]
fn topk_rows_every_schedule_matches_oracle_and_reference() {
    use wgsl_forge::kernels::topk::{topk_rows, topk_rows_reference};
    let mut rt = runtime();
    let mut r = rng(14);
    // (n, block, k, local): the seed's shape, blocks that are not multiples of four (loads
    // straddle blocks), a short tail block, k = 1.
    // Blocks of a multiple of four take the staged path at `STAGE = 1`: a last round only
    // partly inside the block (36 is nine `Vec4`s), several rounds (256), blocks smaller
    // than a round (4), a tail of three values (4099), a last workgroup only partly filled
    // with blocks.
    // The last two draw from a hundred adjacent floats: keys that differ only in the low
    // bits, which the packed fast path cannot tell apart, so the exact path must run.
    for (n, b, k, local, adjacent) in [
        (4096u32, 64u32, 8u32, 1u32, false),
        (1003, 8, 8, 1, false),
        (777, 13, 5, 0, false),
        (2500, 1000, 1, 1, false),
        (10, 3, 3, 0, false),
        (9001, 36, 5, 1, false),
        (20000, 256, 8, 0, false),
        (1001, 4, 4, 1, false),
        (4099, 64, 8, 0, false),
        (64 * 3001 - 3, 64, 8, 1, false),
        (4096, 64, 8, 1, true),
        (999, 100, 3, 0, true),
    ] {
        let x = if adjacent {
            (0..n)
                .map(|_| f32::from_bits(0x3f80_0000 + r.gen_range(0..100u32)))
                .collect()
        } else {
            nasty(&mut r, n as usize)
        };
        let mut v4: Vec<[f32; 4]> = x
            .chunks(4)
            .map(|c| {
                let mut q = [0.0f32; 4];
                q[..c.len()].copy_from_slice(c);
                q
            })
            .collect();
        if v4.is_empty() {
            v4.push([0.0; 4]);
        }
        let oracle = topk_rows::cpu(&v4, n, b, k, local).unwrap();
        let reference = topk_rows_reference(&v4, n, b, k, local).unwrap();
        let what = format!("rows n={n} b={b} k={k}");
        assert_bits(&what, &oracle.0, &reference.0);
        assert_eq!(oracle.1, reference.1, "{what}");
        for s in topk_rows::Kernel.tune_space().candidates() {
            let gpu = topk_rows::run_with(&mut rt, &s, &v4, n, b, k, local).unwrap();
            assert_bits(&format!("{what} at {s}"), &gpu.0, &oracle.0);
            assert_eq!(gpu.1, oracle.1, "{what} at {s}");
        }
    }
}

#[test]
fn topk_global_radix_levels() {
    // Uniform [0, 1): an eighth of the values share the top key digit, so the select needs
    // a second level; then the same through the index levels: a block of equal values
    // past the first 2048 candidates.
    let mut rt = runtime();
    let mut r = rng(15);
    let x: Vec<f32> = (0..(1 << 20)).map(|_| r.gen_range(0.0f32..1.0)).collect();
    for k in [1, 100, 1024] {
        let want = sorted_top(&x, 0..x.len(), k);
        let (v, i) = rt.topk_global_with_indices(&x, k).unwrap();
        let want_v: Vec<f32> = want.iter().map(|w| w.0).collect();
        let want_i: Vec<u32> = want.iter().map(|w| w.1 as u32).collect();
        assert_bits(&format!("uniform k={k}"), &v, &want_v);
        assert_eq!(i, want_i, "uniform k={k}");
    }
    let mut y = vec![0.5f32; 300_000];
    for (j, v) in y.iter_mut().enumerate().step_by(7) {
        *v = if j % 2 == 0 { 0.75 } else { f32::NAN };
    }
    let want = sorted_top(&y, 0..y.len(), 1000);
    let (v, i) = rt.topk_global_with_indices(&y, 1000).unwrap();
    assert_bits("ties", &v, &want.iter().map(|w| w.0).collect::<Vec<_>>());
    assert_eq!(i, want.iter().map(|w| w.1 as u32).collect::<Vec<_>>());
}

#[test]
fn topk_blocks_past_65535_workgroups() {
    // With 64 invocations and one item each, a workgroup holds one block of 64: 65537
    // blocks need 65537 workgroups, folded into y.
    let mut rt = runtime();
    let mut r = rng(12);
    let n = 64 * 65536 + 40;
    let x: Vec<f32> = (0..n).map(|_| r.gen_range(-1.0f32..1.0)).collect();
    let s = Schedule::new(64, 1, 1);
    let (v, i) = topk_select::run_with(&mut rt, &s, &x, &[0], n as u32, 64, 8, 64, 0, 1).unwrap();
    let (want_v, want_i) = blocks_reference(&x, 8, 64);
    assert_bits("topk past 65535 workgroups", &v, &want_v);
    assert_eq!(i, want_i);
    // And through the method, with the declared schedule.
    assert_bits("topk(x, 8)", &rt.topk(&x, 8).unwrap(), &want_v);
}

#[test]
fn topk_global_matches_a_sort() {
    let mut rt = runtime();
    let mut r = rng(13);
    for (n, k) in [
        (1, 1),
        (5, 5),
        (2048, 100),
        (2049, 1024),
        (5000, 3),
        (100_000, 1000),
        (300_000, 1024),
        (1 << 20, 100),
    ] {
        let x = nasty(&mut r, n);
        let want = sorted_top(&x, 0..n, k);
        let want_v: Vec<f32> = want.iter().map(|w| w.0).collect();
        let want_i: Vec<u32> = want.iter().map(|w| w.1 as u32).collect();
        let (v, i) = rt.topk_global_with_indices(&x, k).unwrap();
        assert_bits(&format!("global n={n} k={k}"), &v, &want_v);
        assert_eq!(i, want_i, "global n={n} k={k}: indices");
        assert_bits(
            &format!("global n={n} k={k}"),
            &rt.topk_global(&x, k).unwrap(),
            &want_v,
        );
    }
    // Many equal values: ties go to the lowest indices, across blocks and passes.
    let x = vec![2.5f32; 10_000];
    let (v, i) = rt.topk_global_with_indices(&x, 1024).unwrap();
    assert_eq!(v, vec![2.5; 1024]);
    assert_eq!(i, (0..1024).collect::<Vec<u32>>());
    // Only `-inf` past the first values: padding never displaces a real `-inf`.
    let mut x = vec![f32::NEG_INFINITY; 4100];
    x[0] = 1.0;
    let (v, i) = rt.topk_global_with_indices(&x, 5).unwrap();
    assert_eq!(
        v,
        vec![
            1.0,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY
        ]
    );
    assert_eq!(i, vec![0, 1, 2, 3, 4]);
}

/// The global top-k of `x` against a sort, values bit for bit and indices.
fn check_global(rt: &mut ForgeRuntime, what: &str, x: &[f32], k: usize) {
    let want = sorted_top(x, 0..x.len(), k);
    let (v, i) = rt.topk_global_with_indices(x, k).unwrap();
    assert_bits(what, &v, &want.iter().map(|w| w.0).collect::<Vec<_>>());
    assert_eq!(
        i,
        want.iter().map(|w| w.1 as u32).collect::<Vec<_>>(),
        "{what}: indices"
    );
}

#[test]
fn topk_global_candidates_in_any_layout() {
    // The full pass marks the elements at or above a floor from a sample; these inputs put
    // the candidates in one chunk of the bitmap (sorted), everywhere (all equal: every
    // element a candidate, every level run), at chunk and `Vec4` edges, and make the floor
    // 0 (fewer sampled elements than `k`).
    let mut rt = runtime();
    let mut r = rng(17);
    let n = 1 << 20;
    let ascending: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 1000.0).collect();
    let descending: Vec<f32> = ascending.iter().rev().copied().collect();
    for k in [1, 100, 1024] {
        check_global(&mut rt, &format!("ascending k={k}"), &ascending, k);
        check_global(&mut rt, &format!("descending k={k}"), &descending, k);
    }
    check_global(&mut rt, "all equal k=1", &vec![-3.5f32; n], 1);
    check_global(&mut rt, "all equal k=777", &vec![-3.5f32; 200_003], 777);
    // Few distinct values: the k-th is tied with a large share of the input.
    let few: Vec<f32> = (0..300_001).map(|_| r.gen_range(0..9) as f32).collect();
    check_global(&mut rt, "few values", &few, 1000);
    // Normal-like data over three chunks and a partial `Vec4`, with the hard values.
    let mut mixed: Vec<f32> = (0..2 * 65536 + 3)
        .map(|_| (0..4).map(|_| r.gen_range(-1.0f32..1.0)).sum::<f32>())
        .collect();
    let hard = nasty(&mut r, 500);
    for (j, h) in hard.into_iter().enumerate() {
        mixed[j * 261] = h;
    }
    for k in [1, 3, 100, 1024] {
        check_global(&mut rt, &format!("mixed k={k}"), &mixed, k);
    }
    // The largest values in the last, partial `Vec4` and at a chunk's last element.
    let mut edge = vec![0.5f32; 65536 + 2];
    edge[65535] = 2.0;
    edge[65537] = 3.0;
    check_global(&mut rt, "edges", &edge, 2);
    // A sample smaller than `k`: the floor is 0 and every element is a candidate.
    let small: Vec<f32> = (0..1500).map(|_| r.gen_range(-1.0f32..1.0)).collect();
    check_global(&mut rt, "small", &small, 1024);
}

#[test]
fn topk_radix_passes_with_real_states() {
    // Certification draws `state` at random, which mostly skips the levels; here every
    // pass of one global top-k runs on the GPU and on the reference with the states the
    // passes really produce, and each must agree with the other.
    use wgsl_forge::kernels::topk::*;
    let mut rt = runtime();
    let mut r = rng(19);
    let n = 3 * 65536 + 5;
    let x: Vec<f32> = (0..n)
        .map(|_| (0..4).map(|_| r.gen_range(-1.0f32..1.0)).sum::<f32>())
        .collect();
    let v4: Vec<[f32; 4]> = x
        .chunks(4)
        .map(|c| {
            let mut q = [0.0f32; 4];
            q[..c.len()].copy_from_slice(c);
            q
        })
        .collect();
    let (n, k, cap, sample) = (n as u32, 100u32, 256u32, 4u32);
    let mut state = vec![0u32; 8];
    let mut hist = vec![0u32; 16384];
    // Level 0 counts one maximum per invocation: 1024 of them (about 12 `Vec4`s each)
    // leave the floor room above `k`.
    let grid = 1024;
    for level in 0..2 {
        let slot = 6 + level;
        let mut want = hist.clone();
        topk_radix_hist_reference(&v4, &state, &mut want, n, level, grid, sample, slot).unwrap();
        topk_radix_hist::run(
            &mut rt, &v4, &state, &mut hist, n, level, grid, sample, slot,
        )
        .unwrap();
        assert_eq!(hist, want, "sample level {level}");
        let mut want = state.clone();
        topk_radix_select_reference(&hist, &mut want, level, slot, k, 1, cap).unwrap();
        topk_radix_select::run(&mut rt, &hist, &mut state, level, slot, k, 1, cap).unwrap();
        assert_eq!(state, want, "sample select {level}");
    }
    assert!(
        state[6] & 0x3ff == 0 && state[6] != 0,
        "a 22-bit floor: {state:?}"
    );
    let groups = n.div_ceil(65536) as usize;
    let mut marks = vec![[7u32; 4]; groups * 512];
    let (mut want_h, mut want_m) = (hist.clone(), marks.clone());
    topk_radix_mark_reference(&v4, &state, &mut want_h, &mut want_m, n).unwrap();
    topk_radix_mark::run(&mut rt, &v4, &state, &mut hist, &mut marks, n).unwrap();
    assert_eq!(hist, want_h, "mark: histogram");
    assert!(marks == want_m, "mark: bitmap");
    let picked: u32 = marks.iter().flatten().map(|w| w.count_ones()).sum();
    assert!((k..n / 8).contains(&picked), "{picked} candidates");
    for level in 0..6 {
        if level > 0 {
            let mut want = hist.clone();
            topk_radix_refine_reference(&v4, &marks, &state, &mut want, n, level, 100).unwrap();
            topk_radix_refine::run(&mut rt, &v4, &marks, &state, &mut hist, n, level, 100).unwrap();
            assert_eq!(hist, want, "refine level {level}");
        }
        let mut want = state.clone();
        topk_radix_select_reference(&hist, &mut want, level, level, k, 0, cap).unwrap();
        topk_radix_select::run(&mut rt, &hist, &mut state, level, level, k, 0, cap).unwrap();
        assert_eq!(state, want, "select level {level}");
    }
    assert_eq!(state[0], 1);
    let mut regions = vec![0u32; groups * 2048];
    let mut want_r = regions.clone();
    let want_c = topk_radix_collect_reference(&v4, &marks, &state, &mut want_r, n).unwrap();
    let counts = topk_radix_collect::run(&mut rt, &v4, &marks, &state, &mut regions, n).unwrap();
    assert_eq!(counts, want_c, "collect: counts");
    assert!(regions == want_r, "collect: regions");
    let total: u32 = counts.iter().sum();
    assert!((k..=cap).contains(&total), "{total} collected");
    let g = groups as u32;
    let want = topk_radix_sort_reference(&v4, &counts, &regions, n, k, g, cap).unwrap();
    let got = topk_radix_sort::run(&mut rt, &v4, &counts, &regions, n, k, g, cap).unwrap();
    assert_bits("sort", &got.0, &want.0);
    assert_eq!(got.1, want.1);
    let top = sorted_top(&x, 0..x.len(), k as usize);
    assert_eq!(got.1, top.iter().map(|t| t.1 as u32).collect::<Vec<_>>());
}

#[test]
fn topk_rejects_bad_input() {
    let mut rt = runtime();
    let x = [1.0f32; 100];
    assert!(matches!(rt.topk(&[], 1), Err(ForgeError::EmptyWork { .. })));
    assert!(matches!(rt.topk(&x, 0), Err(ForgeError::EmptyWork { .. })));
    assert!(matches!(
        rt.topk(&x, 65),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.topk_blocks(&x, 1, 0),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.topk_blocks(&x, 1, 1025),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.topk_with_indices(&x, 11, 10),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.topk_global(&x, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.topk_global(&[], 1),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.topk_global(&x, 101),
        Err(ForgeError::InvalidArgument { .. })
    ));
    let big = vec![0.0f32; 2000];
    let err = rt.topk_global(&big, 1025).unwrap_err();
    assert!(err.to_string().contains("1024"), "{err}");
}

// ---- fft -----------------------------------------------------------------------------

/// The DFT by rustfft in f64, interleaved; `inverse` divides by `n` as numpy does.
fn rustfft_reference(data: &[f32], n: usize, inverse: bool) -> Vec<f64> {
    let mut planner = FftPlanner::<f64>::new();
    let plan = if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    };
    let mut buf: Vec<Complex<f64>> = data
        .chunks_exact(2)
        .map(|c| Complex::new(c[0] as f64, c[1] as f64))
        .collect();
    plan.process(&mut buf);
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    buf.iter()
        .flat_map(|c| [c.re * scale, c.im * scale])
        .collect()
}

/// The tolerance policy: every component of every output within `ε·(log2 n + 1)·‖x‖₂`
/// (times `1/n` for an inverse), transform by transform. On lavapipe the worst error is
/// about a third of that, from n = 8 to n = 2^20.
fn assert_fft_close(what: &str, input: &[f32], got: &[f32], want: &[f64], n: usize, inverse: bool) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let eps = f32::EPSILON as f64;
    for (t, ((x, g), w)) in input
        .chunks(2 * n)
        .zip(got.chunks(2 * n))
        .zip(want.chunks(2 * n))
        .enumerate()
    {
        let norm = x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
        let bound = eps * ((n as f64).log2() + 1.0) * norm * scale + 1e-30;
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let err = (*a as f64 - b).abs();
            assert!(
                err <= bound,
                "{what}: transform {t}, float {i} is {a}, expected {b} (error {err:e}, bound {bound:e})"
            );
        }
    }
}

fn complex_data(r: &mut ChaCha8Rng, floats: usize) -> Vec<f32> {
    (0..floats).map(|_| r.gen_range(-1.0f32..1.0)).collect()
}

#[test]
fn fft_seed_example() {
    let mut rt = runtime();
    let mut impulse = vec![0.0f32; 16];
    impulse[0] = 1.0;
    assert_eq!(rt.fft(&impulse).unwrap(), [1.0, 0.0].repeat(8));
}

#[test]
fn fft_matches_rustfft() {
    let mut rt = runtime();
    let mut r = rng(20);
    for log_n in [0, 1, 2, 3, 5, 10, 11, 12, 13, 16, 20] {
        let n = 1usize << log_n;
        let x = complex_data(&mut r, 2 * n);
        let got = rt.fft(&x).unwrap();
        assert_fft_close(
            &format!("fft n={n}"),
            &x,
            &got,
            &rustfft_reference(&x, n, false),
            n,
            false,
        );
        if log_n <= 13 {
            let got = rt.ifft(&x).unwrap();
            assert_fft_close(
                &format!("ifft n={n}"),
                &x,
                &got,
                &rustfft_reference(&x, n, true),
                n,
                true,
            );
        }
    }
}

#[test]
fn fft_batched_matches_rustfft_per_transform() {
    let mut rt = runtime();
    let mut r = rng(21);
    for (n, batch) in [(1, 5), (2, 3), (64, 7), (1024, 3), (4096, 3), (8192, 2)] {
        let x = complex_data(&mut r, 2 * n * batch);
        let want: Vec<f64> = x
            .chunks(2 * n)
            .flat_map(|c| rustfft_reference(c, n, false))
            .collect();
        let got = rt.fft_batched(&x, n, batch).unwrap();
        assert_fft_close(
            &format!("fft_batched n={n} batch={batch}"),
            &x,
            &got,
            &want,
            n,
            false,
        );
        let want: Vec<f64> = x
            .chunks(2 * n)
            .flat_map(|c| rustfft_reference(c, n, true))
            .collect();
        let got = rt.ifft_batched(&x, n, batch).unwrap();
        assert_fft_close(
            &format!("ifft_batched n={n} batch={batch}"),
            &x,
            &got,
            &want,
            n,
            true,
        );
    }
}

#[test]
fn ifft_inverts_fft() {
    let mut rt = runtime();
    let mut r = rng(22);
    for log_n in [0, 1, 4, 11, 12, 17] {
        let n = 1usize << log_n;
        let x = complex_data(&mut r, 2 * n);
        let spectrum = rt.fft(&x).unwrap();
        let back = rt.ifft(&spectrum).unwrap();
        // Two transforms' error, relative to the input's RMS value.
        let rms = (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / n as f64).sqrt();
        let bound = 8.0 * f32::EPSILON as f64 * (log_n as f64 + 1.0) * rms;
        for (i, (a, b)) in back.iter().zip(&x).enumerate() {
            let err = (a - b).abs() as f64;
            assert!(
                err <= bound,
                "n={n}: float {i} is {a}, expected {b} (error {err:e}, bound {bound:e})"
            );
        }
    }
}

#[test]
fn fft_every_schedule_matches_the_oracle() {
    let mut rt = runtime();
    let mut r = rng(23);
    // (len, m, n, ns, inverse): a batch of short rows, a row longer than a small
    // workgroup's slots, a row of 4096 in two halves, and both passes of 2^13 points.
    let cases: [[u32; 5]; 5] = [
        [96, 32, 32, 1, 0],
        [4096, 2048, 2048, 1, 1],
        [8192, 4096, 4096, 1, 0],
        [8192, 128, 8192, 1, 0],
        [8192, 64, 8192, 128, 1],
    ];
    for [len, m, n, ns, inv] in cases {
        let x: Vec<[f32; 2]> = (0..len)
            .map(|_| [r.gen_range(-1.0..1.0), r.gen_range(-1.0..1.0)])
            .collect();
        let oracle = fft_pass::cpu(&x, len, m, n, ns, inv, 1.0).unwrap();
        let reference = fft_pass_reference(&x, len, m, n, ns, inv, 1.0).unwrap();
        let mag = (m as f64).sqrt();
        let close = |what: &str, a: &[[f32; 2]], b: &[[f32; 2]]| {
            for (i, (g, c)) in a.iter().zip(b).enumerate() {
                for p in 0..2 {
                    let err = (g[p] - c[p]).abs() as f64;
                    assert!(
                        err <= 1e-5 * mag,
                        "m={m} n={n} ns={ns} {what}: element {i}: {g:?} vs {c:?}"
                    );
                }
            }
        };
        close("oracle vs reference", &oracle, &reference);
        for s in fft_pass::Kernel.tune_space().candidates() {
            let cpu = fft_pass::cpu_with(&s, &x, len, m, n, ns, inv, 1.0).unwrap();
            assert_eq!(
                cpu, oracle,
                "m={m}: the oracle at {s} differs from the declared schedule"
            );
            let gpu = fft_pass::run_with(&mut rt, &s, &x, len, m, n, ns, inv, 1.0).unwrap();
            close(&format!("gpu at {s}"), &gpu, &cpu);
        }
    }
}

#[test]
fn fft_pass16_matches_the_oracle_and_the_reference() {
    let mut rt = runtime();
    let mut r = rng(24);
    // (len, m, n, ns, inverse): batches of rows of every length from 16 to 4096, some not
    // filling the last workgroup, and passes across columns, with and without twiddles.
    let cases: [[u32; 5]; 15] = [
        [80, 16, 16, 1, 0],
        [96, 32, 32, 1, 1],
        [4480, 64, 64, 1, 0],
        [384, 128, 128, 1, 1],
        [4352, 256, 256, 1, 0],
        [4608, 512, 512, 1, 1],
        [5120, 1024, 1024, 1, 0],
        [6144, 2048, 2048, 1, 1],
        [8192, 4096, 4096, 1, 0],
        [8192, 128, 8192, 1, 0],
        [8192, 64, 8192, 128, 1],
        [8192, 16, 8192, 512, 0],
        [8192, 4096, 8192, 1, 1],
        [8192, 32, 4096, 128, 0],
        [16384, 512, 8192, 16, 0],
    ];
    for [len, m, n, ns, inv] in cases {
        let x: Vec<[f32; 2]> = (0..len)
            .map(|_| [r.gen_range(-1.0..1.0), r.gen_range(-1.0..1.0)])
            .collect();
        let oracle = fft_pass16::cpu(&x, len, m, n, ns, inv, 1.0).unwrap();
        let reference = fft_pass_reference(&x, len, m, n, ns, inv, 1.0).unwrap();
        let gpu = fft_pass16::run(&mut rt, &x, len, m, n, ns, inv, 1.0).unwrap();
        let mag = (m as f64).sqrt();
        for (what, a, b) in [
            ("oracle vs reference", &oracle, &reference),
            ("gpu vs oracle", &gpu, &oracle),
        ] {
            for (i, (g, c)) in a.iter().zip(b.iter()).enumerate() {
                for p in 0..2 {
                    let err = (g[p] - c[p]).abs() as f64;
                    assert!(
                        err <= 1e-5 * mag,
                        "m={m} n={n} ns={ns} {what}: element {i}: {g:?} vs {c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn fft_plans_in_registers_match_rustfft() {
    let mut rt = runtime();
    let mut r = rng(25);
    // Passes of fft_pass16 alone, and mixed with fft_pass (radix below 16).
    let plans: [(usize, &[u32]); 5] = [
        (1 << 12, &[64, 64]),
        (1 << 13, &[16, 512]),
        (1 << 13, &[2, 4096]),
        (1 << 13, &[128, 8, 8]),
        (1 << 14, &[4096, 4]),
    ];
    for (n, radices) in plans {
        let batch = 2;
        let plan = FftPlan {
            radices: radices.to_vec(),
            registers: true,
        };
        let x = complex_data(&mut r, 2 * n * batch);
        let input = rt.upload::<[f32; 2]>(bytemuck::cast_slice(&x)).unwrap();
        let scratch = rt.zeros::<[f32; 2]>(n * batch).unwrap();
        for inverse in [false, true] {
            let out = rt.zeros::<[f32; 2]>(n * batch).unwrap();
            fft_record_plan(
                &mut rt,
                &plan,
                &input,
                Some(&scratch),
                &out,
                batch,
                inverse,
                None,
            )
            .unwrap();
            let got: Vec<f32> = bytemuck::cast_slice(&rt.download(&out).unwrap()).to_vec();
            let want: Vec<f64> = x
                .chunks(2 * n)
                .flat_map(|c| rustfft_reference(c, n, inverse))
                .collect();
            assert_fft_close(
                &format!("plan {radices:?} n={n} inverse={inverse}"),
                &x,
                &got,
                &want,
                n,
                inverse,
            );
        }
    }
}

#[test]
fn fft_rejects_bad_input() {
    let mut rt = runtime();
    assert!(matches!(rt.fft(&[]), Err(ForgeError::EmptyWork { .. })));
    assert!(matches!(rt.ifft(&[]), Err(ForgeError::EmptyWork { .. })));
    assert!(matches!(
        rt.fft(&[1.0, 2.0, 3.0]),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.fft(&[0.0; 6]),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.fft(&[0.0; 24]),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.fft_batched(&[0.0; 16], 4, 3),
        Err(ForgeError::LengthMismatch { .. })
    ));
    assert!(matches!(
        rt.fft_batched(&[0.0; 12], 3, 2),
        Err(ForgeError::InvalidArgument { .. })
    ));
    assert!(matches!(
        rt.fft_batched(&[0.0; 16], 0, 2),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.ifft_batched(&[0.0; 16], 8, 0),
        Err(ForgeError::EmptyWork { .. })
    ));
}
