//! The host side of a transform: its plan (the passes' radices and kernels) and the
//! recording of its passes on device tensors.

use super::{fft_pass, fft_pass16, FFT_MAX_LEN, FFT_MAX_LOCAL, FFT_MULTI_PASS_RADIX_LOG};
use crate::dims::{check_len, dim};
use forge_core::{ForgeError, ForgeRuntime, GpuTensor, Result, Schedule};

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
) -> Result<()> {
    check_shape(n, batch)?;
    fft_record_plan(
        rt,
        &fft_plan(n),
        input,
        scratch,
        output,
        batch,
        inverse,
        schedule,
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

/// [`fft_record`] with the plan given, to compare plans (`forge bench` tries several): the
/// transforms' length `n` is the product of its radices. `schedule` applies to the
/// passes that run [`fft_pass`] ([`fft_pass16`] has one schedule).
///
/// Errors: those of [`fft_record`], and radices that are not powers of two up to 4096
/// ([`ForgeError::InvalidArgument`]).
#[allow(clippy::too_many_arguments)]
pub fn fft_record_plan(
    rt: &mut ForgeRuntime,
    plan: &FftPlan,
    input: &GpuTensor<[f32; 2]>,
    scratch: Option<&GpuTensor<[f32; 2]>>,
    output: &GpuTensor<[f32; 2]>,
    batch: usize,
    inverse: bool,
    schedule: Option<&Schedule>,
) -> Result<()> {
    let radices = &plan.radices[..];
    let powers = radices
        .iter()
        .all(|&m| m.is_power_of_two() && m as usize <= FFT_MAX_LOCAL);
    let product = radices
        .iter()
        .try_fold(1usize, |p, &m| p.checked_mul(m as usize));
    let (true, Some(n)) = (powers, product) else {
        return Err(invalid(format!(
            "radices {radices:?} are not powers of two up to 4096 whose product fits a usize"
        )));
    };
    let len = check_shape(n, batch)?;
    let scale = if inverse { 1.0 / n as f32 } else { 1.0 };
    let dir = u32::from(inverse);
    let scratch = match (scratch, radices.len()) {
        (_, 1) => output,
        (Some(s), _) => s,
        (None, _) => {
            return Err(invalid(format!(
                "a transform of length {n} takes several passes and needs a scratch tensor"
            )))
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

/// Checks a transform's shape; returns `n * batch`, which must fit in `u32`.
fn check_shape(n: usize, batch: usize) -> Result<u32> {
    if n == 0 || batch == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: fft_pass::NAME,
            what: format!("n = {n}, batch = {batch}"),
        });
    }
    if !n.is_power_of_two() || n > FFT_MAX_LEN {
        return Err(invalid(format!(
            "the transform length n = {n} is not a power of two from 1 to 2^22"
        )));
    }
    let total = n
        .checked_mul(batch)
        .ok_or_else(|| invalid(format!("n * batch = {n} * {batch} overflows")))?;
    dim(fft_pass::NAME, "n * batch", total)
}

/// Checks interleaved data of `batch` transforms of length `n` and runs them.
pub(super) fn transform(
    rt: &mut ForgeRuntime,
    data: &[f32],
    n: usize,
    batch: usize,
    inverse: bool,
) -> Result<Vec<f32>> {
    check_data(data, n, batch)?;
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

/// Checks interleaved data of `batch` transforms of length `n`: `2·n·batch` floats, `n` a
/// power of two from 1 to 2^22, nothing empty.
pub(crate) fn check_data(data: &[f32], n: usize, batch: usize) -> Result<()> {
    if data.is_empty() {
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
    check_shape(n, batch)?;
    let floats = 2 * n as u128 * batch as u128;
    check_len(fft_pass::NAME, "data", "2 * n * batch", floats, data.len())
}

/// An argument error of a transform.
fn invalid(message: String) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel: fft_pass::NAME,
        message,
    }
}
