//! Matrix product `C = A·B` for row-major `m×k` and `k×n` matrices, tiled through workgroup
//! memory.
//!
//! # Schedules
//! A workgroup of 256 invocations, a 16×16 grid, computes one tile of `C` at a time. `ITEMS`
//! is the number of 64×64 blocks of `C` a tile covers, and so picks the variant:
//!
//! | ITEMS | tile of `C` | block per invocation |
//! |---|---|---|
//! | 4 | 128×128 | 8×8 |
//! | 2 | 128×64 | 8×4 |
//! | 1 | 64×64 | 4×4 |
//!
//! The runtime launches `ceil(blocks / ITEMS)` workgroups; where the tiles do not fill them
//! exactly (an odd number of 64-row or 64-column blocks), a workgroup takes a further tile
//! in a grid-stride loop. Large tiles read each element of `A` and `B` from memory fewer
//! times and do more multiply-adds per workgroup-memory read; small ones give more
//! workgroups to the 132 SMs of an H200 at 1024³. The tuner picks one per problem size.
//!
//! Each k slice of `A` (`tm×8`) and `B` (`8×tn`) is staged in workgroup memory as vec4s,
//! in two buffers: while the workgroup multiplies one slice, each invocation's loads of the
//! next are in flight in registers, and are stored into the other buffer afterwards; one
//! barrier per slice. `A` is stored transposed (k-major), so that rows are read as vec4s. A
//! vec4 holds rows (or columns) 16 apart: invocation `(tx, ty)` owns rows `ty + 16i` and
//! columns `tx + 16j`, so neighbouring invocations load and store neighbouring words of `A`,
//! `B` and `C`. The register block is a register array of 16 vec4 accumulators (`acc[2i]`
//! and `acc[2i + 1]` hold row `i`'s two halves), and the 8 k steps of a slice are an
//! `#[unroll]` loop, so the WGSL has 16 named accumulators and the steps written out: arrays
//! indexed in loops and loops of dependent loads ran 12 times slower on an H200. The smaller
//! variants skip the half of the block they do not own through conditions on constants,
//! which the macro folds away for each schedule.
//!
//! `VEC` picks the loop over slices: 1 takes one slice a step, with the buffer chosen by the
//! step's parity; 2 takes two slices a step, unrolled, so that each has constant buffer
//! offsets. On the H200 the first is faster (37.5 against 33.4 TFLOP/s at 8192³); the second
//! is there for drivers that fold constant offsets better. What the driver makes of this
//! source is sensitive to things that should not matter (wgpu bounds every loop with a
//! counter; `docs/PERFORMANCE.md` has the history); `examples/gemm_checks` measures what
//! each of wgpu's shader runtime checks costs.
//!
//! Every element is accumulated with `mul_add` over `p = 0, 1, …, k-1` in that order,
//! starting from 0.0, whatever the schedule (the zero padding past `k` adds exact zeros), so
//! every schedule gives bit-identical results.

use crate::dims::dims;
#[cfg(doc)]
use forge_core::ForgeError;
use forge_core::{ForgeRuntime, Result};
use forge_macros::forge_kernel;
use std::borrow::BorrowMut;

/// `C = A·B` for row-major `A` (`m×k`) and `B` (`k×n`).
#[forge_kernel(crate = ::forge_core, workgroup = 256,
    threads = m.div_ceil(64) * n.div_ceil(64) * 256, ext = false,
    tune(workgroup = [256], items = [4, 2, 1], vector = [1, 2]),
    reference = gemm_reference, tolerance(abs = 1e-4, rel = 1e-4, terms = k),
    case(m = 1, k = 1, n = 1), case(m = 2, k = 3, n = 2), case(m = 7, k = 13, n = 29),
    case(m = 67, k = 71, n = 73), case(m = 130, k = 17, n = 3), case(m = 3, k = 37, n = 131),
    case(m = 130, k = 37, n = 133), cost(bytes = 4 * (m * k + k * n + m * n), flops = 2 * m * k * n))]
