//! Atomics of the second edition: `Atomic<f32>` (compare-exchange loops over `u32` bits in
//! WGSL) in bindings and workgroup memory, and `compare_exchange_weak` on every atomic type.
//! GPU == oracle == an independent reference, on odd sizes and past 65535 workgroups.
//!
//! Float addition is not associative, and the GPU adds in whatever order its invocations
//! reach an atomic, while the oracle adds in invocation order. The exact tests therefore use
//! values on a grid of 2^-10, whose partial sums are all exact in `f32`, so that every order
//! gives the same bits; the test on arbitrary floats bounds the difference instead.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify_default, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

/// Values on a grid of 2^-10 in [-1, 1): sums of a few thousand of them are exact in f32.
fn grid_values(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| rng.gen_range(-1024i32..1024) as f32 / 1024.0)
        .collect()
}

// ---- Atomic<f32> in bindings --------------------------------------------------------------

/// Every invocation adds, subtracts, and takes the min and the max of its value into a bin.
#[forge_kernel(workgroup = 64, threads = n, reference = scatter_reference)]
pub fn scatter(
    x: &[f32; n],
    bin: &[u32; n],
    #[out] sums: &mut [Atomic<f32>; 64],
    #[out] diffs: &mut [Atomic<f32>; 64],
    #[out] lo: &mut [Atomic<f32>; 64],
    #[out] hi: &mut [Atomic<f32>; 64],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let b = bin[i] % 64;
        sums[b].fetch_add(x[i]);
        diffs[b].fetch_sub(x[i]);
        lo[b].fetch_min(x[i]);
        hi[b].fetch_max(x[i]);
    }
}

type Bins = (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>);

/// From the definition, in f64: the bins start at zero.
fn scatter_reference(x: &[f32], bin: &[u32], _n: u32) -> Result<Bins, ForgeError> {
    let mut sums = [0f64; 64];
    let (mut lo, mut hi) = ([0f64; 64], [0f64; 64]);
    for (v, b) in x.iter().zip(bin) {
        let b = (*b % 64) as usize;
        sums[b] += *v as f64;
        lo[b] = lo[b].min(*v as f64);
        hi[b] = hi[b].max(*v as f64);
    }
    let f = |a: [f64; 64]| a.iter().map(|v| *v as f32).collect::<Vec<f32>>();
    Ok((f(sums), f(sums.map(|s| -s)), f(lo), f(hi)))
}

#[test]
fn float_atomics_add_sub_min_max_exactly_on_grid_values() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut rt = rt();
    for n in [1usize, 7, 1001, 70001] {
        let x = grid_values(&mut rng, n);
        let bin: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let want = scatter_reference(&x, &bin, n as u32).unwrap();
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, scatter, n, (&x, &bin, n as u32));
        assert_eq!(cpu, want, "oracle vs reference, n = {n}");
        assert_eq!(gpu, want, "GPU vs reference, n = {n}");
    }
}

#[test]
fn float_atomic_sums_of_arbitrary_floats_differ_by_reassociation_only() {
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let n = 20_003;
    let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let bin: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    let mut rt = rt();
    let (gs, gd, glo, ghi) = rt.scatter(&x, &bin, n as u32).unwrap();
    let (cs, cd, clo, chi) = scatter::cpu(&x, &bin, n as u32).unwrap();
    // The oracle adds in invocation order, in f32: exactly this loop.
    let mut ordered = [0f32; 64];
    let mut abs = [0f64; 64];
    for (v, b) in x.iter().zip(&bin) {
        ordered[(*b % 64) as usize] += *v;
        abs[(*b % 64) as usize] += v.abs() as f64;
    }
    assert_eq!(cs, ordered.to_vec());
    let (_, _, rlo, rhi) = scatter_reference(&x, &bin, n as u32).unwrap();
    for b in 0..64 {
        // Any order of k additions is within (k - 1)·ε·Σ|x| of the exact sum.
        let count = bin.iter().filter(|v| **v % 64 == b as u32).count() as f64;
        let bound = count * f32::EPSILON as f64 * abs[b];
        let exact: f64 = x
            .iter()
            .zip(&bin)
            .filter(|(_, v)| **v % 64 == b as u32)
            .map(|(v, _)| *v as f64)
            .sum();
        assert!((gs[b] as f64 - exact).abs() <= bound, "GPU sum of bin {b}");
        assert!(
            (cs[b] as f64 - exact).abs() <= bound,
            "oracle sum of bin {b}"
        );
        assert!(
            (gd[b] as f64 + exact).abs() <= bound,
            "GPU difference of bin {b}"
        );
        assert_eq!(cd[b], -cs[b], "the oracle subtracts in the same order");
    }
    // Min and max do not depend on the order.
    assert_eq!((&glo, &ghi), (&clo, &chi));
    assert_eq!((clo, chi), (rlo, rhi));
}

