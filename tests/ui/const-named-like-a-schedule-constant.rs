use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, knobs(TILE = 4))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    const TILE: u32 = 8;
    let i = global_index();
    if i < n {
        y[i] = x[i] * (TILE as f32);
    }
}

fn main() {}
