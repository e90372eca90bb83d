//! Top-k selection: the `k` largest values of each block of consecutive elements, and of
//! the whole input.
//!
//! # Order
//! Values are ordered as `torch.topk` orders them on CUDA, whose radix keys this kernel
//! uses: every NaN (whatever its sign or payload) is larger than `+inf`, and all NaNs are
//! equal; `+0.0` is larger than `-0.0`; otherwise the usual order of `f32`, down to `-inf`.
//! Equal values come in the order of their indices, lowest first, so results never depend
//! on the schedule or the adapter. Values are returned bit for bit as they were given
//! (NaN payloads and the sign of zero included).
//!
//! # Blocks and padding
//! The input is cut into blocks of `block` consecutive elements; the last block is shorter
//! when `block` does not divide the length. Each block contributes exactly `k` outputs, in
//! descending order, so block `i`'s results sit at `i·k .. (i+1)·k`. A last block with fewer
//! than `k` elements is padded after its real values with `-inf` and the index
//! [`TOPK_PAD_INDEX`] (`u32::MAX`), which sorts after every real value, `-inf` included.
//! The block size is always the caller's argument: it never depends on the tuned schedule.
//!
//! # Blocks: two kernels
//! With `k ≤ 8` ([`TOPK_ROWS_MAX_K`]), [`topk_rows`] gives each block to one invocation,
//! which keeps the best nine in registers (see the kernel for the packed keys and their
//! exact fallback): one read of the input, no workgroup memory, no barriers.
//!
//! Otherwise [`topk_select`] does, also in one read: a workgroup loads whole blocks into
//! workgroup memory as 32-bit keys (the order above, made unsigned) with their positions,
//! each block padded to `p = block.next_power_of_two()` slots with keys below every real
//! value. It then runs a bitonic top-k: runs of `K = k.next_power_of_two()` keys are sorted
//! by a bitonic network with alternating directions, and pairs of runs are merged by keeping
//! the larger half (Batcher's half-cleaner) and re-sorting it, until one sorted run of `K`
//! remains per block; its first `k` entries are written, values re-read from the input so
//! that they keep their bits. A workgroup holds `WG·ITEMS / p` blocks (at least one).
//! Positions are unique within a block, so the order is total and every schedule gives
//! bit-identical results. (Its `chained` mode, candidates carrying their indices, served
//! an earlier global top-k; it stays certified.)
//!
//! # Global top-k
//! [`TopkExt::topk_global`] is a radix select on a 64-bit composite key, the 32-bit order
//! key then the complemented index, which is unique and puts equal values in index order
//! ([`TopkGlobalScratch`] describes its state). Every pass is recorded into one submission
//! ([`topk_global_record`]):
//! 1. a sample of one `Vec4` in up to 256 is histogrammed on the top 11 bits of the key,
//!    then on the next 11 bits of the bin that holds its `k`-th largest: that sets a floor
//!    of 22 bits. The sample is part of the data, so at least `k` elements reach it, and
//!    about `k` times the sampling ratio do ([`topk_radix_hist`], [`topk_radix_select`]);
//! 2. the one full read ([`topk_radix_mark`]): level 0's histogram of the elements at or
//!    above the floor, which it also marks in a bitmap (one bit per element, written per
//!    chunk of 65536 elements, so it is deterministic and needs no clearing);
//! 3. five more levels, each a histogram of the next digit (11 and 10 more bits of the key,
//!    then the index) of the marked elements that match the prefix chosen so far, read
//!    through the bitmap ([`topk_radix_refine`]), and a select of the bin that holds the
//!    element of rank `k`. Once the elements above the prefix and those matching it number
//!    at most `cap = clamp(2·next_pow2(k), 256, 2048)`, later levels do nothing; the last
//!    level always gets there. Every level works on the candidates alone, whose top `k`
//!    are the input's, so the select is exact whatever the data (when all of it is marked,
//!    the levels gather all of it);
//! 4. a collect of those elements, each workgroup from its chunk of the bitmap, in index
//!    order ([`topk_radix_collect`]);
//! 5. a bitonic sort of the at most `cap` candidates in one workgroup, which writes the
//!    first `k` ([`topk_radix_sort`]).
//!
//! Certification checks each kernel against its reference; the tests check whole block and
//! global runs against a sort of the input.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime, GpuTensor, Schedule};
use forge_macros::{forge_kernel, forge_module};

pub use selection::{
    topk_radix_collect, topk_radix_hist, topk_radix_mark, topk_radix_refine, topk_radix_select,
    topk_radix_sort, topk_rows,
};

/// The index that pads a block shorter than `k`, after its real values. Its value is `-inf`.
pub const TOPK_PAD_INDEX: u32 = u32::MAX;

/// The block size of the seed's [`TopkExt::topk`].
pub const TOPK_SEED_BLOCK: usize = 64;

/// The largest block size of [`TopkExt::topk_blocks`] and [`TopkExt::topk_with_indices`].
pub const TOPK_MAX_BLOCK: usize = 1024;

/// The largest `k` of [`TopkExt::topk_global`].
pub const TOPK_GLOBAL_MAX_K: usize = 1024;

/// The largest input of [`TopkExt::topk_global`]: 2^28 elements.
pub const TOPK_GLOBAL_MAX_LEN: usize = 1 << 28;

/// The largest `k` of the register path of the block top-k ([`topk_rows`]).
pub const TOPK_ROWS_MAX_K: usize = 8;

/// The top `k` of each block of `b` elements of `vals`, in descending order.
///
/// `p` is `b.next_power_of_two()`, at most 2048, and `k ≤ b`. With `chained = 0`, the
/// index written is the element's position: within its block when `local ≠ 0`, in `vals`
/// otherwise. With `chained ≠ 0`, `ids` (then of length `n`) holds each element's index,
/// which is written instead, and elements whose index is `u32::MAX` count as padding; ties
/// are broken by position, which the global passes make agree with the index order.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(b) * p, ext = false,
    tune(workgroup = [256, 128, 64], items = [8, 4, 2, 1]),
    reference = topk_select_reference, tolerance(abs = 0.0, rel = 0.0),
    case(n = 1, b = 1, k = 1, p = 1, chained = 0, local = 1),
    case(n = 5, b = 64, k = 3, p = 64, chained = 0, local = 1),
    case(n = 1000, b = 64, k = 8, p = 64, chained = 0, local = 1),
    case(n = 1000, b = 100, k = 7, p = 128, chained = 0, local = 0),
    case(n = 777, b = 13, k = 13, p = 16, chained = 0, local = 1),
    case(n = 3000, b = 1024, k = 1000, p = 1024, chained = 0, local = 0),
    case(n = 2500, b = 1000, k = 1, p = 1024, chained = 0, local = 1),
    case(n = 5000, b = 2048, k = 100, p = 2048, chained = 1, local = 0),
    case(n = 333, b = 50, k = 33, p = 64, chained = 1, local = 0))]