pub fn gemm(
    a: &[f32; m * k],
    b: &[f32; k * n],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    // Two buffers of a slice each, 256 vec4s a buffer: 16 KiB, the portable limit.
    #[shared]
    let mut a_tile = [Vec4::ZERO; 512];
    #[shared]
    let mut b_tile = [Vec4::ZERO; 512];
    // The variant: a tile of `tm` rows and `tn` columns, in slices 8 deep; `sa` and `sb`
    // are the vec4s per k of a slice.
    let wide_m = ITEMS >= 2;
    let wide_n = ITEMS >= 4;
    let tm = 64 * ITEMS.min(2);
    let tn = 64 * (ITEMS >> 1).max(1);
    let sa = tm >> 2;
    let sb = tn >> 2;
    let lid = local_index();
    // Masks and shifts rather than `%` and `/` by powers of two (naga wraps every integer
    // division in a check for a zero divisor), and `ty` masked although `lid < 256`, so
    // that a driver can see that the k steps' workgroup indices stay in bounds and drop the
    // clamp naga puts on each. The H200's driver did not: its rate was the same without
    // them, and 7% higher with wgpu's bounds checks off (`examples/gemm_checks`).
    let tx = lid & 15;
    let ty = (lid >> 4) & 15;
    // What this invocation stages: the vec4 of A at (k `a_k`, position `a_p`) and the vec4
    // of B at (k `b_k`, position `b_q`). Position p holds rows (or columns)
    // (p / 16)·64 + p % 16 + 16j. Four neighbouring lanes take four positions at one k: a
    // warp reads 4 rows × 8 k of A, whole 32-byte sectors, and its stores meet at most two
    // to a bank.
    let a_k = (lid >> 2) & 7;
    let a_p = (lid & 3) + 4 * (lid >> 5);
    let a_r = (a_p >> 4) * 64 + (a_p & 15);
    let b_k = lid / sb;
    let b_q = lid % sb;
    let b_c = (b_q >> 4) * 64 + (b_q & 15);
    // A 64-wide slice is 128 vec4s: half of the invocations stage it.
    let a_stages = a_p < sa;
    let b_stages = b_k < 8;
    let tiles_n = n.div_ceil(tn);
    let tiles = m.div_ceil(tm) * tiles_n;
    // The launched grid: `threads / (WG·ITEMS)`, rounded up.
    let groups = (m.div_ceil(64) * n.div_ceil(64) * 256).div_ceil(WG * ITEMS);
    let slices = k.div_ceil(8);
    let k16 = 16 * k;
    let mut tile = workgroup_index();
    while tile < tiles {
        let row0 = (tile / tiles_n) * tm;
        let col0 = (tile % tiles_n) * tn;
        // The rows of A and the columns of B this invocation stages (16 apart), and which
        // exist.
        let ar = row0 + a_r;
        let ao = ar * k + a_k;
        let bc = col0 + b_c;
        let mut ra = [false; 4];
        let mut cb = [false; 4];
        #[unroll]
        for j in 0..4 {
            ra[j] = ar + 16 * j < m;
            cb[j] = bc + 16 * j < n;
        }
        let mut acc = [Vec4::ZERO; 16];
        let mut staged_a = Vec4::ZERO;
        let mut staged_b = Vec4::ZERO;
        // Step t loads slice t, multiplies slice t - 1, then stores slice t; `VEC` steps
        // an iteration, so that with `VEC = 2` each step's buffers are constants.
        for t2 in 0..slices / VEC + 1 {
            #[unroll]
            for u in 0..VEC {
                let t = VEC * t2 + u;
                if u == 0 || t <= slices {
                    if t < slices {
                        let k0 = t * 8;
                        let ka = a_stages && k0 + a_k < k;
                        let o = ao + k0;
                        // Zero where the row, the column or the k is past the end.
                        let mut va = [0.0f32; 4];
                        let mut vb = [0.0f32; 4];
                        #[unroll]
                        for j in 0..4 {
                            if ka && ra[j] {
                                va[j] = a[o + j * k16];
                            }
                        }
                        staged_a = Vec4::new(va[0], va[1], va[2], va[3]);
                        let kb = k0 + b_k;
                        let kbs = b_stages && kb < k;
                        let ob = kb * n + bc;
                        #[unroll]
                        for j in 0..4 {
                            if kbs && cb[j] {
                                vb[j] = b[ob + 16 * j];
                            }
                        }
                        staged_b = Vec4::new(vb[0], vb[1], vb[2], vb[3]);
                    }
                    if t > 0 {
                        // Slice t - 1's buffer: by parity, or a constant when unrolled.
                        let buf = if VEC == 2 {
                            (1 - u) * 256
                        } else {
                            ((t - 1) & 1) * 256
                        };
                        let ai = buf + ty;
                        let bi = buf + tx;
                        // Row i of the block takes component i % 4 of `xs[i / 4]`.
                        #[unroll]
                        for s in 0..8 {
                            let x0 = a_tile[ai + s * sa];
                            let x1 = if wide_m { a_tile[ai + s * sa + 16] } else { x0 };
                            let y0 = b_tile[bi + s * sb];
                            let y1 = if wide_n { b_tile[bi + s * sb + 16] } else { y0 };
                            let (xs, ys) = ([x0, x1], [y0, y1]);
                            #[unroll]
                            for i in 0..8 {
                                #[unroll]
                                for h in 0..2 {
                                    acc[2 * i + h] = ys[h]
                                        .mul_add(Vec4::splat(xs[i >> 2][i & 3]), acc[2 * i + h]);
                                }
                            }
                        }
                    }
                    if t < slices {
                        let buf = if VEC == 2 { u * 256 } else { (t & 1) * 256 };
                        if a_stages {
                            a_tile[buf + a_k * sa + a_p] = staged_a;
                        }
                        if b_stages {
                            b_tile[buf + b_k * sb + b_q] = staged_b;
                        }
                    }
                }
                workgroup_barrier();
            }
        }
        // Row i of the block is row (i / 4)·64 + (i % 4)·16 + ty of the tile; its columns
        // are tx + 16j (`acc[2i]`) and 64 + tx + 16j (`acc[2i + 1]`).
        #[unroll]
        for i in 0..8 {
            let r = row0 + (i >> 2) * 64 + (i & 3) * 16 + ty;
            if (i < 4 || wide_m) && r < m {
                let o = r * n;
                #[unroll]
                for h in 0..2 {
                    if h == 0 || wide_n {
                        #[unroll]
                        for j in 0..4 {
                            let col = col0 + tx + 64 * h + 16 * j;
                            if col < n {
                                c[o + col] = acc[2 * i + h][j];
                            }
                        }
                    }
                }
            }
        }
        tile += groups;
    }
}

