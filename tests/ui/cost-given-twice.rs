use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, cost(bytes = 8 * n, bytes = 4 * n))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
