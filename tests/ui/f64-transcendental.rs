use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn waves(x: &[f64; n], #[out] y: &mut [f64; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].sin() * 2.0;
    }
}

fn main() {}
