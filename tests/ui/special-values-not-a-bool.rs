use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, special_values = yes)]
pub fn doubled(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * 2.0f32;
    }
}

fn main() {}