pub fn topk_select(
    vals: &[f32; n],
    ids: &[u32; (n - 1) * chained + 1],
    #[out] out_vals: &mut [f32; n.div_ceil(b) * k],
    #[out] out_ids: &mut [u32; n.div_ceil(b) * k],
    n: u32,
    b: u32,
    k: u32,
    p: u32,
    chained: u32,
    local: u32,
) {
    // Keys (0 is padding: no real value maps to it) and positions within the block.
    #[shared]
    let mut skey = [0u32; 2048];
    #[shared]
    let mut spos = [0u32; 2048];
    let lid = local_index();
    let nb = n.div_ceil(b);
    // Every divisor below is a power of two: shifts and masks, not divisions.
    let log_p = p.trailing_zeros();
    let groups = ((WG * ITEMS) >> log_p).max(1);
    let slots = groups * p;
    let first = workgroup_index() * groups;
    let log_k = 32 - (k - 1).leading_zeros();
    let kk = 1u32 << log_k;
    // When a block is larger than `WG·ITEMS`, the launch has more workgroups than blocks.
    if first < nb {
        let mut i = lid;
        while i < slots {
            let blk = first + (i >> log_p);
            let j = i & (p - 1);
            let mut key = 0u32;
            if blk < nb && j < b {
                let src = blk * b + j;
                if src < n {
                    let bits = vals[src].to_bits();
                    if (bits & 0x7fffffff) > 0x7f800000 {
                        key = 0xffffffff;
                    } else if (bits >> 31) != 0 {
                        key = !bits;
                    } else {
                        key = bits | 0x80000000;
                    }
                    if chained != 0 {
                        if ids[src] == 0xffffffff {
                            key = 0;
                        }
                    }
                }
            }
            skey[i] = key;
            spos[i] = j;
            i += WG;
        }
        workgroup_barrier();

        // Sort runs of `kk` with a bitonic network; runs alternate direction so that pairs
        // of runs are bitonic, except when a run is a whole block, which ends descending.
        let pairs = slots / 2;
        let mut size = 2u32;
        while size <= kk {
            let mut stride = size / 2;
            while stride > 0 {
                let mut t = lid;
                while t < pairs {
                    // The `t`-th pair's lower slot: bit `log2 stride` of `t` opened up.
                    let lo = t + (t & !(stride - 1));
                    let hi = lo + stride;
                    let desc = (lo & size) == 0 || size == p;
                    let ka = skey[lo];
                    let kb = skey[hi];
                    let pa = spos[lo];
                    let pb = spos[hi];
                    let hi_first = kb > ka || (kb == ka && pb < pa);
                    if hi_first == desc {
                        skey[lo] = kb;
                        skey[hi] = ka;
                        spos[lo] = pb;
                        spos[hi] = pa;
                    }
                    t += WG;
                }
                workgroup_barrier();
                stride = stride / 2;
            }
            size = size * 2;
        }

        // Merge pairs of runs: keep the larger of A[i] and B[i] in A (a bitonic run that holds
        // the top `kk` of both), then sort it. The run of pair `r` lives at `r·span`.
        let half_k = kk / 2;
        let mut span = kk * 2;
        let mut log_span = log_k + 1;
        while span <= p {
            let half_span = span / 2;
            let runs = slots >> log_span;
            let mut t = lid;
            while t < runs * kk {
                let a = ((t >> log_k) << log_span) + (t & (kk - 1));
                let c = a + half_span;
                let ka = skey[a];
                let kc = skey[c];
                if kc > ka || (kc == ka && spos[c] < spos[a]) {
                    skey[a] = kc;
                    spos[a] = spos[c];
                }
                t += WG;
            }
            workgroup_barrier();
            let mut stride = half_k;
            while stride > 0 {
                let mut t = lid;
                while t < runs * half_k {
                    let r = t >> (log_k - 1);
                    let q = t & (half_k - 1);
                    let lo = (r << log_span) + q + (q & !(stride - 1));
                    let hi = lo + stride;
                    let desc = (r & 1) == 0 || span == p;
                    let ka = skey[lo];
                    let kb = skey[hi];
                    let pa = spos[lo];
                    let pb = spos[hi];
                    let hi_first = kb > ka || (kb == ka && pb < pa);
                    if hi_first == desc {
                        skey[lo] = kb;
                        skey[hi] = ka;
                        spos[lo] = pb;
                        spos[hi] = pa;
                    }
                    t += WG;
                }
                workgroup_barrier();
                stride = stride / 2;
            }
            span = span * 2;
            log_span += 1;
        }

        // Block `blk`'s sorted run starts at slot `g·p`.
        let mut t = lid;
        while t < groups * k {
            let g = t / k;
            let i = t % k;
            let blk = first + g;
            if blk < nb {
                let slot = g * p + i;
                let o = blk * k + i;
                if skey[slot] == 0 {
                    out_vals[o] = f32::from_bits(0xff800000u32);
                    out_ids[o] = 0xffffffff;
                } else {
                    let pos = spos[slot];
                    let src = blk * b + pos;
                    out_vals[o] = vals[src];
                    if chained != 0 {
                        out_ids[o] = ids[src];
                    } else if local != 0 {
                        out_ids[o] = pos;
                    } else {
                        out_ids[o] = src;
                    }
                }
            }
            t += WG;
        }
    }
}

/// The order key of a value: larger keys sort first. NaNs are all equal and above `+inf`;
/// `-0.0` sits just below `+0.0`.
fn order_key(v: f32) -> (u8, f64, bool) {
    if v.is_nan() {
        (1, 0.0, false)
    } else {
        (0, v as f64, !v.is_sign_negative())
    }
}

/// The output order of (value, tie-break position) pairs: `Less` comes first.
fn output_order(a: (f32, u32), b: (f32, u32)) -> std::cmp::Ordering {
    let (ka, kb) = (order_key(a.0), order_key(b.0));
    kb.0.cmp(&ka.0)
        .then(kb.1.partial_cmp(&ka.1).unwrap_or(std::cmp::Ordering::Equal))
        .then(kb.2.cmp(&ka.2))
        .then(a.1.cmp(&b.1))
}

/// The independent reference: each block's real elements sorted by a comparator on `f64`
/// values and indices, the first `k` kept, then padding.
#[allow(clippy::too_many_arguments)]
pub fn topk_select_reference(
    vals: &[f32],
    ids: &[u32],
    n: u32,
    b: u32,
    k: u32,
    _p: u32,
    chained: u32,
    local: u32,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let (n, b, k) = (n as usize, b as usize, k as usize);
    let (mut out_v, mut out_i) = (Vec::new(), Vec::new());
    for (blk, chunk) in vals[..n].chunks(b).enumerate() {
        // (value, tie-break position, index to report)
        let mut items: Vec<(f32, u32, u32)> = chunk
            .iter()
            .enumerate()
            .filter_map(|(j, &v)| {
                let src = blk * b + j;
                let id = if chained != 0 {
                    ids[src]
                } else if local != 0 {
                    j as u32
                } else {
                    src as u32
                };
                (chained == 0 || id != TOPK_PAD_INDEX).then_some((v, j as u32, id))
            })
            .collect();
        items.sort_by(|x, y| output_order((x.0, x.1), (y.0, y.1)));
        for i in 0..k {
            match items.get(i) {
                Some(&(v, _, id)) => {
                    out_v.push(v);
                    out_i.push(id);
                }
                None => {
                    out_v.push(f32::NEG_INFINITY);
                    out_i.push(TOPK_PAD_INDEX);
                }
            }
        }
    }
    Ok((out_v, out_i))
}

/// The kernels of the fast paths: blocks with `k ≤ 8` in registers, and the global top-k as
/// a radix select.
#[forge_module]
mod selection {
    use super::*;

    /// The order key of a value: larger keys come first. Every NaN maps to `u32::MAX`,
    /// `+0.0` sits just above `-0.0`, and no value maps to 0, which marks padding.
    #[forge_fn]
    fn order_key(x: f32) -> u32 {
        let bits = x.to_bits();
        let mut key = bits | 0x80000000;
        if (bits & 0x7fffffff) > 0x7f800000 {
            key = 0xffffffff;
        } else if (bits >> 31) != 0 {
            key = !bits;
        }
        key
    }

    /// Component `c` (0..4) of `v`.
    #[forge_fn]
    fn component(v: Vec4, c: u32) -> f32 {
        select(select(v.z, v.w, c == 3), select(v.x, v.y, c == 1), c < 2)
    }

    /// The `Vec4` `c` (0..4) of four.
    #[forge_fn]
    fn quad(v0: Vec4, v1: Vec4, v2: Vec4, v3: Vec4, c: u32) -> Vec4 {
        select(select(v2, v3, c == 3), select(v0, v1, c == 1), c < 2)
    }

    /// The histogram digit of element `e` with value `x` when it counts (below `n`, key at
    /// least `floor`, matching the prefix `(pk, pmask, pi, imask)`), `u32::MAX` otherwise.
    #[forge_fn]
    fn digit(
        x: f32,
        e: u32,
        n: u32,
        floor: u32,
        prefix: UVec4,
        level: u32,
        shift: u32,
        mask: u32,
    ) -> u32 {
        let key = order_key(x);
        let inv = !e;
        let mut d = 0xffffffffu32;
        if e < n && key >= floor && (key & prefix.y) == prefix.x && (inv & prefix.w) == prefix.z {
            d = (select(inv, key, level < 3) >> shift) & mask;
        }
        d
    }

    /// [`digit`] of each component of `v`, elements `e0..e0 + 4`.
    #[forge_fn]
    fn digits4(
        v: Vec4,
        e0: u32,
        n: u32,
        floor: u32,
        prefix: UVec4,
        level: u32,
        shift: u32,
        mask: u32,
    ) -> UVec4 {
        UVec4::new(
            digit(v.x, e0, n, floor, prefix, level, shift, mask),
            digit(v.y, e0 + 1, n, floor, prefix, level, shift, mask),
            digit(v.z, e0 + 2, n, floor, prefix, level, shift, mask),
            digit(v.w, e0 + 3, n, floor, prefix, level, shift, mask),
        )
    }

    /// Component `c` (0..4) of `v`.
    #[forge_fn]
    fn ucomponent(v: UVec4, c: u32) -> u32 {
        select(select(v.z, v.w, c == 3), select(v.x, v.y, c == 1), c < 2)
    }

    /// The largest order key of the four components of `v`.
    #[forge_fn]
    fn max_key(v: Vec4) -> u32 {
        order_key(v.x)
            .max(order_key(v.y))
            .max(order_key(v.z).max(order_key(v.w)))
    }

    /// Whether element `e` with key `key` is at or above the prefix `(pk, pmask, pi,
    /// imask)`: its key's fixed bits above `pk`, or equal and its complemented index's fixed
    /// bits at least `pi`.
    #[forge_fn]
    fn at_or_above(key: u32, e: u32, prefix: UVec4) -> bool {
        let kp = key & prefix.y;
        kp > prefix.x || (kp == prefix.x && (!e & prefix.w) >= prefix.z)
    }

