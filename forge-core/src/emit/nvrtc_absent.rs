//! NVRTC in a build without the `cuda` feature: the same functions as `nvrtc` with it,
//! each an error that says how to get the real ones. Layer 2 (offline work). The CUDA
//! backend's own file: what `forge emit --backend ptx` meets in a build without CUDA,
//! instead of a `cfg` at every caller.

use crate::error::{ForgeError, Result};

/// What every function here says.
fn not_built(kernel: &'static str, target: &'static str) -> ForgeError {
    ForgeError::CannotEmit {
        kernel,
        target,
        reason: "this build has no NVRTC: build with the `cuda` feature (`cargo build -p forge-cli --features cuda`)".into(),
    }
}

/// NVRTC's version: never, in this build.
pub fn version() -> Result<(i32, i32)> {
    Err(ForgeError::NotBuilt {
        what: "NVRTC (the CUDA backend's compiler)".into(),
        feature: "cuda",
    })
}

/// `kernel`'s CUDA `source` compiled to PTX: never, in this build.
pub fn compile_ptx(kernel: &'static str, source: &str, arch: &str) -> Result<String> {
    let _ = (source, arch);
    Err(not_built(kernel, "ptx"))
}

/// `kernel`'s CUDA `source` compiled to a cubin: never, in this build.
pub fn compile_cubin(kernel: &'static str, source: &str, arch: &str) -> Result<Vec<u8>> {
    let _ = (source, arch);
    Err(not_built(kernel, "cuda"))
}
