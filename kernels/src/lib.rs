//! The built-in kernels of WGSL Forge, each written with `#[forge_kernel]`.
//!
//! This crate sits below the `wgsl-forge` facade, so its kernels name the runtime as
//! `crate = ::forge_core`; user crates need no such option.

pub mod attention;
pub mod axpy;
mod dims;
pub mod fft;
pub mod gemm;
pub mod gemm_f16;
pub mod gemv;
pub mod p64_project;
pub mod registry;
#[cfg(not(target_arch = "wasm32"))]
pub mod sharded;
pub mod ternary_gemv;
pub mod ternary_w2a8;
pub mod topk;

/// The built-in kernels' runtime methods, and the types and helpers their arguments need.
pub mod prelude {
    pub use crate::attention::{AttentionExt, AttentionShape};
    pub use crate::axpy::AxpyExt;
    pub use crate::fft::FftExt;
    pub use crate::gemm::GemmExt;
    pub use crate::gemm_f16::GemmF16Ext;
    pub use crate::gemv::GemvExt;
    pub use crate::p64_project::{P64GpuWords64, P64ProjectExt};
    #[cfg(not(target_arch = "wasm32"))]
    pub use crate::sharded::ShardedExt;
    pub use crate::ternary_gemv::{pack_ternary, TernaryGemvExt};
    pub use crate::ternary_w2a8::{quantize_activations, QuantizedActivations, TernaryW2a8Ext};
    pub use crate::topk::{TopkExt, TOPK_PAD_INDEX};
}
