use wgsl_forge::prelude::*;

// Offsets and indices are integers: `vals` holds `f32`.
#[forge_kernel(threads = n, inputs(vals = offsets(x)))]
pub fn k(x: &[f32; n], vals: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + vals[i];
    }
}

fn main() {}
