use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, types(T = [f32, u64]))]
pub fn copy<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
