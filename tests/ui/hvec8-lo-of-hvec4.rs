use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn lows(x: &[HVec4; n], #[out] y: &mut [HVec4; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].lo();
    }
}

fn main() {}
