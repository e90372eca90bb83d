use wgsl_forge::prelude::*;

// A 2-D workgroup needs a 2-D grid: without `threads`, the grid would be 1-D.
#[forge_kernel(workgroup = (16, 16))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
