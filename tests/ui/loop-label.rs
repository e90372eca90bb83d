use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn search(x: &[f32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        let mut found = 0u32;
        'outer: for j in 0..n {
            if x[j] > x[i] {
                found = j;
                break;
            }
        }
        y[i] = found;
    }
}

fn main() {}
