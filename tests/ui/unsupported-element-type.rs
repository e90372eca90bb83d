use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn double(x: &[u64; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = 2.0;
    }
}

fn main() {}
