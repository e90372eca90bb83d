//! The second edition of the kernel language, end to end on the real adapter (lavapipe in
//! CI): `#[unroll]`, register arrays, `const` items, knobs and helpers that take arrays by
//! reference. Every kernel runs at every schedule of its tuning space, knobs included, and
//! GPU == oracle == an independent reference written directly in Rust, over random inputs,
//! odd sizes and a size past 65535 workgroups.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;

fn rt() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never skip.
    ForgeRuntime::new(1 << 30, None).expect("a GPU adapter (lavapipe in CI) is required")
}

fn close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ok = x == y || (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs()));
        assert!(ok, "{what}: element {i}: {x} vs {y}");
    }
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

// ---- DESIGN.md's `sim` module, without what belongs to issue 12 (structs, 2-D grids,
// ---- generics): a module const, a helper with barriers on workgroup memory, and a kernel
// ---- with a knob, nested unrolls and a register array.

#[forge_module]
pub mod sim {
    use wgsl_forge::prelude::*;

    const SOFTEN: f32 = 1e-3; // module consts: usable in every kernel below

    #[forge_fn]
    fn tree_sum(t: &mut [f32; 256], lid: u32) -> f32 {
        let mut half = 128u32;
        while half > 0 {
            if lid < half {
                t[lid] += t[lid + half];
            }
            workgroup_barrier();
            half /= 2;
        }
        t[0]
    }

    #[forge_kernel(threads = n, knobs(CHUNK = 4), tune(workgroup = [64, 256], CHUNK = [2, 4, 8]))]
    pub fn row_sums(a: &[f32; n * 8], #[out] y: &mut [f32; n], #[out] t: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let mut s = 0.0f32;
            let mut j = 0u32;
            while j < 8 {
                #[unroll]
                for u in 0..CHUNK {
                    s += a[i * 8 + j + u];
                } // knobs are u32 constants
                j += CHUNK;
            }
            y[i] = s; // the same order for every CHUNK
            let mut acc = [0.0f32; 8]; // register array: every index constant
            #[unroll]
            for k in 0..8 {
                acc[k] = a[i * 8 + k];
            }
            #[unroll]
            for step in 0..3 {
                // nested: `half` is a constant too
                let half = 4u32 >> step;
                #[unroll]
                for k in 0..half {
                    acc[k] += acc[k + half];
                }
            }
            t[i] = acc[0];
        }
    }

    /// One softened sum per workgroup of 256: `tree_sum` holds the barriers.
    #[forge_kernel(threads = n, workgroup = 256)]
    pub fn block_sums(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(256)], n: u32) {
        #[shared]
        let mut tile = [0.0f32; 256];
        let i = global_index();
        let lid = local_index();
        tile[lid] = if i < n { x[i] + SOFTEN } else { 0.0 };
        workgroup_barrier();
        let total = tree_sum(&mut tile, lid);
        if lid == 0 {
            sums[workgroup_index()] = total;
        }
    }
}

/// `row_sums` in plain Rust: the sum of a row in order, and the pairwise tree of `t`.
fn row_sums_reference(a: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut y = Vec::new();
    let mut t = Vec::new();
    for row in a.chunks(8) {
        let mut s = 0.0f32;
        for v in row {
            s += v;
        }
        y.push(s);
        let mut acc: Vec<f32> = row.to_vec();
        for half in [4, 2, 1] {
            for k in 0..half {
                acc[k] += acc[k + half];
            }
        }
        t.push(acc[0]);
    }
    (y, t)
}

