//! The kernels on tensor cores, [`attention`] and [`attention_rows`], and the staging they
//! share: `Q`'s rows into workgroup memory, each block of `K` and `V` by asynchronous
//! copies, and `O`'s rows back out. Part of [`super`].
//!
//! # How `attention` is written
//! A workgroup of `WG` invocations (`WG / 32` subgroups) owns `WG / 2` consecutive query
//! rows of one head, 16 a subgroup. `Q`, `K`, `V` and `O` are read and written as `HVec8`s
//! (eight halves, one 16-byte access; `d` is a multiple of 16). The workgroup's rows of `Q` are
//! staged once through workgroup memory into registers, as `d / 16` fragments `CoopA` a
//! subgroup. Then, for each block of `BC` keys (up to the diagonal when causal):
//! 1. the block's rows of `K` and `V` are copied into `skv` by `async_copy` (`cp.async` on
//!    CUDA, both in flight together; rows `PAD` halves longer than `d`'s largest, 128, so
//!    that a fragment's rows fall on different banks), zero past `s`;
//! 2. `S = Q·Kᵀ` for the block, `BC / 16` fragments, each the sum over `d / 16` products
//!    (`Kᵀ` is `K` read column-major), stored to the subgroup's part of `sx`;
//! 3. the online softmax, on plain values: two lanes a row, each over half the block, find
//!    the block's maximum (masked keys count as absent). The row's reference maximum `m`
//!    moves to it only when it exceeds `m` by more than `SLACK` (8, in log2 units), as in
//!    FlashAttention-4: then the factor for what came before is `α = 2^(m − m')`, else 1.
//!    The probabilities `p = 2^(s·scale·log2 e − m)` (below `2^8`, well inside `f16`) are
//!    stored as `f16` in `sp`; the row sum becomes `l·α + Σp`;
//! 4. the accumulators `O` (`d / 16` fragments `CoopC`) are scaled by `α` row by row: as
//!    fragments are opaque, they go through `so`, the subgroup's `16 × 16·OF` floats (rows
//!    padded by 4), and come back. The first `OF` fragments are stored beside the scores in
//!    step 2, under their barrier; after step 3 each lane scales one column of every row,
//!    the row's `α` fetched by `subgroup_shuffle` from the lanes that computed it, so that
//!    the round trip takes one barrier (at `OF = 8`, all of `d = 128`); further fragments
//!    go round `OF` at a time. Where every `α` of the subgroup is 1 (most blocks after the
//!    first few), the subgroup skips the scaling; with the knob `LAZY = 1`, the loads and
//!    the further stores too: a vote of the subgroup (`subgroup_all`) decides, and
//!    cooperative-matrix operations, collective over their subgroup only, may sit under
//!    it. The barriers stay, as the whole workgroup must reach them (a workgroup-wide vote
//!    to skip them too miscompiled through NVIDIA's Vulkan driver: see the book's attention
//!    page). `LAZY = 0` is declared: matrices under a vote have not yet run on a GPU, and
//!    the tuner takes a schedule only once it certifies on the adapter;
//! 5. `O += P·V`, `P` read from `sp` as `CoopA`, `V` from `skv` as `CoopB`.
//!
//! Last, `O / l` is written as `f16`, through `sx` in the same chunks.
//!
//! `BC` is `KB` keys for each 64 invocations (`KB` is a knob, 16 or 32), so that `skv`,
//! `2·BC` rows, also holds the `WG / 2` rows of `Q` at the start. Workgroup memory: `skv`,
//! `2·BC` rows of `128 + PAD` halves; `sx`, a subgroup's `16 × (BC + XPAD)` floats; `sp`,
//! its `16 × (BC + 2·XPAD)` halves (`XPAD = 4` pads both by 16 bytes a row, against bank
//! conflicts); `so`, its `16 × (16·OF + 4)` floats. The declared schedule (`WG = 64`,
//! `KB = 16`, `PAD = 8`, `OF = 2`, `XPAD = 0`, `LAZY = 0`) takes the portable 16 KiB
//! exactly; the tuned ones take 16 to 64 KiB, and each adapter runs those it holds. `keep`
//! holds blocks to 32 keys: 64-key blocks (`WG = 128`, `KB = 32`) never won on an H100, on
//! either backend, and took CUDA 2.2 s to compile cold.
//!
//! Rounding: `P` is rounded to `f16` before `P·V`, as flash attention does; the oracle
//! rounds it the same way, so the GPU and the oracle differ by the exponentials' last bits
//! and the tensor cores' rounding inside a step.

use super::reference::attention_reference_vec;
use forge_macros::forge_module;

pub use kernels::{attention, attention_rows};

#[forge_module]
mod kernels {
    use super::*;

