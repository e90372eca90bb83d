use wgsl_forge::prelude::*;

// Passes the macro's own checks, but WGSL rejects a constant index past the end of a
// fixed-size array: naga's validation reports it while the macro expands.
#[forge_kernel(threads = n)]
pub fn smooth(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let w = [0.25f32, 0.5, 0.25];
        y[i] = (w[0] + w[1] + w[3]) * x[i];
    }
}

fn main() {}
