//! `C = A·B` for row-major `f16` `A` (`m×k`) and `B` (`k×n`), accumulated and returned in
//! `f32`: on tensor cores through cooperative matrices ([`gemm_f16`]: needs
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` and 32-lane subgroups), or without them
//! ([`gemm_f16_simt`], one output an invocation: lavapipe certifies it).
//! [`GemmF16Ext::gemm_f16`] takes the first where the device has the feature: a device
//! feature, not a tuning choice, picks the path, as a kernel's features hold for all its
//! schedules.
//!
//! `gemm_f16`: a workgroup of 128 or 256 (4 or 8 subgroups, in rows of 2) computes a tile of
//! `C` (`ITEMS` 4: 128×128, 2: 128×64, 1: 64×64) in steps of `KB = 16` along `k`. Each
//! step's slices of `A` and `B` are staged in workgroup memory, zero past the edges; while
//! the subgroups multiply one step, the loads of the next wait in registers (`va`, `vb`):
//! one load site, one multiply site, two barriers a step. A subgroup's accumulators (up to
//! 4×4 fragments of 16×16) are a register array. Interior tiles store them straight to
//! `C`; a tile over the edge goes through `sc`, 1 KiB a subgroup. That and 4 KiB a slice
//! keep to the portable 16 KiB, hence 16-deep steps; `A` and `B` are read as `f16`
//! scalars (vector loads would need `k` and `n` multiples of 4). `docs/PERFORMANCE.md`
//! ("gemm_f16") has the H200's rates and what limits them.
//!
//! Rounding: the oracle forms each 16-deep step exactly and rounds to `f32` once
//! (`oracle::coop`); tensor cores round inside a step, and the fallback rounds each
//! `mul_add`: both within `tolerance(abs = 1e-3, rel = 1e-3)`.

use crate::dims::dims;
use forge_core::{f16, Feature, ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;
use std::borrow::BorrowMut;

/// `C = A·B` on cooperative matrices.
#[forge_kernel(crate = ::forge_core, workgroup = 128,
    threads = m.div_ceil(128) * n.div_ceil(128) * 1024, ext = false,
    knobs(PAD = 8), tune(workgroup = [128], items = [4, 2, 1], PAD = [0, 8]),
    reference = gemm_f16_reference, tolerance(abs = 1e-3, rel = 1e-3),
    case(m = 16, k = 16, n = 16), case(m = 7, k = 13, n = 29), case(m = 128, k = 48, n = 256),
    case(m = 130, k = 37, n = 133), case(m = 67, k = 200, n = 3),
    cost(bytes = 2 * (m * k + k * n) + 4 * m * n, flops = 2 * m * k * n))]
pub fn gemm_f16(
    a: &[f16; m * k],
    b: &[f16; k * n],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    // The tile, `TM×TN`: 128×128, 128×64, 64×64 for `ITEMS` 4, 2, 1. Staged rows are `PAD`
    // elements longer than they hold, so that a fragment's rows fall on different banks.
    // Steps are 32 deep where 16 KiB hold them (unpadded, tiles below 128×128), else 16.
    const TM: u32 = 64 * (ITEMS - ITEMS / 4 * 2);
    const TN: u32 = 64 * (ITEMS / 2 + 1 / ITEMS);
    const KB: u32 = 16 * (2 - (ITEMS / 4 + WG / 256 + PAD / 8 + 1) / 2);
    const SA: u32 = KB + PAD;
    const SB: u32 = TN + PAD;
    #[shared]
    let mut sa = [0.0f16; TM * SA];
    #[shared]
    let mut sb = [0.0f16; KB * SB];
    #[shared]
    let mut sc = [0.0f32; WG * 8];
    // `WG / 32` subgroups in `sgr` rows by 2, each owning `fm` by `fn_` fragments of 16×16.
    let sgr = WG / 64;
    let fm = TM / (16 * sgr);
    let fn_ = TN / 32;
    let (tm, tn) = (TM, TN);
    let lid = local_index();
    let sid = subgroup_id();
    let lane = subgroup_invocation_id();
    let sr = (sid >> 1) * (tm / sgr);
    let scol = (sid & 1) * (tn >> 1);
    let tiles_n = n.div_ceil(tn);
    // One workgroup a tile (`threads` launches enough for 128×128, the largest; the rest
    // leave): naga holds cooperative operations to control flow it can prove uniform, and
    // it sees every `var`, so a grid-stride tile counter, as varying.
    let tile = workgroup_index();
    if tile < m.div_ceil(tm) * tiles_n {
        let row0 = (tile / tiles_n) * tm;
        let col0 = (tile % tiles_n) * tn;
        let mut acc = [CoopC::zeroed(); 16];
        let mut va = [0.0f16; TM * KB / WG];
        let mut vb = [0.0f16; KB * TN / WG];
        // Step t loads slice t into registers, multiplies slice t - 1 and stores slice t.
        // The multiply runs at t = 0 too, on zeros (workgroup memory starts zeroed): naga
        // would not accept it under `if t > 0`, `t` being a `var`.
        for t in 0..k.div_ceil(KB) + 1 {
            let k0 = t * KB;
            #[unroll]
            for j in 0..TM * KB / WG {
                let e = lid + WG * j;
                let (r, q) = (row0 + e / KB, k0 + e % KB);
                va[j] = if r < m && q < k { a[r * k + q] } else { 0.0 };
            }
            #[unroll]
            for j in 0..KB * TN / WG {
                let e = lid + WG * j;
                let (p, q) = (k0 + e / tn, col0 + e % tn);
                vb[j] = if p < k && q < n { b[p * n + q] } else { 0.0 };
            }
            #[unroll]
            for kk in 0..KB / 16 {
                let mut fa = [CoopA::zeroed(); 4];
                #[unroll]
                for i in 0..4 {
                    if i < fm {
                        fa[i] = CoopA::load_row_major(&sa[(sr + 16 * i) * SA + 16 * kk], SA);
                    }
                }
                #[unroll]
                for j in 0..4 {
                    if j < fn_ {
                        let fb = CoopB::load_row_major(&sb[16 * kk * SB + scol + 16 * j], SB);
                        #[unroll]
                        for i in 0..4 {
                            if i < fm {
                                acc[4 * i + j] = fa[i].mul_add(fb, acc[4 * i + j]);
                            }
                        }
                    }
                }
            }
            workgroup_barrier();
            #[unroll]
            for j in 0..TM * KB / WG {
                let e = lid + WG * j;
                sa[e / KB * SA + e % KB] = va[j];
            }
            #[unroll]
            for j in 0..KB * TN / WG {
                let e = lid + WG * j;
                sb[e / tn * SB + e % tn] = vb[j];
            }
            workgroup_barrier();
        }
        let inside = row0 + tm <= m && col0 + tn <= n;
        #[unroll]
        for i in 0..4 {
            #[unroll]
            for j in 0..4 {
                if i < fm && j < fn_ {
                    let (r, cc) = (row0 + sr + 16 * i, col0 + scol + 16 * j);
                    if inside {
                        acc[4 * i + j].store_row_major(&mut c[r * n + cc], n);
                    } else {
                        acc[4 * i + j].store_row_major(&mut sc[sid * 256], 16);
                        workgroup_barrier();
                        #[unroll]
                        for e in 0..8 {
                            let x = lane * 8 + e;
                            if r + x / 16 < m && cc + x % 16 < n {
                                c[(r + x / 16) * n + cc + x % 16] = sc[sid * 256 + x];
                            }
                        }
                        workgroup_barrier();
                    }
                }
            }
        }
    }
}

/// `C = A·B` without cooperative matrices: one element of `C` an invocation, `f32`
/// `mul_add`s over `k` in order.
#[forge_kernel(crate = ::forge_core, threads = (n, m), workgroup = (16, 16), ext = false,
    tune(workgroup = [(16, 16), (32, 8)]),
    reference = gemm_f16_reference, tolerance(abs = 1e-3, rel = 1e-3),
    case(m = 16, k = 16, n = 16), case(m = 7, k = 13, n = 29), case(m = 130, k = 37, n = 133),
    cost(bytes = 2 * (m * k + k * n) + 4 * m * n, flops = 2 * m * k * n))]
pub fn gemm_f16_simt(
    a: &[f16; m * k],
    b: &[f16; k * n],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    let g = global_id();
    if g.x < n && g.y < m {
        let mut s = 0.0f32;
        for p in 0..k {
            s = (a[g.y * k + p] as f32).mul_add(b[p * n + g.x] as f32, s);
        }
        c[g.y * n + g.x] = s;
    }
}

/// The independent reference: a triple loop in f64, rounded once at the end.
pub fn gemm_f16_reference(
    a: &[f16],
    b: &[f16],
    m: u32,
    k: u32,
    n: u32,
) -> Result<Vec<f32>, ForgeError> {
    let (m, k, n) = (m as usize, k as usize, n as usize);
    let mut c = vec![0.0f32; m * n];
    for (i, row) in c.chunks_mut(n).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (0..k)
                .map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())
                .sum::<f64>() as f32;
        }
    }
    Ok(c)
}

/// `rt.gemm_f16(&a, &b, m, k, n)`.
pub trait GemmF16Ext: BorrowMut<ForgeRuntime> {
    /// `C = A·B` (row-major, `f32` `m×n`) by [`gemm_f16`] where the device has cooperative
    /// matrices, else by [`gemm_f16_simt`]. Any `m`, `k`, `n` ≥ 1. Errors: a slice whose length is not `m·k` or `k·n`
    /// ([`ForgeError::LengthMismatch`]), a zero dimension ([`ForgeError::EmptyWork`]), a
    /// dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let h = |v: &[f32]| v.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>();
    /// let (a, b) = (h(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), h(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]));
    /// assert_eq!(rt.gemm_f16(&a, &b, 2, 3, 2)?, vec![58.0, 64.0, 139.0, 154.0]);
    /// assert!(rt.gemm_f16(&a, &b, 2, 0, 2).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn gemm_f16(
        &mut self,
        a: &[f16],
        b: &[f16],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let [m, k, n] = dims(gemm_f16::NAME, [("m", m), ("k", k), ("n", n)])?;
        let rt = self.borrow_mut();
        if rt.supports(Feature::CooperativeMatrix) {
            gemm_f16::run(rt, a, b, m, k, n)
        } else {
            gemm_f16_simt::run(rt, a, b, m, k, n)
        }
    }
}

impl GemmF16Ext for ForgeRuntime {}
