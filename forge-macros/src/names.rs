//! Names, layer 2: how the kernel language's names are spelled in the generated WGSL and
//! CUDA C++, and the namer that gives each local of a function a name of its own. A user's
//! identifier keeps its spelling unless the target reserves it, predeclares something the
//! generated code uses under it, or it is of the form the generated names take (`fg_...`):
//! then it becomes `fg_u_<name>`, which no kept name can be, so renaming is one to one.

use crate::model::{Builtin, HelperFn, Kernel, Knob, Local, SchedConst, StructDef, SubgroupOp};

/// WGSL's keywords, as the spec lists them
/// (<https://www.w3.org/TR/2025/CRD-WGSL-20250809/#keyword-summary>, the snapshot that
/// naga 30's front end follows).
const WGSL_KEYWORDS: &[&str] = &[
    "alias",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "requires",
    "return",
    "struct",
    "switch",
    "true",
    "var",
    "while",
];

/// WGSL's reserved words, from the same snapshot of the spec: naga rejects them as
/// identifiers.
const WGSL_RESERVED: &[&str] = &[
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
];

/// Names WGSL predeclares that the generated code uses (the builtins it calls, its types
/// and its entry point `main`), names naga reserves beyond the spec (`binding_array`), and
/// the schedule constants the runtime declares: a user name equal to one would shadow
/// it, as `let max = ..` would hide `max`.
const WGSL_PREDECLARED: &[&str] = &[
    "binding_array",
    "main",
    "abs",
    "acos",
    "all",
    "any",
    "array",
    "asin",
    "atan",
    "atan2",
    "atomic",
    "bitcast",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "countOneBits",
    "cross",
    "degrees",
    "determinant",
    "distance",
    "dot",
    "exp",
    "exp2",
    "floor",
    "fma",
    "fract",
    "frexp",
    "ldexp",
    "length",
    "log",
    "log2",
    "max",
    "min",
    "mix",
    "modf",
    "normalize",
    "pow",
    "ptr",
    "radians",
    "reflect",
    "refract",
    "reverseBits",
    "round",
    "select",
    "sign",
    "sin",
    "sinh",
    "smoothstep",
    "sqrt",
    "step",
    "tan",
    "tanh",
    "transpose",
    "trunc",
    "vec2",
    "vec3",
    "vec4",
    "mat2x2",
    "mat3x3",
    "mat4x4",
    "f32",
    "f16",
    "u32",
    "i32",
    "bool",
    "sampler",
    "texture_2d",
    "arrayLength",
    "workgroupBarrier",
    "storageBarrier",
    "firstLeadingBit",
    "firstTrailingBit",
    "countLeadingZeros",
    "countTrailingZeros",
    "extractBits",
    "insertBits",
    "WG",
    "ITEMS",
    "VEC",
    "WG_X",
    "WG_Y",
    "WG_Z",
];

/// The name a user identifier gets in generated WGSL: itself, unless WGSL reserves it or
/// the generated code uses it (above, and the subgroup builtins), or it starts with `__`
/// (which WGSL forbids) or with `fg_`.
pub fn wgsl_name(name: &str) -> String {
    let subgroup_builtin = SubgroupOp::ALL.iter().any(|op| op.wgsl() == name);
    let taken = [WGSL_KEYWORDS, WGSL_RESERVED, WGSL_PREDECLARED]
        .iter()
        .any(|list| list.contains(&name));
    if taken || subgroup_builtin || name.starts_with("fg_") || name.starts_with("__") {
        format!("fg_u_{name}")
    } else {
        name.to_string()
    }
}

/// A `#[forge_struct]`'s WGSL name: its own, unless WGSL or the generated code has it
/// (`Params`, the uniform's struct).
pub fn wgsl_struct_name(def: &StructDef) -> String {
    match def.name.as_str() {
        "Params" => "fg_u_Params".to_string(),
        n => wgsl_name(n),
    }
}

/// Identifiers that C++ reserves (the keywords and alternative tokens of C++20, ISO/IEC
/// 14882:2020 [lex.key] and [lex.digraph]), that CUDA or its math library declares, or
/// that the generated code owns: a user name equal to one of these is renamed.
const CUDA_TAKEN: &[&str] = &[
    // C++ keywords and alternative tokens.
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "main",
    "NULL",
    "std",
    // CUDA's built-in variables and types.
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "dim3",
    "uint3",
    "half",
    "half2",
    "float2",
    "float3",
    "float4",
    "int2",
    "int4",
    "uint2",
    "uint4",
    "nv_bfloat16",
    // Math functions CUDA declares, which a local of the same name would hide.
    "abs",
    "min",
    "max",
    "sqrt",
    "exp",
    "exp2",
    "log",
    "log2",
    "log10",
    "sin",
    "cos",
    "tan",
    "tanh",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "pow",
    "powf",
    "floor",
    "ceil",
    "trunc",
    "round",
    "rint",
    "fma",
    "fmaf",
    "fmod",
    "fabs",
    "fmin",
    "fmax",
    "hypot",
    "copysign",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "printf",
    "assert",
    "memcpy",
    "memset",
    "malloc",
    "free",
    // The schedule's constants.
    "WG",
    "ITEMS",
    "VEC",
    "WG_X",
    "WG_Y",
    "WG_Z",
];

