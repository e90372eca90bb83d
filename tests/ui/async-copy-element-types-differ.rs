use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 64, threads = n)]
pub fn staged(x: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 64];
    let i = global_index();
    let lid = local_index();
    if i < n {
        async_copy(&mut tile[lid], &x[i]);
    }
    async_wait(0);
    if i < n {
        y[i] = tile[63 - lid];
    }
}

fn main() {}
