//! The kernels: the block top-k ([`topk_select`], [`topk_rows`]) and the passes of the
//! global radix select, with the helpers they share.

use super::reference::*;
use forge_macros::forge_module;

pub use kernels::{
    topk_radix_collect, topk_radix_hist, topk_radix_mark, topk_radix_refine, topk_radix_select,
    topk_radix_sort, topk_rows, topk_select,
};

#[forge_module]
mod kernels {
    use super::*;

    /// The bins of a radix-select histogram: one per value of an 11-bit digit.
    const BINS: u32 = 2048;

    /// The order key of a value: larger keys come first. Every NaN maps to `u32::MAX`,
    /// `+0.0` sits just above `-0.0`, and no value maps to 0, which marks padding.
    #[forge_fn]
    fn order_key(x: f32) -> u32 {
        let bits = x.to_bits();
        // The sign, shifted arithmetically, flips every bit of a negative value; a
        // positive one gets its sign bit set. Two instructions, then NaN's select.
        let flip = ((bits as i32) >> 31) as u32 | 0x80000000;
        select(bits ^ flip, 0xffffffffu32, (bits & 0x7fffffff) > 0x7f800000)
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

    /// [`digit`] of each component of `v`, elements `e0..e0 + 4`, for the sample's levels
    /// (no floor, digits of the key).
    #[forge_fn]
    fn digits4(v: Vec4, e0: u32, n: u32, prefix: UVec4, shift: u32, mask: u32) -> UVec4 {
        UVec4::new(
            digit(v.x, e0, n, 0, prefix, 0, shift, mask),
            digit(v.y, e0 + 1, n, 0, prefix, 0, shift, mask),
            digit(v.z, e0 + 2, n, 0, prefix, 0, shift, mask),
            digit(v.w, e0 + 3, n, 0, prefix, 0, shift, mask),
        )
    }

    /// The `f32`s whose bits are `u`.
    #[forge_fn]
    fn bits4(u: UVec4) -> Vec4 {
        Vec4::new(
            f32::from_bits(u.x),
            f32::from_bits(u.y),
            f32::from_bits(u.z),
            f32::from_bits(u.w),
        )
    }

    /// The largest order key of the components of `v` that are elements `e0..e0 + 4`
    /// below `n`; 0 when none is.
    #[forge_fn]
    fn live_max_key(v: Vec4, e0: u32, n: u32) -> u32 {
        let mut best = 0u32;
        #[unroll]
        for c in 0..4 {
            if e0 + c < n {
                best = best.max(order_key(component(v, c)));
            }
        }
        best
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

    /// Element `x` at position `pos` of its block, packed into one `u32` for
    /// [`topk_rows`]: the order key with its low bits (`pmask`, `log2` of the block size
    /// rounded up) replaced by the complemented position, unique within the block, and
    /// never 0.
    #[forge_fn]
    fn packed(x: f32, pos: u32, pmask: u32) -> u32 {
        (order_key(x) & !pmask) | (pmask - pos)
    }

    /// The slot of `Vec4` `j` of block `t` in [`topk_rows`]'s tile of `ch4` `Vec4`s a block
    /// (a power of two): XOR-swizzled, so that eight lanes reading `Vec4` `j` of eight
    /// consecutive blocks, or eight consecutive `Vec4`s of one, hit eight different bank
    /// groups.
    #[forge_fn]
    fn tile_slot(t: u32, j: u32, ch4: u32) -> u32 {
        t * ch4 + (j ^ (t & (ch4 - 1)))
    }

    /// Pushes the packed key `y` through the best nine `l`, best first: a max and a min
    /// per entry and no branch, so that the lanes of a subgroup never diverge.
    #[forge_fn]
    fn push_best(l: &mut [u32; 9], y: u32) {
        let mut down = y;
        #[unroll]
        for r in 0..8 {
            let up = l[r].max(down);
            down = l[r].min(down);
            l[r] = up;
        }
        l[8] = l[8].max(down);
    }

    /// Orders entries `i < j` of `a`: the larger to `i`.
    #[forge_fn]
    fn order_pair(a: &mut [u32; 9], i: u32, j: u32) {
        let hi = a[i].max(a[j]);
        a[j] = a[i].min(a[j]);
        a[i] = hi;
    }

    /// Packs the eight elements of `v0` and `v1` ([`packed`]), at positions `pos0..` of
    /// their block, into `batch[0..8]`; those at positions past `len` (or before the block:
    /// the subtraction wraps) become 0, which the best nine never take.
    #[forge_fn]
    fn pack8(batch: &mut [u32; 9], v0: Vec4, v1: Vec4, pos0: u32, len: u32, pmask: u32) {
        #[unroll]
        for c in 0..8 {
            let x = component(select(v1, v0, c < 4), c % 4);
            batch[c] = select(0u32, packed(x, pos0 + c, pmask), pos0 + c < len);
        }
    }

    /// Orders entries `i` and `i + stride` of `a[0..8]` for every `i` whose bit `stride`
    /// is clear (`stride` 1, 2 or 4): a layer of four [`order_pair`]s.
    #[forge_fn]
    fn order_layer(a: &mut [u32; 9], stride: u32) {
        #[unroll]
        for i in 0..8 {
            if (i & stride) == 0 {
                order_pair(a, i, i + stride);
            }
        }
    }

    /// Takes the eight packed keys of `batch` into the best nine `l`: with `sorted`,
    /// sorts the batch (19 compare-exchanges, the optimal network for eight: three layers
    /// of four, then seven) and merges it, 86 `min`/`max` where eight [`push_best`] take
    /// 136: the larger of `l[i]` and `batch[7 - i]` make a bitonic run that holds the best
    /// eight of both, three half-cleaners sort it, and `l[8]` keeps the largest of the keys
    /// dropped. Either way `l` ends as the best nine of both, keys being unique.
    #[forge_fn]
    fn take8(l: &mut [u32; 9], batch: &mut [u32; 9], sorted: bool) {
        if sorted {
            order_layer(batch, 2);
            order_layer(batch, 4);
            order_layer(batch, 1);
            order_pair(batch, 2, 4);
            order_pair(batch, 3, 5);
            order_pair(batch, 1, 4);
            order_pair(batch, 3, 6);
            order_pair(batch, 1, 2);
            order_pair(batch, 3, 4);
            order_pair(batch, 5, 6);
            #[unroll]
            for i in 0..8 {
                let hi = l[i].max(batch[7 - i]);
                l[8] = l[8].max(l[i].min(batch[7 - i]));
                l[i] = hi;
            }
            #[unroll]
            for s in 0..3 {
                order_layer(l, 4u32 >> s);
            }
        } else {
            #[unroll]
            for c in 0..8 {
                push_best(l, batch[c]);
            }
        }
    }

    /// Whether element `e` with key `key` is at or above the prefix `(pk, pmask, pi,
    /// imask)`: its key's fixed bits above `pk`, or equal and its complemented index's fixed
    /// bits at least `pi`.
    #[forge_fn]
    fn at_or_above(key: u32, e: u32, prefix: UVec4) -> bool {
        let kp = key & prefix.y;
        kp > prefix.x || (kp == prefix.x && (!e & prefix.w) >= prefix.z)
    }

    /// A step of a bitonic network on slots `lo` and `hi`: swaps them unless they are in
    /// order, descending when `desc`, by key, then by `ties` (lower first).
    #[forge_fn]
    fn compare_exchange(
        keys: &mut [u32; 2048],
        ties: &mut [u32; 2048],
        lo: u32,
        hi: u32,
        desc: bool,
    ) {
        let ka = keys[lo];
        let kb = keys[hi];
        let ta = ties[lo];
        let tb = ties[hi];
        let hi_first = kb > ka || (kb == ka && tb < ta);
        if hi_first == desc {
            keys[lo] = kb;
            keys[hi] = ka;
            ties[lo] = tb;
            ties[hi] = ta;
        }
    }

    /// Sorts runs of `top` slots of `keys` (a power of two, `pairs` pairs of slots in all)
    /// with a bitonic network, `ties` breaking equal keys: runs alternate direction, the
    /// first descending, except that runs of `whole` slots all end descending.
    #[forge_fn]
    fn bitonic_sort(
        keys: &mut [u32; 2048],
        ties: &mut [u32; 2048],
        lid: u32,
        pairs: u32,
        top: u32,
        whole: u32,
    ) {
        let mut size = 2u32;
        while size <= top {
            let mut stride = size / 2;
            while stride > 0 {
                let mut t = lid;
                while t < pairs {
                    // The `t`-th pair's lower slot: bit `log2 stride` of `t` opened up.
                    let lo = t + (t & !(stride - 1));
                    let hi = lo + stride;
                    let desc = (lo & size) == 0 || size == whole;
                    compare_exchange(keys, ties, lo, hi, desc);
                    t += WG;
                }
                workgroup_barrier();
                stride = stride / 2;
            }
            size = size * 2;
        }
    }

    /// The inclusive prefix sum of `sums[0..WG]` in place, one entry per invocation; the
    /// array may be longer (`topk_radix_sort` scans in its sort keys).
    #[forge_fn]
    fn inclusive_scan<const N: usize>(sums: &mut [u32; N], lid: u32) {
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
    }

    /// Zeroes the workgroup's bins, its invocations striding over them, and waits until
    /// every bin is zero.
    #[forge_fn]
    fn clear_bins(bins: &mut [Atomic<u32>; BINS]) {
        let mut i = local_index();
        while i < BINS {
            bins[i].store(0);
            i += WG;
        }
        workgroup_barrier();
    }

    /// Once every invocation has counted, adds the workgroup's nonzero bins to histogram
    /// `slot` of `hist` (from `slot·BINS`), its invocations striding over them.
    #[forge_fn]
    fn flush_bins(hist: &mut [Atomic<u32>; 16384], slot: u32, bins: &mut [Atomic<u32>; BINS]) {
        workgroup_barrier();
        let mut i = local_index();
        while i < BINS {
            let c = bins[i].load();
            if c > 0 {
                hist[slot * BINS + i].fetch_add(c);
            }
            i += WG;
        }
    }

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
                        key = order_key(vals[src]);
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

            // Sort runs of `kk`; runs alternate direction so that pairs of runs are bitonic,
            // except when a run is a whole block, which ends descending.
            bitonic_sort(&mut skey, &mut spos, lid, slots / 2, kk, p);

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
                        compare_exchange(&mut skey, &mut spos, lo, hi, desc);
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

    /// The top `k ≤ 8` of each block of `b` elements of `vals` (the first `n` of the
    /// `Vec4`s' components), one invocation per block, in registers. The index written is
    /// the position within the block when `local ≠ 0`, in `vals` otherwise. Block results
    /// and padding are as [`topk_select`]'s.
    ///
    /// The fast path packs each element into one `u32`: its order key with the low
    /// `log2 b` bits replaced by the complemented position, so that keys are unique and the
    /// best nine take two instructions per list entry (max and min, [`push_best`]). Packing
    /// merges keys that differ only in those low bits; when that could change the result
    /// (two of the first `k + 1` entries share the packed key's high bits but not their
    /// whole keys, or the `k`-th and `k+1`-th do), the block is redone exactly with (key,
    /// position) pairs.
    ///
    /// # Floor and schedule (blocks of 64, k = 8, 2^26 values, H200)
    /// The floor is 256 MiB read and 64 MiB of results written: 79 µs at copy bandwidth.
    /// The arithmetic is 20–30 integer instructions an element (order key, packing, the
    /// list), which the H200 issues at 64 a clock per SM: 2^26 · 25 of them are about
    /// 100 µs on their own, so the kernel is only fast where loads, arithmetic and barriers
    /// overlap. Three knobs, each certified bit-identical:
    /// - `STAGE = 0`: each invocation loads its own block, four `Vec4`s at a time. A warp's
    ///   loads then touch 32 cache lines each (blocks lie 256 bytes apart).
    /// - `STAGE = 1` (blocks of a multiple of 4; other blocks take the path above): the
    ///   workgroup stages its `WG` blocks through a 16 KiB tile, `CH4` `Vec4`s of each
    ///   block a round, with coalesced loads. Slots are XOR-swizzled ([`tile_slot`]), so
    ///   that the eight lanes of a 128-bit workgroup access hit eight bank groups. When a
    ///   block fits in one round (`WG = 64` for blocks of 64), the tile still holds it at
    ///   the end: the values of the results come from there, and the results go out
    ///   through it, the workgroup's `WG·k` of them written contiguously.
    /// - `AHEAD = 1` (with `STAGE = 1`): each round is loaded a step early, so that its loads
    ///   are in flight while the previous round is taken.
    /// - `BATCH = 8`: elements go into the list eight at a time, sorted by a network and
    ///   merged ([`take8`]), 86 `min`/`max` where eight [`push_best`] take 136.
    ///
    /// On the H200 (`docs/PERFORMANCE.md`), `STAGE = 0` and the whole-block tile at `WG = 64`
    /// are 25% slower than `wg=256 STAGE=1 BATCH=8 AHEAD=1`. Every schedule gives the same
    /// result: the order in which elements enter the list does not change the best nine.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(b), ext = false,
        knobs(STAGE = 1, BATCH = 8, AHEAD = 1),
        tune(workgroup = [256, 128, 64], STAGE = [1, 0], BATCH = [8, 1], AHEAD = [1, 0]),
        reference = topk_rows_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, b = 1, k = 1, local = 1), case(n = 5, b = 64, k = 3, local = 1),
        case(n = 4096, b = 64, k = 8, local = 1), case(n = 8190, b = 32, k = 8, local = 0),
        case(n = 1000, b = 100, k = 7, local = 0), case(n = 1003, b = 8, k = 8, local = 1),
        case(n = 777, b = 13, k = 8, local = 0), case(n = 2500, b = 1000, k = 1, local = 1),
        case(n = 9001, b = 36, k = 5, local = 0), case(n = 20000, b = 256, k = 8, local = 1))]
    pub fn topk_rows(
        vals: &[Vec4; n.div_ceil(4)],
        #[out] out_vals: &mut [f32; n.div_ceil(b) * k],
        #[out] out_ids: &mut [u32; n.div_ceil(b) * k],
        n: u32,
        b: u32,
        k: u32,
        local: u32,
    ) {
        // A round of staging: `CH4` `Vec4`s (as bits) of each of the `WG` blocks, 16 KiB;
        // one slot without staging, where 16 KiB would cost occupancy for nothing.
        const CH4: u32 = 1024 / WG;
        #[shared]
        let mut tile = [UVec4::ZERO; 1023 * STAGE + 1];
        let lid = local_index();
        let blk = global_index();
        let nb = n.div_ceil(b);
        // Invocations past the last block still stage their share (the loads are the
        // workgroup's) and meet the barriers; they only skip the selection.
        let live = blk < nb;
        let start = blk * b;
        let end = (start + b).min(n);
        let len = end - start;
        let pbits = 32 - (b - 1).leading_zeros();
        let pmask = (1u32 << pbits) - 1;
        let b4 = b / 4;
        let first = workgroup_index() * WG;
        let staged = STAGE != 0 && b % 4 == 0;
        // Every block in one round: the tile keeps the workgroup's values to the end.
        let whole = staged && b4 <= CH4;
        // The best nine packed keys, best first; 0 is padding (no element packs to 0).
        let mut l = [0u32; 9];
        if staged {
            let n4 = n.div_ceil(4);
            let rounds = b4.div_ceil(CH4);
            // This invocation's share of a round, loaded in the step before the round is
            // taken when `AHEAD = 1`, so that the loads of the next round are in flight
            // while this one is taken.
            let mut regs = [Vec4::ZERO; CH4];
            let mut held = [Vec4::ZERO; CH4];
            for step in 0..rounds + AHEAD {
                #[unroll]
                for i in 0..CH4 {
                    held[i] = regs[i];
                }
                if step < rounds {
                    #[unroll]
                    for i in 0..CH4 {
                        // Slot `s` of the round: `Vec4` `s % CH4` of block `first + s / CH4`.
                        let s = lid + i * WG;
                        let off = step * CH4 + s % CH4;
                        let g = (first + s / CH4) * b4 + off;
                        regs[i] = Vec4::ZERO;
                        if off < b4 && g < n4 {
                            regs[i] = vals[g];
                        }
                    }
                }
                // The round taken in this step (none in the first step with `AHEAD`: the
                // subtraction wraps).
                let r = step - AHEAD;
                if r < rounds {
                    #[unroll]
                    for i in 0..CH4 {
                        let s = lid + i * WG;
                        let v = select(held[i], regs[i], AHEAD == 0);
                        tile[tile_slot(s / CH4, s % CH4, CH4)] =
                            UVec4::new(v.x.to_bits(), v.y.to_bits(), v.z.to_bits(), v.w.to_bits());
                    }
                }
                workgroup_barrier();
                if r < rounds && live {
                    #[unroll]
                    for h in 0..CH4 / 2 {
                        let v0 = tile[tile_slot(lid, 2 * h, CH4)];
                        let v1 = tile[tile_slot(lid, 2 * h + 1, CH4)];
                        let mut batch = [0u32; 9];
                        pack8(
                            &mut batch,
                            bits4(v0),
                            bits4(v1),
                            4 * (r * CH4 + 2 * h),
                            len,
                            pmask,
                        );
                        take8(&mut l, &mut batch, BATCH == 8);
                    }
                }
                // The next round overwrites the tile; after the last, `whole` reads it.
                if step + 1 < rounds + AHEAD {
                    workgroup_barrier();
                }
            }
        } else if live {
            let last4 = (n - 1) >> 2;
            // Four `Vec4` loads in flight per step.
            let mut w = start >> 2;
            while (w << 2) < end {
                let v0 = vals[w];
                let v1 = vals[(w + 1).min(last4)];
                let v2 = vals[(w + 2).min(last4)];
                let v3 = vals[(w + 3).min(last4)];
                let pos = (w << 2) - start;
                let mut batch = [0u32; 9];
                pack8(&mut batch, v0, v1, pos, len, pmask);
                take8(&mut l, &mut batch, BATCH == 8);
                pack8(&mut batch, v2, v3, pos + 8, len, pmask);
                take8(&mut l, &mut batch, BATCH == 8);
                w += 4;
            }
        }
        // Positions of the first eight, u32::MAX for padding.
        let pad = 0xffffffffu32;
        let mut p = [pad; 8];
        if live {
            // Whether packing could have changed the first `k`: walk entries r and r + 1.
            // A loop, not unrolled: unrolled, its eight rare re-reads cost `STAGE = 0` a
            // third of its speed on the H200 (269 -> 375 µs at wg=256), the registers they hold.
            let mut exact = true;
            let mut c = [0u32; 9];
            #[unroll]
            for r in 0..9 {
                c[r] = l[r];
            }
            let mut r = 0u32;
            while r < k {
                if c[1] != 0 && (c[0] & !pmask) == (c[1] & !pmask) {
                    if r + 1 == k {
                        exact = false;
                    } else {
                        let s0 = start + pmask - (c[0] & pmask);
                        let s1 = start + pmask - (c[1] & pmask);
                        let x0 = order_key(component(vals[s0 >> 2], s0 & 3));
                        let x1 = order_key(component(vals[s1 >> 2], s1 & 3));
                        if x0 != x1 {
                            exact = false;
                        }
                    }
                }
                #[unroll]
                for j in 0..8 {
                    c[j] = c[j + 1];
                }
                c[8] = 0;
                r += 1;
            }
            #[unroll]
            for j in 0..8 {
                p[j] = select(pad, pmask - (l[j] & pmask), l[j] != 0);
            }
            if !exact {
                // The exact path: (key, position) pairs. Positions only grow, so a new
                // element never beats an equal key: ties keep the lower position.
                let mut keys = [0u32; 8];
                #[unroll]
                for j in 0..8 {
                    p[j] = pad;
                }
                let mut i = start;
                while i < end {
                    let key = order_key(component(vals[i >> 2], i & 3));
                    let q = i - start;
                    let mut g = [false; 8];
                    #[unroll]
                    for j in 0..8 {
                        g[j] = key > keys[j];
                    }
                    // From the bottom up, entry j takes entry j - 1 or the new element.
                    #[unroll]
                    for u in 0..7 {
                        let j = 7 - u;
                        keys[j] = select(keys[j], select(key, keys[j - 1], g[j - 1]), g[j]);
                        p[j] = select(p[j], select(q, p[j - 1], g[j - 1]), g[j]);
                    }
                    keys[0] = select(keys[0], key, g[0]);
                    p[0] = select(p[0], q, g[0]);
                    i += 1;
                }
            }
        }
        if whole {
            // The results through the tile: each invocation overwrites its own block's
            // slots (which only it reads) with its values (slots 0, 1) and indices (2, 3),
            // then the workgroup writes them out contiguously.
            if live {
                let mut bits = [0u32; 8];
                let mut ids = [0u32; 8];
                #[unroll]
                for j in 0..8 {
                    let q = select(p[j], 0u32, p[j] == pad);
                    let v = tile[tile_slot(lid, q / 4, CH4)];
                    bits[j] = select(ucomponent(v, q % 4), 0xff800000u32, p[j] == pad);
                    ids[j] = select(select(start + q, q, local != 0), pad, p[j] == pad);
                }
                // Every invocation has read its values before any slot is overwritten.
                #[unroll]
                for h in 0..2 {
                    tile[tile_slot(lid, h, CH4)] = UVec4::new(
                        bits[4 * h],
                        bits[4 * h + 1],
                        bits[4 * h + 2],
                        bits[4 * h + 3],
                    );
                    tile[tile_slot(lid, 2 + h, CH4)] =
                        UVec4::new(ids[4 * h], ids[4 * h + 1], ids[4 * h + 2], ids[4 * h + 3]);
                }
            }
            workgroup_barrier();
            let total = (nb.min(first + WG) - first) * k;
            let mut i = lid;
            while i < total {
                let t = i / k;
                let r = i % k;
                let v = tile[tile_slot(t, r / 4, CH4)];
                let d = tile[tile_slot(t, 2 + r / 4, CH4)];
                out_vals[first * k + i] = f32::from_bits(ucomponent(v, r % 4));
                out_ids[first * k + i] = ucomponent(d, r % 4);
                i += WG;
            }
        } else if live {
            // Write the best `k`, unrolled so that the re-reads are all in flight at once.
            #[unroll]
            for r in 0..8 {
                if r < k {
                    let o = blk * k + r;
                    if p[r] == pad {
                        out_vals[o] = f32::from_bits(0xff800000u32);
                        out_ids[o] = pad;
                    } else {
                        let src = start + p[r];
                        // Values keep their bits: re-read rather than decode the key (NaNs
                        // share one key).
                        out_vals[o] = component(vals[src >> 2], src & 3);
                        out_ids[o] = select(src, p[r], local != 0);
                    }
                }
            }
        }
    }

    /// Global top-k, step 1 (the floor, see the module docs): the histogram of a sample,
    /// every `sample`-th `Vec4` of `vals`, added to `hist[slot·2048 ..]`. At `level = 0`,
    /// digit 0 (key bits 21..32) of each invocation's largest sampled element (invocation `g`
    /// samples `Vec4`s `g, g + grid, …` of the sample); otherwise digit 1 (bits 10..21) of
    /// the sampled elements whose digit 0 is that of `state[6]`. Counting maxima makes one
    /// atomic add an invocation, not sixteen: counting every element put most of them into
    /// the few bins that normal data fill, whose workgroup atomics serialize (130 µs of a
    /// 300 µs call on the H200 at 2^26).
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
        let mut bins = [0u32; BINS];
        clear_bins(&mut bins);
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
            // Level 0: the largest key this invocation samples.
            let mut best = 0u32;
            while u < units {
                let last = units - 1;
                let va = vals[u * step];
                let vb = vals[(u + grid).min(last) * step];
                let vc = vals[(u + 2 * grid).min(last) * step];
                let vd = vals[(u + 3 * grid).min(last) * step];
                #[unroll]
                for j in 0..4 {
                    let v = quad(va, vb, vc, vd, j);
                    let e0 = ((u + j * grid) * step) << 2;
                    if level == 0 {
                        best = best.max(live_max_key(v, e0, n));
                    } else {
                        let d = digits4(v, e0, n, prefix, shift, mask);
                        // Most elements do not count: one test for all four.
                        if (d.x & d.y & d.z & d.w) != 0xffffffff {
                            for c in 0..4u32 {
                                let dc = ucomponent(d, c);
                                if dc != 0xffffffff {
                                    bins[dc].fetch_add(1);
                                }
                            }
                        }
                    }
                }
                u += 4 * grid;
            }
            // No real element has the key 0.
            if best != 0 {
                bins[best >> 21].fetch_add(1);
            }
        }
        flush_bins(&mut hist, slot, &mut bins);
    }

    /// Global top-k, step 2, the one full read: the elements whose key is at least the
    /// floor `state[6]` (the candidates) have digit 0 counted into `hist[0 .. 2048]` and are
    /// marked in a bitmap: bit `e & 31` of word `e >> 5`, four words to a `UVec4` of
    /// `marks`. Workgroup `w` marks the chunk of 65536 elements from `w·65536` in workgroup
    /// memory, then writes all 2048 words of it, zeros included.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(65536) * 256,
        ext = false, tune(workgroup = [256, 128]),
        reference = topk_radix_mark_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1), case(n = 4099), case(n = 5000), case(n = 70000), case(n = 140001))]
    pub fn topk_radix_mark(
        vals: &[Vec4; n.div_ceil(4)],
        state: &[u32; 8],
        hist: &mut [Atomic<u32>; 16384],
        marks: &mut [UVec4; n.div_ceil(65536) * 512],
        n: u32,
    ) {
        #[shared]
        let mut bins = [0u32; BINS];
        #[shared]
        let mut bits = [0u32; 2048];
        let lid = local_index();
        let wg = workgroup_index();
        // With 128 invocations a workgroup, the launch has twice as many workgroups as
        // chunks; the rest do nothing.
        if wg < n.div_ceil(65536) {
            // The bitmap's words are as many as the bins.
            let mut i = lid;
            while i < BINS {
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
            // Histogram 0, written out here: the helper's `0 * BINS + i` would add a
            // zero to every index in the emitted code.
            let mut i = lid;
            while i < BINS {
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

    /// Global top-k, step 3, levels 1..6 while `state[0]` is 0: the histogram of digit
    /// `level` of the marked elements that match the prefix, added to `hist[level·2048 ..]`.
    /// Levels 1 and 2 are key bits 10..21 and 0..10, levels 3..6 bits 21..32, 10..21 and
    /// 0..10 of the complemented index. `grid` invocations stride over the bitmap, a `UVec4`
    /// (128 elements) at a time.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = grid, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_refine_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1, level = 1, grid = 1), case(n = 5000, level = 1, grid = 64),
        case(n = 70000, level = 2, grid = 300), case(n = 4099, level = 3, grid = 256),
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
        let mut bins = [0u32; BINS];
        clear_bins(&mut bins);
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
        flush_bins(&mut hist, level % 8, &mut bins);
    }

    /// Global top-k, the select after each histogram (one workgroup): finds the bin of
    /// `hist[slot·2048 ..]` (digit `level`) that holds the element of rank `r` from the top.
    /// - `floor ≠ 0`, the sample's levels: at level 0 (`r = k`) sets `state[6]` to the bin's
    ///   lowest key and `state[7]` to the rank left in it (both 0 when fewer than `k`
    ///   invocations sampled); at level 1 (`r = state[7]`) adds the bin of digit 1 to
    ///   `state[6]`, the floor.
    /// - Otherwise, at level 0 (`r = k`) and later levels (`r = state[1]`, while `state[0]`
    ///   is 0): narrows the prefix to the bin ([`TopkGlobalScratch`]), final once the
    ///   elements above it and matching it number at most `cap`, or at the last level.
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
        let mut counts = [0u32; BINS];
        #[shared]
        let mut sums = [0u32; WG];
        let lid = local_index();
        let digit = level % 3;
        let shift = select(select(0u32, 10u32, digit == 1), 21u32, digit == 0);
        let bins = select(1024u32, BINS, digit < 2);
        // A level after the threshold is final reads nothing; the rest of the kernel then
        // finds nothing to do.
        let mut skip = false;
        if floor == 0 && level > 0 {
            skip = state[0] != 0;
        }
        // Coalesced loads, all in flight at once.
        let mut i = lid;
        while i < BINS && !skip {
            counts[i] = hist[slot * BINS + i];
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
        inclusive_scan(&mut sums, lid);
        let above = sums[lid] - part;
        let mut r = k;
        // The prefix `(pk, pmask, pi, imask)`: registers, every index a constant.
        let mut pre = [0u32; 4];
        if floor == 0 && level > 0 {
            r = state[1];
            #[unroll]
            for q in 0..4 {
                pre[q] = state[2 + q];
            }
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
                    pre[0] = pre[0] | (d << shift);
                    pre[1] = pre[1] | field;
                } else {
                    pre[2] = pre[2] | (d << shift);
                    pre[3] = pre[3] | field;
                }
                let left = r - seen;
                state[0] = select(0u32, 1u32, (k - left) + count <= cap || level >= 5);
                state[1] = left;
                #[unroll]
                for q in 0..4 {
                    state[2 + q] = pre[q];
                }
            }
        }
    }

    /// Global top-k, step 4: the marked elements at or above the final prefix (at most
    /// `cap`). Workgroup `w` reads the bitmap of its chunk of 65536 elements and writes their
    /// indices, ascending, to `regions[w·2048 ..]` (the first 2048) and their count to
    /// `counts[w]`.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n.div_ceil(65536) * 256,
        ext = false, tune(workgroup = [256, 128]),
        reference = topk_radix_collect_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 1), case(n = 5000), case(n = 4099), case(n = 140001))]
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
        let mut sums = [0u32; WG];
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
            inclusive_scan(&mut sums, lid);
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

    /// Global top-k, step 5 (one workgroup): gathers the first `counts[w]` indices of each
    /// region (at most 2048 a region, `cap` in all; indices past `n` are padding), sorts them
    /// by key, descending, then index with a bitonic network of `cap` slots (a power of two,
    /// 2..=2048, at least `k`), and writes the first `k`, values re-read from `vals`.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = 1, ext = false,
        tune(workgroup = [256, 128]),
        reference = topk_radix_sort_reference, tolerance(abs = 0.0, rel = 0.0),
        case(n = 4000, k = 1, groups = 1, cap = 2048), case(n = 4000, k = 1, groups = 2, cap = 2),
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
        inclusive_scan(&mut skey, lid);
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
        bitonic_sort(&mut skey, &mut sid, lid, cap / 2, cap, cap);
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
