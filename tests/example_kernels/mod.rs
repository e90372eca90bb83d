//! The kernels of `examples/`, taken from their own files, for the places that certify them
//! beside the built-ins: the browser page (`web/src/examples.rs`) and the CUDA test
//! (`tests/cuda_runtime.rs`). Each example file's `main` is its native program: it is
//! compiled here, never called.
#![allow(dead_code)]

use wgsl_forge::prelude::*;

#[path = "../../examples/histogram.rs"]
pub mod histogram;
#[path = "../../examples/own_device.rs"]
pub mod own_device;
#[path = "../../examples/prefix_sum.rs"]
pub mod prefix_sum;
#[path = "../../examples/quickstart.rs"]
pub mod quickstart;
#[path = "../../examples/reduction.rs"]
pub mod reduction;
#[path = "../../examples/softmax.rs"]
pub mod softmax;
#[path = "../../examples/staged_gemv.rs"]
pub mod staged_gemv;
#[path = "../../examples/transpose.rs"]
pub mod transpose;
#[path = "../../examples/web/main.rs"]
pub mod web;

/// Every kernel of `examples/`.
pub fn example_kernels() -> Vec<&'static dyn Kernel> {
    vec![
        &histogram::histogram64::Kernel,
        &own_device::scale_shift::Kernel,
        &prefix_sum::block_scan::Kernel,
        &quickstart::poly_hash::Kernel,
        &reduction::block_sums::Kernel,
        &softmax::softmax::Kernel,
        &staged_gemv::staged_gemv::Kernel,
        &transpose::transpose::Kernel,
        &web::xorshift_rounds::Kernel,
    ]
}
