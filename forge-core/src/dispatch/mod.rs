//! Dispatch: binds buffers, folds workgroup counts past the per-dimension limit, records,
//! submits once and reads back once. STUB.

/// One binding's host data for [`crate::ForgeRuntime::launch_host`].
pub enum HostArg<'a> {
    /// Read-only: uploaded.
    In(&'a [u8]),
    /// Read-write: uploaded, then written back into the slice.
    InOut(&'a mut [u8]),
    /// Output: this many zeroed bytes are allocated and returned.
    Out(u64),
}
