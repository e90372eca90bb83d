use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn clear(v: &mut [f32; 4]) {
        for k in 0..4u32 {
            v[k] = 0.0;
        }
    }

    // A helper that writes takes a writable binding: `x` is read-only.
    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; 4], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i == 0 {
            clear(&mut x);
        }
        if i < n {
            y[i] = x[0];
        }
    }
}

fn main() {}
