use wgsl_forge::prelude::*;

#[forge_module]
mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Tri {
        pub corners: [Vec3; 3],
        pub area: f32,
    }
}

fn main() {}
