//! The language's third edition: forms a GPU engineer writes first, each checked as oracle
//! == GPU == a reference written here, at odd sizes and past 65,535 workgroups where it
//! applies (lavapipe in CI).

#[macro_use]
mod common;

use wgsl_forge::prelude::*;

// ---- strided and reversed loops ----

/// The maximum of each row, one workgroup of 64 per row: each invocation strides over
/// the row by the workgroup's size, then the workgroup reduces.
#[forge_kernel(workgroup = 64, threads = rows * 64)]
pub fn row_max(x: &[f32; rows * cols], #[out] y: &mut [f32; rows], rows: u32, cols: u32) {
    #[shared]
    let mut best = [0.0f32; 64];
    let row = workgroup_index();
    let lid = local_index();
    let mut m = f32::NEG_INFINITY;
    for c in (lid..cols).step_by(64) {
        m = m.max(x[row * cols + c]);
    }
    best[lid] = m;
    workgroup_barrier();
    for s in (0..6u32).rev() {
        let half = 1u32 << s;
        if lid < half {
            best[lid] = best[lid].max(best[lid + half]);
        }
        workgroup_barrier();
    }
    if lid == 0 {
        y[row] = best[0];
    }
}

/// Per element `i`: the sum of `x[j]` for `j` from `i` down to `i - 30` (or 0) by threes
/// (a reversed, inclusive, stepped walk written two ways), skipping negative values with
/// `continue`.
#[forge_kernel(threads = n)]
pub fn walks(
    x: &[i32; n],
    #[out] a: &mut [i32; n],
    #[out] b: &mut [i32; n],
    #[out] c: &mut [u32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let lo = i - i.min(30);
        let mut s = 0i32;
        for j in (lo..=i).rev() {
            if (i - j) % 3 != 0 || x[j] < 0 {
                continue;
            }
            s += x[j];
        }
        a[i] = s;
        let mut t = 0i32;
        // The same terms, stepping up from the lowest.
        for j in (lo + (i - lo) % 3..=i).step_by(3) {
            if x[j] < 0 {
                continue;
            }
            t += x[j];
        }
        b[i] = t;
        // Empty ranges run no iteration, whatever the step.
        let mut k = 0u32;
        for _j in (i..i).step_by(5) {
            k += 1;
        }
        for _j in (i + 1..i).rev() {
            k += 1;
        }
        for j in (i..i + 10).step_by(4) {
            k += j - i; // 0 + 4 + 8
        }
        c[i] = k;
    }
}

fn walks_reference(x: &[i32]) -> (Vec<i32>, Vec<u32>) {
    let s = (0..x.len())
        .map(|i| {
            (i - i.min(30)..=i)
                .filter(|j| (i - j) % 3 == 0 && x[*j] >= 0)
                .map(|j| x[j])
                .sum()
        })
        .collect();
    (s, vec![12; x.len()])
}

#[test]
fn strided_loops_cover_each_row_at_odd_sizes() {
    let mut rt = common::rt();
    for (rows, cols) in [(1u32, 1u32), (3, 63), (5, 64), (7, 65), (2, 1000)] {
        let x: Vec<f32> = (0..rows * cols)
            .map(|k| ((k * 7919) % 1013) as f32 - 500.0)
            .collect();
        let want: Vec<f32> = (0..rows as usize)
            .map(|r| {
                x[r * cols as usize..(r + 1) * cols as usize]
                    .iter()
                    .cloned()
                    .fold(f32::NEG_INFINITY, f32::max)
            })
            .collect();
        assert_eq!(
            row_max::cpu(&x, rows, cols).unwrap(),
            want,
            "oracle at {rows}x{cols}"
        );
        assert_eq!(
            row_max::run(&mut rt, &x, rows, cols).unwrap(),
            want,
            "GPU at {rows}x{cols}"
        );
    }
}

#[test]
fn reversed_and_stepped_loops_agree_with_rust_past_the_workgroup_limit() {
    let mut rt = common::rt();
    for n in [1usize, 7, 257, 70_001] {
        let x: Vec<i32> = (0..n as i32).map(|k| (k * 37) % 101 - 20).collect();
        let (s, k) = walks_reference(&x);
        let (g, c) = gpu_and_cpu!(&mut rt, walks, n, (&x, n as u32));
        // Compared whole, but reported by the first element that differs.
        for (what, got) in [("GPU", &g), ("oracle", &c)] {
            for (name, v) in [("reversed", &got.0), ("stepped", &got.1)] {
                if let Some(i) = (0..n).find(|&i| v[i] != s[i]) {
                    panic!(
                        "{what}, {name} walk at n = {n}: element {i} is {}, not {}",
                        v[i], s[i]
                    );
                }
            }
            assert!(got.2 == k, "{what}: empty ranges and steps at n = {n}");
        }
    }
}

// ---- `if` as a value anywhere ----

#[forge_module]
pub mod values {
    use wgsl_forge::prelude::*;

