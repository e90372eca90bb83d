//! Ternary matrix-vector product on int8 activations (W2A8, as BitNet's GPU kernel):
//! `y[r] = scale[r] · x_scale · Σ_c w[r][c] · xq[c]`, with the weights packed as for
//! [`crate::ternary_gemv`] (16 two-bit codes a word, `0 → 0`, `1 → +1`, `2 → −1`, `3 → 0`)
//! and the activations quantised to `i8` by [`quantize_activations`].
//!
//! # Why int8 activations
//! The packed weights are 2 bits each, so a kernel that reads them at copy bandwidth has
//! to retire about 8 weights per byte loaded: on f32 activations that is a table lookup
//! or a select per weight or two, and decoding, not memory, sets the speed
//! ([`crate::ternary_gemv`] runs at about a fifth of copy bandwidth on an H200). With
//! `i8` activations four weights go through one `dot4_i8_packed` (`dp4a`).
//!
//! # Decoding a word
//! A word's 16 codes are turned, in place and with eight bitwise operations, into
//! `e = v + 1 ∈ {0, 1, 2}` (code 3 becomes 1, like code 0): bit 1 of `e` is `b0 & !b1`,
//! bit 0 is `!(b0 ^ b1)`. Byte `j` of the word then holds the codes of columns
//! `4j + s` for `s = 0..4` in its bit pairs `s`, so masking bit pair `s` of every byte
//! (`0x03030303 << 2s`) gives four `e`s of columns `s, s + 4, s + 8, s + 12`, scaled by
//! `4^s`; [`quantize_activations`] packs the activations in that order, four `u32`s
//! (a `UVec4`) a word. The four products stay in an `IVec4` accumulator, scaled, and are
//! unscaled once per row (the sums of multiples of `4^s` are multiples of `4^s`, so the
//! shifts are exact). `Σ v·x = Σ e·x − Σ x`, and `Σ x` over a lane's words is taken once
//! per chunk. Integer sums are exact, so every schedule gives bit-identical results.
//!
//! # What bounds it
//! At 16384² the kernel moves 67 MB of packed weights (15.7 µs at the H200's copy
//! bandwidth) and retires 16.8 M words at about 17 integer operations each (8 to decode, 5
//! to mask and shift, 4 `dot4_i8_packed`): ~17 µs of issue on 132 SMs. It runs at 0.50×
//! copy; `docs/PERFORMANCE.md` has the measurements of each step.
//!
//! # Schedule
//! A subgroup covers `subgroup_size() · WORDS` consecutive words of its rows (a chunk),
//! lane `l` the words `l, l + width, ...` of it, so that each load of the subgroup reads
//! consecutive words; its activations stay in registers while it walks the workgroup's
//! rows, two at a time. The workgroup's subgroups take the chunks of a row in turn, and
//! their per-row sums meet in a workgroup atomic. A workgroup holds `WG · ITEMS / 16`
//! rows, walked `RIF` (rows in flight, a knob: 2 or 4) at a time.
//!
//! `WORDS` is a knob (4) but not tuned: `WORDS = 8` (32 registers of activations a lane)
//! ran 1.2–2× slower, and its results are wrong through NVIDIA's Vulkan driver (H200
//! 2026-12-02, H100 2026-12-06: `y` all zeros at `k = 1`), while the oracle with its race
//! checker, lavapipe, and CUDA on the same GPU (with `compute-sanitizer`) certify it. The
//! book's Backends chapter ("Wrong results through NVIDIA's Vulkan driver") has what was
//! ruled out.

use crate::dims::{check_len, dims};
use crate::ternary_gemv::ternary_dots;
use forge_core::{ForgeError, ForgeRuntime, Result};
use forge_macros::forge_module;
use std::borrow::BorrowMut;

pub use w2a8::ternary_gemv_w2a8;

/// Past this `k`, a row's sum `Σ v·x` could leave `i32` (each term is within ±128).
pub const W2A8_MAX_K: usize = 1 << 24;

#[forge_module]
mod w2a8 {
    use super::*;

