use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scaled(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let Kernel = 2.0f32;
    if i < n {
        y[i] = x[i] * Kernel;
    }
}

fn main() {}