    /// A helper whose tail is an `if`.
    #[forge_fn]
    fn pick(c: bool, a: f32, b: f32) -> f32 {
        if c {
            a
        } else {
            b
        }
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn if_values(x: &[f32; n], #[out] y: &mut [f32; n], #[out] s: &mut [f32; n], n: u32) {
        let i = global_index();
        // In a subgroup operation's operand, as the whole workgroup must reach it.
        let t = subgroup_add(if i < n { x[i] } else { 0.0 });
        if i < n {
            let v = x[i];
            // Inside arithmetic, nested, in an index, and in an `else if` condition.
            y[i] = 2.0 * if v > 0.0 { v } else { -v }
                + if v > 1.0 {
                    if v > 2.0 {
                        3.0
                    } else {
                        2.0
                    }
                } else {
                    1.0
                };
            let j = if i > 0 { i - 1 } else { 0 };
            let w = if v < -1.0 {
                1.0
            } else if (if v > 0.5 { v } else { 0.0 }) > 1.5 {
                x[j] + pick(v > 1.75, 10.0, 20.0)
            } else {
                match i % 3 {
                    0 => 5.0,
                    _ => 6.0,
                }
            };
            s[i] = w
                + t * 0.0
                + match i % 2 {
                    0 => 0.0,
                    _ => 0.5,
                };
        }
    }
}

fn if_values_reference(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = x.len();
    let mut y = vec![0.0; n];
    let mut s = vec![0.0; n];
    for i in 0..n {
        let v = x[i];
        y[i] = 2.0 * v.abs()
            + if v > 1.0 {
                if v > 2.0 {
                    3.0
                } else {
                    2.0
                }
            } else {
                1.0
            };
        let j = i.saturating_sub(1);
        let w = if v < -1.0 {
            1.0
        } else if (if v > 0.5 { v } else { 0.0 }) > 1.5 {
            x[j] + if v > 1.75 { 10.0 } else { 20.0 }
        } else if i % 3 == 0 {
            5.0
        } else {
            6.0
        };
        s[i] = w + if i % 2 == 0 { 0.0 } else { 0.5 };
    }
    (y, s)
}

#[test]
fn if_values_anywhere_agree_with_rust() {
    let mut rt = common::rt();
    for n in [1usize, 63, 1001, 70_001] {
        let x: Vec<f32> = (0..n).map(|k| ((k * 17) % 41) as f32 / 8.0 - 2.5).collect();
        let want = if_values_reference(&x);
        let got = values::if_values::run(&mut rt, &x, n as u32).unwrap();
        assert_eq!(got, want, "GPU at n = {n}");
        assert_eq!(
            values::if_values::cpu(&x, n as u32).unwrap(),
            want,
            "oracle at n = {n}"
        );
    }
}

// ---- workgroup memory of a generic type ----

/// Each element's workgroup total, through per-subgroup sums in workgroup memory of `T`.
#[forge_kernel(workgroup = 256, threads = n, types(T = [f32, u32]))]
pub fn block_sums<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
    #[shared]
    let mut tot = [0 as T; 64];
    let i = global_index();
    let s = subgroup_add(if i < n { x[i] } else { 0 as T });
    if subgroup_invocation_id() == 0 {
        tot[subgroup_id()] = s;
    }
    workgroup_barrier();
    if i < n {
        let mut t = 0 as T;
        for k in 0..num_subgroups() {
            t += tot[k];
        }
        y[i] = t;
    }
}

fn block_totals(x: &[u32]) -> Vec<u32> {
    x.chunks(256)
        .flat_map(|c| std::iter::repeat_n(c.iter().sum::<u32>(), c.len()))
        .collect()
}

#[test]
fn workgroup_memory_of_a_generic_type() {
    let mut rt = common::rt();
    for n in [1usize, 255, 257, 1001] {
        let x: Vec<u32> = (0..n as u32).map(|k| (k * 31) % 17).collect();
        let want = block_totals(&x);
        assert_eq!(
            block_sums::run(&mut rt, &x, n as u32).unwrap(),
            want,
            "u32 GPU at {n}"
        );
        assert_eq!(
            block_sums::cpu(&x, n as u32).unwrap(),
            want,
            "u32 oracle at {n}"
        );
        // Small whole numbers: every order of summation gives the same f32.
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let wf: Vec<f32> = want.iter().map(|&v| v as f32).collect();
        assert_eq!(
            block_sums::run(&mut rt, &xf, n as u32).unwrap(),
            wf,
            "f32 GPU at {n}"
        );
        assert_eq!(
            block_sums::cpu(&xf, n as u32).unwrap(),
            wf,
            "f32 oracle at {n}"
        );
    }
}

// ---- types through `macro_rules!` ----

macro_rules! doubled {
    ($name:ident, $t:ty) => {
        /// `y = 2x`, its element type a `$t:ty` fragment.
        #[forge_kernel(threads = n)]
        pub fn $name(x: &[$t; n], #[out] y: &mut [$t; n], n: u32) {
            let i = global_index();
            if i < n {
                let two: $t = 2 as $t;
                let mut acc = [0 as $t; 2];
                acc[1] = x[i] * two;
                y[i] = acc[1];
            }
        }
    };
}
doubled!(doubled_f32, f32);
doubled!(doubled_i32, i32);

