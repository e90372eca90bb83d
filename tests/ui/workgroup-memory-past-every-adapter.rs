use wgsl_forge::prelude::*;

// The declared schedule fits the portable 16 KiB; the tuned one asks for 256 KiB, more than
// any adapter offers.
#[forge_kernel(threads = n, knobs(T = 1024), tune(T = [1024, 65536]))]
pub fn staged(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; T];
    let i = global_index();
    let lid = local_index();
    if i < n {
        tile[lid % T] = x[i];
    }
    workgroup_barrier();
    if i < n {
        y[i] = tile[lid % T];
    }
}

fn main() {}
