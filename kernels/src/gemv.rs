//! Matrix-vector product `y = A·x` for a row-major `m×n` matrix.
//!
//! # Schedule
//! GEMV is memory-bound: every element of `A` is read once, and nothing else comes close
//! (`x` is re-read from cache by every row). `A` and `x` are bound as `vec4`s, so each load
//! moves 16 bytes. A team of 64 invocations reads a row: lane `l` takes the row's vec4
//! columns `l, l+64, l+128, …`, so each step of the team reads 1 KiB contiguously, and
//! keeps four such loads in flight per row. A team takes `ITEMS` consecutive rows *at
//! once*, loading each `x` vec4 once for all of them: `ITEMS` times the loads in flight and
//! a fraction of the `x` traffic. A workgroup holds `WG / 64` teams. (Bringing `x`
//! through workgroup memory a tile at a time, for all the workgroup's rows, was slower on
//! the H200 at every shape: `x` stays in the L1 and L2 caches.) A team's 64 partial
//! sums of a row meet in workgroup memory: eight lanes each add eight in order, then one
//! lane adds the eight results in order (two barriers).
//!
//! When `n` is not a multiple of 4, rows do not start on a vec4, and lane `l` takes the
//! row's columns `l, l+64, …` one at a time (a slower path; the host pads `A` and `x` to
//! whole vec4s with zeros).
//!
//! `forge bench gemv` measures it; `docs/PERFORMANCE.md` has the H200's figures.
//!
//! The summation order of a row depends only on `n`: four accumulators, each vec4 (or
//! column) folded in with `mul_add` in order, `(s0 + s1) + (s2 + s3)` per lane, then the
//! fixed two-level sum of the 64 lanes. Every schedule gives bit-identical results.

// Re-exported: other kernels' methods used to reach it here.
pub(crate) use crate::dims::dim;
use crate::dims::{check_len, quads};
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `y = A·x` for a row-major `m×n` matrix `A`, bound as vec4s (`A` and `x` zero-padded to
/// whole vec4s): a team of 64 invocations per `ITEMS` rows.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 64, ext = false,
    tune(workgroup = [256, 128, 64], items = [1, 2, 4]),
    reference = gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, n = 1), case(m = 7, n = 13), case(m = 64, n = 64), case(m = 300, n = 17),
    case(m = 5, n = 1031), case(m = 131, n = 257), case(m = 9, n = 1028), case(m = 6, n = 4096))]
