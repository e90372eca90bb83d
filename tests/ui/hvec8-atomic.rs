use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn counts(#[out] y: &mut [Atomic<HVec8>; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i].store(HVec8::ZERO);
    }
}

fn main() {}
