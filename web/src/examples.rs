//! The kernels the page certifies beside the built-ins: the examples' kernels and the
//! contract's, taken from their own files. The page certifies the very source that
//! `cargo run --example ..` and `tests/contract.rs` run, not a copy of it. Each example
//! file's `main` is its native program: it is compiled here, never called.

use wgsl_forge::prelude::*;

#[path = "../../examples/histogram.rs"]
pub mod histogram;
#[path = "../../examples/own_device.rs"]
pub mod own_device;
#[path = "../../examples/prefix_sum.rs"]
pub mod prefix_sum;
// Its `main` is private, as a binary's may be: unused here.
#[allow(dead_code)]
#[path = "../../examples/quickstart.rs"]
pub mod quickstart;
#[path = "../../examples/reduction.rs"]
pub mod reduction;
#[path = "../../examples/softmax.rs"]
pub mod softmax;
#[path = "../../examples/transpose.rs"]
pub mod transpose;
#[allow(dead_code)]
#[path = "../../examples/web/main.rs"]
pub mod web;

/// DESIGN.md's kernels, as `tests/contract.rs` certifies them.
#[path = "../../tests/contract_kernels/mod.rs"]
pub mod contract;

/// Every kernel of `examples/`.
pub fn example_kernels() -> Vec<&'static dyn Kernel> {
    vec![
        &histogram::histogram64::Kernel,
        &own_device::scale_shift::Kernel,
        &prefix_sum::block_scan::Kernel,
        &quickstart::poly_hash::Kernel,
        &reduction::block_sums::Kernel,
        &softmax::softmax::Kernel,
        &transpose::transpose::Kernel,
        &web::xorshift_rounds::Kernel,
    ]
}

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
