use wgsl_forge::prelude::*;

#[forge_module]
mod sim {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct Cell {
        pub alive: bool,
        pub age: u32,
    }
}

fn main() {}
