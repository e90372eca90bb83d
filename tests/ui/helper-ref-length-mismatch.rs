use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn sum(v: &[f32; 4]) -> f32 {
        v[0] + v[1] + v[2] + v[3]
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let a = [x[i]; 8];
            y[i] = sum(&a);
        }
    }
}

fn main() {}