#[test]
fn types_from_macro_fragments_are_the_types() {
    let mut rt = common::rt();
    let x: Vec<f32> = (0..1001).map(|k| k as f32 * 0.5 - 100.0).collect();
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(doubled_f32::run(&mut rt, &x, 1001).unwrap(), want);
    assert_eq!(doubled_f32::cpu(&x, 1001).unwrap(), want);
    let xi: Vec<i32> = (0..77).map(|k| k * 3 - 100).collect();
    let wi: Vec<i32> = xi.iter().map(|v| v * 2).collect();
    assert_eq!(doubled_i32::run(&mut rt, &xi, 77).unwrap(), wi);
    assert_eq!(doubled_i32::cpu(&xi, 77).unwrap(), wi);
}

// ---- arrays of arrays ----

/// A tiled transpose through a padded 2-D tile of workgroup memory, and a 2-D local array.
#[forge_kernel(threads = (cols, rows.div_ceil(32) * 8), workgroup = (32, 8))]
pub fn transpose(a: &[f32; rows * cols], #[out] t: &mut [f32; rows * cols], rows: u32, cols: u32) {
    #[shared]
    let mut tile = [[0.0f32; 33]; 32];
    let l = local_id();
    let g = global_id();
    let row0 = workgroup_id().y * 32;
    for k in 0..4u32 {
        let r = row0 + l.y + k * 8;
        if g.x < cols && r < rows {
            tile[l.y + k * 8][l.x] = a[r * cols + g.x];
        }
    }
    workgroup_barrier();
    let col0 = workgroup_id().x * 32;
    let mut pair = [[0.0f32; 2]; 4];
    for k in 0..4u32 {
        let c = col0 + l.y + k * 8;
        let r = row0 + l.x;
        pair[k][0] = tile[l.x][l.y + k * 8];
        pair[k][1] = r as f32;
        if c < cols && r < rows {
            t[c * rows + r] = pair[k][0] + pair[k][1] * 0.0;
        }
    }
}

#[test]
fn arrays_of_arrays_in_workgroup_and_local_memory() {
    let mut rt = common::rt();
    for (rows, cols) in [(1u32, 1u32), (31, 33), (64, 32), (70, 129)] {
        let a: Vec<f32> = (0..rows * cols).map(|k| k as f32).collect();
        let mut want = vec![0.0f32; (rows * cols) as usize];
        for r in 0..rows as usize {
            for c in 0..cols as usize {
                want[c * rows as usize + r] = a[r * cols as usize + c];
            }
        }
        assert_eq!(
            transpose::cpu(&a, rows, cols).unwrap(),
            want,
            "oracle at {rows}x{cols}"
        );
        assert_eq!(
            transpose::run(&mut rt, &a, rows, cols).unwrap(),
            want,
            "GPU at {rows}x{cols}"
        );
    }
}

// ---- `threads` and LENs that name the schedule's constants ----

/// One workgroup per row at every workgroup size of the tuning space.
#[forge_kernel(workgroup = 256, threads = rows * WG, tune(workgroup = [64, 128, 256]), case(rows = 3, cols = 1000), case(rows = 70, cols = 33))]
pub fn row_sums(x: &[f32; rows * cols], #[out] y: &mut [f32; rows], rows: u32, cols: u32) {
    #[shared]
    let mut part = [0.0f32; WG];
    let row = workgroup_index();
    let lid = local_index();
    let mut s = 0.0f32;
    for c in (lid..cols).step_by(WG) {
        s += x[row * cols + c];
    }
    part[lid] = s;
    workgroup_barrier();
    if lid == 0 {
        let mut t = 0.0f32;
        for k in 0..WG {
            t += part[k];
        }
        y[row] = t;
    }
}

/// `ROWS` rows per team of 64, and an output whose length names the knob.
#[forge_kernel(workgroup = 64, threads = m.div_ceil(ROWS) * 64, knobs(ROWS = 4), tune(ROWS = [2, 4, 8]), case(m = 37, n = 20))]
pub fn rows_per_team(
    a: &[f32; m * n],
    #[out] y: &mut [f32; m],
    #[out] teams: &mut [u32; m.div_ceil(ROWS)],
    m: u32,
    n: u32,
) {
    let team = workgroup_index();
    let lid = local_index();
    if lid < ROWS {
        let row = team * ROWS + lid;
        if row < m {
            let mut s = 0.0f32;
            for j in 0..n {
                s += a[row * n + j];
            }
            y[row] = s;
        }
    }
    if lid == 0 {
        teams[team] = ROWS;
    }
}

