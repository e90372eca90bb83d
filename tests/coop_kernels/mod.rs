//! Kernels on cooperative matrices, for the places that run them: `tests/language_coop.rs`
//! (the oracle against f64 references everywhere, the GPU where the adapter has the
//! feature) and `tests/cuda_runtime.rs` (tensor cores through the CUDA emitter, on the
//! H200). Between them they take every path the backends have for a load, a store and a
//! product: row- and column-major, from bindings and from workgroup memory, rows on 16
//! bytes (where CUDA's loads take `ldmatrix`) and rows off them (element by element).
#![allow(dead_code)]

use wgsl_forge::prelude::*;

pub use tile::coop_tile;

/// `coop_tile` and the helpers that hold its matrices (inlined at each call): loads and a
/// multiply through reference parameters given bindings, a store through one.
#[forge_module]
pub mod tile {
    use wgsl_forge::prelude::*;

    /// `acc + A·B` for one 16-deep step: `A` row-major from `x` at `i`, `B` column-major from
    /// `y` at `j`, both `k` apart.
    #[forge_fn]
    fn step<const N: usize, const M: usize>(
        acc: CoopC<f32>,
        x: &[f16; N],
        y: &[f16; M],
        i: u32,
        j: u32,
        k: u32,
    ) -> CoopC<f32> {
        let a = CoopA::load_row_major(&x[i], k);
        let b = CoopB::load_col_major(&y[j], k);
        a.mul_add(b, acc)
    }

    /// `t` row-major into `dst` from `at`, rows `stride` apart.
    #[forge_fn]
    fn put<const N: usize>(t: CoopC<f32>, dst: &mut [f32; N], at: u32, stride: u32) {
        t.store_row_major(&mut dst[at], stride);
    }

    /// `c = a·b` and `ct = (a·b)ᵀ` for row-major `a` (`m×k`) and `b` given transposed (`bt`,
    /// `n×k`), `m`, `n`, `k` multiples of 16: a workgroup of one 32-lane subgroup computes a
    /// 16×16 tile, loading `a` row-major and `b` column-major (`step`), storing row-major to
    /// `c` (`put`) and column-major through workgroup memory for `ct`.
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
            // B(p, j) = bt[j·k + p]: column-major with stride k.
            acc = step(acc, a, bt, r0 * k + kk * 16, c0 * k + kk * 16, k);
        }
        put(acc, &mut c, r0 * n + c0, n);
        acc.store_col_major(&mut stage[0], 16);
        workgroup_barrier();
        // `stage` holds element (r, j) at j·16 + r: row j of the transposed tile.
        let l = local_index();
        for e in 0..8 {
            let i = l * 8 + e;
            ct[(c0 + i / 16) * m + r0 + i % 16] = stage[i];
        }
    }
}

/// The largest stride `coop_layouts` takes: its workgroup arrays hold 16 rows of it.
pub const MAX_STRIDE: u32 = 24;

/// Every layout, one 16×16 tile each, for a 32-lane workgroup. `a`, `b` and `c` hold
/// matrices with rows (or columns) `s` elements apart; `sa` and `sb` are copies of `a` and
/// `b` in workgroup memory. Each tile of `out` (row-major, stride 16) is one product:
/// 0. `A` row-major from `a`, `B` row-major from `b`, plus `C` row-major from `c`;
/// 1. the same three column-major;
/// 2. `A` and `B` row-major from workgroup memory at element 8 (16 bytes in: rows on 16
///    bytes where `s` is a multiple of 8), stored column-major;
/// 3. the same column-major, stored row-major to workgroup memory and copied out;
/// 4. `A` row-major and `B` column-major from workgroup memory at element 1 (rows off 16
///    bytes whatever `s`);
/// 5. two steps accumulated: tile 0's product added to tile 3's.
///
/// `h` holds `A` (from `sa`, row-major) stored row-major, then `B` (from `b`, row-major)
/// stored column-major.
#[forge_kernel(workgroup = 32, threads = 32, reference = coop_layouts_reference,
    tolerance(abs = 1e-3, rel = 1e-3),
    case(s = 16), case(s = 17), case(s = 24))]
