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
    pub fn speed(bodies: &[Body; n], #[out] s: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            s[i] = bodies[i].velocity.length();
        }
    }
}

fn main() {}