#[test]
fn threads_and_lengths_follow_the_schedule() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = common::rt();
    // Small whole numbers: every order of summation gives the same sums.
    let (rows, cols) = (70u32, 33u32);
    let x: Vec<f32> = (0..rows * cols).map(|k| (k % 7) as f32).collect();
    let want: Vec<f32> = (0..rows as usize)
        .map(|r| x[r * cols as usize..(r + 1) * cols as usize].iter().sum())
        .collect();
    for wg in [64u32, 128, 256] {
        let s = row_sums::DEFAULT_SCHEDULE
            .with_settings(&format!("wg={wg}"))
            .unwrap();
        assert_eq!(
            row_sums::run_with(&mut rt, &s, &x, rows, cols).unwrap(),
            want,
            "GPU at WG = {wg}"
        );
        assert_eq!(
            row_sums::cpu_with(&s, &x, rows, cols).unwrap(),
            want,
            "oracle at WG = {wg}"
        );
    }
    let k = row_sums::Kernel;
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let report = certify(&mut rt, &k, &s, &CertOptions::default()).unwrap();
        assert!(report.passed(), "row_sums at {s}: {:?}", report.failures);
    }
    let (m, n) = (37u32, 20u32);
    let a: Vec<f32> = (0..m * n).map(|k| (k % 5) as f32).collect();
    let want: Vec<f32> = (0..m as usize)
        .map(|r| a[r * n as usize..(r + 1) * n as usize].iter().sum())
        .collect();
    for rows in [2u32, 4, 8] {
        let s = rows_per_team::DEFAULT_SCHEDULE.with_knob("ROWS", rows);
        let (y, teams) = rows_per_team::run_with(&mut rt, &s, &a, m, n).unwrap();
        assert_eq!(y, want, "GPU at ROWS = {rows}");
        assert_eq!(
            teams,
            vec![rows; m.div_ceil(rows) as usize],
            "GPU at ROWS = {rows}"
        );
        assert_eq!(
            rows_per_team::cpu_with(&s, &a, m, n).unwrap(),
            (y, teams),
            "oracle at ROWS = {rows}"
        );
    }
    let k = rows_per_team::Kernel;
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let report = certify(&mut rt, &k, &s, &CertOptions::default()).unwrap();
        assert!(
            report.passed(),
            "rows_per_team at {s}: {:?}",
            report.failures
        );
    }
}

// ---- `tune(keep = ..)`: combinations a kernel was not written for ----

/// Sums of `WG * ITEMS`-element chunks (a workgroup a chunk: `threads` counts `ITEMS`
/// logical items an invocation), staged through workgroup memory: each invocation
/// loads `ITEMS` elements, then invocation 0 adds the chunk up. `keep` holds chunks to
/// 256 elements, so of the 3 × 3 combinations, `(128, 4)`, `(256, 2)` and `(256, 4)` go.
#[forge_kernel(workgroup = 64, threads = n.div_ceil(WG * ITEMS) * WG * ITEMS,
    tune(workgroup = [64, 128, 256], items = [1, 2, 4], keep = WG * ITEMS <= 256),
    case(n = 1000), case(n = 1), case(n = 4099))]
pub fn chunk_sums(x: &[u32; n], #[out] y: &mut [u32; n.div_ceil(WG * ITEMS)], n: u32) {
    #[shared]
    let mut chunk = [0u32; WG * ITEMS];
    let lid = local_index();
    let base = workgroup_index() * WG * ITEMS;
    for j in 0..ITEMS {
        let e = lid * ITEMS + j;
        chunk[e] = if base + e < n { x[base + e] } else { 0 };
    }
    workgroup_barrier();
    if lid == 0 {
        let mut s = 0u32;
        for e in 0..WG * ITEMS {
            s += chunk[e];
        }
        y[workgroup_index()] = s;
    }
}

#[test]
fn keep_drops_combinations_from_the_space_and_from_launches() {
    use wgsl_forge::certify::{certify, CertOptions};
    let k = chunk_sums::Kernel;
    let space = k.tune_space();
    let kept: Vec<(u32, u32)> = space
        .candidates()
        .iter()
        .map(|s| (s.workgroup, s.items))
        .collect();
    assert_eq!(
        kept,
        [(64, 1), (64, 2), (64, 4), (128, 1), (128, 2), (256, 1)]
    );
    assert_eq!(space.len(), 6);
    assert!(
        space.to_string().ends_with("keep: WG * ITEMS <= 256"),
        "{space}"
    );
    let mut rt = common::rt();
    let n = 5000u32;
    let x: Vec<u32> = (0..n).map(|i| i * 7 % 1000).collect();
    for s in space.candidates() {
        let chunk = (s.workgroup * s.items) as usize;
        let want: Vec<u32> = x.chunks(chunk).map(|c| c.iter().sum()).collect();
        assert_eq!(
            chunk_sums::run_with(&mut rt, &s, &x, n).unwrap(),
            want,
            "GPU at {s}"
        );
        assert_eq!(
            chunk_sums::cpu_with(&s, &x, n).unwrap(),
            want,
            "oracle at {s}"
        );
        let report = certify(&mut rt, &k, &s, &CertOptions::default()).unwrap();
        assert!(report.passed(), "chunk_sums at {s}: {:?}", report.failures);
    }
    // A dropped combination is refused, on the GPU and in the oracle, naming `keep`.
    let dropped = chunk_sums::DEFAULT_SCHEDULE
        .with_settings("wg=256,items=2")
        .unwrap();
    for e in [
        chunk_sums::run_with(&mut rt, &dropped, &x, n).unwrap_err(),
        chunk_sums::cpu_with(&dropped, &x, n).unwrap_err(),
    ] {
        assert!(
            matches!(&e, ForgeError::BadSchedule { reason, .. } if reason.contains("keep = WG * ITEMS <= 256")),
            "{e}"
        );
    }
}

// ---- helpers that take bindings ----

#[forge_module]
pub mod staged {
    use wgsl_forge::prelude::*;

    /// Copies 512 vectors of `src` from `base` into `dst`, the workgroup's invocations
    /// striding over them.
    #[forge_fn]
    fn stage(dst: &mut [Vec4; 512], src: &[Vec4; 4096], base: u32) {
        for k in (local_index()..512u32).step_by(64) {
            dst[k] = src[base + k];
        }
    }

