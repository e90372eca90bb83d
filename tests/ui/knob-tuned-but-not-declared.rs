use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, knobs(TILE = 64), tune(workgroup = [64], TILES = [32, 64], CHUNK = [2]))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * (TILE as f32);
    }
}

fn main() {}
