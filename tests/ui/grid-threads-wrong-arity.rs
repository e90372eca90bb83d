use wgsl_forge::prelude::*;

// A grid has 1, 2 or 3 dimensions.
#[forge_kernel(threads = (w, h, d, t))]
pub fn fill(#[out] y: &mut [u32; w * h * d * t], w: u32, h: u32, d: u32, t: u32) {
    let i = global_index();
    if i < w * h * d * t {
        y[i] = i;
    }
}

fn main() {}
