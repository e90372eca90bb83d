use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn staged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 8192];
    let i = global_index();
    let lid = local_index();
    if i < n {
        tile[lid] = x[i];
    }
    workgroup_barrier();
    if i < n {
        y[i] = tile[lid];
    }
}

fn main() {}