#[test]
fn the_sim_module_runs_at_every_schedule_and_knob() {
    let mut rt = rt();
    let space = sim::row_sums::Kernel.tune_space();
    let schedules = space.candidates();
    assert_eq!(schedules.len(), 6, "2 workgroup sizes × 3 values of CHUNK");
    for n in [1u32, 7, 1000, 4099] {
        let a = random(n as usize * 8, n as u64);
        let (ry, rt_) = row_sums_reference(&a);
        for s in &schedules {
            let (cy, ct) = sim::row_sums::cpu_with(s, &a, n).unwrap();
            let (gy, gt) = sim::row_sums::run_with(&mut rt, s, &a, n).unwrap();
            // The same order of additions everywhere: exact.
            assert_eq!(cy, ry, "oracle vs reference, y, n={n}, {s}");
            assert_eq!(ct, rt_, "oracle vs reference, t, n={n}, {s}");
            assert_eq!(gy, cy, "gpu vs oracle, y, n={n}, {s}");
            assert_eq!(gt, ct, "gpu vs oracle, t, n={n}, {s}");
        }
    }
    // The declared schedule is the default knob and workgroup.
    let d = sim::row_sums::Kernel.default_schedule();
    assert_eq!(d, Schedule::new(64, 1, 1).with_knob("CHUNK", 4));
    assert_eq!(d.to_string(), "wg=64 items=1 vec=1 CHUNK=4");
    // A schedule that does not set the knob runs with its default.
    let a = random(80, 3);
    let plain = Schedule::with_workgroup(64);
    assert_eq!(
        sim::row_sums::cpu_with(&plain, &a, 10).unwrap(),
        sim::row_sums::cpu_with(&d, &a, 10).unwrap()
    );
    assert_eq!(sim::row_sums::wgsl(&plain), sim::row_sums::wgsl(&d));
    // A knob the kernel does not have, or a value outside its tuning list, is refused on
    // the GPU and in the oracle alike.
    for bad in [d.with_knob("TILE", 4), d.with_knob("CHUNK", 3)] {
        let gpu = sim::row_sums::run_with(&mut rt, &bad, &a, 10);
        let cpu = sim::row_sums::cpu_with(&bad, &a, 10);
        for r in [gpu, cpu] {
            assert!(
                matches!(r, Err(ForgeError::BadSchedule { .. })),
                "{bad}: {r:?}"
            );
        }
    }
}

#[test]
fn a_helper_holds_the_barriers_of_a_tree_reduction() {
    let mut rt = rt();
    for n in [1u32, 255, 256, 1000, 70_001] {
        let x = random(n as usize, 11 + n as u64);
        let blocks = (n as usize).div_ceil(256);
        let g = sim::block_sums::run(&mut rt, &x, n).unwrap();
        let c = sim::block_sums::cpu(&x, n).unwrap();
        let mut r = vec![0.0f32; blocks];
        for (b, chunk) in x.chunks(256).enumerate() {
            // The tree's order: pairs at distance 128, 64, .. 1.
            let mut t = [0.0f32; 256];
            for (k, v) in chunk.iter().enumerate() {
                t[k] = v + 1e-3;
            }
            let mut half = 128;
            while half > 0 {
                for k in 0..half {
                    t[k] += t[k + half];
                }
                half /= 2;
            }
            r[b] = t[0];
        }
        assert_eq!(c, r, "oracle vs reference, n={n}");
        assert_eq!(g, c, "gpu vs oracle, n={n}");
    }
}

#[test]
fn unrolled_wgsl_is_straight_line_code_with_registers() {
    for s in sim::row_sums::Kernel.tune_space().candidates() {
        let src = sim::row_sums::wgsl(&s);
        let chunk = s.knob("CHUNK").unwrap();
        // The register array is eight locals, never an indexed array.
        assert!(!src.contains("array<f32, 8>"), "{s}: {src}");
        for k in 0..8 {
            assert!(src.contains(&format!("var acc_{k}: f32")), "{s}: acc_{k}");
        }
        assert!(src.contains("acc_0 += acc_4;") && src.contains("acc_0 += acc_1;"));
        // The knob's unrolled loop: CHUNK additions, at literal offsets.
        assert_eq!(src.matches("s += a[").count(), chunk as usize, "{s}");
        assert!(
            src.contains(&format!("const CHUNK: u32 = {chunk}u;")),
            "{s}"
        );
        // No loop is left but the `while` over `j`.
        assert!(
            !src.contains("for (") && !src.contains("loop {"),
            "{s}: {src}"
        );
    }
}

