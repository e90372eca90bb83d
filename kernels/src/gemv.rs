//! Matrix-vector product `y = A·x` for a row-major `m×n` matrix.
//!
//! # Schedule
//! GEMV is memory-bound: every element of `A` is read once. A team of 64 invocations reads
//! one row, so that each step of the team reads 256 contiguous bytes of `A`, and each
//! invocation keeps four loads in flight. The team then sums its 64 partial sums through
//! workgroup memory. A workgroup holds `WG / 64` teams, and each team takes `ITEMS`
//! consecutive rows in turn.
//!
//! `forge bench gemv` measures it; `docs/PERFORMANCE.md` has the H200's figures.
//!
//! The summation order of a row depends only on `n`: lane `l` of the team sums columns
//! `l, l+64, l+128, …` into four accumulators in turn, adds them as `(s0 + s1) + (s2 + s3)`,
//! and the 64 lanes are added in a fixed tree. Every schedule gives bit-identical results.

// Re-exported: other kernels' methods used to reach it here.
pub(crate) use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `y = A·x` for a row-major `m×n` matrix `A`: a team of 64 invocations per row.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 64, ext = false,
    tune(workgroup = [256, 128, 64], items = [1, 2, 4]),
    reference = gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, n = 1), case(m = 7, n = 13), case(m = 64, n = 64), case(m = 300, n = 17),
    case(m = 5, n = 1031), case(m = 131, n = 257))]
pub fn gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    #[shared]
    let mut partial = [0.0f32; WG];
    let lid = local_index();
    let lane = lid % 64;
    let first = (workgroup_index() * (WG / 64) + lid / 64) * ITEMS;
    for r in 0..ITEMS {
        let row = first + r;
        let mut sum = 0.0f32;
        if row < m {
            let base = row * n;
            let mut s0 = 0.0f32;
            let mut s1 = 0.0f32;
            let mut s2 = 0.0f32;
            let mut s3 = 0.0f32;
            let mut j = lane;
            // Four independent loads per step keep enough bytes in flight.
            while j + 192 < n {
                let a0 = a[base + j];
                let a1 = a[base + j + 64];
                let a2 = a[base + j + 128];
                let a3 = a[base + j + 192];
                s0 = a0.mul_add(x[j], s0);
                s1 = a1.mul_add(x[j + 64], s1);
                s2 = a2.mul_add(x[j + 128], s2);
                s3 = a3.mul_add(x[j + 192], s3);
                j += 256;
            }
            while j < n {
                s0 = a[base + j].mul_add(x[j], s0);
                j += 64;
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
            y[row] = partial[lid];
        }
    }
}

/// The independent reference: an f64 loop, rounded once at the end.
pub fn gemv_reference(a: &[f32], x: &[f32], m: u32, n: u32) -> Result<Vec<f32>, ForgeError> {
    let (m, n) = (m as usize, n as usize);
    Ok((0..m)
        .map(|r| {
            (0..n)
                .map(|j| a[r * n + j] as f64 * x[j] as f64)
                .sum::<f64>() as f32
        })
        .collect())
}

/// `rt.gemv(&a, &x, m, n)`, the seed's signature.
pub trait GemvExt {
    /// `y = A·x` for a row-major `m×n` matrix `A`; returns `y` of length `m`.
    ///
    /// Any `m`, `n` ≥ 1. Errors: a slice whose length is not `m·n` or `n`
    /// ([`ForgeError::LengthMismatch`]), a zero dimension ([`ForgeError::EmptyWork`]), a
    /// dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let y = rt.gemv(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 1.0, 1.0], 2, 3)?;
    /// assert_eq!(y, vec![6.0, 15.0]);
    /// assert!(rt.gemv(&[1.0, 2.0], &[1.0, 1.0, 1.0], 2, 3).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn gemv(&mut self, a: &[f32], x: &[f32], m: usize, n: usize) -> Result<Vec<f32>, ForgeError>;
}

impl GemvExt for ForgeRuntime {
    fn gemv(&mut self, a: &[f32], x: &[f32], m: usize, n: usize) -> Result<Vec<f32>, ForgeError> {
        let (m, n) = (dim(gemv::NAME, "m", m)?, dim(gemv::NAME, "n", n)?);
        gemv::run(self, a, x, m, n)
    }
}
