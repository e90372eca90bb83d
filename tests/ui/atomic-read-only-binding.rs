use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn histogram(x: &[u32; n], bins: &[Atomic<u32>; 16], #[out] seen: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        bins[x[i] % 16].fetch_add(1);
        seen[i] = 1;
    }
}

fn main() {}
