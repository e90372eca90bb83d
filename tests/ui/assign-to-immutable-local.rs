use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn accumulate(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let acc = 0.0f32;
        acc = x[i] * 2.0;
        y[i] = acc;
    }
}

fn main() {}
