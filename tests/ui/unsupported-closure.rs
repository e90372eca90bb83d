use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn square(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let sq = |v: f32| v * v;
        y[i] = x[i];
    }
}

fn main() {}
