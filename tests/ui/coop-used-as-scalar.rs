use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 32, threads = 32)]
pub fn tile(a: &[f16; 256], #[out] c: &mut [f32; 256]) {
    let acc = CoopC::zeroed();
    c[local_index()] = acc + 1.0;
}

fn main() {}
