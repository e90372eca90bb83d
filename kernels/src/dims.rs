//! Checks shared by the built-in kernels' seed-signature methods, which take `usize`
//! dimensions while the kernels index in `u32`.

use forge_core::ForgeError;

/// A `usize` dimension as the kernel's `u32`, or an error that names it.
pub(crate) fn dim(kernel: &'static str, name: &str, v: usize) -> Result<u32, ForgeError> {
    u32::try_from(v).map_err(|_| ForgeError::InvalidArgument {
        kernel,
        message: format!("`{name}` = {v} does not fit in u32, the kernel's index type"),
    })
}
