//! Ternary matrix-vector product: `y[r] = scale[r] · Σ_c w[r][c] · x[c]` with weights in
//! `{-1, 0, +1}`, packed as 2-bit codes.
//!
//! # Packing
//! Codes are packed 16 to a `u32`, low bits first: weight `c` of a row sits in bits
//! `2·(c % 16)` and `2·(c % 16) + 1` of the row's word `c / 16`. The codes are `0 → 0`,
//! `1 → +1`, `2 → −1`; code `3` is reserved and reads as `0`. Each row starts on a fresh
//! word, so a row takes `k.div_ceil(16)` words and the bits past `k` in its last word are
//! ignored. [`pack_ternary`] builds this layout from `i8` weights.
//!
//! # Schedule
//! The packed weights are 2 bits each: reading them takes a sixteenth of the time an f32
//! matrix would, so decoding, not memory, is what limits a direct kernel. This one decodes
//! two codes per table lookup, and is laid out so that both its global loads and its
//! lookups use whole transactions.
//!
//! Columns go by chunks of 512 (32 words a row). For each chunk the workgroup writes a table
//! per pair of columns `(c, c+1)`: its 16 entries hold `A[lo] + B[hi]` for the 4-bit code
//! pair `lo + 4·hi`, with `A = (0, x[c], −x[c], 0)` and `B` the same for `x[c+1]` (code 3
//! reads as 0). The 256 tables fill the 16 KiB of workgroup memory, entry-major: entry `e`
//! of the pair in slot `s` sits at `256·e + s`, and pair `8·j + n` of the chunk (nibble `n`
//! of the chunk's word `j`) takes slot `j + 32·n`.
//!
//! A warp holds `ITEMS` consecutive rows (8 at a time). Lane `j` of the warp reads word `j`
//! of each of its rows' chunk: one 128-byte line per row and load, a chunk ahead. It then
//! adds one entry per nibble: a shift, a mask, a load from workgroup memory and an add, for
//! two weights. At nibble `n` the 32 lanes read slots `j + 32·n`, 32 distinct banks whatever
//! the codes. The table costs the workgroup the same however many rows it holds, so the
//! workgroup holds `WG / 32 · ITEMS` rows; `ITEMS` rows per lane also keep that many
//! independent loads and sums in flight.
//!
//! The summation order depends only on `k`: lane `j` adds the entries of words `j`,
//! `j + 32`, … of a row in column order into one sum, and the 32 lane sums meet in lane
//! order. Every schedule gives bit-identical results. (Schedules need `WG ≤ 512`: the lane
//! sums of 16 warps × 8 rows fill the table memory.)
//!
//! Weights of `0` add nothing (their entries hold only the other column's term), so an
//! infinite or NaN `x[c]` only matters where `w[r][c] ≠ 0`; with its pair partner, though,
//! `x[c] + x[c+1]` is formed for the table whatever the weights.

use crate::dims::{check_len, dims};
use forge_core::{ForgeError, ForgeRuntime, Result};
use forge_macros::forge_module;
use std::borrow::BorrowMut;

pub use tables::ternary_gemv;

#[forge_module]
mod tables {
    use super::*;

    /// Writes the 16 entries of the pair table in slot `s`: entry `lo + 4·hi` is
    /// `A[lo] + B[hi]`, with `A = (0, x0, −x0, 0)` and `B = (0, x1, −x1, 0)` (code 3 reads
    /// as 0), at `256·entry + s`.
    #[forge_fn]
    fn pair_table(lut: &mut [f32; 4096], s: u32, x0: f32, x1: f32) {
        let a = [0.0f32, x0, -x0, 0.0f32];
        let b = [0.0f32, x1, -x1, 0.0f32];
        #[unroll]
        for e in 0..16 {
            lut[256 * e + s] = a[e & 3] + b[e >> 2];
        }
    }

