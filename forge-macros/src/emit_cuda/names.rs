//! Names in the generated CUDA C++: a user identifier keeps its spelling unless C++, CUDA
//! or the generated code has it.

use crate::model::*;

/// Identifiers that C++ reserves, that CUDA or its math library declares, or that the
/// generated code owns: a user name equal to one of these is renamed.
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
/// or it starts with `_` (C++ reserves `_X` and `__` names; CUDA uses them) or with the
/// `fg_` prefix that generated names own. The renaming is one to one: a renamed name
/// starts with `fg_u_`, which no name kept as it is can.
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

/// The CUDA name of a `#[forge_fn]` helper.
pub fn helper_name(h: &HelperFn) -> String {
    format!("fg_fn_{}", h.name)
}

/// A `#[forge_struct]`'s CUDA name.
pub fn struct_name(def: &StructDef) -> String {
    cuda_name(&def.name)
}

/// The constant of a schedule value: `WG`, `ITEMS`, `VEC` or the knob's name, as
/// `forge_core::Schedule::cuda_header` declares them.
pub fn sched_name(s: SchedConst, knobs: &[Knob]) -> String {
    crate::emit_wgsl::sched_name(s, knobs)
}

/// The variable a builtin's value is held in, declared by the kernel's prologue.
pub fn builtin(b: Builtin) -> &'static str {
    match b {
        Builtin::GlobalIndex => "fg_global_index",
        Builtin::LocalIndex => "fg_lidx",
        Builtin::WorkgroupIndex => "fg_wg_index",
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