/// The independent reference: a plain triple loop in f64, rounded once at the end.
pub fn gemm_reference(a: &[f32], b: &[f32], m: u32, k: u32, n: u32) -> Result<Vec<f32>> {
    let (m, k, n) = (m as usize, k as usize, n as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            c[i * n + j] = s as f32;
        }
    }
    Ok(c)
}

/// `rt.gemm(&a, &b, m, k, n)`, the seed's signature.
pub trait GemmExt: BorrowMut<ForgeRuntime> {
    /// `C = A·B` for row-major `A` (`m×k`) and `B` (`k×n`); returns `C`, row-major `m×n`.
    ///
    /// Any `m`, `k`, `n` ≥ 1. Errors: a slice whose length is not `m·k` or `k·n`
    /// ([`ForgeError::LengthMismatch`]), a zero dimension ([`ForgeError::EmptyWork`]), a
    /// dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2×3
    /// let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]; // 3×2
    /// assert_eq!(rt.gemm(&a, &b, 2, 3, 2)?, vec![58.0, 64.0, 139.0, 154.0]);
    /// assert!(rt.gemm(&a, &b, 2, 0, 2).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn gemm(&mut self, a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Result<Vec<f32>> {
        let [m, k, n] = dims(gemm::NAME, [("m", m), ("k", k), ("n", n)])?;
        gemm::run(self.borrow_mut(), a, b, m, k, n)
    }
}

impl GemmExt for ForgeRuntime {}
