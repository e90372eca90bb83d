use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn claim(#[out] slots: &mut [Atomic<u32>; n], #[out] old: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        old[i] = slots[i].compare_exchange_weak(0, i + 1);
    }
}

fn main() {}
