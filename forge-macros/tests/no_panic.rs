//! The macro never panics: whatever it is given, it emits `compile_error!` (DESIGN.md,
//! "Compile-time checks").
//!
//! forge-macros is a `proc-macro = true` crate, so a test cannot call its functions. This
//! test instead generates malformed and random kernels as source text with proptest:
//! - well-typed kernels that mostly pass the checks, so the emitters, naga and rustc's
//!   checking of the generated Rust see them, sometimes with one random statement;
//! - kernels from a grammar of the kernel language, with a sane or a random signature;
//! - random `#[forge_kernel(...)]` option lists, including token soup (rustc passes
//!   attribute arguments to the macro unparsed);
//! - mutations and truncations of valid kernels;
//! - random token soup in a body.
//!
//! It writes them, each in its own `mod`, into one scratch crate under the target directory
//! that depends on `wgsl-forge` by path, and runs ONE cargo over it (a `build` that never
//! reaches code generation, so it costs a check but reuses the built dependencies). Then:
//! - no diagnostic says that a macro (or rustc) panicked;
//! - the valid control kernels of the batch compile, so errors stayed in their kernels;
//! - no kernel that the macro accepted fails later in the generated Rust: the macro must
//!   reject an invalid kernel itself.
//!
//! Environment: `FORGE_NO_PANIC_SEED` (a u64) picks other cases, `FORGE_NO_PANIC_CASES`
//! the batch size. A failing batch stays in `target/forge-no-panic/src/lib.rs`.

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_SEED: u64 = 0x5eed_f0e6_e000_0001;
const DEFAULT_CASES: usize = 90;

// ---- valid kernels: controls of every batch, and seeds for mutations -----------------

const SEEDS: &[&str] = &[
    r#"#[forge_kernel(workgroup = 64, threads = m)]
pub fn gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    let row = global_index();
    if row < m {
        let mut acc = 0.0f32;
        for j in 0..n {
            acc += a[row * n + j] * x[j];
        }
        y[row] = acc;
    }
}"#,
    r#"#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [32, 64, 128]))]
pub fn block_sum(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(64)], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 128];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    let mut stride = WG / 2;
    while stride > 0 {
        if lid < stride {
            tile[lid] += tile[lid + stride];
        }
        workgroup_barrier();
        stride /= 2;
    }
    if lid == 0 && workgroup_index() < n.div_ceil(64) {
        sums[workgroup_index()] = tile[0];
    }
}"#,
    r#"#[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (32, 8)]))]
pub fn transpose(a: &[f32; w * h], #[out] t: &mut [f32; w * h], w: u32, h: u32) {
    #[shared]
    let mut tile = [0.0f32; 256];
    let id = global_id();
    let l = local_id();
    if id.x < w && id.y < h {
        tile[l.y * WG_X + l.x] = a[id.y * w + id.x];
    }
    workgroup_barrier();
    if id.x < w && id.y < h {
        t[id.x * h + id.y] = tile[l.y * WG_X + l.x] + (num_workgroups().z + workgroup_id().y) as f32 * 0.0;
    }
}"#,
    r#"#[forge_kernel(threads = (w, h, d), workgroup = (4, 4, 4))]
pub fn cells(#[out] y: &mut [u32; w * h * d], w: u32, h: u32, d: u32) {
    let id = global_id();
    if id.x < w && id.y < h && id.z < d {
        y[global_index()] = id.x + WG_Y * id.z;
    }
}"#,
    r#"#[forge_kernel(threads = n)]
pub fn int_ops(a: &[u32; n], b: &[i32; n], #[out] ou: &mut [u32; n], #[out] oi: &mut [i32; n * 2], n: u32, salt: u32) {
    let i = global_index();
    if i >= n {
        return;
    }
    let x = a[i] ^ salt;
    let s = b[i];
    ou[i] = (x << 3) ^ (x >> 5) + x.count_ones() * x.wrapping_mul(7) / (x % 13 + 1);
    oi[i * 2] = s.abs() * s.signum() - (s >> 2);
    oi[i * 2 + 1] = (x as i32).wrapping_sub(s) + i32::MIN;
}"#,
    r#"#[forge_kernel(workgroup = 32, threads = n)]
pub fn loops(y: &mut [f32; n], w: &[f32; 4], n: u32, reps: u32) {
    let i = global_index();
    if i >= n {
        return;
    }
    let mut acc = [0.0f32; 4];
    for k in 0..4u32 {
        acc[k] = w[k] * y[i];
    }
    let mut s = 0.0;
    let mut k = 0u32;
    while k < 4 {
        s += acc[k];
        k += 1;
    }
    let mut r = 0u32;
    loop {
        r += 1;
        if r % 2 == 0 {
            continue;
        }
        if r > reps {
            break;
        }
        s = s * 0.5 + 1.0;
    }
    let sign = if s >= 0.0 { 1.0 } else { -1.0 };
    y[i] = s.powf(2.0).max(sign).round() + f32::from_bits(s.to_bits() ^ 1);
}"#,
    r#"#[forge_kernel(workgroup = 64, threads = n)]
pub fn second_edition(x: &[f32; n], d: &[f64; n], #[out] bins: &mut [Atomic<f32>; 8], #[out] owner: &mut [Atomic<u32>; 8], #[out] y: &mut [f64; n], #[out] v: &mut [Vec4; n], n: u32) {
    #[shared]
    let mut local = [0.0f32; 8];
    let i = global_index();
    if i < n {
        let b = i % 8;
        local[b].fetch_add(x[i]);
        bins[b].fetch_max(x[i].atan2(0.5) + x[i].hypot(1.0) + f32::consts::PI);
        let (old, ok) = owner[b].compare_exchange_weak(0, i + 1);
        let w = match i % 5 {
            0 | 1 => 1.0f64,
            2..=3 => d[i].sqrt().mul_add(2.0, 1.0),
            r => r as f64,
        };
        y[i] = w + (old as f64) + select(0.0, 1.0, ok);
        let mut a = Vec4::splat(x[i]);
        a += Vec4::ONE;
        a *= 0.5;
        let c = a.xyz().cross(Vec3::new(1.0, 0.0, 0.0));
        v[i] = Vec4::new(c.x, c.y, c.z, a.distance(Vec4::ZERO) + x[i].rem_euclid(2.0) + x[i].asinh());
    }
    workgroup_barrier();
    let lid = local_index();
    if lid < 8 {
        bins[lid].fetch_add(local[lid].load());
    }
}"#,
    r#"#[forge_kernel(workgroup = 64, threads = n, types(T = [f32, u32]))]
pub fn third_edition<T>(x: &[T; n], w: &[f32; n], #[out] y: &mut [T; n], #[out] z: &mut [u32; n], n: u32) {
    #[shared]
    let mut tot = [0 as T; 64];
    let i = global_index();
    let lid = local_index();
    tot[lid] = if i < n { x[i] } else { 0 as T };
    workgroup_barrier();
    let mut s = 0 as T;
    for k in (lid % 2..64).step_by(2) {
        s += tot[k];
    }
    for k in (0..4u32).rev() {
        s += tot[(lid + k) % 64];
    }
    if i < n {
        y[i] = s + if lid > 3 { tot[lid - 1] } else { tot[lid] };
        let v = w[i];
        let (f, e) = frexp(v);
        z[i] = first_leading_bit(i) + extract_bits(e as u32, 0, 8) + pack4x8unorm(Vec4::splat(mix(f, v.saturate(), 0.5)))
            + (clamp(v, -1.0, 1.0) + fract(v) + sign(v) + smoothstep(0.0, 1.0, v)) as u32;
    }
}"#,
    r#"#[forge_kernel(threads = n, types(T = [f32, f16, f64]))]
pub fn scale<T>(x: &[T; n], idx: &[u32; n], #[out] y: &mut [T; n], #[out] z: &mut [u32; n], a: f32, n: u32) {
    let i = global_index();
    if i < n {
        let v: T = x[i] * (a as T);
        y[i] = v.max(0.0).min(v.abs() + (1.5 as T));
        z[i] = idx[i] + select(0u32, 1u32, v > (0.25 as T));
    }
}"#,
    r#"#[forge_module]
mod bodies {
    use wgsl_forge::prelude::*;

    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Body {
        pub pos: Vec4,
        pub vel: Vec3,
        pub mass: f32,
        pub hits: [u32; 4],
    }

    #[forge_fn]
    fn kick(b: Body, dt: f32) -> Body {
        let mut o = b;
        o.vel.y -= 9.75 * dt;
        o.hits[0] += 1;
        o
    }

    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn step(bs: &mut [Body; n], #[out] e: &mut [f32; n], n: u32, dt: f32) {
        #[shared]
        let mut tile = [Body::zeroed(); 64];
        let i = global_index();
        let lid = local_index();
        if i < n {
            tile[lid] = kick(bs[i], dt);
        }
        workgroup_barrier();
        if i < n {
            let b = tile[lid];
            bs[i] = b;
            bs[i].pos += Vec4::new(b.vel.x, b.vel.y, b.vel.z, 0.0) * dt;
            let z = [0u32, 1u32, 2u32, 3u32];
            let fresh = Body { mass: 1.0, pos: Vec4::ZERO, vel: b.vel, hits: z };
            e[i] = 0.5 * b.mass * b.vel.dot(b.vel) + fresh.mass;
        }
    }
}"#,
    r#"#[forge_kernel(workgroup = 64, threads = t * 64)]
pub fn softmax_rows(x: &[f32; t * 512], #[out] y: &mut [f32; t * 512], t: u32) {
    let at = (workgroup_index() * 2 + subgroup_id()) * 256;
    let s = CoopC::load_row_major(&x[at], 16).mask_from(3, 1, f32::NEG_INFINITY);
    let m = s.row_max().max(CoopRow::splat(-100.0));
    let p = s.exp2_rows(1.0, m);
    let l = p.row_sum().add(CoopRow::splat(1.0)).scale(0.5);
    let q = p.scale_rows(l.recip()).to_a().mul_add(CoopB::zeroed(), CoopC::zeroed());
    q.store_row_major(&mut y[at], 16);
}"#,
];

// ---- the grammar ------------------------------------------------------------------------

/// Names the bodies use: parameters of the sane signature, locals, builtins, WGSL
/// keywords and names the generated code owns.
const NAMES: &[&str] = &[
    "i",
    "j",
    "k",
    "n",
    "m",
    "x",
    "y",
    "a",
    "acc",
    "v",
    "tile",
    "WG",
    "ITEMS",
    "VEC",
    "max",
    "select",
    "array",
    "main",
    "fg_tmp",
    "__x",
    "loop_",
    "r#type",
    "self",
    "Self",
    "_",
    "global_index",
    "workgroup_barrier",
];

const INT_SUFFIXES: &[&str] = &["", "", "", "u32", "i32", "f32", "u64", "usize", "i8", "f16"];

const LEAVES: &[&str] = &[
    "global_index()",
    "local_index()",
    "workgroup_index()",
    "global_id().x",
    "local_id().y",
    "workgroup_id().z",
    "num_workgroups().x",
    "global_id().w",
    "global_id()",
    "local_id()",
    "num_workgroups()",
    "workgroup_id().w",
    "WG_X",
    "WG_Z",
    "global_id().xy()",
    "global_index(1)",
    "subgroup_size()",
    "subgroup_invocation_id(2)",
    "subgroup_add(x[i])",
    "subgroup_add()",
    "subgroup_broadcast(1.0, i)",
    "subgroup_shuffle(1.0)",
    "subgroup_ballot(true).x",
    "subgroup_all(1.0)",
    "(1.5 as f16)",
    "HVec4::ZERO",
    "HVec8::ZERO",
    "HVec8::ONE",
    "HVec8::new(1.0f16)",
    "HVec8::join(HVec4::ZERO, HVec4::ONE)",
    "HVec8::join(1.0)",
    "HVec8::ZERO.lo()",
    "HVec8::ZERO.hi().x",
    "HVec8::ZERO.x",
    "x[i].lo()",
    "(HVec8::ZERO + HVec8::ZERO)",
    "HVec8::ZERO.lo(1)",
    "70000.0f16",
    "true",
    "false",
    "f32::NAN",
    "f32::INFINITY",
    "f32::MAX",
    "u32::MAX",
    "i32::MIN",
    "i64::MAX",
    "f32::PI",
    "std::f32::consts::PI",
    "f32::consts::TAU",
    "core::f64::consts::E",
    "f32::consts::NOPE",
    "f64::consts",
    "1.5f64",
    "DVec2::ZERO",
    "DVec4::splat(1.0)",
    "Vec3::ONE.cross(Vec3::ONE)",
    "x[i].compare_exchange_weak(1.0, 2.0)",
    "Body { pos: Vec4::ZERO }",
    "Body::zeroed()",
    "Body { ..x }",
    "x[i].pos",
    "Vec4::ONE.pos",
    "0.5f16",
    "1e39f32",
    "1e-50",
    "4294967296",
    "2147483648i32",
    "-2147483648",
    "0xffff_ffffu32",
    "'c'",
    "\"s\"",
    "b'a'",
    "()",
    "x[i]",
    "y[i]",
    "tile[0]",
    "a[i * n + j]",
];

