use wgsl_forge::prelude::*;

// A cost is a length expression over the kernel's integer scalars: `m` is not one, and
// `a` is a float.
#[forge_kernel(threads = n, cost(bytes = 8 * m, flops = a * n))]
pub fn scale(x: &[f32; n], #[out] y: &mut [f32; n], a: f32, n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * a;
    }
}

fn main() {}
