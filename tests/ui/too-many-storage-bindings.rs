use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn sum9(
    a: &[f32; n],
    b: &[f32; n],
    c: &[f32; n],
    d: &[f32; n],
    e: &[f32; n],
    f: &[f32; n],
    g: &[f32; n],
    h: &[f32; n],
    #[out] y: &mut [f32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        y[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i];
    }
}

fn main() {}
