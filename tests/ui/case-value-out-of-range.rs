use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, case(n = 4294967296), case(n = 1 << 40), case(n = 7 / 0))]
pub fn fill(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = i;
    }
}

fn main() {}
