//! The contract's kernels, written from `DESIGN.md` alone: its second-edition example, the
//! `sim` module, copied verbatim (structs, a module const, a helper, the 2-D `blur`,
//! `row_sums` with a knob and unrolls, the generic `scale`), and its atomics, written from
//! its lines. `tests/contract.rs` certifies them natively; the browser page (`web/`, which
//! includes this file) certifies the same source in headless Chromium, as a user's kernels
//! written from the contract would be.

use wgsl_forge::prelude::*;

// ---- verbatim from DESIGN.md, "The language, second edition" ------------------------------

#[forge_module]
pub mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Body {
        pub pos: Vec4,
        pub vel: Vec4,
    } // host type: Pod, layout checked against naga

    const SOFTEN: f32 = 1e-3; // module consts: usable in every kernel below

    #[forge_fn]
    fn tree_sum(t: &mut [f32; 256], lid: u32) -> f32 {
        /* may hold barriers */
        t[0]
    }

    #[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (32, 8)]))]
    pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
        let id = global_id(); // logical 2-D id, folding never shows
        if id.x < w && id.y < h {
            dst[id.y * w + id.x] = src[id.y * w + id.x];
        }
    }

    #[forge_kernel(threads = n, knobs(CHUNK = 4), tune(workgroup = [64, 256], CHUNK = [2, 4, 8]))]
    pub fn row_sums(a: &[f32; n * 8], #[out] y: &mut [f32; n], #[out] t: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let mut s = 0.0f32;
            let mut j = 0u32;
            while j < 8 {
                #[unroll]
                for u in 0..CHUNK {
                    s += a[i * 8 + j + u];
                } // knobs are u32 constants
                j += CHUNK;
            }
            y[i] = s; // the same order for every CHUNK
            let mut acc = [0.0f32; 8]; // register array: every index constant
            #[unroll]
            for k in 0..8 {
                acc[k] = a[i * 8 + k];
            }
            #[unroll]
            for step in 0..3 {
                // nested: `half` is a constant too
                let half = 4u32 >> step;
                #[unroll]
                for k in 0..half {
                    acc[k] += acc[k + half];
                }
            }
            t[i] = acc[0];
        }
    }

    #[forge_kernel(threads = n, types(T = [f32, f16]))]
    pub fn scale<T>(x: &[T; n], #[out] y: &mut [T; n], a: f32, n: u32) {
        let i = global_index();
        if i < n {
            y[i] = x[i] * (a as T);
        }
    }
}
// scale::run(&mut rt, &x_f32, 2.0, n) and rt.scale(&x_f16, 2.0, n) pick the instance by type.

// ---- the contract's atomics, from its lines: `Atomic<f32>` (`fetch_add`, `fetch_sub`,
// ---- `fetch_min`, `fetch_max`, `load`, `store`, `swap`); `x[i].compare_exchange_weak(current,
// ---- new)` returns `(old, exchanged)` on every atomic type.

/// Sums of values into 16 float bins, and in each of 16 slots the highest claimant: an
/// invocation claims an empty slot with `compare_exchange_weak`, and one that finds it
/// claimed (or fails spuriously) raises it with `fetch_max`. Every order of the atomics
/// gives the same result, so any GPU must agree with the oracle. (Keeping the *first*
/// claimant instead depends on which workgroup runs first: lavapipe runs them in order,
/// Chromium's SwiftShader did not, and the browser page caught it.)
#[forge_kernel(threads = n)]
pub fn bins(
    x: &[f32; n],
    #[out] sums: &mut [Atomic<f32>; 16],
    #[out] owner: &mut [Atomic<u32>; 16],
    n: u32,
) {
    let i = global_index();
    if i < n {
        sums[i % 16].fetch_add(x[i]);
        let (_old, exchanged) = owner[i % 16].compare_exchange_weak(0, i + 1);
        if !exchanged {
            owner[i % 16].fetch_max(i + 1);
        }
    }
}
