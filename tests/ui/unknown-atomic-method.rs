use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn counts(x: &[u32; n], #[out] bins: &mut [Atomic<u32>; 16], n: u32) {
    let i = global_index();
    if i < n {
        bins[x[i] % 16].fetch_nand(1);
    }
}

fn main() {}
