use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn ragged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let m = [[x[i], 1.0], [2.0, 3.0, 4.0]];
        y[i] = m[0][0];
    }
}

fn main() {}
