use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn phase(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * f32::consts::HALF_PI;
    }
}

fn main() {}