pub fn gemv(
    a: &[Vec4; (m * n).div_ceil(4)],
    x: &[Vec4; n.div_ceil(4)],
    #[out] y: &mut [f32; m],
    m: u32,
    n: u32,
) {
    #[shared]
    let mut partial = [0.0f32; WG * ITEMS];
    let lid = local_index();
    let lane = lid % 64;
    let team = lid / 64;
    let first = (workgroup_index() * (WG / 64) + team) * ITEMS;
    // Rows past `m` (the last team's, and teams past the end) read the last row again and
    // store nothing: every lane reaches the barriers below.
    let last = m - 1;
    let row0 = (first + 0).min(last);
    let row1 = (first + 1).min(last);
    let row2 = (first + 2).min(last);
    let row3 = (first + 3).min(last);
    let mut s00 = 0.0f32;
    let mut s01 = 0.0f32;
    let mut s02 = 0.0f32;
    let mut s03 = 0.0f32;
    let mut s10 = 0.0f32;
    let mut s11 = 0.0f32;
    let mut s12 = 0.0f32;
    let mut s13 = 0.0f32;
    let mut s20 = 0.0f32;
    let mut s21 = 0.0f32;
    let mut s22 = 0.0f32;
    let mut s23 = 0.0f32;
    let mut s30 = 0.0f32;
    let mut s31 = 0.0f32;
    let mut s32 = 0.0f32;
    let mut s33 = 0.0f32;
    if n % 4 == 0 {
        // Rows start on a vec4: lane `l` takes vec4 columns `l, l+64, l+128, …`, four
        // steps apart into four accumulators, each vec4 folded in x, y, z, w order.
        let n4 = n / 4;
        let mut j = lane;
        while j + 192 < n4 {
            let x0 = x[j];
            let x1 = x[j + 64];
            let x2 = x[j + 128];
            let x3 = x[j + 192];
            let b = row0 * n4 + j;
            let a0 = a[b];
            let a1 = a[b + 64];
            let a2 = a[b + 128];
            let a3 = a[b + 192];
            s00 = a0.x.mul_add(x0.x, s00);
            s00 = a0.y.mul_add(x0.y, s00);
            s00 = a0.z.mul_add(x0.z, s00);
            s00 = a0.w.mul_add(x0.w, s00);
            s01 = a1.x.mul_add(x1.x, s01);
            s01 = a1.y.mul_add(x1.y, s01);
            s01 = a1.z.mul_add(x1.z, s01);
            s01 = a1.w.mul_add(x1.w, s01);
            s02 = a2.x.mul_add(x2.x, s02);
            s02 = a2.y.mul_add(x2.y, s02);
            s02 = a2.z.mul_add(x2.z, s02);
            s02 = a2.w.mul_add(x2.w, s02);
            s03 = a3.x.mul_add(x3.x, s03);
            s03 = a3.y.mul_add(x3.y, s03);
            s03 = a3.z.mul_add(x3.z, s03);
            s03 = a3.w.mul_add(x3.w, s03);
            if ITEMS > 1 {
                let b = row1 * n4 + j;
                let a0 = a[b];
                let a1 = a[b + 64];
                let a2 = a[b + 128];
                let a3 = a[b + 192];
                s10 = a0.x.mul_add(x0.x, s10);
                s10 = a0.y.mul_add(x0.y, s10);
                s10 = a0.z.mul_add(x0.z, s10);
                s10 = a0.w.mul_add(x0.w, s10);
                s11 = a1.x.mul_add(x1.x, s11);
                s11 = a1.y.mul_add(x1.y, s11);
                s11 = a1.z.mul_add(x1.z, s11);
                s11 = a1.w.mul_add(x1.w, s11);
                s12 = a2.x.mul_add(x2.x, s12);
                s12 = a2.y.mul_add(x2.y, s12);
                s12 = a2.z.mul_add(x2.z, s12);
                s12 = a2.w.mul_add(x2.w, s12);
                s13 = a3.x.mul_add(x3.x, s13);
                s13 = a3.y.mul_add(x3.y, s13);
                s13 = a3.z.mul_add(x3.z, s13);
                s13 = a3.w.mul_add(x3.w, s13);
            }
            if ITEMS > 2 {
                let b = row2 * n4 + j;
                let a0 = a[b];
                let a1 = a[b + 64];
                let a2 = a[b + 128];
                let a3 = a[b + 192];
                s20 = a0.x.mul_add(x0.x, s20);
                s20 = a0.y.mul_add(x0.y, s20);
                s20 = a0.z.mul_add(x0.z, s20);
                s20 = a0.w.mul_add(x0.w, s20);
                s21 = a1.x.mul_add(x1.x, s21);
                s21 = a1.y.mul_add(x1.y, s21);
                s21 = a1.z.mul_add(x1.z, s21);
                s21 = a1.w.mul_add(x1.w, s21);
                s22 = a2.x.mul_add(x2.x, s22);
                s22 = a2.y.mul_add(x2.y, s22);
                s22 = a2.z.mul_add(x2.z, s22);
                s22 = a2.w.mul_add(x2.w, s22);
                s23 = a3.x.mul_add(x3.x, s23);
                s23 = a3.y.mul_add(x3.y, s23);
                s23 = a3.z.mul_add(x3.z, s23);
                s23 = a3.w.mul_add(x3.w, s23);
            }
            if ITEMS > 3 {
                let b = row3 * n4 + j;
                let a0 = a[b];
                let a1 = a[b + 64];
                let a2 = a[b + 128];
                let a3 = a[b + 192];
                s30 = a0.x.mul_add(x0.x, s30);
                s30 = a0.y.mul_add(x0.y, s30);
                s30 = a0.z.mul_add(x0.z, s30);
                s30 = a0.w.mul_add(x0.w, s30);
                s31 = a1.x.mul_add(x1.x, s31);
                s31 = a1.y.mul_add(x1.y, s31);
                s31 = a1.z.mul_add(x1.z, s31);
                s31 = a1.w.mul_add(x1.w, s31);
                s32 = a2.x.mul_add(x2.x, s32);
                s32 = a2.y.mul_add(x2.y, s32);
                s32 = a2.z.mul_add(x2.z, s32);
                s32 = a2.w.mul_add(x2.w, s32);
                s33 = a3.x.mul_add(x3.x, s33);
                s33 = a3.y.mul_add(x3.y, s33);
                s33 = a3.z.mul_add(x3.z, s33);
                s33 = a3.w.mul_add(x3.w, s33);
            }
            j += 256;
        }
        while j < n4 {
            let xv = x[j];
            let av = a[row0 * n4 + j];
            s00 = av.x.mul_add(xv.x, s00);
            s00 = av.y.mul_add(xv.y, s00);
            s00 = av.z.mul_add(xv.z, s00);
            s00 = av.w.mul_add(xv.w, s00);
            if ITEMS > 1 {
                let av = a[row1 * n4 + j];
                s10 = av.x.mul_add(xv.x, s10);
                s10 = av.y.mul_add(xv.y, s10);
                s10 = av.z.mul_add(xv.z, s10);
                s10 = av.w.mul_add(xv.w, s10);
            }
            if ITEMS > 2 {
                let av = a[row2 * n4 + j];
                s20 = av.x.mul_add(xv.x, s20);
                s20 = av.y.mul_add(xv.y, s20);
                s20 = av.z.mul_add(xv.z, s20);
                s20 = av.w.mul_add(xv.w, s20);
            }
            if ITEMS > 3 {
                let av = a[row3 * n4 + j];
                s30 = av.x.mul_add(xv.x, s30);
                s30 = av.y.mul_add(xv.y, s30);
                s30 = av.z.mul_add(xv.z, s30);
                s30 = av.w.mul_add(xv.w, s30);
            }
            j += 64;
        }
    } else {
        // Rows straddle vec4s: lane `l` takes columns `l, l+64, …` one at a time.
        let mut c = lane;
        while c < n {
            let xq = x[c / 4];
            let cq = c % 4;
            let xc = select(
                select(xq.x, xq.y, cq == 1),
                select(xq.z, xq.w, cq == 3),
                cq >= 2,
            );
            let e = row0 * n + c;
            let v = a[e / 4];
            let q = e % 4;
            let av = select(select(v.x, v.y, q == 1), select(v.z, v.w, q == 3), q >= 2);
            s00 = av.mul_add(xc, s00);
            if ITEMS > 1 {
                let e = row1 * n + c;
                let v = a[e / 4];
                let q = e % 4;
                let av = select(select(v.x, v.y, q == 1), select(v.z, v.w, q == 3), q >= 2);
                s10 = av.mul_add(xc, s10);
            }
            if ITEMS > 2 {
                let e = row2 * n + c;
                let v = a[e / 4];
                let q = e % 4;
                let av = select(select(v.x, v.y, q == 1), select(v.z, v.w, q == 3), q >= 2);
                s20 = av.mul_add(xc, s20);
            }
            if ITEMS > 3 {
                let e = row3 * n + c;
                let v = a[e / 4];
                let q = e % 4;
                let av = select(select(v.x, v.y, q == 1), select(v.z, v.w, q == 3), q >= 2);
                s30 = av.mul_add(xc, s30);
            }
            c += 64;
        }
    }
    let tb = team * ITEMS * 64;
    partial[tb + lane] = (s00 + s01) + (s02 + s03);
    if ITEMS > 1 {
        partial[tb + 64 + lane] = (s10 + s11) + (s12 + s13);
    }
    if ITEMS > 2 {
        partial[tb + 128 + lane] = (s20 + s21) + (s22 + s23);
    }
    if ITEMS > 3 {
        partial[tb + 192 + lane] = (s30 + s31) + (s32 + s33);
    }
    workgroup_barrier();
    // The team's 64 partial sums of each row: eight groups of eight, each summed in order
    // by one lane, then the eight group sums in order.
    if lane < 8 * ITEMS {
        let g = tb + (lane / 8) * 64 + (lane % 8) * 8;
        let mut t = partial[g];
        for i in 1..8u32 {
            t += partial[g + i];
        }
        partial[g] = t;
    }
    workgroup_barrier();
    if lane < ITEMS && first + lane < m {
        let g = tb + lane * 64;
        let mut t = partial[g];
        for i in 1..8u32 {
            t += partial[g + 8 * i];
        }
        y[first + lane] = t;
    }
}

/// The independent reference: an f64 loop over the unpadded elements, rounded once at the
/// end.
pub fn gemv_reference(
    a: &[[f32; 4]],
    x: &[[f32; 4]],
    m: u32,
    n: u32,
) -> Result<Vec<f32>, ForgeError> {
    let (m, n) = (m as usize, n as usize);
    let (a, x) = (a.as_flattened(), x.as_flattened());
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
        let (mu, nu) = (dim(gemv::NAME, "m", m)?, dim(gemv::NAME, "n", n)?);
        check_len(gemv::NAME, "a", "m * n", m as u128 * n as u128, a.len())?;
        check_len(gemv::NAME, "x", "n", n as u128, x.len())?;
        gemv::run(self, &quads(a), &quads(x), mu, nu)
    }
}
