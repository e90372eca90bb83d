use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn publish(t: &mut [f32; 64], lid: u32, v: f32) -> f32 {
        t[lid] = v;
        workgroup_barrier();
        t[63 - lid]
    }

    #[forge_kernel(threads = n, workgroup = 64)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        #[shared]
        let mut t = [0.0f32; 64];
        let i = global_index();
        if i < n {
            y[i] = publish(&mut t, local_index(), x[i]);
        }
    }
}

fn main() {}
