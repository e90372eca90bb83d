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
//! As for `gemv`: a team of 64 invocations reads one row, lane `l` taking columns
//! `l, l+64, …` into four accumulators in turn, so that the team's loads of `x` are
//! contiguous and 16 lanes share each word of codes; the team's partial sums meet in a fixed
//! tree in workgroup memory. A workgroup holds `WG / 64` teams, and each team takes `ITEMS`
//! consecutive rows in turn. The summation order depends only on `k`, so every schedule
//! gives bit-identical results.
//! On an H200 a 16384×16384 matrix (64 MiB of codes) takes about 200 µs.
//!
//! Weights of `0` add nothing, so an infinite or NaN `x[c]` only matters where `w[r][c] ≠ 0`.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `y[r] = scale[r] · Σ_c w[r][c] · x[c]`, with `w` packed 16 codes to a word, row stride
/// `k.div_ceil(16)` words.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 64, ext = false,
    tune(workgroup = [256, 128, 64], items = [1, 2, 4]),
    reference = ternary_gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, k = 1), case(m = 2, k = 4), case(m = 7, k = 13), case(m = 3, k = 16),
    case(m = 5, k = 1031), case(m = 300, k = 17), case(m = 131, k = 2053))]
pub fn ternary_gemv(
    x: &[f32; k],
    packed_w: &[u32; m * k.div_ceil(16)],
    scale: &[f32; m],
    #[out] y: &mut [f32; m],
    m: u32,
    k: u32,
) {
    #[shared]
    let mut partial = [0.0f32; WG];
    let lid = local_index();
    let lane = lid % 64;
    let words = k.div_ceil(16);
    // Lane `l` only reads columns `c ≡ l (mod 64)`, so its codes sit at one fixed shift.
    let shift = 2 * (lane % 16);
    let first = (workgroup_index() * (WG / 64) + lid / 64) * ITEMS;
    for r in 0..ITEMS {
        let row = first + r;
        let mut sum = 0.0f32;
        if row < m {
            let base = row * words;
            let mut s0 = 0.0f32;
            let mut s1 = 0.0f32;
            let mut s2 = 0.0f32;
            let mut s3 = 0.0f32;
            let mut c = lane;
            while c + 192 < k {
                // Columns `c + 64u` sit in word `c / 16 + 4u`; 16 lanes share each word.
                let wi = base + c / 16;
                let k0 = (packed_w[wi] >> shift) & 3;
                let k1 = (packed_w[wi + 4] >> shift) & 3;
                let k2 = (packed_w[wi + 8] >> shift) & 3;
                let k3 = (packed_w[wi + 12] >> shift) & 3;
                let x0 = x[c];
                let x1 = x[c + 64];
                let x2 = x[c + 128];
                let x3 = x[c + 192];
                let v0 = if k0 == 1 {
                    x0
                } else if k0 == 2 {
                    -x0
                } else {
                    0.0f32
                };
                let v1 = if k1 == 1 {
                    x1
                } else if k1 == 2 {
                    -x1
                } else {
                    0.0f32
                };
                let v2 = if k2 == 1 {
                    x2
                } else if k2 == 2 {
                    -x2
                } else {
                    0.0f32
                };
                let v3 = if k3 == 1 {
                    x3
                } else if k3 == 2 {
                    -x3
                } else {
                    0.0f32
                };
                s0 += v0;
                s1 += v1;
                s2 += v2;
                s3 += v3;
                c += 256;
            }
            while c < k {
                let code = (packed_w[base + c / 16] >> shift) & 3;
                let xv = x[c];
                let v = if code == 1 {
                    xv
                } else if code == 2 {
                    -xv
                } else {
                    0.0f32
                };
                s0 += v;
                c += 64;
            }
            sum = (s0 + s1) + (s2 + s3);
        }
        partial[lid] = sum;
        workgroup_barrier();
        let mut stride = 32u32;
        while stride > 0 {
            if lane < stride {
                partial[lid] = partial[lid] + partial[lid + stride];
            }
            workgroup_barrier();
            stride = stride / 2;
        }
        if lane == 0 && row < m {
            y[row] = partial[lid] * scale[row];
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
) -> Result<Vec<f32>, ForgeError> {
    let (m, k) = (m as usize, k as usize);
    let stride = k.div_ceil(16);
    Ok((0..m)
        .map(|r| {
            let dot: f64 = (0..k)
                .map(|c| {
                    let code = (packed_w[r * stride + c / 16] >> (2 * (c % 16))) & 0b11;
                    match code {
                        1 => x[c] as f64,
                        2 => -(x[c] as f64),
                        _ => 0.0,
                    }
                })
                .sum();
            (dot * scale[r] as f64) as f32
        })
        .collect())
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
pub fn pack_ternary(weights: &[i8], m: usize, k: usize) -> Result<Vec<u32>, ForgeError> {
    const NAME: &str = "pack_ternary";
    if m == 0 || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: NAME,
            what: format!("m = {m}, k = {k}"),
        });
    }
    let expected = m
        .checked_mul(k)
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel: NAME,
            message: format!("m·k = {m}·{k} overflows usize"),
        })?;
    if weights.len() != expected {
        return Err(ForgeError::LengthMismatch {
            kernel: NAME,
            arg: "weights",
            expr: "m * k",
            expected: expected as u64,
            actual: weights.len(),
        });
    }
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
pub trait TernaryGemvExt {
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
    ) -> Result<Vec<f32>, ForgeError>;
}

impl TernaryGemvExt for ForgeRuntime {
    fn ternary_gemv(
        &mut self,
        x: &[f32],
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let (m, k) = (
            dim(ternary_gemv::NAME, "m", m)?,
            dim(ternary_gemv::NAME, "k", k)?,
        );
        ternary_gemv::run(self, x, packed_w, scale, m, k)
    }
}
