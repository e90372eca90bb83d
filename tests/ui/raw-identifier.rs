use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn raw(#[out] y: &mut [u32; n], n: u32) {
    let r#fn = global_index();
    if r#fn < n {
        y[r#fn] = 1;
    }
}

fn main() {}
