use wgsl_forge::prelude::*;

// Passes the macro's own checks, but WGSL's constant evaluation rejects `sqrt` of a
// negative constant (Rust gives NaN): naga's error points at the statement it came from.
#[forge_kernel(threads = n)]
pub fn shift(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + (-1.0f32).sqrt();
    }
}

fn main() {}
