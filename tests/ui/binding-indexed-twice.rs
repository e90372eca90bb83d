use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn rows(x: &[f32; n * 4], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        // Arrays of arrays are local or workgroup memory; a binding is flat.
        y[i] = x[i][2];
    }
}

fn main() {}
