use wgsl_forge::prelude::*;

#[forge_kernel(threads = n)]
pub fn point(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        let p = Vec2::new(x[i], 1.0);
        debug_print!("p = {}", p);
        y[i] = p.x;
    }
}

fn main() {}