    /// `y[r] = scale[r] · Σ_c w[r][c] · x[c]`, with `w` packed 16 codes to a word, row
    /// stride `k.div_ceil(16)` words; decoded two codes per table lookup.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 32, ext = false,
        tune(workgroup = [256, 128, 512], items = [8, 4, 2]),
        reference = ternary_gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
        case(m = 1, k = 1), case(m = 2, k = 4), case(m = 7, k = 13), case(m = 3, k = 16),
        case(m = 5, k = 1031), case(m = 300, k = 17), case(m = 131, k = 2053),
        case(m = 70, k = 4100),
        // Packed weights, x, scale and y; a ternary weight costs an add, counted as the
        // multiply-add of the dense product it replaces.
        cost(bytes = 4 * (m * k.div_ceil(16) + k + 2 * m), flops = 2 * m * k))]
    pub fn ternary_gemv(
        x: &[f32; k],
        packed_w: &[u32; m * k.div_ceil(16)],
        scale: &[f32; m],
        #[out] y: &mut [f32; m],
        m: u32,
        k: u32,
    ) {
        // 16 entries × 256 slots: the tables of one chunk's 256 pairs of columns.
        #[shared]
        let mut lut = [0.0f32; 4096];
        let lid = local_index();
        let lane = lid % 32;
        let warp = lid / 32;
        let words = k.div_ceil(16);
        let chunks = words.div_ceil(32);
        let tail = k % 16;
        let tail_mask = if tail == 0 {
            0xffff_ffffu32
        } else {
            (1u32 << (2 * tail)) - 1
        };
        // A warp holds `ITEMS` consecutive rows, taken 8 at a time (a batch) in `per`
        // registers each.
        let per = ITEMS.min(8);
        let wg_row0 = workgroup_index() * (WG / 32) * ITEMS;
        for b in 0..ITEMS.div_ceil(8) {
            // The row of this warp's slot 0 in the batch. Rows past `m` read the last row
            // again and store nothing: every lane reaches the barriers.
            let first = wg_row0 + warp * ITEMS + b * 8;
            let mut rb = [0u32; 8];
            let mut acc = [0.0f32; 8];
            // Chunk 0's words; each chunk then reads the next one's, a chunk ahead.
            let mut next = [0u32; 8];
            let g0 = lane.min(words - 1);
            #[unroll]
            for i in 0..per {
                rb[i] = (first + i).min(m - 1) * words;
                next[i] = packed_w[rb[i] + g0];
            }
            // The x of this invocation's first table slot (`lid`), a chunk ahead too.
            let c0 = 2 * (8 * (lid % 32) + lid / 32);
            let mut xa = if lid < 256 && c0 < k { x[c0] } else { 0.0f32 };
            let mut xb = if lid < 256 && c0 + 1 < k {
                x[c0 + 1]
            } else {
                0.0f32
            };
            for t in 0..chunks {
                // Word `32·t + lane` of each row: whole, the row's last (bits past `k`
                // cleared), or past the row (cleared: its lookups read entry 0, which
                // holds 0).
                let g = t * 32 + lane;
                let keep = if g + 1 < words {
                    0xffff_ffffu32
                } else if g + 1 == words {
                    tail_mask
                } else {
                    0u32
                };
                let mut w = [0u32; 8];
                let gn = (g + 32).min(words - 1);
                let more = t + 1 < chunks;
                #[unroll]
                for i in 0..per {
                    w[i] = next[i] & keep;
                }
                #[unroll]
                for i in 0..per {
                    next[i] = if more { packed_w[rb[i] + gn] } else { 0u32 };
                }
                // The chunk's tables: slot `s` holds pair `8·(s % 32) + s / 32` of the
                // chunk.
                if lid < 256 {
                    pair_table(&mut lut, lid, xa, xb);
                }
                // Slots past `WG` (workgroups under 256), their x read now.
                let mut s = lid + WG;
                while s < 256 {
                    let c = t * 512 + 2 * (8 * (s % 32) + s / 32);
                    let x0 = if c < k { x[c] } else { 0.0f32 };
                    let x1 = if c + 1 < k { x[c + 1] } else { 0.0f32 };
                    pair_table(&mut lut, s, x0, x1);
                    s += WG;
                }
                // The next chunk's x for slot `lid`, read while this chunk is looked up.
                let cn = c0 + (t + 1) * 512;
                xa = if lid < 256 && cn < k { x[cn] } else { 0.0f32 };
                xb = if lid < 256 && cn + 1 < k {
                    x[cn + 1]
                } else {
                    0.0f32
                };
                workgroup_barrier();
                // Nibble `j` of this invocation's word is pair `8·lane + j`: slot
                // `lane + 32·j`, brought to bits 8..12 of the entry's index by one shift.
                // The 32 lanes of a warp read 32 distinct slots, so 32 distinct banks,
                // whatever the codes.
                #[unroll]
                for i in 0..per {
                    #[unroll]
                    for j in 0..8 {
                        let nibble = if j < 2 {
                            w[i] << (8 - 4 * j)
                        } else {
                            w[i] >> (4 * j - 8)
                        };
                        acc[i] += lut[(nibble & 0xf00u32) | (lane + 32 * j)];
                    }
                }
                workgroup_barrier();
            }
            // The loop ends on a barrier: the tables are done with, the lanes' sums go
            // there.
            #[unroll]
            for i in 0..per {
                lut[(warp * 8 + i) * 32 + lane] = acc[i];
            }
            workgroup_barrier();
            // Lane `lid` (under `WG / 32 · per`) sums row slot `lid % per` of warp
            // `lid / per` over the 32 lanes, in lane order.
            if lid < (WG / 32) * per {
                let ws = lid / per;
                let slot = lid % per;
                let row = wg_row0 + ws * ITEMS + b * 8 + slot;
                if b * 8 + slot < ITEMS && row < m {
                    let base = (ws * 8 + slot) * 32;
                    let mut sum = 0.0f32;
                    for l in 0..32u32 {
                        sum += lut[base + l];
                    }
                    y[row] = sum * scale[row];
                }
            }
            // The sums are read before the next batch's tables overwrite them.
            workgroup_barrier();
        }
    }
}