    /// The top `k ≤ 8` of each block of `b` elements of `vals` (the first `n` of the
    /// `Vec4`s' components), one invocation per block, in registers: no workgroup memory,
    /// no barriers. The index written is the position within the block when `local ≠ 0`,
    /// in `vals` otherwise. Block results and padding are as [`topk_select`]'s.
    ///
    /// The fast path packs each element into one `u32`: its order key with the low
    /// `log2 b` bits replaced by the complemented position, so that keys are unique and the
    /// best nine take two instructions per list entry (max and min). Packing merges keys
    /// that differ only in those low bits; when that could change the result (two of the
    /// first `k + 1` entries share the packed key's high bits but not their whole keys, or
    /// the `k`-th and `k+1`-th do), the block is redone exactly with (key, position) pairs.
    #[forge_kernel(crate = ::forge_core, workgroup = 64, threads = n.div_ceil(b), ext = false,
        tune(workgroup = [64, 256, 128]),
        reference = topk_rows_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, b = 1, k = 1, local = 1),
        case(n = 5, b = 64, k = 3, local = 1),
        case(n = 4096, b = 64, k = 8, local = 1),
        case(n = 8190, b = 32, k = 8, local = 0),
        case(n = 1000, b = 100, k = 7, local = 0),
        case(n = 1003, b = 8, k = 8, local = 1),
        case(n = 777, b = 13, k = 8, local = 0),
        case(n = 2500, b = 1000, k = 1, local = 1))]
    pub fn topk_rows(
        vals: &[Vec4; n.div_ceil(4)],
        #[out] out_vals: &mut [f32; n.div_ceil(b) * k],
        #[out] out_ids: &mut [u32; n.div_ceil(b) * k],
        n: u32,
        b: u32,
        k: u32,
        local: u32,
    ) {
        let blk = global_index();
        if blk < n.div_ceil(b) {
            let start = blk * b;
            let end = (start + b).min(n);
            let last4 = (n - 1) >> 2;
            let pbits = 32 - (b - 1).leading_zeros();
            let pmask = (1u32 << pbits) - 1;
            // The best nine packed keys, best first; 0 is padding (no element packs to 0).
            let (mut l0, mut l1, mut l2, mut l3) = (0u32, 0u32, 0u32, 0u32);
            let (mut l4, mut l5, mut l6, mut l7, mut l8) = (0u32, 0u32, 0u32, 0u32, 0u32);
            // Four `Vec4` loads in flight per step.
            let mut w = start >> 2;
            while (w << 2) < end {
                let v0 = vals[w];
                let v1 = vals[(w + 1).min(last4)];
                let v2 = vals[(w + 2).min(last4)];
                let v3 = vals[(w + 3).min(last4)];
                for c in 0..16u32 {
                    let i = (w << 2) + c;
                    if i >= start && i < end {
                        let x = component(quad(v0, v1, v2, v3, c >> 2), c & 3);
                        let mut y = (order_key(x) & !pmask) | (pmask - (i - start));
                        let t = l0.max(y);
                        y = l0.min(y);
                        l0 = t;
                        let t = l1.max(y);
                        y = l1.min(y);
                        l1 = t;
                        let t = l2.max(y);
                        y = l2.min(y);
                        l2 = t;
                        let t = l3.max(y);
                        y = l3.min(y);
                        l3 = t;
                        let t = l4.max(y);
                        y = l4.min(y);
                        l4 = t;
                        let t = l5.max(y);
                        y = l5.min(y);
                        l5 = t;
                        let t = l6.max(y);
                        y = l6.min(y);
                        l6 = t;
                        let t = l7.max(y);
                        y = l7.min(y);
                        l7 = t;
                        l8 = l8.max(y);
                    }
                }
                w += 4;
            }
            // Whether packing could have changed the first `k`: walk entries r and r + 1.
            let mut exact = true;
            let (mut c0, mut c1, mut c2, mut c3) = (l0, l1, l2, l3);
            let (mut c4, mut c5, mut c6, mut c7, mut c8) = (l4, l5, l6, l7, l8);
            let mut r = 0u32;
            while r < k {
                if c1 != 0 && (c0 & !pmask) == (c1 & !pmask) {
                    if r + 1 == k {
                        exact = false;
                    } else {
                        let s0 = start + pmask - (c0 & pmask);
                        let s1 = start + pmask - (c1 & pmask);
                        let x0 = order_key(component(vals[s0 >> 2], s0 & 3));
                        let x1 = order_key(component(vals[s1 >> 2], s1 & 3));
                        if x0 != x1 {
                            exact = false;
                        }
                    }
                }
                c0 = c1;
                c1 = c2;
                c2 = c3;
                c3 = c4;
                c4 = c5;
                c5 = c6;
                c6 = c7;
                c7 = c8;
                c8 = 0;
                r += 1;
            }
            // Positions of the first eight, u32::MAX for padding.
            let pad = 0xffffffffu32;
            let mut p0 = select(pad, pmask - (l0 & pmask), l0 != 0);
            let mut p1 = select(pad, pmask - (l1 & pmask), l1 != 0);
            let mut p2 = select(pad, pmask - (l2 & pmask), l2 != 0);
            let mut p3 = select(pad, pmask - (l3 & pmask), l3 != 0);
            let mut p4 = select(pad, pmask - (l4 & pmask), l4 != 0);
            let mut p5 = select(pad, pmask - (l5 & pmask), l5 != 0);
            let mut p6 = select(pad, pmask - (l6 & pmask), l6 != 0);
            let mut p7 = select(pad, pmask - (l7 & pmask), l7 != 0);
            if !exact {
                // The exact path: (key, position) pairs. Positions only grow, so a new
                // element never beats an equal key: ties keep the lower position.
                let (mut k0, mut k1, mut k2, mut k3) = (0u32, 0u32, 0u32, 0u32);
                let (mut k4, mut k5, mut k6, mut k7) = (0u32, 0u32, 0u32, 0u32);
                p0 = pad;
                p1 = pad;
                p2 = pad;
                p3 = pad;
                p4 = pad;
                p5 = pad;
                p6 = pad;
                p7 = pad;
                let mut i = start;
                while i < end {
                    let key = order_key(component(vals[i >> 2], i & 3));
                    let q = i - start;
                    let g0 = key > k0;
                    let g1 = key > k1;
                    let g2 = key > k2;
                    let g3 = key > k3;
                    let g4 = key > k4;
                    let g5 = key > k5;
                    let g6 = key > k6;
                    let g7 = key > k7;
                    k7 = select(k7, select(key, k6, g6), g7);
                    p7 = select(p7, select(q, p6, g6), g7);
                    k6 = select(k6, select(key, k5, g5), g6);
                    p6 = select(p6, select(q, p5, g5), g6);
                    k5 = select(k5, select(key, k4, g4), g5);
                    p5 = select(p5, select(q, p4, g4), g5);
                    k4 = select(k4, select(key, k3, g3), g4);
                    p4 = select(p4, select(q, p3, g3), g4);
                    k3 = select(k3, select(key, k2, g2), g3);
                    p3 = select(p3, select(q, p2, g2), g3);
                    k2 = select(k2, select(key, k1, g1), g2);
                    p2 = select(p2, select(q, p1, g1), g2);
                    k1 = select(k1, select(key, k0, g0), g1);
                    p1 = select(p1, select(q, p0, g0), g1);
                    k0 = select(k0, key, g0);
                    p0 = select(p0, q, g0);
                    i += 1;
                }
            }
            // Write the best `k`, shifting the list up after each.
            let mut r = 0u32;
            while r < k {
                let o = blk * k + r;
                if p0 == pad {
                    out_vals[o] = f32::from_bits(0xff800000u32);
                    out_ids[o] = pad;
                } else {
                    let src = start + p0;
                    // Values keep their bits: re-read rather than decode the key (NaNs share
                    // one key).
                    out_vals[o] = component(vals[src >> 2], src & 3);
                    out_ids[o] = select(src, p0, local != 0);
                }
                p0 = p1;
                p1 = p2;
                p2 = p3;
                p3 = p4;
                p4 = p5;
                p5 = p6;
                p6 = p7;
                p7 = pad;
                r += 1;
            }
        }
    }

    /// Global top-k, radix select: the histogram of a sample, every `sample`-th `Vec4` of
    /// `vals`, added to `hist[slot·2048 ..]`; it sets the floor of the full pass
    /// ([`topk_radix_mark`]) in two levels, each followed by [`topk_radix_select`]:
    /// - `level = 0`: digit 0 (bits 21..32 of the order key) of every sampled element;
    /// - `level ≠ 0`: digit 1 (bits 10..21) of the sampled elements whose digit 0 is that of
    ///   `state[6]` (the bin that the select of level 0 chose).
    ///
    /// `grid` invocations stride over the sample, four `Vec4` loads in flight each; each
    /// workgroup counts in workgroup memory and adds its non-zero bins to `hist`.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = grid, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_hist_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, level = 0, grid = 1, sample = 1, slot = 6),
        case(n = 5000, level = 0, grid = 512, sample = 1, slot = 6),
        case(n = 70000, level = 0, grid = 300, sample = 16, slot = 6),
        case(n = 70000, level = 1, grid = 300, sample = 16, slot = 7),
        case(n = 4099, level = 1, grid = 256, sample = 1, slot = 7))]
    pub fn topk_radix_hist(
        vals: &[Vec4; n.div_ceil(4)],
        state: &[u32; 8],
        hist: &mut [Atomic<u32>; 16384],
        n: u32,
        level: u32,
        grid: u32,
        sample: u32,
        slot: u32,
    ) {
        #[shared]
        let mut bins = [0u32; 2048];
        let lid = local_index();
        let mut i = lid;
        while i < 2048 {
            bins[i].store(0);
            i += WG;
        }
        workgroup_barrier();
        let shift = select(10u32, 21u32, level == 0);
        let mask = 0x7ffu32;
        let mut prefix = UVec4::ZERO;
        if level != 0 {
            prefix = UVec4::new(state[6] & 0xffe00000, 0xffe00000, 0, 0);
        }
        if global_index() < grid {
            let step = sample.max(1);
            let units = n.div_ceil(4).div_ceil(step);
            // Four `Vec4` loads in flight per step; units past the end give elements past
            // `n`, which do not count.
            let mut u = global_index();
            while u < units {
                let last = units - 1;
                let va = vals[u * step];
                let vb = vals[(u + grid).min(last) * step];
                let vc = vals[(u + 2 * grid).min(last) * step];
                let vd = vals[(u + 3 * grid).min(last) * step];
                let mut j = 0u32;
                while j < 4 {
                    let v = quad(va, vb, vc, vd, j);
                    let e0 = ((u + j * grid) * step) << 2;
                    let d = digits4(v, e0, n, 0, prefix, 0, shift, mask);
                    // Most elements do not count: one test for all four.
                    if (d.x & d.y & d.z & d.w) != 0xffffffff {
                        for c in 0..4u32 {
                            let dc = ucomponent(d, c);
                            if dc != 0xffffffff {
                                bins[dc].fetch_add(1);
                            }
                        }
                    }
                    j += 1;
                }
                u += 4 * grid;
            }
        }
        workgroup_barrier();
        let mut i = lid;
        while i < 2048 {
            let c = bins[i].load();
            if c > 0 {
                hist[slot * 2048 + i].fetch_add(c);
            }
            i += WG;
        }
    }

    /// Global top-k, radix select, level 0 over the whole input (one read): the elements
    /// whose order key is at least the floor `state[6]` are the candidates. Their digit 0
    /// (bits 21..32 of the key) is counted into `hist[0 .. 2048]`, and each is marked in a
    /// bitmap, one bit per element: bit `e & 31` of word `e >> 5`, four words to a `UVec4`
    /// of `marks`. Workgroup `w` (of `ceil(n / 65536)`) reads the contiguous chunk of 65536
    /// elements from `w·65536`, marks in workgroup memory, then writes all 2048 words of its
    /// chunk, zeros included: the bitmap needs no clearing, and does not depend on the
    /// order in which invocations run. Later levels ([`topk_radix_refine`]) and the collect
    /// read only the marked elements.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(65536) * 256,
        ext = false, tune(workgroup = [256, 128]),
        reference = topk_radix_mark_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1),
        case(n = 4099),
        case(n = 5000),
        case(n = 70000),
        case(n = 140001))]
    pub fn topk_radix_mark(
        vals: &[Vec4; n.div_ceil(4)],
        state: &[u32; 8],
        hist: &mut [Atomic<u32>; 16384],
        marks: &mut [UVec4; n.div_ceil(65536) * 512],
        n: u32,
    ) {
        #[shared]
        let mut bins = [0u32; 2048];
        #[shared]
        let mut bits = [0u32; 2048];
        let lid = local_index();
        let wg = workgroup_index();
        // With 128 invocations a workgroup, the launch has twice as many workgroups as
        // chunks; the rest do nothing.
        if wg < n.div_ceil(65536) {
            let mut i = lid;
            while i < 2048 {
                bins[i].store(0);
                bits[i].store(0);
                i += WG;
            }
            workgroup_barrier();
            let floor = state[6];
            let first4 = wg * 16384;
            let end4 = (first4 + 16384).min(n.div_ceil(4));
            // Four `Vec4` loads in flight per step; candidates are rare, so one test covers
            // all sixteen elements.
            let mut w = first4 + lid;
            while w < end4 {
                let va = vals[w];
                let vb = vals[(w + WG).min(end4 - 1)];
                let vc = vals[(w + 2 * WG).min(end4 - 1)];
                let vd = vals[(w + 3 * WG).min(end4 - 1)];
                let top = max_key(va)
                    .max(max_key(vb))
                    .max(max_key(vc).max(max_key(vd)));
                if top >= floor {
                    let mut j = 0u32;
                    while j < 4 {
                        let wj = w + j * WG;
                        if wj < end4 {
                            let v = quad(va, vb, vc, vd, j);
                            for c in 0..4u32 {
                                let e = (wj << 2) + c;
                                let key = order_key(component(v, c));
                                if e < n && key >= floor {
                                    bins[key >> 21].fetch_add(1);
                                    let bit = e - (first4 << 2);
                                    bits[bit >> 5].fetch_or(1u32 << (bit & 31));
                                }
                            }
                        }
                        j += 1;
                    }
                }
                w += 4 * WG;
            }
            workgroup_barrier();
            let mut i = lid;
            while i < 2048 {
                let c = bins[i].load();
                if c > 0 {
                    hist[i].fetch_add(c);
                }
                i += WG;
            }
            let mut q = lid;
            while q < 512 {
                marks[wg * 512 + q] = UVec4::new(
                    bits[4 * q].load(),
                    bits[4 * q + 1].load(),
                    bits[4 * q + 2].load(),
                    bits[4 * q + 3].load(),
                );
                q += WG;
            }
        }
    }

    /// Global top-k, radix select, pass 1 of levels 1..6: the histogram of digit `level` of
    /// the marked elements (see [`topk_radix_mark`]) that match the prefix chosen so far,
    /// added to `hist[level·2048 ..]`, once `state[0]` says the threshold is not final yet;
    /// otherwise nothing. Levels 1 and 2 are the digits of the order key (bits 10..21,
    /// 0..10), levels 3..6 those of the complemented index (bits 21..32, 10..21, 0..10), so
    /// that equal keys are ordered by index. `grid` invocations stride over the bitmap, a
    /// `UVec4` (128 elements) at a time, and gather the marked values.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = grid, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_refine_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, level = 1, grid = 1),
        case(n = 5000, level = 1, grid = 64),
        case(n = 70000, level = 2, grid = 300),
        case(n = 4099, level = 3, grid = 256),
        case(n = 3000, level = 5, grid = 7))]
    pub fn topk_radix_refine(
        vals: &[Vec4; n.div_ceil(4)],
        marks: &[UVec4; n.div_ceil(65536) * 512],
        state: &[u32; 8],
        hist: &mut [Atomic<u32>; 16384],
        n: u32,
        level: u32,
        grid: u32,
    ) {
        #[shared]
        let mut bins = [0u32; 2048];
        let lid = local_index();
        let mut i = lid;
        while i < 2048 {
            bins[i].store(0);
            i += WG;
        }
        workgroup_barrier();
        let digit_at = level % 3;
        let shift = select(select(0u32, 10u32, digit_at == 1), 21u32, digit_at == 0);
        let mask = select(0x3ffu32, 0x7ffu32, digit_at < 2);
        if global_index() < grid && state[0] == 0 {
            let prefix = UVec4::new(state[2], state[3], state[4], state[5]);
            let words4 = n.div_ceil(128);
            let mut q = global_index();
            while q < words4 {
                let m4 = marks[q];
                if (m4.x | m4.y | m4.z | m4.w) != 0 {
                    for c in 0..4u32 {
                        let mut m = ucomponent(m4, c);
                        while m != 0 {
                            let e = (q << 7) + (c << 5) + m.trailing_zeros();
                            m = m & (m - 1);
                            if e < n {
                                let x = component(vals[e >> 2], e & 3);
                                let d = digit(x, e, n, 0, prefix, level, shift, mask);
                                if d != 0xffffffff {
                                    bins[d].fetch_add(1);
                                }
                            }
                        }
                    }
                }
                q += grid;
            }
        }
        workgroup_barrier();
        let mut i = lid;
        while i < 2048 {
            let c = bins[i].load();
            if c > 0 {
                hist[(level % 8) * 2048 + i].fetch_add(c);
            }
            i += WG;
        }
    }

    /// Global top-k, radix select, pass 2 of each level (one workgroup): in the histogram
    /// `hist[slot·2048 ..]` of digit `level`, finds the bin that holds the element of rank
    /// `r` from the top.
    /// - With `floor ≠ 0`, over the sample's histograms ([`topk_radix_hist`]): at level 0,
    ///   with `r = k`, sets `state[6]` to the bin's lowest key and `state[7]` to the rank
    ///   left within the bin (both 0 when the sample holds fewer than `k`); at level 1, with
    ///   `r = state[7]`, adds the bin of digit 1 to `state[6]`, the floor of the full pass
    ///   (a 22-bit prefix of the key). The sample is part of the data, so at least `k`
    ///   elements reach the floor.
    /// - At level 0, with `r = k`, and at later levels, with `r = state[1]` and only while
    ///   `state[0]` is 0: narrows the prefix to the bin (see [`TopkGlobalScratch`]). The
    ///   threshold is final once the elements above the prefix and those matching it
    ///   number at most `cap` (the final sort's size), or at the last level.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = 1, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_select_reference, tolerance(abs = 0.0, rel = 0.0),
        case(level = 0, slot = 6, k = 100, floor = 1, cap = 256),
        case(level = 1, slot = 7, k = 100, floor = 1, cap = 256),
        case(level = 0, slot = 0, k = 1, floor = 0, cap = 256),
        case(level = 0, slot = 0, k = 100, floor = 0, cap = 2048),
        case(level = 2, slot = 2, k = 1000, floor = 0, cap = 2048),
        case(level = 5, slot = 5, k = 7, floor = 0, cap = 256))]
    pub fn topk_radix_select(
        hist: &[u32; 16384],
        state: &mut [u32; 8],
        level: u32,
        slot: u32,
        k: u32,
        floor: u32,
        cap: u32,
    ) {
        #[shared]
        let mut counts = [0u32; 2048];
        #[shared]
        let mut sums = [0u32; 256];
        let lid = local_index();
        let digit = level % 3;
        let shift = select(select(0u32, 10u32, digit == 1), 21u32, digit == 0);
        let bins = select(1024u32, 2048u32, digit < 2);
        // A level after the threshold is final reads nothing; the rest of the kernel then
        // finds nothing to do.
        let mut skip = false;
        if floor == 0 && level > 0 {
            skip = state[0] != 0;
        }
        // Coalesced loads, all in flight at once.
        let mut i = lid;
        while i < 2048 && !skip {
            counts[i] = hist[slot * 2048 + i];
            i += WG;
        }
        workgroup_barrier();
        // Invocation `t` sums a run of bins from the top: run 0 holds the largest digits.
        let run = bins / WG;
        let top = bins - lid * run;
        let mut part = 0u32;
        let mut d = top - run;
        while d < top {
            part += counts[d];
            d += 1;
        }
        sums[lid] = part;
        workgroup_barrier();
        // Inclusive scan over the runs.
        let mut off = 1u32;
        while off < WG {
            let mut add = 0u32;
            if lid >= off {
                add = sums[lid - off];
            }
            workgroup_barrier();
            sums[lid] += add;
            workgroup_barrier();
            off *= 2;
        }
        let above = sums[lid] - part;
        let mut r = k;
        let mut pk = 0u32;
        let mut pmask = 0u32;
        let mut pi = 0u32;
        let mut imask = 0u32;
        if floor == 0 && level > 0 {
            r = state[1];
            pk = state[2];
            pmask = state[3];
            pi = state[4];
            imask = state[5];
        }
        if floor != 0 && level > 0 {
            r = state[7];
        }
        if floor != 0 && level == 0 && lid == 0 && sums[WG - 1] < r {
            state[6] = 0;
            state[7] = 0;
        }
        if !skip && above < r && r <= above + part {
            // Walk down this run to the bin that reaches rank `r`.
            let mut seen = above;
            let mut d = top - 1;
            let mut count = counts[d];
            while seen + count < r {
                seen += count;
                d -= 1;
                count = counts[d];
            }
            if floor != 0 {
                if level == 0 {
                    state[6] = d << shift;
                    state[7] = r - seen;
                } else {
                    state[6] = (state[6] & 0xffe00000) | (d << shift);
                }
            } else {
                let field = (bins - 1) << shift;
                if level < 3 {
                    pk = pk | (d << shift);
                    pmask = pmask | field;
                } else {
                    pi = pi | (d << shift);
                    imask = imask | field;
                }
                let left = r - seen;
                state[0] = select(0u32, 1u32, (k - left) + count <= cap || level >= 5);
                state[1] = left;
                state[2] = pk;
                state[3] = pmask;
                state[4] = pi;
                state[5] = imask;
            }
        }
    }

    /// Global top-k, radix select, pass 3: the marked elements (see [`topk_radix_mark`])
    /// above the final prefix or matching it (at most `cap` in all). Workgroup `w` (of
    /// `ceil(n / 65536)`) reads the 2048 bitmap words of its chunk of 65536 elements, keeps
    /// the bits of those elements, then writes their indices, ascending, to
    /// `regions[w·2048 ..]` (the first 2048) and their count to `counts[w]`: the result
    /// does not depend on the order in which invocations run.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(65536) * 256,
        ext = false, tune(workgroup = [256, 128]),
        reference = topk_radix_collect_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1),
        case(n = 5000),
        case(n = 4099),
        case(n = 140001))]
    pub fn topk_radix_collect(
        vals: &[Vec4; n.div_ceil(4)],
        marks: &[UVec4; n.div_ceil(65536) * 512],
        state: &[u32; 8],
        #[out] counts: &mut [u32; n.div_ceil(65536)],
        regions: &mut [u32; n.div_ceil(65536) * 2048],
        n: u32,
    ) {
        #[shared]
        let mut picked = [0u32; 2048];
        #[shared]
        let mut sums = [0u32; 256];
        let lid = local_index();
        let wg = workgroup_index();
        if wg < n.div_ceil(65536) {
            let prefix = UVec4::new(state[2], state[3], state[4], state[5]);
            // Each invocation owns a run of bitmap words (`run4` `UVec4`s); a scan over the
            // runs gives every picked element its place, in index order.
            let run4 = 512 / WG;
            let mut own = 0u32;
            let mut j = 0u32;
            while j < run4 {
                let q = wg * 512 + lid * run4 + j;
                let m4 = marks[q];
                for c in 0..4u32 {
                    let mut m = ucomponent(m4, c);
                    let mut keep = 0u32;
                    while m != 0 {
                        let b = m.trailing_zeros();
                        let e = (q << 7) + (c << 5) + b;
                        m = m & (m - 1);
                        if e < n {
                            let key = order_key(component(vals[e >> 2], e & 3));
                            if at_or_above(key, e, prefix) {
                                keep = keep | (1u32 << b);
                            }
                        }
                    }
                    picked[(lid * run4 + j) * 4 + c] = keep;
                    own += keep.count_ones();
                }
                j += 1;
            }
            sums[lid] = own;
            workgroup_barrier();
            let mut off = 1u32;
            while off < WG {
                let mut add = 0u32;
                if lid >= off {
                    add = sums[lid - off];
                }
                workgroup_barrier();
                sums[lid] += add;
                workgroup_barrier();
                off *= 2;
            }
            let mut at = sums[lid] - own;
            let run = run4 * 4;
            let mut j = 0u32;
            while j < run {
                let word_index = lid * run + j;
                let mut word = picked[word_index];
                while word != 0 {
                    let bit = word.trailing_zeros();
                    if at < 2048 {
                        regions[wg * 2048 + at] = (wg << 16) + word_index * 32 + bit;
                    }
                    at += 1;
                    word = word & (word - 1);
                }
                j += 1;
            }
            if lid == WG - 1 {
                counts[wg] = sums[lid];
            }
        }
    }

    /// Global top-k, radix select, pass 4 (one workgroup): gathers the candidates of every
    /// workgroup of pass 3 (the first `counts[w]` indices of each region, at most 2048 per
    /// region and `cap` in all; indices past `n` count as padding), sorts them by key,
    /// descending, then index, ascending, with a bitonic network of `cap` slots (a power of
    /// two, 2..=2048, at least `k`) in workgroup memory, and writes the first `k`: values
    /// re-read from `vals`, so that they keep their bits, and indices.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = 1, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_sort_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 4000, k = 1, groups = 1, cap = 2048),
        case(n = 4000, k = 1, groups = 2, cap = 2),
        case(n = 900, k = 100, groups = 3, cap = 256),
        case(n = 4000, k = 1024, groups = 5, cap = 2048))]
    pub fn topk_radix_sort(
        vals: &[Vec4; n.div_ceil(4)],
        counts: &[u32; groups],
        regions: &[u32; groups * 2048],
        #[out] out_vals: &mut [f32; k],
        #[out] out_ids: &mut [u32; k],
        n: u32,
        k: u32,
        groups: u32,
        cap: u32,
    ) {
        #[shared]
        let mut skey = [0u32; 2048];
        #[shared]
        let mut sid = [0u32; 2048];
        let lid = local_index();
        let mut i = lid;
        while i < 2048 {
            skey[i] = 0;
            sid[i] = 0xffffffff;
            i += WG;
        }
        // Invocation `t` owns a run of consecutive regions; a scan over the invocations'
        // totals places the regions one after another, in order. `skey` holds the totals
        // first.
        let per = groups.div_ceil(WG);
        let g_first = (lid * per).min(groups);
        let g_end = (g_first + per).min(groups);
        let mut own = 0u32;
        let mut g = g_first;
        while g < g_end {
            own += counts[g].min(2048);
            g += 1;
        }
        workgroup_barrier();
        skey[lid] = own;
        workgroup_barrier();
        let mut off = 1u32;
        while off < WG {
            let mut add = 0u32;
            if lid >= off {
                add = skey[lid - off];
            }
            workgroup_barrier();
            skey[lid] += add;
            workgroup_barrier();
            off *= 2;
        }
        let mut at = skey[lid] - own;
        workgroup_barrier();
        skey[lid] = 0;
        workgroup_barrier();
        let mut g = g_first;
        while g < g_end {
            let c = counts[g].min(2048);
            let mut j = 0u32;
            while j < c && at < cap {
                let id = regions[g * 2048 + j];
                sid[at] = id;
                if id < n {
                    skey[at] = order_key(component(vals[id >> 2], id & 3));
                }
                at += 1;
                j += 1;
            }
            g += 1;
        }
        workgroup_barrier();
        let mut size = 2u32;
        while size <= cap {
            let mut stride = size / 2;
            while stride > 0 {
                let mut t = lid;
                while t < cap / 2 {
                    // Pair `t`: its lower slot is `t` with bit `log2 stride` opened up.
                    let lo = t + (t & !(stride - 1));
                    let hi = lo + stride;
                    let desc = (lo & size) == 0;
                    let ka = skey[lo];
                    let kb = skey[hi];
                    let ia = sid[lo];
                    let ib = sid[hi];
                    let hi_first = kb > ka || (kb == ka && ib < ia);
                    if hi_first == desc {
                        skey[lo] = kb;
                        skey[hi] = ka;
                        sid[lo] = ib;
                        sid[hi] = ia;
                    }
                    t += WG;
                }
                workgroup_barrier();
                stride /= 2;
            }
            size *= 2;
        }
        let mut t = lid;
        while t < k {
            let id = sid[t];
            if skey[t] == 0 {
                out_vals[t] = f32::from_bits(0xff800000u32);
                out_ids[t] = 0xffffffff;
            } else {
                out_vals[t] = component(vals[id >> 2], id & 3);
                out_ids[t] = id;
            }
            t += WG;
        }
    }
}
/// The values of `[f32; 4]` elements, the first `n`.
fn flat(vals: &[[f32; 4]], n: u32) -> Vec<f32> {
    vals.iter().flatten().copied().take(n as usize).collect()
}

