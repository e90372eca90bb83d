use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn rounds(x: &[f32; n], counts: &[u32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 64];
    let i = global_index() % n;
    let lid = local_index();
    let mut v = x[i];
    for r in 0..counts[i] {
        tile[lid] = v;
        workgroup_barrier();
        v += tile[(lid + r) % 64];
    }
    y[i] = v;
}

fn main() {}
