//! Matrix product `C = A·B` for row-major `m×k` and `k×n` matrices, tiled through workgroup
//! memory.
//!
//! # Schedules
//! A workgroup of 256 invocations, a 16×16 grid, computes one tile of `C` at a time. `ITEMS`
//! is the number of 64×64 blocks of `C` a tile covers, and so picks the variant:
//!
//! | ITEMS | tile of `C` | block per invocation |
//! |---|---|---|
//! | 4 | 128×128 | 8×8 |
//! | 2 | 128×64 | 8×4 |
//! | 1 | 64×64 | 4×4 |
//!
//! The runtime launches `ceil(blocks / ITEMS)` workgroups; where the tiles do not fill them
//! exactly (an odd number of 64-row or 64-column blocks), a workgroup takes a further tile
//! in a grid-stride loop. Large tiles read each element of `A` and `B` from memory fewer
//! times and do more multiply-adds per workgroup-memory read; small ones give more
//! workgroups to the 132 SMs of an H200 at 1024³. The tuner picks one per problem size.
//!
//! Each k slice of `A` (`tm×8`) and `B` (`8×tn`) is staged in workgroup memory as vec4s,
//! in two buffers: while the workgroup multiplies one slice, each invocation's loads of the
//! next are in flight in registers, and are stored into the other buffer afterwards; one
//! barrier per slice. `A` is stored transposed (k-major), so that rows are read as vec4s. A
//! vec4 holds rows (or columns) 16 apart: invocation `(tx, ty)` owns rows `ty + 16i` and
//! columns `tx + 16j`, so neighbouring invocations load and store neighbouring words of `A`,
//! `B` and `C`. The register block is 16 vec4 accumulators written out as plain variables,
//! and the 8 k steps of a slice are written out too: arrays indexed in loops and loops of
//! dependent loads ran 12 times slower on an H200. The smaller variants skip the half of the
//! block they do not own through branches on constants, which the driver folds away.
//!
//! `VEC` picks the loop over slices: 1 takes one slice a step, with the buffer chosen by the
//! step's parity; 2 takes two slices a step, written out, so that each has constant buffer
//! offsets. On the H200 the first is faster (37.5 against 33.4 TFLOP/s at 8192³); the second
//! is there for drivers that fold constant offsets better.
//!
//! What the driver does with this source is sensitive to things that should not matter:
//! wgpu bounds every loop with a counter, and a one-pass loop over the half-slices of a
//! 16-deep slice cost a fifth of the rate until it was removed; the `ITEMS = 4, VEC = 1`
//! build measured 35.4 TFLOP/s at 8192³ before the `VEC = 2` code was added and 37.5 after,
//! while the other schedules stayed within 0.1%. `examples/gemm_checks` measures what each
//! of wgpu's shader runtime checks costs.
//!
//! Every element is accumulated with `mul_add` over `p = 0, 1, …, k-1` in that order,
//! starting from 0.0, whatever the schedule (the zero padding past `k` adds exact zeros), so
//! every schedule gives bit-identical results.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `C = A·B` for row-major `A` (`m×k`) and `B` (`k×n`).
#[forge_kernel(crate = ::forge_core, workgroup = 256,
    threads = m.div_ceil(64) * n.div_ceil(64) * 256, ext = false,
    tune(workgroup = [256], items = [4, 2, 1], vector = [1, 2]),
    reference = gemm_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, k = 1, n = 1), case(m = 2, k = 3, n = 2), case(m = 7, k = 13, n = 29),
    case(m = 67, k = 71, n = 73), case(m = 130, k = 17, n = 3), case(m = 3, k = 37, n = 131),
    case(m = 130, k = 37, n = 133))]
