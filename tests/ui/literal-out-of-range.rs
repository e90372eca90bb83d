use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn mask(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] & 4294967296;
    }
}

fn main() {}
