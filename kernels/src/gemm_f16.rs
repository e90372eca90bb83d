//! `C = A·B` for row-major `f16` `A` (`m×k`) and `B` (`k×n`), accumulated and returned in
//! `f32`: on tensor cores through cooperative matrices ([`gemm_f16`]: needs
//! `EXPERIMENTAL_COOPERATIVE_MATRIX` and 32-lane subgroups), or without them
//! ([`gemm_f16_simt`], one output an invocation: lavapipe certifies it).
//! [`GemmF16Ext::gemm_f16`] takes the first where the device has the feature: a device
//! feature, not a tuning choice, picks the path, as a kernel's features hold for all its
//! schedules.
//!
//! `gemm_f16`: `A` and `B` are read as `HVec8`s (eight halves, 16 bytes, one `cp.async.cg`
//! each on CUDA; `k` and `n` multiples of 8: [`GemmF16Ext::gemm_f16`] pads other shapes on
//! the host). A workgroup of 128 or 256 (4 or 8 subgroups, in rows of 2) computes a
//! `TM×TN` tile of `C` (knobs: 64×64 up to 256×128) in steps of `KB` (16 or 32) along `k`.
//! Each step's slices of `A` and `B` go to one stage of a ring of `S` (2 or 3) in workgroup
//! memory, zero past the edges, by asynchronous copies (`async_copy`): while the subgroups
//! multiply step `t`, the copies of the next `S - 1` steps are in flight (on CUDA; in WGSL a
//! copy completes at once), and one `async_wait` a step, which is a barrier, suffices. A
//! subgroup's accumulators (up to 4×4 fragments of 16×16) are a register array. Interior
//! tiles store them straight to `C`; a tile over the edge goes through `sc`, 1 KiB a
//! subgroup. The tuning space's `keep` holds each subgroup to 1..=4 fragments a side
//! (`TM <= WG`), and to tiles at most twice as tall as wide. The declared schedule (64×64,
//! `KB = 16`, `S = 2`) keeps to the portable 16 KiB; the tuned ones take up to 94 KiB, and
//! each adapter runs those it holds (Vulkan on the H100 and H200 offers 48 KiB).
//! The book's performance chapter ("gemm_f16") has the measured rates and what limits them.
//!
//! Rounding: the oracle forms each 16-deep step exactly and rounds to `f32` once
//! (`oracle::coop`); tensor cores round inside a step, and the fallback rounds each
//! `mul_add`: both within `tolerance(abs = 1e-3, rel = 1e-3)`.

use crate::dims::{check_len, dims};
use forge_core::vectors::HVec8;
#[cfg(doc)]
use forge_core::ForgeError;
use forge_core::{f16, Feature, ForgeRuntime, Result};
use forge_macros::forge_kernel;
use std::borrow::BorrowMut;

/// `C = A·B` on cooperative matrices, `A` (`m×k`) and `B` (`k×n`) as rows of `HVec8`s:
/// `k` and `n` must be multiples of 8.
#[forge_kernel(crate = ::forge_core, workgroup = 128,
    threads = m.div_ceil(TM) * n.div_ceil(TN) * WG, ext = false,
    knobs(TM = 64, TN = 64, KB = 16, PAD = 8, S = 2),
    tune(workgroup = [128, 256], TM = [64, 128, 256], TN = [64, 128], KB = [16, 32], PAD = [8],
        S = [2, 3], keep = TM <= WG && TN <= TM && TM <= 2 * TN),
    reference = gemm_f16_reference_vec, tolerance(abs = 1e-3, rel = 1e-3),
    case(m = 16, k = 16, n = 16), case(m = 7, k = 16, n = 24), case(m = 128, k = 48, n = 256),
    case(m = 130, k = 40, n = 136), case(m = 67, k = 200, n = 8), case(m = 64, k = 160, n = 64),
    case(m = 300, k = 32, n = 136),
    cost(bytes = 2 * (m * k + k * n) + 4 * m * n, flops = 2 * m * k * n))]