    /// Rows `row0..row0 + rows` of a head: its `HVec8`s start at `at` of a binding, its `s`
    /// rows are `dv` `HVec8`s long, of which the first `width` move, and in workgroup memory
    /// the rows are `stride` apart. What [`stage_rows`], [`unstage_rows`] and [`copy_kv`]
    /// (whole rows) move.
    #[forge_struct(crate = ::forge_core)]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct HeadRows {
        pub at: u32,
        pub row0: u32,
        pub rows: u32,
        pub s: u32,
        pub dv: u32,
        pub width: u32,
        pub stride: u32,
    }

    /// The rows of `Q` and `O` this workgroup owns, when `nd` consecutive workgroups share
    /// each block of `rows` query rows: block `nqb − 1 − (w / nd) % nqb` of head
    /// `(w / nd) / nqb` (`nqb` blocks a head of `s` rows), rows of `dv` `HVec8`s that move
    /// whole, `stride` apart in workgroup memory. A head's last rows come first: when causal
    /// they see the most keys, and the GPU hands out workgroups in order of index as others
    /// finish, so the heaviest start early and the grid ends on light ones (in row order,
    /// the last head's heaviest blocks start last and may run on alone). Without the mask the
    /// blocks cost the same, and the heads still go in order, which keeps the `K` and `V`
    /// that the running workgroups read to a few heads, in L2. (It reads `workgroup_index()`,
    /// so it is inlined: naga takes the result of a helper that is called as not uniform,
    /// and the caller's barriers and matrices stand under conditions on it.)
    #[forge_fn]
    fn query_block(rows: u32, nd: u32, s: u32, dv: u32, stride: u32) -> HeadRows {
        let nqb = s.div_ceil(rows);
        let blk = workgroup_index() / nd;
        let h = HeadRows {
            at: (blk / nqb) * s * dv,
            row0: (nqb - 1 - blk % nqb) * rows,
            rows,
            s,
            dv,
            width: dv,
            stride,
        };
        h
    }

    /// Rows `row0..row0 + rows` of the head of `h`.
    #[forge_fn]
    fn block_of(h: HeadRows, row0: u32, rows: u32) -> HeadRows {
        let mut b = h;
        b.row0 = row0;
        b.rows = rows;
        b
    }

    /// The rows `h` of `x` (their first `h.width` `HVec8`s) times `sign` (1 or -1: exact)
    /// into the first `h.rows` rows of `dst`, zeros past row `h.s`: the workgroup's
    /// invocations take an element each, `WG` apart.
    #[forge_fn]
    fn stage_rows<const N: usize, const M: usize>(
        dst: &mut [HVec8; N],
        x: &[HVec8; M],
        h: HeadRows,
        sign: f16,
    ) {
        let mut e = local_index();
        while e < h.rows * h.width {
            let (r, c) = (e / h.width, e % h.width);
            dst[r * h.stride + c] = if h.row0 + r < h.s {
                let y = x[h.at + (h.row0 + r) * h.dv + c];
                HVec8::join(y.lo() * sign, y.hi() * sign)
            } else {
                HVec8::ZERO
            };
            e += WG;
        }
    }

    /// The rows of `src` below row `h.s`, back: [`stage_rows`]' inverse.
    #[forge_fn]
    fn unstage_rows<const N: usize, const M: usize>(
        x: &mut [HVec8; M],
        src: &[HVec8; N],
        h: HeadRows,
    ) {
        let mut e = local_index();
        while e < h.rows * h.width {
            let (r, c) = (e / h.width, e % h.width);
            if h.row0 + r < h.s {
                x[h.at + (h.row0 + r) * h.dv + c] = src[r * h.stride + c];
            }
            e += WG;
        }
    }

    /// The rows `h` of `Q` times `sign` staged in `skv` (zero past `s`), and the subgroup's
    /// 16 from `at` kept as the `d / 16` (`h.dv / 2`) fragments of `qf`. `stride` is
    /// `h.stride`, given as the caller's constant: the CUDA emitter then proves every row on 16 bytes, and
    /// each load takes `ldmatrix` with no test.
    #[forge_fn]
    fn q_fragments<const N: usize, const M: usize>(
        qf: &mut [CoopA<f16>; 8],
        skv: &mut [HVec8; N],
        q: &[HVec8; M],
        h: HeadRows,
        at: u32,
        stride: u32,
        sign: f16,
    ) {
        stage_rows(skv, q, h, sign);
        workgroup_barrier();
        #[unroll]
        for f in 0..8 {
            if 2 * f < h.dv {
                qf[f] = CoopA::load_row_major(&skv[at + 2 * f], stride);
            }
        }
    }

    /// `sc[b·NJ + j] += qa[b]·Kᵀ` for the `NJ = N / M` fragments of 16 keys, over one
    /// fragment of the head dimension: `K`'s rows from `skv[at]`, `stride` apart (the caller's
    /// constant, as in [`q_fragments`]), each fragment of `K` loaded once for the `M` blocks
    /// of 16 query rows.
    #[forge_fn]
    fn add_scores<const N: usize, const M: usize, const L: usize>(
        sc: &mut [CoopC<f32>; N],
        qa: &[CoopA<f16>; M],
        skv: &[HVec8; L],
        at: u32,
        stride: u32,
    ) {
        #[unroll]
        for j in 0..N / M {
            let kt = CoopB::load_col_major(&skv[at + 16 * j * stride], stride);
            #[unroll]
            for b in 0..M {
                sc[b * (N / M) + j] = qa[b].mul_add(kt, sc[b * (N / M) + j]);
            }
        }
    }

    /// [`add_scores`] for fragment `f` of `d`, with `Q`'s rows from `sq` (the subgroup's
    /// from `qs`, [`attention_rows`]' `QS = 1`) and `K`'s from the stage at `at` of `skv`,
    /// rows `stride` apart in both (the caller's constant, as in [`q_fragments`]).
    #[forge_fn]
    fn add_q_scores<const N: usize, const M: usize, const L: usize, const Z: usize>(
        sc: &mut [CoopC<f32>; N],
        qa: &mut [CoopA<f16>; M],
        sq: &[HVec8; L],
        skv: &[HVec8; Z],
        qs: u32,
        at: u32,
        stride: u32,
        f: u32,
    ) {
        #[unroll]
        for b in 0..M {
            qa[b] = CoopA::load_row_major(&sq[qs + 16 * b * stride + 2 * f], stride);
        }
        add_scores(sc, qa, skv, at + 2 * f, stride);
    }

    /// Four floats of `x` from `at`, times `f`, as halves: half of an `HVec8` of `O`.
    #[forge_fn]
    fn halves_times<const N: usize>(x: &[f32; N], at: u32, f: f32) -> HVec4 {
        HVec4::new(
            (x[at] * f) as f16,
            (x[at + 1] * f) as f16,
            (x[at + 2] * f) as f16,
            (x[at + 3] * f) as f16,
        )
    }

    /// Where this invocation's first `HVec8` of a block of rows of `dv` lies, and the step
    /// to its next (`WG` elements on): [`copy_kv`]'s `walk`.
    #[forge_fn]
    fn kv_walk(dv: u32) -> UVec4 {
        let lid = local_index();
        UVec4::new(lid / dv, lid % dv, WG / dv, WG % dv)
    }

    /// Keys `h` (`h.row0..h.row0 + h.rows`) of `K` and `V` into rows `0..h.rows` and
    /// `h.rows..2·h.rows` of `skv` from element `dst` by `async_copy` (on CUDA the copies of
    /// `K` and `V` are in flight together), zeros past `h.s`. Each invocation steps through
    /// its `HVec8`s, `WG` apart, without a division: `walk` is its first's row and column and
    /// the step's (`kv_walk`, once a kernel). The caller waits.
    #[forge_fn]
    fn copy_kv<const N: usize, const M: usize>(
        skv: &mut [HVec8; N],
        k: &[HVec8; M],
        v: &[HVec8; M],
        h: HeadRows,
        dst: u32,
        walk: UVec4,
    ) {
        let (mut r, mut c) = (walk.x, walk.y);
        let (dr, dc) = (walk.z, walk.w);
        // `V`'s rows follow `K`'s.
        let vo = h.rows * h.stride;
        if dc == 0 {
            // `WG` is a multiple of a row's `HVec8`s (`d` a power of two): each
            // invocation keeps its column, and its addresses step by constants, a few
            // instructions a copy where the general loop below takes about 28. The rows
            // that hold keys come first, then the zeros past `s`.
            let keys = if h.row0 < h.s {
                (h.s - h.row0).min(h.rows)
            } else {
                0
            };
            let mut to = dst + r * h.stride + c;
            let mut from = h.at + (h.row0 + r) * h.dv + c;
            while r < keys {
                async_copy(&mut skv[to], &k[from]);
                async_copy(&mut skv[to + vo], &v[from]);
                r += dr;
                to += dr * h.stride;
                from += dr * h.dv;
            }
            while r < h.rows {
                skv[to] = HVec8::ZERO;
                skv[to + vo] = HVec8::ZERO;
                r += dr;
                to += dr * h.stride;
            }
        } else {
            while r < h.rows {
                let to = dst + r * h.stride + c;
                if h.row0 + r < h.s {
                    let from = h.at + (h.row0 + r) * h.dv + c;
                    async_copy(&mut skv[to], &k[from]);
                    async_copy(&mut skv[to + vo], &v[from]);
                } else {
                    skv[to] = HVec8::ZERO;
                    skv[to + vo] = HVec8::ZERO;
                }
                r += dr;
                c += dc;
                if c >= h.dv {
                    c -= h.dv;
                    r += 1;
                }
            }
        }
    }

    /// Flash attention on cooperative matrices: `f16` `Q`, `K`, `V` (`bh × s × d`, as rows of
    /// `HVec8`s), `O` in `f16`. `causal` is 0 or 1; `scale` multiplies `Q·Kᵀ` (the typed method
    /// passes `1/√d`).
    #[forge_kernel(crate = ::forge_core, workgroup = 64,
        threads = bh * s.div_ceil(64) * 128, ext = false,
        knobs(KB = 16, PAD = 8, OF = 2, XPAD = 0, LAZY = 0),
        tune(workgroup = [64, 128], KB = [16, 32], PAD = [8], OF = [2, 4, 8], XPAD = [0, 4],
            LAZY = [0, 1],
            keep = KB * WG <= 2048),
        reference = attention_reference_vec, tolerance(abs = 2e-3, rel = 2e-3, terms = s + d),
        case(bh = 1, s = 16, d = 16, causal = 0, scale = 0.25),
        case(bh = 2, s = 37, d = 64, causal = 0, scale = 0.125),
        case(bh = 2, s = 37, d = 64, causal = 1, scale = 0.125),
        case(bh = 1, s = 70, d = 128, causal = 1, scale = 0.088388),
        case(bh = 3, s = 5, d = 32, causal = 0, scale = 0.17677),
        cost(bytes = 8 * bh * s * d, flops = 4 * bh * s * s * d / (causal + 1)))]
    pub fn attention(
        q: &[HVec8; bh * s * d / 8],
        k: &[HVec8; bh * s * d / 8],
        v: &[HVec8; bh * s * d / 8],
        #[out] o: &mut [HVec8; bh * s * d / 8],
        bh: u32,
        s: u32,
        d: u32,
        causal: u32,
        scale: f32,
    ) {
        // `BC` keys a step (16 or 32 for 64 invocations, twice that for 128: `skv` then holds
        // the `WG / 2` rows of `Q` too). `skv`'s rows are `SKV` `HVec8`s: 128 halves and `PAD`.
        // The accumulators are rescaled `OF` fragments at a time through `so`, a subgroup's
        // 16 rows of `16·OF` floats and a pad (all of `d = 128` at `OF = 8`, in one round
        // trip); `O / l` is
        // written through the scores' part of `sx`, `OC` fragments at a time, which fill it.
        const BC: u32 = KB * (WG / 64);
        const OC: u32 = BC / 16;
        const SKV: u32 = (128 + PAD) / 8;
        const SO: u32 = 16 * OF;
        // `so`'s rows are 4 floats longer than they hold, so that a fragment's 16 rows, and
        // the lanes that scale a row, fall on different banks (16 bytes keep CUDA's `wmma`
        // stride rule).
        const SOP: u32 = SO + 4;
        // The rows of `sx` (floats) and `sp` (halves) are `XPAD` floats longer than a block:
        // 16 bytes more spread a fragment's rows over the banks, where `BC` floats or halves
        // put 4 or 8 of them on the same ones.
        const SXS: u32 = BC + XPAD;
        const SPS: u32 = BC + 2 * XPAD;
        // The reference maximum moves only when a block's exceeds it by more than `SLACK`
        // (log2 units): until then `α` is 1 and the rescale is skipped, and `p` stays below
        // `2^SLACK`, well inside `f16`.
        const SLACK: f32 = 8.0;
        #[shared]
        let mut skv = [HVec8::ZERO; 2 * BC * SKV];
        #[shared]
        let mut sx = [0.0f32; WG / 32 * 16 * SXS];
        #[shared]
        let mut sp = [0.0f16; WG / 32 * 16 * SPS];
        #[shared]
        let mut so = [0.0f32; WG / 32 * 16 * SOP];
        // One workgroup a block of rows (`threads` launches enough for any `WG` of the space;
        // the rest leave).
        let rows = WG / 2;
        let nqb = s.div_ceil(rows);
        let w = workgroup_index();
        if w < bh * nqb {
            let dv = d / 8;
            // The workgroup's rows of the head, in `Q` and `O`.
            let head = query_block(rows, 1, s, dv, SKV);
            let q0 = head.row0;
            let fd = d / 16;
            let sid = subgroup_id();
            // Q, zero past `s`, staged in `skv` and kept as fragments.
            let mut qf = [CoopA::zeroed(); 8];
            q_fragments(
                &mut qf,
                &mut skv,
                q,
                head,
                sid * 16 * SKV,
                SKV,
                1.0f32 as f16,
            );
            let lane = subgroup_invocation_id();
            // This lane's share of the softmax: half `hf` of row `rr` of its subgroup's 16.
            let rr = lane / 2;
            let hf = lane % 2;
            let row = q0 + sid * 16 + rr;
            let xs = sid * 16 * SXS;
            let ps = sid * 16 * SPS;
            let os = sid * 16 * SOP;
            let mut of = [CoopC::zeroed(); 8];
            let c2 = scale * 1.442_695_f32;
            let mut m = f32::NEG_INFINITY;
            let mut l = 0.0f32;
            // Keys up to the block's last row when causal: later blocks are masked whole.
            let kend = if causal != 0 { (q0 + rows).min(s) } else { s };
            let walk = kv_walk(dv);
            for kb in 0..kend.div_ceil(BC) {
                let k0 = kb * BC;
                // Everyone is done with the last block (and with `Q`) before it is replaced.
                workgroup_barrier();
                // The block's `K` and `V`, copied asynchronously (on CUDA both in flight
                // together).
                copy_kv(&mut skv, k, v, block_of(head, k0, BC), 0, walk);
                // The block has landed: a wait is a barrier too.
                async_wait(0);
                // S = Q·Kᵀ: Kᵀ(p, j) = K(j, p), column-major.
                #[unroll]
                for j in 0..BC / 16 {
                    let mut sc = CoopC::zeroed();
                    #[unroll]
                    for f in 0..8 {
                        if f < fd {
                            let kt = CoopB::load_col_major(&skv[16 * j * SKV + 2 * f], SKV);
                            sc = qf[f].mul_add(kt, sc);
                        }
                    }
                    sc.store_row_major(&mut sx[xs + 16 * j], SXS);
                }
                // O's first `OF` fragments go out now, to be rescaled with the softmax, under
                // the same barrier as the scores.
                #[unroll]
                for u in 0..OF {
                    if u < fd {
                        of[u].store_row_major(&mut so[os + 16 * u], SOP);
                    }
                }
                workgroup_barrier();
                // The online softmax of row `rr` over this block, half a block a lane. The
                // scores are read once, into registers (scaled to log2 units; masked keys
                // `-∞`, absent). A lane's `j`-th is column `(j + rr + 16·hf) % (BC / 2)` of its
                // half: with rows `BC` floats apart, the lanes then spread over 16 banks at
                // each `j` (32 for `BC` ≥ 32), where column `j` for all would put 8 on one.
                let mut sv = [0.0f32; BC / 2];
                let mut mx = f32::NEG_INFINITY;
                #[unroll]
                for j in 0..BC / 2 {
                    let col = hf * (BC / 2) + (j + rr + 16 * hf) % (BC / 2);
                    let key = k0 + col;
                    sv[j] = if key < s && (causal == 0 || key <= row) {
                        sx[xs + rr * SXS + col] * c2
                    } else {
                        f32::NEG_INFINITY
                    };
                    mx = mx.max(sv[j]);
                }
                mx = mx.max(subgroup_shuffle_xor(mx, 1));
                // Key 0 is in every row's first block: `mn` is finite from the first block on.
                let mn = if mx > m + SLACK { mx } else { m };
                let alpha = (m - mn).exp2();
                let mut sum = 0.0f32;
                #[unroll]
                for j in 0..BC / 2 {
                    let col = hf * (BC / 2) + (j + rr + 16 * hf) % (BC / 2);
                    // `2^(-∞)` is 0: a masked key weighs nothing.
                    let ph = (sv[j] - mn).exp2() as f16;
                    sp[ps + rr * SPS + col] = ph;
                    // The sum takes what `P·V` multiplies: the rounded value.
                    sum += ph as f32;
                }
                sum += subgroup_shuffle_xor(sum, 1);
                l = l * alpha + sum;
                m = mn;
                // O·α, row by row: row `r`'s factor is with lanes `2r` and `2r + 1`, and each
                // lane scales one column of every row (a row's 32 consecutive floats at a time:
                // no bank is hit twice), the columns below `d` only; then the fragments come
                // back. The first `OF` went out with the scores; where `d` has more, the rest go
                // round the same way, `OF` at a time. A subgroup whose factors are all 1 (most
                // blocks after the first few) skips the scaling, and with `LAZY = 1` the round
                // trip too, but for that first store; the barriers stay, as the whole workgroup
                // must reach them.
                let mut ar = [0.0f32; 16];
                #[unroll]
                for r in 0..16 {
                    ar[r] = subgroup_shuffle(alpha, 2 * r);
                }
                // Votes of the subgroup, so the same in all its lanes: the fragments, which are
                // the subgroup's, may be loaded and stored under them.
                let rescale = !subgroup_all(alpha == 1.0);
                let trip = LAZY == 0 || rescale;
                #[unroll]
                for ch in 0..8 / OF {
                    if ch * OF < fd {
                        if ch > 0 {
                            workgroup_barrier();
                            if trip {
                                #[unroll]
                                for u in 0..OF {
                                    if ch * OF + u < fd {
                                        of[ch * OF + u].store_row_major(&mut so[os + 16 * u], SOP);
                                    }
                                }
                            }
                            workgroup_barrier();
                        }
                        if rescale {
                            #[unroll]
                            for r in 0..16 {
                                #[unroll]
                                for c in 0..OF / 2 {
                                    if ch * SO + 32 * c + lane < d {
                                        let at = os + r * SOP + 32 * c + lane;
                                        so[at] = so[at] * ar[r];
                                    }
                                }
                            }
                        }
                        workgroup_barrier();
                        if trip {
                            #[unroll]
                            for u in 0..OF {
                                if ch * OF + u < fd {
                                    of[ch * OF + u] = CoopC::load_row_major(&so[os + 16 * u], SOP);
                                }
                            }
                        }
                    }
                }
                // O += P·V.
                #[unroll]
                for j in 0..BC / 16 {
                    let pa = CoopA::load_row_major(&sp[ps + 16 * j], SPS);
                    #[unroll]
                    for f in 0..8 {
                        if f < fd {
                            let vb = CoopB::load_row_major(&skv[(BC + 16 * j) * SKV + 2 * f], SKV);
                            of[f] = pa.mul_add(vb, of[f]);
                        }
                    }
                }
            }
            // O / l, as f16, through `sx` in the same chunks: a lane writes `BC / 16` `HVec8`s
            // of its row.
            let inv = 1.0 / l;
            #[unroll]
            for ch in 0..8 / OC {
                if ch * OC < fd {
                    workgroup_barrier();
                    #[unroll]
                    for u in 0..OC {
                        if ch * OC + u < fd {
                            of[ch * OC + u].store_row_major(&mut sx[xs + 16 * u], SXS);
                        }
                    }
                    workgroup_barrier();
                    #[unroll]
                    for j in 0..BC / 16 {
                        let cc = hf * (BC / 2) + 8 * j;
                        let col = ch * BC + cc;
                        if row < s && col < d {
                            let at = xs + rr * SXS + cc;
                            o[head.at + row * dv + col / 8] = HVec8::join(
                                halves_times(&sx, at, inv),
                                halves_times(&sx, at + 4, inv),
                            );
                        }
                    }
                }
            }
        }
    }

    /// Flash attention with the softmax on the accumulators' rows: `attention`'s inputs, output
    /// and meaning, and the layout of a block's keys and values in workgroup memory, but the
    /// scores, the probabilities and the rescaling never leave the subgroup's accumulators
    /// (`c.row_max()`, `c.exp2_rows(..)`, `c.scale_rows(..)`, `c.to_a()`). On CUDA, which
    /// knows the fragments' layout, that is registers and shuffles, as FlashAttention-2 does:
    /// each block of keys takes the one barrier that hands over its `K` and `V`. WGSL's
    /// matrices are opaque, so each row operation goes through workgroup memory there, and
    /// [`attention`](super::attention), written for that, stays the kernel of WGSL backends.
    ///
    /// A workgroup of `WG` invocations owns `WG / 32` subgroups' query rows of one head,
    /// `16·QB` a subgroup (`QB` blocks of 16), and `16·FD` columns of their output (a slice:
    /// `d / (16·FD)` workgroups share the rows where `d` is wider), and steps through the
    /// keys `KB` at a time:
    /// 1. `K` and `V`'s rows of the block are copied into `skv` by `async_copy`, zero past `s`;
    /// 2. `S = Q·Kᵀ`, raw (`Q` negated where the scale is negative), `KB / 16` accumulators
    ///    a block of rows, each fragment of `K` loaded once for the `QB` blocks; keys past
    ///    `s`, and when causal past each row's own, are masked to `-∞` (only in the blocks
    ///    that reach them);
    /// 3. the rows' maxima (the fragments' elementwise larger, `c.max(o)`, then one
    ///    reduction), the reference maximum `m'` in log2 units (moved only where the
    ///    block's passes it by more than `SLACK`, as `attention`'s), the factor
    ///    `α = 2^(m − m')` for what came before, the probabilities `P = 2^(S·c2 − m')` (the
    ///    scale `c2 = |scale|·log2 e` folded into the exponentials) and the sums
    ///    `l = α·l + ΣP`, all on the rows of the accumulators;
    /// 4. `O = α·O + P·V` for the slice's columns, `P` rounded to `f16` as the left operand,
    ///    each fragment of `V` loaded once for the `QB` blocks.
    ///
    /// Last, the slice of `O / l` goes out as `f16` through workgroup memory. The knobs size
    /// what a subgroup holds in registers, which bounds how many subgroups share a
    /// multiprocessor, against how often it reloads a fragment: `FD` accumulators of `O` a
    /// block of rows (`FD = 4` holds all of `d = 64`; `FD = 8` all of `d = 128`, computing
    /// `S` once for a wide head); `Q`'s `d / 16` fragments loaded once into registers
    /// (`QS = 0`) or read from `sq` at each block (`QS = 1`: 32 fewer registers); and `QB`
    /// blocks of 16 rows, over which each fragment of `K` and `V` is reused (`QB = 2` halves
    /// the loads an `mma` takes, as FlashAttention-2's warps hold 32 rows; it needs
    /// `QS = 1`). `LS = 1` (with `QB = 2`) sums `P`'s rows on the tensor cores, as `P·1` with
    /// a matrix of ones in workgroup memory, into accumulators whose every column is the
    /// sum: the row sums' shuffles leave the issue slots, which bound this kernel, for the
    /// tensor pipe, which idles. Workgroup memory: `skv`, `ST` stages of `2·KB` rows of
    /// `128 + PAD` halves (`PAD = 8`),
    /// whose first stages `Q` at the start where `QS = 0` (`keep` makes its `2·KB` rows at
    /// least the `WG / 2` rows) and `O` at the end; with `QS = 1`, `sq`, the workgroup's rows
    /// of `Q`, which stage `O` too. With `ST = 2` the copies of the next block are in flight
    /// while the subgroups compute on this one; `ST = 1`, the declared schedule's, which
    /// keeps to the portable 16 KiB, never won on an H100 (8 shapes, 2026-12-07), and the
    /// tuning space leaves it. Nor does it hold 64-key blocks for two subgroups (`WG = 64`,
    /// `KB = 64`): each invocation then stages twice the keys for half the subgroups that
    /// read them, and those 8 schedules ran 1.49–1.84× slower than the best at every shape
    /// on an H100 (d6b160f's call), the slowest of the space to compile besides (2.28 s
    /// cold at 27cc770). Nor `LS = 1` with `FD = 8`: where a subgroup holds all of d = 128,
    /// the ones and the sums' accumulators cost registers it lacks, and those schedules
    /// never won (1.06–1.34× slower than the best at every shape in that call); the one with
    /// 64-key blocks and `QB = 2` took 2.31 s to start cold (37cdbcf), the slowest of all.
    /// Workgroups of 256 (eight subgroups, 256 rows) are tried only in the winners' form,
    /// 64-key blocks, `QS = 1`, `QB = 2`: a block's copies are then split over twice the
    /// invocations (four turns of the copy loop where `WG = 128` takes eight, about 60
    /// instructions a block and warp fewer at d = 128) and each block of `K` and `V` crosses
    /// from L2 once for 256 rows, against one workgroup a multiprocessor (139 KiB of
    /// workgroup memory at d = 128) where two of 128 overlap each other's barriers.
    #[forge_kernel(crate = ::forge_core, workgroup = 64,
        threads = bh * s.div_ceil(WG / 2 * QB) * d.div_ceil(16 * FD) * WG, ext = false,
        knobs(KB = 16, ST = 1, FD = 8, QS = 0, QB = 1, LS = 0),
        tune(workgroup = [64, 128, 256], KB = [16, 32, 64], ST = [2], FD = [4, 8],
            QS = [0, 1], QB = [1, 2], LS = [0, 1],
            keep = (QS == 1 || 4 * KB >= WG) && (QB == 1 || QS == 1) && (LS == 0 || QB == 2)
                && (WG >= 128 || KB <= 32) && (LS == 0 || FD == 4)
                && (WG < 256 || (KB == 64 && QS == 1 && QB == 2))),
        reference = attention_reference_vec, tolerance(abs = 2e-3, rel = 2e-3, terms = s + d),
        case(bh = 1, s = 16, d = 16, causal = 1, scale = 0.25),
        case(bh = 2, s = 45, d = 64, causal = 0, scale = 0.125),
        case(bh = 3, s = 33, d = 64, causal = 1, scale = 0.125),
        case(bh = 1, s = 70, d = 128, causal = 0, scale = 0.088388),
        case(bh = 2, s = 9, d = 112, causal = 1, scale = 0.2),
        case(bh = 1, s = 100, d = 64, causal = 1, scale = -0.3),
        cost(bytes = 8 * bh * s * d, flops = 4 * bh * s * s * d / (causal + 1)))]
    pub fn attention_rows(
        q: &[HVec8; bh * s * d / 8],
        k: &[HVec8; bh * s * d / 8],
        v: &[HVec8; bh * s * d / 8],
        #[out] o: &mut [HVec8; bh * s * d / 8],
        bh: u32,
        s: u32,
        d: u32,
        causal: u32,
        scale: f32,
    ) {
        // Rows in workgroup memory are `SKV` `HVec8`s: 128 halves and `PAD`, which put a
        // fragment's rows on different banks (a constant: other pads never won).
        const PAD: u32 = 8;
        const SKV: u32 = (128 + PAD) / 8;
        // One stage: a block's keys, then its values.
        const STAGE: u32 = 2 * KB * SKV;
        // A subgroup's query rows, and the score fragments of each of its blocks of 16.
        const RB: u32 = 16 * QB;
        const NJ: u32 = KB / 16;
        // How far (log2 units) a block's maximum may pass the reference before it moves: the
        // probabilities stay below `2^SLACK`, well inside `f16`.
        const SLACK: f32 = 8.0;
        // `Q`'s rows where `QS = 1`; a single element, unused, where `Q` goes through `skv`.
        #[shared]
        let mut sq = [HVec8::ZERO; QS * (WG / 32 * RB) * SKV + 1 - QS];
        #[shared]
        let mut skv = [HVec8::ZERO; ST * STAGE];
        // A 16×16 matrix of ones where `LS = 1`: `P·1` sums `P`'s rows on the tensor cores.
        #[shared]
        let mut ones = [HVec8::ZERO; 32 * LS + 1 - LS];
        let rows = WG / 32 * RB;
        let nqb = s.div_ceil(rows);
        // Workgroup `w` takes the `w % nd`-th slice of `FD` fragments of the output columns
        // of the `w / nd`-th block of query rows (a head's last first: `query_block`).
        let nd = d.div_ceil(16 * FD);
        let w = workgroup_index();
        if w < bh * nqb * nd {
            let slice = w % nd;
            let dv = d / 8;
            // The workgroup's rows of the head, in `Q` and `O`.
            let head = query_block(rows, nd, s, dv, SKV);
            let q0 = head.row0;
            let fd = d / 16;
            // The slice's first fragment.
            let f0 = slice * FD;
            let sid = subgroup_id();
            // The subgroup's first row, in `sq` or `skv` and in the head.
            let qs = sid * RB * SKV;
            let r0 = q0 + sid * RB;
            // The scale, in log2 units, is folded into the exponentials (`2^(s·c2 − m)`, one
            // `FFMA` an element where scaling the scores first took an `FMUL` more): the
            // scores stay raw, and a row's largest raw score must be its largest scaled one,
            // so `c2` is the scale's magnitude and `Q` is negated where the scale is
            // negative (exact in `f16`). A zero scale becomes the least normal `f32`: every
            // `s·c2` then rounds `2^(s·c2 − m)` as 0 would (|s| < 2^40 from `f16` inputs),
            // and a masked `-∞` stays `-∞` where `-∞·0` is a NaN. A NaN scale stays NaN.
            let log2_scale = scale * 1.442_695_f32;
            let c2 = if log2_scale == 0.0 {
                f32::MIN_POSITIVE
            } else {
                log2_scale.abs()
            };
            let sign = if scale < 0.0 { -1.0f32 } else { 1.0f32 } as f16;
            // `Q`, zero past `s`: kept in `sq`, or staged in `skv` and kept as fragments.
            let mut qf = [CoopA::zeroed(); 8];
            if QS == 1 {
                stage_rows(&mut sq, q, head, sign);
            } else {
                q_fragments(&mut qf, &mut skv, q, head, qs, SKV, sign);
            }
            // Block `b`'s accumulators are `of[b·FD..]`, its scores `sc[b·NJ..]`.
            let mut of = [CoopC::zeroed(); QB * FD];
            let mut m = [CoopRow::splat(f32::NEG_INFINITY); QB];
            let mut l = [CoopRow::splat(0.0); QB];
            // With `LS = 1`, the row sums as accumulators (every column of a row its sum),
            // where a row sum of each block's `P` takes a lane's elements and two shuffles a
            // half: the tensor pipe is three quarters idle, the issue slots are not.
            let mut ls = [CoopC::zeroed(); QB];
            if LS == 1 {
                let one = 1.0f32 as f16;
                if local_index() < 32 {
                    let four = HVec4::new(one, one, one, one);
                    ones[local_index()] = HVec8::join(four, four);
                }
            }
            // Keys up to the block's last row when causal: later blocks are masked whole.
            let kend = if causal != 0 { (q0 + rows).min(s) } else { s };
            let walk = kv_walk(dv);
            let nb = kend.div_ceil(KB);
            if ST == 2 {
                if QS == 0 {
                    // Everyone has its `Q` before the first block replaces it.
                    workgroup_barrier();
                }
                copy_kv(&mut skv, k, v, block_of(head, 0, KB), 0, walk);
            }
            for kb in 0..nb {
                let k0 = kb * KB;
                // The stage this block is in.
                let at = (kb % ST) * STAGE;
                if ST == 1 {
                    // Everyone is done with the last block before it is replaced (and, the
                    // first time, has staged its `Q`).
                    workgroup_barrier();
                    copy_kv(&mut skv, k, v, block_of(head, k0, KB), 0, walk);
                    async_wait(0);
                } else if kb + 1 < nb {
                    // The next block into the other stage (read last in the step before,
                    // whose closing barrier everyone has passed), then this one landed (and
                    // `Q` staged: a wait is a barrier too).
                    copy_kv(
                        &mut skv,
                        k,
                        v,
                        block_of(head, k0 + KB, KB),
                        STAGE - at,
                        walk,
                    );
                    async_wait(1);
                } else {
                    async_wait(0);
                }
                // S = ±Q·Kᵀ (raw: `c2` scales it in the exponentials): Kᵀ(p, j) = K(j, p),
                // column-major.
                let mut sc = [CoopC::zeroed(); QB * NJ];
                let mut qa = [CoopA::zeroed(); QB];
                if QS == 1 {
                    // `Q` from `sq`, in a loop over `d`'s fragments that is not unrolled: its
                    // addresses step, where each unrolled fragment sat under a test of
                    // `f < fd` (`d` is a run-time value) and computed its addresses whole.
                    // The first fragment comes before the loop, so that its products start
                    // from the zeroed accumulators: CUDA's compiler folds the zeros into
                    // them, where the loop's first turn took 32 register zeroings a block
                    // (`d` = 128, `QB` = 2).
                    if fd > 0 {
                        add_q_scores(&mut sc, &mut qa, &sq, &skv, qs, at, SKV, 0);
                    }
                    for f in 1..fd {
                        add_q_scores(&mut sc, &mut qa, &sq, &skv, qs, at, SKV, f);
                    }
                } else {
                    // `Q`'s fragments in registers, indexed by constants only.
                    #[unroll]
                    for f in 0..8 {
                        if f < fd {
                            #[unroll]
                            for b in 0..QB {
                                qa[b] = qf[f];
                            }
                            add_scores(&mut sc, &qa, &skv, at + 2 * f, SKV);
                        }
                    }
                }
                // Keys from `s` on are masked to `-∞`, and, when causal, those past each row's
                // own, which masks those from `s` on in every row below `s` (the rows past it
                // are computed and never stored): one mask a fragment, the causal one or the
                // other. One test of the block first, so that the blocks that mask nothing
                // (all but the last, or those below the diagonal) take one branch. (The tests
                // are the workgroup's, whose first row is `q0`: these operations are
                // collective over it.)
                if k0 + KB > s || (causal != 0 && k0 + KB > q0 + 1) {
                    let step = if causal != 0 { 1 } else { 0 };
                    #[unroll]
                    for x in 0..QB * NJ {
                        // Element (r, c) is key `k0 + 16·j + c` of row `r0 + 16·b + r`.
                        let (b, j) = (x / NJ, x % NJ);
                        let key0 = (k0 + 16 * j) as i32;
                        let first = if causal != 0 {
                            (r0 + 16 * b + 1) as i32 - key0
                        } else {
                            s as i32 - key0
                        };
                        sc[x] = sc[x].mask_from(first, step, f32::NEG_INFINITY);
                    }
                }
                #[unroll]
                for b in 0..QB {
                    // The online softmax. The reference maximum moves only where the block's
                    // exceeds it by more than `SLACK`, to `SLACK` below it: elsewhere `α` is
                    // exactly 1, and CUDA's `scale_rows` skips it (where the factors of the
                    // whole warp are 1: a vote). Key 0 is in every row's first block, so `m'`
                    // is finite from there on, and `α = 2^(-∞)` = 0 clears nothing that was
                    // not zero.
                    // The rows' maxima of the block: its fragments' elementwise larger first,
                    // then one reduction (a lane's elements and two shuffles), where one for
                    // each fragment took its shuffles each.
                    let mut big = sc[b * NJ];
                    #[unroll]
                    for j in 1..NJ {
                        big = big.max(sc[b * NJ + j]);
                    }
                    let mx = big.row_max();
                    let mn = m[b].max(mx.scale(c2).sub(CoopRow::splat(SLACK)));
                    let alpha = m[b].sub(mn).exp2();
                    m[b] = mn;
                    if LS == 1 {
                        ls[b] = ls[b].scale_rows(alpha);
                    } else {
                        l[b] = l[b].mul(alpha);
                    }
                    #[unroll]
                    for u in 0..FD {
                        of[b * FD + u] = of[b * FD + u].scale_rows(alpha);
                    }
                }
                // O += P·V over the slice's columns, a block of 16 keys at a time. All `FD`
                // fragments, with no test of `f0 + u < fd`: a test around each split the
                // step into branches, each computing its addresses whole. Past `d` (a slice
                // wider than what is left of the head) they read columns of `skv`'s rows
                // that hold no value of this block (`f0 + u < 8`: inside the rows), and the
                // fragments they make are never stored.
                // (The ones were written before the wait or barrier that began this step.)
                let mut ob = CoopB::zeroed();
                if LS == 1 {
                    ob = CoopB::load_row_major(&ones[0], 2);
                }
                // P = 2^(S·c2 − m'), in place of the scores.
                #[unroll]
                for x in 0..QB * NJ {
                    sc[x] = sc[x].exp2_rows(c2, m[x / NJ]);
                }
                if LS == 0 {
                    // The rows' sums of the block: its fragments' elementwise sum first, then
                    // one reduction, where one for each fragment took its shuffles each.
                    #[unroll]
                    for b in 0..QB {
                        let mut sum = sc[b * NJ];
                        #[unroll]
                        for j in 1..NJ {
                            sum = sum.add(sc[b * NJ + j]);
                        }
                        l[b] = l[b].add(sum.row_sum());
                    }
                }
                #[unroll]
                for j in 0..NJ {
                    let mut pa = [CoopA::zeroed(); QB];
                    #[unroll]
                    for b in 0..QB {
                        pa[b] = sc[b * NJ + j].to_a();
                        if LS == 1 {
                            // The sum of what `P·V` multiplies: `P` rounded to `f16`.
                            ls[b] = pa[b].mul_add(ob, ls[b]);
                        }
                    }
                    #[unroll]
                    for u in 0..FD {
                        let vb = CoopB::load_row_major(
                            &skv[at + (KB + 16 * j) * SKV + 2 * (f0 + u)],
                            SKV,
                        );
                        #[unroll]
                        for b in 0..QB {
                            of[b * FD + u] = pa[b].mul_add(vb, of[b * FD + u]);
                        }
                    }
                }
                if ST == 2 {
                    // Everyone is done with this stage before the next step refills it.
                    workgroup_barrier();
                }
            }
            // The slice of O / l, as f16, staged in the subgroup's rows of `sq` or `skv` once
            // everyone is done with `Q` and the last block (a subgroup's invocations are
            // not ordered without a barrier either), then the rows below `s`.
            workgroup_barrier();
            #[unroll]
            for b in 0..QB {
                if LS == 1 {
                    l[b] = ls[b].row_max();
                }
                let inv = l[b].recip();
                #[unroll]
                for u in 0..FD {
                    if f0 + u < fd {
                        let out = of[b * FD + u].scale_rows(inv).to_a();
                        let at = qs + 16 * b * SKV + 2 * u;
                        if QS == 1 {
                            out.store_row_major(&mut sq[at], SKV);
                        } else {
                            out.store_row_major(&mut skv[at], SKV);
                        }
                    }
                }
            }
            workgroup_barrier();
            let mut cols = head;
            cols.at += 2 * f0;
            cols.width = (2 * FD).min(dv - 2 * f0);
            if QS == 1 {
                unstage_rows(&mut o, &sq, cols);
            } else {
                unstage_rows(&mut o, &skv, cols);
            }
        }
    }
}
