use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn clear(v: &mut [u32; 16], i: u32) {
        v[i] = 0;
    }

    // `bins` is atomic: the helper must take it as an array of atomics.
    #[forge_kernel(threads = n)]
    pub fn k(#[out] bins: &mut [Atomic<u32>; 16], n: u32) {
        let i = global_index();
        if i < 16 {
            clear(&mut bins, i);
        }
    }
}

fn main() {}
