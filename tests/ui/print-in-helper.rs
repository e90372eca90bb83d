#[wgsl_forge::forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn twice(v: u32) -> u32 {
        debug_print!("v = {}", v);
        v * 2
    }

    #[forge_kernel(threads = n)]
    pub fn doubled(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = twice(x[i]);
        }
    }
}

fn main() {}
