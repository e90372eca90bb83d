//! Fast Fourier transforms of complex `f32` data: forward, inverse and batched, for every
//! power-of-two length from 1 to 2^22.
//!
//! # Data
//! Complex values are interleaved `(re, im)` pairs of `f32`: a transform of length `n`
//! takes `2n` floats. The forward transform is `X[k] = Σ_j x[j]·e^(-2πi·jk/n)`, unscaled;
//! the inverse is `x[j] = (1/n)·Σ_k X[k]·e^(+2πi·jk/n)`, normalised as numpy's `ifft`.
//! A batch holds `batch` transforms one after another. On the device a complex value is
//! one `Vec2`.
//!
//! # Passes
//! A transform is a Stockham FFT whose radices are whole sub-transforms computed by one
//! kernel, [`fft_pass`] or [`fft_pass16`] (see "Two kernels"). A pass of radix `m` (a power
//! of two up to [`FFT_MAX_LOCAL`] = 4096) over transforms of length `n`, after passes whose
//! radices multiply to `ns`, takes for each column `j` in `0..n/m` the `m` elements
//! `x[j + r·n/m]`, multiplies element `r` by `e^(∓2πi·r·(j mod ns)/(ns·m))`, transforms
//! them, and stores output `r` at `(j / ns)·ns·m + (j mod ns) + r·ns`. After the last pass
//! the result is in natural order: no transpose, no bit reversal in memory.
//!
//! A length up to 4096 takes one pass (`m = n`, `ns = 1`): one read and one write of the
//! data. A longer one takes two or three passes of radices up to 1024 (2^20 as 1024·1024),
//! and every pass reads and writes runs of contiguous complex values across the columns a
//! workgroup holds. All passes are recorded on device tensors and submitted together
//! ([`fft_record`]).
//!
//! # Two kernels
//! [`fft_pass16`] computes a pass of radix 16 to 4096 with the butterflies in registers:
//! each invocation holds 16 values of a column, stages of radix 16 (the first of radix
//! `2^(log2 m mod 4)` when that is not 0) are DFTs of 16 points in registers, and the values
//! go between stages through workgroup memory (see its docs). [`fft_pass`], below, runs
//! every stage in workgroup memory and takes every radix; [`fft_record`] uses [`fft_pass16`]
//! for the passes of radix 16 or more ([`fft_plan`]), [`fft_pass`] for the others, and
//! [`fft_record_plan`] takes a plan ([`FftPlan`]) to compare them. On the H200,
//! [`fft_pass16`] took 0.62× the time of [`fft_pass`] for 1024×16384 and 0.47× for
//! 4096×4096.
//!
//! # Inside a pass of `fft_pass`
//! A workgroup holds `slots = max(WG·ITEMS, m)` complex values (at most 4096: 32 KiB) of
//! `slots / m` consecutive columns. It loads them with the mapping that makes neighbouring
//! invocations read neighbouring addresses (whole rows when `n = m`, across columns
//! otherwise), runs radix-4 decimation-in-frequency stages in place (a radix-2 stage last
//! when `log2 m` is odd), one barrier per stage, and stores the outputs, reading them at
//! their digit-reversed slots, again with the coalesced mapping. Slots are XOR-swizzled so
//! that the strided patterns of the last stages and of the column mapping spread over the
//! memory banks.
//!
//! # Twiddle factors
//! Twiddles are computed in the kernel by one helper, `twiddle`, not with `sin`/`cos`
//! (whose accuracy WGSL only bounds loosely): the angle, a multiple of `2π/2^30`, is
//! reduced to `[0, π/4]` with integer arithmetic, and sine and cosine there are Taylor
//! polynomials accurate to below half an `f32` ulp. A radix-4 butterfly computes `w` so and
//! `w²`, `w³` as products; a stage of [`fft_pass16`] computes `w`, `w²`, `w⁴` and `w⁸` so
//! and the other powers up to `w¹⁵` with at most three products, and the twiddles inside
//! its DFTs of 16 points are constants (`cos` and `sin` of multiples of `π/8`, rounded to
//! `f32`). The GPU and the oracle run the same arithmetic; every schedule
//! computes every element with the same operations in the same order.
//!
//! # Accuracy
//! The error of an output grows like `log2 n`. The tests hold every real and imaginary
//! part of every output to `|X̂[k] − X[k]| ≤ ε·(log2 n + 1)·‖x‖₂`, with `ε = 2^-23` and `x`
//! the transform's input (times `1/n` for the inverse), at every length from 1 to 2^20.
//! `ifft(fft(x))` is within `8·ε·(log2 n + 1)` times the RMS value of `x`. Certification
//! checks each pass against [`fft_pass_reference`], a direct `O(m²)` DFT in `f64` of each
//! column with the pass's twiddles; the tests check whole transforms against `rustfft`.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime, GpuTensor, Schedule};
use forge_macros::forge_module;

pub use passes::{fft_pass, fft_pass16};

/// The longest transform one pass computes in workgroup memory.
pub const FFT_MAX_LOCAL: usize = 4096;

/// The longest transform.
pub const FFT_MAX_LEN: usize = 1 << 22;

/// The largest radix of a pass of a transform longer than [`FFT_MAX_LOCAL`]: with 2048
/// slots a workgroup then holds at least two columns. On the H200, 2^20 as 1024·1024 took
/// 0.8× the time of 128·128·64 (fewer passes outweigh the shorter contiguous runs).
const FFT_MULTI_PASS_RADIX_LOG: u32 = 10;

#[forge_module]
mod passes {
    use super::*;

    /// `e^(sign·2πi·e/2^30)`: the twiddle of an angle of `e` units of `2^-30` turns, with
    /// `sign` ±1. The angle is reduced to `[0, π/4]` exactly; sine and cosine there are
    /// Taylor polynomials.
    #[forge_fn]
    fn twiddle(e: u32, sign: f32) -> Vec2 {
        let quad = e >> 28;
        let u = e & 0x0fffffff;
        let swap = u > 0x08000000;
        let v = if swap { 0x10000000 - u } else { u };
        let x = v as f32 * 5.8516725e-9;
        let x2 = x * x;
        let mut ps = x2.mul_add(2.7557319e-6, -1.984127e-4);
        ps = x2.mul_add(ps, 8.333334e-3);
        ps = x2.mul_add(ps, -0.16666667);
        ps = x2.mul_add(ps, 1.0);
        let sn = x * ps;
        let mut pc = x2.mul_add(-2.755732e-7, 2.4801588e-5);
        pc = x2.mul_add(pc, -1.3888889e-3);
        pc = x2.mul_add(pc, 4.1666668e-2);
        pc = x2.mul_add(pc, -0.5);
        let cs = x2.mul_add(pc, 1.0);
        let c1 = if swap { sn } else { cs };
        let s1 = if swap { cs } else { sn };
        let mut ct = c1;
        let mut st = s1;
        if quad == 1 {
            ct = -s1;
            st = c1;
        } else if quad == 2 {
            ct = -c1;
            st = -s1;
        } else if quad == 3 {
            ct = s1;
            st = -c1;
        }
        Vec2::new(ct, sign * st)
    }

    /// The complex product `a·b`.
    #[forge_fn]
    fn cmul(a: Vec2, b: Vec2) -> Vec2 {
        Vec2::new(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x)
    }

    /// The workgroup slot where logical slot `i` lives. The XOR only mixes bits at or above
    /// bit 4 into bits 0..4, so it is a permutation; it spreads the strided accesses of the
    /// last stages (bits 4..8) and of the column mapping (the column, `i >> log_m`, when
    /// `m ≥ 16`) over the banks.
    #[forge_fn]
    fn swizzle(i: u32, log_m: u32) -> u32 {
        let mut x = i >> 4;
        if log_m >= 4 {
            x = x ^ (i >> log_m);
        }
        i ^ (x & 15)
    }

    /// The slot that holds output `k` after the decimation-in-frequency stages: radix-4
    /// digits from the top of the slot index (a radix-2 digit last when `log_m` is odd)
    /// are the output's digits from the bottom.
    #[forge_fn]
    fn output_slot(k: u32, log_m: u32) -> u32 {
        if log_m == 0 {
            return 0;
        }
        let odd = log_m & 1;
        let r = k.reverse_bits() >> (32 - log_m);
        let hi = r >> odd;
        let swapped = ((hi & 0x55555555) << 1) | ((hi >> 1) & 0x55555555);
        (swapped << odd) | (r & odd)
    }

