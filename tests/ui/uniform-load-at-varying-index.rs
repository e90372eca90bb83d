use wgsl_forge::prelude::*;

// `workgroup_uniform_load` is uniform only where its index is: `lid` differs.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    #[shared]
    let mut counts = [0u32; 64];
    let i = global_index();
    let lid = local_index();
    counts[lid] = x[i.min(n - 1)] % 4;
    let rounds = workgroup_uniform_load(&counts[lid]);
    for _r in 0..rounds {
        workgroup_barrier();
    }
    if i < n {
        y[i] = rounds;
    }
}

fn main() {}