// ---- register blocks: `[Vec4::ZERO; 4]` under `#[unroll]`, against the same kernel rolled

/// A 4×4 outer-product block per invocation, accumulated over `k`: rows of `a` times
/// columns of `b`, `c = a · b` for `a` of n×4k and `b` of k×4 (as `Vec4` rows).
#[forge_kernel(threads = n, tune(workgroup = [32, 64]))]
pub fn block4(a: &[Vec4; n * k], b: &[Vec4; k], #[out] c: &mut [Vec4; n * 4], n: u32, k: u32) {
    let i = global_index();
    if i < n {
        let mut acc = [Vec4::ZERO; 4];
        for j in 0..k {
            let av = a[i * k + j];
            let bv = b[j];
            #[unroll]
            for r in 0..4 {
                // A vector component at an unrolled index is a constant swizzle.
                acc[r] = bv.mul_add(Vec4::splat(av[r]), acc[r]);
            }
        }
        #[unroll]
        for r in 0..4 {
            c[i * 4 + r] = acc[r];
        }
    }
}

/// `block4` with its loops rolled and the components picked by `if`: the same computation.
#[forge_kernel(threads = n, tune(workgroup = [32, 64]))]
pub fn block4_rolled(
    a: &[Vec4; n * k],
    b: &[Vec4; k],
    #[out] c: &mut [Vec4; n * 4],
    n: u32,
    k: u32,
) {
    let i = global_index();
    if i < n {
        let mut acc = [Vec4::ZERO; 4];
        for j in 0..k {
            let av = a[i * k + j];
            let bv = b[j];
            for r in 0..4 {
                let ar = if r == 0 {
                    av.x
                } else if r == 1 {
                    av.y
                } else if r == 2 {
                    av.z
                } else {
                    av.w
                };
                acc[r] = bv.mul_add(Vec4::splat(ar), acc[r]);
            }
        }
        for r in 0..4 {
            c[i * 4 + r] = acc[r];
        }
    }
}

#[test]
fn a_register_block_computes_what_the_rolled_loop_does() {
    let src = block4::WGSL;
    assert!(!src.contains("array<vec4<f32>, 4>"), "{src}");
    for r in 0..4 {
        assert!(src.contains(&format!("var acc_{r}: vec4<f32>")), "{src}");
        assert!(
            src.contains(&format!("c[((i * 4u) + {r}u)] = acc_{r};")) || r == 0,
            "{src}"
        );
    }
    // The component at an unrolled index is a swizzle.
    assert!(src.contains("fma(bv, vec4<f32>((av).w), acc_3)"), "{src}");
    assert!(block4_rolled::WGSL.contains("array<vec4<f32>, 4>"));
    let mut rt = rt();
    for (n, k) in [(1u32, 1u32), (7, 3), (1000, 17)] {
        let a: Vec<[f32; 4]> = random(n as usize * k as usize * 4, 5)
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        let b: Vec<[f32; 4]> = random(k as usize * 4, 6)
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect();
        // Reference: fma per component, in the kernel's order.
        let mut r = vec![[0.0f32; 4]; n as usize * 4];
        for i in 0..n as usize {
            for j in 0..k as usize {
                let av = a[i * k as usize + j];
                for row in 0..4 {
                    for col in 0..4 {
                        let acc = &mut r[i * 4 + row][col];
                        *acc = b[j][col].mul_add(av[row], *acc);
                    }
                }
            }
        }
        for s in block4::Kernel.tune_space().candidates() {
            let c = block4::cpu_with(&s, &a, &b, n, k).unwrap();
            let g = block4::run_with(&mut rt, &s, &a, &b, n, k).unwrap();
            let gr = block4_rolled::run_with(&mut rt, &s, &a, &b, n, k).unwrap();
            let cr = block4_rolled::cpu_with(&s, &a, &b, n, k).unwrap();
            assert_eq!(c, r, "oracle vs reference n={n} k={k} {s}");
            assert_eq!(cr, c, "rolled oracle vs unrolled n={n} k={k} {s}");
            let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
            close("gpu vs oracle", &flat(&g), &flat(&c), 1e-6);
            close("rolled gpu vs unrolled gpu", &flat(&gr), &flat(&g), 1e-6);
        }
    }
}

