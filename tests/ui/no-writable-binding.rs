use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn sum(x: &[f32; n], n: u32) {
    let i = global_index();
    let mut acc = 0.0f32;
    if i < n {
        acc += x[i];
    }
}

fn main() {}
