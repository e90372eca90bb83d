//! The typed call's host helpers: what the generated `run`, `launch` and `Kernel` impl
//! call around a launch, to size it and to hand its results back typed. Part of the
//! runtime (layer 5).
//!
//! They are public so that generated code can call them (through `__private::oracle`, the
//! path the macro names), not as a user API. What the CPU oracle shares with the call (the
//! LEN and `threads` evaluators, the length checks, an output's bytes) is in
//! [`crate::sizes`], below both.

use crate::error::{ForgeError, Result};
use crate::kernel::HostBuffer;
use crate::schedule::Threads;

/// Every logical invocation of a grid (`x·y·z`), as the tuned problem sizes count them:
/// saturating at `u64::MAX`, as [`Threads::total`] does (three `u32`s can pass `u64`, where
/// a plain product would panic in a debug build and wrap in a release one).
pub fn total(threads: [u32; 3]) -> u64 {
    launch_threads(threads).total()
}

/// A grid's logical invocations as the launches take them.
pub fn launch_threads(threads: [u32; 3]) -> Threads {
    Threads([threads[0] as u64, threads[1] as u64, threads[2] as u64])
}

/// A type-erased buffer that a launch returned, back to a typed vector.
pub fn into_vec<T: bytemuck::Pod>(
    kernel: &'static str,
    arg: &'static str,
    buf: Option<HostBuffer>,
) -> Result<Vec<T>> {
    let buf = buf.ok_or_else(|| ForgeError::InvalidArgument {
        kernel,
        message: format!("the runtime returned no data for output `{arg}`"),
    })?;
    let bytes = buf.bytes();
    if bytes.len() % std::mem::size_of::<T>() != 0 {
        return Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "output `{arg}` has {} bytes, not a whole number of elements",
                bytes.len()
            ),
        });
    }
    Ok(bytemuck::pod_collect_to_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_past_u64_saturates() {
        assert_eq!(total([3, 5, 7]), 105);
        assert_eq!(total([u32::MAX, 1, 1]), u32::MAX as u64);
        assert_eq!(
            total([u32::MAX, u32::MAX, 1]),
            (u32::MAX as u64) * (u32::MAX as u64)
        );
        assert_eq!(total([u32::MAX, u32::MAX, 2]), u64::MAX);
        assert_eq!(total([u32::MAX; 3]), u64::MAX);
        assert_eq!(total([0, u32::MAX, u32::MAX]), 0);
    }
}
