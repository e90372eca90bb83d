use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn dots(a: &[f32; n], #[out] s: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        s[i] = dot4_i8_packed(a[i], 0x01010101);
    }
}

fn main() {}
