use wgsl_forge::prelude::*;

// A workgroup shape is refused at compile time only where no adapter runs it: more than
// 1024 invocations, or a z extent over 64.
#[forge_kernel(threads = (w, h), workgroup = (64, 32), tune(workgroup = [(16, 16), (64, 32)]))]
pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
    let id = global_id();
    if id.x < w && id.y < h {
        dst[id.y * w + id.x] = src[id.y * w + id.x];
    }
}

#[forge_kernel(threads = (w, h, d), workgroup = (1, 1, 128))]
pub fn fill(#[out] y: &mut [u32; w * h * d], w: u32, h: u32, d: u32) {
    let id = global_id();
    if id.x < w && id.y < h && id.z < d {
        y[global_index()] = id.z;
    }
}

fn main() {}
