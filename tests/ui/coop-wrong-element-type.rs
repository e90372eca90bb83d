use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 32, threads = 32)]
pub fn tile(a: &[f16; 256], #[out] c: &mut [f32; 256]) {
    let acc: CoopC<f16> = CoopC::zeroed();
    acc.store_row_major(&mut c[0], 16);
}

fn main() {}
