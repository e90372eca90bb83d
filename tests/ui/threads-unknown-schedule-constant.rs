use wgsl_forge::prelude::*;

// `ROWS` is neither `WG`, `ITEMS`, `VEC` nor a declared knob.
#[forge_kernel(workgroup = 64, threads = m.div_ceil(ROWS) * 64)]
pub fn teams(a: &[f32; m], #[out] y: &mut [f32; m], m: u32) {
    let i = global_index();
    if i < m {
        y[i] = a[i];
    }
}

fn main() {}
