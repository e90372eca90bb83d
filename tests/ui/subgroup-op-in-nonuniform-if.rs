use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn partial_sums(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = subgroup_add(x[i]);
    }
}

fn main() {}
