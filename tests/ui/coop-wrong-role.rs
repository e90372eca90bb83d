use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 32, threads = 32)]
pub fn tile(a: &[f16; 256], #[out] c: &mut [f32; 256]) {
    let x = CoopA::load_row_major(&a[0], 16);
    let y = CoopA::load_row_major(&a[0], 16);
    let acc = x.mul_add(y, CoopC::zeroed());
    acc.store_row_major(&mut c[0], 16);
}

fn main() {}
