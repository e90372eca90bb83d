use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn clampn(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, cap: f32) {
    let i = global_index();
    if i < n {
        cap = cap.max(0.0);
        y[i] = x[i].min(cap);
    }
}

fn main() {}
