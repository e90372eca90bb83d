use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn normals(a: &[Vec4; n], b: &[Vec4; n], #[out] y: &mut [Vec4; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = a[i].cross(b[i]);
    }
}

fn main() {}