// ---- helpers over local arrays by reference, knobs in array lengths and unroll bounds,
// ---- bounds from `WG` and consts, `..=`, and a size past 65535 workgroups

#[forge_module]
pub mod taps {
    use wgsl_forge::prelude::*;

    const TAPS: u32 = 4;

    /// The dot product of two local arrays, without copying them.
    #[forge_fn]
    fn dot(w: &[f32; 4], v: &[f32; 4]) -> f32 {
        let mut s = 0.0f32;
        #[unroll]
        for k in 0..TAPS {
            s = w[k].mul_add(v[k], s);
        }
        s
    }

    /// Scales a local array in place; returns early for a scale of one.
    #[forge_fn]
    fn scale(v: &mut [f32; 4], by: f32) {
        if by == 1.0 {
            return;
        }
        #[unroll]
        for k in 0..4 {
            v[k] *= by;
        }
    }

    /// The index of the first element at least `x`, or 4: a `return` inside a loop.
    #[forge_fn]
    fn first_at_least(v: &[f32; 4], x: f32) -> u32 {
        for k in 0..4u32 {
            if v[k] >= x {
                return k;
            }
        }
        4
    }

    #[forge_kernel(threads = n, knobs(REPEAT = 2), tune(workgroup = [32, 64], REPEAT = [1, 3]))]
    pub fn filter(
        x: &[f32; n + 3],
        w: &[f32; 4],
        #[out] y: &mut [f32; n],
        #[out] at: &mut [u32; n],
        n: u32,
        by: f32,
    ) {
        let i = global_index();
        if i < n {
            let mut v = [0.0f32; 4];
            let mut ws = [0.0f32; 4];
            #[unroll]
            for k in 0..=3 {
                v[k] = x[i + k];
                ws[k] = w[k];
            }
            // REPEAT copies of the scaling, and a length from the knob.
            let mut hist = [0.0f32; REPEAT];
            #[unroll]
            for r in 0..REPEAT {
                scale(&mut v, by);
                hist[r] = v[0];
            }
            let mut h = 0.0f32;
            #[unroll]
            for r in 0..REPEAT {
                h += hist[r];
            }
            // A bound from `WG`: WG / 32 is 1 or 2, an extra term each.
            let mut extra = 0.0f32;
            #[unroll]
            for q in 0..WG / 32 {
                extra += (q as f32) * 0.0;
            }
            y[i] = dot(&ws, &v) + h * 0.5 + extra;
            at[i] = first_at_least(&v, 0.25);
        }
    }
}

fn filter_reference(x: &[f32], w: &[f32], n: usize, by: f32, repeat: u32) -> (Vec<f32>, Vec<u32>) {
    let mut y = Vec::new();
    let mut at = Vec::new();
    for i in 0..n {
        let mut v = [x[i], x[i + 1], x[i + 2], x[i + 3]];
        let mut h = 0.0f32;
        for _ in 0..repeat {
            if by != 1.0 {
                for e in v.iter_mut() {
                    *e *= by;
                }
            }
            h += v[0];
        }
        let mut s = 0.0f32;
        for k in 0..4 {
            s = w[k].mul_add(v[k], s);
        }
        y.push(s + h * 0.5);
        at.push(v.iter().position(|e| *e >= 0.25).unwrap_or(4) as u32);
    }
    (y, at)
}