/// `Atomic<f32>` on a `&mut` binding: updated in place from its uploaded values.
#[forge_kernel(threads = n)]
pub fn accumulate(x: &[f32; n], acc: &mut [Atomic<f32>; 3], n: u32) {
    let i = global_index();
    if i < n {
        acc[i % 3].fetch_add(x[i]);
    }
}

/// `store`, `swap` and `load` on `Atomic<f32>`: each slot is its own invocation's.
#[forge_kernel(threads = n)]
pub fn exchange(
    x: &[f32; n],
    #[out] slots: &mut [Atomic<f32>; n],
    #[out] seen: &mut [f32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        slots[i].store(x[i]);
        let old = slots[i].swap(x[i] * 2.0);
        seen[i] = old + slots[i].load();
    }
}

#[test]
fn float_atomics_in_place_and_store_swap_load() {
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let mut rt = rt();
    for n in [5usize, 4099] {
        let x = grid_values(&mut rng, n);
        let start = vec![0.5f32, -2.0, 100.0];
        let mut want: Vec<f64> = start.iter().map(|v| *v as f64).collect();
        for (i, v) in x.iter().enumerate() {
            want[i % 3] += *v as f64;
        }
        let want: Vec<f32> = want.iter().map(|v| *v as f32).collect();
        let (mut gpu, mut cpu) = (start.clone(), start.clone());
        rt.accumulate(&x, &mut gpu, n as u32).unwrap();
        accumulate::cpu(&x, &mut cpu, n as u32).unwrap();
        assert_eq!(cpu, want);
        assert_eq!(gpu, want);

        let (gs, gseen) = rt.exchange(&x, n as u32).unwrap();
        let (cs, cseen) = exchange::cpu(&x, n as u32).unwrap();
        let doubled: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        let tripled: Vec<f32> = x.iter().map(|v| v * 3.0).collect();
        assert_eq!((&cs, &cseen), (&doubled, &tripled));
        assert_eq!((gs, gseen), (doubled, tripled));
    }
}

// ---- Atomic<f32> in workgroup memory --------------------------------------------------------

/// Per-workgroup float sums in atomic workgroup memory, merged into an atomic binding.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn block_hist(x: &[f32; n], bin: &[u32; n], #[out] totals: &mut [Atomic<f32>; 8], n: u32) {
    #[shared]
    let mut local = [0.0f32; 8];
    let i = global_index();
    if i < n {
        local[bin[i] % 8].fetch_add(x[i]);
    }
    workgroup_barrier();
    let lid = local_index();
    if lid < 8 {
        totals[lid].fetch_add(local[lid].load());
    }
}

#[test]
fn float_atomics_in_workgroup_memory() {
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    let mut rt = rt();
    for n in [3usize, 64 * 37 + 5, 70001] {
        let x = grid_values(&mut rng, n);
        let bin: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
        let mut want = [0f64; 8];
        for (v, b) in x.iter().zip(&bin) {
            want[(*b % 8) as usize] += *v as f64;
        }
        let want: Vec<f32> = want.iter().map(|v| *v as f32).collect();
        let gpu = rt.block_hist(&x, &bin, n as u32).unwrap();
        let cpu = block_hist::cpu(&x, &bin, n as u32).unwrap();
        assert_eq!(cpu, want, "n = {n}");
        assert_eq!(gpu, want, "n = {n}");
    }
}

// ---- compare_exchange_weak on every atomic type ----------------------------------------------

