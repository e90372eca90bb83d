//! NCCL's collectives in a build without the `nccl` feature: the entry points the group
//! calls, each saying there is no NCCL here. Layer 4 (the devices), as
//! `device/cuda_absent.rs` stands in for the CUDA device.

use crate::backend::Collectives;
use crate::error::{ForgeError, Result};

/// The error that says how to get NCCL's collectives.
fn not_built() -> ForgeError {
    ForgeError::NotBuilt {
        what: "NCCL's collectives (`DeviceGroup::use_nccl`)".into(),
        feature: "nccl",
    }
}

/// Whether libnccl can be loaded: never asked for, in this build.
pub fn library_present() -> bool {
    false
}

/// NCCL's version: in this build, the error that says how to get NCCL.
pub fn version() -> Result<i32> {
    Err(not_built())
}

/// NCCL's communicators over CUDA devices: in this build, the error that says how to get
/// NCCL.
pub fn open(ordinals: &[usize]) -> Result<Box<dyn Collectives>> {
    let _ = ordinals;
    Err(not_built())
}