#[test]
fn helpers_take_local_arrays_by_reference_at_every_knob() {
    let mut rt = rt();
    let schedules = taps::filter::Kernel.tune_space().candidates();
    assert_eq!(schedules.len(), 4);
    let w = [0.5f32, -0.25, 0.125, 1.0];
    // 65535 · 32 + 1 invocations: more than 65535 workgroups of 32.
    for n in [1usize, 31, 1000, 65_535 * 32 + 1] {
        let x = random(n + 3, n as u64);
        for by in [1.0f32, 1.5] {
            for s in &schedules {
                let repeat = s.knob("REPEAT").unwrap();
                let (ry, ra) = filter_reference(&x, &w, n, by, repeat);
                let (cy, ca) = taps::filter::cpu_with(s, &x, &w, n as u32, by).unwrap();
                let (gy, ga) = taps::filter::run_with(&mut rt, s, &x, &w, n as u32, by).unwrap();
                assert_eq!(ca, ra, "oracle vs reference, at, n={n} by={by} {s}");
                assert_eq!(ga, ca, "gpu vs oracle, at, n={n} by={by} {s}");
                close(&format!("oracle vs reference n={n} {s}"), &cy, &ry, 1e-6);
                close(&format!("gpu vs oracle n={n} {s}"), &gy, &cy, 1e-6);
            }
        }
    }
}

#[test]
fn helpers_by_reference_are_inlined_without_copies() {
    let src = taps::filter::WGSL;
    // No helper function is left: `dot`, `scale` and `first_at_least` are inlined on the
    // kernel's own arrays. `ws` is indexed by constants only: registers. `v` stays an
    // array, since `first_at_least` indexes it at run time.
    assert!(!src.contains("fn fg_fn_"), "{src}");
    assert!(src.contains("var ws_3: f32"), "{src}");
    assert!(src.contains("var v: array<f32, 4>"), "{src}");
    assert_eq!(
        src.matches("array<f32, 4>").count(),
        2,
        "only `v`'s declaration: {src}"
    );
    // The unrolled reads index with literals, and `+ 0` is gone.
    assert!(
        src.contains("v[0u] = x[i];") && src.contains("v[3u] = x[(i + 3u)];"),
        "{src}"
    );
}

// ---- compound assignment on vectors ----------------------------------------------------

#[forge_kernel(threads = n)]
pub fn vec_compound(
    a: &[Vec4; n],
    b: &[UVec4; n],
    #[out] y: &mut [Vec4; n],
    #[out] u: &mut [UVec4; n],
    n: u32,
    s: f32,
) {
    let i = global_index();
    if i < n {
        let mut v = a[i];
        v += a[i];
        v *= s;
        v -= Vec4::splat(1.0);
        y[i] = v;
        y[i] /= 2.0;
        let mut w = b[i];
        w += b[i];
        w ^= UVec4::splat(0xffff_ffff);
        w *= 3;
        u[i] = w;
    }
}

#[test]
fn vectors_take_compound_assignment() {
    let n = 1001usize;
    let a: Vec<[f32; 4]> = random(n * 4, 21)
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    let b: Vec<[u32; 4]> = (0..n)
        .map(|_| [rng.gen(), rng.gen(), rng.gen(), rng.gen()])
        .collect();
    let s = 1.5f32;
    let ry: Vec<[f32; 4]> = a
        .iter()
        .map(|v| v.map(|x| ((x + x) * s - 1.0) / 2.0))
        .collect();
    let ru: Vec<[u32; 4]> = b
        .iter()
        .map(|v| v.map(|x| (x.wrapping_add(x) ^ 0xffff_ffff).wrapping_mul(3)))
        .collect();
    let (cy, cu) = vec_compound::cpu(&a, &b, n as u32, s).unwrap();
    let (gy, gu) = vec_compound::run(&mut rt(), &a, &b, n as u32, s).unwrap();
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    assert_eq!(cy, ry, "oracle vs reference");
    assert_eq!(cu, ru, "oracle vs reference");
    close("gpu vs oracle", &flat(&gy), &flat(&cy), 1e-6);
    assert_eq!(gu, cu, "gpu vs oracle");
}

