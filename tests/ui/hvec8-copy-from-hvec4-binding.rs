use wgsl_forge::prelude::*;

// A 16-byte copy needs a binding of 16-byte elements: an `HVec4` binding holds 8.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn staged(x: &[HVec4; n], #[out] y: &mut [HVec8; n], n: u32) {
    #[shared]
    let mut tile = [HVec8::ZERO; 64];
    let (i, lid) = (global_index(), local_index());
    if i < n {
        async_copy(&mut tile[lid], &x[i]);
    }
    async_wait(0);
    if i < n {
        y[i] = tile[lid];
    }
}

fn main() {}
