//! Types, layer 2: what a type of the kernel language is, as written in Rust, and how it
//! is laid out and spelled: the recognisers of `syn` types that the parser and the lowering
//! share, the WGSL spelling and layout (`wgsl`, `wgsl_align`, `struct_decl`, which `check`
//! compares with naga's and the WGSL emitter writes), and the language's own spelling for
//! messages (`ty_text`).

use crate::model::{CExpr, ConstLen, CoopRole, Knob, Scalar, SchedConst, StructDef, Ty};
use crate::names::{sched_name, wg_axis_name, wgsl_name, wgsl_struct_name};
use std::fmt::Write;

// ---- recognisers -------------------------------------------------------------------

/// The type itself, out of the invisible group (`syn::Type::Group`) that a
/// `macro_rules!` `$t:ty` fragment arrives in, and out of parentheses: `$t` with
/// `t = f32` is `f32`.
pub fn ungroup(mut ty: &syn::Type) -> &syn::Type {
    loop {
        match ty {
            syn::Type::Group(g) => ty = &g.elem,
            syn::Type::Paren(p) => ty = &p.elem,
            _ => return ty,
        }
    }
}

/// `u32`, `i32`, `f32`, `f16` or `bool` as a path type.
pub fn scalar_type(ty: &syn::Type) -> Option<Scalar> {
    let syn::Type::Path(p) = ungroup(ty) else {
        return None;
    };
    let id = p.path.get_ident()?;
    Some(match id.to_string().as_str() {
        "f32" => Scalar::F32,
        "u32" => Scalar::U32,
        "i32" => Scalar::I32,
        "f16" => Scalar::F16,
        "f64" => Scalar::F64,
        "bool" => Scalar::Bool,
        _ => return None,
    })
}

/// `Vec2`..`Vec4` (f32), `UVec2`..`UVec4`, `IVec2`..`IVec4`, as glam names them.
pub fn vector_type(ty: &syn::Type) -> Option<(Scalar, u8)> {
    let syn::Type::Path(p) = ungroup(ty) else {
        return None;
    };
    vector_name(&p.path.get_ident()?.to_string())
}

pub fn vector_name(name: &str) -> Option<(Scalar, u8)> {
    let (s, rest) = if let Some(r) = name.strip_prefix("UVec") {
        (Scalar::U32, r)
    } else if let Some(r) = name.strip_prefix("IVec") {
        (Scalar::I32, r)
    } else if let Some(r) = name.strip_prefix("HVec") {
        // `h` as in WGSL's `vec4h`; glam has no half-precision vectors. `HVec8`, eight
        // halves, is the 16-byte value that loads, stores and copies move whole
        // (`check::hvec8_whole_values`).
        if r == "8" {
            return Some((Scalar::F16, 8));
        }
        (Scalar::F16, r)
    } else if let Some(r) = name.strip_prefix("DVec") {
        (Scalar::F64, r)
    } else {
        (Scalar::F32, name.strip_prefix("Vec")?)
    };
    match rest {
        "2" => Some((s, 2)),
        "3" => Some((s, 3)),
        "4" => Some((s, 4)),
        _ => None,
    }
}

/// The role of a cooperative-matrix type name: `CoopA`, `CoopB`, `CoopC`, `CoopRow`.
pub fn coop_role(name: &str) -> Option<CoopRole> {
    [CoopRole::A, CoopRole::B, CoopRole::C, CoopRole::Row]
        .into_iter()
        .find(|r| r.type_name() == name)
}

