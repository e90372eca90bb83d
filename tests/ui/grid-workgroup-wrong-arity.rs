use wgsl_forge::prelude::*;

// The workgroup has as many extents as `threads` has dimensions.
#[forge_kernel(threads = (w, h), workgroup = (8, 8, 4))]
pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
    let id = global_id();
    if id.x < w && id.y < h {
        dst[id.y * w + id.x] = src[id.y * w + id.x];
    }
}

#[forge_kernel(threads = n, workgroup = (16, 16))]
pub fn copy(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn main() {}
