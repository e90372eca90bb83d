use wgsl_forge::prelude::*;

// A cost counts bytes and flops; anything else is named, with the form to write.
#[forge_kernel(threads = n, cost(bytes = 8 * n, loads = n))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
