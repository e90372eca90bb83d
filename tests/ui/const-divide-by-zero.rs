use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn quotient(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let d = 0u32;
        let mut q = x[i] / d;
        q %= 0;
        y[i] = q + 1u32 / 0u32;
    }
}

fn main() {}