    /// The 16 codes of `w` as `e = v + 1`, in place: code `b1 b0` gives `e1 = b0 & !b1` and
    /// `e0 = !(b0 ^ b1)`, and with `t = b0 ^ b1`, `e1 = b0 & t`. Eight bitwise operations
    /// for 16 weights.
    #[forge_fn]
    fn codes_plus_one(w: u32) -> u32 {
        let t = w ^ (w >> 1);
        let e0 = !t & 0x5555_5555u32;
        let e1 = w & t & 0x5555_5555u32;
        e0 | (e1 << 1)
    }

    /// `Σ e·x` over a word's 16 codes, one `dot4_i8_packed` per bit pair `s` of the bytes,
    /// each still scaled by `4^s` (lanes `y` and `z`): the shifts that undo the scale are
    /// exact on the sums, so [`unscaled`] takes them once per row rather than per word.
    /// Bit pair 3 would scale to 64·2 = 128, past `i8`, so it is shifted down first.
    #[forge_fn]
    fn dot16_scaled(e: u32, x: UVec4) -> IVec4 {
        IVec4::new(
            dot4_i8_packed(e & 0x0303_0303u32, x.x),
            dot4_i8_packed(e & 0x0c0c_0c0cu32, x.y),
            dot4_i8_packed(e & 0x3030_3030u32, x.z),
            dot4_i8_packed((e >> 6) & 0x0303_0303u32, x.w),
        )
    }

    /// The sum of [`dot16_scaled`]'s lanes, each scale undone.
    #[forge_fn]
    fn unscaled(a: IVec4) -> i32 {
        a.x + (a.y >> 2) + (a.z >> 4) + a.w
    }

    /// The bytes of `v` whose columns `first + 4j` are below `k`; the others cleared.
    #[forge_fn]
    fn live_bytes(v: u32, first: u32, k: u32) -> u32 {
        let mut keep = 0u32;
        #[unroll]
        for j in 0..4 {
            if first + 4 * j < k {
                keep |= 0xffu32 << (8 * j);
            }
        }
        v & keep
    }

    /// `y[r] = scale[r] · x_scale · Σ_c w[r][c] · xq[c]` on int8 activations `xq`, packed
    /// by [`quantize_activations`] (one `UVec4` per weight word).
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 16, ext = false,
        knobs(WORDS = 4, RIF = 2),
        tune(workgroup = [256, 128], items = [1, 2], RIF = [2, 4]),
        reference = ternary_gemv_w2a8_reference,
        case(m = 1, k = 1, x_scale = 0.5), case(m = 3, k = 16, x_scale = 1.0),
        case(m = 7, k = 13, x_scale = 0.25), case(m = 33, k = 1031, x_scale = 0.125),
        case(m = 300, k = 17, x_scale = 2.0), case(m = 70, k = 4100, x_scale = 0.0078125),
        // Packed weights, the int8 activations (a UVec4 per weight word), scale and y. The
        // arithmetic is integer: no flops.
        cost(bytes = 4 * m * k.div_ceil(16) + 16 * k.div_ceil(16) + 8 * m))]
    pub fn ternary_gemv_w2a8(
        xq: &[UVec4; k.div_ceil(16)],
        packed_w: &[u32; m * k.div_ceil(16)],
        scale: &[f32; m],
        #[out] y: &mut [f32; m],
        m: u32,
        k: u32,
        x_scale: f32,
    ) {
        const ROWS: u32 = WG * ITEMS / 16;
        #[shared]
        let mut sums = [0i32; ROWS];
        let lane = subgroup_invocation_id();
        let width = subgroup_size();
        let words = k.div_ceil(16);
        let span = width * WORDS;
        let row0 = workgroup_index() * ROWS;
        // Every subgroup takes the same number of turns (chunks past the row read as
        // zeros), so that the loop stays uniform.
        let turns = words.div_ceil(span).div_ceil(num_subgroups());
        for turn in 0..turns {
            let base = (turn * num_subgroups() + subgroup_id()) * span + lane;
            let mut x = [UVec4::ZERO; WORDS];
            let mut x_sum = 0i32;
            #[unroll]
            for i in 0..WORDS {
                let g = base + i * width;
                if g < words {
                    let mut v = xq[g];
                    let c = 16 * g;
                    // Only the row's last word holds columns past `k`: mask that one alone.
                    if c + 16 > k {
                        v = UVec4::new(
                            live_bytes(v.x, c, k),
                            live_bytes(v.y, c + 1, k),
                            live_bytes(v.z, c + 2, k),
                            live_bytes(v.w, c + 3, k),
                        );
                    }
                    x[i] = v;
                    x_sum += dot4_i8_packed(x[i].x, 0x0101_0101u32)
                        + dot4_i8_packed(x[i].y, 0x0101_0101u32)
                        + dot4_i8_packed(x[i].z, 0x0101_0101u32)
                        + dot4_i8_packed(x[i].w, 0x0101_0101u32);
                }
            }
            // `RIF` rows at a time, so that each lane has `RIF · WORDS` loads in flight;
            // rows past `m` read the last row again and are not stored.
            let mut r = 0u32;
            while r < ROWS {
                let mut acc = [IVec4::ZERO; RIF];
                #[unroll]
                for u in 0..RIF {
                    let row = (row0 + r + u).min(m - 1);
                    #[unroll]
                    for i in 0..WORDS {
                        let g = base + i * width;
                        // A word past the row decodes to e = 1 against zero activations.
                        let w = if g < words {
                            packed_w[row * words + g]
                        } else {
                            0u32
                        };
                        acc[u] += dot16_scaled(codes_plus_one(w), x[i]);
                    }
                }
                #[unroll]
                for u in 0..RIF {
                    let total = subgroup_add(unscaled(acc[u]) - x_sum);
                    if lane == 0 {
                        sums[r + u].fetch_add(total);
                    }
                }
                r += RIF;
            }
        }
        workgroup_barrier();
        let r = local_index();
        if r < ROWS && row0 + r < m {
            y[row0 + r] = sums[r].load() as f32 * x_scale * scale[row0 + r];
        }
    }
}

