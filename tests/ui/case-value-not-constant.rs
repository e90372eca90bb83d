use wgsl_forge::prelude::*;

const N: u32 = 16;

#[forge_kernel(threads = n, case(n = N))]
pub fn fill(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = i;
    }
}

fn main() {}
