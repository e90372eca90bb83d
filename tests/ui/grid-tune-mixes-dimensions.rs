use wgsl_forge::prelude::*;

// One tuning list holds workgroups of the grid's dimensions only.
#[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), 256]))]
pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
    let id = global_id();
    if id.x < w && id.y < h {
        dst[id.y * w + id.x] = src[id.y * w + id.x];
    }
}

fn main() {}
