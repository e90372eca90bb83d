use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn bump(v: &[f32; 4]) -> f32 {
        v[0] = v[0] + 1.0;
        v[0]
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let a = [x[i]; 4];
            y[i] = bump(&a);
        }
    }
}

fn main() {}