pub fn coop_layouts(
    a: &[f16; 16 * s + 16],
    b: &[f16; 16 * s + 16],
    c: &[f32; 16 * s],
    #[out] out: &mut [f32; 256 * 6],
    #[out] h: &mut [f16; 256 * 2],
    s: u32,
) {
    #[shared]
    let mut sa = [0.0f16; 16 * 24 + 16];
    #[shared]
    let mut sb = [0.0f16; 16 * 24 + 16];
    #[shared]
    let mut sc = [0.0f32; 256];
    let l = local_index();
    for e in 0..(16 * s + 16).div_ceil(32) {
        let i = l + 32 * e;
        if i < 16 * s + 16 {
            sa[i] = a[i];
            sb[i] = b[i];
        }
    }
    workgroup_barrier();
    let c_row = CoopC::load_row_major(&c[0], s);
    let t0 = CoopA::load_row_major(&a[8], s).mul_add(CoopB::load_row_major(&b[8], s), c_row);
    t0.store_row_major(&mut out[0], 16);
    let t1 = CoopA::load_col_major(&a[8], s).mul_add(
        CoopB::load_col_major(&b[8], s),
        CoopC::load_col_major(&c[0], s),
    );
    t1.store_row_major(&mut out[256], 16);
    let t2 =
        CoopA::load_row_major(&sa[8], s).mul_add(CoopB::load_row_major(&sb[8], s), CoopC::zeroed());
    t2.store_col_major(&mut out[512], 16);
    let t3 =
        CoopA::load_col_major(&sa[8], s).mul_add(CoopB::load_col_major(&sb[8], s), CoopC::zeroed());
    t3.store_row_major(&mut sc[0], 16);
    workgroup_barrier();
    for e in 0..8 {
        out[768 + l * 8 + e] = sc[l * 8 + e];
    }
    let t4 =
        CoopA::load_row_major(&sa[1], s).mul_add(CoopB::load_col_major(&sb[1], s), CoopC::zeroed());
    t4.store_row_major(&mut out[1024], 16);
    let t5 = CoopA::load_row_major(&a[8], s).mul_add(CoopB::load_row_major(&b[8], s), t3);
    t5.store_row_major(&mut out[1280], 16);
    CoopA::load_row_major(&sa[8], s).store_row_major(&mut h[0], 16);
    CoopB::load_row_major(&b[8], s).store_col_major(&mut h[256], 16);
}

/// Element `(r, c)` of the matrix at `x[at..]` with stride `s`.
fn element<T: Copy>(x: &[T], at: usize, s: usize, row_major: bool, r: usize, c: usize) -> T {
    if row_major {
        x[at + r * s + c]
    } else {
        x[at + c * s + r]
    }
}

/// `coop_layouts` from the definitions, in f64, each tile rounded to f32 once.
pub fn coop_layouts_reference(
    a: &[f16],
    b: &[f16],
    c: &[f32],
    s: u32,
) -> Result<(Vec<f32>, Vec<f16>), ForgeError> {
    let s = s as usize;
    // a·b + acc for operands at (a_at, rm_a), (b_at, rm_b).
    let product = |a_at, rm_a, b_at, rm_b, acc: &dyn Fn(usize, usize) -> f64| {
        let mut t = vec![0.0f64; 256];
        for r in 0..16 {
            for j in 0..16 {
                t[r * 16 + j] = acc(r, j)
                    + (0..16)
                        .map(|p| {
                            element(a, a_at, s, rm_a, r, p).to_f64()
                                * element(b, b_at, s, rm_b, p, j).to_f64()
                        })
                        .sum::<f64>();
            }
        }
        t
    };
    let zero = |_: usize, _: usize| 0.0;
    let t0 = product(8, true, 8, true, &|r, j| {
        element(c, 0, s, true, r, j) as f64
    });
    let t1 = product(8, false, 8, false, &|r, j| {
        element(c, 0, s, false, r, j) as f64
    });
    let t2 = product(8, true, 8, true, &zero);
    let t3 = product(8, false, 8, false, &zero);
    let t4 = product(1, true, 1, false, &zero);
    let t5 = product(8, true, 8, true, &|r, j| t3[r * 16 + j]);
    let mut out = Vec::with_capacity(256 * 6);
    out.extend(t0.iter().map(|x| *x as f32));
    out.extend(t1.iter().map(|x| *x as f32));
    // Tile 2 is stored column-major.
    out.extend((0..256).map(|i| t2[(i % 16) * 16 + i / 16] as f32));
    for t in [&t3, &t4, &t5] {
        out.extend(t.iter().map(|x| *x as f32));
    }
    let mut h = Vec::with_capacity(512);
    h.extend((0..256).map(|i| element(a, 8, s, true, i / 16, i % 16)));
    // B stored column-major: element (k, n) at n·16 + k.
    h.extend((0..256).map(|i| element(b, 8, s, true, i % 16, i / 16)));
    Ok((out, h))
}

