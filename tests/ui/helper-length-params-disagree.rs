use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn dot<const N: usize>(a: &[f32; N], b: &[f32; N]) -> f32 {
        let mut s = 0.0f32;
        for i in 0..N {
            s += a[i] * b[i];
        }
        s
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(#[out] y: &mut [f32; n], n: u32) {
        let a = [1.0f32; 8];
        let b = [2.0f32; 4];
        let i = global_index();
        if i < n {
            // One `N` for both: 8 and 4 disagree.
            y[i] = dot(&a, &b);
        }
    }
}

fn main() {}
