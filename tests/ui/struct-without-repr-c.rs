use wgsl_forge::prelude::*;

#[forge_module]
mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[derive(Clone, Copy)]
    pub struct Body {
        pub pos: Vec4,
    }
}

fn main() {}
