use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 32, threads = 32)]
pub fn tile(a: &[f16; 256], c: &[f32; 256], #[out] d: &mut [f32; 256]) {
    let acc = CoopC::zeroed();
    acc.store_row_major(&mut c[0], 16);
    d[local_index()] = 0.0;
}

fn main() {}
