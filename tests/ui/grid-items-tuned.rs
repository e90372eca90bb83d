use wgsl_forge::prelude::*;

// `ITEMS` spreads a 1-D grid only.
#[forge_kernel(threads = (w, h), tune(workgroup = [(16, 16)], items = [1, 2]))]
pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
    let id = global_id();
    if id.x < w && id.y < h {
        dst[id.y * w + id.x] = src[id.y * w + id.x];
    }
}

fn main() {}
