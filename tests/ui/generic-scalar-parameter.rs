use wgsl_forge::prelude::*;

#[forge_kernel(threads = n, types(T = [f32, u32]))]
pub fn fill<T>(#[out] y: &mut [T; n], v: T, n: u32) {
    let i = global_index();
    if i < n {
        y[i] = v;
    }
}

fn main() {}
