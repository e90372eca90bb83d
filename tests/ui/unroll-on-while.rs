use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn halve(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut v = x[i];
        let mut k = 0u32;
        #[unroll]
        while k < 4 {
            v *= 0.5;
            k += 1;
        }
        y[i] = v;
    }
}

fn main() {}