/// Cooperative-matrix operations under a subgroup's vote. Each 32-lane subgroup of a
/// 64-invocation workgroup owns tile `t` of `c` (16×16, row-major); when any of the tile's
/// 32 `flags` is set, the subgroup doubles its tile through workgroup memory, else it
/// passes it on as loaded. The two subgroups of a workgroup vote apart; the barriers stay
/// where the whole workgroup reaches them. With an odd count of tiles, the last subgroup
/// has none.
#[forge_kernel(workgroup = 64, threads = tiles.div_ceil(2) * 64, reference = coop_vote_reference,
    tolerance(abs = 0.0, rel = 0.0),
    case(tiles = 1), case(tiles = 2), case(tiles = 5))]
pub fn coop_vote(
    c: &[f32; tiles * 256],
    flags: &[u32; tiles * 32],
    #[out] out: &mut [f32; tiles * 256],
    tiles: u32,
) {
    #[shared]
    let mut st = [0.0f32; 2 * 256];
    let sid = subgroup_id();
    let t = workgroup_index() * 2 + sid;
    let lane = subgroup_invocation_id();
    // Votes, so the same in all of a subgroup's lanes: its tile exists, and it doubles.
    let live = subgroup_all(t < tiles);
    let double = subgroup_any(t < tiles && flags[t * 32 + lane] != 0);
    let mut acc = CoopC::zeroed();
    if live {
        acc = CoopC::load_row_major(&c[t * 256], 16);
        if double {
            acc.store_row_major(&mut st[sid * 256], 16);
        }
    }
    workgroup_barrier();
    if double {
        for r in 0..8 {
            let i = sid * 256 + lane * 8 + r;
            st[i] = st[i] * 2.0;
        }
    }
    workgroup_barrier();
    if double {
        acc = CoopC::load_row_major(&st[sid * 256], 16);
    }
    if live {
        acc.store_row_major(&mut out[t * 256], 16);
    }
}

/// `coop_vote` from its definition: each tile doubled where one of its flags is set.
pub fn coop_vote_reference(c: &[f32], flags: &[u32], tiles: u32) -> Result<Vec<f32>, ForgeError> {
    Ok((0..tiles as usize * 256)
        .map(|i| {
            let t = i / 256;
            let doubled = flags[t * 32..t * 32 + 32].iter().any(|&f| f != 0);
            if doubled {
                c[i] * 2.0
            } else {
                c[i]
            }
        })
        .collect())
}

/// Every operation on an accumulator's rows, in a softmax over 16×32 tiles of scores and a
/// product with `v`, one tile a 32-lane subgroup, two in a workgroup of 64 (so that WGSL's
/// scratch is a subgroup's own). Tile `t` of `x` is two 16×16 blocks side by side
/// (row-major, stride 32); in row `r`, the columns from `first + step·r` are masked, the
/// rows' maxima `m` scaled by `scale`, `p = 2^(x·scale − m)`, and the rows' sums `l`. Then
/// `probs` gets `p / l`; `pv` gets `p·v / l` with `p` rounded to `f16` as a left operand
/// (`v`, 32×16, row-major); `rows` gets, broadcast along each row, `min(m, 0.5) − l / l`
/// in the first block and `2^(l / 8)` in the second. With an odd count of tiles, the last
/// subgroup computes the last tile again and stores nothing.
#[forge_kernel(workgroup = 64, threads = tiles.div_ceil(2) * 64, reference = coop_rows_reference,
    tolerance(abs = 2e-3, rel = 2e-3),
    case(tiles = 1, first = 5, step = 1, scale = 0.5),
    case(tiles = 3, first = 40, step = 0, scale = 1.5),
    case(tiles = 2, first = 20, step = -1, scale = 0.25),
    case(tiles = 5, first = 1, step = 2, scale = 1.0))]
