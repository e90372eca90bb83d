use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn pick(x: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        match x[i] {
            0..=9999 => y[i] = 1.0,
            _ => y[i] = 2.0,
        }
    }
}

fn main() {}
