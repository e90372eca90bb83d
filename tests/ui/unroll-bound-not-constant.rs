use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn sums(x: &[f32; n * 4], #[out] y: &mut [f32; n], n: u32, k: u32) {
    let i = global_index();
    if i < n {
        let mut s = 0.0f32;
        #[unroll]
        for j in 0..k {
            s += x[i * 4 + j];
        }
        y[i] = s;
    }
}

fn main() {}
