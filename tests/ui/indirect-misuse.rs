use wgsl_forge::prelude::*;

// No such binding.
#[forge_kernel(threads = n, indirect = counts[0])]
pub fn unknown(count: &[u32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < count[0] {
        y[i] = 1.0;
    }
}

// The count comes from a binding the kernel writes.
#[forge_kernel(threads = n, indirect = count[0])]
pub fn written(count: &mut [u32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = 1.0;
    }
    if i == 0 {
        count[0] = 0;
    }
}

// The count is a `u32`.
#[forge_kernel(threads = n, indirect = count[0])]
pub fn floats(count: &[f32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = count[0];
    }
}

// A 2-D grid's extents are known on the host.
#[forge_kernel(threads = (w, h), workgroup = (8, 8), indirect = count[0])]
pub fn two_d(count: &[u32; 1], y: &mut [f32; w * h], w: u32, h: u32) {
    let id = global_id();
    if id.x < w && id.y < h && id.x < count[0] {
        y[id.y * w + id.x] = 1.0;
    }
}

// One element, at a constant index.
#[forge_kernel(threads = n, indirect = count[n])]
pub fn not_constant(count: &[u32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < count[0] {
        y[i] = 1.0;
    }
}

fn main() {}
