use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // Rust's array lengths are `usize`.
    #[forge_fn]
    fn first<const N: u32>(t: &[f32; N]) -> f32 {
        t[0]
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(#[out] y: &mut [f32; n], n: u32) {
        let a = [1.0f32; 8];
        let i = global_index();
        if i < n {
            y[i] = first(&a);
        }
    }
}

fn main() {}
