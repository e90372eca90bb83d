//! WGSL Forge facade.
pub use forge_core::*;
