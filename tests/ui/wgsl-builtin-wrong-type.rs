use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn bits(x: &[f32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        // WGSL's `firstLeadingBit` takes integers.
        y[i] = first_leading_bit(x[i]);
    }
}

fn main() {}
