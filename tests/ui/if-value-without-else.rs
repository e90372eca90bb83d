use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn relu(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let v = if x[i] > 0.0 { x[i] };
        y[i] = v;
    }
}

fn main() {}
