use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn rounds(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 64];
    let i = global_index();
    let lid = local_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    for r in 0..8u32 {
        if v > 100.0 {
            break;
        }
        tile[lid] = v;
        workgroup_barrier();
        v += tile[(lid + r) % 64];
    }
    if i < n {
        y[i] = v;
    }
}

fn main() {}