/// Lock-free updates written with `compare_exchange_weak`: an integer sum, a float maximum
/// and a signed minimum, each a retry loop (a weak exchange may fail spuriously, so every
/// loop retries until it succeeds or has nothing to do).
#[forge_kernel(workgroup = 64, threads = n)]
pub fn cas_loops(
    x: &[f32; n],
    v: &[u32; n],
    #[out] total: &mut [Atomic<u32>; 16],
    #[out] top: &mut [Atomic<f32>; 16],
    #[out] low: &mut [Atomic<i32>; 16],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let b = v[i] % 16;
        let mut cur = total[b].load();
        loop {
            let (old, ok) = total[b].compare_exchange_weak(cur, cur + v[i] / 16);
            if ok {
                break;
            }
            cur = old;
        }
        let mut seen = top[b].load();
        while seen < x[i] {
            let (old, ok) = top[b].compare_exchange_weak(seen, x[i]);
            if ok {
                break;
            }
            seen = old;
        }
        let want = (v[i] % 1000) as i32 - 500;
        let mut now = low[b].load();
        while now > want {
            let (old, ok) = low[b].compare_exchange_weak(now, want);
            if ok {
                break;
            }
            now = old;
        }
    }
}

#[test]
fn compare_exchange_loops_on_u32_f32_and_i32() {
    let mut rng = ChaCha8Rng::seed_from_u64(25);
    let mut rt = rt();
    for n in [1usize, 63, 5001, 70001] {
        let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
        let v: Vec<u32> = (0..n).map(|_| rng.gen_range(0..1 << 20)).collect();
        let (mut total, mut top, mut low) = (vec![0u32; 16], vec![0f32; 16], vec![0i32; 16]);
        for i in 0..n {
            let b = (v[i] % 16) as usize;
            total[b] += v[i] / 16;
            top[b] = top[b].max(x[i]);
            low[b] = low[b].min((v[i] % 1000) as i32 - 500);
        }
        let want = (total, top, low);
        let (gpu, cpu) = gpu_and_cpu!(&mut rt, cas_loops, n, (&x, &v, n as u32));
        assert_eq!(cpu, want, "oracle, n = {n}");
        assert_eq!(gpu, want, "GPU, n = {n}");
    }
}

/// One compare-exchange each, on a slot no other invocation touches: whether it exchanges
/// is decided by the value alone (the oracle never fails spuriously; the GPU may, so the
/// test retries those).
#[forge_kernel(threads = n)]
pub fn cas_once(
    expect: &[u32; n],
    slots: &mut [Atomic<u32>; n],
    #[out] old: &mut [u32; n],
    #[out] swapped: &mut [u32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let (o, ok) = slots[i].compare_exchange_weak(expect[i], expect[i] + 1000);
        old[i] = o;
        swapped[i] = select(0u32, 1u32, ok);
    }
}

#[test]
fn compare_exchange_gives_the_old_value_and_whether_it_exchanged() {
    let mut rng = ChaCha8Rng::seed_from_u64(26);
    let n = 777;
    let start: Vec<u32> = (0..n).map(|_| rng.gen_range(0..4)).collect();
    let expect: Vec<u32> = (0..n).map(|_| rng.gen_range(0..4)).collect();
    let want_slots: Vec<u32> = (0..n)
        .map(|i| {
            if start[i] == expect[i] {
                expect[i] + 1000
            } else {
                start[i]
            }
        })
        .collect();
    let want_swapped: Vec<u32> = (0..n).map(|i| (start[i] == expect[i]) as u32).collect();
    let mut cpu_slots = start.clone();
    let (cold, cswapped) = cas_once::cpu(&expect, &mut cpu_slots, n as u32).unwrap();
    assert_eq!(
        (&cpu_slots, &cold, &cswapped),
        (&want_slots, &start, &want_swapped)
    );
    let mut rt = rt();
    let mut gpu_slots = start.clone();
    let (gold, mut gswapped) = rt.cas_once(&expect, &mut gpu_slots, n as u32).unwrap();
    assert_eq!(gold, start, "the old value is always the slot's");
    // A spurious failure leaves the slot as it was; nothing else may differ.
    for i in 0..n {
        if gswapped[i] == 0 && want_swapped[i] == 1 {
            assert_eq!(gpu_slots[i], start[i], "a failed exchange wrote slot {i}");
            gpu_slots[i] = want_slots[i];
            gswapped[i] = 1;
        }
    }
    assert_eq!((gpu_slots, gswapped), (want_slots, want_swapped));
}

#[test]
fn float_atomic_kernels_certify() {
    let mut rt = rt();
    for kernel in [
        &scatter::Kernel as &dyn Kernel,
        &block_hist::Kernel,
        &exchange::Kernel,
        &cas_loops::Kernel,
    ] {
        let report = certify_default(&mut rt, kernel, &CertOptions::default()).unwrap();
        assert!(report.passed(), "{}: {:?}", kernel.name(), report.failures);
    }
}
