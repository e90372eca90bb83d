//! Types in the generated CUDA C++: scalars are C's (`__half` for `f16`), vectors and
//! arrays the prelude's value types `fg_vec<T, N>` and `fg_arr<T, N>` (copied on
//! assignment, as the language's are), structs laid out byte for byte as WGSL lays them.
//!
//! Part of `emit_cuda` (layer 3).

use crate::model::*;
use crate::names::{cuda_name, cuda_struct_name};
use crate::types::{len_of, wgsl_align};
use std::fmt::Write;

/// A scalar type in CUDA.
pub fn scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::F32 => "float",
        Scalar::U32 => "unsigned",
        Scalar::I32 => "int",
        Scalar::F16 => "__half",
        Scalar::F64 => "double",
        Scalar::Bool => "bool",
    }
}

/// A type in CUDA: a struct by its name, an array's length over the schedule's constants.
pub fn ty(t: &Ty, structs: &[StructDef], knobs: &[Knob]) -> String {
    match t {
        Ty::Scalar(s) => scalar(*s).to_string(),
        Ty::Vector(s, n) => format!("fg_vec<{}, {n}>", scalar(*s)),
        Ty::Array(e, len) => format!("fg_arr<{}, {}>", ty(e, structs, knobs), len_of(len, knobs)),
        Ty::Struct(i) => cuda_struct_name(&structs[*i]),
        // The prelude's fragments (`prelude_coop.cuh`).
        Ty::Coop(_, role) => format!("fg_coop_{}", role.wgsl().to_ascii_lowercase()),
    }
}

/// The element type a binding's pointer points to: an atomic is its plain scalar (CUDA's
/// atomic functions take plain pointers).
pub fn binding_elem(b: &BindingParam<'_>, structs: &[StructDef]) -> String {
    if b.atomic {
        scalar(b.elem).to_string()
    } else {
        ty(&b.elem_ty(), structs, &[])
    }
}

/// The bytes a value of `t` takes in a struct field with C's layout (the prelude's vectors
/// are packed components), or `None` for a type whose C layout differs from WGSL's: an
/// array whose element's WGSL stride is larger than its size (`vec3` elements).
fn c_size(t: &Ty) -> Option<u32> {
    match t {
        Ty::Scalar(s) => Some(s.size()),
        Ty::Vector(s, n) => Some(s.size() * *n as u32),
        Ty::Array(e, ConstLen::Lit(n)) => {
            let size = c_size(e)?;
            let stride = size.div_ceil(wgsl_align(e)) * wgsl_align(e);
            (stride == size).then_some(size * n)
        }
        _ => None,
    }
}

/// A `#[forge_struct]`'s CUDA declaration, with explicit padding so that every field sits
/// at its WGSL offset and the size is WGSL's, and a function that builds one from its
/// fields (`Body { pos, vel }`); or why it cannot be written.
pub fn struct_decl(def: &StructDef) -> Result<String, String> {
    let name = cuda_struct_name(def);
    let mut s = format!("struct {name} {{\n");
    let mut at = 0u32;
    for (i, f) in def.fields.iter().enumerate() {
        let size = c_size(&f.ty).ok_or_else(|| {
            format!(
                "field `{}` of struct `{}` is an array whose elements WGSL pads (a `vec3` element), which the CUDA emitter does not lay out",
                f.name, def.name
            )
        })?;
        if f.offset > at {
            let _ = writeln!(s, "    unsigned char fg_pad{i}[{}];", f.offset - at);
        }
        let _ = writeln!(s, "    {} {};", ty(&f.ty, &[], &[]), cuda_name(&f.name));
        at = f.offset + size;
    }
    if def.size > at {
        let _ = writeln!(s, "    unsigned char fg_pad_end[{}];", def.size - at);
    }
    let _ = writeln!(
        s,
        "}};\nstatic_assert(sizeof({name}) == {}, \"{name} has WGSL's size\");",
        def.size
    );
    let params: Vec<String> = def
        .fields
        .iter()
        .map(|f| format!("{} {}", ty(&f.ty, &[], &[]), cuda_name(&f.name)))
        .collect();
    let _ = writeln!(
        s,
        "FG_FN {name} fg_make_{name}({}) {{\n    {name} r = {{}};",
        params.join(", ")
    );
    for f in &def.fields {
        let n = cuda_name(&f.name);
        let _ = writeln!(s, "    r.{n} = {n};");
    }
    s.push_str("    return r;\n}\n");
    Ok(s)
}
