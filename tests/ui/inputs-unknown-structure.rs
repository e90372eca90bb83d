use wgsl_forge::prelude::*;

// `shuffled` is no input structure: a permutation is `permutation`.
#[forge_kernel(threads = n, inputs(dst = shuffled))]
pub fn scatter(x: &[f32; n], dst: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[dst[i]] = x[i];
    }
}

fn main() {}
