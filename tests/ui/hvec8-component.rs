use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn firsts(x: &[HVec8; n], #[out] y: &mut [f16; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].x;
    }
}

fn main() {}