pub fn gemm(
    a: &[f32; m * k],
    b: &[f32; k * n],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    // Two buffers of a slice each, 256 vec4s a buffer: 16 KiB, the portable limit.
    #[shared]
    let mut a_tile = [Vec4::ZERO; 512];
    #[shared]
    let mut b_tile = [Vec4::ZERO; 512];
    // The variant: a tile of `tm` rows and `tn` columns, in slices 8 deep; `sa` and `sb`
    // are the vec4s per k of a slice.
    let wide_m = ITEMS >= 2;
    let wide_n = ITEMS >= 4;
    let tm = 64 * ITEMS.min(2);
    let tn = 64 * (ITEMS >> 1).max(1);
    let sa = tm >> 2;
    let sb = tn >> 2;
    let lid = local_index();
    // Masks and shifts rather than `%` and `/` by powers of two (naga wraps every integer
    // division in a check for a zero divisor), and `ty` masked although `lid < 256`, so
    // that a driver can see that the k steps' workgroup indices stay in bounds and drop the
    // clamp naga puts on each. The H200's driver did not: its rate was the same without
    // them, and 7% higher with wgpu's bounds checks off (`examples/gemm_checks`).
    let tx = lid & 15;
    let ty = (lid >> 4) & 15;
    // What this invocation stages: the vec4 of A at (k `a_k`, position `a_p`) and the vec4
    // of B at (k `b_k`, position `b_q`). Position p holds rows (or columns)
    // (p / 16)·64 + p % 16 + 16j. Four neighbouring lanes take four positions at one k: a
    // warp reads 4 rows × 8 k of A, whole 32-byte sectors, and its stores meet at most two
    // to a bank.
    let a_k = (lid >> 2) & 7;
    let a_p = (lid & 3) + 4 * (lid >> 5);
    let a_r = (a_p >> 4) * 64 + (a_p & 15);
    let b_k = lid / sb;
    let b_q = lid % sb;
    let b_c = (b_q >> 4) * 64 + (b_q & 15);
    // A 64-wide slice is 128 vec4s: half of the invocations stage it.
    let a_stages = a_p < sa;
    let b_stages = b_k < 8;
    let tiles_n = n.div_ceil(tn);
    let tiles = m.div_ceil(tm) * tiles_n;
    // The launched grid: `threads / (WG·ITEMS)`, rounded up.
    let groups = (m.div_ceil(64) * n.div_ceil(64) * 256).div_ceil(WG * ITEMS);
    let slices = k.div_ceil(8);
    let k16 = 16 * k;
    let mut tile = workgroup_index();
    while tile < tiles {
        let row0 = (tile / tiles_n) * tm;
        let col0 = (tile % tiles_n) * tn;
        // The rows of A and the columns of B this invocation stages, and which exist.
        let ar = row0 + a_r;
        let ra0 = ar < m;
        let ra1 = ar + 16 < m;
        let ra2 = ar + 32 < m;
        let ra3 = ar + 48 < m;
        let ao = ar * k + a_k;
        let bc = col0 + b_c;
        let cb0 = bc < n;
        let cb1 = bc + 16 < n;
        let cb2 = bc + 32 < n;
        let cb3 = bc + 48 < n;
        let mut c0l = Vec4::ZERO;
        let mut c0h = Vec4::ZERO;
        let mut c1l = Vec4::ZERO;
        let mut c1h = Vec4::ZERO;
        let mut c2l = Vec4::ZERO;
        let mut c2h = Vec4::ZERO;
        let mut c3l = Vec4::ZERO;
        let mut c3h = Vec4::ZERO;
        let mut c4l = Vec4::ZERO;
        let mut c4h = Vec4::ZERO;
        let mut c5l = Vec4::ZERO;
        let mut c5h = Vec4::ZERO;
        let mut c6l = Vec4::ZERO;
        let mut c6h = Vec4::ZERO;
        let mut c7l = Vec4::ZERO;
        let mut c7h = Vec4::ZERO;
        let mut staged_a = Vec4::ZERO;
        let mut staged_b = Vec4::ZERO;
        // Step t loads slice t, multiplies slice t - 1, then stores slice t.
        if VEC == 2 {
            // The same steps two at a time, so that each step's buffers are constants.
            for t2 in 0..slices / 2 + 1 {
                let t = 2 * t2;
                if t < slices {
                    let k0 = t * 8;
                    let ka = a_stages && k0 + a_k < k;
                    let o = ao + k0;
                    let v0 = if ka && ra0 { a[o] } else { 0.0f32 };
                    let v1 = if ka && ra1 { a[o + k16] } else { 0.0f32 };
                    let v2 = if ka && ra2 { a[o + 2 * k16] } else { 0.0f32 };
                    let v3 = if ka && ra3 { a[o + 3 * k16] } else { 0.0f32 };
                    staged_a = Vec4::new(v0, v1, v2, v3);
                    let kb = k0 + b_k;
                    let kbs = b_stages && kb < k;
                    let ob = kb * n + bc;
                    let w0 = if kbs && cb0 { b[ob] } else { 0.0f32 };
                    let w1 = if kbs && cb1 { b[ob + 16] } else { 0.0f32 };
                    let w2 = if kbs && cb2 { b[ob + 32] } else { 0.0f32 };
                    let w3 = if kbs && cb3 { b[ob + 48] } else { 0.0f32 };
                    staged_b = Vec4::new(w0, w1, w2, w3);
                }
                if t > 0 {
                    let buf = 256u32;
                    let ai = buf + ty;
                    let bi = buf + tx;
                    // k step 0
                    let x0 = a_tile[ai];
                    let x1 = if wide_m { a_tile[ai + 16] } else { x0 };
                    let y0 = b_tile[bi];
                    let y1 = if wide_n { b_tile[bi + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 1
                    let x0 = a_tile[ai + sa];
                    let x1 = if wide_m { a_tile[ai + sa + 16] } else { x0 };
                    let y0 = b_tile[bi + sb];
                    let y1 = if wide_n { b_tile[bi + sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 2
                    let x0 = a_tile[ai + 2 * sa];
                    let x1 = if wide_m { a_tile[ai + 2 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 2 * sb];
                    let y1 = if wide_n { b_tile[bi + 2 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 3
                    let x0 = a_tile[ai + 3 * sa];
                    let x1 = if wide_m { a_tile[ai + 3 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 3 * sb];
                    let y1 = if wide_n { b_tile[bi + 3 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 4
                    let x0 = a_tile[ai + 4 * sa];
                    let x1 = if wide_m { a_tile[ai + 4 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 4 * sb];
                    let y1 = if wide_n { b_tile[bi + 4 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 5
                    let x0 = a_tile[ai + 5 * sa];
                    let x1 = if wide_m { a_tile[ai + 5 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 5 * sb];
                    let y1 = if wide_n { b_tile[bi + 5 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 6
                    let x0 = a_tile[ai + 6 * sa];
                    let x1 = if wide_m { a_tile[ai + 6 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 6 * sb];
                    let y1 = if wide_n { b_tile[bi + 6 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 7
                    let x0 = a_tile[ai + 7 * sa];
                    let x1 = if wide_m { a_tile[ai + 7 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 7 * sb];
                    let y1 = if wide_n { b_tile[bi + 7 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                }
                if t < slices {
                    let buf = 0u32;
                    if a_stages {
                        a_tile[buf + a_k * sa + a_p] = staged_a;
                    }
                    if b_stages {
                        b_tile[buf + b_k * sb + b_q] = staged_b;
                    }
                }
                workgroup_barrier();
                let t = t + 1;
                if t <= slices {
                    if t < slices {
                        let k0 = t * 8;
                        let ka = a_stages && k0 + a_k < k;
                        let o = ao + k0;
                        let v0 = if ka && ra0 { a[o] } else { 0.0f32 };
                        let v1 = if ka && ra1 { a[o + k16] } else { 0.0f32 };
                        let v2 = if ka && ra2 { a[o + 2 * k16] } else { 0.0f32 };
                        let v3 = if ka && ra3 { a[o + 3 * k16] } else { 0.0f32 };
                        staged_a = Vec4::new(v0, v1, v2, v3);
                        let kb = k0 + b_k;
                        let kbs = b_stages && kb < k;
                        let ob = kb * n + bc;
                        let w0 = if kbs && cb0 { b[ob] } else { 0.0f32 };
                        let w1 = if kbs && cb1 { b[ob + 16] } else { 0.0f32 };
                        let w2 = if kbs && cb2 { b[ob + 32] } else { 0.0f32 };
                        let w3 = if kbs && cb3 { b[ob + 48] } else { 0.0f32 };
                        staged_b = Vec4::new(w0, w1, w2, w3);
                    }
                    if t > 0 {
                        let buf = 0u32;
                        let ai = buf + ty;
                        let bi = buf + tx;
                        // k step 0
                        let x0 = a_tile[ai];
                        let x1 = if wide_m { a_tile[ai + 16] } else { x0 };
                        let y0 = b_tile[bi];
                        let y1 = if wide_n { b_tile[bi + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 1
                        let x0 = a_tile[ai + sa];
                        let x1 = if wide_m { a_tile[ai + sa + 16] } else { x0 };
                        let y0 = b_tile[bi + sb];
                        let y1 = if wide_n { b_tile[bi + sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 2
                        let x0 = a_tile[ai + 2 * sa];
                        let x1 = if wide_m { a_tile[ai + 2 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 2 * sb];
                        let y1 = if wide_n { b_tile[bi + 2 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 3
                        let x0 = a_tile[ai + 3 * sa];
                        let x1 = if wide_m { a_tile[ai + 3 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 3 * sb];
                        let y1 = if wide_n { b_tile[bi + 3 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 4
                        let x0 = a_tile[ai + 4 * sa];
                        let x1 = if wide_m { a_tile[ai + 4 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 4 * sb];
                        let y1 = if wide_n { b_tile[bi + 4 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 5
                        let x0 = a_tile[ai + 5 * sa];
                        let x1 = if wide_m { a_tile[ai + 5 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 5 * sb];
                        let y1 = if wide_n { b_tile[bi + 5 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 6
                        let x0 = a_tile[ai + 6 * sa];
                        let x1 = if wide_m { a_tile[ai + 6 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 6 * sb];
                        let y1 = if wide_n { b_tile[bi + 6 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                        // k step 7
                        let x0 = a_tile[ai + 7 * sa];
                        let x1 = if wide_m { a_tile[ai + 7 * sa + 16] } else { x0 };
                        let y0 = b_tile[bi + 7 * sb];
                        let y1 = if wide_n { b_tile[bi + 7 * sb + 16] } else { y0 };
                        c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                        c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                        c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                        c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                        c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                        c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                        c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                        c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                        c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                        c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                        c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                        c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                        c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                        c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                        c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                        c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    }
                    if t < slices {
                        let buf = 256u32;
                        if a_stages {
                            a_tile[buf + a_k * sa + a_p] = staged_a;
                        }
                        if b_stages {
                            b_tile[buf + b_k * sb + b_q] = staged_b;
                        }
                    }
                }
                workgroup_barrier();
            }
        } else {
            for t in 0..slices + 1 {
                if t < slices {
                    let k0 = t * 8;
                    let ka = a_stages && k0 + a_k < k;
                    let o = ao + k0;
                    let v0 = if ka && ra0 { a[o] } else { 0.0f32 };
                    let v1 = if ka && ra1 { a[o + k16] } else { 0.0f32 };
                    let v2 = if ka && ra2 { a[o + 2 * k16] } else { 0.0f32 };
                    let v3 = if ka && ra3 { a[o + 3 * k16] } else { 0.0f32 };
                    staged_a = Vec4::new(v0, v1, v2, v3);
                    let kb = k0 + b_k;
                    let kbs = b_stages && kb < k;
                    let ob = kb * n + bc;
                    let w0 = if kbs && cb0 { b[ob] } else { 0.0f32 };
                    let w1 = if kbs && cb1 { b[ob + 16] } else { 0.0f32 };
                    let w2 = if kbs && cb2 { b[ob + 32] } else { 0.0f32 };
                    let w3 = if kbs && cb3 { b[ob + 48] } else { 0.0f32 };
                    staged_b = Vec4::new(w0, w1, w2, w3);
                }
                if t > 0 {
                    let buf = ((t - 1) & 1) * 256;
                    let ai = buf + ty;
                    let bi = buf + tx;
                    // k step 0
                    let x0 = a_tile[ai];
                    let x1 = if wide_m { a_tile[ai + 16] } else { x0 };
                    let y0 = b_tile[bi];
                    let y1 = if wide_n { b_tile[bi + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 1
                    let x0 = a_tile[ai + sa];
                    let x1 = if wide_m { a_tile[ai + sa + 16] } else { x0 };
                    let y0 = b_tile[bi + sb];
                    let y1 = if wide_n { b_tile[bi + sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 2
                    let x0 = a_tile[ai + 2 * sa];
                    let x1 = if wide_m { a_tile[ai + 2 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 2 * sb];
                    let y1 = if wide_n { b_tile[bi + 2 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 3
                    let x0 = a_tile[ai + 3 * sa];
                    let x1 = if wide_m { a_tile[ai + 3 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 3 * sb];
                    let y1 = if wide_n { b_tile[bi + 3 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 4
                    let x0 = a_tile[ai + 4 * sa];
                    let x1 = if wide_m { a_tile[ai + 4 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 4 * sb];
                    let y1 = if wide_n { b_tile[bi + 4 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 5
                    let x0 = a_tile[ai + 5 * sa];
                    let x1 = if wide_m { a_tile[ai + 5 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 5 * sb];
                    let y1 = if wide_n { b_tile[bi + 5 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 6
                    let x0 = a_tile[ai + 6 * sa];
                    let x1 = if wide_m { a_tile[ai + 6 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 6 * sb];
                    let y1 = if wide_n { b_tile[bi + 6 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                    // k step 7
                    let x0 = a_tile[ai + 7 * sa];
                    let x1 = if wide_m { a_tile[ai + 7 * sa + 16] } else { x0 };
                    let y0 = b_tile[bi + 7 * sb];
                    let y1 = if wide_n { b_tile[bi + 7 * sb + 16] } else { y0 };
                    c0l = y0.mul_add(Vec4::splat(x0.x), c0l);
                    c0h = y1.mul_add(Vec4::splat(x0.x), c0h);
                    c1l = y0.mul_add(Vec4::splat(x0.y), c1l);
                    c1h = y1.mul_add(Vec4::splat(x0.y), c1h);
                    c2l = y0.mul_add(Vec4::splat(x0.z), c2l);
                    c2h = y1.mul_add(Vec4::splat(x0.z), c2h);
                    c3l = y0.mul_add(Vec4::splat(x0.w), c3l);
                    c3h = y1.mul_add(Vec4::splat(x0.w), c3h);
                    c4l = y0.mul_add(Vec4::splat(x1.x), c4l);
                    c4h = y1.mul_add(Vec4::splat(x1.x), c4h);
                    c5l = y0.mul_add(Vec4::splat(x1.y), c5l);
                    c5h = y1.mul_add(Vec4::splat(x1.y), c5h);
                    c6l = y0.mul_add(Vec4::splat(x1.z), c6l);
                    c6h = y1.mul_add(Vec4::splat(x1.z), c6h);
                    c7l = y0.mul_add(Vec4::splat(x1.w), c7l);
                    c7h = y1.mul_add(Vec4::splat(x1.w), c7h);
                }
                if t < slices {
                    let buf = (t & 1) * 256;
                    if a_stages {
                        a_tile[buf + a_k * sa + a_p] = staged_a;
                    }
                    if b_stages {
                        b_tile[buf + b_k * sb + b_q] = staged_b;
                    }
                }
                workgroup_barrier();
            }
        }
        // Row i of the block is row (i / 4)·64 + (i % 4)·16 + ty of the tile; its columns
        // are tx + 16j (`lo`) and 64 + tx + 16j (`hi`).
        for i in 0..8u32 {
            let r = row0 + (i >> 2) * 64 + (i & 3) * 16 + ty;
            if (i < 4 || wide_m) && r < m {
                let lo = if i == 0 {
                    c0l
                } else if i == 1 {
                    c1l
                } else if i == 2 {
                    c2l
                } else if i == 3 {
                    c3l
                } else if i == 4 {
                    c4l
                } else if i == 5 {
                    c5l
                } else if i == 6 {
                    c6l
                } else {
                    c7l
                };
                let hi = if i == 0 {
                    c0h
                } else if i == 1 {
                    c1h
                } else if i == 2 {
                    c2h
                } else if i == 3 {
                    c3h
                } else if i == 4 {
                    c4h
                } else if i == 5 {
                    c5h
                } else if i == 6 {
                    c6h
                } else {
                    c7h
                };
                let o = r * n;
                let cl = col0 + tx;
                if cl < n {
                    c[o + cl] = lo.x;
                }
                if cl + 16 < n {
                    c[o + cl + 16] = lo.y;
                }
                if cl + 32 < n {
                    c[o + cl + 32] = lo.z;
                }
                if cl + 48 < n {
                    c[o + cl + 48] = lo.w;
                }
                let ch = cl + 64;
                if wide_n {
                    if ch < n {
                        c[o + ch] = hi.x;
                    }
                    if ch + 16 < n {
                        c[o + ch + 16] = hi.y;
                    }
                    if ch + 32 < n {
                        c[o + ch + 32] = hi.z;
                    }
                    if ch + 48 < n {
                        c[o + ch + 48] = hi.w;
                    }
                }
            }
        }
        tile += groups;
    }
}

/// The independent reference: a plain triple loop in f64, rounded once at the end.
pub fn gemm_reference(
    a: &[f32],
    b: &[f32],
    m: u32,
    k: u32,
    n: u32,
) -> Result<Vec<f32>, ForgeError> {
    let (m, k, n) = (m as usize, k as usize, n as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            c[i * n + j] = s as f32;
        }
    }
    Ok(c)
}

/// `rt.gemm(&a, &b, m, k, n)`, the seed's signature.
pub trait GemmExt {
    /// `C = A·B` for row-major `A` (`m×k`) and `B` (`k×n`); returns `C`, row-major `m×n`.
    ///
    /// Any `m`, `k`, `n` ≥ 1. Errors: a slice whose length is not `m·k` or `k·n`
    /// ([`ForgeError::LengthMismatch`]), a zero dimension ([`ForgeError::EmptyWork`]), a
    /// dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2×3
    /// let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]; // 3×2
    /// assert_eq!(rt.gemm(&a, &b, 2, 3, 2)?, vec![58.0, 64.0, 139.0, 154.0]);
    /// assert!(rt.gemm(&a, &b, 2, 0, 2).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn gemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>, ForgeError>;
}

impl GemmExt for ForgeRuntime {
    fn gemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let (m, k, n) = (
            dim(gemm::NAME, "m", m)?,
            dim(gemm::NAME, "k", k)?,
            dim(gemm::NAME, "n", n)?,
        );
        gemm::run(self, a, b, m, k, n)
    }
}
