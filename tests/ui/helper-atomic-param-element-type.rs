use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // WGSL's atomics hold 32-bit integers (and `f32`, by compare-exchange): no vectors.
    #[forge_fn]
    fn bump(bins: &mut [Atomic<Vec4>; 16], i: u32) {
        bins[i].fetch_add(Vec4::ZERO);
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
        #[shared]
        let mut bins = [Vec4::ZERO; 16];
        let i = global_index();
        if i < n {
            bump(&mut bins, x[i] % 16);
            y[i] = x[i];
        }
    }
}

fn main() {}
