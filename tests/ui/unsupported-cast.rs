use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn widen(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = (x[i] as u64 * 3) as u32;
    }
}

fn main() {}
