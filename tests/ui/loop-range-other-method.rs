use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn tail(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut s = 0.0f32;
        for j in (0..n).skip(1) {
            s += x[j];
        }
        y[i] = s;
    }
}

fn main() {}
