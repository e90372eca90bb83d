use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, a: f32) {
    const A: f32 = a * 2.0;
    let i = global_index();
    if i < n {
        y[i] = x[i] * A;
    }
}

fn main() {}
