use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[f64; n], #[out] y: &mut [f64; n], n: u32, a: f64) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * a;
    }
}

fn main() {}
