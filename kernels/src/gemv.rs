//! Matrix-vector product `y = A·x` for a row-major `m×n` matrix.

use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `y = A·x` for a row-major `m×n` matrix `A`: one invocation per row.
#[forge_kernel(crate = ::forge_core, workgroup = 64, threads = m, ext = false, reference = gemv_reference,
    case(m = 1, n = 1), case(m = 7, n = 13), case(m = 64, n = 64), case(m = 300, n = 17))]
pub fn gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    let row = global_index();
    if row < m {
        let mut acc = 0.0f32;
        for j in 0..n {
            acc += a[row * n + j] * x[j];
        }
        y[row] = acc;
    }
}

/// The independent reference: an f64 loop, rounded once at the end.
pub fn gemv_reference(a: &[f32], x: &[f32], m: u32, n: u32) -> Result<Vec<f32>, ForgeError> {
    let (m, n) = (m as usize, n as usize);
    Ok((0..m).map(|r| (0..n).map(|j| a[r * n + j] as f64 * x[j] as f64).sum::<f64>() as f32).collect())
}

/// `rt.gemv(&a, &x, m, n)`, the seed's signature.
pub trait GemvExt {
    /// `y = A·x` for a row-major `m×n` matrix `A`.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let y = rt.gemv(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 1.0, 1.0], 2, 3)?;
    /// assert_eq!(y, vec![6.0, 15.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn gemv(&mut self, a: &[f32], x: &[f32], m: usize, n: usize) -> Result<Vec<f32>, ForgeError>;
}

impl GemvExt for ForgeRuntime {
    fn gemv(&mut self, a: &[f32], x: &[f32], m: usize, n: usize) -> Result<Vec<f32>, ForgeError> {
        let (m, n) = (dim("gemv", "m", m)?, dim("gemv", "n", n)?);
        gemv::run(self, a, x, m, n)
    }
}

/// A `usize` dimension as the kernel's `u32`.
pub(crate) fn dim(kernel: &'static str, name: &str, v: usize) -> Result<u32, ForgeError> {
    u32::try_from(v).map_err(|_| ForgeError::InvalidArgument {
        kernel,
        message: format!("`{name}` = {v} does not fit in u32, the kernel's index type"),
    })
}
