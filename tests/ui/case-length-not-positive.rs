use wgsl_forge::prelude::*;

// With n = 4 the window `n - 8` is negative, and with n = 8 it is empty: the certifier
// could not run either case. `threads = 0` runs nothing.
#[forge_kernel(threads = m, case(n = 4, m = 1), case(n = 8, m = 1), case(n = 16, m = 0))]
pub fn window(x: &[f32; n], #[out] y: &mut [f32; n - 8], n: u32, m: u32) {
    let i = global_index();
    if i < n - 8 {
        y[i] = x[i + 8];
    }
}

fn main() {}
