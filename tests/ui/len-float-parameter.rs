use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn fill(#[out] y: &mut [f32; s], n: u32, s: f32) {
    let i = global_index();
    if i < n {
        y[i] = s;
    }
}

fn main() {}
