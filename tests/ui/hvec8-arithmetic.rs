use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn doubled(x: &[HVec8; n], #[out] y: &mut [HVec8; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + x[i];
    }
}

fn main() {}
