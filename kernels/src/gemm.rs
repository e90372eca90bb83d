//! Matrix product `C = A·B` for row-major `m×k` and `k×n` matrices, tiled through workgroup
//! memory.
//!
//! # Schedule
//! A workgroup computes a square `BM×BM` tile of `C`, where `BM = √WG · √ITEMS`: its `WG`
//! invocations form a `√WG × √WG` grid and each computes a `√ITEMS × √ITEMS` register
//! block, strided by `√WG` so that neighbouring invocations read neighbouring words of
//! workgroup memory. `A` and `B` are staged through workgroup memory in `BM×16` and `16×BM`
//! slices. `WG` and `ITEMS` must be powers of 4 with `BM` at most 64: the launch covers `m`
//! and `n` rounded up to 64, which every tile size divides.
//!
//! Every invocation accumulates its elements with `mul_add` over `p = 0, 1, …, k-1` in that
//! order, whatever the tile size, so every schedule gives bit-identical results.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `C = A·B` for row-major `A` (`m×k`) and `B` (`k×n`).
#[forge_kernel(crate = ::forge_core, workgroup = 256,
    threads = m.div_ceil(64) * 64 * (n.div_ceil(64) * 64), ext = false,
    tune(workgroup = [64, 256], items = [16, 4, 1]),
    reference = gemm_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, k = 1, n = 1), case(m = 2, k = 3, n = 2), case(m = 7, k = 13, n = 29),
    case(m = 67, k = 71, n = 73), case(m = 130, k = 17, n = 3), case(m = 3, k = 37, n = 131))]
pub fn gemm(
    a: &[f32; m * k],
    b: &[f32; k * n],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    // The largest tiles (BM = 64) need 64×16 words of each matrix.
    #[shared]
    let mut a_tile = [0.0f32; 1024];
    #[shared]
    let mut b_tile = [0.0f32; 1024];
    let tdim = 1u32 << (WG.trailing_zeros() / 2);
    let rb = 1u32 << (ITEMS.trailing_zeros() / 2);
    let bm = tdim * rb;
    let tiles_n = n.div_ceil(64) * (64 / bm);
    let row0 = (workgroup_index() / tiles_n) * bm;
    let col0 = (workgroup_index() % tiles_n) * bm;
    let lid = local_index();
    let ty = lid / tdim;
    let tx = lid % tdim;
    let mut acc = [0.0f32; ITEMS];
    let mut b_reg = [0.0f32; 4];
    // Tiles wholly past the edge of `C` (the launch rounds up to 64) do nothing.
    if row0 < m && col0 < n {
        let loads = bm * 16 / WG;
        for t in 0..k.div_ceil(16) {
            let k0 = t * 16;
            for l in 0..loads {
                let idx = l * WG + lid;
                let ar = row0 + idx / 16;
                let ac = k0 + idx % 16;
                let av = if ar < m && ac < k {
                    a[ar * k + ac]
                } else {
                    0.0f32
                };
                a_tile[idx] = av;
                let br = k0 + idx / bm;
                let bc = col0 + idx % bm;
                let bv = if br < k && bc < n {
                    b[br * n + bc]
                } else {
                    0.0f32
                };
                b_tile[idx] = bv;
            }
            workgroup_barrier();
            for kk in 0..16u32 {
                for j in 0..rb {
                    b_reg[j] = b_tile[kk * bm + tx + j * tdim];
                }
                for i in 0..rb {
                    let av = a_tile[(ty + i * tdim) * 16 + kk];
                    for j in 0..rb {
                        acc[i * rb + j] = av.mul_add(b_reg[j], acc[i * rb + j]);
                    }
                }
            }
            workgroup_barrier();
        }
        for i in 0..rb {
            let row = row0 + ty + i * tdim;
            for j in 0..rb {
                let col = col0 + tx + j * tdim;
                if row < m && col < n {
                    c[row * n + col] = acc[i * rb + j];
                }
            }
        }
    }
}

/// The independent reference: a plain triple loop in f64, rounded once at the end.
pub fn gemm_reference(
    a: &[f32],
    b: &[f32],
    m: u32,
    k: u32,
    n: u32,
) -> Result<Vec<f32>, ForgeError> {
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
pub trait GemmExt {
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
    fn gemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>, ForgeError>;
}

impl GemmExt for ForgeRuntime {
    fn gemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let (m, k, n) = (
            dim(gemm::NAME, "m", m)?,
            dim(gemm::NAME, "k", k)?,
            dim(gemm::NAME, "n", n)?,
        );
        gemm::run(self, a, b, m, k, n)
    }
}
