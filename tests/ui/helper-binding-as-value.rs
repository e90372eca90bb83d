use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // A binding given to `v` can only be indexed: `let w = *v` would copy it whole.
    #[forge_fn]
    fn copy_first(v: &[f32; 4]) -> f32 {
        let w = v;
        w[0]
    }

    #[forge_kernel(threads = n)]
    pub fn k(x: &[f32; 4], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = copy_first(x);
        }
    }
}

fn main() {}