    /// Writes `v` and `w` added to element `k` of a binding: a helper that writes one.
    #[forge_fn]
    fn put(out: &mut [Vec4; 64], k: u32, v: Vec4, w: Vec4) {
        out[k] = v;
        out[k] += w;
    }

    #[forge_kernel(workgroup = 64, threads = 64)]
    pub fn k(kv: &[Vec4; 4096], #[out] o: &mut [Vec4; 64]) {
        #[shared]
        let mut t = [Vec4::ZERO; 512];
        let lid = local_index();
        let mut acc = Vec4::ZERO;
        for chunk in 0..8u32 {
            stage(&mut t, kv, chunk * 512);
            workgroup_barrier();
            for j in 0..8u32 {
                acc += t[lid * 8 + j];
            }
            workgroup_barrier();
        }
        put(&mut o, lid, acc, Vec4::ZERO);
    }
}

#[test]
fn helpers_take_bindings_specialised_per_call() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = common::rt();
    let kv: Vec<[f32; 4]> = (0..4096)
        .map(|k| [(k % 7) as f32, (k % 3) as f32, 1.0, (k / 512) as f32])
        .collect();
    let mut want = vec![[0.0f32; 4]; 64];
    for chunk in 0..8 {
        for lid in 0..64 {
            for j in 0..8 {
                let v = kv[chunk * 512 + lid * 8 + j];
                for c in 0..4 {
                    want[lid][c] += v[c];
                }
            }
        }
    }
    assert_eq!(staged::k::cpu(&kv).unwrap(), want, "oracle");
    assert_eq!(staged::k::run(&mut rt, &kv).unwrap(), want, "GPU");
    let k = staged::k::Kernel;
    let report = certify(&mut rt, &k, &k.default_schedule(), &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
}

// ---- helpers that take arrays of atomics ----

#[forge_module]
pub mod counted {
    use wgsl_forge::prelude::*;

    /// Zeroes 64 workgroup bins, the workgroup's invocations striding over them.
    #[forge_fn]
    fn clear(bins: &mut [Atomic<u32>; 64], lid: u32) {
        let mut i = lid;
        while i < 64 {
            bins[i].store(0);
            i += WG;
        }
    }

    /// Adds `c` to bin `i`: an array of atomics passed on from another helper.
    #[forge_fn]
    fn add(bins: &mut [Atomic<u32>; 64], i: u32, c: u32) {
        bins[i].fetch_add(c);
    }

    /// Adds the workgroup's nonzero bins into the binding `hist`.
    #[forge_fn]
    fn flush(hist: &mut [Atomic<u32>; 64], bins: &mut [Atomic<u32>; 64], lid: u32) {
        let mut i = lid;
        while i < 64 {
            let c = bins[i].load();
            if c > 0 {
                add(hist, i, c);
            }
            i += WG;
        }
    }

    /// Raises `top[0]` to `v`, and gives what it held: a helper's atomic result.
    #[forge_fn]
    fn raise(top: &mut [Atomic<u32>; 1], v: u32) -> u32 {
        top[0].fetch_max(v)
    }

    /// A histogram of `x % 64` through workgroup bins that only helpers touch, added to
    /// `hist` (which holds counts already), and the maximum of `x` raised into `top`.
    #[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [64, 32, 128]))]
    pub fn hist64(
        x: &[u32; n],
        hist: &mut [Atomic<u32>; 64],
        top: &mut [Atomic<u32>; 1],
        #[out] below: &mut [u32; n],
        n: u32,
    ) {
        #[shared]
        let mut bins = [0u32; 64];
        let lid = local_index();
        clear(&mut bins, lid);
        workgroup_barrier();
        let i = global_index();
        if i < n {
            add(&mut bins, x[i] % 64, 1);
            // What `top` held before is some other invocation's value, or the start:
            // never above the maximum.
            below[i] = select(0u32, 1u32, raise(&mut top, x[i]) <= 1_000_000);
        }
        workgroup_barrier();
        flush(&mut hist, &mut bins, lid);
    }
}

#[test]
fn helpers_take_arrays_of_atomics() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = common::rt();
    for n in [1u32, 63, 64 * 37 + 5, 70001] {
        let x: Vec<u32> = (0..n)
            .map(|i| i.wrapping_mul(2654435761) % 1_000_000)
            .collect();
        let start: Vec<u32> = (0..64).map(|b| b * 3).collect();
        let mut want = start.clone();
        for v in &x {
            want[(*v % 64) as usize] += 1;
        }
        let want_top = vec![*x.iter().max().unwrap()];
        let (mut h, mut t) = (start.clone(), vec![0u32]);
        let below = counted::hist64::cpu(&x, &mut h, &mut t, n).unwrap();
        assert_eq!((&h, &t), (&want, &want_top), "oracle at n = {n}");
        assert!(below.iter().all(|b| *b == 1), "oracle at n = {n}");
        let (mut h, mut t) = (start.clone(), vec![0u32]);
        let below = counted::hist64::run(&mut rt, &x, &mut h, &mut t, n).unwrap();
        assert_eq!((&h, &t), (&want, &want_top), "GPU at n = {n}");
        assert!(below.iter().all(|b| *b == 1), "GPU at n = {n}");
    }
    let k = counted::hist64::Kernel;
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let report = certify(&mut rt, &k, &s, &CertOptions::default()).unwrap();
        assert!(report.passed(), "hist64 at {s}: {:?}", report.failures);
    }
}

