//! The independent references of the attention kernels: the definition in `f64`.
//! Part of [`super`].

use forge_core::vectors::HVec8;
use forge_core::{f16, ForgeError};

/// The independent reference: each row's scores, softmax and product in f64, from the
/// definition (the maximum subtracted once, over the row's unmasked keys).
#[allow(clippy::too_many_arguments)]
fn reference_f64(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) -> Vec<f64> {
    let (bh, s, d) = (bh as usize, s as usize, d as usize);
    let mut o = vec![0.0; bh * s * d];
    for h in 0..bh {
        let at = |x: &[f64], r: usize, c: usize| x[(h * s + r) * d + c];
        for r in 0..s {
            let keys = if causal != 0 { r + 1 } else { s };
            let scores: Vec<f64> = (0..keys)
                .map(|j| (0..d).map(|c| at(q, r, c) * at(k, j, c)).sum::<f64>() * scale as f64)
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            for c in 0..d {
                o[(h * s + r) * d + c] = weights
                    .iter()
                    .enumerate()
                    .map(|(j, w)| w * at(v, j, c))
                    .sum::<f64>()
                    / total;
            }
        }
    }
    o
}

/// [`attention_f32`](super::attention_f32)'s reference: the scores, softmax and product in f64 from the definition,
/// rounded to `f32`.
#[allow(clippy::too_many_arguments)]
pub fn attention_reference(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) -> Result<Vec<f32>, ForgeError> {
    let w = |x: &[f32]| x.iter().map(|&y| y as f64).collect::<Vec<_>>();
    let o = reference_f64(&w(q), &w(k), &w(v), bh, s, d, causal, scale);
    Ok(o.into_iter().map(|x| x as f32).collect())
}

/// [`attention`](super::attention)'s reference: [`attention_reference_f16`] on the halves of the `HVec8`s.
#[allow(clippy::too_many_arguments)]
pub fn attention_reference_vec(
    q: &[HVec8],
    k: &[HVec8],
    v: &[HVec8],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) -> Result<Vec<HVec8>, ForgeError> {
    let flat = |x: &[HVec8]| x.as_flattened().to_vec();
    let o = attention_reference_f16(&flat(q), &flat(k), &flat(v), bh, s, d, causal, scale)?;
    Ok(o.chunks(8).map(|c| std::array::from_fn(|i| c[i])).collect())
}

/// [`attention`](super::attention)'s halves: the f64 reference, rounded to `f16`.
#[allow(clippy::too_many_arguments)]
pub fn attention_reference_f16(
    q: &[f16],
    k: &[f16],
    v: &[f16],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) -> Result<Vec<f16>, ForgeError> {
    let w = |x: &[f16]| x.iter().map(|y| y.to_f64()).collect::<Vec<_>>();
    let o = reference_f64(&w(q), &w(k), &w(v), bh, s, d, causal, scale);
    Ok(o.into_iter().map(f16::from_f64).collect())
}
