use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn any_big(x: &[f32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    let v = x[i.min(n - 1)];
    let big = i < n && subgroup_any(v > 100.0);
    if big {
        y[i] = 1;
    }
}

fn main() {}
