use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn flags(x: &[f32; n], #[out] acc: &mut [Atomic<f32>; 4], n: u32) {
    let i = global_index();
    if i < n {
        acc[i % 4].fetch_or(x[i]);
    }
}

fn main() {}
