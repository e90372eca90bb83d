use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * 2.0;
        x[i] = 0.0;
    }
}

fn main() {}
