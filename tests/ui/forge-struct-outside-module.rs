use wgsl_forge::prelude::*;

#[forge_struct]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Body {
    pub pos: Vec4,
}

fn main() {}