pub fn coop_rows(
    x: &[f32; tiles * 512],
    v: &[f16; 512],
    #[out] probs: &mut [f32; tiles * 512],
    #[out] pv: &mut [f32; tiles * 256],
    #[out] rows: &mut [f32; tiles * 512],
    tiles: u32,
    first: i32,
    step: i32,
    scale: f32,
) {
    let t = workgroup_index() * 2 + subgroup_id();
    let own = subgroup_all(t < tiles);
    let base = t.min(tiles - 1) * 512;
    // The second block's columns are 16 on: its mask starts 16 earlier.
    let s0 = CoopC::load_row_major(&x[base], 32).mask_from(first, step, f32::NEG_INFINITY);
    let s1 =
        CoopC::load_row_major(&x[base + 16], 32).mask_from(first - 16, step, f32::NEG_INFINITY);
    // The rows' maxima of the blocks' elementwise larger (`c.max(o)`), and again with the
    // first block's own (`r.max(o)`), which changes nothing: both forms run.
    let m = s0.max(s1).row_max().max(s0.row_max()).scale(scale);
    let p0 = s0.exp2_rows(scale, m);
    let p1 = s1.exp2_rows(scale, m);
    // The rows' sums of the blocks' elementwise sum (`c.add(o)`) and of each block's
    // (`r.add(o)`), equal but for rounding: both forms run.
    let l = p0.add(p1).row_sum().max(p0.row_sum().add(p1.row_sum()));
    let inv = l.recip();
    let b0 = CoopB::load_row_major(&v[0], 16);
    let b1 = CoopB::load_row_major(&v[256], 16);
    let o = p1
        .to_a()
        .mul_add(b1, p0.to_a().mul_add(b0, CoopC::zeroed()))
        .scale_rows(inv);
    let q0 = p0.scale_rows(inv);
    let q1 = p1.scale_rows(inv);
    // All ones (every column is past 0), to show rows as matrices.
    let ones = CoopC::zeroed().mask_from(0, 0, 1.0);
    let r0 = ones.scale_rows(m.min(CoopRow::splat(0.5)).sub(l.mul(inv)));
    let r1 = ones.scale_rows(l.scale(0.125).exp2());
    if own {
        q0.store_row_major(&mut probs[base], 32);
        q1.store_row_major(&mut probs[base + 16], 32);
        o.store_row_major(&mut pv[t * 256], 16);
        r0.store_row_major(&mut rows[base], 32);
        r1.store_row_major(&mut rows[base + 16], 32);
    }
}

/// `coop_rows` from its definition, in `f64` (but `p`, rounded to `f16` before `p·v`).
#[allow(clippy::type_complexity)]
pub fn coop_rows_reference(
    x: &[f32],
    v: &[f16],
    tiles: u32,
    first: i32,
    step: i32,
    scale: f32,
) -> Result<(Vec<f32>, Vec<f32>, Vec<f32>), ForgeError> {
    let (tiles, scale) = (tiles as usize, scale as f64);
    let mut probs = vec![0.0f32; tiles * 512];
    let mut pv = vec![0.0f32; tiles * 256];
    let mut rows = vec![0.0f32; tiles * 512];
    for t in 0..tiles {
        for r in 0..16 {
            let at = |j: usize| t * 512 + r * 32 + j;
            // Column j of the tile is column j % 16 of block j / 16.
            let live = |j: usize| {
                ((j % 16) as i64) < first as i64 - 16 * (j / 16) as i64 + step as i64 * r as i64
            };
            let m = (0..32)
                .filter(|&j| live(j))
                .map(|j| x[at(j)] as f64)
                .fold(f64::MIN, f64::max)
                * scale;
            let p: Vec<f64> = (0..32)
                .map(|j| {
                    if live(j) {
                        (x[at(j)] as f64 * scale - m).exp2()
                    } else {
                        0.0
                    }
                })
                .collect();
            let l: f64 = p.iter().sum();
            for j in 0..32 {
                probs[at(j)] = (p[j] / l) as f32;
                rows[at(j)] = if j < 16 {
                    m.min(0.5) - 1.0
                } else {
                    (l / 8.0).exp2()
                } as f32;
            }
            for c in 0..16 {
                let s: f64 = (0..32)
                    .map(|j| f16::from_f64(p[j]).to_f64() * v[j * 16 + c].to_f64())
                    .sum();
                pv[t * 256 + r * 16 + c] = (s / l) as f32;
            }
        }
    }
    Ok((probs, pv, rows))
}
