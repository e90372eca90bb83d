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
//! A transform is a Stockham FFT whose radices are whole sub-transforms computed in
//! workgroup memory by one kernel, [`fft_pass`]. A pass of radix `m` (a power of two up to
//! [`FFT_MAX_LOCAL`] = 4096) over transforms of length `n`, after passes whose radices
//! multiply to `ns`, takes for each column `j` in `0..n/m` the `m` elements
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
//! # Inside a pass
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
//! `w²`, `w³` as products. The GPU and the oracle run the same arithmetic; every schedule
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

pub use passes::fft_pass;

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
    let radices = fft_radices(n.trailing_zeros());
    fft_record_radices(
        rt, input, scratch, output, n, batch, inverse, schedule, &radices,
    )
}

/// [`fft_record`] with the passes' radices given (powers of two up to 4096 whose product
/// is `n`), to compare plans: `forge bench` tries several.
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
    check_shape(n, batch)?;
    let len = dim(fft_pass::NAME, "n * batch", n * batch)?;
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
            Some(sch) => fft_pass::launch_with(rt, sch, src, dst, len, m, n as u32, ns, dir, s)?,
            None => fft_pass::launch(rt, src, dst, len, m, n as u32, ns, dir, s)?,
        }
        ns *= m;
        src = dst;
    }
    Ok(())
}

/// Checks a transform length and batch.
fn check_shape(n: usize, batch: usize) -> Result<(), ForgeError> {
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
    Ok(())
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
