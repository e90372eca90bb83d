use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn stage(dst: &mut [f32; 64], src: &[f32; 64], lid: u32) {
        async_copy(&mut dst[lid], &src[63 - lid]);
    }

    // An asynchronous copy reads storage: `a` is workgroup memory.
    #[forge_kernel(workgroup = 64, threads = 64)]
    pub fn k(x: &[f32; 64], #[out] y: &mut [f32; 64]) {
        #[shared]
        let mut a = [0.0f32; 64];
        #[shared]
        let mut b = [0.0f32; 64];
        let lid = local_index();
        a[lid] = x[lid];
        workgroup_barrier();
        stage(&mut b, &a, lid);
        async_wait(0);
        y[lid] = b[lid];
    }
}

fn main() {}
