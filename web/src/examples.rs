//! The kernels the page certifies beside the built-ins: the examples' kernels and the
//! contract's, taken from their own files. The page certifies the very source that
//! `cargo run --example ..` and `tests/contract.rs` run, not a copy of it. Each example
//! file's `main` is its native program: it is compiled here, never called.

use wgsl_forge::prelude::*;

/// The examples' kernels, from the list the CUDA test shares.
#[path = "../../tests/example_kernels/mod.rs"]
mod example_kernels;
pub use example_kernels::example_kernels;

/// DESIGN.md's kernels, as `tests/contract.rs` certifies them.
#[path = "../../tests/contract_kernels/mod.rs"]
pub mod contract;

/// Every kernel of the contract's file, each instance of a generic one included.
pub fn contract_kernels() -> Vec<&'static dyn Kernel> {
    vec![
        &contract::sim::blur::Kernel,
        &contract::sim::row_sums::Kernel,
        contract::sim::scale::kernel::<f32>(),
        contract::sim::scale::kernel::<f16>(),
        &contract::bins::Kernel,
    ]
}