/// The name a user identifier gets in generated CUDA: itself, unless C++ or CUDA has it,
/// or it starts with `_` (C++ reserves `_X` and `__` names; CUDA uses them), with `fg_`,
/// or with `atomic` (CUDA's atomic functions).
pub fn cuda_name(name: &str) -> String {
    if CUDA_TAKEN.contains(&name)
        || name.starts_with('_')
        || name.starts_with("fg_")
        || name.starts_with("atomic")
        || name.starts_with("__")
    {
        format!("fg_u_{name}")
    } else {
        name.to_string()
    }
}

/// A `#[forge_struct]`'s CUDA name.
pub fn cuda_struct_name(def: &StructDef) -> String {
    cuda_name(&def.name)
}

/// The name of a `#[forge_fn]` helper's function, in WGSL and in CUDA.
pub fn helper_name(h: &HelperFn) -> String {
    format!("fg_fn_{}", h.name)
}

/// `WG_X`, `WG_Y` or `WG_Z` for axis 0, 1 or 2.
pub fn wg_axis_name(d: u8) -> &'static str {
    ["WG_X", "WG_Y", "WG_Z"][d as usize % 3]
}

/// The axis `WG_X`, `WG_Y` or `WG_Z` names.
pub fn wg_axis_index(name: &str) -> Option<u8> {
    ["WG_X", "WG_Y", "WG_Z"]
        .iter()
        .position(|n| *n == name)
        .map(|d| d as u8)
}

/// The schedule constant `name` names: `WG`, `ITEMS`, `VEC`, a knob, or `WG_X`, `WG_Y`,
/// `WG_Z` where `axes` allows them (in a 2-D or 3-D grid, and in `keep`, where a 1-D
/// kernel's are `WG`, 1 and 1). Knobs may not take those names, so the order of the
/// lookups does not matter. The inverse of [`sched_name`].
pub fn sched_const(name: &str, knobs: &[Knob], axes: bool) -> Option<SchedConst> {
    match name {
        "WG" => Some(SchedConst::Wg),
        "ITEMS" => Some(SchedConst::Items),
        "VEC" => Some(SchedConst::Vec),
        _ => knobs
            .iter()
            .position(|k| k.name == name)
            .map(SchedConst::Knob)
            .or_else(|| wg_axis_index(name).filter(|_| axes).map(SchedConst::WgAxis)),
    }
}

/// A schedule constant's name, the same in the kernel language, in WGSL and in CUDA (as
/// `forge_core::Schedule::wgsl_header` and `cuda_header` declare them): `WG`, `ITEMS`,
/// `VEC`, `WG_X`.. or the knob's.
pub fn sched_name(s: SchedConst, knobs: &[Knob]) -> String {
    match s {
        SchedConst::Wg => "WG".into(),
        SchedConst::WgAxis(d) => wg_axis_name(d).into(),
        SchedConst::Items => "ITEMS".into(),
        SchedConst::Vec => "VEC".into(),
        SchedConst::Knob(i) => knobs
            .get(i)
            .map(|k| k.name.clone())
            .unwrap_or_else(|| "KNOB".into()),
    }
}

/// The variable that holds a builtin's value in the generated WGSL and CUDA, which each
/// entry point's prologue declares.
pub fn builtin_var(b: Builtin) -> &'static str {
    match b {
        Builtin::GlobalIndex => "fg_global_index",
        Builtin::LocalIndex => "fg_lidx",
        Builtin::WorkgroupIndex => "fg_wg_index",
        // The logical ids, unfolded from the physical ones.
        Builtin::GlobalId => "fg_lgid",
        Builtin::LocalId => "fg_lid",
        Builtin::WorkgroupId => "fg_lwid",
        Builtin::NumWorkgroups => "fg_groups",
        Builtin::SubgroupInvocationId => "fg_sg_lane",
        Builtin::SubgroupSize => "fg_sg_size",
        Builtin::SubgroupId => "fg_sg_id",
        Builtin::NumSubgroups => "fg_nsg",
    }
}

/// Gives every local of a function a name of its own: WGSL forbids redeclaring a name in
/// one scope, and the oracle keeps some locals of different scopes side by side. Names
/// are the user's where they are free (`x`, then `x_1`, `x_2` for the `let`s that shadow
/// it), after the module-level names the function can see.
pub struct Namer {
    taken: std::collections::HashSet<String>,
    /// The target language's name for a user identifier (`wgsl_name` or `cuda_name`).
    rename: fn(&str) -> String,
}

impl Namer {
    /// A namer for a kernel's entry point, in the language whose names `rename` gives:
    /// the names of its bindings, scalar parameters and helpers are taken.
    pub fn kernel(k: &Kernel<'_>, rename: fn(&str) -> String) -> Self {
        let taken = k
            .bindings
            .iter()
            .map(|b| rename(&b.name))
            .chain(k.scalars.iter().map(|s| rename(&s.name)))
            .chain(k.helpers.iter().map(|h| rename(&h.name)))
            .collect();
        Namer { taken, rename }
    }

    /// A namer for a helper, a function of its own: its names may shadow the module's.
    pub fn helper(k: &Kernel<'_>, rename: fn(&str) -> String) -> Self {
        let taken = k.helpers.iter().map(|h| rename(&h.name)).collect();
        Namer { taken, rename }
    }

    /// A fresh name based on `base`, already a valid identifier.
    pub fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut n = 1;
        while !self.taken.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    /// The names of a function's locals, by `LocalId`.
    pub fn locals(&mut self, locals: &[Local]) -> Vec<String> {
        locals
            .iter()
            .map(|l| {
                let base = match l.hidden {
                    Some(base) => base.to_string(),
                    None => (self.rename)(&l.name),
                };
                self.fresh(&base)
            })
            .collect()
    }
}
