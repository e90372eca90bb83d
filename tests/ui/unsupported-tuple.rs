use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn pair(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let p = (x[i], 1.0f32);
        y[i] = x[i];
    }
}

fn main() {}
