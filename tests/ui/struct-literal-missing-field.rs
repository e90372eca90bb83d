use wgsl_forge::prelude::*;

#[forge_module]
mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Body {
        pub pos: Vec4,
        pub vel: Vec4,
    }

    #[forge_kernel(threads = n)]
    pub fn spawn(#[out] bodies: &mut [Body; n], n: u32) {
        let i = global_index();
        if i < n {
            bodies[i] = Body { pos: Vec4::splat(i as f32) };
        }
    }
}

fn main() {}
