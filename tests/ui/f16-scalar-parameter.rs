use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn shift(x: &[f16; n], #[out] y: &mut [f16; n], n: u32, by: f16) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + by;
    }
}

fn main() {}
