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
//!    and the bin of its `k`-th largest sets a floor: the sample is part of the data, so at
//!    least `k` elements reach it ([`topk_radix_hist`], [`topk_radix_select`]);
//! 2. six levels, each a histogram of the next digit (11, 11 and 10 bits of the key, then
//!    of the index) of the elements that match the prefix chosen so far, and a select of
//!    the bin that holds the element of rank `k` (level 0 counts only elements above the
//!    floor). Once the elements above the prefix and those matching it number at most
//!    2048, later levels do nothing; the last level always gets there;
//! 3. a collect of those elements, each workgroup through a bitmap in workgroup memory, so
//!    that their order does not depend on the schedule ([`topk_radix_collect`]);
//! 4. a bitonic sort of the at most 2048 candidates in one workgroup, which writes the first
//!    `k` ([`topk_radix_sort`]).
//!
//! Certification checks each kernel against its reference; the tests check whole block and
//! global runs against a sort of the input.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime, GpuTensor, Schedule};
use forge_macros::{forge_kernel, forge_module};

pub use selection::{
    topk_radix_collect, topk_radix_hist, topk_radix_select, topk_radix_sort, topk_rows,
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

    /// Whether element `e` with key `key` is at or above the prefix `(pk, pmask, pi,
    /// imask)`: its key's fixed bits above `pk`, or equal and its complemented index's fixed
    /// bits at least `pi`.
    #[forge_fn]
    fn at_or_above(key: u32, e: u32, prefix: UVec4) -> bool {
        let kp = key & prefix.y;
        kp > prefix.x || (kp == prefix.x && (!e & prefix.w) >= prefix.z)
    }

    /// A bit per component of `v` (elements `e0..e0 + 4`, those below `n`) at or above the
    /// prefix.
    #[forge_fn]
    fn picked4(v: Vec4, e0: u32, n: u32, prefix: UVec4) -> u32 {
        let mut bits = 0u32;
        if e0 < n && at_or_above(order_key(v.x), e0, prefix) {
            bits = bits | 1;
        }
        if e0 + 1 < n && at_or_above(order_key(v.y), e0 + 1, prefix) {
            bits = bits | 2;
        }
        if e0 + 2 < n && at_or_above(order_key(v.z), e0 + 2, prefix) {
            bits = bits | 4;
        }
        if e0 + 3 < n && at_or_above(order_key(v.w), e0 + 3, prefix) {
            bits = bits | 8;
        }
        bits
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

    /// Global top-k, radix select, pass 1 of each level: the histogram of digit `level` of
    /// the elements that count (see [`TopkGlobalScratch`] for `state`), added to
    /// `hist[slot·2048 ..]`. Levels 0..3 are the digits of the order key (bits 21..32,
    /// 10..21, 0..10), levels 3..6 those of the complemented index, so that equal keys are
    /// ordered by index.
    /// - With `sample > 1`, the sample pass: digit 0 of every element of every `sample`-th
    ///   `Vec4`; `state` is not read.
    /// - At level 0 (`sample = 1`): the elements whose key is at least `state[6]`.
    /// - At later levels: the elements that match the prefix chosen so far, once
    ///   `state[0]` says the threshold is not final yet; otherwise nothing.
    ///
    /// `grid` invocations stride over the data, four `Vec4` loads in flight each; each
    /// workgroup counts in workgroup memory and adds its non-zero bins to `hist`.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = grid, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_hist_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, level = 0, grid = 1, sample = 1, slot = 0),
        case(n = 5000, level = 0, grid = 512, sample = 1, slot = 0),
        case(n = 70000, level = 0, grid = 300, sample = 16, slot = 6),
        case(n = 4099, level = 1, grid = 300, sample = 1, slot = 1),
        case(n = 3000, level = 4, grid = 256, sample = 1, slot = 4))]
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
        let digit = level % 3;
        let shift = select(select(0u32, 10u32, digit == 1), 21u32, digit == 0);
        let mask = select(0x3ffu32, 0x7ffu32, digit < 2);
        let mut floor = 0u32;
        let mut prefix = UVec4::ZERO;
        let mut active = global_index() < grid;
        if sample == 1 {
            if level == 0 {
                floor = state[6];
            } else {
                active = active && state[0] == 0;
                prefix = UVec4::new(state[2], state[3], state[4], state[5]);
            }
        }
        if active {
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
                    let d = digits4(v, e0, n, floor, prefix, level, shift, mask);
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

    /// Global top-k, radix select, pass 2 of each level (one workgroup): in the histogram
    /// `hist[slot·2048 ..]` of digit `level`, finds the bin that holds the element of rank
    /// `r` from the top.
    /// - With `floor ≠ 0`, over the sample's histogram with `r = k`: sets `state[6]`, the
    ///   floor of the level-0 pass, to the bin's lowest key (0 when the sample holds fewer
    ///   than `k`). The sample is part of the data, so at least `k` elements reach it.
    /// - At level 0, with `r = k`, and at later levels, with `r = state[1]` and only while
    ///   `state[0]` is 0: narrows the prefix to the bin (see [`TopkGlobalScratch`]). The
    ///   threshold is final once the elements above the prefix and those matching it fit
    ///   the final sort's 2048 slots, or at the last level.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = 1, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_select_reference, tolerance(abs = 0.0, rel = 0.0),
        case(level = 0, slot = 6, k = 100, floor = 1),
        case(level = 0, slot = 0, k = 1, floor = 0),
        case(level = 0, slot = 0, k = 100, floor = 0),
        case(level = 2, slot = 2, k = 1000, floor = 0),
        case(level = 5, slot = 5, k = 7, floor = 0))]
    pub fn topk_radix_select(
        hist: &[u32; 16384],
        state: &mut [u32; 8],
        level: u32,
        slot: u32,
        k: u32,
        floor: u32,
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
        if floor != 0 && lid == 0 && sums[WG - 1] < r {
            state[6] = 0;
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
                state[6] = d << shift;
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
                state[0] = select(0u32, 1u32, (k - left) + count <= 2048 || level >= 5);
                state[1] = left;
                state[2] = pk;
                state[3] = pmask;
                state[4] = pi;
                state[5] = imask;
            }
        }
    }

    /// Global top-k, radix select, pass 3: the elements above the final prefix or matching
    /// it (at most 2048 in all). Workgroup `w < groups` scans its own contiguous chunk of
    /// `4·ceil(ceil(n/4)/groups)` elements (at most 65536), marks them in a bitmap in
    /// workgroup memory, then writes their indices, ascending, to `regions[w·2048 ..]` and
    /// their count to `counts[w]`: the result does not depend on the order in which
    /// invocations run.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = groups * 256, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_collect_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, groups = 1),
        case(n = 5000, groups = 2),
        case(n = 4099, groups = 3),
        case(n = 70000, groups = 2))]
    pub fn topk_radix_collect(
        vals: &[Vec4; n.div_ceil(4)],
        state: &[u32; 8],
        #[out] counts: &mut [u32; groups],
        regions: &mut [u32; groups * 2048],
        n: u32,
        groups: u32,
    ) {
        #[shared]
        let mut marks = [0u32; 2048];
        #[shared]
        let mut sums = [0u32; 256];
        let lid = local_index();
        let wg = workgroup_index();
        if wg < groups {
            let mut i = lid;
            while i < 2048 {
                marks[i].store(0);
                i += WG;
            }
            workgroup_barrier();
            let prefix = UVec4::new(state[2], state[3], state[4], state[5]);
            let chunk4 = n.div_ceil(4).div_ceil(groups);
            let first4 = wg * chunk4;
            let end4 = (first4 + chunk4).min(n.div_ceil(4));
            // Four `Vec4` loads in flight per step; candidates are rare.
            let mut w = first4 + lid;
            while w < end4 {
                let va = vals[w];
                let vb = vals[(w + WG).min(end4 - 1)];
                let vc = vals[(w + 2 * WG).min(end4 - 1)];
                let vd = vals[(w + 3 * WG).min(end4 - 1)];
                let mut j = 0u32;
                while j < 4 {
                    let wj = w + j * WG;
                    let mut bits = 0u32;
                    if wj < end4 {
                        bits = picked4(quad(va, vb, vc, vd, j), wj << 2, n, prefix);
                    }
                    if bits != 0 {
                        for c in 0..4u32 {
                            let bit = (wj << 2) + c - (first4 << 2);
                            if ((bits >> c) & 1) != 0 && bit < 65536 {
                                marks[bit >> 5].fetch_add(1u32 << (bit & 31));
                            }
                        }
                    }
                    j += 1;
                }
                w += 4 * WG;
            }
            workgroup_barrier();
            // Each invocation owns a run of bitmap words; a scan over the runs gives every
            // marked element its place, in index order.
            let run = 2048 / WG;
            let mut own = 0u32;
            let mut j = 0u32;
            while j < run {
                own += marks[lid * run + j].load().count_ones();
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
            let mut j = 0u32;
            while j < run {
                let word_index = lid * run + j;
                let mut word = marks[word_index].load();
                while word != 0 {
                    let bit = word.trailing_zeros();
                    if at < 2048 {
                        regions[wg * 2048 + at] = (first4 << 2) + word_index * 32 + bit;
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
    /// workgroup of pass 3 (the first `counts[w]` indices of each region, at most 2048 in
    /// all; indices past `n` count as padding), sorts them by key, descending, then index,
    /// ascending, with a bitonic network in workgroup memory, and writes the first `k`:
    /// values re-read from `vals`, so that they keep their bits, and indices.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = 1, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_sort_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 4000, k = 1, groups = 1),
        case(n = 900, k = 100, groups = 3),
        case(n = 4000, k = 1024, groups = 5))]
    pub fn topk_radix_sort(
        vals: &[Vec4; n.div_ceil(4)],
        counts: &[u32; groups],
        regions: &[u32; groups * 2048],
        #[out] out_vals: &mut [f32; k],
        #[out] out_ids: &mut [u32; k],
        n: u32,
        k: u32,
        groups: u32,
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
            while j < c && at < 2048 {
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
        while size <= 2048 {
            let mut stride = size / 2;
            while stride > 0 {
                let mut t = lid;
                while t < 1024 {
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
    let (floor, prefix) = if sample > 1 {
        (0, [0; 4])
    } else if level == 0 {
        (state[6], [0; 4])
    } else if state[0] != 0 {
        return Ok(());
    } else {
        (0, [state[2], state[3], state[4], state[5]])
    };
    let (shift, width) = radix_digit(level);
    let x = flat(vals, n);
    let step = sample.max(1) as usize;
    for w in (0..x.len().div_ceil(4)).step_by(step) {
        for (e, &v) in x.iter().enumerate().skip(4 * w).take(4) {
            let (key, e) = (radix_key(v), e as u32);
            if key >= floor && radix_matches(key, e, prefix) {
                let field = if level < 3 { key } else { !e };
                let d = (field >> shift) & ((1 << width) - 1);
                let at = &mut hist[(slot * 2048 + d) as usize];
                *at = at.wrapping_add(1);
            }
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
) -> Result<(), ForgeError> {
    let (r, mut prefix) = if floor != 0 || level == 0 {
        (k, [0; 4])
    } else if state[0] != 0 {
        return Ok(());
    } else {
        (state[1], [state[2], state[3], state[4], state[5]])
    };
    let (shift, width) = radix_digit(level);
    let counts = &hist[(slot * 2048) as usize..][..1 << width];
    let total = counts.iter().fold(0u32, |a, c| a.wrapping_add(*c));
    if floor != 0 && total < r {
        state[6] = 0;
    }
    let mut seen = 0u32;
    for d in (0..counts.len()).rev() {
        let count = counts[d];
        if r >= 1 && seen < r && r <= seen.wrapping_add(count) {
            if floor != 0 {
                state[6] = (d as u32) << shift;
                return Ok(());
            }
            let (value, mask) = if level < 3 { (0, 1) } else { (2, 3) };
            prefix[value] |= (d as u32) << shift;
            prefix[mask] |= ((1 << width) - 1) << shift;
            let left = r - seen;
            let done = k.wrapping_sub(left).wrapping_add(count) <= 2048 || level >= 5;
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
    state: &[u32],
    regions: &mut [u32],
    n: u32,
    groups: u32,
) -> Result<Vec<u32>, ForgeError> {
    let [pk, pmask, pi, imask] = [state[2], state[3], state[4], state[5]];
    let x = flat(vals, n);
    let chunk = 4 * n.div_ceil(4).div_ceil(groups) as usize;
    let mut counts = vec![0u32; groups as usize];
    for (w, count) in counts.iter_mut().enumerate() {
        let first = w * chunk;
        let picked: Vec<u32> = (first..(first + chunk.min(65536)).min(x.len()))
            .map(|e| e as u32)
            .filter(|&e| {
                let kp = radix_key(x[e as usize]) & pmask;
                kp > pk || (kp == pk && (!e & imask) >= pi)
            })
            .collect();
        for (j, &e) in picked.iter().take(2048).enumerate() {
            regions[w * 2048 + j] = e;
        }
        *count = picked.len() as u32;
    }
    Ok(counts)
}

/// The independent reference of [`topk_radix_sort`]: the regions' candidates in order (2048
/// at most), sorted by a comparator, the first `k` kept.
pub fn topk_radix_sort_reference(
    vals: &[[f32; 4]],
    counts: &[u32],
    regions: &[u32],
    n: u32,
    k: u32,
    groups: u32,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let x = flat(vals, n);
    let mut cand: Vec<(u32, u32)> = (0..groups as usize)
        .flat_map(|g| {
            let c = counts[g].min(2048) as usize;
            regions[g * 2048..g * 2048 + c].iter().copied()
        })
        .take(2048)
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
/// - `[6]`: the floor of the level-0 histogram, from the sample pass.
///
/// The elements above the prefix number fewer than `k`; with those matching it they are
/// what the collect pass gathers.
pub struct TopkGlobalScratch {
    hist: GpuTensor<u32>,
    state: GpuTensor<u32>,
    counts: GpuTensor<u32>,
    regions: GpuTensor<u32>,
    groups: u32,
    grid: u32,
    sample: u32,
}

impl TopkGlobalScratch {
    /// Buffers for inputs of `n` values: the histograms of the six levels, the select's
    /// state, and one region of 2048 candidate indices per workgroup of the collect pass.
    pub fn new(rt: &mut ForgeRuntime, n: usize) -> Result<Self, ForgeError> {
        let n4 = dim(topk_radix_hist::NAME, "n / 4", n.div_ceil(4))?;
        // The collect pass's bitmap covers 65536 elements per workgroup.
        let groups = n4.div_ceil(16384).max(n4.div_ceil(4096).min(1024));
        Ok(TopkGlobalScratch {
            hist: rt.zeros(8 * 2048)?,
            state: rt.zeros(8)?,
            counts: rt.zeros(groups as usize)?,
            regions: rt.zeros(groups as usize * 2048)?,
            groups,
            grid: n4.min(1 << 18),
            // About 2^16 `Vec4`s, one in up to 256.
            sample: (n4 >> 16).clamp(1, 256),
        })
    }

    /// The invocations of the histogram passes (`min(n/4, 2^18)` by default), which stride
    /// over the data; at least 1.
    pub fn set_grid(&mut self, grid: u32) {
        self.grid = grid.max(1);
    }
}

/// Records the global top-`k` of the first `n` values of `vals` (a `Vec4` per four values)
/// into `out_vals` and `out_ids` (`k` each), as [`TopkExt::topk_global_with_indices`]
/// computes it: the six levels of the radix select (histogram and select; levels after
/// the threshold is final do nothing), the collect and the final sort. Nothing is
/// submitted. `k` is 1..=1024 and at most `n`; `scratch` was made for at least `n` values.
pub fn topk_global_record(
    rt: &mut ForgeRuntime,
    vals: &GpuTensor<[f32; 4]>,
    n: u32,
    k: u32,
    scratch: &TopkGlobalScratch,
    out_vals: &GpuTensor<f32>,
    out_ids: &GpuTensor<u32>,
) -> Result<(), ForgeError> {
    let s = scratch;
    rt.clear(&s.hist)?;
    rt.clear(&s.state)?;
    // The floor from a sample: elements below it never reach the level-0 histogram.
    let (st, h) = (&s.state, &s.hist);
    topk_radix_hist::launch(rt, vals, st, h, n, 0, s.grid.min(1 << 16), s.sample, 6)?;
    topk_radix_select::launch(rt, h, st, 0, 6, k, 1)?;
    for level in 0..6 {
        // Levels past the second only run on massive ties (a 22-bit prefix of the key
        // already leaves a handful of continuous values): a small grid makes their usual
        // early exit cheap.
        let grid = if level < 2 {
            s.grid
        } else {
            s.grid.min(1 << 14)
        };
        topk_radix_hist::launch(rt, vals, st, h, n, level, grid, 1, level)?;
        topk_radix_select::launch(rt, h, st, level, level, k, 0)?;
    }
    topk_radix_collect::launch(rt, vals, &s.state, &s.counts, &s.regions, n, s.groups)?;
    topk_radix_sort::launch(
        rt, vals, &s.counts, &s.regions, out_vals, out_ids, n, k, s.groups,
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
    if k > TOPK_GLOBAL_MAX_K {
        return Err(invalid(format!(
            "`k` = {k} is larger than the global top-k's limit of {TOPK_GLOBAL_MAX_K}"
        )));
    }
    if k > input.len() {
        return Err(invalid(format!(
            "`k` = {k} is larger than the input's {} elements",
            input.len()
        )));
    }
    if input.len() > TOPK_GLOBAL_MAX_LEN {
        return Err(invalid(format!(
            "the input has {} elements, past the global top-k's limit of 2^28",
            input.len()
        )));
    }
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
