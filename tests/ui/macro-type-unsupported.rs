use wgsl_forge::prelude::*;

macro_rules! copy {
    ($t:ty) => {
        #[forge_kernel(threads = n)]
        pub fn copy(x: &[$t; n], #[out] y: &mut [$t; n], n: u32) {
            let i = global_index();
            if i < n {
                y[i] = x[i];
            }
        }
    };
}
// A type from a `$t:ty` fragment is the type itself: `u8` is refused as `u8`.
copy!(u8);

fn main() {}