/// The independent reference of [`topk_rows`]: [`topk_select_reference`] on the values.
pub fn topk_rows_reference(
    vals: &[[f32; 4]],
    n: u32,
    b: u32,
    k: u32,
    local: u32,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    topk_select_reference(&flat(vals, n), &[0], n, b, k, 0, 0, local)
}

/// The radix-select key of a value, as torch orders values: larger keys first, every NaN
/// `u32::MAX`, `-0.0` just below `+0.0`, nothing at 0.
fn radix_key(v: f32) -> u32 {
    if v.is_nan() {
        u32::MAX
    } else if v.is_sign_negative() {
        !v.to_bits()
    } else {
        v.to_bits() | 0x8000_0000
    }
}

/// The bit range `(shift, width)` of the digit of radix-select `level` (0..6): levels
/// 0..3 are digits of the key, levels 3..6 digits of the complemented index.
fn radix_digit(level: u32) -> (u32, u32) {
    match level % 3 {
        0 => (21, 11),
        1 => (10, 11),
        _ => (0, 10),
    }
}

/// Whether element `e` with key `key` matches the prefix `(pk, pmask, pi, imask)`.
fn radix_matches(key: u32, e: u32, state: [u32; 4]) -> bool {
    let [pk, pmask, pi, imask] = state;
    (key & pmask) == pk && (!e & imask) == pi
}

