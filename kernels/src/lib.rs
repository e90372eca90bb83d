//! The built-in kernels of WGSL Forge, each written with `#[forge_kernel]`.
//!
//! This crate sits below the `wgsl-forge` facade, so its kernels name the runtime as
//! `crate = ::forge_core`; user crates need no such option.

pub mod axpy;
pub mod gemv;
pub mod registry;

/// The built-in kernels' runtime methods.
pub mod prelude {
    pub use crate::axpy::AxpyExt;
    pub use crate::gemv::GemvExt;
}
