use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn first(x: &[f32; n * 4], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut at = 4u32;
        #[unroll]
        for j in 0..4u32 {
            if x[i * 4 + j] > 0.0 {
                at = j;
                break;
            }
        }
        y[i] = at;
    }
}

fn main() {}
