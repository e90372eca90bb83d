use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, types(T = [f32, f16]))]
pub fn bits<T>(x: &[T; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].to_bits();
    }
}

fn main() {}
