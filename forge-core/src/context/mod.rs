//! The runtime context: adapter selection, device and queue, limits, and the statistics
//! that tests use to prove caching. STUB: signatures fixed, bodies to be written.

use crate::error::Result;
use std::path::PathBuf;

/// Which shader form the runtime hands to wgpu.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// WGSL source (every wgpu backend).
    Wgsl,
    /// SPIR-V translated by naga, through passthrough (Vulkan only).
    Spirv,
}

/// Counters that show what the runtime did, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Compute pipelines created.
    pub pipelines_compiled: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Buffer readbacks (maps for reading).
    pub readbacks: u64,
    /// Buffers created (pool misses).
    pub buffers_created: u64,
    /// Buffers reused from the pool.
    pub buffers_reused: u64,
}

/// Builder for [`ForgeRuntime`].
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {}

/// The wgpu runtime that runs kernels.
pub struct ForgeRuntime {}

impl ForgeRuntime {
    /// Creates a runtime on the default adapter (`FORGE_ADAPTER` filters by name).
    pub fn new(_capacity_bytes: u64, _cache_dir: Option<PathBuf>) -> Result<Self> {
        unimplemented!()
    }
}
