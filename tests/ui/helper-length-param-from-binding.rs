use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    /// The sum of `t`, which reads `N`: a length known at compile time.
    #[forge_fn]
    fn total<const N: usize>(t: &[f32; N]) -> f32 {
        let mut s = 0.0f32;
        for i in 0..N {
            s += t[i];
        }
        s
    }

    #[forge_kernel(workgroup = 64, threads = 1)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; 1], n: u32) {
        // A binding's length `n` is known only at run time.
        y[0] = total(x);
    }
}

fn main() {}
