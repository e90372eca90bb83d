use wgsl_forge::prelude::*;

#[forge_module]
mod m {
    use wgsl_forge::prelude::*;

    // `N` is no array's length, so no call can fix it.
    #[forge_fn]
    fn count<const N: usize>(t: &mut [f32; 4], k: u32) -> u32 {
        t[0] = 1.0;
        k + N as u32
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn k(#[out] y: &mut [u32; n], n: u32) {
        let mut t = [0.0f32; 4];
        let i = global_index();
        if i < n {
            y[i] = count(&mut t, i);
        }
    }
}

fn main() {}