const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "&&",
    "||",
];

const METHODS: &[&str] = &[
    "abs",
    "min",
    "max",
    "clamp",
    "sqrt",
    "exp",
    "exp2",
    "ln",
    "log2",
    "sin",
    "cos",
    "tan",
    "tanh",
    "floor",
    "ceil",
    "round",
    "round_ties_even",
    "trunc",
    "fract",
    "mul_add",
    "powf",
    "powi",
    "signum",
    "recip",
    "to_bits",
    "count_ones",
    "leading_zeros",
    "trailing_zeros",
    "reverse_bits",
    "is_nan",
    "is_finite",
    "div_ceil",
    "wrapping_add",
    "wrapping_sub",
    "wrapping_mul",
    "row_max",
    "row_sum",
    "mask_from",
    "exp2_rows",
    "scale_rows",
    "to_a",
    "scale",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "hypot",
    "log10",
    "to_degrees",
    "to_radians",
    "rem_euclid",
    "cross",
    "distance",
    "dot",
    "fetch_add",
    "fetch_sub",
    "fetch_min",
    "fetch_max",
    "fetch_or",
    "load",
    "store",
    "swap",
    "compare_exchange_weak",
    "cbrt",
    "len",
    "iter",
    "unwrap",
    "x",
];

const CASTS: &[&str] = &[
    "u32", "i32", "f32", "f16", "bool", "u64", "usize", "f64", "[u32; 2]",
];

fn int_lit() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just(0u64),
            Just(1),
            0u64..300,
            any::<u32>().prop_map(u64::from),
            any::<u64>()
        ],
        select(INT_SUFFIXES),
    )
        .prop_map(|(v, s)| format!("{v}{s}"))
}

fn float_lit() -> impl Strategy<Value = String> {
    (any::<f32>(), select(&["", "f32", "f64", "f16"][..])).prop_map(|(v, s)| {
        let v = if v.is_finite() { v } else { 1.0 };
        let t = format!("{v:?}");
        // `1e-40` needs no dot, but `1` would lex as an integer: keep it a float.
        let t = if t.contains('.') || t.contains('e') {
            t
        } else {
            format!("{t}.0")
        };
        format!("{t}{s}")
    })
}

/// WGSL's builtins under their snake-case names (the third edition), and near misses.
const WGSL_BUILTINS: &[&str] = &[
    "clamp",
    "fract",
    "sign",
    "round",
    "inverse_sqrt",
    "saturate",
    "step",
    "mix",
    "smoothstep",
    "ldexp",
    "frexp",
    "modf",
    "quantize_to_f16",
    "first_leading_bit",
    "first_trailing_bit",
    "extract_bits",
    "insert_bits",
    "count_one_bits",
    "pack4x8snorm",
    "unpack4x8snorm",
    "pack2x16float",
    "unpack2x16float",
    "pack4x_i8_clamp",
    "unpack4x_u8",
    "face_forward",
    "reflect",
    "refract",
    "dot",
    "cross",
    "length",
    "fma",
    "pow",
    "log",
    "degrees",
    "firstLeadingBit",
];

fn expr() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        4 => select(NAMES).prop_map(String::from),
        3 => select(LEAVES).prop_map(String::from),
        3 => int_lit(),
        2 => float_lit(),
    ];
    leaf.prop_recursive(4, 40, 3, |e| {
        prop_oneof![
            6 => (e.clone(), select(BINOPS), e.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            1 => (e.clone(), select(BINOPS), e.clone()).prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            2 => (select(&["-", "!", "*", "&"][..]), e.clone()).prop_map(|(op, a)| format!("{op}{a}")),
            2 => (e.clone(), select(CASTS)).prop_map(|(a, t)| format!("({a} as {t})")),
            4 => (e.clone(), select(METHODS), prop::collection::vec(e.clone(), 0..3))
                .prop_map(|(r, m, args)| format!("{r}.{m}({})", args.join(", "))),
            2 => (select(&["x", "y", "tile", "a", "acc", "n"][..]), e.clone()).prop_map(|(b, i)| format!("{b}[{i}]")),
            1 => (e.clone(), e.clone()).prop_map(|(b, i)| format!("{b}[{i}]")),
            1 => e.clone().prop_map(|a| format!("f32::from_bits({a})")),
            1 => (e.clone(), e.clone(), e.clone()).prop_map(|(c, a, b)| format!("if {c} {{ {a} }} else {{ {b} }}")),
            1 => (e.clone(), e.clone()).prop_map(|(c, a)| format!("if {c} {{ {a} }}")),
            1 => e.clone().prop_map(|a| format!("|q: f32| {a}")),
            1 => (e.clone(), e.clone()).prop_map(|(s, a)| format!("match {s} {{ 0 => {a}, _ => 1 }}")),
            1 => (e.clone(), e.clone(), e.clone(), select(&["0 | 1", "2..=5", "-3..4", "7..=2", "0..=100000", "u32::MAX", "1.5", "r", "_", "r if r > 2", "(3)", "'a'..='z'"][..]))
                .prop_map(|(s, a, b, p)| format!("match {s} {{ {p} => {a}, 9 => {{ {b} }} _ => {a} }}")),
            1 => (e.clone(), e.clone()).prop_map(|(s, a)| format!("match {s} {{ 0 => {a} }}")),
            1 => e.clone().prop_map(|a| format!("vec![{a}]")),
            1 => (e.clone(), e.clone()).prop_map(|(a, b)| format!("({a}, {b})")),
            1 => prop::collection::vec(e.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            1 => (e.clone(), select(&["4", "WG", "n", "0", "WG * 2", "4294967296", "ITEMS + VEC"][..]))
                .prop_map(|(a, l)| format!("[{a}; {l}]")),
            1 => (e.clone(), e.clone()).prop_map(|(a, b)| format!("{a}..{b}")),
            1 => e.clone().prop_map(|a| format!("{{ {a} }}")),
            1 => e.clone().prop_map(|a| format!("{a}.0")),
            1 => e.clone().prop_map(|a| format!("foo({a})")),
            1 => (select(&["tile", "x", "a", "acc"][..]), e.clone())
                .prop_map(|(b, i)| format!("workgroup_uniform_load(&{b}[{i}])")),
            2 => (select(WGSL_BUILTINS), prop::collection::vec(e.clone(), 0..5))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            1 => (e.clone(), select(WGSL_BUILTINS), prop::collection::vec(e.clone(), 0..3))
                .prop_map(|(r, f, args)| format!("{r}.{f}({})", args.join(", "))),
            1 => e.clone().prop_map(|a| format!("({a})?")),
            1 => Just("loop { break 1; }".to_string()),
            1 => Just("return".to_string()),
        ]
    })
    .boxed()
}

const ASSIGN_OPS: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
];
const TYPES_IN_BODY: &[&str] = &[
    "u32",
    "i32",
    "f32",
    "bool",
    "f16",
    "HVec8",
    "[f32; 4]",
    "[u32; WG]",
    "[[f32; 2]; 2]",
    "u64",
    "Vec<f32>",
    "[f32; TILE]",
    "[u32; K]",
    "CoopRow",
    "CoopRow<f32>",
    "[CoopRow; 2]",
];

fn place() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(NAMES).prop_map(String::from),
        3 => (select(&["x", "y", "tile", "acc", "a", "n"][..]), expr()).prop_map(|(b, i)| format!("{b}[{i}]")),
        1 => (expr(), expr()).prop_map(|(a, b)| format!("{a}[{b}][0]")),
        1 => expr(),
    ]
}

