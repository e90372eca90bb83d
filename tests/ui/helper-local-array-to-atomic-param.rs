use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn bump(bins: &mut [Atomic<u32>; 16], i: u32) {
        bins[i].fetch_add(1);
    }

    // A local array is the invocation's own: it holds no atomics.
    #[forge_kernel(threads = n)]
    pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
        let mut bins = [0u32; 16];
        let i = global_index();
        if i < n {
            bump(&mut bins, x[i] % 16);
            y[i] = bins[0];
        }
    }
}

fn main() {}