// ---- a helper that stages a tile by asynchronous copies ----

#[forge_module]
pub mod staged_async {
    use wgsl_forge::prelude::*;

    /// Starts the copies of `dst`'s 256 vectors from `src[base..]`, four an invocation
    /// (`async_wait` completes them): the destination a `#[shared]` array, the source a
    /// binding, both given where the helper is called.
    #[forge_fn]
    fn stage(dst: &mut [Vec4; 256], src: &[Vec4; 4096], base: u32, lid: u32) {
        #[unroll]
        for j in 0..4 {
            let e = lid + 64 * j;
            async_copy(&mut dst[e], &src[base + e]);
        }
    }

    /// Each invocation's sum of four consecutive staged vectors, a tile a workgroup.
    #[forge_kernel(workgroup = 64, threads = 1024)]
    pub fn quads(kv: &[Vec4; 4096], #[out] o: &mut [Vec4; 1024]) {
        #[shared]
        let mut t = [Vec4::ZERO; 256];
        let lid = local_index();
        stage(&mut t, kv, workgroup_index() * 256, lid);
        async_wait(0);
        let q = 4 * lid;
        o[global_index()] = t[q] + t[q + 1] + t[q + 2] + t[q + 3];
    }
}

#[test]
fn a_helper_stages_a_tile_by_asynchronous_copies() {
    let mut rt = common::rt();
    let kv: Vec<[f32; 4]> = (0..4096)
        .map(|k| [k as f32, (k % 5) as f32, -(k as f32), 0.5])
        .collect();
    let want: Vec<[f32; 4]> = (0..1024)
        .map(|i| {
            let mut s = [0.0f32; 4];
            for v in &kv[4 * i..4 * i + 4] {
                for c in 0..4 {
                    s[c] += v[c];
                }
            }
            s
        })
        .collect();
    assert_eq!(staged_async::quads::cpu(&kv).unwrap(), want, "oracle");
    assert_eq!(staged_async::quads::run(&mut rt, &kv).unwrap(), want, "GPU");
}

// ---- workgroup_uniform_load ----

/// A loop bound read from workgroup memory by `workgroup_uniform_load`, which counts as
/// uniform, so the loop may hold a barrier.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn uniform_rounds(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    #[shared]
    let mut count = [0u32; 1];
    #[shared]
    let mut acc = [0u32; 64];
    let i = global_index();
    let lid = local_index();
    if lid == 0 {
        count[0] = x[(workgroup_index() * 64) % n] % 5 + 1;
    }
    let rounds = workgroup_uniform_load(&count[0]);
    for r in 0..rounds {
        acc[lid] += r;
        workgroup_barrier();
    }
    if i < n {
        y[i] = acc[lid] + rounds;
    }
}

#[test]
fn a_workgroup_uniform_load_is_uniform() {
    let mut rt = common::rt();
    for n in [1u32, 63, 65, 1000] {
        let x: Vec<u32> = (0..n).map(|k| k * 7 + 3).collect();
        let want: Vec<u32> = (0..n)
            .map(|i| {
                let rounds = x[((i / 64) * 64 % n) as usize] % 5 + 1;
                (0..rounds).sum::<u32>() + rounds
            })
            .collect();
        assert_eq!(uniform_rounds::cpu(&x, n).unwrap(), want, "oracle at {n}");
        assert_eq!(
            uniform_rounds::run(&mut rt, &x, n).unwrap(),
            want,
            "GPU at {n}"
        );
    }
}

// ---- helpers generic over their arrays' lengths ----

#[forge_module]
pub mod lengths {
    use wgsl_forge::prelude::*;

    /// `t[0..N]` reversed in place, the workgroup's invocations striding over the pairs;
    /// `N` is a value here (a `u32`, as `WG` is).
    #[forge_fn]
    fn reverse<const N: usize>(t: &mut [u32; N], lid: u32) {
        for i in (lid..N / 2).step_by(WG) {
            let j = N - 1 - i;
            let v = t[i];
            t[i] = t[j];
            t[j] = v;
        }
        workgroup_barrier();
    }

    /// The wrapping sum of `t`.
    #[forge_fn]
    fn total<const N: usize>(t: &[u32; N]) -> u32 {
        let mut s = 0u32;
        for i in 0..N as u32 {
            s += t[i];
        }
        s
    }

    /// The largest element of `t`, through a running maximum in a local array of `t`'s
    /// length.
    #[forge_fn]
    fn largest<const N: usize>(t: &[u32; N]) -> u32 {
        let mut m = [0u32; N];
        m[0] = t[0];
        for i in 1..N {
            m[i] = m[i - 1].max(t[i]);
        }
        m[N - 1]
    }

    /// Two generic helpers called on a helper's own parameter, whose length `M` fixes
    /// theirs; `k` is an array of another length.
    #[forge_fn]
    fn mix<const M: usize, const K: usize>(t: &[u32; M], k: &[u32; K]) -> u32 {
        total(t) * 3 + largest(t) + total(k) * (K as u32) + M as u32
    }

