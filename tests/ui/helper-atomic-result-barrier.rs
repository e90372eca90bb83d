use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn bump(bins: &mut [Atomic<u32>; 16], i: u32) -> u32 {
        bins[i].fetch_add(1)
    }

    // The uniformity check sees through the helper: an atomic's result differs between
    // invocations, so a barrier under it is not reached by all.
    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(bins: &mut [Atomic<u32>; 16], #[out] y: &mut [u32; n], n: u32) {
        #[shared]
        let mut t = [0u32; 64];
        let lid = local_index();
        if bump(&mut bins, lid % 16) == 0 {
            workgroup_barrier();
        }
        t[lid] = lid;
        let i = global_index();
        if i < n {
            y[i] = t[lid];
        }
    }
}

fn main() {}
