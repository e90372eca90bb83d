use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn big(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let mut scratch = [0.0f32; 4194304];
    if i < n {
        scratch[i % 4194304] = x[i];
        y[i] = scratch[i % 4194304];
    }
}

fn main() {}
