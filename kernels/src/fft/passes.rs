//! The kernels of a pass, [`fft_pass`] (every stage in workgroup memory) and [`fft_pass16`]
//! (the butterflies in registers), and the helpers they share.

use super::fft_pass_reference;
use forge_macros::forge_module;

pub use kernels::{fft_pass, fft_pass16};

#[forge_module]
mod kernels {
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
                // Slot `s0 + u·WG` of step `u`, clamped to the last slot for the
                // arithmetic (a slot past the end is skipped).
                let top = slots - 1;
                let mut s0 = lid;
                while rows && s0 < slots {
                    let last = len - 1;
                    let mut x = [Vec2::ZERO; 4];
                    #[unroll]
                    for u in 0..4 {
                        x[u] = input[(base + s0 + u * WG).min(last)];
                    }
                    #[unroll]
                    for u in 0..4 {
                        let s = s0 + u * WG;
                        if (u == 0 || s < slots) && base + s < len {
                            buf[swizzle(s, log_mm)] = x[u];
                        }
                    }
                    s0 += 4 * WG;
                }
                let across = log_q > 0;
                let far = mm << log_q;
                let mut s0 = lid;
                while !rows && s0 < slots {
                    let last = count - 1;
                    let mut p = [UVec2::ZERO; 4];
                    let mut t = [0u32; 4];
                    let mut g = [0u32; 4];
                    #[unroll]
                    for u in 0..4 {
                        let s = s0 + u * WG;
                        let sc = if u == 0 { s } else { s.min(top) };
                        p[u] = place(sc, log_mm, log_c, across);
                        t[u] = first + p[u].x;
                        g[u] = column_index(t[u].min(last), p[u].y, log_q, log_n);
                    }
                    let mut x = [Vec2::ZERO; 4];
                    let mut y = [Vec2::ZERO; 4];
                    #[unroll]
                    for u in 0..4 {
                        x[u] = input[g[u]];
                        y[u] = x[u];
                    }
                    if halves > 1 {
                        #[unroll]
                        for u in 0..4 {
                            y[u] = input[g[u] + far];
                        }
                    }
                    #[unroll]
                    for u in 0..4 {
                        if (u == 0 || s0 + u * WG < slots) && t[u] < count {
                            let v = loaded(
                                x[u], y[u], t[u], p[u].y, half, halves, ns, log_q, log_tw, log_m,
                                sign,
                            );
                            buf[swizzle((p[u].x << log_mm) + p[u].y, log_mm)] = v;
                        }
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
                    let hi = !(mm - 1);
                    let mut v = [Vec2::ZERO; 4];
                    #[unroll]
                    for u in 0..4 {
                        let s = s0 + u * WG;
                        let a = if u == 0 { s } else { s.min(top) };
                        v[u] = buf[swizzle((a & hi) + output_slot(a & (mm - 1), log_mm), log_mm)];
                    }
                    #[unroll]
                    for u in 0..4 {
                        let s = s0 + u * WG;
                        if (u == 0 || s < slots) && base + s < len {
                            output[base + s] = v[u] * scale;
                        }
                    }
                    s0 += 4 * WG;
                }
                let across = ns > 1;
                let mut s0 = lid;
                while !rows && s0 < slots {
                    let mut p = [UVec2::ZERO; 4];
                    let mut v = [Vec2::ZERO; 4];
                    #[unroll]
                    for u in 0..4 {
                        let s = s0 + u * WG;
                        let sc = if u == 0 { s } else { s.min(top) };
                        p[u] = place(sc, log_mm, log_c, across);
                        v[u] =
                            buf[swizzle((p[u].x << log_mm) + output_slot(p[u].y, log_mm), log_mm)];
                    }
                    #[unroll]
                    for u in 0..4 {
                        let t = first + p[u].x;
                        if (u == 0 || s0 + u * WG < slots) && t < count {
                            let o = output_index(
                                t,
                                p[u].y * halves + half,
                                log_q,
                                log_n,
                                log_ns,
                                log_tw,
                            );
                            output[o] = v[u] * scale;
                        }
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

    /// A radix-4 butterfly in place on `v[i]`, `v[i + s]`, `v[i + 2s]`, `v[i + 3s]`:
    /// `(a, b, c, d)` becomes `(a + b + c + d, a − c + ι(b − d), a + c − b − d,
    /// a − c − ι(b − d))`, with `ι = sign·i` a quarter turn, exact.
    #[forge_fn]
    fn radix4(v: &mut [Vec2; 16], i: u32, s: u32, sign: f32) {
        let (a, b, c, d) = (v[i], v[i + s], v[i + 2 * s], v[i + 3 * s]);
        let t0 = a + c;
        let t1 = a - c;
        let t2 = b + d;
        let t3 = b - d;
        let it3 = Vec2::new(-sign * t3.y, sign * t3.x);
        v[i] = t0 + t2;
        v[i + s] = t1 + it3;
        v[i + 2 * s] = t0 - t2;
        v[i + 3 * s] = t1 - it3;
    }

    /// `v[i]` times `W^e`, `W = e^(sign·2πi/16)`, for `e` in `1..10`: a quarter turn for
    /// `e = 4`, else a product with `cos` and `sin` of `e·π/8` from `cos_pi8` (entry `k`
    /// is `cos(kπ/8)` rounded to `f32`; `sin(eπ/8) = cos((4 − e)π/8)`).
    #[forge_fn]
    fn rotate(v: &mut [Vec2; 16], cos_pi8: &[f32; 9], i: u32, e: u32, sign: f32) {
        if e == 4 {
            v[i] = Vec2::new(-sign * v[i].y, sign * v[i].x);
        } else {
            let ks = if e >= 4 { e - 4 } else { 4 - e };
            v[i] = cmul(v[i], Vec2::new(cos_pi8[e.min(16 - e)], sign * cos_pi8[ks]));
        }
    }

    /// A DFT of 8 points in place on `v[i + 2k]`, `k` in `0..8`, by decimation in time:
    /// radix 4 on the even and the odd points, the odd ones times `W^2k`, then radix 2.
    #[forge_fn]
    fn dft8(v: &mut [Vec2; 16], cos_pi8: &[f32; 9], i: u32, sign: f32) {
        radix4(v, i, 4, sign);
        radix4(v, i + 2, 4, sign);
        #[unroll]
        for r in 1..4 {
            rotate(v, cos_pi8, i + 2 + 4 * r, 2 * r, sign);
        }
        let mut x = [Vec2::ZERO; 8];
        #[unroll]
        for r in 0..4 {
            let (e, o) = (v[i + 4 * r], v[i + 2 + 4 * r]);
            x[r] = e + o;
            x[r + 4] = e - o;
        }
        #[unroll]
        for k in 0..8 {
            v[i + 2 * k] = x[k];
        }
    }

    /// A DFT of 16 points in place on `v`, by decimation in time: radix 4 on the four
    /// sets `v[q + 4r]`, the results times `W^(q·r)`, radix 4 across the sets, and the
    /// 4×4 result transposed (register moves) so that `v[k]` is output `k`.
    #[forge_fn]
    fn dft16(v: &mut [Vec2; 16], cos_pi8: &[f32; 9], sign: f32) {
        #[unroll]
        for q in 0..4 {
            radix4(v, q, 4, sign);
        }
        #[unroll]
        for q in 1..4 {
            #[unroll]
            for r in 1..4 {
                rotate(v, cos_pi8, q + 4 * r, q * r, sign);
            }
        }
        #[unroll]
        for r in 0..4 {
            radix4(v, 4 * r, 1, sign);
        }
        #[unroll]
        for r in 0..4 {
            #[unroll]
            for k in r + 1..4 {
                let t = v[4 * r + k];
                v[4 * r + k] = v[4 * k + r];
                v[4 * k + r] = t;
            }
        }
    }

    /// Moves each value `v[k]` of every invocation through workgroup memory, from slot
    /// `p[k]` to the invocation that reads slot `q[k]`: component `c` of each, real parts
    /// then imaginary parts, 16 KiB each way.
    #[forge_fn]
    fn exchange(buf: &mut [f32; 4096], v: &mut [Vec2; 16], p: &[u32; 16], q: &[u32; 16]) {
        let mut re = [0.0f32; 16];
        #[unroll]
        for c in 0..2 {
            #[unroll]
            for k in 0..16 {
                buf[p[k]] = v[k][c];
            }
            workgroup_barrier();
            #[unroll]
            for k in 0..16 {
                if c == 0 {
                    re[k] = buf[q[k]];
                } else {
                    v[k] = Vec2::new(re[k], buf[q[k]]);
                }
            }
            // Every real part is read before the imaginary parts overwrite the slots.
            if c == 0 {
                workgroup_barrier();
            }
        }
    }

    /// [`fft_pass`] with the butterflies in registers (see the module docs), for
    /// `16 ≤ m ≤ 4096`: each invocation holds 16 elements of one column, a workgroup of 256
    /// holds `4096 / m` whole columns. Elements are loaded and stored at `j + r·m/16` (`j`
    /// the invocation's place in its column), so that neighbouring invocations touch
    /// neighbouring addresses, along a row or across columns.
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
        // The column's 16 values: registers, every index below a constant.
        let mut v = [Vec2::ZERO; 16];
        #[unroll]
        for r in 0..16 {
            v[r] = input[g + (r << step)];
        }
        if ns > 1 {
            // The pass's twiddles: row `r` of column `j` times `w^(r·(j mod ns))`.
            let a = jc & (ns - 1);
            #[unroll]
            for r in 0..16 {
                v[r] = cmul(
                    v[r],
                    twiddle(((j + (r << log_t)) * a) << (30 - log_tw), sign),
                );
            }
        }
        // `cos(kπ/8)` rounded to `f32`: the constant twiddles inside the DFTs.
        let cos_pi8 = [
            1.0f32,
            0.923879504,
            0.707106769,
            0.382683426,
            0.0,
            -0.382683426,
            -0.707106769,
            -0.923879504,
            -1.0,
        ];
        let small = log_m & 3;
        // The exchange's layout for the stage just done: value `k` goes to
        // `pa + ((k & bm) << sa) + (k >> sb)` of the column.
        let mut pa = 0u32;
        let mut bm = 15u32;
        let mut sa = 0u32;
        let mut sb = 4u32;
        let mut span = 1u32;
        let mut pending = false;
        // The first stage, of radix 2, 4 or 8 on values 8, 4 or 2 apart.
        if small > 0 {
            if small == 1 {
                #[unroll]
                for i in 0..8 {
                    let (a, b) = (v[i], v[i + 8]);
                    v[i] = a + b;
                    v[i + 8] = a - b;
                }
            }
            if small == 2 {
                #[unroll]
                for i in 0..4 {
                    radix4(&mut v, i, 4, sign);
                }
            }
            if small == 3 {
                #[unroll]
                for i in 0..2 {
                    dft8(&mut v, &cos_pi8, i, sign);
                }
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
                let mut p = [0u32; 16];
                let mut q = [0u32; 16];
                #[unroll]
                for k in 0..16 {
                    p[k] = swizzle16(home + pa + ((k & bm) << sa) + (k >> sb));
                }
                #[unroll]
                for k in 0..16 {
                    q[k] = swizzle16(home + j + (k << log_t));
                }
                exchange(&mut buf, &mut v, &p, &q);
                dirty = true;
            }
            let ls = span.trailing_zeros();
            if span > 1 {
                // The stage's twiddles `w^r`: `w`, `w²`, `w⁴`, `w⁸` evaluated, the other
                // powers below 8 a product of two (`w^r = w^(r − h)·w^h`, `h` the highest
                // power of two in `r`), those above 8 a product with `w⁸`.
                let e = (j & (span - 1)) << (26 - ls);
                let mut w = [Vec2::ZERO; 8];
                #[unroll]
                for r in 1..8 {
                    let h = if r >= 4 {
                        4u32
                    } else if r >= 2 {
                        2u32
                    } else {
                        1u32
                    };
                    if r == h {
                        w[r] = twiddle(r * e, sign);
                    } else {
                        w[r] = cmul(w[r - h], w[h]);
                    }
                }
                let w8 = twiddle(8 * e, sign);
                #[unroll]
                for r in 1..8 {
                    v[r] = cmul(v[r], w[r]);
                }
                v[8] = cmul(v[8], w8);
                #[unroll]
                for r in 1..8 {
                    v[8 + r] = cmul(v[8 + r], cmul(w[r], w8));
                }
            }
            dft16(&mut v, &cos_pi8, sign);
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
            #[unroll]
            for r in 0..16 {
                output[o + (r << ostep)] = v[r] * scale;
            }
        }
    }
}
