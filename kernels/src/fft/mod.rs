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
//! each invocation holds 16 values of a column; the first stage is of radix
//! `2^(log2 m mod 4)` (none when that is 0), the others are DFTs of 16 points in registers
//! (radix 4 · radix 4), and the values go between stages through 16 KiB of workgroup
//! memory, real parts then imaginary parts. [`fft_pass`], below, runs every stage in
//! workgroup memory and takes every radix; [`fft_record`] uses [`fft_pass16`] for the
//! passes of radix 16 or more ([`fft_plan`]), [`fft_pass`] for the others, and
//! [`fft_record_plan`] takes a plan ([`FftPlan`]) to compare them (on the H200 [`fft_pass16`]
//! takes 0.47–0.62× the time of [`fft_pass`]).
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
//!
//! # Files
//! `passes.rs` holds the two kernels and their helpers, `reference.rs` the independent
//! reference of a pass, `plan.rs` the host side (plans, and recording the passes of a
//! transform), and `ext.rs` the runtime methods ([`FftExt`]).

mod ext;
mod passes;
mod plan;
mod reference;

pub use ext::FftExt;
pub use passes::{fft_pass, fft_pass16};
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use plan::check_data;
pub use plan::{fft_plan, fft_radices, fft_record, fft_record_plan, FftPlan};
pub use reference::fft_pass_reference;

/// The longest transform one pass computes in workgroup memory.
pub const FFT_MAX_LOCAL: usize = 4096;

/// The longest transform.
pub const FFT_MAX_LEN: usize = 1 << 22;

/// The largest radix of a pass of a transform longer than [`FFT_MAX_LOCAL`]: with 2048
/// slots a workgroup then holds at least two columns. On the H200, 2^20 as 1024·1024 took
/// 0.8× the time of 128·128·64 (fewer passes outweigh the shorter contiguous runs).
pub(crate) const FFT_MULTI_PASS_RADIX_LOG: u32 = 10;
