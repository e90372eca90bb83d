use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let mut t = [0.0f32; n];
    if i < n {
        t[0] = x[i];
        y[i] = t[0];
    }
}

fn main() {}
