#[wgsl_forge::forge_module]
mod m {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn even(x: u32) -> bool {
        let mut r = true;
        if x > 0 {
            r = odd(x - 1);
        }
        r
    }

    #[forge_fn]
    fn odd(x: u32) -> bool {
        let mut r = false;
        if x > 0 {
            r = even(x - 1);
        }
        r
    }

    #[forge_kernel(threads = n)]
    pub fn parity(#[out] y: &mut [u32; n], n: u32) {
        let i = global_index();
        if i < n && even(i) {
            y[i] = 1;
        }
    }
}

fn main() {}