/// The independent reference of [`topk_radix_hist`].
#[allow(clippy::too_many_arguments)]
pub fn topk_radix_hist_reference(
    vals: &[[f32; 4]],
    state: &[u32],
    hist: &mut [u32],
    n: u32,
    level: u32,
    _grid: u32,
    sample: u32,
    slot: u32,
) -> Result<(), ForgeError> {
    let top = 0xffe0_0000u32;
    let x = flat(vals, n);
    let step = sample.max(1) as usize;
    for w in (0..x.len().div_ceil(4)).step_by(step) {
        for &v in x.iter().skip(4 * w).take(4) {
            let key = radix_key(v);
            let d = if level == 0 {
                key >> 21
            } else if key & top == state[6] & top {
                (key >> 10) & 0x7ff
            } else {
                continue;
            };
            let at = &mut hist[(slot * 2048 + d) as usize];
            *at = at.wrapping_add(1);
        }
    }
    Ok(())
}

/// Whether element `e` is marked in the bitmap of [`topk_radix_mark`].
fn marked(marks: &[[u32; 4]], e: usize) -> bool {
    (marks[e >> 7][(e >> 5) & 3] >> (e & 31)) & 1 != 0
}

/// The independent reference of [`topk_radix_mark`]: the histogram and the bitmap in place.
pub fn topk_radix_mark_reference(
    vals: &[[f32; 4]],
    state: &[u32],
    hist: &mut [u32],
    marks: &mut [[u32; 4]],
    n: u32,
) -> Result<(), ForgeError> {
    marks.iter_mut().for_each(|m| *m = [0; 4]);
    for (e, &v) in flat(vals, n).iter().enumerate() {
        let key = radix_key(v);
        if key >= state[6] {
            let at = &mut hist[(key >> 21) as usize];
            *at = at.wrapping_add(1);
            marks[e >> 7][(e >> 5) & 3] |= 1 << (e & 31);
        }
    }
    Ok(())
}

