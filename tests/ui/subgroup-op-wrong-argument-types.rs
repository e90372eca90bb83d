use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn mixed_up(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let v = x[i.min(n - 1)];
    let flag = subgroup_add(v > 0.0);
    let all = subgroup_all(v);
    let moved = subgroup_shuffle(v, -1i32);
    let mask = subgroup_xor(v);
    if i < n && flag && all {
        y[i] = moved + mask;
    }
}

fn main() {}
