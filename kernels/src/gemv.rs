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
//! The summation order of a row depends only on `n`: four accumulators, each vec4 (or
//! column) folded in with `mul_add` in order, `(s0 + s1) + (s2 + s3)` per lane, then the
//! fixed two-level sum of the 64 lanes. Every schedule gives bit-identical results.

use crate::dims::{check_len, dims, quads};
#[cfg(doc)]
use forge_core::ForgeError;
use forge_core::{ForgeRuntime, Result};
use forge_macros::forge_kernel;
use std::borrow::BorrowMut;

/// `y = A·x` for a row-major `m×n` matrix `A`, bound as vec4s (`A` and `x` zero-padded to
/// whole vec4s): a team of 64 invocations per `ITEMS` rows.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 64, ext = false,
    tune(workgroup = [256, 128, 64], items = [1, 2, 4]),
    reference = gemv_reference, tolerance(abs = 1e-4, rel = 1e-4, terms = n),
    case(m = 1, n = 1), case(m = 7, n = 13), case(m = 64, n = 64), case(m = 300, n = 17),
    case(m = 5, n = 1031), case(m = 131, n = 257), case(m = 9, n = 1028), case(m = 6, n = 4096),
    cost(bytes = 4 * (m * n + n + m), flops = 2 * m * n))]
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
    let mut rows = [0u32; ITEMS];
    #[unroll]
    for r in 0..ITEMS {
        rows[r] = (first + r).min(last);
    }
    // Row r's four accumulators are `s[4r..4r + 4]`: registers, every index a constant.
    let mut s = [0.0f32; 4 * ITEMS];
    if n % 4 == 0 {
        // Rows start on a vec4: lane `l` takes vec4 columns `l, l+64, l+128, …`, four
        // steps apart into four accumulators, each vec4 folded in x, y, z, w order.
        let n4 = n / 4;
        let mut j = lane;
        while j + 192 < n4 {
            let xv = [x[j], x[j + 64], x[j + 128], x[j + 192]];
            #[unroll]
            for r in 0..ITEMS {
                let b = rows[r] * n4 + j;
                let av = [a[b], a[b + 64], a[b + 128], a[b + 192]];
                #[unroll]
                for q in 0..4 {
                    #[unroll]
                    for e in 0..4 {
                        s[4 * r + q] = av[q][e].mul_add(xv[q][e], s[4 * r + q]);
                    }
                }
            }
            j += 256;
        }
        while j < n4 {
            let xv = x[j];
            #[unroll]
            for r in 0..ITEMS {
                let av = a[rows[r] * n4 + j];
                #[unroll]
                for e in 0..4 {
                    s[4 * r] = av[e].mul_add(xv[e], s[4 * r]);
                }
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
            #[unroll]
            for r in 0..ITEMS {
                let e = rows[r] * n + c;
                let v = a[e / 4];
                let q = e % 4;
                let av = select(select(v.x, v.y, q == 1), select(v.z, v.w, q == 3), q >= 2);
                s[4 * r] = av.mul_add(xc, s[4 * r]);
            }
            c += 64;
        }
    }
    let tb = team * ITEMS * 64;
    #[unroll]
    for r in 0..ITEMS {
        partial[tb + 64 * r + lane] = (s[4 * r] + s[4 * r + 1]) + (s[4 * r + 2] + s[4 * r + 3]);
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
pub fn gemv_reference(a: &[[f32; 4]], x: &[[f32; 4]], m: u32, n: u32) -> Result<Vec<f32>> {
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
pub trait GemvExt: BorrowMut<ForgeRuntime> {
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
    fn gemv(&mut self, a: &[f32], x: &[f32], m: usize, n: usize) -> Result<Vec<f32>> {
        let [mu, nu] = dims(gemv::NAME, [("m", m), ("n", n)])?;
        check_len(gemv::NAME, "a", "m * n", m as u128 * n as u128, a.len())?;
        check_len(gemv::NAME, "x", "n", n as u128, x.len())?;
        gemv::run(self.borrow_mut(), &quads(a), &quads(x), mu, nu)
    }
}

impl GemvExt for ForgeRuntime {}
