use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn pick(x: &[Vec4; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let v = x[i];
        let mut s = 0.0f32;
        #[unroll]
        for k in 0..=4u32 {
            s += v[k];
        }
        y[i] = s;
    }
}

fn main() {}
