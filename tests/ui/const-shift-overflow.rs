use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn pack(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let bits = 32u32;
        let mut v = x[i] << bits;
        v >>= -1i32;
        y[i] = v | (0xffff_ffffu32 << 4);
    }
}

fn main() {}
