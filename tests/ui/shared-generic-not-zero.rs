use wgsl_forge::prelude::*;

#[forge_kernel(workgroup = 64, threads = n, types(T = [f32, u32]))]
pub fn ones<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
    // Workgroup memory starts zeroed: `1 as T` would be silently ignored.
    #[shared]
    let mut t = [1 as T; 64];
    let i = global_index();
    t[local_index()] = x[i.min(n - 1)];
    workgroup_barrier();
    if i < n {
        y[i] = t[local_index()];
    }
}

fn main() {}
