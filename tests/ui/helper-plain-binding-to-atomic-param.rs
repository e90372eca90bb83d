use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn bump(bins: &mut [Atomic<u32>; 16], i: u32) {
        bins[i].fetch_add(1);
    }

    // An array of atomics takes an atomic binding: `bins` holds plain `u32`s.
    #[forge_kernel(threads = n)]
    pub fn k(x: &[u32; n], #[out] bins: &mut [u32; 16], n: u32) {
        let i = global_index();
        if i < n {
            bump(&mut bins, x[i] % 16);
        }
    }
}

fn main() {}
