use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn positive(v: &[f32; 4], k: u32) -> bool {
        v[k] > 0.0
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let a = [x[i]; 4];
            if i % 4 < 4 && positive(&a, i % 4) {
                y[i] = 1.0;
            } else {
                y[i] = 0.0;
            }
        }
    }
}

fn main() {}