/// The activation byte of column `c` in [`quantize_activations`]' layout: word `c / 16`,
/// component `c % 4`, byte `(c % 16) / 4`.
fn activation(xq: &[[u32; 4]], c: usize) -> i32 {
    let (word, within) = (c / 16, c % 16);
    (xq[word][within % 4] >> (8 * (within / 4))) as u8 as i8 as i32
}

/// The independent reference: decodes every weight and activation by its index and sums
/// exactly in `i64`, then scales in `f32` in the kernel's order.
pub fn ternary_gemv_w2a8_reference(
    xq: &[[u32; 4]],
    packed_w: &[u32],
    scale: &[f32],
    m: u32,
    k: u32,
    x_scale: f32,
) -> Result<Vec<f32>> {
    let dots = ternary_dots(packed_w, m, k, |w, c| w as i64 * activation(xq, c) as i64);
    Ok(dots
        .iter()
        .zip(scale)
        .map(|(dot, s)| *dot as i32 as f32 * x_scale * s)
        .collect())
}

/// Activations quantised for [`ternary_gemv_w2a8`]: `x[c] ≈ scale · q[c]` with `q[c]` an
/// `i8` in `−127..=127`, packed one `[u32; 4]` per 16 columns.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedActivations {
    /// Column `c`'s `q` is byte `(c % 16) / 4` of `packed[c / 16][c % 4]`; columns past
    /// `len` are zero.
    pub packed: Vec<[u32; 4]>,
    /// The step: `max |x| / 127`, or 1 when every `x` is 0.
    pub scale: f32,
    /// The number of activations.
    pub len: usize,
}

/// Quantises `x` to `i8` with one absmax scale (`q = round(x / scale)`, ties away from
/// zero), in the layout [`ternary_gemv_w2a8`] reads.
///
/// Errors: an empty `x` ([`ForgeError::EmptyWork`]), a NaN or infinite value
/// ([`ForgeError::InvalidArgument`], naming its index).
///
/// ```
/// use wgsl_forge::prelude::*;
/// let q = quantize_activations(&[1.0, -2.0, 0.5])?;
/// assert_eq!(q.scale, 2.0 / 127.0);
/// // Columns 0, 1, 2 are components 0, 1, 2 of word 0, byte 0: 64 (63.5 rounds away),
/// // -127 and 32 (31.75).
/// assert_eq!(q.packed, vec![[64, (-127i8) as u8 as u32, 32, 0]]);
/// # Ok::<(), ForgeError>(())
/// ```
pub fn quantize_activations(x: &[f32]) -> Result<QuantizedActivations> {
    const NAME: &str = "quantize_activations";
    if x.is_empty() {
        return Err(ForgeError::EmptyWork {
            kernel: NAME,
            what: "x is empty".into(),
        });
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(ForgeError::InvalidArgument {
            kernel: NAME,
            message: format!("x[{i}] = {} cannot be quantised", x[i]),
        });
    }
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = if max == 0.0 { 1.0 } else { max / 127.0 };
    let mut packed = vec![[0u32; 4]; x.len().div_ceil(16)];
    for (c, &v) in x.iter().enumerate() {
        let q = (v / scale).round().clamp(-127.0, 127.0) as i8;
        let within = c % 16;
        packed[c / 16][within % 4] |= (q as u8 as u32) << (8 * (within / 4));
    }
    Ok(QuantizedActivations {
        packed,
        scale,
        len: x.len(),
    })
}

