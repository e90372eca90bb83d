use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn classify(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let v = match x[i] {
            0 => 1.0,
            _ => 2.0,
        };
        y[i] = v;
    }
}

fn main() {}
