//! Fast Fourier transforms of complex `f32` data: forward, inverse and batched, for every
//! power-of-two length from 1 to 2^22.
//!
//! # Data
//! Complex values are interleaved `(re, im)` pairs of `f32`: a transform of length `n`
//! takes `2n` floats. The forward transform is `X[k] = Σ_j x[j]·e^(-2πi·jk/n)`, unscaled;
//! the inverse is `x[j] = (1/n)·Σ_k X[k]·e^(+2πi·jk/n)`, normalised as numpy's `ifft`.
//! A batch holds `batch` transforms one after another.
//!
//! # Passes
//! One kernel, [`fft_pass`], computes a batch of strided sub-transforms of length
//! `m ≤ 2048` in workgroup memory: it loads each sub-transform in bit-reversed order, runs
//! `log2 m` radix-2 butterfly stages in place, optionally multiplies each output by a
//! twiddle factor, scales it, and stores it with another stride. A length `n ≤ 2048` takes
//! one pass. A longer one takes two (the "four-step" FFT, with `n = n1·n2`, `n2 = 2048`):
//! 1. `n2` transforms of length `n1` over columns `x[j1·n2 + j2]`, each output `k1`
//!    multiplied by `e^(∓2πi·j2·k1/n)` and stored at `k1·n2 + j2`;
//! 2. `n1` transforms of length `n2` over the contiguous rows, output `k2` stored at
//!    `k1 + n1·k2`, which is the natural order: no transpose pass.
//!
//! Both passes are recorded on device tensors and submitted together, ping-ponging between
//! the input and a scratch tensor. Certification checks the per-pass kernel against
//! [`fft_pass_reference`], a direct `O(m²)` DFT of each sub-transform in `f64` with the
//! same strides and twiddles; the tests check whole transforms against `rustfft`.
//!
//! # Twiddle factors
//! Twiddles are computed in the kernel, not with `sin`/`cos` (whose accuracy WGSL only
//! bounds loosely), but exactly reduced: the angle, a multiple of `2π/2^30`, is reduced
//! to `[0, π/4]` with integer arithmetic, and sine and cosine there are Taylor polynomials
//! accurate to below half an `f32` ulp. The GPU and the oracle run the same arithmetic;
//! every schedule computes every element with the same operations in the same order.
//!
//! # Accuracy
//! Each radix-2 stage adds a relative error of a few `f32` ulps, so the error of an output
//! grows like `log2 n`. The tests hold every real and imaginary part of every output to
//! `|X̂[k] − X[k]| ≤ ε·(log2 n + 1)·‖x‖₂`, with `ε = 2^-23` and `x` the transform's input
//! (times `1/n` for the inverse); the worst error seen is about a third of that bound, at
//! every length from 8 to 2^20. `ifft(fft(x))` is within `8·ε·(log2 n + 1)` times the RMS
//! value of `x`.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// The longest transform one pass computes in workgroup memory.
pub const FFT_MAX_LOCAL: usize = 2048;

/// The longest transform: two passes of [`FFT_MAX_LOCAL`].
pub const FFT_MAX_LEN: usize = FFT_MAX_LOCAL * FFT_MAX_LOCAL;

/// One pass: `len / m` sub-transforms of length `m` (a power of two, at most 2048).
///
/// Sub-transform `t` (with `hi = t / inner`, `lo = t % inner`, `inner` a power of two)
/// reads element `j` at
/// `hi·in_hi + lo·in_lo + j·in_stride` and writes output `k` at
/// `hi·out_hi + lo·out_lo + k·out_stride`, after multiplying it by `e^(∓2πi·(lo·k mod tw_n)/tw_n)`
/// when `tw_n > 0` (a power of two, at most 2^26) and by `scale`. The exponent's sign is `+`
/// when `inverse ≠ 0`. The output map must be a permutation of `0..len`.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = len, ext = false,
    tune(workgroup = [256, 128, 64], items = [8, 4, 2, 1]),
    reference = fft_pass_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(len = 3, m = 1, inner = 1, in_hi = 1, in_lo = 0, in_stride = 1, out_hi = 1, out_lo = 0,
        out_stride = 1, tw_n = 0, inverse = 0, scale = 1.0),
    case(len = 2, m = 2, inner = 1, in_hi = 2, in_lo = 0, in_stride = 1, out_hi = 2, out_lo = 0,
        out_stride = 1, tw_n = 0, inverse = 1, scale = 0.5),
    case(len = 40, m = 8, inner = 1, in_hi = 8, in_lo = 0, in_stride = 1, out_hi = 8, out_lo = 0,
        out_stride = 1, tw_n = 0, inverse = 0, scale = 1.0),
    case(len = 2048, m = 1024, inner = 1, in_hi = 1024, in_lo = 0, in_stride = 1, out_hi = 1024,
        out_lo = 0, out_stride = 1, tw_n = 0, inverse = 1, scale = 1.0 / 1024.0),
    case(len = 2048, m = 2048, inner = 1, in_hi = 2048, in_lo = 0, in_stride = 1, out_hi = 2048,
        out_lo = 0, out_stride = 1, tw_n = 0, inverse = 0, scale = 1.0),
    case(len = 192, m = 8, inner = 8, in_hi = 64, in_lo = 1, in_stride = 8, out_hi = 64, out_lo = 1,
        out_stride = 8, tw_n = 64, inverse = 0, scale = 1.0),
    case(len = 192, m = 8, inner = 8, in_hi = 64, in_lo = 8, in_stride = 1, out_hi = 64, out_lo = 1,
        out_stride = 8, tw_n = 0, inverse = 0, scale = 1.0),
    case(len = 8192, m = 4, inner = 2048, in_hi = 8192, in_lo = 1, in_stride = 2048, out_hi = 8192,
        out_lo = 1, out_stride = 2048, tw_n = 8192, inverse = 1, scale = 1.0),
    case(len = 8192, m = 2048, inner = 4, in_hi = 8192, in_lo = 2048, in_stride = 1, out_hi = 8192,
        out_lo = 1, out_stride = 4, tw_n = 0, inverse = 1, scale = 1.0 / 8192.0))]
