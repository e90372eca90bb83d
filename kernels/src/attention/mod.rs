//! Fused scaled-dot-product attention, forward: `O = softmax(scale·Q·Kᵀ [+ causal mask])·V`
//! for `Q`, `K`, `V` and `O` of shape `bh × s × d` (the batch and the heads flattened,
//! row-major, as `b × h × s × d` tensors lie), flash style: no `s × s` matrix is ever
//! stored, the softmax runs online over blocks of keys.
//!
//! - [`attention`]: `f16` in and out, `f32` accumulation, on tensor cores through
//!   cooperative matrices (needs `EXPERIMENTAL_COOPERATIVE_MATRIX` and 32-lane subgroups),
//!   the scores and probabilities through workgroup memory: the form for opaque matrices.
//! - [`attention_rows`]: the same, with the online softmax on the accumulators' rows
//!   (`c.row_max()`, `c.exp2_rows(..)`): in registers on CUDA.
//! - [`attention_f32`]: the fallback, `f32` in and out, one query row an invocation: it
//!   runs everywhere, lavapipe and the browser included.
//!
//! [`AttentionExt::attention`] takes a tensor-core kernel where the device has cooperative
//! matrices (`attention_rows` on CUDA, `attention` through wgpu), else converts to `f32` on
//! the host and takes the fallback. Each kernel lives in
//! its module ([`tensor_cores`], [`fallback`]) with the note of how it is written;
//! [`reference`](mod@reference) holds the `f64` definition they are certified against.

pub mod fallback;
pub mod reference;
pub mod tensor_cores;

pub use fallback::attention_f32;
pub use reference::{attention_reference, attention_reference_f16, attention_reference_vec};
pub use tensor_cores::{attention, attention_rows};

use crate::dims::{check_len, dims};
use forge_core::vectors::HVec8;
use forge_core::{f16, Feature, ForgeError, ForgeRuntime};
use std::borrow::BorrowMut;

/// The largest head dimension the kernels hold (`d` must also be a multiple of 16).
pub const MAX_HEAD_DIM: u32 = 128;

/// The shape checks of the typed methods: `d` a multiple of 16 up to [`MAX_HEAD_DIM`], every
/// dimension at least 1 and in `u32`, each slice `b·h·s·d` long. The flattened `b·h` and
/// `s`, `d` as `u32`.
pub(crate) fn heads(
    kernel: &'static str,
    lens: [usize; 3],
    b: usize,
    h: usize,
    s: usize,
    d: usize,
) -> Result<[u32; 3], ForgeError> {
    let [b32, h32, s32, d32] = dims(kernel, [("b", b), ("h", h), ("s", s), ("d", d)])?;
    if b32 == 0 || h32 == 0 || s32 == 0 || d32 == 0 {
        return Err(ForgeError::EmptyWork {
            kernel,
            what: format!("b·h·s·d = {b}·{h}·{s}·{d}"),
        });
    }
    if d32 % 16 != 0 || d32 > MAX_HEAD_DIM {
        return Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "head dimension `d` = {d}: the kernels take multiples of 16 up to {MAX_HEAD_DIM}"
            ),
        });
    }
    let bh = b32
        .checked_mul(h32)
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel,
            message: format!("`b·h` = {b}·{h} does not fit in u32"),
        })?;
    let total = bh as u128 * s as u128 * d as u128;
    for (arg, len) in ["q", "k", "v"].into_iter().zip(lens) {
        check_len(kernel, arg, "b * h * s * d", total, len)?;
    }
    Ok([bh, s32, d32])
}

/// One attention call's shape: `b·h` heads of `s` rows of `d`, whether the keys after a
/// query's own are masked, and the scale of `Q·Kᵀ` (`1/√d` from [`AttentionShape::new`]).
///
/// ```
/// use wgsl_forge::prelude::*;
/// let mut rt = ForgeRuntime::new(1 << 26, None)?;
/// // A scale of 0 weighs every key alike: each output row is the mean of V's rows.
/// let one = vec![f16::ONE; 2 * 16];
/// let v: Vec<f16> = (0..32).map(|i| f16::from_f32((i / 16) as f32)).collect();
/// let o = rt.attention_with(&one, &one, &v, AttentionShape::new(1, 1, 2, 16, false).with_scale(0.0))?;
/// assert_eq!(o[0].to_f32(), 0.5);
/// # Ok::<(), ForgeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionShape {
    /// The batch.
    pub b: usize,
    /// Heads a batch element.
    pub h: usize,
    /// The sequence's length: rows of each head.
    pub s: usize,
    /// The head dimension: a multiple of 16 up to [`MAX_HEAD_DIM`].
    pub d: usize,
    /// Whether a query sees only the keys up to its own.
    pub causal: bool,
    /// What `Q·Kᵀ` is multiplied by before the softmax.
    pub scale: f32,
}