/// The independent reference of [`topk_radix_refine`].
pub fn topk_radix_refine_reference(
    vals: &[[f32; 4]],
    marks: &[[u32; 4]],
    state: &[u32],
    hist: &mut [u32],
    n: u32,
    level: u32,
    _grid: u32,
) -> Result<(), ForgeError> {
    if state[0] != 0 {
        return Ok(());
    }
    let prefix = [state[2], state[3], state[4], state[5]];
    let (shift, width) = radix_digit(level);
    for (e, &v) in flat(vals, n).iter().enumerate() {
        let (key, e32) = (radix_key(v), e as u32);
        if marked(marks, e) && radix_matches(key, e32, prefix) {
            let field = if level < 3 { key } else { !e32 };
            let d = (field >> shift) & ((1 << width) - 1);
            let at = &mut hist[((level % 8) * 2048 + d) as usize];
            *at = at.wrapping_add(1);
        }
    }
    Ok(())
}

/// The independent reference of [`topk_radix_select`].
pub fn topk_radix_select_reference(
    hist: &[u32],
    state: &mut [u32],
    level: u32,
    slot: u32,
    k: u32,
    floor: u32,
    cap: u32,
) -> Result<(), ForgeError> {
    let (r, mut prefix) = if floor != 0 && level != 0 {
        (state[7], [0; 4])
    } else if floor != 0 || level == 0 {
        (k, [0; 4])
    } else if state[0] != 0 {
        return Ok(());
    } else {
        (state[1], [state[2], state[3], state[4], state[5]])
    };
    let (shift, width) = radix_digit(level);
    let counts = &hist[(slot * 2048) as usize..][..1 << width];
    let total = counts.iter().fold(0u32, |a, c| a.wrapping_add(*c));
    if floor != 0 && level == 0 && total < r {
        state[6] = 0;
        state[7] = 0;
    }
    let mut seen = 0u32;
    for d in (0..counts.len()).rev() {
        let count = counts[d];
        if r >= 1 && seen < r && r <= seen.wrapping_add(count) {
            if floor != 0 && level == 0 {
                state[6] = (d as u32) << shift;
                state[7] = r - seen;
                return Ok(());
            }
            if floor != 0 {
                state[6] = (state[6] & 0xffe0_0000) | ((d as u32) << shift);
                return Ok(());
            }
            let (value, mask) = if level < 3 { (0, 1) } else { (2, 3) };
            prefix[value] |= (d as u32) << shift;
            prefix[mask] |= ((1 << width) - 1) << shift;
            let left = r - seen;
            let done = k.wrapping_sub(left).wrapping_add(count) <= cap || level >= 5;
            state[0] = u32::from(done);
            state[1] = left;
            state[2..6].copy_from_slice(&prefix);
            return Ok(());
        }
        seen = seen.wrapping_add(count);
    }
    Ok(())
}

/// The independent reference of [`topk_radix_collect`]: the counts; the regions in place.
pub fn topk_radix_collect_reference(
    vals: &[[f32; 4]],
    marks: &[[u32; 4]],
    state: &[u32],
    regions: &mut [u32],
    n: u32,
) -> Result<Vec<u32>, ForgeError> {
    let [pk, pmask, pi, imask] = [state[2], state[3], state[4], state[5]];
    let x = flat(vals, n);
    let groups = x.len().div_ceil(65536);
    let mut counts = vec![0u32; groups];
    for (w, count) in counts.iter_mut().enumerate() {
        let picked: Vec<u32> = (w * 65536..((w + 1) * 65536).min(x.len()))
            .filter(|&e| {
                let kp = radix_key(x[e]) & pmask;
                marked(marks, e) && (kp > pk || (kp == pk && (!(e as u32) & imask) >= pi))
            })
            .map(|e| e as u32)
            .collect();
        for (j, &e) in picked.iter().take(2048).enumerate() {
            regions[w * 2048 + j] = e;
        }
        *count = picked.len() as u32;
    }
    Ok(counts)
}

