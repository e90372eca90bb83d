use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn clear(v: &mut [f32; 4]) {
        v[0] = 0.0;
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            let mut a = [1.0f32; 4];
            let b = [2.0f32; 4];
            clear(&a);
            clear(&mut b);
            clear(a);
            y[i] = x[i] + a[0] + b[0];
        }
    }
}

fn main() {}
