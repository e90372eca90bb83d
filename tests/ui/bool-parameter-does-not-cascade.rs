use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, flip: bool) {
    let i = global_index();
    if i < n {
        y[i] = if flip { -x[i] } else { x[i] };
    }
}

fn main() {}
