use wgsl_forge::prelude::*;

// `idx` is no binding of the kernel: the destinations are `dst`.
#[forge_kernel(threads = n, inputs(idx = permutation))]
pub fn scatter(x: &[f32; n], dst: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[dst[i]] = x[i];
    }
}

fn main() {}
