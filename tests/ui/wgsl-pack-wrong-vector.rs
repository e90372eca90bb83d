use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn packed(x: &[Vec2; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        // `pack4x8snorm` packs four components.
        y[i] = pack4x8snorm(x[i]);
    }
}

fn main() {}
