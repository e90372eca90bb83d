//! [`attention_f32`]: flash attention without cooperative matrices, which runs
//! everywhere. Part of [`super`].

use super::reference::attention_reference;
use forge_macros::forge_kernel;

/// Flash attention without cooperative matrices: `f32` in and out, one query row an
/// invocation, the softmax online over every key (up to the row's own when causal).
#[forge_kernel(crate = ::forge_core, workgroup = 64, threads = bh * s, ext = false,
    tune(workgroup = [64, 128]),
    reference = attention_reference, tolerance(abs = 1e-4, rel = 1e-4, terms = s + d),
    case(bh = 1, s = 16, d = 16, causal = 1, scale = 0.25),
    case(bh = 3, s = 23, d = 32, causal = 0, scale = 0.17677),
    case(bh = 2, s = 41, d = 64, causal = 1, scale = 0.125),
    case(bh = 1, s = 19, d = 128, causal = 0, scale = -0.088388),
    cost(bytes = 16 * bh * s * d, flops = 4 * bh * s * s * d / (causal + 1)))]
pub fn attention_f32(
    q: &[f32; bh * s * d],
    k: &[f32; bh * s * d],
    v: &[f32; bh * s * d],
    #[out] o: &mut [f32; bh * s * d],
    bh: u32,
    s: u32,
    d: u32,
    causal: u32,
    scale: f32,
) {
    let g = global_index();
    if g < bh * s {
        let base = (g / s) * s * d;
        let row = g % s;
        let mut acc = [0.0f32; 128];
        let mut m = f32::NEG_INFINITY;
        let mut l = 0.0f32;
        let kend = if causal != 0 { row + 1 } else { s };
        for key in 0..kend {
            let mut dot = 0.0f32;
            for c in 0..d {
                dot += q[base + row * d + c] * k[base + key * d + c];
            }
            let x = dot * scale;
            let mn = m.max(x);
            let alpha = (m - mn).exp();
            let p = (x - mn).exp();
            l = l * alpha + p;
            for c in 0..d {
                acc[c] = acc[c] * alpha + p * v[base + key * d + c];
            }
            m = mn;
        }
        for c in 0..d {
            o[base + row * d + c] = acc[c] / l;
        }
    }
}
