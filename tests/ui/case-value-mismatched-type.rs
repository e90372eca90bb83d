use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, case(n = -1, k = 2, s = 1), case(n = 4, k = 1.5, s = true))]
pub fn fill(#[out] y: &mut [f32; n], n: u32, k: i32, s: f32) {
    let i = global_index();
    if i < n {
        y[i] = k as f32 * s;
    }
}

fn main() {}