impl AttentionShape {
    /// The shape with the usual scale, `1/√d`.
    pub fn new(b: usize, h: usize, s: usize, d: usize, causal: bool) -> Self {
        let scale = 1.0 / (d as f32).sqrt();
        Self {
            b,
            h,
            s,
            d,
            causal,
            scale,
        }
    }

    /// The same shape with another scale.
    pub fn with_scale(self, scale: f32) -> Self {
        Self { scale, ..self }
    }
}

/// `rt.attention(&q, &k, &v, b, h, s, d, causal)`.
pub trait AttentionExt: BorrowMut<ForgeRuntime> {
    /// Scaled-dot-product attention, forward, with the scale `1/√d`:
    /// `O = softmax(Q·Kᵀ/√d)·V` over each of the `b·h` heads, the keys after a query's own
    /// masked when `causal`. `q`, `k`, `v` and the result are `b × h × s × d`, row-major.
    /// Runs on tensor cores where the device has cooperative matrices ([`attention_rows`] on
    /// CUDA, [`attention`] through wgpu), else [`attention_f32`] on the `f32` values
    /// (converted on the host both ways).
    ///
    /// Errors: `d` not a multiple of 16 up to 128, or a dimension past `u32`
    /// ([`ForgeError::InvalidArgument`]); a zero dimension ([`ForgeError::EmptyWork`]); a
    /// slice whose length is not `b·h·s·d` ([`ForgeError::LengthMismatch`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let (s, d) = (2, 16);
    /// let h = |v: &[f32]| v.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>();
    /// // Two keys with equal scores: each output row is the mean of the two rows of V.
    /// let q = h(&[0.0; 32]);
    /// let k = h(&[1.0; 32]);
    /// let v = h(&(0..32).map(|i| i as f32).collect::<Vec<_>>());
    /// let o = rt.attention(&q, &k, &v, 1, 1, s, d, false)?;
    /// assert_eq!(o[0].to_f32(), 8.0);
    /// assert_eq!(o[16].to_f32(), 8.0);
    /// // Causal: the first query sees only the first key.
    /// let o = rt.attention(&q, &k, &v, 1, 1, s, d, true)?;
    /// assert_eq!(o[0].to_f32(), 0.0);
    /// assert!(rt.attention(&q, &k, &v, 1, 1, s, 8, false).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    fn attention(
        &mut self,
        q: &[f16],
        k: &[f16],
        v: &[f16],
        b: usize,
        h: usize,
        s: usize,
        d: usize,
        causal: bool,
    ) -> Result<Vec<f16>, ForgeError> {
        self.attention_with(q, k, v, AttentionShape::new(b, h, s, d, causal))
    }

    /// [`AttentionExt::attention`] for a shape of any scale.
    fn attention_with(
        &mut self,
        q: &[f16],
        k: &[f16],
        v: &[f16],
        shape: AttentionShape,
    ) -> Result<Vec<f16>, ForgeError> {
        let AttentionShape {
            b,
            h,
            s,
            d,
            causal,
            scale,
        } = shape;
        let [bh, s, d] = heads(attention::NAME, [q.len(), k.len(), v.len()], b, h, s, d)?;
        let rt = self.borrow_mut();
        let causal = causal as u32;
        if rt.supports(Feature::CooperativeMatrix) && rt.supports(Feature::F16) {
            // Rows of `d` halves are rows of `d / 8` `HVec8`s (`d` is a multiple of 16).
            let (q8, k8, v8): (&[HVec8], &[HVec8], &[HVec8]) = (
                bytemuck::cast_slice(q),
                bytemuck::cast_slice(k),
                bytemuck::cast_slice(v),
            );
            // CUDA knows the fragments' layout, and keeps the softmax in registers there
            // (1.5 to 1.7 times `attention`'s speed on an H100); through WGSL the row
            // operations go through workgroup memory, and `attention`, written for that,
            // is the faster (`docs/PERFORMANCE.md`).
            let o = if rt.is_cuda() {
                attention_rows::run(rt, q8, k8, v8, bh, s, d, causal, scale)?
            } else {
                attention::run(rt, q8, k8, v8, bh, s, d, causal, scale)?
            };
            return Ok(o.as_flattened().to_vec());
        }
        let w = |x: &[f16]| x.iter().map(|y| y.to_f32()).collect::<Vec<_>>();
        let o = attention_f32::run(rt, &w(q), &w(k), &w(v), bh, s, d, causal, scale)?;
        Ok(o.into_iter().map(f16::from_f32).collect())
    }
}

impl AttentionExt for ForgeRuntime {}