/// `CoopA<f16>`, `CoopB<f16>` or `CoopC<f32>`: `None` when the type is not a
/// cooperative matrix, the message when it is one with a wrong element type.
pub fn coop_type(ty: &syn::Type) -> Option<Result<(Scalar, CoopRole), String>> {
    let syn::Type::Path(p) = ungroup(ty) else {
        return None;
    };
    let seg = p.path.segments.last()?;
    let role = coop_role(&seg.ident.to_string())?;
    let want = role.elem();
    // `CoopRow` has one element type, and names none.
    if role == CoopRole::Row {
        return Some(match seg.arguments {
            syn::PathArguments::None => Ok((want, role)),
            _ => Err("`CoopRow` holds `f32`s and takes no type arguments: write `CoopRow`".into()),
        });
    }
    let usage = format!("`{}<{}>`", role.type_name(), want.wgsl());
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return Some(Err(format!(
            "a cooperative matrix names its element type: write {usage}"
        )));
    };
    let elem = match args.args.first() {
        Some(syn::GenericArgument::Type(t)) if args.args.len() == 1 => scalar_type(t),
        _ => None,
    };
    Some(match elem {
        Some(s) if s == want => Ok((s, role)),
        Some(s) => Err(format!(
            "`{}` holds `{}` elements, not `{}`: write {usage} (cooperative matrices multiply `f16` operands into an `f32` accumulator)",
            role.type_name(),
            want.wgsl(),
            s.wgsl()
        )),
        None => Err(format!(
            "a cooperative matrix's element type is a scalar: write {usage}"
        )),
    })
}

/// A binding's element type: a scalar (not `bool`), a vector, or `Atomic<u32>`,
/// `Atomic<i32>` or `Atomic<f32>`; its scalar, width and whether it is atomic.
pub fn elem_type(ty: &syn::Type) -> Option<(Scalar, u8, bool)> {
    if let Some(s) = scalar_type(ty) {
        return (s != Scalar::Bool).then_some((s, 1, false));
    }
    if let Some((s, n)) = vector_type(ty) {
        return Some((s, n, false));
    }
    match scalar_type(atomic_inner(ty)?)? {
        s @ (Scalar::U32 | Scalar::I32 | Scalar::F32) => Some((s, 1, true)),
        _ => None,
    }
}

/// `T` of `Atomic<T>`.
pub fn atomic_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ungroup(ty) else {
        return None;
    };
    let seg = p.path.segments.last()?;
    if seg.ident != "Atomic" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    match args.args.first() {
        Some(syn::GenericArgument::Type(inner)) => Some(inner),
        _ => None,
    }
}

/// A `#[forge_struct]` of the module named by a path type.
pub fn struct_type(ty: &syn::Type, structs: &[StructDef]) -> Option<usize> {
    let syn::Type::Path(p) = ungroup(ty) else {
        return None;
    };
    let id = p.path.get_ident()?.to_string();
    structs.iter().position(|s| s.name == id)
}

// ---- layout --------------------------------------------------------------------------

/// The 32-bit words a struct field holds on the host: no padding, since every component is
/// 4 bytes.
pub fn ty_words(t: &Ty) -> u32 {
    match t {
        Ty::Vector(_, n) => *n as u32,
        Ty::Array(e, ConstLen::Lit(n)) => ty_words(e) * n,
        _ => 1,
    }
}

/// The alignment WGSL gives a type in storage: a scalar's size, a `vec2`'s twice that,
/// a `vec3`'s and a `vec4`'s four times, an array's element's.
pub fn wgsl_align(t: &Ty) -> u32 {
    match t {
        Ty::Scalar(s) => s.size(),
        Ty::Vector(s, 2) => 2 * s.size(),
        Ty::Vector(_, 8) => 16,
        Ty::Vector(s, _) => 4 * s.size(),
        Ty::Array(e, _) => wgsl_align(e),
        Ty::Struct(_) => 16,
        Ty::Coop(s, _) => s.size(),
    }
}

/// A `#[forge_struct]`'s WGSL declaration.
pub fn struct_decl(def: &StructDef) -> String {
    let mut s = format!("struct {} {{\n", wgsl_struct_name(def));
    for f in &def.fields {
        let _ = writeln!(s, "    {}: {},", wgsl_name(&f.name), wgsl(&f.ty, &[], &[]));
    }
    s.push_str("}\n");
    s
}

// ---- spelling ------------------------------------------------------------------------

/// `HVec8` in WGSL, which has no eight-component vector: two `vec4<f16>`, 16 bytes, an
/// array of them strided by 16 (`[f16; 8]` on the host, CUDA's 16-byte value). Not a
/// `vec4<u32>`, which would be one access by construction: naga types a cooperative
/// matrix loaded from an array by the array's scalar, and a `coop_mat16x16<u32>` is no
/// operand. A cooperative load from an array of `HVec8`s starts at the first `vec4<f16>`
/// of its element and counts its stride in `vec4<f16>`s, twice the language's.
pub const HVEC8_WGSL: &str = "array<vec4<f16>, 2>";

