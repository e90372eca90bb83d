use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // Every access of an array of atomics is atomic: `bins[i].load()`.
    #[forge_fn]
    fn peek(bins: &mut [Atomic<u32>; 16], i: u32) -> u32 {
        bins[i]
    }

    #[forge_kernel(threads = n)]
    pub fn k(bins: &mut [Atomic<u32>; 16], #[out] y: &mut [u32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = peek(&mut bins, i % 16);
        }
    }
}

fn main() {}
