use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn halve_until_small(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let mut v = x[i.min(n - 1)];
    while subgroup_any(v > 1.0) {
        v *= 0.5;
    }
    if i < n {
        y[i] = v;
    }
}

fn main() {}
