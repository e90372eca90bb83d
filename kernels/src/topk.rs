//! Top-k selection: the `k` largest values of each block of consecutive elements, and a
//! global top-k built from it.
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
//! # Schedule
//! One read of the input. A workgroup loads whole blocks into workgroup memory as 32-bit
//! keys (the order above, made unsigned) with their positions, each block padded to
//! `p = block.next_power_of_two()` slots with keys below every real value. It then runs a
//! bitonic top-k: runs of `K = k.next_power_of_two()` keys are sorted by a bitonic network
//! with alternating directions, and pairs of runs are merged by keeping the larger half
//! (Batcher's half-cleaner) and re-sorting it, until one sorted run of `K` remains per
//! block; its first `k` entries are written, values re-read from the input so that they
//! keep their bits. A workgroup holds `WG·ITEMS / p` blocks (at least one). Positions are
//! unique within a block, so the order is total and every schedule gives bit-identical
//! results.
//!
//! # Global top-k
//! [`TopkExt::topk_global`] runs the same kernel in passes, all recorded into one
//! submission: the first pass takes the top `k` of each block of 2048 inputs with their
//! global indices; each later pass ("chained") takes the top `k` of each 2048 candidates,
//! carrying the indices; the last pass takes the top `k` of the remaining candidates. Each
//! pass at least halves the candidates. Within every group of candidates, equal values sit
//! in the order of their original indices (candidate blocks are sorted, and concatenated in
//! input order), so breaking ties by position breaks them by index; candidates whose index
//! is [`TOPK_PAD_INDEX`] are padding and sort last. Certification checks the kernel, one
//! pass, against [`topk_select_reference`]; the tests check whole global runs against a
//! sort of the input.

use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

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

/// The candidate group of the global passes: the kernel's largest block (its workgroup
/// memory holds 2048 keys and positions).
const GLOBAL_GROUP: u32 = 2048;

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
    let b = block as u32;
    topk_select::run(
        rt,
        input,
        &[0],
        n,
        b,
        k as u32,
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
    let k = k as u32;
    if n <= GLOBAL_GROUP {
        return topk_select::run(rt, input, &[0], n, n, k, n.next_power_of_two(), 0, 0);
    }
    // Every pass is recorded on device tensors; the downloads submit them together.
    let x = rt.upload(input)?;
    let no_ids = rt.upload(&[0u32])?;
    let mut m = n.div_ceil(GLOBAL_GROUP) * k;
    let mut vals = rt.zeros::<f32>(m as usize)?;
    let mut ids = rt.zeros::<u32>(m as usize)?;
    topk_select::launch(
        rt,
        &x,
        &no_ids,
        &vals,
        &ids,
        n,
        GLOBAL_GROUP,
        k,
        GLOBAL_GROUP,
        0,
        0,
    )?;
    drop(x);
    // Each pass keeps `k` of every 2048 candidates: `k ≤ 1024` halves them at least.
    while m > k {
        let b = m.min(GLOBAL_GROUP);
        let next = m.div_ceil(b) * k;
        let next_vals = rt.zeros::<f32>(next as usize)?;
        let next_ids = rt.zeros::<u32>(next as usize)?;
        topk_select::launch(
            rt,
            &vals,
            &ids,
            &next_vals,
            &next_ids,
            m,
            b,
            k,
            b.next_power_of_two(),
            1,
            0,
        )?;
        (vals, ids, m) = (next_vals, next_ids, next);
    }
    Ok((rt.download(&vals)?, rt.download(&ids)?))
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
