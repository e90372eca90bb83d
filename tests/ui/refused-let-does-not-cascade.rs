use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let v = x.iter().sum::<f32>();
    let (a, b): (f32, f32) = (1.0, 2.0);
    if i < n {
        y[i] = v * x[i] + a + b;
    }
}

fn main() {}
