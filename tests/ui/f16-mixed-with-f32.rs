use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[f16; n], #[out] y: &mut [f16; n], n: u32, k: f32) {
    let i = global_index();
    if i < n {
        let big: f16 = 70000.0;
        y[i] = x[i] * k + big;
    }
}

fn main() {}
