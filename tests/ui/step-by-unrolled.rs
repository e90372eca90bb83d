use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn evens(x: &[f32; n * 8], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut s = 0.0f32;
        #[unroll]
        for k in (0..8u32).step_by(2) {
            s += x[i * 8 + k];
        }
        y[i] = s;
    }
}

fn main() {}
