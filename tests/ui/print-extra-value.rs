use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn pair(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        debug_print!("i = {}", i, x[i] + 1);
        y[i] = x[i];
    }
}

fn main() {}