// ---- certification at every schedule and knob ------------------------------------------

#[test]
fn kernels_of_the_second_edition_certify_at_every_schedule_and_knob() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = rt();
    let kernels: [&dyn wgsl_forge::Kernel; 4] = [
        &sim::row_sums::Kernel,
        &sim::block_sums::Kernel,
        &taps::filter::Kernel,
        &block4::Kernel,
    ];
    for kernel in kernels {
        let schedules = kernel.tune_space().candidates();
        for schedule in &schedules {
            let report = certify(&mut rt, kernel, schedule, &CertOptions::new(7)).unwrap();
            assert!(
                report.passed() && report.cases > 0,
                "{} at {schedule}:\n{}",
                kernel.name(),
                report.failures.join("\n")
            );
        }
    }
}

// ---- cost(..): what rooflines divide by ---------------------------------------------------

/// `reps` passes over `x`: a kernel whose cost depends on two scalars.
#[forge_kernel(threads = n, cost(bytes = 8 * n + 4, flops = 2 * n * reps))]
pub fn repeated_axpy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, reps: u32) {
    let i = global_index();
    if i < n {
        let mut s = 0.0f32;
        for _r in 0..reps {
            s = s.mul_add(0.5, x[i]);
        }
        y[i] = s;
    }
}

/// Only bytes; the power makes `n = u32::MAX` overflow 64 bits (but not 128).
#[forge_kernel(threads = n, cost(bytes = n * n * n))]
pub fn cubed_bytes(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

#[test]
fn cost_evaluates_the_declared_expressions_over_the_scalars() {
    use wgsl_forge::{Cost, ForgeError, Kernel, ScalarValue};
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    for _ in 0..50 {
        let (n, reps) = (rng.gen_range(1..1u32 << 31), rng.gen_range(0..1u32 << 31));
        let cost = repeated_axpy::Kernel
            .cost(&[ScalarValue::U32(n), ScalarValue::U32(reps)])
            .unwrap();
        assert_eq!(
            cost,
            Cost {
                bytes: Some(8 * n as u64 + 4),
                flops: Some(2 * n as u64 * reps as u64),
            }
        );
    }
    // The same kernel runs, and its results are what the cost describes: `reps` FMAs.
    let x = random(100, 5);
    let y = repeated_axpy::run(&mut rt(), &x, 100, 3).unwrap();
    for (xi, yi) in x.iter().zip(&y) {
        let want = 0.0f32.mul_add(0.5, *xi).mul_add(0.5, *xi).mul_add(0.5, *xi);
        assert!(
            (yi - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{yi} vs {want} ({xi})"
        );
    }
    let big = cubed_bytes::Kernel.cost(&[ScalarValue::U32(u32::MAX)]);
    match big {
        Err(ForgeError::BadExpression { what, expr, .. }) => {
            assert_eq!((what, expr), ("bytes", "n * n * n"));
        }
        other => panic!("a cost past u64 must be an error, got {other:?}"),
    }
    assert_eq!(
        cubed_bytes::Kernel.cost(&[ScalarValue::U32(1000)]).unwrap(),
        Cost {
            bytes: Some(1_000_000_000),
            flops: None
        }
    );
    // A scalar missing is an error, not a panic; a kernel without `cost` declares nothing.
    assert!(cubed_bytes::Kernel.cost(&[]).is_err());
    let plain = sim::row_sums::Kernel.cost(&[ScalarValue::U32(8)]).unwrap();
    assert!(plain.is_empty());
}
