use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn staged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        #[shared]
        let mut tile = [0.0f32; 64];
        tile[local_index()] = x[i];
        y[i] = tile[local_index()];
    }
}

fn main() {}