/// A type in WGSL: a struct by its name, an array length over the kernel's `knobs`.
pub fn wgsl(t: &Ty, structs: &[StructDef], knobs: &[Knob]) -> String {
    match t {
        Ty::Struct(i) => wgsl_struct_name(&structs[*i]),
        Ty::Scalar(s) => s.wgsl().to_string(),
        // WGSL has no eight-component vector (`HVEC8_WGSL`).
        Ty::Vector(Scalar::F16, 8) => HVEC8_WGSL.to_string(),
        Ty::Vector(s, n) => format!("vec{n}<{}>", s.wgsl()),
        Ty::Array(e, len) => format!("array<{}, {}>", wgsl(e, structs, knobs), len_of(len, knobs)),
        // A row's value is with the lanes that compute with it (`lower::coop`).
        Ty::Coop(s, CoopRole::Row) => s.wgsl().to_string(),
        Ty::Coop(s, r) => format!("coop_mat16x16<{}, {}>", s.wgsl(), r.wgsl()),
    }
}

/// An array length in WGSL (and in CUDA C, which reads it alike): `256`, or `(WG * 2u)`
/// over the schedule's constants.
pub fn len_of(len: &ConstLen, knobs: &[Knob]) -> String {
    fn go(c: &CExpr, knobs: &[Knob], out: &mut String) {
        match c {
            CExpr::Lit(v) => {
                let _ = write!(out, "{v}u");
            }
            CExpr::Sched(s) => out.push_str(&sched_name(*s, knobs)),
            // Inlining replaces every length parameter before a kernel is emitted.
            CExpr::Param(_, name) => out.push_str(name),
            CExpr::Bin(op, a, b) => {
                let sym = op.symbol();
                out.push('(');
                go(a, knobs, out);
                let _ = write!(out, " {sym} ");
                go(b, knobs, out);
                out.push(')');
            }
        }
    }
    match len {
        ConstLen::Lit(n) => n.to_string(),
        ConstLen::Sched(c) => {
            let mut s = String::new();
            go(c, knobs, &mut s);
            s
        }
    }
}

/// An array length as the user writes it, for messages: `256`, `WG * 2`, `N`.
pub fn len_text(len: &ConstLen, knobs: &[Knob]) -> String {
    fn go(c: &CExpr, knobs: &[Knob]) -> String {
        match c {
            CExpr::Lit(v) => v.to_string(),
            CExpr::Sched(SchedConst::Wg) => "WG".into(),
            CExpr::Sched(SchedConst::WgAxis(d)) => wg_axis_name(*d).into(),
            CExpr::Sched(SchedConst::Items) => "ITEMS".into(),
            CExpr::Sched(SchedConst::Vec) => "VEC".into(),
            CExpr::Sched(SchedConst::Knob(i)) => {
                knobs.get(*i).map(|k| k.name.clone()).unwrap_or_default()
            }
            CExpr::Param(_, name) => name.clone(),
            CExpr::Bin(op, a, b) => {
                let sym = op.symbol();
                format!("{} {sym} {}", go(a, knobs), go(b, knobs))
            }
        }
    }
    match len {
        ConstLen::Lit(n) => n.to_string(),
        ConstLen::Sched(c) => go(c, knobs),
    }
}

/// A type as the user writes it, for messages: `[f32; 256]`, `Vec4`, `[u32; WG]`.
pub fn ty_text(t: &Ty, knobs: &[Knob]) -> String {
    match t {
        Ty::Scalar(s) => s.wgsl().to_string(),
        Ty::Vector(s, n) => {
            let p = match s {
                Scalar::F32 => "",
                Scalar::U32 => "U",
                Scalar::I32 => "I",
                Scalar::F16 => "H",
                Scalar::F64 => "D",
                Scalar::Bool => "B",
            };
            format!("{p}Vec{n}")
        }
        Ty::Array(e, len) => format!("[{}; {}]", ty_text(e, knobs), len_text(len, knobs)),
        Ty::Struct(_) => "a struct".to_string(),
        Ty::Coop(_, CoopRole::Row) => "CoopRow".to_string(),
        Ty::Coop(s, r) => format!("{}<{}>", r.type_name(), s.wgsl()),
    }
}
