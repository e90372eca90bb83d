use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 64, threads = n)]
pub fn staged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        async_copy(&mut y[i], &x[i]);
    }
    async_wait(0);
}

fn main() {}
