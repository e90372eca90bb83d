use wgsl_forge::prelude::*;

// A constant index past the end of a fixed-size array: Rust rejects it, and so does WGSL.
// The second index is past the end only for the tuned schedule with WG = 128.
#[forge_kernel(threads = n, tune(workgroup = [64, 128]))]
pub fn smooth(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 64];
    let i = global_index();
    tile[local_index() % 64] = x[i % n];
    workgroup_barrier();
    if i < n {
        let w = [0.25f32, 0.5, 0.25];
        y[i] = (w[0] + w[1] + w[3]) * x[i] + tile[WG - 1];
    }
}

fn main() {}