fn simple_stmt() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (any::<bool>(), select(NAMES), expr()).prop_map(|(m, n, e)| format!("let {}{n} = {e};", if m { "mut " } else { "" })),
        2 => (any::<bool>(), select(NAMES), select(TYPES_IN_BODY), prop::option::of(expr()))
            .prop_map(|(m, n, t, e)| match e {
                Some(e) => format!("let {}{n}: {t} = {e};", if m { "mut " } else { "" }),
                None => format!("let {}{n}: {t};", if m { "mut " } else { "" }),
            }),
        1 => select(NAMES).prop_map(|n| format!("let {n};")),
        2 => (select(NAMES), select(&["[0.0f32; 64]", "[0u32; WG]", "[1.0f32; 8]", "[0.0f32; 8192]", "[0i32; WG * ITEMS]", "0.0f32", "[0.0f32; n]", "[x[0]; 4]", "[0 as T; 64]", "[0 as f32; WG]", "[1 as u32; 4]", "[[0.0f32; 4]; 4]", "[0.0 as T; 2]"][..]), any::<bool>())
            .prop_map(|(n, init, m)| format!("#[shared]\nlet {}{n} = {init};", if m { "mut " } else { "" })),
        6 => (place(), select(ASSIGN_OPS), expr()).prop_map(|(p, op, e)| format!("{p} {op} {e};")),
        2 => select(&["workgroup_barrier();", "storage_barrier();", "workgroup_barrier(1);", "let b = workgroup_barrier();"][..]).prop_map(String::from),
        1 => select(&["async_wait(0);", "async_wait(1);", "async_wait(9);", "async_wait(n);", "async_wait();", "let w = async_wait(0);", "async_copy(&mut tile[0], &x[i]);", "async_copy(&mut y[0], &x[0]);", "async_copy(&mut tile[i], &tile[0]);", "async_copy(tile[0], x[0]);", "async_copy(&mut tile[0]);", "async_copy(&mut v, &x[0]);", "let c = async_copy(&mut tile[0], &x[0]);", "#[shared]\nlet mut h8 = [HVec8::ZERO; 64];\nasync_copy(&mut h8[i], &x[i]);", "let mut h8 = HVec8::ZERO;\nh8 += h8;", "#[shared]\nlet mut h8 = [HVec8::ZERO; 64];\nlet c8 = CoopA::load_row_major(&h8[0], 2);"][..]).prop_map(String::from),
        // An accumulator's rows: each operation, right and wrong, in uniform control flow,
        // under a vote, and on values of other types.
        1 => select(&["let c = CoopC::zeroed();\nlet m = c.row_max().max(c.row_sum()).scale(2.0);\nlet p = c.exp2_rows(1.0, m).mask_from(1, 1, 0.0);\np.scale_rows(m.recip()).store_row_major(&mut y[0], 16);\nlet a = p.to_a();", "let m = CoopRow::splat(x[i]);\nlet r = m.add(m).sub(m).mul(m).min(m).exp2();", "let sv = subgroup_any(true);\nif sv { let m = CoopC::zeroed().row_max(); }", "let r = CoopRow::splat(1.0);\nr.store_row_major(&mut y[0], 16);", "let r = CoopRow::splat();\nlet q = CoopRow::zeroed();", "let c = CoopC::zeroed().mask_from(1.0, 2, 3);\nlet d = c.exp2_rows(c, c);", "let a = CoopA::zeroed().row_max();\nlet b = 1.0f32.row_sum();", "let r: CoopRow = CoopC::zeroed().row_sum();\nlet t: CoopRow<f32> = r;\nlet u = r + r;", "if i < n { let r = CoopRow::splat(1.0).exp2(); }", "let c = CoopC::zeroed().scale_rows(CoopRow::splat(1.0), 2);\nlet d = CoopRow::splat(1.0).scale(CoopRow::splat(2.0));"][..]).prop_map(String::from),
        // Cooperative-matrix operations under a vote of the subgroup, and what may not sit there.
        1 => select(&["let sv = subgroup_any(x[i] > 0.0);\nif sv { let m = CoopA::load_row_major(&x[0], 16); }", "if subgroup_all(i < n) { workgroup_barrier(); }", "let sv = !subgroup_all(true);\nif sv && i < 3 { CoopC::zeroed().store_row_major(&mut y[0], 16); }", "if subgroup_broadcast_first(i) == 0 { let c = subgroup_add(1u32); }", "let sv = subgroup_any(true);\nif sv { for u in 0..4 { if u < n { let c = CoopC::zeroed(); } } }", "let mut sv = subgroup_any(true);\nsv = false;\nif sv { let c = CoopB::load_col_major(&x[0], 16); }"][..]).prop_map(String::from),
        2 => select(&["break;", "continue;", "return;", "break 'a;", "return 1;", "return x[0];"][..]).prop_map(String::from),
        2 => expr().prop_map(|e| format!("{e};")),
        1 => (select(&["x", "y", "acc"][..]), select(&["fetch_add", "fetch_sub", "fetch_min", "fetch_max", "store", "load", "swap", "fetch_and", "fetch_or", "fetch_xor", "compare_exchange_weak"][..]), expr())
            .prop_map(|(b, m, a)| format!("{b}[0].{m}({a});")),
        1 => (select(&["(o, k)", "(_, k)", "(mut o, _)", "(o, k, z)", "o", "(o, 1)"][..]), select(&["x", "y", "acc", "tile", "v"][..]), expr(), expr())
            .prop_map(|(p, b, c, n)| format!("let {p} = {b}[0].compare_exchange_weak({c}, {n});")),
        1 => (select(&["v.x", "v.w", "v.q", "x[i].y", "v.x.y", "acc[0].z", "tile[0].pos", "v.pos[1]"][..]), select(ASSIGN_OPS), expr())
            .prop_map(|(p, op, e)| format!("let mut v = Vec3::ZERO;\n{p} {op} {e};")),
        1 => (select(NAMES), select(&["+=", "-=", "*=", "/=", "%=", "<<=", "&="][..]), select(&["Vec4::ONE", "2.0", "UVec2::splat(1)", "DVec2::ZERO", "x[i]"][..]))
            .prop_map(|(n, op, e)| format!("let mut {n} = Vec4::splat(1.0);\n{n} {op} {e};")),
        1 => select(&[
            "println!(\"x\");",
            "fn helper() {}",
            "let (p, q) = (1, 2);",
            "let (f, e) = frexp(x[0]);",
            "let (f, w) = modf(1.5);",
            "let (f, e, z) = frexp(x[0]);",
            "let (f, 2) = modf(x[0]);",
            "let f = frexp(x[0]);",
            "let _ = 1;",
            "struct S;",
            "let z = || 1;",
            "unsafe { }",
            "let x = 1 else { return; };",
            "#[inline] let q = 1;",
            "const K: u32 = 4;",
            "const K: f32 = n as f32;",
            "const K: [f32; 2] = [1.0, 2.0];",
            "const WG: u32 = 2;",
            "const K<T>: u32 = 1;",
            "#[unroll] let q = 1;",
            "#[unroll] while false {}",
        ][..])
        .prop_map(String::from),
    ]
}

fn stmt() -> BoxedStrategy<String> {
    simple_stmt()
        .prop_recursive(3, 30, 4, |s| {
            let block = prop::collection::vec(s.clone(), 0..4).prop_map(|v| v.join("\n"));
            prop_oneof![
                3 => (expr(), block.clone(), prop::option::of(block.clone())).prop_map(|(c, t, e)| match e {
                    Some(e) => format!("if {c} {{\n{t}\n}} else {{\n{e}\n}}"),
                    None => format!("if {c} {{\n{t}\n}}"),
                }),
                2 => (select(NAMES), expr(), select(&["..", "..=", "..", ".."][..]), expr(), block.clone())
                    .prop_map(|(v, a, r, b, body)| format!("for {v} in {a}{r}{b} {{\n{body}\n}}")),
                1 => (select(NAMES), expr(), block.clone()).prop_map(|(v, a, body)| format!("for {v} in {a} {{\n{body}\n}}")),
                2 => (select(NAMES), expr(), select(&["..", "..="][..]), expr(), select(&[".step_by(2)", ".step_by(WG)", ".rev()", ".step_by()", ".rev(1)", ".skip(1)", ".rev().step_by(2)", ".step_by(0)", ".step_by(-1)", ".step_by(x[0])"][..]), block.clone())
                    .prop_map(|(v, a, r, b, m, body)| format!("for {v} in ({a}{r}{b}){m} {{\n{body}\n}}")),
                2 => (select(&["#[unroll]", "#[unroll]", "#[unroll(4)]", "#[unroll = 2]", "#[inline]"][..]), select(NAMES), expr(), select(&["..", "..="][..]), expr(), block.clone())
                    .prop_map(|(attr, v, a, r, b, body)| format!("{attr}\nfor {v} in {a}{r}{b} {{\n{body}\n}}")),
                2 => (expr(), block.clone()).prop_map(|(c, body)| format!("while {c} {{\n{body}\n}}")),
                2 => block.clone().prop_map(|body| format!("loop {{\n{body}\n}}")),
                1 => block.clone().prop_map(|body| format!("'a: loop {{\n{body}\n}}")),
                1 => block.clone().prop_map(|body| format!("{{\n{body}\n}}")),
                1 => (select(NAMES), expr(), block.clone(), expr(), expr())
                    .prop_map(|(n, c, t, a, b)| format!("let {n} = if {c} {{\n{t}\n{a}\n}} else {{ {b} }};")),
                1 => (select(NAMES), expr(), expr()).prop_map(|(n, c, a)| format!("let {n} = if {c} {{ {a} }};")),
                1 => (place(), expr(), expr(), expr()).prop_map(|(p, c, a, b)| format!("{p} = if {c} {{ {a} }} else if {a} {{ {b} }} else {{ {a} }};")),
                2 => (expr(), block.clone(), block.clone()).prop_map(|(s, a, b)| format!("match {s} {{\n0 | 2 => {{\n{a}\n}}\n3..=9 => break,\n_ => {{\n{b}\n}}\n}}")),
                1 => (select(NAMES), expr(), block.clone(), expr()).prop_map(|(n, s, a, v)| format!("let {n} = match {s} {{\n1 => {{\n{a}\n{v}\n}}\nq => {v},\n}};")),
            ]
        })
        .boxed()
}

fn body() -> impl Strategy<Value = String> {
    prop::collection::vec(stmt(), 0..7).prop_map(|v| v.join("\n"))
}

const PARAM_TYPES: &[&str] = &[
    "&[T; n]",
    "&mut [T; n]",
    "T",
    "&mut [Atomic<T>; n]",
    "u32",
    "i32",
    "f32",
    "f16",
    "bool",
    "u64",
    "f64",
    "usize",
    "Vec<f32>",
    "(u32, u32)",
    "[f32; 4]",
    "&f32",
    "&[f32; n]",
    "&mut [f32; n]",
    "&[HVec8; n]",
    "HVec8",
    "&mut [Atomic<HVec8>; n]",
    "&[u32; n * m]",
    "&mut [i32; m.div_ceil(4)]",
    "&[f32; n.pow(2)]",
    "&[f32; (n + 1) / 2 % m]",
    "&[f32; n << 1]",
    "&[f32; 0]",
    "&[f32; 4294967296]",
    "&[f32; 99999999999999999999]",
    "&[f32; q]",
    "&[f32; s]",
    "&[f32; -1]",
    "&[f32; n as usize]",
    "&[f32; WG]",
    "&mut [f32; n * WG]",
    "&[f32; m.div_ceil(ROWS)]",
    "&[u32; ITEMS * VEC + n]",
    "&[f32; WG_Y]",
    "&[f32; Wg]",
    "&[f32]",
    "&mut [f32]",
    "&[f64; n]",
    "&mut [bool; n]",
    "&mut [Atomic<u32>; n]",
    "&[Atomic<i32>; n]",
    "&mut [Atomic<f32>; n]",
    "&mut [Atomic; n]",
    "&mut [[f32; 2]; n]",
    "&mut [f16; n]",
    "&'static [f32; n]",
    "impl Fn()",
    "Self",
    "_",
    "!",
    "*const f32",
    "&&[f32; n]",
    "Option<u32>",
    "&mut [vec4<f32>; n]",
];

const PARAM_NAMES: &[&str] = &[
    "x", "y", "a", "b", "n", "m", "s", "q", "out", "self", "_", "mut z", "ref r", "(p, t)", "max",
    "WG", "fg_x",
];

fn param() -> impl Strategy<Value = String> {
    (
        select(
            &[
                "",
                "",
                "",
                "#[out] ",
                "#[out] ",
                "#[shared] ",
                "#[out(x)] ",
                "#[doc = \"d\"] ",
            ][..],
        ),
        select(PARAM_NAMES),
        select(PARAM_TYPES),
    )
        .prop_map(|(attr, n, t)| format!("{attr}{n}: {t}"))
}

const SANE_SIGNATURE: &str = "x: &[f32; n], a: &[u32; n * m], #[out] y: &mut [f32; n], acc: &mut [i32; m], n: u32, m: u32, s: f32";

fn signature() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(SANE_SIGNATURE.to_string()),
        2 => prop::collection::vec(param(), 0..6).prop_map(|v| v.join(", ")),
        1 => (prop::collection::vec(param(), 0..3)).prop_map(|v| format!("{SANE_SIGNATURE}, {}", v.join(", "))),
        1 => Just("&self, n: u32".to_string()),
        1 => (1usize..12).prop_map(|k| {
            let mut p: Vec<String> = (0..k).map(|i| format!("b{i}: &[f32; n]")).collect();
            p.push("#[out] y: &mut [f32; n]".into());
            p.push("n: u32".into());
            p.join(", ")
        }),
    ]
}

