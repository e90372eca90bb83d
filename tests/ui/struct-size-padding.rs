use wgsl_forge::prelude::*;

#[forge_module]
mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Normal {
        pub n: Vec3,
    }
}

fn main() {}
