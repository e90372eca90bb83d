use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, knobs(REPS = 64), tune(REPS = [64, 2048]))]
pub fn repeat(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut s = x[i];
        #[unroll]
        for _r in 0..REPS {
            s = s * 0.5 + 1.0;
        }
        y[i] = s;
    }
}

fn main() {}
