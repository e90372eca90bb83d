//! The CUDA device in a build without the `cuda` feature: the entry points that the
//! builder and the tools call, each saying there is no CUDA here. Layer 4 (the devices),
//! the CUDA backend's own file: a build without the feature pulls in no CUDA crate, and
//! nothing above this module asks which build it is in (as wgpu-hal's `empty` backend
//! stands in for a real one).

use crate::backend::Device;
use crate::error::{ForgeError, Result};

/// Whether libcuda can be loaded: never asked for, in this build.
pub fn driver_present() -> bool {
    false
}

/// CUDA device `ordinal` as the runtime's device: in this build, the error that says how
/// to get the CUDA backend.
pub fn open(ordinal: usize, capacity: u64) -> Result<Box<dyn Device>> {
    let _ = (ordinal, capacity);
    Err(ForgeError::NotBuilt {
        what: "the `cuda` backend (FORGE_BACKEND=cuda, `Backend::Cuda`)".into(),
        feature: "cuda",
    })
}

/// The number of CUDA devices: in this build, the error that says how to get the CUDA
/// backend.
pub fn device_count() -> Result<usize> {
    open(0, 0).map(|_| 0)
}
