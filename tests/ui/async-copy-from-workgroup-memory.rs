use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 64, threads = n)]
pub fn staged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut a = [0.0f32; 64];
    #[shared]
    let mut b = [0.0f32; 64];
    let i = global_index();
    let lid = local_index();
    a[lid] = x[i.min(n - 1)];
    workgroup_barrier();
    async_copy(&mut b[lid], &a[63 - lid]);
    async_wait(0);
    if i < n {
        y[i] = b[lid];
    }
}

fn main() {}