const OPTIONS: &[&str] = &[
    "workgroup = 64",
    "workgroup = 256",
    "workgroup = 0",
    "workgroup = 1",
    "workgroup = 257",
    "workgroup = 2048",
    "workgroup = 4294967296",
    "workgroup = -1",
    "workgroup = 1.5",
    "workgroup = n",
    "workgroup",
    "workgroup(64)",
    "indirect = x[0]",
    "indirect = a[0]",
    "indirect = a[3]",
    "indirect = y[0]",
    "indirect = n[0]",
    "indirect = x",
    "indirect = x[i]",
    "indirect = x[1.5]",
    "indirect = x[-1]",
    "indirect = x[4294967296]",
    "indirect = x[0][0]",
    "indirect",
    "indirect(x[0])",
    "threads = n",
    "threads = n * m",
    "threads = n * WG",
    "threads = n.div_ceil(ROWS) * 64",
    "threads = n.div_ceil(K2) * WG, knobs(K2 = 4)",
    "threads = m * ITEMS * VEC",
    "threads = n * TILE",
    "threads = (n * WG_X, m)",
    "threads = n * wg",
    "threads = q",
    "threads = s",
    "threads = 1.0",
    "threads = n / 0",
    "threads = 0",
    "threads = n.pow(2)",
    "threads = global_index()",
    "threads =",
    "threads = n m",
    "threads = (n, m)",
    "threads = (n, m, n)",
    "threads = (n,)",
    "threads = ()",
    "threads = (n, m, n, m)",
    "threads = (n, s)",
    "threads = (x, n)",
    "threads = (n * m, 0)",
    "threads = [n, m]",
    "workgroup = (16, 16)",
    "workgroup = (8, 8, 4)",
    "workgroup = (64, 32)",
    "workgroup = (1, 1, 128)",
    "workgroup = (0, 4)",
    "workgroup = (16,)",
    "workgroup = (n, 4)",
    "workgroup = (1.5, 2)",
    "workgroup = (4294967295, 4294967295)",
    "tune(workgroup = [(16, 16), (32, 8)])",
    "tune(workgroup = [(16, 16), 64])",
    "tune(workgroup = [(16, 16), (16, 16)])",
    "tune(workgroup = [(4, 4, 4), (8, 8, 1)])",
    "tune(workgroup = [()])",
    "tune(workgroup = [(16, 16)], items = [1, 2])",
    "tune(workgroup = [64, 128])",
    "types(T = [f32, f16])",
    "types(T = [u32, i32, f32, f64])",
    "types(U = [f32])",
    "types(T = [])",
    "types(T = [f32, f32])",
    "types(T = [u64])",
    "types(T = f32)",
    "types",
    "types(T = [f32], U = [u32])",
    "tune(workgroup = [])",
    "tune(items = [0])",
    "tune(vector = [1, 2, 4])",
    "tune(workgroup = [4096])",
    "tune(items = [1, 2, 4, 8], workgroup = [32, 256])",
    "tune(bogus = [1])",
    "tune(workgroup = [x])",
    "tune",
    "tune()",
    "tune(workgroup = 64)",
    "tune(items = [4294967296])",
    "tune(workgroup = [64, 128], items = [1, 2], keep = WG * ITEMS <= 128)",
    "tune(workgroup = [64, 128], keep = WG > 4096)",
    "tune(workgroup = [64, 128], keep = WG / (ITEMS - 1) > 0)",
    "tune(workgroup = [64, 128], keep = WG * 4294967295 > 1)",
    "tune(items = [1, 2], keep = !(ITEMS == 2) || true && false)",
    "tune(items = [1, 2], keep = ITEMS)",
    "tune(items = [1, 2], keep = ITEMS && 1)",
    "tune(items = [1, 2], keep = n > 1)",
    "tune(items = [1, 2], keep = f(ITEMS))",
    "tune(items = [1, 2], keep = 1.5 < ITEMS)",
    "tune(items = [1, 2], keep)",
    "tune(keep = WG_Y == 1, keep = true)",
    "case(n = 4)",
    "case(n = 4, m = 2)",
    "case(n = 4, m = 2, s = 1.5)",
    "case(q = 1)",
    "case()",
    "case(n)",
    "case(n = x)",
    "case(::n = 1)",
    "case(n = 16, m = 4, s = 0.5)",
    "case(n = -1, m = 2, s = 1.0)",
    "case(n = 4, m = 2, s = true)",
    "case(n = 4294967296, m = 1, s = 1.0)",
    "case(n = 1.5, m = 1, s = 1)",
    "tolerance(abs = 1e-3)",
    "tolerance(rel = 1)",
    "tolerance(x = 1.0)",
    "tolerance(abs = 1e-3, rel = 1e-5)",
    "tolerance",
    "ext = false",
    "ext = true",
    "ext = 3",
    "crate = ::wgsl_forge",
    "crate = \"wgsl_forge\"",
    "crate = \"not a path\"",
    "crate = 5",
    "bogus",
    "bogus = 1",
    "a::b = 1",
    "= =",
    "\"str\"",
    "7",
    "#",
    "workgroup = 64 threads = n",
    "knobs(TILE = 4)",
    "knobs(TILE = 4), tune(TILE = [2, 4, 8])",
    "knobs(TILE = 0)",
    "knobs(tile = 4)",
    "knobs(TILE)",
    "knobs(TILE = x)",
    "knobs(TILE = 4, TILE = 8)",
    "knobs(WG = 4)",
    "knobs(WG_Y = 4)",
    "knobs(A = 1, B = 2, C = 3, D = 4, E = 5, F = 6, G = 7)",
    "knobs(AN_EXTREMELY_LONG_KNOB_NAME = 1)",
    "knobs(NULL = 1)",
    "knobs = 4",
    "tune(TILE = [1, 2])",
    "tune(TILE = [])",
    "tune(workgroup = [64, 64])",
];

/// Balanced token soup: any tokens, with delimiters always paired so that rustc's parser
/// can recover and the macro still runs.
fn soup() -> BoxedStrategy<String> {
    const TOKENS: &[&str] = &[
        "x",
        "y",
        "n",
        "let",
        "mut",
        "if",
        "else",
        "for",
        "in",
        "while",
        "loop",
        "fn",
        "return",
        "break",
        "match",
        "as",
        "u32",
        "f32",
        "=",
        "==",
        "+",
        "-",
        "*",
        "/",
        ";",
        ",",
        ":",
        "::",
        ".",
        "..",
        "#",
        "!",
        "&",
        "|",
        "<",
        ">",
        "=>",
        "->",
        "0",
        "1u32",
        "2.5",
        "true",
        "'a",
        "\"s\"",
        "workgroup",
        "threads",
        "tune",
        "case",
        "out",
        "shared",
        "global_index",
        "WG",
        "_",
        "?",
        "@",
        "$",
        "~",
    ];
    let tok = select(TOKENS).prop_map(String::from);
    tok.prop_recursive(3, 40, 6, |inner| {
        prop_oneof![
            3 => prop::collection::vec(inner.clone(), 0..6).prop_map(|v| v.join(" ")),
            1 => prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("( {} )", v.join(" "))),
            1 => prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[ {} ]", v.join(" "))),
            1 => prop::collection::vec(inner, 0..4).prop_map(|v| format!("{{ {} }}", v.join(" "))),
        ]
    })
    .boxed()
}

fn options() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => prop::collection::vec(select(OPTIONS), 0..5).prop_map(|v| v.join(", ")),
        1 => soup(),
        1 => Just(String::new()),
    ]
}

fn header() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => Just(String::new()),
        1 => select(&["async ", "unsafe ", "const ", "extern \"C\" "][..]).prop_map(String::from),
    ]
}

fn generics_and_ret() -> impl Strategy<Value = (String, String)> {
    (
        prop_oneof![12 => Just(""), 3 => select(&["<T>", "<'a>", "<const N: usize>", "<T: Copy>", "<T, U>", "<U>"][..])],
        prop_oneof![12 => Just(""), 1 => select(&[" -> f32", " -> ()", " -> Vec<f32>", " -> !"][..])],
    )
        .prop_map(|(g, r)| (g.to_string(), r.to_string()))
}

/// A kernel from the grammar: options, signature and body all random.
fn grammar_kernel() -> impl Strategy<Value = String> {
    (options(), header(), generics_and_ret(), signature(), body()).prop_map(
        |(o, h, (g, r), sig, b)| {
            format!("#[forge_kernel({o})]\npub {h}fn kernel{g}({sig}){r} {{\n{b}\n}}")
        },
    )
}

// ---- mostly valid kernels: typed expressions that get past the checks --------------------

/// Expands one random seed from proptest into a kernel that is well typed by
/// construction, so that most of them pass the checks and reach the emitters, naga and
/// rustc's checking of the generated Rust.
struct Typed {
    state: u64,
    shared: bool,
}

impl Typed {
    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn f(&mut self, d: u32) -> String {
        if d == 0 || self.chance(30) {
            let mut leaves = vec![
                "x[i]",
                "s",
                "t",
                "arr[1]",
                "1.5",
                "0.0",
                "-2.0f32",
                "f32::MAX",
                "f32::EPSILON",
                "(c as f32)",
                "(q as f32)",
                "3.0",
                "((x[i] as f16 * 0.5f16).max(-2.0) as f32)",
                "(HVec2::splat(s as f16).dot(HVec2::ONE) as f32)",
                "f32::consts::FRAC_PI_3",
                "((s as f64).mul_add(2.0, 1.0).sqrt() as f32)",
                "Vec3::splat(s).cross(Vec3::new(1.0, t, 0.5)).y",
                "Vec2::new(s, t).distance(Vec2::ONE)",
            ];
            if self.shared {
                leaves.push("tile[lid]");
            }
            return self.pick(&leaves).to_string();
        }
        match self.below(11) {
            0 | 1 => {
                let op = self.pick(&["+", "-", "*", "/", "%"]);
                format!("({} {op} {})", self.f(d - 1), self.f(d - 1))
            }
            // WGSL's builtins under their own names (the third edition), and the method
            // spellings of those Rust has no method for.
            9 => match self.below(6) {
                0 => {
                    let m = self.pick(&[
                        "fract",
                        "sign",
                        "saturate",
                        "inverse_sqrt",
                        "round",
                        "quantize_to_f16",
                        "abs",
                        "floor",
                    ]);
                    format!("{m}({})", self.f(d - 1))
                }
                1 => format!("step({}, {})", self.f(d - 1), self.f(d - 1)),
                2 => {
                    let m = self.pick(&["clamp", "mix", "smoothstep", "fma"]);
                    format!(
                        "{m}({}, {}, {})",
                        self.f(d - 1),
                        self.f(d - 1),
                        self.f(d - 1)
                    )
                }
                3 => format!("ldexp({}, {} % 20)", self.f(d - 1), self.i(d - 1)),
                4 => format!(
                    "{}.{}()",
                    self.f(d - 1),
                    self.pick(&["saturate", "inverse_sqrt"])
                ),
                _ => format!(
                    "unpack4x8snorm({}).{}",
                    self.u(d - 1),
                    self.pick(&["x", "w"])
                ),
            },
            // An `if` as a value inside an expression.
            10 => format!(
                "(2.0 * if {} {{ {} }} else {{ {} }})",
                self.b(d - 1),
                self.f(d - 1),
                self.f(d - 1)
            ),
            2 => {
                let m = self.pick(&[
                    "abs",
                    "sqrt",
                    "exp",
                    "exp2",
                    "ln",
                    "log2",
                    "sin",
                    "cos",
                    "tan",
                    "tanh",
                    "floor",
                    "ceil",
                    "round",
                    "round_ties_even",
                    "trunc",
                    "fract",
                    "signum",
                    "recip",
                    "asin",
                    "acos",
                    "atan",
                    "sinh",
                    "cosh",
                    "asinh",
                    "acosh",
                    "atanh",
                    "log10",
                    "to_degrees",
                    "to_radians",
                ]);
                format!("{}.{m}()", self.f(d - 1))
            }
            3 => {
                let m = self.pick(&["min", "max", "powf", "atan2", "hypot", "rem_euclid"]);
                format!("{}.{m}({})", self.f(d - 1), self.f(d - 1))
            }
            4 => {
                let m = self.pick(&["mul_add", "clamp"]);
                format!(
                    "{}.{m}({}, {})",
                    self.f(d - 1),
                    self.f(d - 1),
                    self.f(d - 1)
                )
            }
            5 => match self.below(3) {
                0 => format!("f32::from_bits({})", self.u(d - 1)),
                1 => format!("({} as f32)", self.u(d - 1)),
                _ => format!("({} as f32)", self.i(d - 1)),
            },
            6 => format!("(-{})", self.f(d - 1)),
            7 => format!("{}.powi({})", self.f(d - 1), self.i(d - 1)),
            // Subgroup operations: the uniformity check rejects many of these places.
            8 if self.chance(30) => match self.below(5) {
                0 => format!("subgroup_add({})", self.f(d - 1)),
                1 => format!("subgroup_inclusive_add({})", self.f(d - 1)),
                2 => format!("subgroup_shuffle_xor({}, {})", self.f(d - 1), self.u(d - 1)),
                3 => format!("subgroup_broadcast({}, 0)", self.f(d - 1)),
                _ => format!("subgroup_max(Vec2::splat({})).y", self.f(d - 1)),
            },
            _ => format!("x[{} % n]", self.u(d - 1)),
        }
    }

