use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn whole(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let parts = [x[i], 2u32, 3u32];
        debug_print!("parts {:?}", parts);
        y[i] = parts[0];
    }
}

fn main() {}
