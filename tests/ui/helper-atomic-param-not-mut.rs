use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // Atomic methods change the array: a helper takes it as `&mut`.
    #[forge_fn]
    fn peek(bins: &[Atomic<u32>; 16], i: u32) -> u32 {
        bins[i].load()
    }

    #[forge_kernel(threads = n)]
    pub fn k(bins: &mut [Atomic<u32>; 16], #[out] y: &mut [u32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = peek(bins, i % 16);
        }
    }
}

fn main() {}
