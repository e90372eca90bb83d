use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn rotate(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    let v = x[i.min(n - 1)];
    let next = subgroup_broadcast(v, (subgroup_invocation_id() + 1) % subgroup_size());
    if i < n {
        y[i] = next;
    }
}

fn main() {}
