//! Checks shared by the built-in kernels' seed-signature methods, which take `usize`
//! dimensions while the kernels index in `u32`.

use forge_core::{ForgeError, Result};

/// A `usize` dimension as the kernel's `u32`, or an error that names it.
pub(crate) fn dim(kernel: &'static str, name: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| ForgeError::InvalidArgument {
        kernel,
        message: format!("`{name}` = {v} does not fit in u32, the kernel's index type"),
    })
}

/// [`dim`] of each named dimension, in order.
pub(crate) fn dims<const N: usize>(
    kernel: &'static str,
    named: [(&str, usize); N],
) -> Result<[u32; N]> {
    let mut out = [0u32; N];
    for (o, (name, v)) in out.iter_mut().zip(named) {
        *o = dim(kernel, name, v)?;
    }
    Ok(out)
}

/// Host elements as the `Vec4`/`UVec4` elements a kernel binds: borrowed when `v.len()` is
/// a multiple of 4, else copied and padded with zeros to the next multiple.
pub(crate) fn quads<T: bytemuck::Pod>(v: &[T]) -> std::borrow::Cow<'_, [[T; 4]]> {
    match bytemuck::try_cast_slice::<T, [T; 4]>(v) {
        Ok(q) => std::borrow::Cow::Borrowed(q),
        Err(_) => {
            let mut q = vec![[T::zeroed(); 4]; v.len().div_ceil(4)];
            bytemuck::cast_slice_mut::<[T; 4], T>(&mut q)[..v.len()].copy_from_slice(v);
            std::borrow::Cow::Owned(q)
        }
    }
}

/// `LengthMismatch` unless `actual == expected`.
pub(crate) fn check_len(
    kernel: &'static str,
    arg: &'static str,
    expr: &'static str,
    expected: u128,
    actual: usize,
) -> Result<()> {
    if actual as u128 == expected {
        return Ok(());
    }
    Err(ForgeError::LengthMismatch {
        kernel,
        arg,
        expr,
        expected: u64::try_from(expected).unwrap_or(u64::MAX),
        actual,
    })
}
