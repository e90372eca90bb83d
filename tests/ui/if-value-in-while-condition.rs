use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn halve(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut v = x[i];
        // Rust evaluates the condition before each iteration; computed ahead, it would run once.
        while (if v > 100 { v / 2 } else { 0 }) > 10 {
            v /= 2;
        }
        y[i] = v;
    }
}

fn main() {}
