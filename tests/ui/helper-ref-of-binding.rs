use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn first(v: &[f32; 4]) -> f32 {
        v[0]
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; 4], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = first(&x);
        }
    }
}

fn main() {}