/// `rt.ternary_gemv_w2a8(..)`: [`crate::ternary_gemv`]'s product on int8 activations.
pub trait TernaryW2a8Ext: BorrowMut<ForgeRuntime> {
    /// `y[r] = scale[r] · Σ_c w[r][c] · x[c]` for an `m×k` ternary matrix packed by
    /// [`crate::ternary_gemv::pack_ternary`], with `x` quantised to int8 first
    /// ([`quantize_activations`]): the result differs from the f32 product by the
    /// quantisation error, at most `max |x| / 254 · Σ_c |w[r][c]| · |scale[r]|`.
    ///
    /// Errors: those of [`quantize_activations`] and of
    /// [`TernaryW2a8Ext::ternary_gemv_w2a8_quantized`].
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// // Row 0 is +1 four times, row 1 is -1 four times; x is exact in int8 at this scale.
    /// let y = rt.ternary_gemv_w2a8(&[127.0, 0.0, -127.0, 127.0], &[0x55, 0xAA], &[1.0, 2.0], 2, 4)?;
    /// assert_eq!(y, vec![127.0, -254.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn ternary_gemv_w2a8(
        &mut self,
        x: &[f32],
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>> {
        check_len(ternary_gemv_w2a8::NAME, "x", "k", k as u128, x.len())?;
        let q = quantize_activations(x)?;
        self.ternary_gemv_w2a8_quantized(&q, packed_w, scale, m, k)
    }

    /// The same on activations already quantised (`x.len == k`).
    ///
    /// Errors: a slice of the wrong length ([`ForgeError::LengthMismatch`]), a zero
    /// dimension ([`ForgeError::EmptyWork`]), `k` past [`W2A8_MAX_K`] or a dimension past
    /// `u32` ([`ForgeError::InvalidArgument`]).
    fn ternary_gemv_w2a8_quantized(
        &mut self,
        x: &QuantizedActivations,
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>> {
        const NAME: &str = ternary_gemv_w2a8::NAME;
        check_len(NAME, "x", "k", k as u128, x.len)?;
        if k > W2A8_MAX_K {
            return Err(ForgeError::InvalidArgument {
                kernel: NAME,
                message: format!(
                    "k = {k} is past {W2A8_MAX_K}: a row's integer sum could overflow i32"
                ),
            });
        }
        let [m, k] = dims(NAME, [("m", m), ("k", k)])?;
        ternary_gemv_w2a8::run(self.borrow_mut(), &x.packed, packed_w, scale, m, k, x.scale)
    }
}

impl TernaryW2a8Ext for ForgeRuntime {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantisation_round_trips_within_half_a_step() {
        let x: Vec<f32> = (0..37)
            .map(|i| ((i * 7919) % 201) as f32 / 10.0 - 10.0)
            .collect();
        let q = quantize_activations(&x).unwrap();
        assert_eq!(q.packed.len(), 3);
        for (c, &v) in x.iter().enumerate() {
            let back = activation(&q.packed, c) as f32 * q.scale;
            assert!(
                (back - v).abs() <= q.scale / 2.0 * 1.0001,
                "column {c}: {back} vs {v}"
            );
        }
        // Columns past the end are zero.
        assert!((37..48).all(|c| activation(&q.packed, c) == 0));
        assert!(quantize_activations(&[1.0, f32::NAN]).is_err());
        assert!(quantize_activations(&[]).is_err());
        assert_eq!(quantize_activations(&[0.0; 5]).unwrap().scale, 1.0);
    }
}