pub fn gemm_f16(
    a: &[HVec8; m * k / 8],
    b: &[HVec8; k * n / 8],
    #[out] c: &mut [f32; m * n],
    m: u32,
    k: u32,
    n: u32,
) {
    // The tile is `TM×TN` (a knob each). Staged rows are `PAD` halves longer than they
    // hold, so that a fragment's rows fall on different banks; the buffers hold `HVec8`s
    // (16 bytes, one `cp.async` each on CUDA), so row strides count them (`SAV`, `SBV`),
    // and each of the `S` stages of the ring holds one step's slices (`SA`, `SB` `HVec8`s).
    const SAV: u32 = (KB + PAD) / 8;
    const SBV: u32 = (TN + PAD) / 8;
    const SA: u32 = TM * SAV;
    const SB: u32 = KB * SBV;
    // A step's slices in `HVec8`s (`NA`, `NB`), and each invocation's share, rounded up:
    // a 64×16 slice is 128 of them, half a copy each for 256 invocations. `FA`/`FB` are 0
    // where every invocation's share is whole, and no copy then tests `e < NA`.
    const NA: u32 = TM * KB / 8;
    const NB: u32 = KB * TN / 8;
    const LA: u32 = (NA + WG - 1) / WG;
    const LB: u32 = (NB + WG - 1) / WG;
    const FA: u32 = NA % WG;
    const FB: u32 = NB % WG;
    // The `WG / 32` subgroups stand in `WG / 64` rows by 2, each owning `FM` by `FN`
    // fragments of 16×16 (`keep` holds both to 1..=4: `TM <= WG`, `TN` 64 or 128).
    const FM: u32 = TM * 4 / WG;
    const FN: u32 = TN / 32;
    #[shared]
    let mut sa = [HVec8::ZERO; S * SA];
    #[shared]
    let mut sb = [HVec8::ZERO; S * SB];
    #[shared]
    let mut sc = [0.0f32; WG * 8];
    let lid = local_index();
    let sid = subgroup_id();
    let lane = subgroup_invocation_id();
    let sr = (sid >> 1) * (16 * FM);
    let scol = (sid & 1) * (TN / 2);
    let tiles_n = n.div_ceil(TN);
    let (k8, n8) = (k / 8, n / 8);
    // One workgroup a tile, no grid stride: naga holds cooperative operations to control
    // flow it can prove uniform, and it sees every `var`, so a tile counter, as varying.
    // (The grid may have more workgroups than tiles, when it is folded past 65,535.)
    let tile = workgroup_index();
    if tile < m.div_ceil(TM) * tiles_n {
        let row0 = (tile / tiles_n) * TM;
        let col0 = (tile % tiles_n) * TN;
        let steps = k.div_ceil(KB);
        let inside = row0 + TM <= m && col0 + TN <= n;
        let mut acc = [CoopC::zeroed(); FM * FN];
        // Step `i`'s slices go to stage `i % S` of the ring, copied asynchronously: `A`'s
        // rows `row0..`, columns `i·KB..`; `B`'s rows `i·KB..`, columns `col0..`. Past `m`,
        // `k` and `n` a zero is stored instead (whole `HVec8`s: `k` and `n` are multiples
        // of 8); a whole step of an interior tile, most of the work, copies with no test.
        // Turn `i` stages step `i` and multiplies step `t = i - (S - 1)`, so that the copies
        // of `S - 1` steps are in flight behind each multiply; the first `S - 1` turns only
        // stage.
        for i in 0..steps + S - 1 {
            // Each wait closes the batch of the step staged last and, as a barrier, means
            // every subgroup is done with step `t - 1`, whose stage is refilled next. With
            // `S = 2` step `t` has landed after it; with `S = 3` one batch may stay in
            // flight, step `t + 1`'s. (The first wait has nothing to close.)
            if S == 2 {
                async_wait(0);
            } else {
                async_wait(1);
            }
            if i < steps {
                let (ba, bb) = ((i % S) * SA, (i % S) * SB);
                let whole = inside && (i + 1) * KB <= k;
                // One body, unrolled twice: copy 0 stages a whole step of an interior tile
                // with no test, copy 1 any other step, testing each copy.
                #[unroll]
                for c in 0..2 {
                    let tested = c == 1;
                    if (!tested && whole) || (tested && !whole) {
                        #[unroll]
                        for j in 0..LA {
                            let e = lid + WG * j;
                            if FA == 0 || e < NA {
                                let (r, q) = (row0 + e / (KB / 8), i * (KB / 8) + e % (KB / 8));
                                let at = ba + e / (KB / 8) * SAV + e % (KB / 8);
                                if !tested || (r < m && q < k8) {
                                    async_copy(&mut sa[at], &a[r * k8 + q]);
                                } else {
                                    sa[at] = HVec8::ZERO;
                                }
                            }
                        }
                        #[unroll]
                        for j in 0..LB {
                            let e = lid + WG * j;
                            if FB == 0 || e < NB {
                                let (p, q) = (i * KB + e / (TN / 8), col0 / 8 + e % (TN / 8));
                                let at = bb + e / (TN / 8) * SBV + e % (TN / 8);
                                if !tested || (p < k && q < n8) {
                                    async_copy(&mut sb[at], &b[p * n8 + q]);
                                } else {
                                    sb[at] = HVec8::ZERO;
                                }
                            }
                        }
                    }
                }
            }
            if i + 1 < S {
                continue;
            }
            let t = i + 1 - S;
            let (oa, ob) = ((t % S) * SA, (t % S) * SB);
            #[unroll]
            for kk in 0..KB / 16 {
                let mut fa = [CoopA::zeroed(); FM];
                #[unroll]
                for i in 0..FM {
                    fa[i] = CoopA::load_row_major(&sa[oa + (sr + 16 * i) * SAV + 2 * kk], SAV);
                }
                #[unroll]
                for j in 0..FN {
                    let fb =
                        CoopB::load_row_major(&sb[ob + 16 * kk * SBV + (scol + 16 * j) / 8], SBV);
                    #[unroll]
                    for i in 0..FM {
                        acc[FN * i + j] = fa[i].mul_add(fb, acc[FN * i + j]);
                    }
                }
            }
        }
        #[unroll]
        for i in 0..FM {
            #[unroll]
            for j in 0..FN {
                let (r, cc) = (row0 + sr + 16 * i, col0 + scol + 16 * j);
                if inside {
                    acc[FN * i + j].store_row_major(&mut c[r * n + cc], n);
                } else {
                    acc[FN * i + j].store_row_major(&mut sc[sid * 256], 16);
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
pub fn gemm_f16_reference(a: &[f16], b: &[f16], m: u32, k: u32, n: u32) -> Result<Vec<f32>> {
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

/// [`gemm_f16`]'s reference: [`gemm_f16_reference`] on the halves of the `HVec8`s.
pub fn gemm_f16_reference_vec(
    a: &[HVec8],
    b: &[HVec8],
    m: u32,
    k: u32,
    n: u32,
) -> Result<Vec<f32>> {
    gemm_f16_reference(a.as_flattened(), b.as_flattened(), m, k, n)
}

/// `rows × cols` halves as rows of `cols8 = cols.div_ceil(8)` `HVec8`s, zero past `cols`:
/// borrowed where `cols` is a multiple of 8 (`[f16; 8]` is aligned as `f16` is, so any
/// slice of halves casts).
fn rows_of_octets(x: &[f16], rows: usize, cols: usize) -> std::borrow::Cow<'_, [HVec8]> {
    if cols % 8 == 0 {
        return std::borrow::Cow::Borrowed(bytemuck::cast_slice(x));
    }
    let cols8 = cols.div_ceil(8);
    let mut out = vec![[f16::ZERO; 8]; rows * cols8];
    for (dst, src) in out.chunks_mut(cols8).zip(x.chunks(cols)) {
        dst.as_flattened_mut()[..cols].copy_from_slice(src);
    }
    std::borrow::Cow::Owned(out)
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
    fn gemm_f16(&mut self, a: &[f16], b: &[f16], m: usize, k: usize, n: usize) -> Result<Vec<f32>> {
        let [m32, k32, n32] = dims(gemm_f16::NAME, [("m", m), ("k", k), ("n", n)])?;
        let rt = self.borrow_mut();
        if !rt.supports(Feature::CooperativeMatrix) {
            return gemm_f16_simt::run(rt, a, b, m32, k32, n32);
        }
        check_len(gemm_f16::NAME, "a", "m * k", m as u128 * k as u128, a.len())?;
        check_len(gemm_f16::NAME, "b", "k * n", k as u128 * n as u128, b.len())?;
        // The kernel reads rows of `HVec8`s: `k` and `n` not multiples of 8 are padded with
        // zeros here (`k` by zero columns of `A` and zero rows of `B`, which add nothing;
        // `n` by zero columns of `B`, whose results are dropped). Aligned shapes, the common
        // case, are borrowed as they are.
        let (k8, n8) = (k.div_ceil(8) * 8, n.div_ceil(8) * 8);
        let a8 = rows_of_octets(a, m, k);
        let mut b8 = rows_of_octets(b, k, n);
        if k8 != k {
            b8.to_mut().resize(k8 * n8 / 8, [f16::ZERO; 8]);
        }
        let [k8, n8] = dims(gemm_f16::NAME, [("k", k8), ("n", n8)])?;
        let c = gemm_f16::run(rt, &a8, &b8, m32, k8, n8)?;
        if n8 == n32 {
            return Ok(c);
        }
        Ok(c.chunks(n8 as usize)
            .flat_map(|row| &row[..n])
            .copied()
            .collect())
    }
}

impl GemmF16Ext for ForgeRuntime {}
