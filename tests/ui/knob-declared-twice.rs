use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, knobs(TILE = 64, TILE = 32), tune(TILE = [32, 32]))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * (TILE as f32);
    }
}

fn main() {}