    /// Per workgroup `g`: its 100 elements of `x` into workgroup arrays of 100 and of
    /// `WG * 2` (the first 100, then the first 28 again), each reversed by the same helper;
    /// then sums and maxima over both, and over a local array of 5.
    #[forge_kernel(workgroup = 64, threads = groups * 64)]
    pub fn by_length(
        x: &[u32; groups * 100],
        #[out] y: &mut [u32; groups * 4],
        #[out] z: &mut [u32; groups * 64],
        groups: u32,
    ) {
        #[shared]
        let mut a = [0u32; 100];
        #[shared]
        let mut b = [0u32; WG * 2];
        let (g, lid) = (workgroup_index(), local_index());
        for i in (lid..100u32).step_by(WG) {
            a[i] = x[g * 100 + i];
        }
        b[lid] = x[g * 100 + lid];
        b[lid + WG] = x[g * 100 + (lid + WG) % 100];
        workgroup_barrier();
        reverse(&mut a, lid);
        reverse(&mut b, lid);
        let mut r = [0u32; 5];
        for k in 0..5u32 {
            r[k] = a[(lid + k * 7) % 100] ^ b[(lid * 3 + k) % (WG * 2)];
        }
        z[g * 64 + lid] = total(&r) + largest(&r) * 2 + mix(&r, &r);
        if lid == 0 {
            y[g * 4] = total(&a);
            y[g * 4 + 1] = largest(&b);
            y[g * 4 + 2] = mix(&a, &r);
            y[g * 4 + 3] = a[0] * 7 + b[0] + mix(&b, &a);
        }
    }
}

/// `lengths::by_length` in plain Rust.
fn by_length_reference(x: &[u32], groups: usize) -> (Vec<u32>, Vec<u32>) {
    let total = |t: &[u32]| t.iter().fold(0u32, |s, v| s.wrapping_add(*v));
    let largest = |t: &[u32]| *t.iter().max().unwrap();
    let mix = |t: &[u32], k: &[u32]| {
        total(t)
            .wrapping_mul(3)
            .wrapping_add(largest(t))
            .wrapping_add(total(k).wrapping_mul(k.len() as u32))
            .wrapping_add(t.len() as u32)
    };
    let (mut y, mut z) = (vec![0u32; groups * 4], vec![0u32; groups * 64]);
    for g in 0..groups {
        let xs = &x[g * 100..g * 100 + 100];
        let mut a = xs.to_vec();
        let mut b: Vec<u32> = (0..128).map(|i| xs[i % 100]).collect();
        a.reverse();
        b.reverse();
        for lid in 0..64 {
            let r: Vec<u32> = (0..5)
                .map(|k| a[(lid + k * 7) % 100] ^ b[(lid * 3 + k) % 128])
                .collect();
            z[g * 64 + lid] = total(&r)
                .wrapping_add(largest(&r).wrapping_mul(2))
                .wrapping_add(mix(&r, &r));
        }
        let r: Vec<u32> = (0..5).map(|k| a[k * 7] ^ b[k]).collect();
        y[g * 4] = total(&a);
        y[g * 4 + 1] = largest(&b);
        y[g * 4 + 2] = mix(&a, &r);
        y[g * 4 + 3] = a[0]
            .wrapping_mul(7)
            .wrapping_add(b[0])
            .wrapping_add(mix(&b, &a));
    }
    (y, z)
}

#[test]
fn helpers_generic_over_lengths_take_each_calls_length() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x1e9);
    let mut rt = common::rt();
    for groups in [1usize, 3, 7] {
        // Large values, so that the sums wrap.
        let x: Vec<u32> = (0..groups * 100).map(|_| rng.gen()).collect();
        let want = by_length_reference(&x, groups);
        let g = groups as u32;
        assert_eq!(
            lengths::by_length::cpu(&x, g).unwrap(),
            want,
            "oracle at {groups} groups"
        );
        assert_eq!(
            lengths::by_length::run(&mut rt, &x, g).unwrap(),
            want,
            "GPU at {groups} groups"
        );
    }
}

// ---- indirect launches: a count of invocations that an earlier launch wrote ----

/// Counts the positive elements of `x`, for the launch after it.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn count_positive(x: &[f32; n], count: &mut [Atomic<u32>; 1], n: u32) {
    let i = global_index();
    if i < n && x[i] > 0.0 {
        count[0].fetch_add(1);
    }
}

/// Squares the first `count[0]` elements of `y` in place: `count[0]` invocations, read on
/// the device when the launch runs, at most `n`.
#[forge_kernel(workgroup = 64, threads = n, indirect = count[0], tune(workgroup = [64, 128, 256]))]
pub fn square_head(count: &[u32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < count[0] {
        y[i] = y[i] * y[i];
    }
}

/// What `square_head` computes, written here.
fn square_head_reference(count: u32, y: &[f32]) -> Vec<f32> {
    y.iter()
        .enumerate()
        .map(|(i, v)| if (i as u32) < count { v * v } else { *v })
        .collect()
}

fn signed_values(n: u32, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed) >> 7) % 19) as f32 - 9.0)
        .collect()
}