/// The independent reference of [`topk_radix_sort`]: the regions' candidates in order
/// (`cap` at most), sorted by a comparator, the first `k` kept.
pub fn topk_radix_sort_reference(
    vals: &[[f32; 4]],
    counts: &[u32],
    regions: &[u32],
    n: u32,
    k: u32,
    groups: u32,
    cap: u32,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let x = flat(vals, n);
    let mut cand: Vec<(u32, u32)> = (0..groups as usize)
        .flat_map(|g| {
            let c = counts[g].min(2048) as usize;
            regions[g * 2048..g * 2048 + c].iter().copied()
        })
        .take(cap as usize)
        .map(|id| {
            let key = if id < n { radix_key(x[id as usize]) } else { 0 };
            (key, id)
        })
        .collect();
    cand.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let (mut out_v, mut out_i) = (Vec::new(), Vec::new());
    for t in 0..k as usize {
        match cand.get(t) {
            Some(&(key, id)) if key != 0 => {
                out_v.push(x[id as usize]);
                out_i.push(id);
            }
            _ => {
                out_v.push(f32::NEG_INFINITY);
                out_i.push(TOPK_PAD_INDEX);
            }
        }
    }
    Ok((out_v, out_i))
}

/// The device buffers of the global top-k's radix select, reusable from call to call.
///
/// The select works on a 64-bit composite key, the order key of a value (see
/// [`topk_rows`]) then its complemented index, which is unique and orders equal values by
/// index. `state` (eight `u32`) holds what the passes decided:
/// - `[0]`: 1 once the threshold is final (later levels do nothing);
/// - `[1]`: how many of the elements that match the prefix are still to be taken;
/// - `[2]`, `[3]`: the prefix of the key, and the mask of the key bits it fixes;
/// - `[4]`, `[5]`: the same for the complemented index (levels 3..6);
/// - `[6]`: the floor of the full pass, from the sample (22 bits of a key);
/// - `[7]`: the sample's rank left within the floor's 11-bit bin.
///
/// `hist` holds eight histograms of 2048 bins: levels 0..6, then the sample's two levels.
/// `marks` is the bitmap of the candidates (one bit per element, [`topk_radix_mark`]),
/// `counts` and `regions` the collect's output, one region of 2048 indices per chunk of
/// 65536 elements. The elements above the prefix number fewer than `k`; with those
/// matching it they are what the collect pass gathers.
pub struct TopkGlobalScratch {
    hist: GpuTensor<u32>,
    state: GpuTensor<u32>,
    marks: GpuTensor<[u32; 4]>,
    counts: GpuTensor<u32>,
    regions: GpuTensor<u32>,
    groups: u32,
    grid: u32,
    sample: u32,
    /// The most values it serves.
    n: usize,
}

impl TopkGlobalScratch {
    /// Buffers for inputs of `n` values.
    pub fn new(rt: &mut ForgeRuntime, n: usize) -> Result<Self, ForgeError> {
        let n4 = dim(topk_radix_hist::NAME, "n / 4", n.div_ceil(4))?;
        let groups = dim(topk_radix_mark::NAME, "n / 65536", n.div_ceil(65536))?;
        Ok(TopkGlobalScratch {
            hist: rt.zeros(8 * 2048)?,
            state: rt.zeros(8)?,
            marks: rt.zeros(groups as usize * 512)?,
            counts: rt.zeros(groups as usize)?,
            regions: rt.zeros(groups as usize * 2048)?,
            groups,
            grid: n4.div_ceil(32).clamp(1, 1 << 18),
            // About 2^16 `Vec4`s, one in up to 256.
            sample: (n4 >> 16).clamp(1, 256),
            n,
        })
    }

    /// The invocations of the level passes over the bitmap (`min(n/128, 2^18)` by
    /// default, one `UVec4` of it each), which stride over it; at least 1.
    pub fn set_grid(&mut self, grid: u32) {
        self.grid = grid.max(1);
    }
}

/// The size of the final sort of the global top-k: the select refines its threshold until
/// the candidates fit it. Small sorts are cheap, extra levels cost a pass over the bitmap.
fn sort_cap(k: u32) -> u32 {
    (2 * k.next_power_of_two()).clamp(256, 2048)
}

/// Records the global top-`k` of the first `n` values of `vals` (a `Vec4` per four values)
/// into `out_vals` and `out_ids` (`k` each), as [`TopkExt::topk_global_with_indices`]
/// computes it (see the [module docs](crate::topk)): the sample's two levels, the full
/// pass, five levels over the marked candidates (levels after the threshold is final do
/// nothing), the collect and the final sort. Nothing is submitted.
///
/// Errors, before anything is recorded: `n` or `k` zero ([`ForgeError::EmptyWork`]), `k`
/// past [`TOPK_GLOBAL_MAX_K`] or `n`, `n` past [`TOPK_GLOBAL_MAX_LEN`] or the values in
/// `vals`, a `scratch` made for fewer than `n` values, or outputs shorter than `k`
/// ([`ForgeError::InvalidArgument`]).
pub fn topk_global_record(
    rt: &mut ForgeRuntime,
    vals: &GpuTensor<[f32; 4]>,
    n: u32,
    k: u32,
    scratch: &TopkGlobalScratch,
    out_vals: &GpuTensor<f32>,
    out_ids: &GpuTensor<u32>,
) -> Result<(), ForgeError> {
    check_global(n as usize, k as usize)?;
    let fits = |what: &str, have: usize, need: usize| {
        if have >= need {
            Ok(())
        } else {
            Err(invalid(format!(
                "{what} holds {have}, fewer than the {need} that n = {n}, k = {k} need"
            )))
        }
    };
    fits(
        "`vals` (4 values a `Vec4`)",
        vals.len().saturating_mul(4),
        n as usize,
    )?;
    fits(
        "`scratch` (made for a number of values)",
        scratch.n,
        n as usize,
    )?;
    fits("`out_vals`", out_vals.len(), k as usize)?;
    fits("`out_ids`", out_ids.len(), k as usize)?;
    let s = scratch;
    let cap = sort_cap(k);
    rt.clear(&s.hist)?;
    rt.clear(&s.state)?;
    let (st, h, m) = (&s.state, &s.hist, &s.marks);
    // The floor, from a sample: 11 bits, then 22.
    let sample_grid = (n.div_ceil(4).div_ceil(s.sample))
        .div_ceil(4)
        .clamp(1, 1 << 16);
    topk_radix_hist::launch(rt, vals, st, h, n, 0, sample_grid, s.sample, 6)?;
    topk_radix_select::launch(rt, h, st, 0, 6, k, 1, cap)?;
    topk_radix_hist::launch(rt, vals, st, h, n, 1, sample_grid, s.sample, 7)?;
    topk_radix_select::launch(rt, h, st, 1, 7, k, 1, cap)?;
    // The one full read: level 0 and the candidates' bitmap.
    topk_radix_mark::launch(rt, vals, st, h, m, n)?;
    topk_radix_select::launch(rt, h, st, 0, 0, k, 0, cap)?;
    let words4 = n.div_ceil(128);
    for level in 1..6 {
        // Levels past the second only run on massive ties (a 22-bit prefix of the key
        // already leaves a handful of continuous values): a small grid makes their usual
        // early exit cheap.
        let grid = if level < 2 {
            s.grid.min(words4)
        } else {
            s.grid.min(words4).min(1 << 12)
        };
        topk_radix_refine::launch(rt, vals, m, st, h, n, level, grid)?;
        topk_radix_select::launch(rt, h, st, level, level, k, 0, cap)?;
    }
    topk_radix_collect::launch(rt, vals, m, st, &s.counts, &s.regions, n)?;
    topk_radix_sort::launch(
        rt, vals, &s.counts, &s.regions, out_vals, out_ids, n, k, s.groups, cap,
    )
}

/// Records the top `k ≤ 8` of each block of `b` of the first `n` values of `vals` into
/// `out_vals` and `out_ids` (`k` per block), indices within the block when `local`:
/// [`topk_rows`], one invocation per block. `schedule` overrides the tuned one.
#[allow(clippy::too_many_arguments)]
pub fn topk_rows_record(
    rt: &mut ForgeRuntime,
    vals: &GpuTensor<[f32; 4]>,
    n: u32,
    b: u32,
    k: u32,
    local: bool,
    out_vals: &GpuTensor<f32>,
    out_ids: &GpuTensor<u32>,
    schedule: Option<&Schedule>,
) -> Result<(), ForgeError> {
    let local = u32::from(local);
    match schedule {
        Some(s) => topk_rows::launch_with(rt, s, vals, out_vals, out_ids, n, b, k, local),
        None => topk_rows::launch(rt, vals, out_vals, out_ids, n, b, k, local),
    }
}

