use wgsl_forge::prelude::*;

// Each dimension of `threads` is a length expression over integer scalar parameters.
#[forge_kernel(threads = (src, s), workgroup = (16, 16))]
pub fn scale(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32, s: f32) {
    let id = global_id();
    if id.x < w && id.y < h {
        dst[id.y * w + id.x] = src[id.y * w + id.x] * s;
    }
}

fn main() {}