pub fn fft_pass(
    // Interleaved `f32` rather than `Vec2` elements: the certifier's dyn path cannot yet
    // feed vector bindings to the oracle.
    input: &[f32; len * 2],
    #[out] output: &mut [f32; len * 2],
    len: u32,
    m: u32,
    inner: u32,
    in_hi: u32,
    in_lo: u32,
    in_stride: u32,
    out_hi: u32,
    out_lo: u32,
    out_stride: u32,
    tw_n: u32,
    inverse: u32,
    scale: f32,
) {
    #[shared]
    let mut sre = [0.0f32; 2048];
    #[shared]
    let mut sim = [0.0f32; 2048];
    let lid = local_index();
    // `m`, `inner` and every butterfly span are powers of two: shifts and masks, not
    // divisions.
    let log_m = m.trailing_zeros();
    let log_inner = inner.trailing_zeros();
    let count = len >> log_m;
    let groups = ((WG * ITEMS) >> log_m).max(1);
    let slots = groups * m;
    let first = workgroup_index() * groups;
    let sign = if inverse != 0 { 1.0f32 } else { -1.0f32 };
    // When a sub-transform is longer than `WG·ITEMS`, the launch has more workgroups than
    // sub-transforms.
    if first < count {
        // Load in bit-reversed order, so that the butterflies run in place.
        let mut i = lid;
        while i < slots {
            let t = first + (i >> log_m);
            let j = i & (m - 1);
            let mut re = 0.0f32;
            let mut im = 0.0f32;
            if t < count {
                let src = (t >> log_inner) * in_hi + (t & (inner - 1)) * in_lo + j * in_stride;
                re = input[2 * src];
                im = input[2 * src + 1];
            }
            let mut r = 0u32;
            if log_m > 0 {
                r = j.reverse_bits() >> (32 - log_m);
            }
            // Slot `d` lives at `d ^ ((d >> 5) & 31)`: bit-reversed stores of consecutive `j`
            // land 32 slots apart, which would all hit one memory bank.
            let d = (i & !(m - 1)) + r;
            let ds = d ^ ((d >> 5) & 31);
            sre[ds] = re;
            sim[ds] = im;
            i += WG;
        }
        workgroup_barrier();

        // Radix-2 stages: butterflies of span `2h` with twiddles `e^(∓2πi·r/(2h))`.
        let half_m = m / 2;
        let mut h = 1u32;
        let mut log_2h = 1u32;
        while h < m {
            let mut t = lid;
            while t < slots / 2 {
                // Butterfly `t`: transform `t / half_m`, pair `q` within it, whose lower
                // element is `q` with bit `log2 h` opened up.
                let q = t & (half_m - 1);
                let r = q & (h - 1);
                let a = ((t >> (log_m - 1)) << log_m) + q + (q & !(h - 1));
                let c = a + h;
                // The angle in units of 2^-30 turns, reduced to [0, π/4].
                let e = r << (30 - log_2h);
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
                let wr = ct;
                let wi = sign * st;
                let a = a ^ ((a >> 5) & 31);
                let c = c ^ ((c >> 5) & 31);
                let xr = sre[c];
                let xi = sim[c];
                let vr = xr * wr - xi * wi;
                let vi = xr * wi + xi * wr;
                let ur = sre[a];
                let ui = sim[a];
                sre[a] = ur + vr;
                sim[a] = ui + vi;
                sre[c] = ur - vr;
                sim[c] = ui - vi;
                t += WG;
            }
            workgroup_barrier();
            h = h * 2;
            log_2h += 1;
        }

        // Twiddle, scale and store with the output strides.
        let mut i = lid;
        while i < slots {
            let t = first + (i >> log_m);
            if t < count {
                let kq = i & (m - 1);
                let is = i ^ ((i >> 5) & 31);
                let mut re = sre[is];
                let mut im = sim[is];
                if tw_n > 0 {
                    let e = (((t & (inner - 1)) * kq) & (tw_n - 1)) << (30 - tw_n.trailing_zeros());
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
                    let wr = ct;
                    let wi = sign * st;
                    let nr = re * wr - im * wi;
                    im = re * wi + im * wr;
                    re = nr;
                }
                let o = (t >> log_inner) * out_hi + (t & (inner - 1)) * out_lo + kq * out_stride;
                output[2 * o] = re * scale;
                output[2 * o + 1] = im * scale;
            }
            i += WG;
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

/// The independent reference: each sub-transform as a direct `O(m²)` DFT in `f64`, with the
/// pass's strides, twiddles and scale.
#[allow(clippy::too_many_arguments)]
pub fn fft_pass_reference(
    input: &[f32],
    len: u32,
    m: u32,
    inner: u32,
    in_hi: u32,
    in_lo: u32,
    in_stride: u32,
    out_hi: u32,
    out_lo: u32,
    out_stride: u32,
    tw_n: u32,
    inverse: u32,
    scale: f32,
) -> Result<Vec<f32>, ForgeError> {
    let sign = if inverse != 0 { 1.0 } else { -1.0 };
    let (m, inner) = (m as u64, inner as u64);
    let mut out = vec![0.0f32; 2 * len as usize];
    let w = roots(sign, m);
    let tw = roots(sign, tw_n.max(1) as u64);
    for t in 0..len as u64 / m {
        let (hi, lo) = (t / inner, t % inner);
        let x: Vec<(f64, f64)> = (0..m)
            .map(|j| {
                let src = (hi * in_hi as u64 + lo * in_lo as u64 + j * in_stride as u64) as usize;
                (input[2 * src] as f64, input[2 * src + 1] as f64)
            })
            .collect();
        for k in 0..m {
            let (mut re, mut im) = (0.0, 0.0);
            for (j, &(xr, xi)) in x.iter().enumerate() {
                let (c, s) = w[(j as u64 * k % m) as usize];
                re += xr * c - xi * s;
                im += xr * s + xi * c;
            }
            if tw_n > 0 {
                let (c, s) = tw[(lo * k % tw_n as u64) as usize];
                (re, im) = (re * c - im * s, re * s + im * c);
            }
            let o = hi * out_hi as u64 + lo * out_lo as u64 + k * out_stride as u64;
            out[2 * o as usize] = (re * scale as f64) as f32;
            out[2 * o as usize + 1] = (im * scale as f64) as f32;
        }
    }
    Ok(out)
}

/// Checks interleaved data of `batch` transforms of length `n` and runs them.
fn transform(
    rt: &mut ForgeRuntime,
    data: &[f32],
    n: usize,
    batch: usize,
    inverse: bool,
) -> Result<Vec<f32>, ForgeError> {
    let invalid = |message: String| ForgeError::InvalidArgument {
        kernel: fft_pass::NAME,
        message,
    };
    if data.is_empty() || n == 0 || batch == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: fft_pass::NAME,
            what: format!("{} floats, n = {n}, batch = {batch}", data.len()),
        });
    }
    if data.len() % 2 != 0 {
        return Err(invalid(format!(
            "the data has {} floats, an odd number; complex values are interleaved (re, im) pairs",
            data.len()
        )));
    }
    if !n.is_power_of_two() || n > FFT_MAX_LEN {
        return Err(invalid(format!(
            "the transform length n = {n} is not a power of two from 1 to 2^22"
        )));
    }
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
    let len = dim(fft_pass::NAME, "n * batch", n * batch)?;
    let n32 = n as u32;
    let (dir, scale) = if inverse {
        (1, 1.0 / n as f32)
    } else {
        (0, 1.0)
    };
    if n <= FFT_MAX_LOCAL {
        fft_pass::run(rt, data, len, n32, 1, n32, 0, 1, n32, 0, 1, 0, dir, scale)
    } else {
        let n2 = FFT_MAX_LOCAL as u32;
        let n1 = n32 / n2;
        let x = rt.upload(data)?;
        let mid = rt.zeros::<f32>(data.len())?;
        let out = rt.zeros::<f32>(data.len())?;
        // Columns: length n1, stride n2, twiddled by e^(∓2πi·j2·k1/n), stored at k1·n2 + j2.
        fft_pass::launch(
            rt, &x, &mid, len, n1, n2, n32, 1, n2, n32, 1, n2, n32, dir, 1.0,
        )?;
        // Rows: length n2, contiguous, stored at k1 + n1·k2.
        fft_pass::launch(
            rt, &mid, &out, len, n2, n1, n32, n2, 1, n32, 1, n1, 0, dir, scale,
        )?;
        rt.download(&out)
    }
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
