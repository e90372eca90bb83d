//! The host types of the kernel language's vectors, named as glam names them: a `Vec4` in a
//! kernel is a `[f32; 4]` on the host, which is what a binding of `Vec4`s takes and gives.
//! With these names a `#[forge_struct]`'s host declaration reads as its kernels see it:
//! `pub struct Body { pub pos: Vec4, pub vel: Vec4 }`. Layer 1 (values).

/// `vec2<f32>`.
pub type Vec2 = [f32; 2];
/// `vec3<f32>`.
pub type Vec3 = [f32; 3];
/// `vec4<f32>`.
pub type Vec4 = [f32; 4];
/// `vec2<u32>`.
pub type UVec2 = [u32; 2];
/// `vec3<u32>`.
pub type UVec3 = [u32; 3];
/// `vec4<u32>`.
pub type UVec4 = [u32; 4];
/// `vec2<i32>`.
pub type IVec2 = [i32; 2];
/// `vec3<i32>`.
pub type IVec3 = [i32; 3];
/// `vec4<i32>`.
pub type IVec4 = [i32; 4];
/// `vec2<f16>`.
pub type HVec2 = [half::f16; 2];
/// `vec3<f16>`.
pub type HVec3 = [half::f16; 3];
/// `vec4<f16>`.
pub type HVec4 = [half::f16; 4];
/// Eight halves, 16 bytes, that a kernel loads, stores and copies in one access (WGSL's
/// two `vec4<f16>` of its 16 bytes; CUDA's 16-byte aligned value, copied by `cp.async.cg`).
/// In a kernel it is whole values only: `v.lo()` and `v.hi()` give its halves as
/// `HVec4`s, and `HVec8::join(lo, hi)` makes one.
pub type HVec8 = [half::f16; 8];
/// `vec2<f64>`.
pub type DVec2 = [f64; 2];
/// `vec3<f64>`.
pub type DVec3 = [f64; 3];
/// `vec4<f64>`.
pub type DVec4 = [f64; 4];
