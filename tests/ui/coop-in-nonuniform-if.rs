use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 64, threads = 64)]
pub fn tile(a: &[f16; 512], #[out] c: &mut [f32; 512]) {
    if local_index() < 32 {
        let x = CoopA::load_row_major(&a[0], 16);
        let acc = x.mul_add(CoopB::zeroed(), CoopC::zeroed());
        acc.store_row_major(&mut c[0], 16);
    }
}

fn main() {}
