use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn mantissa(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = frexp(x[i]);
    }
}

fn main() {}
