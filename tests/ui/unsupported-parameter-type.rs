use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn fill(#[out] y: &mut [f32; n], n: u32, v: u64) {
    let i = global_index();
    if i < n {
        y[i] = 1.0;
    }
}

fn main() {}
