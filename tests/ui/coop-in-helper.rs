use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // A helper may hold cooperative matrices, but its store must reach a binding or a
    // `#[shared]` array: here the call gives it a local array.
    #[forge_fn]
    fn put<const N: usize>(t: CoopC<f32>, dst: &mut [f32; N]) {
        t.store_row_major(&mut dst[0], 16);
    }

    #[forge_kernel(workgroup = 32, threads = 32)]
    pub fn tile(a: &[f16; 256], #[out] c: &mut [f32; 256]) {
        let x = CoopA::load_row_major(&a[0], 16);
        let acc = x.mul_add(CoopB::zeroed(), CoopC::zeroed());
        let mut regs = [0.0f32; 256];
        put(acc, &mut regs);
        c[local_index()] = regs[local_index()];
    }
}

fn main() {}