/// The input as `Vec4`s, zero-padded to a multiple of four values.
fn upload_vec4(rt: &mut ForgeRuntime, input: &[f32]) -> Result<GpuTensor<[f32; 4]>, ForgeError> {
    let mut padded: Vec<[f32; 4]> = bytemuck::cast_slice(&input[..input.len() / 4 * 4]).to_vec();
    if input.len() % 4 != 0 {
        let mut last = [0.0f32; 4];
        last[..input.len() % 4].copy_from_slice(&input[input.len() / 4 * 4..]);
        padded.push(last);
    }
    rt.upload(&padded)
}

fn invalid(message: String) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel: topk_select::NAME,
        message,
    }
}

/// Checks what every top-k method needs: a non-empty input that `u32` indexes and `k ≥ 1`.
fn check_input(input: &[f32], k: usize) -> Result<u32, ForgeError> {
    if input.is_empty() {
        return Err(ForgeError::EmptyWork {
            kernel: topk_select::NAME,
            what: "the input is empty".into(),
        });
    }
    if k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: topk_select::NAME,
            what: "`k` is 0".into(),
        });
    }
    // Indices and the kernel's thread count (up to twice the length) stay in u32.
    if input.len() > (u32::MAX / 2) as usize {
        return Err(invalid(format!(
            "the input has {} elements; at most 2^31 - 1 are supported",
            input.len()
        )));
    }
    Ok(input.len() as u32)
}

/// The global top-k's limits: `k` from 1 to [`TOPK_GLOBAL_MAX_K`] and at most `n`, `n` from 1
/// to [`TOPK_GLOBAL_MAX_LEN`].
fn check_global(n: usize, k: usize) -> Result<(), ForgeError> {
    if n == 0 || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: topk_select::NAME,
            what: format!("n = {n}, k = {k}"),
        });
    }
    if k > TOPK_GLOBAL_MAX_K {
        return Err(invalid(format!(
            "`k` = {k} is larger than the global top-k's limit of {TOPK_GLOBAL_MAX_K}"
        )));
    }
    if k > n {
        return Err(invalid(format!(
            "`k` = {k} is larger than the input's {n} elements"
        )));
    }
    if n > TOPK_GLOBAL_MAX_LEN {
        return Err(invalid(format!(
            "the input has {n} elements, past the global top-k's limit of 2^28"
        )));
    }
    Ok(())
}

/// The block top-k on the GPU: values and indices (within the block when `local`).
fn blocks(
    rt: &mut ForgeRuntime,
    input: &[f32],
    k: usize,
    block: usize,
    local: bool,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let n = check_input(input, k)?;
    if block == 0 || block > TOPK_MAX_BLOCK {
        return Err(invalid(format!(
            "`block` = {block} is out of range; it must be 1..={TOPK_MAX_BLOCK}"
        )));
    }
    if k > block {
        return Err(invalid(format!(
            "`k` = {k} is larger than `block` = {block}; each block gives at most `block` values"
        )));
    }
    let (b, k32) = (block as u32, k as u32);
    if k <= TOPK_ROWS_MAX_K {
        let vals = upload_vec4(rt, input)?;
        let outs = dim(
            topk_rows::NAME,
            "blocks * k",
            input.len().div_ceil(block) * k,
        )? as usize;
        let out_vals = rt.zeros::<f32>(outs)?;
        let out_ids = rt.zeros::<u32>(outs)?;
        topk_rows_record(rt, &vals, n, b, k32, local, &out_vals, &out_ids, None)?;
        return Ok((rt.download(&out_vals)?, rt.download(&out_ids)?));
    }
    topk_select::run(
        rt,
        input,
        &[0],
        n,
        b,
        k32,
        b.next_power_of_two(),
        0,
        local as u32,
    )
}

/// The global top-k on the GPU: values and indices into `input`.
fn global(
    rt: &mut ForgeRuntime,
    input: &[f32],
    k: usize,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let n = check_input(input, k)?;
    check_global(input.len(), k)?;
    let vals = upload_vec4(rt, input)?;
    let scratch = TopkGlobalScratch::new(rt, input.len())?;
    let out_vals = rt.zeros::<f32>(k)?;
    let out_ids = rt.zeros::<u32>(k)?;
    topk_global_record(rt, &vals, n, k as u32, &scratch, &out_vals, &out_ids)?;
    Ok((rt.download(&out_vals)?, rt.download(&out_ids)?))
}

/// `rt.topk(&input, k)`, the seed's signature, and what goes beyond it: any block size,
/// indices, and a global top-k.
pub trait TopkExt {
    /// The `k` largest values of each block of 64 consecutive values (the last block may be
    /// shorter), in descending order, concatenated: `k` values per block.
    ///
    /// This is [`TopkExt::topk_blocks`] with a block of 64; see the [module
    /// docs](crate::topk) for the order (NaN is largest, as in `torch.topk`) and for the
    /// `-inf` padding of a last block shorter than `k`.
    ///
    /// Errors: an empty input or `k = 0` ([`ForgeError::EmptyWork`]); `k > 64`
    /// ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// assert_eq!(rt.topk(&[3.0, 9.0, 1.0, 7.0, 5.0], 3)?, vec![9.0, 7.0, 5.0]);
    /// assert_eq!(rt.topk(&[5.0, 1.0, 9.0, 2.0], 2)?, vec![9.0, 5.0]);
    /// assert!(rt.topk(&[1.0], 0).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>, ForgeError>;

    /// The `k` largest values of each block of `block` consecutive values, in descending
    /// order, concatenated: block `i`'s values are at `i·k .. (i+1)·k`. A last block with
    /// fewer than `k` values is padded with `-inf` after its real values.
    ///
    /// `block` is 1..=1024 and `k` is 1..=`block`. Errors: an empty input or `k = 0`
    /// ([`ForgeError::EmptyWork`]); `block` out of range, `k > block`, or more than
    /// 2^31 - 1 values ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let x = [1.0, 4.0, 2.0, f32::NAN, 0.5, 3.0, 8.0];
    /// // Blocks [1, 4, 2], [NaN, 0.5, 3], [8]: NaN is the largest; the last block is padded.
    /// let top = rt.topk_blocks(&x, 2, 3)?;
    /// assert_eq!(top[..2], [4.0, 2.0]);
    /// assert!(top[2].is_nan() && top[3] == 3.0);
    /// assert_eq!(top[4..], [8.0, f32::NEG_INFINITY]);
    /// assert!(rt.topk_blocks(&x, 4, 3).is_err()); // k > block
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_blocks(
        &mut self,
        input: &[f32],
        k: usize,
        block: usize,
    ) -> Result<Vec<f32>, ForgeError>;

    /// [`TopkExt::topk_blocks`] with each value's index within its block, as
    /// `torch.topk(x.view(-1, block), k)` gives them: equal values come lowest index
    /// first. Padding has the index [`TOPK_PAD_INDEX`]; add `i·block` for a position in
    /// `input`.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let (v, i) = rt.topk_with_indices(&[2.0, 7.0, 7.0, 1.0, 5.0], 2, 4)?;
    /// assert_eq!(v, vec![7.0, 7.0, 5.0, f32::NEG_INFINITY]);
    /// assert_eq!(i, vec![1, 2, 0, TOPK_PAD_INDEX]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
        block: usize,
    ) -> Result<(Vec<f32>, Vec<u32>), ForgeError>;

    /// The `k` largest values of the whole input, in descending order, as
    /// `torch.topk(x, k)` gives them.
    ///
    /// `k` is 1..=1024 and at most the input's length; the input has at most 2^28 values.
    /// Several passes run on the device in one submission (see the [module
    /// docs](crate::topk)). Errors: an empty input or `k = 0` ([`ForgeError::EmptyWork`]);
    /// `k` too large or an input too long ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let x: Vec<f32> = (0..5000).map(|i| ((i * 37) % 5000) as f32).collect();
    /// assert_eq!(rt.topk_global(&x, 3)?, vec![4999.0, 4998.0, 4997.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_global(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>, ForgeError>;

    /// [`TopkExt::topk_global`] with each value's index in `input`; equal values come
    /// lowest index first.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let (v, i) = rt.topk_global_with_indices(&[1.0, 9.0, 3.0, 9.0], 3)?;
    /// assert_eq!((v, i), (vec![9.0, 9.0, 3.0], vec![1, 3, 2]));
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_global_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
    ) -> Result<(Vec<f32>, Vec<u32>), ForgeError>;
}

impl TopkExt for ForgeRuntime {
    fn topk(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>, ForgeError> {
        Ok(blocks(self, input, k, TOPK_SEED_BLOCK, true)?.0)
    }

    fn topk_blocks(
        &mut self,
        input: &[f32],
        k: usize,
        block: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        Ok(blocks(self, input, k, block, true)?.0)
    }

    fn topk_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
        block: usize,
    ) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
        blocks(self, input, k, block, true)
    }

    fn topk_global(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>, ForgeError> {
        Ok(global(self, input, k)?.0)
    }

    fn topk_global_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
    ) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
        global(self, input, k)
    }
}
