use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scaled(x: &[f32; n], #[out] y: &mut [f32; n], rt: f32, n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * rt;
    }
}

fn main() {}
