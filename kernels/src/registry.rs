//! Every built-in kernel, for the certifier, the tuner and the CLI.

use forge_core::Kernel;

/// The built-in kernels, by name.
pub fn builtin() -> Vec<&'static dyn Kernel> {
    vec![
        &crate::gemv::gemv::Kernel,
        &crate::axpy::axpy::Kernel,
        &crate::gemm::gemm::Kernel,
        &crate::gemm_f16::gemm_f16::Kernel,
        &crate::gemm_f16::gemm_f16_simt::Kernel,
        &crate::attention::attention::Kernel,
        &crate::attention::attention_rows::Kernel,
        &crate::attention::attention_f32::Kernel,
        &crate::ternary_gemv::ternary_gemv::Kernel,
        &crate::ternary_w2a8::ternary_gemv_w2a8::Kernel,
        &crate::p64_project::p64_project::Kernel,
        &crate::topk::topk_select::Kernel,
        &crate::topk::topk_rows::Kernel,
        &crate::topk::topk_radix_hist::Kernel,
        &crate::topk::topk_radix_mark::Kernel,
        &crate::topk::topk_radix_refine::Kernel,
        &crate::topk::topk_radix_select::Kernel,
        &crate::topk::topk_radix_collect::Kernel,
        &crate::topk::topk_radix_sort::Kernel,
        &crate::fft::fft_pass::Kernel,
        &crate::fft::fft_pass16::Kernel,
    ]
}
