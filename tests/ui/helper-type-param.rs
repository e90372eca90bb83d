use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // Helpers are generic over their arrays' lengths only, not over types.
    #[forge_fn]
    fn first<T, const N: usize>(t: &[T; N]) -> T {
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
