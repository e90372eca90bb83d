use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn stage(dst: &mut [f32; 64], src: &[f32; 64], lid: u32) {
        async_copy(&mut dst[lid], &src[lid]);
    }

    // An asynchronous copy writes workgroup memory: `tile` is a local array.
    #[forge_kernel(workgroup = 64, threads = 64)]
    pub fn k(x: &[f32; 64], #[out] y: &mut [f32; 64]) {
        let mut tile = [0.0f32; 64];
        let lid = local_index();
        stage(&mut tile, x, lid);
        async_wait(0);
        y[lid] = tile[lid];
    }
}

fn main() {}
