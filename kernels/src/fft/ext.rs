//! The runtime methods: the seed's `rt.fft` and the inverse and batched transforms.

use super::plan::transform;
#[cfg(doc)]
use forge_core::ForgeError;
use forge_core::{ForgeRuntime, Result};
use std::borrow::BorrowMut;

/// `rt.fft(&complex_interleaved)`, the seed's signature, and what goes beyond it: the
/// inverse and batches.
pub trait FftExt: BorrowMut<ForgeRuntime> {
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
    fn fft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>> {
        let n = complex_interleaved.len() / 2;
        transform(self.borrow_mut(), complex_interleaved, n.max(1), 1, false)
    }

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
    fn ifft(&mut self, complex_interleaved: &[f32]) -> Result<Vec<f32>> {
        let n = complex_interleaved.len() / 2;
        transform(self.borrow_mut(), complex_interleaved, n.max(1), 1, true)
    }

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
    fn fft_batched(&mut self, data: &[f32], n: usize, batch: usize) -> Result<Vec<f32>> {
        transform(self.borrow_mut(), data, n, batch, false)
    }

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
    fn ifft_batched(&mut self, data: &[f32], n: usize, batch: usize) -> Result<Vec<f32>> {
        transform(self.borrow_mut(), data, n, batch, true)
    }
}

impl FftExt for ForgeRuntime {}