    fn u(&mut self, d: u32) -> String {
        if d == 0 || self.chance(30) {
            return self
                .pick(&[
                    "i",
                    "lid",
                    "n",
                    "m",
                    "c",
                    "0u32",
                    "1",
                    "7",
                    "WG",
                    "ITEMS",
                    "VEC",
                    "u32::MAX",
                    "workgroup_index()",
                    "global_id().x",
                    "local_id().x",
                    "num_workgroups().y",
                    "subgroup_size()",
                    "subgroup_invocation_id()",
                    "a[i]",
                    "0xffff_ffffu32",
                ])
                .to_string();
        }
        match self.below(9) {
            0 | 1 => {
                let op = self.pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]);
                format!("({} {op} {})", self.u(d - 1), self.u(d - 1))
            }
            7 => match self.below(5) {
                0 => {
                    let m = self.pick(&[
                        "first_leading_bit",
                        "first_trailing_bit",
                        "count_one_bits",
                        "count_leading_zeros",
                        "reverse_bits",
                    ]);
                    format!("{m}({})", self.u(d - 1))
                }
                1 => format!(
                    "extract_bits({}, {}, {})",
                    self.u(d - 1),
                    self.u(d - 1),
                    self.u(d - 1)
                ),
                2 => format!(
                    "insert_bits({}, {}, {}, {})",
                    self.u(d - 1),
                    self.u(d - 1),
                    self.u(d - 1),
                    self.u(d - 1)
                ),
                3 => format!(
                    "{}(Vec4::splat({}))",
                    self.pick(&["pack4x8snorm", "pack4x8unorm"]),
                    self.f(d - 1)
                ),
                _ => format!("{}.first_leading_bit()", self.u(d - 1)),
            },
            8 => format!(
                "(1 + if {} {{ {} }} else {{ {} }})",
                self.b(d - 1),
                self.u(d - 1),
                self.u(d - 1)
            ),
            2 => {
                let m = self.pick(&[
                    "count_ones",
                    "leading_zeros",
                    "trailing_zeros",
                    "reverse_bits",
                ]);
                format!("{}.{m}()", self.u(d - 1))
            }
            3 => {
                let m = self.pick(&[
                    "min",
                    "max",
                    "div_ceil",
                    "wrapping_add",
                    "wrapping_sub",
                    "wrapping_mul",
                    "rem_euclid",
                ]);
                format!("{}.{m}({})", self.u(d - 1), self.u(d - 1))
            }
            4 => format!(
                "{}.clamp({}, {})",
                self.u(d - 1),
                self.u(d - 1),
                self.u(d - 1)
            ),
            5 => match self.below(3) {
                0 => format!("({} as u32)", self.f(d - 1)),
                1 => format!("({} as u32)", self.i(d - 1)),
                _ => format!("{}.to_bits()", self.f(d - 1)),
            },
            _ => format!("{}.count_ones()", self.i(d - 1)),
        }
    }

    fn i(&mut self, d: u32) -> String {
        if d == 0 || self.chance(30) {
            return self
                .pick(&[
                    "q",
                    "-1",
                    "0i32",
                    "i32::MIN",
                    "i32::MAX",
                    "acc[lid % m]",
                    "(c as i32)",
                    "5",
                ])
                .to_string();
        }
        match self.below(7) {
            0 | 1 => {
                let op = self.pick(&["+", "-", "*", "/", "%", "&", "|", "^"]);
                format!("({} {op} {})", self.i(d - 1), self.i(d - 1))
            }
            6 => match self.below(3) {
                0 => format!(
                    "{}({})",
                    self.pick(&["first_leading_bit", "sign", "count_one_bits"]),
                    self.i(d - 1)
                ),
                1 => format!(
                    "extract_bits({}, {}, {})",
                    self.i(d - 1),
                    self.u(d - 1),
                    self.u(d - 1)
                ),
                _ => format!("clamp({}, -5, 5)", self.i(d - 1)),
            },
            2 => {
                let op = self.pick(&["<<", ">>"]);
                format!("({} {op} {})", self.i(d - 1), self.u(d - 1))
            }
            3 => {
                let m = self.pick(&["abs", "signum", "reverse_bits"]);
                format!("{}.{m}()", self.i(d - 1))
            }
            4 => {
                let m = self.pick(&["min", "max", "wrapping_add", "wrapping_sub", "wrapping_mul"]);
                format!("{}.{m}({})", self.i(d - 1), self.i(d - 1))
            }
            _ => format!("(-{})", self.i(d - 1)),
        }
    }

    fn b(&mut self, d: u32) -> String {
        if d == 0 || self.chance(25) {
            return self
                .pick(&[
                    "flag",
                    "true",
                    "(i < n)",
                    "(lid == 0)",
                    "(workgroup_index() < m)",
                ])
                .to_string();
        }
        match self.below(6) {
            0 => {
                let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", self.f(d - 1), self.f(d - 1))
            }
            1 => {
                let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", self.u(d - 1), self.u(d - 1))
            }
            2 => {
                let op = self.pick(&["<", ">=", "=="]);
                format!("({} {op} {})", self.i(d - 1), self.i(d - 1))
            }
            3 => {
                let op = self.pick(&["&&", "||", "^", "&", "|", "==", "!="]);
                format!("({} {op} {})", self.b(d - 1), self.b(d - 1))
            }
            4 if self.chance(15) => format!(
                "{}({})",
                self.pick(&["subgroup_all", "subgroup_any"]),
                self.b(d - 1)
            ),
            4 => format!("(!{})", self.b(d - 1)),
            _ => format!(
                "{}.{}()",
                self.f(d - 1),
                self.pick(&["is_nan", "is_finite"])
            ),
        }
    }

    fn stmts(&mut self, d: u32, n: usize) -> String {
        (0..n).map(|_| self.stmt(d)).collect::<Vec<_>>().join("\n")
    }

    fn stmt(&mut self, d: u32) -> String {
        let e = 3;
        let k = if d == 0 {
            self.below(9)
        } else {
            self.below(19)
        };
        match k {
            0 => format!("t = {};", self.f(e)),
            1 => format!(
                "t {} {};",
                self.pick(&["+=", "-=", "*=", "/=", "%="]),
                self.f(e)
            ),
            2 => format!(
                "c {} {};",
                self.pick(&["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]),
                self.u(e)
            ),
            3 => format!(
                "q {} {};",
                self.pick(&["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="]),
                self.i(e)
            ),
            4 => format!("arr[{} % 4] = {};", self.u(e), self.f(e)),
            5 => format!("flag = {};", self.b(e)),
            6 => format!("acc[{} % m] = {};", self.u(e), self.i(e)),
            7 if self.shared => format!(
                "tile[{}] = {};",
                self.pick(&["lid", "(lid + 1) % WG", "0"]),
                self.f(e)
            ),
            7 => format!("let w = {};", self.u(e)),
            8 => format!("let v = {};\nt += v;", self.f(e)),
            9 => format!(
                "let w = if {} {{ {} }} else if {} {{ {} }} else {{ {} }};\nt += w;",
                self.b(e),
                self.f(e),
                self.b(e),
                self.f(e),
                self.f(e)
            ),
            10 => format!(
                "t = if {} {{ {} }} else {{ {} }};",
                self.b(e),
                self.f(e),
                self.f(e)
            ),
            11 => {
                let (b, n1, n2) = (self.b(e), self.below(3) + 1, self.below(3));
                format!(
                    "if {b} {{\n{}\n}} else {{\n{}\n}}",
                    self.stmts(d - 1, n1),
                    self.stmts(d - 1, n2)
                )
            }
            12 => {
                let (lo, hi, n1) = (self.u(1), self.u(1), self.below(3) + 1);
                let r = self.pick(&["..", "..="]);
                // Plain, strided and reversed ranges (the third edition).
                let range = match self.below(4) {
                    0 => format!("({lo}{r}{hi}).step_by({})", self.pick(&["WG", "3", "1", "c + 1"])),
                    1 => format!("({lo}{r}{hi}).rev()"),
                    _ => format!("{lo}{r}{hi}"),
                };
                format!(
                    "for k in {range} {{\nc += k;\n{}\n}}",
                    self.stmts(d - 1, n1)
                )
            }
            13 => {
                let (hi, n1) = (self.u(1), self.below(3));
                format!("while c < {hi} {{\nc += 1;\n{}\n}}", self.stmts(d - 1, n1))
            }
            14 => {
                let (b, n1) = (self.b(e), self.below(3));
                format!(
                    "loop {{\n{}\nif {b} {{\nbreak;\n}}\nc += 1;\nif c > 9 {{\ncontinue;\n}}\n}}",
                    self.stmts(d - 1, n1)
                )
            }
            16 => {
                let (sel, n1, n2) = (self.u(e), self.below(3), self.below(3));
                format!(
                    "match {sel} % 6 {{\n0 | 1 => {{\n{}\n}}\n2..=3 => t += 1.0,\n_ => {{\n{}\n}}\n}}",
                    self.stmts(d - 1, n1),
                    self.stmts(d - 1, n2)
                )
            }
            17 => format!(
                "let w = match {} {{\n-1 => {},\n0..4 => {},\nz => {} + (z as f32),\n}};\nt += w;",
                self.i(e),
                self.f(e),
                self.f(e),
                self.f(e)
            ),
            18 => match self.below(5) {
                // Unrolled loops: constant bounds, constant indices into `arr`.
                0 => format!(
                    "#[unroll]\nfor k in 0..4u32 {{\narr[k] = arr[k] + {};\n}}",
                    self.f(e)
                ),
                1 => "#[unroll]\nfor k in 0..3u32 {\nlet h = 2u32 >> k;\n#[unroll]\nfor j in 0..h {\narr[j] += arr[j + h];\n}\n}".to_string(),
                2 => format!("#[unroll]\nfor k in 0..WG / 32 {{\nc += k;\nt += {};\n}}", self.f(e)),
                3 => format!("const K: u32 = 3;\n#[unroll]\nfor k in 0..=K {{\nt += arr[k % 4] * {};\n}}", self.f(e)),
                _ => format!("#[unroll]\nfor k in 1..4i32 {{\nq += k * {};\n}}", self.i(e)),
            },
            _ => match self.below(3) {
                0 => format!("if {} {{\nreturn;\n}}", self.b(e)),
                1 => "workgroup_barrier();".to_string(),
                _ => "storage_barrier();".to_string(),
            },
        }
    }

    fn kernel(&mut self, wild: Option<String>) -> String {
        self.shared = self.chance(40);
        let options = [
            "threads = n",
            "workgroup = 32, threads = n",
            "workgroup = 256, threads = n * m",
            "threads = n, tune(workgroup = [32, 64, 128], items = [1, 2])",
            "threads = n, case(n = 16, m = 4, s = 1.5), tolerance(abs = 1e-3, rel = 1e-4)",
            "threads = n, ext = false",
            "threads = n, case(n = -1, m = 2, s = 1.0)",
            "threads = n, knobs(TILE = 2), tune(workgroup = [32, 64], TILE = [1, 3])",
            "",
        ];
        let o = self.pick(&options);
        let mut body = String::new();
        if self.shared {
            body.push_str(self.pick(&[
                "#[shared]\nlet mut tile = [0.0f32; WG];\n",
                "#[shared]\nlet mut tile = [0.0f32; 256];\n",
            ]));
        }
        body.push_str("let i = global_index();\nlet lid = local_index();\nlet mut t = 0.0f32;\nlet mut c = 0u32;\nlet mut q = 0i32;\nlet mut arr = [0.0f32; 4];\nlet mut flag = false;\n");
        let n = self.below(5) + 1;
        let mut stmts: Vec<String> = (0..n).map(|_| self.stmt(2)).collect();
        if let Some(w) = wild {
            let at = self.below(stmts.len() + 1);
            stmts.insert(at, w);
        }
        body.push_str(&stmts.join("\n"));
        let last = self.f(3);
        format!(
            "#[forge_kernel({o})]\npub fn kernel({SANE_SIGNATURE}) {{\n{body}\nif i < n {{\ny[i] = {last} + t + (c as f32) + (q as f32) + arr[0];\n}}\n}}"
        )
    }
}

fn typed_kernel() -> impl Strategy<Value = String> {
    (any::<u64>(), prop::option::weighted(0.25, simple_stmt())).prop_map(|(seed, wild)| {
        Typed {
            state: seed,
            shared: false,
        }
        .kernel(wild)
    })
}

// ---- mutations of valid kernels ----------------------------------------------------------

fn lex(src: &str) -> Vec<String> {
    const PUNCT: &[&str] = &[
        "<<=", ">>=", "..=", "..", "+=", "-=", "*=", "/=", "%=", "^=", "|=", "&=", "<<", ">>",
        "==", "!=", "<=", ">=", "&&", "||", "->", "::", "=>",
    ];
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            let numeric = ch.is_ascii_digit();
            while i < c.len()
                && (c[i].is_alphanumeric()
                    || c[i] == '_'
                    || (numeric && c[i] == '.' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else {
            let rest: String = c[i..(i + 3).min(c.len())].iter().collect();
            let p = PUNCT
                .iter()
                .find(|p| rest.starts_with(*p))
                .map(|p| p.to_string())
                .unwrap_or_else(|| ch.to_string());
            i += p.chars().count();
            out.push(p);
        }
    }
    out
}

fn is_delim(t: &str) -> bool {
    matches!(t, "(" | ")" | "[" | "]" | "{" | "}")
}

const MUTATION_TOKENS: &[&str] = &[
    "x",
    "n",
    "i",
    "0",
    "1",
    "4294967296",
    "0.5",
    "-",
    "+",
    "*",
    "=",
    ";",
    ",",
    ".",
    "as",
    "u32",
    "f32",
    "i32",
    "mut",
    "let",
    "if",
    "return",
    "break",
    "&",
    "#",
    "!",
    "..",
    "::",
    "out",
    "shared",
    "WG",
    "workgroup_barrier",
    "global_index",
    "f64",
    "match",
    "loop",
    "while",
    "self",
    "true",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Replace(usize, usize),
    Insert(usize, usize),
    InsertPair(usize, usize),
    Swap(usize),
    Duplicate(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let ix = any::<usize>();
    prop_oneof![
        3 => ix.prop_map(Mutation::Delete),
        3 => (ix, ix).prop_map(|(a, b)| Mutation::Replace(a, b)),
        2 => (ix, ix).prop_map(|(a, b)| Mutation::Insert(a, b)),
        1 => (ix, ix).prop_map(|(a, b)| Mutation::InsertPair(a, b)),
        1 => ix.prop_map(Mutation::Swap),
        1 => (ix, 1usize..12).prop_map(|(a, b)| Mutation::Duplicate(a, b)),
        1 => ix.prop_map(Mutation::Truncate),
    ]
}

/// Applies mutations that keep delimiters balanced: rustc must still find where the item
/// ends, or a fatal parse error would hide every other kernel of the batch.
fn mutate(src: &str, muts: &[Mutation]) -> String {
    let mut t = lex(src);
    for m in muts {
        if t.is_empty() {
            break;
        }
        let len = t.len();
        let pick = |i: usize| MUTATION_TOKENS[i % MUTATION_TOKENS.len()].to_string();
        match *m {
            Mutation::Delete(i) if !is_delim(&t[i % len]) => {
                t.remove(i % len);
            }
            Mutation::Replace(i, r) if !is_delim(&t[i % len]) => t[i % len] = pick(r),
            Mutation::Insert(i, r) => t.insert(i % (len + 1), pick(r)),
            Mutation::InsertPair(i, r) => {
                let (o, c) = [("(", ")"), ("[", "]"), ("{", "}")][r % 3];
                let i = i % (len + 1);
                t.insert(i, c.into());
                t.insert(i, o.into());
            }
            Mutation::Swap(i) => {
                let i = i % len;
                if i + 1 < len && !is_delim(&t[i]) && !is_delim(&t[i + 1]) {
                    t.swap(i, i + 1);
                }
            }
            Mutation::Duplicate(i, k) => {
                let i = i % len;
                let span: Vec<String> = t[i..(i + k).min(len)].to_vec();
                if span.iter().all(|s| !is_delim(s)) {
                    for (j, s) in span.into_iter().enumerate() {
                        t.insert(i + j, s);
                    }
                }
            }
            Mutation::Truncate(i) => {
                t.truncate(i % len);
                let mut stack = Vec::new();
                for s in &t {
                    match s.as_str() {
                        "(" => stack.push(")"),
                        "[" => stack.push("]"),
                        "{" => stack.push("}"),
                        ")" | "]" | "}" => {
                            stack.pop();
                        }
                        _ => {}
                    }
                }
                t.extend(stack.into_iter().rev().map(String::from));
            }
            _ => {}
        }
    }
    t.join(" ")
}

fn mutated_kernel() -> impl Strategy<Value = String> {
    (select(SEEDS), prop::collection::vec(mutation(), 1..5)).prop_map(|(s, m)| mutate(s, &m))
}

/// A valid signature and options around a body of token soup.
fn soup_kernel() -> impl Strategy<Value = String> {
    soup().prop_map(|s| {
        format!("#[forge_kernel(threads = n)]\npub fn kernel({SANE_SIGNATURE}) {{\n{s}\n}}")
    })
}

/// A seed kernel with random options in place of its own.
fn reoptioned_kernel() -> impl Strategy<Value = String> {
    (select(SEEDS), options()).prop_map(|(s, o)| {
        let body = s.split_once(")]\n").map(|(_, rest)| rest).unwrap_or(s);
        format!("#[forge_kernel({o})]\n{body}")
    })
}

/// A `#[forge_module]` with a const, a helper that takes arrays by reference (with
/// barriers, unrolled loops and early returns) and a kernel that calls it in many ways,
/// some of them wrong.
fn module_kernel() -> impl Strategy<Value = String> {
    const CONSTS: &[&str] = &[
        "const K: u32 = 4;",
        "const K: u32 = WG / 32;",
        "const K: u32 = 2 + 2;",
        "const K: f32 = 0.5;",
        "const K: u32 = n;",
        "const K: [u32; 1] = [1];",
        "const K: u32 = 1 / 0;",
    ];
    const HELPER_PARAMS: &[&str] = &[
        "t: &mut [f32; 4], v: &[f32; 4], lid: u32",
        "t: &mut [f32; 256], v: &[f32; 4], lid: u32",
        "t: &mut [f32; WG], v: &[f32; 4], lid: u32",
        "t: &[f32; 4], v: &mut [f32; 4], lid: u32",
        "t: &mut [f32; 4], v: [f32; 4], lid: u32",
        "t: &'a mut [f32; 4], v: &[f32; 4], lid: u32",
        "mut t: &mut [f32; 4], v: &[f32; 4], lid: u32",
        "t: &mut f32, v: &[f32; 4], lid: u32",
        "t: &mut [f32; 4], v: &[f32; 64], lid: u32",
        "t: &[f32; 4], v: &mut [f32; 64], lid: u32",
        // Arrays of atomics (a binding or a `#[shared]` array), and their misuse.
        "t: &mut [Atomic<f32>; 4], v: &[f32; 4], lid: u32",
        "t: &[Atomic<f32>; 4], v: &[f32; 4], lid: u32",
        "t: &mut [Atomic<f32>; 4], v: &mut [Atomic<f32>; 4], lid: u32",
        "t: &mut [Atomic<u32>; 4], v: &[f32; 4], lid: u32",
        "t: &mut [Atomic<Vec4>; 4], v: &[f32; 4], lid: u32",
        // Lengths that each call fixes (with `<const N: usize>` from GENERICS), and
        // lengths no call can fix.
        "t: &mut [f32; N], v: &[f32; 4], lid: u32",
        "t: &mut [f16; 256], v: &[f32; 256], lid: u32",
        "t: &mut [f16; 256], v: CoopC<f32>, lid: u32",
        "t: &mut [CoopA<f16>; 4], v: &[f32; 4], lid: u32",
        "t: &mut [f32; N], v: &[f32; N], lid: u32",
        "t: &mut [f32; N], v: &[f32; M], lid: u32",
        "t: &mut [f32; N + 1], v: &[f32; 4], lid: u32",
        "t: [f32; N], v: &[f32; 4], lid: u32",
        "t: &mut [[f32; N]; 2], v: &[f32; 4], lid: u32",
    ];
    // Generic forms: length parameters, and the refused ones.
    const GENERICS: &[&str] = &[
        "",
        "<const N: usize>",
        "<const N: usize, const M: usize>",
        "<const N: u32>",
        "<const N: usize = 4>",
        "<const WG: usize>",
        "<const N: usize, const N: usize>",
        "<T>",
        "<'a>",
        "<const N: usize>",
    ];
    const HELPER_STMTS: &[&str] = &[
        "t[lid % 4] = v[0];",
        "workgroup_barrier();",
        "async_wait(0);",
        "#[unroll]\nfor k in 0..4u32 {\nt[k] += v[k];\n}",
        "#[unroll]\nfor k in 0..K {\nt[k % 4] *= 2.0;\n}",
        "if lid == 0 {\nreturn v[1];\n}",
        "for k in 0..4u32 {\nif v[k] > 0.5 {\nreturn v[k];\n}\n}",
        "#[unroll]\nfor k in 0..4u32 {\nif v[k] > 0.5 {\nreturn v[k];\n}\n}",
        "let w = subgroup_add(v[0]);\nt[0] += w;",
        "t[0] = t[0] * 2.0 + local_index() as f32;",
        "let c = t;",
        "v[0] = 1.0;",
        "return;",
        "t[lid % 4].fetch_add(v[0]);",
        "let o = t[0].load();\nt[1].store(o);",
        "v[0].fetch_max(1.0);",
        "async_copy(&mut t[lid % 4], &v[lid % 4]);",
        // A length parameter as a value and in a local's type.
        "for k in 0..N {\nt[k] += 1.0;\n}",
        "let mut w = [0.0f32; N];\nw[N - 1] = t[0];",
        "let m = N as u32 + M;",
        // Cooperative matrices in a helper (inlined): through its reference parameters,
        // under a condition, and as values.
        "let c = CoopA::load_row_major(&t[0], 16).mul_add(CoopB::zeroed(), CoopC::zeroed());\nc.store_row_major(&mut t[0], 16);",
        "if lid < 4 {\nCoopC::zeroed().store_row_major(&mut v[0], 16);\n}",
        "let c: CoopC<f32> = CoopC::load_row_major(&v[0], 2);\nlet m = c.row_max().exp2();",
        "let a = CoopA::zeroed();\nlet q = [a; 2];",
    ];
    const TAILS: &[&str] = &["t[0]", "v[lid % 4]", "t[0] + v[3]", "0.0", ""];
    const SHARED: &[&str] = &[
        "#[shared]\nlet mut tile = [0.0f32; 4];",
        "#[shared]\nlet mut tile = [0.0f32; 256];",
        "#[shared]\nlet mut tile = [0.0f32; WG];",
        "let mut tile = [0.0f32; 4];",
        "let tile = [0.0f32; 4];",
    ];
    const CALLS: &[&str] = &[
        "let r = h(&mut tile, &a, lid);\nt += r;",
        "if i < n {\nt += h(&mut tile, &a, lid);\n}",
        "h(&mut tile, &a, lid);",
        "let r = h(tile, a, lid);",
        "let r = h(&mut a, &a, lid);",
        "let r = h(&mut tile, &x, lid);",
        "let r = h(&tile, &a, lid);",
        "while h(&mut tile, &a, c) > 0.0 {\nc += 1;\nif c > 3 {\nbreak;\n}\n}",
        "let f = i < n && h(&mut tile, &a, lid) > 0.0;",
        "#[unroll]\nfor k in 0..K {\na[k % 4] += h(&mut tile, &a, k);\n}",
        "t += h(&mut tile, &a, lid) * h(&mut tile, &a, lid + 1);",
        "let r = h(&mut tile, &a);",
        "let r = g(&mut tile);",
        // Bindings as reference arguments (the third edition): `x` is read-only, `y` is
        // `#[out]`.
        "let r = h(&mut tile, x, lid);",
        "let r = h(&mut tile, &x, lid);",
        "let r = h(&mut tile, &mut x, lid);",
        "h(&mut y, &a, lid);",
        "let r = h(&mut y, x, lid);",
        "let r = h(&mut tile, y, lid);",
        "h(&mut acc, &a, lid);",
        // Other lengths, for the length parameters: workgroup, local and binding arrays.
        "let r = h(&mut tile, &tile, lid);",
        "let mut b = [0.0f32; 7];\nlet r = h(&mut b, &a, lid);",
        "let r = h(&mut a, &tile, lid);",
    ];
    (
        (select(CONSTS), select(GENERICS)),
        select(HELPER_PARAMS),
        prop::collection::vec(select(HELPER_STMTS), 0..5),
        select(TAILS),
        select(SHARED),
        prop::collection::vec(select(CALLS), 1..4),
        select(&["threads = n", "threads = n, workgroup = 256", "threads = n, tune(workgroup = [32, 64])", "threads = n, knobs(K2 = 2), tune(K2 = [1, 2])", "threads = n.div_ceil(K2) * WG, knobs(K2 = 2), tune(K2 = [1, 2], workgroup = [32, 64])"][..]),
    )
        .prop_map(|((konst, generics), params, hs, tail, shared, calls, o)| {
            let ret = if tail.is_empty() { "" } else { " -> f32" };
            format!(
                "#[forge_module]\nmod m {{\nuse wgsl_forge::prelude::*;\n{konst}\n#[forge_fn]\nfn h{generics}({params}){ret} {{\n{}\n{tail}\n}}\n#[forge_kernel({o})]\npub fn kernel({SANE_SIGNATURE}) {{\n{shared}\nlet i = global_index();\nlet lid = local_index();\nlet mut t = 0.0f32;\nlet mut c = 0u32;\nlet mut a = [1.0f32; 4];\n{}\nif i < n {{\ny[i] = t + a[0];\n}}\n}}\n}}",
                hs.join("\n"),
                calls.join("\n")
            )
        })
}

fn any_kernel() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => typed_kernel(),
        2 => module_kernel(),
        4 => grammar_kernel(),
        2 => reoptioned_kernel(),
        3 => mutated_kernel(),
        1 => soup_kernel(),
        1 => stress_kernel(),
    ]
}

/// Kernels that are large where the others are small: nesting hundreds deep (parentheses,
/// blocks, `if`s, loops), expressions of thousands of terms, thousands of statements or
/// parameters, identifiers and literals thousands of characters long, and arrays of
/// millions of elements. A recursive pass without a bound overflows rustc's stack on these:
/// an abort, worse than a panic.
///
/// The depths stay below what rustc itself survives as plain Rust (rustc 1.95, its 8 MiB
/// stack: 800 nested `if`s, blocks or `for`s crash it, 1600 parentheses, 20,000 unary
/// minuses or terms of a sum; 400, 800, 3000 and 3000 do not): past those the crash is
/// rustc's, before the macro has a say.
fn stress_kernel() -> impl Strategy<Value = String> {
    const HEAD: &str = "#[forge_kernel(threads = n)]\npub fn kernel(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {\nlet i = global_index();\nlet mut acc = 0.0f32;\n";
    const TAIL: &str = "\nif i < n {\ny[i] = acc;\n}\n}";
    let wrap = |body: String| format!("{HEAD}{body}{TAIL}");
    prop_oneof![
        (10usize..700).prop_map(move |d| wrap(format!(
            "acc = {}1.0f32{};",
            "(".repeat(d),
            ")".repeat(d)
        ))),
        (10usize..2500).prop_map(move |d| wrap(format!(
            "acc = {}1.0f32;",
            "-".repeat(d)
        ))),
        (10usize..2500).prop_map(move |n| wrap(format!(
            "acc = {};",
            vec!["1.0f32"; n].join(" + ")
        ))),
        (10usize..350).prop_map(move |d| wrap(format!(
            "{}acc += 1.0f32;{}",
            "{\n".repeat(d),
            "\n}".repeat(d)
        ))),
        (10usize..350).prop_map(move |d| wrap(format!(
            "{}acc += 1.0f32;{}",
            "if i < n {\n".repeat(d),
            "\n}".repeat(d)
        ))),
        (2usize..100).prop_map(move |d| wrap(format!(
            "{}acc += 1.0f32;{}",
            (0..d).map(|k| format!("for j{k} in 0..2u32 {{\n")).collect::<String>(),
            "\n}".repeat(d)
        ))),
        (10usize..20_000).prop_map(move |n| wrap("acc += 1.0f32;\n".repeat(n))),
        (1000usize..20_000).prop_map(move |n| wrap(format!(
            "let {} = 1.0f32;\nacc = {};",
            "v".repeat(n),
            "v".repeat(n)
        ))),
        (100usize..5000).prop_map(move |n| wrap(format!("acc = {}.0f32;", "9".repeat(n)))),
        select(&["1000000", "100000000", "4294967295", "4294967296"][..]).prop_map(move |len| {
            wrap(format!(
                "let mut big = [0.0f32; {len}];\nbig[i % 4] = 1.0;\nacc = big[0];"
            ))
        }),
        select(&["100000", "4194304", "4294967295"][..]).prop_map(|len| format!(
            "#[forge_kernel(threads = n)]\npub fn kernel(#[out] y: &mut [f32; n], n: u32) {{\n#[shared]\nlet mut t = [0.0f32; {len}];\nt[0] = 1.0;\nworkgroup_barrier();\nlet i = global_index();\nif i < n {{\ny[i] = t[0];\n}}\n}}"
        )),
        (10usize..3000).prop_map(|n| {
            let params: Vec<String> = (0..n).map(|k| format!("s{k}: u32")).collect();
            format!(
                "#[forge_kernel(threads = n)]\npub fn kernel(#[out] y: &mut [f32; n], n: u32, {}) {{\nlet i = global_index();\nif i < n {{\ny[i] = 1.0;\n}}\n}}",
                params.join(", ")
            )
        }),
        (10usize..3000).prop_map(|n| format!(
            "#[forge_kernel(threads = n, tune(workgroup = [{}]))]\npub fn kernel(#[out] y: &mut [f32; n], n: u32) {{\nlet i = global_index();\nif i < n {{\ny[i] = 1.0;\n}}\n}}",
            (0..n).map(|k| (32 * (k % 8 + 1)).to_string()).collect::<Vec<_>>().join(", ")
        )),
    ]
}

// ---- the scratch crate and one cargo run ----------------------------------------------

struct Case {
    source: String,
    control: bool,
    lines: (usize, usize),
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("forge-macros sits in the workspace")
        .to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// Written last: a type error that rustc reports only once it has expanded every macro and
/// reached type checking, which proves that the batch was not stopped early. Being an
/// error, it also spares the batch code generation.
const SENTINEL: &str = "mod sentinel {\n    const REACHED: u32 = \"type checking\";\n}\n";

/// Writes the batch as one library: each kernel in its own module, controls included.
fn write_crate(dir: &Path, root: &Path, cases: &mut [Case]) -> (usize, usize) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    // The profiles match the workspace's, so that cargo reuses what it already built.
    let manifest = format!(
        r#"[package]
name = "forge-no-panic-scratch"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
path = "src/lib.rs"

[dependencies]
wgsl-forge = {{ path = {root:?} }}

# Not part of the wgsl-forge workspace, though it sits under its target directory.
[workspace]

[profile.dev]
opt-level = 1

[profile.dev.package."*"]
opt-level = 2
"#,
        root = root.display().to_string()
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // The workspace's lock file: the same dependency versions, and no registry look-up.
    if let Ok(lock) = std::fs::read(root.join("Cargo.lock")) {
        std::fs::write(dir.join("Cargo.lock"), lock).unwrap();
    }
    // No `#![allow(warnings)]`: that would hide deny-by-default lints, which are errors in
    // the generated code like any other.
    let mut src = String::from("// Generated by forge-macros/tests/no_panic.rs.\n");
    let mut line = 2;
    for (i, c) in cases.iter_mut().enumerate() {
        let text = format!(
            "mod k{i:03} {{\nuse wgsl_forge::prelude::*;\n{}\n}}\n",
            c.source
        );
        let n = text.lines().count();
        c.lines = (line, line + n - 1);
        line += n;
        src.push_str(&text);
    }
    src.push_str(SENTINEL);
    std::fs::write(dir.join("src/lib.rs"), src).unwrap();
    (line, line + SENTINEL.lines().count() - 1)
}

#[derive(Debug, Default)]
struct Diag {
    message: String,
    code: Option<String>,
    line: Option<usize>,
    rendered: String,
}

/// Error-level diagnostics of the scratch crate, from cargo's JSON messages; whether rustc
/// reached the scratch crate; and the errors of any other crate.
fn diagnostics(stdout: &str) -> (Vec<Diag>, bool, String) {
    let mut out = Vec::new();
    let mut reached = false;
    let mut other = String::new();
    for l in stdout.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        if v.get("reason").and_then(|r| r.as_str()) != Some("compiler-message") {
            continue;
        }
        let target = v
            .get("target")
            .and_then(|t| t.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("");
        if target != "forge_no_panic_scratch" {
            // A dependency that fails to build: keep its error for the report.
            if let Some(r) = v
                .get("message")
                .filter(|m| m.get("level").and_then(|l| l.as_str()) == Some("error"))
                .and_then(|m| m.get("rendered"))
                .and_then(|r| r.as_str())
            {
                other.push_str(r);
            }
            continue;
        }
        reached = true;
        let Some(m) = v.get("message") else { continue };
        if m.get("level").and_then(|l| l.as_str()) != Some("error") {
            continue;
        }
        let primary = m
            .get("spans")
            .and_then(|s| s.as_array())
            .and_then(|s| {
                s.iter()
                    .find(|sp| sp.get("is_primary").and_then(|p| p.as_bool()) == Some(true))
            })
            .filter(|sp| {
                sp.get("file_name")
                    .and_then(|f| f.as_str())
                    .is_some_and(|f| f.ends_with("lib.rs"))
            });
        out.push(Diag {
            message: m
                .get("message")
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string(),
            code: m
                .get("code")
                .and_then(|c| c.get("code"))
                .and_then(|c| c.as_str())
                .map(String::from),
            line: primary
                .and_then(|sp| sp.get("line_start"))
                .and_then(|n| n.as_u64())
                .map(|n| n as usize),
            rendered: m
                .get("rendered")
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string(),
        });
    }
    (out, reached, other)
}

struct Checked {
    diags: Vec<Diag>,
    reached: bool,
    sentinel: bool,
    stderr: String,
}

/// One cargo run over the batch.
fn check(dir: &Path, root: &Path, target: &Path, cases: &mut [Case]) -> Checked {
    let sentinel_lines = write_crate(dir, root, cases);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        // `build`, not `check`: `cargo test` has built every dependency already, and a check
        // would compile the whole wgpu stack once more in check mode. The sentinel's type
        // error keeps rustc from generating code for the batch, so this costs a check.
        .args(["build", "--lib", "--message-format=json", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (mut diags, reached, other) = diagnostics(&stdout);
    let in_sentinel = |d: &Diag| {
        d.line
            .is_some_and(|l| sentinel_lines.0 <= l && l <= sentinel_lines.1)
    };
    let sentinel = diags.iter().any(in_sentinel);
    diags.retain(|d| !in_sentinel(d));
    Checked {
        diags,
        reached,
        sentinel,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned() + &other,
    }
}

/// The index of the kernel whose lines hold an error.
fn owner(cases: &[Case], d: &Diag) -> Option<usize> {
    d.line
        .and_then(|l| cases.iter().position(|c| c.lines.0 <= l && l <= c.lines.1))
}

/// `count` kernels that parse as Rust items, and how many candidates were dropped.
///
/// rustc parses the item under an attribute macro before expanding it, and stops after
/// parsing when the parse failed: one unparsable kernel would hide the whole batch, and
/// the macro never sees such a kernel anyway. syn stands in for rustc's parser. Attribute
/// arguments are never parsed by rustc, so option soup always reaches the macro.
fn generate(seed: u64, count: usize) -> (Vec<String>, usize) {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = any_kernel();
    let (mut out, mut dropped) = (Vec::new(), 0);
    while out.len() < count && dropped < 50 * count {
        let k = strategy.new_tree(&mut runner).expect("a kernel").current();
        if syn::parse_str::<syn::File>(&k).is_ok() {
            out.push(k);
        } else {
            dropped += 1;
        }
    }
    (out, dropped)
}

/// What one batch found wrong: the message, and the generated kernels to blame for it
/// (persisted as regressions).
struct Failure {
    message: String,
    culprits: Vec<String>,
}

/// What one batch did, for the summary.
#[derive(Default)]
struct Batch {
    checked: usize,
    rejected: usize,
    unparsable: usize,
    rustc_unparsable: usize,
}

/// Whether rustc crashed in a way other than an error: a panic (of the macro, reported as
/// "custom attribute panicked", or of rustc), or an overflowed stack (an abort).
fn crashed(out: &Checked) -> bool {
    out.diags.iter().any(|d| d.message.contains("panicked"))
        || out.stderr.contains("panicked")
        || out.stderr.contains("overflowed its stack")
        || out.stderr.contains("(signal:")
}

/// The generated kernels of `cases` that make rustc crash or stop before type checking on
/// their own, found by halving the batch (a crash names no kernel).
fn bisect(dir: &Path, root: &Path, target: &Path, cases: &[Case]) -> Vec<String> {
    let generated: Vec<&Case> = cases.iter().filter(|c| !c.control).collect();
    let bad = |part: &[&Case]| -> bool {
        let mut batch: Vec<Case> = part
            .iter()
            .map(|c| Case {
                source: c.source.clone(),
                control: false,
                lines: (0, 0),
            })
            .collect();
        let out = check(dir, root, target, &mut batch);
        crashed(&out) || (out.reached && !out.sentinel && out.diags.is_empty())
    };
    let mut found = Vec::new();
    let mut stack = vec![generated];
    while let Some(part) = stack.pop() {
        if part.is_empty() || !bad(&part) {
            continue;
        }
        if part.len() == 1 {
            found.push(part[0].source.clone());
            continue;
        }
        let (a, b) = part.split_at(part.len() / 2);
        stack.push(a.to_vec());
        stack.push(b.to_vec());
    }
    found
}

/// One batch: the controls, the regressions, and `count` kernels generated from `seed`,
/// through one cargo run (two where rustc cannot parse some).
fn run_batch(seed: u64, count: usize, regressions: &[String]) -> Result<Batch, Failure> {
    let root = workspace_root();
    let target = target_dir(&root);
    let dir = target.join("forge-no-panic");

    let (generated, unparsable) = generate(seed, count);
    let mut cases: Vec<Case> = SEEDS
        .iter()
        .map(|s| Case {
            source: s.to_string(),
            control: true,
            lines: (0, 0),
        })
        .collect();
    cases.extend(
        regressions
            .iter()
            .cloned()
            .chain(generated)
            .map(|source| Case {
                source,
                control: false,
                lines: (0, 0),
            }),
    );
    let crash = |out: &Checked, cases: &[Case]| Failure {
        message: format!(
            "the macro or rustc crashed (batch kept at {}):\n{}{}",
            dir.display(),
            out.diags
                .iter()
                .filter(|d| d.message.contains("panicked"))
                .map(|d| d.rendered.as_str())
                .collect::<String>(),
            out.stderr.chars().take(20_000).collect::<String>()
        ),
        culprits: {
            let named: Vec<String> = out
                .diags
                .iter()
                .filter(|d| d.message.contains("panicked"))
                .filter_map(|d| owner(cases, d))
                .filter(|i| !cases[*i].control)
                .map(|i| cases[i].source.clone())
                .collect();
            if named.is_empty() {
                bisect(&dir, &root, &target, cases)
            } else {
                named
            }
        },
    };
    let mut out = check(&dir, &root, &target, &mut cases);
    if crashed(&out) {
        return Err(crash(&out, &cases));
    }
    // rustc's parser is stricter than syn here and there; it then stops before expanding
    // anything. Drop the kernels it could not parse and check the rest once more.
    let mut rustc_unparsable = 0;
    if out.reached && !out.sentinel && !out.diags.is_empty() {
        let bad: Vec<usize> = out.diags.iter().filter_map(|d| owner(&cases, d)).collect();
        if let Some(i) = bad.iter().find(|i| cases[**i].control) {
            return Err(Failure {
                message: format!(
                    "rustc rejects control kernel k{i:03} before expansion:\n{}",
                    out.diags
                        .iter()
                        .map(|d| d.rendered.as_str())
                        .collect::<String>()
                ),
                culprits: Vec::new(),
            });
        }
        rustc_unparsable = cases.len();
        cases = cases
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !bad.contains(i))
            .map(|(_, c)| c)
            .collect();
        rustc_unparsable -= cases.len();
        out = check(&dir, &root, &target, &mut cases);
        if crashed(&out) {
            return Err(crash(&out, &cases));
        }
    }

    // rustc checked the batch; a failure before it (a dependency, the lock file) is not ours.
    if !out.reached {
        return Err(Failure {
            message: format!(
                "cargo never checked the scratch crate at {}:\n{}",
                dir.display(),
                out.stderr
            ),
            culprits: Vec::new(),
        });
    }
    if !out.sentinel {
        return Err(Failure {
            message: format!(
                "rustc stopped before type checking, so not every kernel was expanded (batch kept at {}):\n{}",
                dir.display(),
                out.diags.iter().map(|d| d.rendered.as_str()).collect::<String>()
            ),
            culprits: bisect(&dir, &root, &target, &cases),
        });
    }

    // Attribute each error to the kernel whose lines hold it.
    let mut per_case: BTreeMap<usize, Vec<&Diag>> = BTreeMap::new();
    let mut failures = String::new();
    let mut culprits = Vec::new();
    for d in &out.diags {
        match owner(&cases, d) {
            Some(i) => per_case.entry(i).or_default().push(d),
            None if d.message.starts_with("aborting due to") => {}
            None => {
                let _ = writeln!(failures, "an error outside every kernel:\n{}", d.rendered);
            }
        }
    }
    for (i, c) in cases.iter().enumerate() {
        let errs = per_case.get(&i).map(Vec::as_slice).unwrap_or(&[]);
        if c.control && !errs.is_empty() {
            let _ = writeln!(
                failures,
                "control kernel k{i:03} does not compile:\n{}",
                errs[0].rendered
            );
        }
        // Errors only from rustc's later passes: the macro accepted the kernel and emitted
        // Rust that does not compile. The macro's own errors have no code. Two are the
        // module's own Rust, which the macro passes through as written and rustc reports
        // at the user's tokens (both found by the long campaign): an unresolved import
        // (E0432: the only `use` the macro writes is `use super::*`), and a module `const`
        // that rustc cannot
        // evaluate (E0080 on a `const` line: `const K: u32 = 1 / 0;` that no kernel uses).
        let own = errs.iter().any(|d| {
            d.code.as_deref() == Some("E0432")
                || (d.code.as_deref() == Some("E0080") && d.rendered.contains("| const "))
        });
        if !errs.is_empty() && errs.iter().all(|d| d.code.is_some()) && !own {
            let _ = writeln!(
                failures,
                "k{i:03}: the macro accepted this kernel, but its generated Rust does not compile:\n{}\n{}",
                c.source, errs[0].rendered
            );
            if !c.control {
                culprits.push(c.source.clone());
            }
        }
    }
    if !failures.is_empty() {
        return Err(Failure {
            message: format!("batch kept at {}:\n{failures}", dir.display()),
            culprits,
        });
    }
    Ok(Batch {
        checked: cases.len(),
        rejected: per_case.len(),
        unparsable,
        rustc_unparsable,
    })
}

/// The kernels that once made a batch fail, replayed in every batch:
/// `tests/no_panic.regressions`, each after a line `// ---- regression ----`.
fn regressions_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/no_panic.regressions")
}

const REGRESSION_MARK: &str = "// ---- regression ----";

fn regressions() -> Vec<String> {
    let text = std::fs::read_to_string(regressions_file()).unwrap_or_default();
    text.split(REGRESSION_MARK)
        .skip(1)
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .collect()
}

/// Adds `kernels` to the regressions file (those not in it yet).
fn persist(kernels: &[String]) {
    let known = regressions();
    let mut text = std::fs::read_to_string(regressions_file()).unwrap_or_else(|_| {
        "// Kernels that once made forge-macros/tests/no_panic.rs fail, written by it when a\n\
         // batch fails and replayed in every batch since. Commit this file.\n"
            .to_string()
    });
    for k in kernels {
        if !known.iter().any(|old| old == k.trim()) {
            text.push_str(&format!("{REGRESSION_MARK}\n{}\n", k.trim()));
        }
    }
    std::fs::write(regressions_file(), text).expect("the regressions file is written");
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

/// One batch (`FORGE_NO_PANIC_SEED`, `FORGE_NO_PANIC_CASES` kernels) in the normal test
/// run; with `FORGE_FUZZ_CASES`, batches with one seed after another until that many
/// kernels were checked or `FORGE_FUZZ_SECONDS` passed (the long campaign of issue 35).
/// A failing batch's culprits are added to `tests/no_panic.regressions`, which every batch
/// replays.
#[test]
fn macro_never_panics_on_malformed_kernels() {
    // Deep nesting (the stress kernels) is parsed here by syn first: on a thread with room.
    let worker = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(campaign)
        .expect("a thread");
    if let Err(p) = worker.join() {
        std::panic::resume_unwind(p);
    }
}

fn campaign() {
    let long = env_u64("FORGE_FUZZ_CASES");
    let first_seed = env_u64("FORGE_NO_PANIC_SEED").unwrap_or(match long {
        // A long run explores new ground each time; its seed is printed.
        Some(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(DEFAULT_SEED, |d| d.as_nanos() as u64),
        None => DEFAULT_SEED,
    });
    let count = env_u64("FORGE_NO_PANIC_CASES")
        .map_or(if long.is_some() { 300 } else { DEFAULT_CASES }, |c| {
            c as usize
        });
    let total = long.unwrap_or(count as u64);
    let budget = env_u64("FORGE_FUZZ_SECONDS").map(std::time::Duration::from_secs);
    let start = std::time::Instant::now();
    let replayed = regressions();
    let (mut batches, mut checked, mut rejected) = (0u64, 0u64, 0u64);
    let mut seed = first_seed;
    loop {
        let batch = run_batch(seed, count, &replayed);
        match batch {
            Ok(b) => {
                eprintln!(
                    "no_panic: seed {seed:#x}: {} kernels checked ({} controls, {} regressions), {} rejected by the macro, {} accepted; \
                     {} candidates dropped as unparsable by syn, {} by rustc",
                    b.checked,
                    SEEDS.len(),
                    replayed.len(),
                    b.rejected,
                    b.checked - b.rejected,
                    b.unparsable,
                    b.rustc_unparsable,
                );
                batches += 1;
                checked += b.checked as u64;
                rejected += b.rejected as u64;
            }
            Err(f) => {
                if !f.culprits.is_empty() {
                    persist(&f.culprits);
                }
                panic!(
                    "no_panic: seed {seed:#x}, after {batches} batches and {:.0} s: {}\n{} kernel(s) to blame, added to {}",
                    start.elapsed().as_secs_f64(),
                    f.message,
                    f.culprits.len(),
                    regressions_file().display()
                );
            }
        }
        seed = seed.wrapping_add(1);
        let enough = checked >= total || long.is_none();
        if enough || budget.is_some_and(|b| start.elapsed() >= b) {
            break;
        }
    }
    eprintln!(
        "no_panic campaign: {batches} batches from seed {first_seed:#x}, {checked} kernels checked, {rejected} rejected by the macro, in {:.0} s, no failure",
        start.elapsed().as_secs_f64()
    );
}
