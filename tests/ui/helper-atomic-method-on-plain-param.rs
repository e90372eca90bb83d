use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // Atomic methods work on an array of atomics, `&mut [Atomic<u32>; 16]`.
    #[forge_fn]
    fn bump(bins: &mut [u32; 16], i: u32) {
        bins[i].fetch_add(1);
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
        #[shared]
        let mut bins = [0u32; 16];
        let i = global_index();
        if i < n {
            bump(&mut bins, x[i] % 16);
            y[i] = x[i];
        }
    }
}

fn main() {}
