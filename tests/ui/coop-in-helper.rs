use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn step(x: CoopA<f16>, y: CoopB<f16>, acc: CoopC<f32>) -> CoopC<f32> {
        x.mul_add(y, acc)
    }

    #[forge_kernel(workgroup = 32, threads = 32)]
    pub fn tile(a: &[f16; 256], #[out] c: &mut [f32; 256]) {
        let x = CoopA::load_row_major(&a[0], 16);
        let acc = step(x, CoopB::zeroed(), CoopC::zeroed());
        acc.store_row_major(&mut c[0], 16);
    }
}

fn main() {}
