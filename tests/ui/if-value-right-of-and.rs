use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn guarded(x: &[f32; n], #[out] y: &mut [u32; n], n: u32, m: u32) {
    let i = global_index();
    // `x[i]` must not be read when `i >= m`: the `if` cannot be computed ahead.
    let ok = i < m && if i < n { x[i] > 0.0 } else { false };
    if i < n {
        y[i] = select(0u32, 1u32, ok);
    }
}

fn main() {}
