use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn scale(x: &[i32; n], #[out] y: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + i32::MIN / -1;
    }
}

fn main() {}