    /// Where slot `s` of the workgroup's columns comes from: `(column, row)`. Rows (`n = m`)
    /// are contiguous in memory, so invocations walk along them; otherwise (`across`)
    /// invocations walk across the workgroup's adjacent columns.
    #[forge_fn]
    fn place(s: u32, log_mm: u32, log_c: u32, across: bool) -> UVec2 {
        let cols = 1u32 << log_c;
        let mm = 1u32 << log_mm;
        select(
            UVec2::new(s >> log_mm, s & (mm - 1)),
            UVec2::new(s & (cols - 1), s >> log_c),
            across,
        )
    }

    /// The index in the data of element `r` of column `t` of a pass: column `j` of
    /// transform `b` (`t = b·n/m + j`) reads `b·n + j + r·n/m`.
    #[forge_fn]
    fn column_index(t: u32, r: u32, log_q: u32, log_n: u32) -> u32 {
        ((t >> log_q) << log_n) + (t & ((1u32 << log_q) - 1)) + (r << log_q)
    }

    /// The index in the data where output `r` of column `t` goes:
    /// `b·n + (j / ns)·ns·m + (j mod ns) + r·ns`.
    #[forge_fn]
    fn output_index(t: u32, r: u32, log_q: u32, log_n: u32, log_ns: u32, log_tw: u32) -> u32 {
        let j = t & ((1u32 << log_q) - 1);
        ((t >> log_q) << log_n)
            + ((j >> log_ns) << log_tw)
            + (j & ((1u32 << log_ns) - 1))
            + (r << log_ns)
    }

    /// A loaded element `x` (row `r` of column `t`), twiddled for the pass when `ns > 1`.
    /// For a column of 4096 (`halves = 2`), `y` is row `r + 2048`, and the result is the
    /// first radix-2 stage's even (`half = 0`) or odd output.
    #[forge_fn]
    fn loaded(
        x: Vec2,
        y: Vec2,
        t: u32,
        r: u32,
        half: u32,
        halves: u32,
        ns: u32,
        log_q: u32,
        log_tw: u32,
        log_m: u32,
        sign: f32,
    ) -> Vec2 {
        let mut a = x;
        let mut b = y;
        if ns > 1 {
            let j = (t & ((1u32 << log_q) - 1)) & (ns - 1);
            a = cmul(a, twiddle((r * j) << (30 - log_tw), sign));
            if halves > 1 {
                b = cmul(b, twiddle(((r + 2048) * j) << (30 - log_tw), sign));
            }
        }
        if halves > 1 {
            if half == 0 {
                a = a + b;
            } else {
                a = cmul(a - b, twiddle(r << (30 - log_m), sign));
            }
        }
        a
    }

