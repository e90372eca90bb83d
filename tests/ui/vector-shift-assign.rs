use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn shift(x: &[UVec4; n], #[out] y: &mut [UVec4; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut v = x[i];
        v <<= 2u32;
        y[i] = v;
    }
}

fn main() {}