/// The independent reference: decodes every weight by its index and sums in f64.
pub fn ternary_gemv_reference(
    x: &[f32],
    packed_w: &[u32],
    scale: &[f32],
    m: u32,
    k: u32,
) -> Result<Vec<f32>> {
    let dots = ternary_dots(packed_w, m, k, |w, c| w as f64 * x[c] as f64);
    Ok(dots
        .iter()
        .zip(scale)
        .map(|(dot, s)| (dot * *s as f64) as f32)
        .collect())
}

/// Each row's sum over its columns `c` of `term(w, c)`, `w` the weight at that row and
/// column of an `m×k` matrix packed as [`pack_ternary`] packs it: what the independent
/// references compute, each weight decoded by its index ([`ternary_weight`]).
pub(crate) fn ternary_dots<S: std::iter::Sum>(
    packed_w: &[u32],
    m: u32,
    k: u32,
    term: impl Fn(i8, usize) -> S,
) -> Vec<S> {
    let k = k as usize;
    (0..m as usize)
        .map(|r| {
            (0..k)
                .map(|c| term(ternary_weight(packed_w, k, r, c), c))
                .sum()
        })
        .collect()
}

/// The weight at row `r`, column `c` of an `m×k` matrix packed as [`pack_ternary`] packs
/// it (code `1 → +1`, `2 → −1`, `0` and `3 → 0`), decoded by its index: what the
/// independent references read the weights through.
fn ternary_weight(packed_w: &[u32], k: usize, r: usize, c: usize) -> i8 {
    match (packed_w[r * k.div_ceil(16) + c / 16] >> (2 * (c % 16))) & 0b11 {
        1 => 1,
        2 => -1,
        _ => 0,
    }
}

/// Packs row-major `m×k` ternary weights into the layout [`TernaryGemvExt::ternary_gemv`]
/// reads: 16 two-bit codes to a `u32`, low bits first, `0 → 0`, `+1 → 1`, `−1 → 2`, each row
/// starting on a fresh word (`k.div_ceil(16)` words a row).
///
/// Errors: `weights.len() != m·k` ([`ForgeError::LengthMismatch`]), a zero dimension
/// ([`ForgeError::EmptyWork`]), a weight outside `{-1, 0, 1}` ([`ForgeError::InvalidArgument`],
/// naming its row and column).
///
/// ```
/// use wgsl_forge::prelude::*;
/// assert_eq!(pack_ternary(&[1, 1, 1, 1, -1, -1, -1, -1], 2, 4)?, vec![0x55, 0xAA]);
/// assert_eq!(pack_ternary(&[0, 1, -1], 1, 3)?, vec![0b10_01_00]);
/// assert!(pack_ternary(&[2], 1, 1).is_err());
/// # Ok::<(), ForgeError>(())
/// ```
pub fn pack_ternary(weights: &[i8], m: usize, k: usize) -> Result<Vec<u32>> {
    const NAME: &str = "pack_ternary";
    if m == 0 || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: NAME,
            what: format!("m = {m}, k = {k}"),
        });
    }
    check_len(
        NAME,
        "weights",
        "m * k",
        m as u128 * k as u128,
        weights.len(),
    )?;
    let stride = k.div_ceil(16);
    let mut packed = vec![0u32; m * stride];
    for (i, &w) in weights.iter().enumerate() {
        let (r, c) = (i / k, i % k);
        let code = match w {
            0 => 0u32,
            1 => 1,
            -1 => 2,
            v => {
                return Err(ForgeError::InvalidArgument {
                    kernel: NAME,
                    message: format!("weight [{r}][{c}] is {v}; ternary weights are -1, 0 or 1"),
                })
            }
        };
        packed[r * stride + c / 16] |= code << (2 * (c % 16));
    }
    Ok(packed)
}

/// `rt.ternary_gemv(&x, &packed_w, &scale, m, k)`, the seed's signature.
pub trait TernaryGemvExt: BorrowMut<ForgeRuntime> {
    /// `y[r] = scale[r] · Σ_c w[r][c] · x[c]` for an `m×k` ternary matrix packed by
    /// [`pack_ternary`]: `x` has `k` elements, `packed_w` has `m · k.div_ceil(16)` words,
    /// `scale` has `m`. Code `3` reads as `0`. Any `m`, `k` ≥ 1; `k` need not be a multiple
    /// of 16.
    ///
    /// Errors: a slice of the wrong length ([`ForgeError::LengthMismatch`]), a zero dimension
    /// ([`ForgeError::EmptyWork`]), a dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// // Row 0 is 0x55: codes 1,1,1,1 (+1 each); row 1 is 0xAA: codes 2,2,2,2 (−1 each).
    /// let y = rt.ternary_gemv(&[1.0, 2.0, 3.0, 4.0], &[0x55, 0xAA], &[2.0, 10.0], 2, 4)?;
    /// assert_eq!(y, vec![20.0, -100.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn ternary_gemv(
        &mut self,
        x: &[f32],
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>> {
        let [m, k] = dims(ternary_gemv::NAME, [("m", m), ("k", k)])?;
        ternary_gemv::run(self.borrow_mut(), x, packed_w, scale, m, k)
    }
}

impl TernaryGemvExt for ForgeRuntime {}