    /// One Stockham pass: for every column `j` of every transform of length `n` in `input`
    /// (`len / n` transforms), the `m` elements `j + r·n/m`, twiddled by
    /// `e^(∓2πi·r·(j mod ns)/(ns·m))`, transformed, scaled by `scale` and stored at
    /// `(j / ns)·ns·m + (j mod ns) + r·ns`. `m`, `n` and `ns` are powers of two, `m ≤ 4096`,
    /// `ns·m ≤ n`; the exponent's sign is `+` when `inverse ≠ 0`. With `m = n` (`ns = 1`)
    /// this is a whole batch of transforms.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = len, ext = false,
        tune(workgroup = [256, 128, 64], items = [8, 4]),
        reference = fft_pass_reference, tolerance(abs = 1e-4, rel = 1e-4),
        case(len = 3, m = 1, n = 1, ns = 1, inverse = 0, scale = 1.0),
        case(len = 2, m = 2, n = 2, ns = 1, inverse = 1, scale = 0.5),
        case(len = 40, m = 8, n = 8, ns = 1, inverse = 0, scale = 1.0),
        case(len = 96, m = 32, n = 32, ns = 1, inverse = 0, scale = 1.0),
        case(len = 2048, m = 1024, n = 1024, ns = 1, inverse = 1, scale = 1.0 / 1024.0),
        case(len = 4096, m = 2048, n = 2048, ns = 1, inverse = 0, scale = 1.0),
        case(len = 8192, m = 4096, n = 4096, ns = 1, inverse = 1, scale = 1.0 / 4096.0),
        case(len = 8192, m = 128, n = 8192, ns = 1, inverse = 0, scale = 1.0),
        case(len = 8192, m = 64, n = 8192, ns = 128, inverse = 1, scale = 1.0 / 8192.0),
        case(len = 16384, m = 4096, n = 8192, ns = 1, inverse = 0, scale = 1.0),
        case(len = 16384, m = 2, n = 8192, ns = 4096, inverse = 0, scale = 1.0),
        case(len = 1024, m = 16, n = 512, ns = 1, inverse = 0, scale = 1.0),
        case(len = 1024, m = 32, n = 512, ns = 16, inverse = 0, scale = 1.0),
        case(len = 128, m = 2, n = 64, ns = 32, inverse = 1, scale = 1.0))]
    pub fn fft_pass(
        input: &[Vec2; len],
        #[out] output: &mut [Vec2; len],
        len: u32,
        m: u32,
        n: u32,
        ns: u32,
        inverse: u32,
        scale: f32,
    ) {
        #[shared]
        let mut buf = [Vec2::ZERO; 2048];
        let lid = local_index();
        // Every size is a power of two: shifts and masks, not divisions.
        let log_m = m.trailing_zeros();
        let log_n = n.trailing_zeros();
        let log_ns = ns.trailing_zeros();
        let log_q = log_n - log_m;
        // Workgroup memory holds columns of `mm ≤ 2048`; a column of 4096 goes through it
        // as two halves (even and odd outputs), after a first radix-2 stage in registers.
        let log_mm = log_m.min(11);
        let mm = 1u32 << log_mm;
        let halves = m >> log_mm;
        let slots = (WG * ITEMS).max(mm);
        let log_c = slots.trailing_zeros() - log_mm;
        let cols = 1u32 << log_c;
        let count = len >> log_m;
        let first = workgroup_index() << log_c;
        let sign = if inverse != 0 { 1.0f32 } else { -1.0f32 };
        let log_tw = log_ns + log_m;
        // When a column is longer than `WG·ITEMS`, the launch has more workgroups than
        // needed.
        if first < count {
            let mut half = 0u32;
            while half < halves {
                // Load, twiddled, four slots at a time so that four loads are in flight.
                // A whole batch of short rows (`n = m ≤ 2048`) is one contiguous range.
                let rows = log_q == 0 && halves == 1;
                let base = first << log_mm;
                let mut s0 = lid;
                while rows && s0 < slots {
                    let (s1, s2, s3) = (s0 + WG, s0 + 2 * WG, s0 + 3 * WG);
                    let last = len - 1;
                    let x0 = input[(base + s0).min(last)];
                    let x1 = input[(base + s1).min(last)];
                    let x2 = input[(base + s2).min(last)];
                    let x3 = input[(base + s3).min(last)];
                    if base + s0 < len {
                        buf[swizzle(s0, log_mm)] = x0;
                    }
                    if s1 < slots && base + s1 < len {
                        buf[swizzle(s1, log_mm)] = x1;
                    }
                    if s2 < slots && base + s2 < len {
                        buf[swizzle(s2, log_mm)] = x2;
                    }
                    if s3 < slots && base + s3 < len {
                        buf[swizzle(s3, log_mm)] = x3;
                    }
                    s0 += 4 * WG;
                }
                let across = log_q > 0;
                let far = mm << log_q;
                let mut s0 = lid;
                while !rows && s0 < slots {
                    let (s1, s2, s3) = (s0 + WG, s0 + 2 * WG, s0 + 3 * WG);
                    // Slots past the end are clamped for the arithmetic, and skipped.
                    let top = slots - 1;
                    let p0 = place(s0, log_mm, log_c, across);
                    let p1 = place(s1.min(top), log_mm, log_c, across);
                    let p2 = place(s2.min(top), log_mm, log_c, across);
                    let p3 = place(s3.min(top), log_mm, log_c, across);
                    let (t0, t1) = (first + p0.x, first + p1.x);
                    let (t2, t3) = (first + p2.x, first + p3.x);
                    let ok0 = t0 < count;
                    let ok1 = s1 < slots && t1 < count;
                    let ok2 = s2 < slots && t2 < count;
                    let ok3 = s3 < slots && t3 < count;
                    let last = count - 1;
                    let g0 = column_index(t0.min(last), p0.y, log_q, log_n);
                    let g1 = column_index(t1.min(last), p1.y, log_q, log_n);
                    let g2 = column_index(t2.min(last), p2.y, log_q, log_n);
                    let g3 = column_index(t3.min(last), p3.y, log_q, log_n);
                    let x0 = input[g0];
                    let x1 = input[g1];
                    let x2 = input[g2];
                    let x3 = input[g3];
                    let (mut y0, mut y1, mut y2, mut y3) = (x0, x1, x2, x3);
                    if halves > 1 {
                        y0 = input[g0 + far];
                        y1 = input[g1 + far];
                        y2 = input[g2 + far];
                        y3 = input[g3 + far];
                    }
                    if ok0 {
                        let v = loaded(
                            x0, y0, t0, p0.y, half, halves, ns, log_q, log_tw, log_m, sign,
                        );
                        buf[swizzle((p0.x << log_mm) + p0.y, log_mm)] = v;
                    }
                    if ok1 {
                        let v = loaded(
                            x1, y1, t1, p1.y, half, halves, ns, log_q, log_tw, log_m, sign,
                        );
                        buf[swizzle((p1.x << log_mm) + p1.y, log_mm)] = v;
                    }
                    if ok2 {
                        let v = loaded(
                            x2, y2, t2, p2.y, half, halves, ns, log_q, log_tw, log_m, sign,
                        );
                        buf[swizzle((p2.x << log_mm) + p2.y, log_mm)] = v;
                    }
                    if ok3 {
                        let v = loaded(
                            x3, y3, t3, p3.y, half, halves, ns, log_q, log_tw, log_m, sign,
                        );
                        buf[swizzle((p3.x << log_mm) + p3.y, log_mm)] = v;
                    }
                    s0 += 4 * WG;
                }
                workgroup_barrier();

                // Radix-4 decimation in frequency, in place: span `L`, quarter `L/4`.
                let mut log_span = log_mm;
                while log_span >= 2 {
                    let log_quarter = log_span - 2;
                    let quarter = 1u32 << log_quarter;
                    let mut t = lid;
                    while t < (slots >> 2) {
                        let a = t & (quarter - 1);
                        let base = ((t >> log_quarter) << log_span) + a;
                        let i0 = swizzle(base, log_mm);
                        let i1 = swizzle(base + quarter, log_mm);
                        let i2 = swizzle(base + 2 * quarter, log_mm);
                        let i3 = swizzle(base + 3 * quarter, log_mm);
                        let x0 = buf[i0];
                        let x1 = buf[i1];
                        let x2 = buf[i2];
                        let x3 = buf[i3];
                        let t0 = x0 + x2;
                        let t1 = x0 - x2;
                        let t2 = x1 + x3;
                        let t3 = x1 - x3;
                        // `sign·i·t3`
                        let it3 = Vec2::new(-sign * t3.y, sign * t3.x);
                        let mut y1 = t1 + it3;
                        let mut y2 = t0 - t2;
                        let mut y3 = t1 - it3;
                        if log_span > 2 {
                            let w1 = twiddle(a << (30 - log_span), sign);
                            let w2 = cmul(w1, w1);
                            let w3 = cmul(w1, w2);
                            y1 = cmul(y1, w1);
                            y2 = cmul(y2, w2);
                            y3 = cmul(y3, w3);
                        }
                        buf[i0] = t0 + t2;
                        buf[i1] = y1;
                        buf[i2] = y2;
                        buf[i3] = y3;
                        t += WG;
                    }
                    workgroup_barrier();
                    log_span -= 2;
                }
                // A last radix-2 stage when `log2 mm` is odd: pairs, no twiddles.
                if log_span == 1 {
                    let mut t = lid;
                    while t < (slots >> 1) {
                        let i0 = swizzle(2 * t, log_mm);
                        let i1 = swizzle(2 * t + 1, log_mm);
                        let x0 = buf[i0];
                        let x1 = buf[i1];
                        buf[i0] = x0 + x1;
                        buf[i1] = x0 - x1;
                        t += WG;
                    }
                    workgroup_barrier();
                }

                // Store output `k·halves + half` of column `c` from the digit-reversed slot
                // of `k`, four at a time. The first pass (`ns = 1`) writes each column's
                // outputs contiguously; later ones write runs across columns.
                let mut s0 = lid;
                while rows && s0 < slots {
                    let (s1, s2, s3) = (s0 + WG, s0 + 2 * WG, s0 + 3 * WG);
                    let top = slots - 1;
                    let hi = !(mm - 1);
                    let (a0, a1) = (s0, s1.min(top));
                    let (a2, a3) = (s2.min(top), s3.min(top));
                    let v0 = buf[swizzle((a0 & hi) + output_slot(a0 & (mm - 1), log_mm), log_mm)];
                    let v1 = buf[swizzle((a1 & hi) + output_slot(a1 & (mm - 1), log_mm), log_mm)];
                    let v2 = buf[swizzle((a2 & hi) + output_slot(a2 & (mm - 1), log_mm), log_mm)];
                    let v3 = buf[swizzle((a3 & hi) + output_slot(a3 & (mm - 1), log_mm), log_mm)];
                    if base + s0 < len {
                        output[base + s0] = v0 * scale;
                    }
                    if s1 < slots && base + s1 < len {
                        output[base + s1] = v1 * scale;
                    }
                    if s2 < slots && base + s2 < len {
                        output[base + s2] = v2 * scale;
                    }
                    if s3 < slots && base + s3 < len {
                        output[base + s3] = v3 * scale;
                    }
                    s0 += 4 * WG;
                }
                let across = ns > 1;
                let mut s0 = lid;
                while !rows && s0 < slots {
                    let (s1, s2, s3) = (s0 + WG, s0 + 2 * WG, s0 + 3 * WG);
                    // Slots past the end are clamped for the arithmetic, and skipped.
                    let top = slots - 1;
                    let p0 = place(s0, log_mm, log_c, across);
                    let p1 = place(s1.min(top), log_mm, log_c, across);
                    let p2 = place(s2.min(top), log_mm, log_c, across);
                    let p3 = place(s3.min(top), log_mm, log_c, across);
                    let (t0, t1) = (first + p0.x, first + p1.x);
                    let (t2, t3) = (first + p2.x, first + p3.x);
                    let v0 = buf[swizzle((p0.x << log_mm) + output_slot(p0.y, log_mm), log_mm)];
                    let v1 = buf[swizzle((p1.x << log_mm) + output_slot(p1.y, log_mm), log_mm)];
                    let v2 = buf[swizzle((p2.x << log_mm) + output_slot(p2.y, log_mm), log_mm)];
                    let v3 = buf[swizzle((p3.x << log_mm) + output_slot(p3.y, log_mm), log_mm)];
                    if t0 < count {
                        let o =
                            output_index(t0, p0.y * halves + half, log_q, log_n, log_ns, log_tw);
                        output[o] = v0 * scale;
                    }
                    if s1 < slots && t1 < count {
                        let o =
                            output_index(t1, p1.y * halves + half, log_q, log_n, log_ns, log_tw);
                        output[o] = v1 * scale;
                    }
                    if s2 < slots && t2 < count {
                        let o =
                            output_index(t2, p2.y * halves + half, log_q, log_n, log_ns, log_tw);
                        output[o] = v2 * scale;
                    }
                    if s3 < slots && t3 < count {
                        let o =
                            output_index(t3, p3.y * halves + half, log_q, log_n, log_ns, log_tw);
                        output[o] = v3 * scale;
                    }
                    s0 += 4 * WG;
                }
                workgroup_barrier();
                half += 1;
            }
        }
    }

    /// The workgroup slot of `i` in [`fft_pass16`]'s exchange buffer: the XOR spreads the
    /// strided writes of its stages and the reads across adjacent columns over the banks.
    #[forge_fn]
    fn swizzle16(i: u32) -> u32 {
        i ^ (((i >> 5) ^ ((i >> 9) << 2)) & 31)
    }

    /// [`fft_pass`] with the butterflies in registers: each invocation holds 16 elements of
    /// one column and a workgroup of 256 holds `4096 / m` whole columns. The first stage is
    /// of radix `2^(log2 m mod 4)` (none when that is 0); the others are of radix 16, each an
    /// in-register DFT of 16 points (radix-4 · radix-4 with constant twiddles), with the
    /// Stockham twiddles `w^r` of the stage from four evaluations of `twiddle` and at most
    /// three products. Between stages the values go through 16 KiB of workgroup memory,
    /// real parts then imaginary parts. The elements are loaded and stored at
    /// `j + r·m/16` (`j` the invocation's place in its column): neighbouring invocations
    /// read and write neighbouring addresses along a row, or across columns for the later
    /// passes of a long transform. Same arguments and results as [`fft_pass`], for
    /// `16 ≤ m ≤ 4096`.
    #[forge_kernel(crate = ::forge_core, workgroup = 256, threads = len / 16, ext = false,
        reference = fft_pass_reference, tolerance(abs = 1e-4, rel = 1e-4),
        case(len = 48, m = 16, n = 16, ns = 1, inverse = 0, scale = 1.0),
        case(len = 96, m = 32, n = 32, ns = 1, inverse = 1, scale = 1.0 / 32.0),
        case(len = 256, m = 64, n = 64, ns = 1, inverse = 0, scale = 1.0),
        case(len = 384, m = 128, n = 128, ns = 1, inverse = 0, scale = 1.0),
        case(len = 2048, m = 1024, n = 1024, ns = 1, inverse = 1, scale = 1.0 / 1024.0),
        case(len = 6144, m = 2048, n = 2048, ns = 1, inverse = 0, scale = 1.0),
        case(len = 8192, m = 4096, n = 4096, ns = 1, inverse = 1, scale = 1.0 / 4096.0),
        case(len = 8192, m = 128, n = 8192, ns = 1, inverse = 0, scale = 1.0),
        case(len = 8192, m = 64, n = 8192, ns = 128, inverse = 1, scale = 1.0 / 8192.0),
        case(len = 16384, m = 4096, n = 8192, ns = 1, inverse = 0, scale = 1.0),
        case(len = 16384, m = 512, n = 8192, ns = 16, inverse = 0, scale = 1.0),
        case(len = 1024, m = 16, n = 512, ns = 32, inverse = 0, scale = 1.0),
        case(len = 1024, m = 32, n = 512, ns = 1, inverse = 1, scale = 1.0))]
    pub fn fft_pass16(
        input: &[Vec2; len],
        #[out] output: &mut [Vec2; len],
        len: u32,
        m: u32,
        n: u32,
        ns: u32,
        inverse: u32,
        scale: f32,
    ) {
        #[shared]
        let mut buf = [0.0f32; 4096];
        let lid = local_index();
        let log_m = m.trailing_zeros();
        let log_n = n.trailing_zeros();
        let log_ns = ns.trailing_zeros();
        let log_q = log_n - log_m;
        let log_tw = log_ns + log_m;
        // `m / 16` invocations per column, `4096 / m` columns per workgroup.
        let log_t = log_m - 4;
        let log_c = 12 - log_m;
        let count = len >> log_m;
        let sign = if inverse != 0 { 1.0f32 } else { -1.0f32 };
        // Invocation `lid` holds rows `j + k·m/16` of the workgroup's column `c`: along
        // the column for a batch of rows, across the columns otherwise.
        let across = log_q > 0;
        let c = select(lid >> log_t, lid & ((1u32 << log_c) - 1), across);
        let j = select(lid & ((1u32 << log_t) - 1), lid >> log_c, across);
        let col = (workgroup_index() << log_c) + c;
        let live = col < count;
        let tc = col.min(count - 1);
        let home = c << log_m;
        let jc = tc & ((1u32 << log_q) - 1);
        let g = ((tc >> log_q) << log_n) + jc + (j << log_q);
        let step = log_t + log_q;
        let mut v = [Vec2::ZERO; 16];
        v[0] = input[g];
        v[1] = input[g + (1u32 << step)];
        v[2] = input[g + (2u32 << step)];
        v[3] = input[g + (3u32 << step)];
        v[4] = input[g + (4u32 << step)];
        v[5] = input[g + (5u32 << step)];
        v[6] = input[g + (6u32 << step)];
        v[7] = input[g + (7u32 << step)];
        v[8] = input[g + (8u32 << step)];
        v[9] = input[g + (9u32 << step)];
        v[10] = input[g + (10u32 << step)];
        v[11] = input[g + (11u32 << step)];
        v[12] = input[g + (12u32 << step)];
        v[13] = input[g + (13u32 << step)];
        v[14] = input[g + (14u32 << step)];
        v[15] = input[g + (15u32 << step)];
        if ns > 1 {
            // The pass's twiddles: row `r` of column `j` times `w^(r·(j mod ns))`.
            let a = jc & (ns - 1);
            v[0] = cmul(
                v[0],
                twiddle(((j + (0u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[1] = cmul(
                v[1],
                twiddle(((j + (1u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[2] = cmul(
                v[2],
                twiddle(((j + (2u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[3] = cmul(
                v[3],
                twiddle(((j + (3u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[4] = cmul(
                v[4],
                twiddle(((j + (4u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[5] = cmul(
                v[5],
                twiddle(((j + (5u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[6] = cmul(
                v[6],
                twiddle(((j + (6u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[7] = cmul(
                v[7],
                twiddle(((j + (7u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[8] = cmul(
                v[8],
                twiddle(((j + (8u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[9] = cmul(
                v[9],
                twiddle(((j + (9u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[10] = cmul(
                v[10],
                twiddle(((j + (10u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[11] = cmul(
                v[11],
                twiddle(((j + (11u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[12] = cmul(
                v[12],
                twiddle(((j + (12u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[13] = cmul(
                v[13],
                twiddle(((j + (13u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[14] = cmul(
                v[14],
                twiddle(((j + (14u32 << log_t)) * a) << (30 - log_tw), sign),
            );
            v[15] = cmul(
                v[15],
                twiddle(((j + (15u32 << log_t)) * a) << (30 - log_tw), sign),
            );
        }
        let small = log_m & 3;
        // The exchange's layout for the stage just done: value `k` goes to
        // `pa + ((k & bm) << sa) + (k >> sb)` of the column.
        let mut pa = 0u32;
        let mut bm = 15u32;
        let mut sa = 0u32;
        let mut sb = 4u32;
        let mut span = 1u32;
        let mut pending = false;
        // The DFTs are written out, butterfly by butterfly with constant indices (no loops,
        // no helpers over arrays), so that the 16 values stay in registers; they were
        // generated as radix-4 (and radix-2) decimation in time, checked against a direct DFT.
        if small > 0 {
            if small == 1 {
                let s1_1 = v[0];
                let s1_2 = v[8];
                let s1_3 = s1_1 + s1_2;
                let s1_4 = s1_1 - s1_2;
                v[0] = s1_3;
                v[8] = s1_4;
                let s1_5 = v[1];
                let s1_6 = v[9];
                let s1_7 = s1_5 + s1_6;
                let s1_8 = s1_5 - s1_6;
                v[1] = s1_7;
                v[9] = s1_8;
                let s1_9 = v[2];
                let s1_10 = v[10];
                let s1_11 = s1_9 + s1_10;
                let s1_12 = s1_9 - s1_10;
                v[2] = s1_11;
                v[10] = s1_12;
                let s1_13 = v[3];
                let s1_14 = v[11];
                let s1_15 = s1_13 + s1_14;
                let s1_16 = s1_13 - s1_14;
                v[3] = s1_15;
                v[11] = s1_16;
                let s1_17 = v[4];
                let s1_18 = v[12];
                let s1_19 = s1_17 + s1_18;
                let s1_20 = s1_17 - s1_18;
                v[4] = s1_19;
                v[12] = s1_20;
                let s1_21 = v[5];
                let s1_22 = v[13];
                let s1_23 = s1_21 + s1_22;
                let s1_24 = s1_21 - s1_22;
                v[5] = s1_23;
                v[13] = s1_24;
                let s1_25 = v[6];
                let s1_26 = v[14];
                let s1_27 = s1_25 + s1_26;
                let s1_28 = s1_25 - s1_26;
                v[6] = s1_27;
                v[14] = s1_28;
                let s1_29 = v[7];
                let s1_30 = v[15];
                let s1_31 = s1_29 + s1_30;
                let s1_32 = s1_29 - s1_30;
                v[7] = s1_31;
                v[15] = s1_32;
            }
            if small == 2 {
                let s2_33 = v[0];
                let s2_34 = v[4];
                let s2_35 = v[8];
                let s2_36 = v[12];
                let s2_37 = s2_33 + s2_35;
                let s2_38 = s2_33 - s2_35;
                let s2_39 = s2_34 + s2_36;
                let s2_40 = s2_34 - s2_36;
                let s2_41 = Vec2::new(-sign * s2_40.y, sign * s2_40.x);
                let s2_42 = s2_37 + s2_39;
                let s2_43 = s2_38 + s2_41;
                let s2_44 = s2_37 - s2_39;
                let s2_45 = s2_38 - s2_41;
                v[0] = s2_42;
                v[4] = s2_43;
                v[8] = s2_44;
                v[12] = s2_45;
                let s2_46 = v[1];
                let s2_47 = v[5];
                let s2_48 = v[9];
                let s2_49 = v[13];
                let s2_50 = s2_46 + s2_48;
                let s2_51 = s2_46 - s2_48;
                let s2_52 = s2_47 + s2_49;
                let s2_53 = s2_47 - s2_49;
                let s2_54 = Vec2::new(-sign * s2_53.y, sign * s2_53.x);
                let s2_55 = s2_50 + s2_52;
                let s2_56 = s2_51 + s2_54;
                let s2_57 = s2_50 - s2_52;
                let s2_58 = s2_51 - s2_54;
                v[1] = s2_55;
                v[5] = s2_56;
                v[9] = s2_57;
                v[13] = s2_58;
                let s2_59 = v[2];
                let s2_60 = v[6];
                let s2_61 = v[10];
                let s2_62 = v[14];
                let s2_63 = s2_59 + s2_61;
                let s2_64 = s2_59 - s2_61;
                let s2_65 = s2_60 + s2_62;
                let s2_66 = s2_60 - s2_62;
                let s2_67 = Vec2::new(-sign * s2_66.y, sign * s2_66.x);
                let s2_68 = s2_63 + s2_65;
                let s2_69 = s2_64 + s2_67;
                let s2_70 = s2_63 - s2_65;
                let s2_71 = s2_64 - s2_67;
                v[2] = s2_68;
                v[6] = s2_69;
                v[10] = s2_70;
                v[14] = s2_71;
                let s2_72 = v[3];
                let s2_73 = v[7];
                let s2_74 = v[11];
                let s2_75 = v[15];
                let s2_76 = s2_72 + s2_74;
                let s2_77 = s2_72 - s2_74;
                let s2_78 = s2_73 + s2_75;
                let s2_79 = s2_73 - s2_75;
                let s2_80 = Vec2::new(-sign * s2_79.y, sign * s2_79.x);
                let s2_81 = s2_76 + s2_78;
                let s2_82 = s2_77 + s2_80;
                let s2_83 = s2_76 - s2_78;
                let s2_84 = s2_77 - s2_80;
                v[3] = s2_81;
                v[7] = s2_82;
                v[11] = s2_83;
                v[15] = s2_84;
            }
            if small == 3 {
                let s3_85 = v[0];
                let s3_86 = v[2];
                let s3_87 = v[4];
                let s3_88 = v[6];
                let s3_89 = v[8];
                let s3_90 = v[10];
                let s3_91 = v[12];
                let s3_92 = v[14];
                let s3_93 = s3_85 + s3_89;
                let s3_94 = s3_85 - s3_89;
                let s3_95 = s3_87 + s3_91;
                let s3_96 = s3_87 - s3_91;
                let s3_97 = Vec2::new(-sign * s3_96.y, sign * s3_96.x);
                let s3_98 = s3_93 + s3_95;
                let s3_99 = s3_94 + s3_97;
                let s3_100 = s3_93 - s3_95;
                let s3_101 = s3_94 - s3_97;
                let s3_102 = s3_86 + s3_90;
                let s3_103 = s3_86 - s3_90;
                let s3_104 = s3_88 + s3_92;
                let s3_105 = s3_88 - s3_92;
                let s3_106 = Vec2::new(-sign * s3_105.y, sign * s3_105.x);
                let s3_107 = s3_102 + s3_104;
                let s3_108 = s3_103 + s3_106;
                let s3_109 = s3_102 - s3_104;
                let s3_110 = s3_103 - s3_106;
                let s3_111 = s3_98 + s3_107;
                let s3_112 = s3_98 - s3_107;
                let s3_113 = cmul(s3_108, Vec2::new(0.707106769, sign * 0.707106769));
                let s3_114 = s3_99 + s3_113;
                let s3_115 = s3_99 - s3_113;
                let s3_116 = Vec2::new(-sign * s3_109.y, sign * s3_109.x);
                let s3_117 = s3_100 + s3_116;
                let s3_118 = s3_100 - s3_116;
                let s3_119 = cmul(s3_110, Vec2::new(-0.707106769, sign * 0.707106769));
                let s3_120 = s3_101 + s3_119;
                let s3_121 = s3_101 - s3_119;
                v[0] = s3_111;
                v[2] = s3_114;
                v[4] = s3_117;
                v[6] = s3_120;
                v[8] = s3_112;
                v[10] = s3_115;
                v[12] = s3_118;
                v[14] = s3_121;
                let s3_122 = v[1];
                let s3_123 = v[3];
                let s3_124 = v[5];
                let s3_125 = v[7];
                let s3_126 = v[9];
                let s3_127 = v[11];
                let s3_128 = v[13];
                let s3_129 = v[15];
                let s3_130 = s3_122 + s3_126;
                let s3_131 = s3_122 - s3_126;
                let s3_132 = s3_124 + s3_128;
                let s3_133 = s3_124 - s3_128;
                let s3_134 = Vec2::new(-sign * s3_133.y, sign * s3_133.x);
                let s3_135 = s3_130 + s3_132;
                let s3_136 = s3_131 + s3_134;
                let s3_137 = s3_130 - s3_132;
                let s3_138 = s3_131 - s3_134;
                let s3_139 = s3_123 + s3_127;
                let s3_140 = s3_123 - s3_127;
                let s3_141 = s3_125 + s3_129;
                let s3_142 = s3_125 - s3_129;
                let s3_143 = Vec2::new(-sign * s3_142.y, sign * s3_142.x);
                let s3_144 = s3_139 + s3_141;
                let s3_145 = s3_140 + s3_143;
                let s3_146 = s3_139 - s3_141;
                let s3_147 = s3_140 - s3_143;
                let s3_148 = s3_135 + s3_144;
                let s3_149 = s3_135 - s3_144;
                let s3_150 = cmul(s3_145, Vec2::new(0.707106769, sign * 0.707106769));
                let s3_151 = s3_136 + s3_150;
                let s3_152 = s3_136 - s3_150;
                let s3_153 = Vec2::new(-sign * s3_146.y, sign * s3_146.x);
                let s3_154 = s3_137 + s3_153;
                let s3_155 = s3_137 - s3_153;
                let s3_156 = cmul(s3_147, Vec2::new(-0.707106769, sign * 0.707106769));
                let s3_157 = s3_138 + s3_156;
                let s3_158 = s3_138 - s3_156;
                v[1] = s3_148;
                v[3] = s3_151;
                v[5] = s3_154;
                v[7] = s3_157;
                v[9] = s3_149;
                v[11] = s3_152;
                v[13] = s3_155;
                v[15] = s3_158;
            }
            pa = j << small;
            bm = (16u32 >> small) - 1;
            sa = log_t + small;
            sb = 4 - small;
            span = 1u32 << small;
            pending = true;
        }
        let mut dirty = false;
        while span < m {
            if pending {
                if dirty {
                    workgroup_barrier();
                }
                let p0 = swizzle16(home + pa + ((0u32 & bm) << sa) + (0u32 >> sb));
                let p1 = swizzle16(home + pa + ((1u32 & bm) << sa) + (1u32 >> sb));
                let p2 = swizzle16(home + pa + ((2u32 & bm) << sa) + (2u32 >> sb));
                let p3 = swizzle16(home + pa + ((3u32 & bm) << sa) + (3u32 >> sb));
                let p4 = swizzle16(home + pa + ((4u32 & bm) << sa) + (4u32 >> sb));
                let p5 = swizzle16(home + pa + ((5u32 & bm) << sa) + (5u32 >> sb));
                let p6 = swizzle16(home + pa + ((6u32 & bm) << sa) + (6u32 >> sb));
                let p7 = swizzle16(home + pa + ((7u32 & bm) << sa) + (7u32 >> sb));
                let p8 = swizzle16(home + pa + ((8u32 & bm) << sa) + (8u32 >> sb));
                let p9 = swizzle16(home + pa + ((9u32 & bm) << sa) + (9u32 >> sb));
                let p10 = swizzle16(home + pa + ((10u32 & bm) << sa) + (10u32 >> sb));
                let p11 = swizzle16(home + pa + ((11u32 & bm) << sa) + (11u32 >> sb));
                let p12 = swizzle16(home + pa + ((12u32 & bm) << sa) + (12u32 >> sb));
                let p13 = swizzle16(home + pa + ((13u32 & bm) << sa) + (13u32 >> sb));
                let p14 = swizzle16(home + pa + ((14u32 & bm) << sa) + (14u32 >> sb));
                let p15 = swizzle16(home + pa + ((15u32 & bm) << sa) + (15u32 >> sb));
                let q0 = swizzle16(home + j + (0u32 << log_t));
                let q1 = swizzle16(home + j + (1u32 << log_t));
                let q2 = swizzle16(home + j + (2u32 << log_t));
                let q3 = swizzle16(home + j + (3u32 << log_t));
                let q4 = swizzle16(home + j + (4u32 << log_t));
                let q5 = swizzle16(home + j + (5u32 << log_t));
                let q6 = swizzle16(home + j + (6u32 << log_t));
                let q7 = swizzle16(home + j + (7u32 << log_t));
                let q8 = swizzle16(home + j + (8u32 << log_t));
                let q9 = swizzle16(home + j + (9u32 << log_t));
                let q10 = swizzle16(home + j + (10u32 << log_t));
                let q11 = swizzle16(home + j + (11u32 << log_t));
                let q12 = swizzle16(home + j + (12u32 << log_t));
                let q13 = swizzle16(home + j + (13u32 << log_t));
                let q14 = swizzle16(home + j + (14u32 << log_t));
                let q15 = swizzle16(home + j + (15u32 << log_t));
                buf[p0] = v[0].x;
                buf[p1] = v[1].x;
                buf[p2] = v[2].x;
                buf[p3] = v[3].x;
                buf[p4] = v[4].x;
                buf[p5] = v[5].x;
                buf[p6] = v[6].x;
                buf[p7] = v[7].x;
                buf[p8] = v[8].x;
                buf[p9] = v[9].x;
                buf[p10] = v[10].x;
                buf[p11] = v[11].x;
                buf[p12] = v[12].x;
                buf[p13] = v[13].x;
                buf[p14] = v[14].x;
                buf[p15] = v[15].x;
                workgroup_barrier();
                let re0 = buf[q0];
                let re1 = buf[q1];
                let re2 = buf[q2];
                let re3 = buf[q3];
                let re4 = buf[q4];
                let re5 = buf[q5];
                let re6 = buf[q6];
                let re7 = buf[q7];
                let re8 = buf[q8];
                let re9 = buf[q9];
                let re10 = buf[q10];
                let re11 = buf[q11];
                let re12 = buf[q12];
                let re13 = buf[q13];
                let re14 = buf[q14];
                let re15 = buf[q15];
                workgroup_barrier();
                buf[p0] = v[0].y;
                buf[p1] = v[1].y;
                buf[p2] = v[2].y;
                buf[p3] = v[3].y;
                buf[p4] = v[4].y;
                buf[p5] = v[5].y;
                buf[p6] = v[6].y;
                buf[p7] = v[7].y;
                buf[p8] = v[8].y;
                buf[p9] = v[9].y;
                buf[p10] = v[10].y;
                buf[p11] = v[11].y;
                buf[p12] = v[12].y;
                buf[p13] = v[13].y;
                buf[p14] = v[14].y;
                buf[p15] = v[15].y;
                workgroup_barrier();
                v[0] = Vec2::new(re0, buf[q0]);
                v[1] = Vec2::new(re1, buf[q1]);
                v[2] = Vec2::new(re2, buf[q2]);
                v[3] = Vec2::new(re3, buf[q3]);
                v[4] = Vec2::new(re4, buf[q4]);
                v[5] = Vec2::new(re5, buf[q5]);
                v[6] = Vec2::new(re6, buf[q6]);
                v[7] = Vec2::new(re7, buf[q7]);
                v[8] = Vec2::new(re8, buf[q8]);
                v[9] = Vec2::new(re9, buf[q9]);
                v[10] = Vec2::new(re10, buf[q10]);
                v[11] = Vec2::new(re11, buf[q11]);
                v[12] = Vec2::new(re12, buf[q12]);
                v[13] = Vec2::new(re13, buf[q13]);
                v[14] = Vec2::new(re14, buf[q14]);
                v[15] = Vec2::new(re15, buf[q15]);
                dirty = true;
            }
            let ls = span.trailing_zeros();
            if span > 1 {
                let e = (j & (span - 1)) << (26 - ls);
                let w1 = twiddle(e, sign);
                let w2 = twiddle(2 * e, sign);
                let w4 = twiddle(4 * e, sign);
                let w8 = twiddle(8 * e, sign);
                let w3 = cmul(w1, w2);
                let w5 = cmul(w1, w4);
                let w6 = cmul(w2, w4);
                let w7 = cmul(w3, w4);
                v[1] = cmul(v[1], w1);
                v[2] = cmul(v[2], w2);
                v[3] = cmul(v[3], w3);
                v[4] = cmul(v[4], w4);
                v[5] = cmul(v[5], w5);
                v[6] = cmul(v[6], w6);
                v[7] = cmul(v[7], w7);
                v[8] = cmul(v[8], w8);
                v[9] = cmul(v[9], cmul(w1, w8));
                v[10] = cmul(v[10], cmul(w2, w8));
                v[11] = cmul(v[11], cmul(w3, w8));
                v[12] = cmul(v[12], cmul(w4, w8));
                v[13] = cmul(v[13], cmul(w5, w8));
                v[14] = cmul(v[14], cmul(w6, w8));
                v[15] = cmul(v[15], cmul(w7, w8));
            }
            let d1 = v[0];
            let d2 = v[1];
            let d3 = v[2];
            let d4 = v[3];
            let d5 = v[4];
            let d6 = v[5];
            let d7 = v[6];
            let d8 = v[7];
            let d9 = v[8];
            let d10 = v[9];
            let d11 = v[10];
            let d12 = v[11];
            let d13 = v[12];
            let d14 = v[13];
            let d15 = v[14];
            let d16 = v[15];
            let d17 = d1 + d9;
            let d18 = d1 - d9;
            let d19 = d5 + d13;
            let d20 = d5 - d13;
            let d21 = Vec2::new(-sign * d20.y, sign * d20.x);
            let d22 = d17 + d19;
            let d23 = d18 + d21;
            let d24 = d17 - d19;
            let d25 = d18 - d21;
            let d26 = d2 + d10;
            let d27 = d2 - d10;
            let d28 = d6 + d14;
            let d29 = d6 - d14;
            let d30 = Vec2::new(-sign * d29.y, sign * d29.x);
            let d31 = d26 + d28;
            let d32 = d27 + d30;
            let d33 = d26 - d28;
            let d34 = d27 - d30;
            let d35 = d3 + d11;
            let d36 = d3 - d11;
            let d37 = d7 + d15;
            let d38 = d7 - d15;
            let d39 = Vec2::new(-sign * d38.y, sign * d38.x);
            let d40 = d35 + d37;
            let d41 = d36 + d39;
            let d42 = d35 - d37;
            let d43 = d36 - d39;
            let d44 = d4 + d12;
            let d45 = d4 - d12;
            let d46 = d8 + d16;
            let d47 = d8 - d16;
            let d48 = Vec2::new(-sign * d47.y, sign * d47.x);
            let d49 = d44 + d46;
            let d50 = d45 + d48;
            let d51 = d44 - d46;
            let d52 = d45 - d48;
            let d53 = d22 + d40;
            let d54 = d22 - d40;
            let d55 = d31 + d49;
            let d56 = d31 - d49;
            let d57 = Vec2::new(-sign * d56.y, sign * d56.x);
            let d58 = d53 + d55;
            let d59 = d54 + d57;
            let d60 = d53 - d55;
            let d61 = d54 - d57;
            let d62 = cmul(d32, Vec2::new(0.923879504, sign * 0.382683426));
            let d63 = cmul(d41, Vec2::new(0.707106769, sign * 0.707106769));
            let d64 = cmul(d50, Vec2::new(0.382683426, sign * 0.923879504));
            let d65 = d23 + d63;
            let d66 = d23 - d63;
            let d67 = d62 + d64;
            let d68 = d62 - d64;
            let d69 = Vec2::new(-sign * d68.y, sign * d68.x);
            let d70 = d65 + d67;
            let d71 = d66 + d69;
            let d72 = d65 - d67;
            let d73 = d66 - d69;
            let d74 = cmul(d33, Vec2::new(0.707106769, sign * 0.707106769));
            let d75 = Vec2::new(-sign * d42.y, sign * d42.x);
            let d76 = cmul(d51, Vec2::new(-0.707106769, sign * 0.707106769));
            let d77 = d24 + d75;
            let d78 = d24 - d75;
            let d79 = d74 + d76;
            let d80 = d74 - d76;
            let d81 = Vec2::new(-sign * d80.y, sign * d80.x);
            let d82 = d77 + d79;
            let d83 = d78 + d81;
            let d84 = d77 - d79;
            let d85 = d78 - d81;
            let d86 = cmul(d34, Vec2::new(0.382683426, sign * 0.923879504));
            let d87 = cmul(d43, Vec2::new(-0.707106769, sign * 0.707106769));
            let d88 = cmul(d52, Vec2::new(-0.923879504, sign * -0.382683426));
            let d89 = d25 + d87;
            let d90 = d25 - d87;
            let d91 = d86 + d88;
            let d92 = d86 - d88;
            let d93 = Vec2::new(-sign * d92.y, sign * d92.x);
            let d94 = d89 + d91;
            let d95 = d90 + d93;
            let d96 = d89 - d91;
            let d97 = d90 - d93;
            v[0] = d58;
            v[1] = d70;
            v[2] = d82;
            v[3] = d94;
            v[4] = d59;
            v[5] = d71;
            v[6] = d83;
            v[7] = d95;
            v[8] = d60;
            v[9] = d72;
            v[10] = d84;
            v[11] = d96;
            v[12] = d61;
            v[13] = d73;
            v[14] = d85;
            v[15] = d97;
            pa = ((j >> ls) << (ls + 4)) + (j & (span - 1));
            bm = 15;
            sa = ls;
            sb = 4;
            pending = true;
            span = span << 4;
        }
        // After the last stage value `k` is output row `j + k·m/16`.
        if live {
            let o = ((tc >> log_q) << log_n)
                + ((jc >> log_ns) << log_tw)
                + (jc & (ns - 1))
                + (j << log_ns);
            let ostep = log_t + log_ns;
            output[o + (0u32 << ostep)] = v[0] * scale;
            output[o + (1u32 << ostep)] = v[1] * scale;
            output[o + (2u32 << ostep)] = v[2] * scale;
            output[o + (3u32 << ostep)] = v[3] * scale;
            output[o + (4u32 << ostep)] = v[4] * scale;
            output[o + (5u32 << ostep)] = v[5] * scale;
            output[o + (6u32 << ostep)] = v[6] * scale;
            output[o + (7u32 << ostep)] = v[7] * scale;
            output[o + (8u32 << ostep)] = v[8] * scale;
            output[o + (9u32 << ostep)] = v[9] * scale;
            output[o + (10u32 << ostep)] = v[10] * scale;
            output[o + (11u32 << ostep)] = v[11] * scale;
            output[o + (12u32 << ostep)] = v[12] * scale;
            output[o + (13u32 << ostep)] = v[13] * scale;
            output[o + (14u32 << ostep)] = v[14] * scale;
            output[o + (15u32 << ostep)] = v[15] * scale;
        }
    }
}

/// `e^(sign·2πi·r/den)` in `f64`, for `r` in `0..den`.
fn roots(sign: f64, den: u64) -> Vec<(f64, f64)> {
    (0..den)
        .map(|r| {
            let a = sign * 2.0 * std::f64::consts::PI * r as f64 / den as f64;
            (a.cos(), a.sin())
        })
        .collect()
}

/// The independent reference of one pass: each column as a direct `O(m²)` DFT in `f64`,
/// with the pass's gather, input twiddles, scatter and scale.
pub fn fft_pass_reference(
    input: &[[f32; 2]],
    len: u32,
    m: u32,
    n: u32,
    ns: u32,
    inverse: u32,
    scale: f32,
) -> Result<Vec<[f32; 2]>, ForgeError> {
    let sign = if inverse != 0 { 1.0 } else { -1.0 };
    let (len, m, n, ns) = (len as usize, m as usize, n as usize, ns as usize);
    let q = n / m;
    let mut out = vec![[0.0f32; 2]; len];
    let w = roots(sign, m as u64);
    let tw = roots(sign, (ns * m) as u64);
    for b in 0..len / n {
        for j in 0..q {
            let x: Vec<(f64, f64)> = (0..m)
                .map(|r| {
                    let [re, im] = input[b * n + j + r * q];
                    let (re, im) = (re as f64, im as f64);
                    let (c, s) = tw[r * (j % ns)];
                    (re * c - im * s, re * s + im * c)
                })
                .collect();
            for k in 0..m {
                let (mut re, mut im) = (0.0, 0.0);
                for (r, &(xr, xi)) in x.iter().enumerate() {
                    let (c, s) = w[r * k % m];
                    re += xr * c - xi * s;
                    im += xr * s + xi * c;
                }
                let o = b * n + (j / ns) * ns * m + j % ns + k * ns;
                out[o] = [(re * scale as f64) as f32, (im * scale as f64) as f32];
            }
        }
    }
    Ok(out)
}

/// The radices of the passes of a transform of length `2^log_n`: one pass up to 4096,
/// otherwise as few passes of radix at most 1024 as cover it, as even as possible.
///
/// ```
/// use wgsl_forge::kernels::fft::fft_radices;
/// assert_eq!(fft_radices(10), [1024]);
/// assert_eq!(fft_radices(20), [1024, 1024]);
/// assert_eq!(fft_radices(22), [256, 128, 128]);
/// ```
pub fn fft_radices(log_n: u32) -> Vec<u32> {
    if log_n <= FFT_MAX_LOCAL.trailing_zeros() {
        return vec![1 << log_n];
    }
    let passes = log_n.div_ceil(FFT_MULTI_PASS_RADIX_LOG);
    (0..passes)
        .map(|p| 1 << (log_n / passes + u32::from(p < log_n % passes)))
        .collect()
}

/// The plan [`fft_record`] uses for a transform of length `n`: the radices of
/// [`fft_radices`], with the butterflies in registers ([`fft_pass16`]) wherever a pass's
/// radix is 16 or more.
pub fn fft_plan(n: usize) -> FftPlan {
    FftPlan {
        radices: fft_radices(n.trailing_zeros()),
        registers: true,
    }
}

/// Records `batch` transforms of length `n` of `input` into `output`, one launch per pass
/// (see the [module docs](crate::fft)), without submitting them. `scratch` holds the data
/// between passes; it is needed (and must be as long as the others) only when `n > 4096`.
/// `schedule` overrides the tuned schedule of every pass.
///
/// Errors: `n` not a power of two from 1 to 2^22 ([`ForgeError::InvalidArgument`]), tensors
/// whose lengths are not `n·batch` ([`ForgeError::LengthMismatch`]), and launch errors.
#[allow(clippy::too_many_arguments)]
pub fn fft_record(
    rt: &mut ForgeRuntime,
    input: &GpuTensor<[f32; 2]>,
    scratch: Option<&GpuTensor<[f32; 2]>>,
    output: &GpuTensor<[f32; 2]>,
    n: usize,
    batch: usize,
    inverse: bool,
    schedule: Option<&Schedule>,
) -> Result<(), ForgeError> {
    check_shape(n, batch)?;
    let plan = fft_plan(n);
    fft_record_plan(
        rt, input, scratch, output, n, batch, inverse, schedule, &plan,
    )
}

/// [`fft_record`] with the passes' radices given (powers of two up to 4096 whose product
/// is `n`), to compare plans: `forge bench` tries several. Every pass runs [`fft_pass`].
#[allow(clippy::too_many_arguments)]
pub fn fft_record_radices(
    rt: &mut ForgeRuntime,
    input: &GpuTensor<[f32; 2]>,
    scratch: Option<&GpuTensor<[f32; 2]>>,
    output: &GpuTensor<[f32; 2]>,
    n: usize,
    batch: usize,
    inverse: bool,
    schedule: Option<&Schedule>,
    radices: &[u32],
) -> Result<(), ForgeError> {
    let plan = FftPlan {
        radices: radices.to_vec(),
        registers: false,
    };
    fft_record_plan(
        rt, input, scratch, output, n, batch, inverse, schedule, &plan,
    )
}

/// How a transform is computed: the passes' radices, and the kernel of the passes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FftPlan {
    /// The radices of the passes, powers of two up to 4096 whose product is `n`.
    pub radices: Vec<u32>,
    /// Passes of radix 16 or more run [`fft_pass16`] (butterflies in registers), the
    /// others [`fft_pass`]; `false`: every pass runs [`fft_pass`].
    pub registers: bool,
}

/// [`fft_record`] with the plan given; `schedule` applies to the passes that run
/// [`fft_pass`] ([`fft_pass16`] has one schedule).
#[allow(clippy::too_many_arguments)]
pub fn fft_record_plan(
    rt: &mut ForgeRuntime,
    input: &GpuTensor<[f32; 2]>,
    scratch: Option<&GpuTensor<[f32; 2]>>,
    output: &GpuTensor<[f32; 2]>,
    n: usize,
    batch: usize,
    inverse: bool,
    schedule: Option<&Schedule>,
    plan: &FftPlan,
) -> Result<(), ForgeError> {
    let radices = &plan.radices[..];
    let len = check_shape(n, batch)?;
    let product = radices
        .iter()
        .try_fold(1usize, |p, &m| p.checked_mul(m as usize));
    if product != Some(n)
        || radices
            .iter()
            .any(|&m| !m.is_power_of_two() || m as usize > FFT_MAX_LOCAL)
    {
        return Err(ForgeError::InvalidArgument {
            kernel: fft_pass::NAME,
            message: format!(
                "radices {radices:?} are not powers of two up to 4096 whose product is n = {n}"
            ),
        });
    }
    let scale = if inverse { 1.0 / n as f32 } else { 1.0 };
    let dir = u32::from(inverse);
    let scratch = match (scratch, radices.len()) {
        (_, 1) => output,
        (Some(s), _) => s,
        (None, _) => {
            return Err(ForgeError::InvalidArgument {
                kernel: fft_pass::NAME,
                message: format!(
                    "a transform of length {n} takes several passes and needs a scratch tensor"
                ),
            })
        }
    };
    let mut ns = 1u32;
    let mut src = input;
    for (p, &m) in radices.iter().enumerate() {
        // Ping-pong so that the last pass lands in `output`.
        let dst = if (radices.len() - 1 - p) % 2 == 0 {
            output
        } else {
            scratch
        };
        let last = p + 1 == radices.len();
        let s = if last { scale } else { 1.0 };
        match schedule {
            _ if plan.registers && m >= 16 => {
                fft_pass16::launch(rt, src, dst, len, m, n as u32, ns, dir, s)?
            }
            Some(sch) => fft_pass::launch_with(rt, sch, src, dst, len, m, n as u32, ns, dir, s)?,
            None => fft_pass::launch(rt, src, dst, len, m, n as u32, ns, dir, s)?,
        }
        ns *= m;
        src = dst;
    }
    Ok(())
}

/// Checks a transform length and batch.
/// Checks a transform's shape; returns `n * batch`, which must fit in `u32`.
fn check_shape(n: usize, batch: usize) -> Result<u32, ForgeError> {
    if n == 0 || batch == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: fft_pass::NAME,
            what: format!("n = {n}, batch = {batch}"),
        });
    }
    if !n.is_power_of_two() || n > FFT_MAX_LEN {
        return Err(ForgeError::InvalidArgument {
            kernel: fft_pass::NAME,
            message: format!("the transform length n = {n} is not a power of two from 1 to 2^22"),
        });
    }
    let total = n
        .checked_mul(batch)
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel: fft_pass::NAME,
            message: format!("n * batch = {n} * {batch} overflows"),
        })?;
    dim(fft_pass::NAME, "n * batch", total)
}

/// Checks interleaved data of `batch` transforms of length `n` and runs them.
fn transform(
    rt: &mut ForgeRuntime,
    data: &[f32],
    n: usize,
    batch: usize,
    inverse: bool,
) -> Result<Vec<f32>, ForgeError> {
    if data.is_empty() {
        return Err(ForgeError::EmptyWork {
            kernel: fft_pass::NAME,
            what: format!("{} floats, n = {n}, batch = {batch}", data.len()),
        });
    }
    if data.len() % 2 != 0 {
        return Err(ForgeError::InvalidArgument {
            kernel: fft_pass::NAME,
            message: format!(
                "the data has {} floats, an odd number; complex values are interleaved (re, im) pairs",
                data.len()
            ),
        });
    }
    check_shape(n, batch)?;
    let total = n as u128 * batch as u128;
    if data.len() as u128 != 2 * total {
        return Err(ForgeError::LengthMismatch {
            kernel: fft_pass::NAME,
            arg: "data",
            expr: "2 * n * batch",
            expected: (2 * total).min(u64::MAX as u128) as u64,
            actual: data.len(),
        });
    }
    let complex: &[[f32; 2]] = bytemuck::cast_slice(data);
    let x = rt.upload(complex)?;
    let out = rt.zeros::<[f32; 2]>(complex.len())?;
    let scratch = if n > FFT_MAX_LOCAL {
        Some(rt.zeros::<[f32; 2]>(complex.len())?)
    } else {
        None
    };
    fft_record(rt, &x, scratch.as_ref(), &out, n, batch, inverse, None)?;
    let result = rt.download(&out)?;
    Ok(bytemuck::cast_slice(&result).to_vec())
}

/// `rt.fft(&complex_interleaved)`, the seed's signature, and what goes beyond it: the
/// inverse and batches.
pub trait FftExt {
    /// The forward DFT of interleaved `(re, im)` pairs, `X[k] = Σ_j x[j]·e^(-2πi·jk/n)`,
    /// unscaled, returned interleaved. `n = data.len() / 2` is a power of two from 1 to 2^22.
    ///
    /// Errors: empty data ([`ForgeError::EmptyWork`]); an odd number of floats, or `n` not
    /// a power of two or past 2^22 ([`ForgeError::InvalidArgument`]). See the [module
    /// docs](crate::fft) for the passes and the accuracy.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let mut impulse = vec![0.0f32; 16];
    /// impulse[0] = 1.0; // x[0] = 1 + 0i, 8 points
    /// let spectrum = rt.fft(&impulse)?;
    /// assert_eq!(spectrum, [1.0, 0.0].repeat(8));
    /// assert!(rt.fft(&[1.0, 0.0, 2.0]).is_err()); // odd length
    /// assert!(rt.fft(&[0.0; 6]).is_err()); // n = 3
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn fft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>, ForgeError>;

    /// The inverse DFT, normalised as numpy's `ifft`: `x[j] = (1/n)·Σ_k X[k]·e^(+2πi·jk/n)`,
    /// so that `ifft(fft(x)) ≈ x`. Same layout and errors as [`FftExt::fft`].
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let x = [1.0, 2.0, -3.0, 0.5, 0.25, -1.0, 4.0, 0.0];
    /// let spectrum = rt.fft(&x)?;
    /// let back = rt.ifft(&spectrum)?;
    /// assert!(back.iter().zip(&x).all(|(a, b)| (a - b).abs() < 1e-6));
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn ifft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>, ForgeError>;

    /// `batch` forward transforms of length `n`, stored one after another in `data`
    /// (`2·n·batch` floats, interleaved), in one launch per pass.
    ///
    /// Errors: those of [`FftExt::fft`], and `data.len() ≠ 2·n·batch`
    /// ([`ForgeError::LengthMismatch`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// // Two transforms of length 2: [1, 1] → [2, 0] and [1, -1] → [0, 2].
    /// let out = rt.fft_batched(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, -1.0, 0.0], 2, 2)?;
    /// assert_eq!(out, vec![2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn fft_batched(&mut self, data: &[f32], n: usize, batch: usize)
        -> Result<Vec<f32>, ForgeError>;

    /// `batch` inverse transforms of length `n`, each normalised by `1/n`, as
    /// [`FftExt::ifft`] computes them; the layout of [`FftExt::fft_batched`].
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let out = rt.ifft_batched(&[2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0], 2, 2)?;
    /// assert_eq!(out, vec![1.0, 0.0, 1.0, 0.0, 1.0, 0.0, -1.0, 0.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn ifft_batched(
        &mut self,
        data: &[f32],
        n: usize,
        batch: usize,
    ) -> Result<Vec<f32>, ForgeError>;
}

impl FftExt for ForgeRuntime {
    fn fft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>, ForgeError> {
        let n = complex_interleaved.len() / 2;
        transform(self, complex_interleaved, n.max(1), 1, false)
    }

    fn ifft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>, ForgeError> {
        let n = complex_interleaved.len() / 2;
        transform(self, complex_interleaved, n.max(1), 1, true)
    }

    fn fft_batched(
        &mut self,
        data: &[f32],
        n: usize,
        batch: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        transform(self, data, n, batch, false)
    }

    fn ifft_batched(
        &mut self,
        data: &[f32],
        n: usize,
        batch: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        transform(self, data, n, batch, true)
    }
}