#[test]
fn an_indirect_launch_runs_the_count_it_is_given() {
    let mut rt = common::rt();
    for (n, counts) in [
        (1u32, vec![0u32, 1]),
        (63, vec![0, 1, 62, 63]),
        (1000, vec![0, 7, 999, 1000]),
        (70_001, vec![70_001, 65_536, 3]),
    ] {
        let y = signed_values(n, n);
        // Past 65,535 workgroups with one invocation each: the launch folds.
        let s = if n > 65535 {
            common::one_per_group(square_head::DEFAULT_SCHEDULE)
        } else {
            square_head::DEFAULT_SCHEDULE
        };
        for count in counts {
            let want = square_head_reference(count, &y);
            let (mut gpu, mut cpu) = (y.clone(), y.clone());
            square_head::run_with(&mut rt, &s, &[count], &mut gpu, n).unwrap();
            square_head::cpu_with(&s, &[count], &mut cpu, n).unwrap();
            assert_eq!(gpu, want, "GPU, n = {n}, count = {count}");
            assert_eq!(cpu, want, "oracle, n = {n}, count = {count}");
        }
    }
}

/// `result` is `square_head`'s count past its bound.
fn assert_indirect_count<T: std::fmt::Debug>(
    result: Result<T, ForgeError>,
    count: u32,
    bound: u64,
) {
    match result {
        Err(ForgeError::IndirectCount {
            kernel,
            count: c,
            bound: b,
            ..
        }) => assert_eq!((kernel, c, b), ("square_head", count, bound)),
        other => panic!("expected IndirectCount, got {other:?}"),
    }
}

#[test]
fn a_count_past_its_bound_is_an_error_on_host_data() {
    let mut rt = common::rt();
    let y = signed_values(100, 1);
    let (mut gpu, mut cpu) = (y.clone(), y.clone());
    for result in [
        square_head::run(&mut rt, &[101], &mut gpu, 100),
        square_head::cpu(&[101], &mut cpu, 100),
    ] {
        assert_indirect_count(result, 101, 100);
    }
    // Nothing ran.
    assert_eq!((gpu, cpu), (y.clone(), y));
}

#[test]
fn a_chain_of_launches_reads_the_count_on_the_device() {
    let mut rt = common::rt();
    // At 150,000 with one invocation a workgroup, the count's 70,000-odd workgroups
    // fold past 65,535.
    for (n, wg) in [(1u32, 64), (200, 64), (70_001, 128), (150_000, 1)] {
        let x = signed_values(n, 3);
        let y = signed_values(n, 5);
        let positives = x.iter().filter(|v| **v > 0.0).count() as u32;
        let (xt, yt) = (rt.upload(&x).unwrap(), rt.upload(&y).unwrap());
        let count = rt.zeros::<u32>(1).unwrap();
        count_positive::launch(&mut rt, &xt, &count, n).unwrap();
        let s = square_head::DEFAULT_SCHEDULE
            .with_settings(&format!("wg={wg}"))
            .unwrap();
        square_head::launch_with(&mut rt, &s, &count, &yt, n).unwrap();
        // The second launch's grid came from the first's count, without a readback.
        assert_eq!(
            rt.download(&yt).unwrap(),
            square_head_reference(positives, &y),
            "n = {n}"
        );
        assert_eq!(rt.download(&count).unwrap(), vec![positives]);
        assert!(n < 150_000 || positives > 65_535, "the count folds");
    }
}

#[test]
fn a_count_past_its_bound_on_the_device_fails_the_next_readback() {
    let mut rt = common::rt();
    let y = signed_values(300, 7);
    let yt = rt.upload(&y).unwrap();
    let count = rt.upload(&[1000u32]).unwrap();
    square_head::launch(&mut rt, &count, &yt, 300).unwrap();
    assert_indirect_count(rt.download(&yt), 1000, 300);
    // Reported once; the launch ran its bound, and later work is checked afresh.
    assert_eq!(rt.download(&yt).unwrap(), square_head_reference(300, &y));
    rt.write(&count, &[10]).unwrap();
    square_head::launch(&mut rt, &count, &yt, 300).unwrap();
    let squared = square_head_reference(300, &y);
    assert_eq!(
        rt.download(&yt).unwrap(),
        square_head_reference(10, &squared)
    );
}

#[test]
fn indirect_kernels_certify_at_every_schedule() {
    use wgsl_forge::certify::{certify, CertOptions};
    let mut rt = common::rt();
    let k = square_head::Kernel;
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let report = certify(&mut rt, &k, &s, &CertOptions::default()).unwrap();
        assert!(report.passed(), "square_head at {s}: {:?}", report.failures);
    }
}

#[test]
fn indirect_kernels_tune_at_their_bound() {
    use wgsl_forge::certify::CertOptions;
    use wgsl_forge::tune;
    // The tuner's problem runs the whole bound: its count is the bound, not a random word
    // (which a host call would refuse as past it).
    let scalars = [wgsl_forge::ScalarValue::U32(5000)];
    let args = tune::problem_args(&square_head::Kernel, &scalars, &CertOptions::new(9)).unwrap();
    let count = args.buffers[0].as_ref().expect("the count is drawn");
    assert_eq!(count.words()[0], 5000);
    let mut rt = common::rt();
    let report = tune::tune(&mut rt, &square_head::Kernel, &common::quick_tune()).unwrap();
    let winner = report.winner().expect("a certified winner");
    assert!(square_head::Kernel
        .tune_space()
        .candidates()
        .contains(&winner));
}
