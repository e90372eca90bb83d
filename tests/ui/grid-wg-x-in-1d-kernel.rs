use wgsl_forge::prelude::*;

// `WG_X`, `WG_Y` and `WG_Z` are a 2-D or 3-D workgroup's extents.
#[forge_kernel(threads = n, workgroup = 64)]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = workgroup_index() * WG_X + local_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
