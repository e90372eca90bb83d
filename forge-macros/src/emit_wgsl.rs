//! Emit WGSL, a stage (layer 3): the checked model becomes WGSL source. The source is split in two:
//! directives, which must come first, and the body after the schedule's constants
//! (`const WG/ITEMS/VEC`), which the runtime inserts between them for each schedule.
//!
//! Every construct keeps its Rust meaning: where WGSL's builtin differs (`round`, float
//! `min`/`max` with NaN, `fract`, `powf` of a negative base), a small helper function is
//! emitted instead.

use crate::back::{self, Exchange, Exprs, Function, Stmts, Syntax};
use crate::consts::f16_bits;
use crate::model::*;
use crate::names::{builtin_var, helper_name, wgsl_name, Namer};
use crate::types::{self, len_of};
use proc_macro2::Span;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The schedule constants, exactly as `forge_core::Schedule::wgsl_header` writes them.
pub fn schedule_header(s: &SchedPoint, knobs: &[Knob]) -> String {
    let mut h = format!(
        "const WG: u32 = {}u;\nconst ITEMS: u32 = {}u;\nconst VEC: u32 = {}u;\n",
        s.wg, s.items, s.vec
    );
    if s.dims > 1 {
        let [x, y, z] = s.shape;
        let _ = write!(
            h,
            "const WG_X: u32 = {x}u;\nconst WG_Y: u32 = {y}u;\nconst WG_Z: u32 = {z}u;\n"
        );
    }
    for (k, v) in knobs.iter().zip(&s.knobs) {
        let _ = writeln!(h, "const {}: u32 = {v}u;", k.name);
    }
    h
}

pub struct Wgsl {
    /// `enable ...;` lines.
    pub directives: String,
    /// Everything after the schedule constants.
    pub body: String,
    /// For lines of `body` (0-based) emitted from a statement of the kernel or of a helper:
    /// the user's tokens it came from, so that naga's errors point at the user's code.
    pub origins: Vec<(usize, Span, Span)>,
}

/// A WGSL function being written: the kernel's entry point, or a helper.
type Emitter<'k> = Function<'k, Support>;

/// What WGSL's emitter keeps beside a function: its support functions by name (the
/// Rust-meaning math helpers and the float atomics), which the module declares once.
#[derive(Default)]
struct Support {
    helpers: BTreeMap<String, String>,
}

/// The WGSL of kernel `k` unrolled for a schedule (`x`).
pub fn emit<'k>(k: &'k Kernel<'k>, x: &'k Expanded) -> Wgsl {
    let knobs = &k.options.knobs;
    let ty = |t: &Ty| types::wgsl(t, &k.structs, knobs);
    let names = Namer::kernel(k, wgsl_name).locals(&x.main.locals);
    let mut e = Emitter::new(k, &x.main.locals, names, Support::default());
    e.block(&x.main.body);
    // (line in `functions`, origin) of the helpers' lines.
    let mut helper_origins: Vec<(usize, Span, Span)> = Vec::new();
    // `#[forge_fn]` helpers, each emitted with its own locals; their math helpers join ours.
    let mut functions = String::new();
    for (h, f) in &x.helpers {
        let helper = &k.helpers[*h];
        let names = Namer::helper(k, wgsl_name).locals(&f.locals);
        let mut he = Emitter::new(k, &f.locals, names, Support::default());
        let params: Vec<String> = helper
            .params
            .iter()
            .map(|p| format!("fg_arg_{}: {}", he.names[*p], ty(&f.locals[*p].ty)))
            .collect();
        let ret = helper
            .ret
            .as_ref()
            .map(|t| format!(" -> {}", ty(t)))
            .unwrap_or_default();
        for p in &helper.params {
            let l = &f.locals[*p];
            let kw = if l.mutable { "var" } else { "let" };
            let name = he.names[*p].clone();
            he.w.line(&format!("{kw} {name}: {} = fg_arg_{name};", ty(&l.ty)));
        }
        he.block(&f.body);
        // The function's lines start after a blank line and its signature.
        let first = functions.matches('\n').count() + 2;
        helper_origins.extend(
            he.w.origins
                .iter()
                .enumerate()
                .filter_map(|(i, o)| o.map(|(a, b)| (first + i, a, b))),
        );
        let _ = write!(
            functions,
            "\nfn {}({}){ret} {{\n{}}}\n",
            helper_name(helper),
            params.join(", "),
            he.w.out
        );
        e.x.helpers.extend(he.x.helpers);
    }
    let body_code = std::mem::take(&mut e.w.out);
    // Non-finite literals are calls to `fg_f32_bits` (see `float_lit`), which the free
    // function writing them cannot register: whatever text calls it gets it here.
    let calls_bits = |t: &str| t.contains(F32_BITS_CALL);
    if calls_bits(&body_code)
        || calls_bits(&functions)
        || e.x.helpers.values().any(|h| calls_bits(h))
    {
        e.helper(F32_BITS_NAME, HELPER_F32_BITS);
    }

    let mut s = String::new();
    for def in k.used_structs() {
        s.push('\n');
        s.push_str(&types::struct_decl(&k.structs[def]));
    }
    if !k.scalars.is_empty() {
        s.push_str("\nstruct Params {\n");
        for p in &k.scalars {
            let _ = writeln!(s, "    {}: {},", wgsl_name(&p.name), p.ty.wgsl());
        }
        s.push_str("}\n");
    }
    s.push('\n');
    for (i, b) in k.bindings.iter().enumerate() {
        let access = if b.access == Access::Read {
            "read"
        } else {
            "read_write"
        };
        let elem = if b.atomic {
            format!("atomic<{}>", atomic_scalar(b.elem))
        } else {
            ty(&b.elem_ty())
        };
        let _ = writeln!(
            s,
            "@group(0) @binding({i}) var<storage, {access}> {}: array<{elem}>;",
            wgsl_name(&b.name)
        );
    }
    if !k.scalars.is_empty() {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<uniform> fg_params: Params;",
            k.bindings.len()
        );
    }
    // Only a kernel that prints has a print buffer: the others' WGSL is unchanged.
    if !k.prints.is_empty() {
        s.push_str("struct fg_Prints {\n    cursor: atomic<u32>,\n    words: array<u32>,\n}\n");
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read_write> fg_prints: fg_Prints;",
            k.prints_binding()
        );
    }
    for (l, name) in k.locals.iter().zip(&e.names).filter(|(l, _)| l.shared) {
        let atomic = |e: &Ty| atomic_scalar(e.scalar().unwrap_or(Scalar::U32));
        let t = match (&l.ty, l.atomic) {
            (Ty::Array(e, len), true) => {
                format!("array<atomic<{}>, {}>", atomic(e), len_of(len, knobs))
            }
            (t, _) => ty(t),
        };
        let _ = writeln!(s, "var<workgroup> {name}: {t};");
    }
    s.push_str(&row_functions(k));
    for h in e.x.helpers.values() {
        s.push('\n');
        s.push_str(h);
    }
    let functions_line = s.matches('\n').count();
    let mut origins: Vec<(usize, Span, Span)> = helper_origins
        .into_iter()
        .map(|(l, a, b)| (functions_line + l, a, b))
        .collect();
    s.push_str(&functions);
    s.push_str(if k.dims() > 1 {
        "\n@compute @workgroup_size(WG_X, WG_Y, WG_Z)\nfn main(\n"
    } else {
        "\n@compute @workgroup_size(WG)\nfn main(\n"
    });
    s.push_str(
        "    @builtin(workgroup_id) fg_wid: vec3<u32>,\n    @builtin(num_workgroups) fg_nwg: vec3<u32>,\n    @builtin(local_invocation_index) fg_lidx: u32,\n    @builtin(local_invocation_id) fg_lid: vec3<u32>,\n    @builtin(global_invocation_id) fg_gid: vec3<u32>,\n",
    );
    // Subgroup builtins need the device's subgroup feature: declared only when read.
    // `num_subgroups` is computed from the size instead: lavapipe (Mesa 22) rounds it down
    // when the last subgroup is partial.
    let mut sg_builtins = k.used_subgroup_builtins();
    let num_subgroups = sg_builtins.contains(&Builtin::NumSubgroups);
    if num_subgroups && !sg_builtins.contains(&Builtin::SubgroupSize) {
        sg_builtins.push(Builtin::SubgroupSize);
    }
    for b in sg_builtins.iter().filter(|b| **b != Builtin::NumSubgroups) {
        let wgsl = match b {
            Builtin::SubgroupInvocationId => "subgroup_invocation_id",
            Builtin::SubgroupSize => "subgroup_size",
            _ => "subgroup_id",
        };
        let _ = writeln!(s, "    @builtin({wgsl}) {}: u32,", builtin_var(*b));
    }
    s.push_str(") {\n");
    if num_subgroups {
        let _ = writeln!(
            s,
            "    let {} = (WG + {1} - 1u) / {1};",
            builtin_var(Builtin::NumSubgroups),
            builtin_var(Builtin::SubgroupSize)
        );
    }
    for p in &k.scalars {
        let n = wgsl_name(&p.name);
        let _ = writeln!(s, "    let {n} = fg_params.{n};");
    }
    s.push_str(&grid_prologue(k));
    if !k.prints.is_empty() {
        s.push_str("    // The invocation's prints so far: a record's order within its invocation.\n    var fg_print_seq: u32 = 0u;\n");
    }
    let body_line = s.matches('\n').count();
    origins.extend(
        e.w.origins
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.map(|(a, b)| (body_line + i, a, b))),
    );
    s.push_str(&body_code);
    s.push_str("}\n");
    let mut directives = if k.uses_f16() {
        "enable f16;\n".to_string()
    } else {
        String::new()
    };
    if k.uses_coop() {
        directives.push_str("enable wgpu_cooperative_matrix;\n");
    }
    if k.coop_under_vote {
        // A cooperative-matrix operation under a subgroup's vote: uniform over its
        // subgroup, which is what SPIR-V asks of it, and `check` has made sure of that.
        // naga asks for workgroup uniformity and files the check under this rule.
        directives.push_str("diagnostic(off, derivative_uniformity);\n");
    }
    Wgsl {
        directives,
        body: s,
        origins,
    }
}

/// The start of `main` after the parameters: the linear workgroup index of the physical
/// ids, a return for the workgroups that folding launched past the grid, and the logical
/// ids the body reads (`global_id()`, `workgroup_id()`, `num_workgroups()`,
/// `global_index()`), whatever folding the dispatch needed.
fn grid_prologue(k: &Kernel<'_>) -> String {
    let mut s = String::new();
    s.push_str("    // Workgroups are folded into y and z past 65535; this is the linear index.\n");
    s.push_str(
        "    let fg_wg_index = fg_wid.x + fg_wid.y * fg_nwg.x + fg_wid.z * fg_nwg.x * fg_nwg.y;\n",
    );
    let dims = k.threads_dims();
    let ceil = |t: &str, per: &str| format!("{t} / {per} + select(0u, 1u, {t} % {per} != 0u)");
    if k.dims() == 1 {
        let threads = dims
            .first()
            .map(|(t, _)| len_wgsl(t, k))
            .unwrap_or_else(|| "1u".into());
        match k.indirect() {
            // The count an earlier launch wrote, at most `threads` (the runtime reports a
            // count past it).
            Some((b, element)) => {
                let count = wgsl_name(&k.bindings[b].name);
                let _ = writeln!(
                    s,
                    "    let fg_threads: u32 = min({count}[{element}u], {threads});"
                );
            }
            None => {
                let _ = writeln!(s, "    let fg_threads: u32 = {threads};");
            }
        }
        s.push_str("    let fg_per_group = WG * ITEMS;\n");
        s.push_str(
            "    // Folding may launch a few workgroups more than needed: they leave at once.\n",
        );
        let _ = writeln!(
            s,
            "    if fg_wg_index >= {} {{\n        return;\n    }}",
            ceil("fg_threads", "fg_per_group")
        );
        s.push_str("    let fg_global_index = fg_wg_index * WG + fg_lidx;\n");
        let groups = ceil("fg_threads", "fg_per_group");
        for (name, [x, y, z]) in back::logical_ids_1d(k, &groups) {
            let _ = writeln!(s, "    let {name} = vec3<u32>({x}, {y}, {z});");
        }
        return s;
    }
    let mut t: Vec<String> = dims.iter().map(|(e, _)| len_wgsl(e, k)).collect();
    t.resize(3, "1u".into());
    let _ = writeln!(
        s,
        "    let fg_threads = vec3<u32>({}, {}, {});",
        t[0], t[1], t[2]
    );
    let _ = writeln!(
        s,
        "    let fg_groups = vec3<u32>({}, {}, {});",
        ceil("fg_threads.x", "WG_X"),
        ceil("fg_threads.y", "WG_Y"),
        ceil("fg_threads.z", "WG_Z")
    );
    s.push_str(
        "    // Folding may launch a few workgroups more than needed: they leave at once.\n",
    );
    s.push_str(
        "    if fg_wg_index >= fg_groups.x * fg_groups.y * fg_groups.z {\n        return;\n    }\n",
    );
    s.push_str("    // The logical grid: the linear index unfolded over its workgroups.\n");
    s.push_str("    let fg_lwid = vec3<u32>(fg_wg_index % fg_groups.x, (fg_wg_index / fg_groups.x) % fg_groups.y, fg_wg_index / (fg_groups.x * fg_groups.y));\n");
    s.push_str("    let fg_lgid = fg_lwid * vec3<u32>(WG_X, WG_Y, WG_Z) + fg_lid;\n");
    s.push_str("    let fg_global_index = fg_lgid.x + fg_threads.x * (fg_lgid.y + fg_threads.y * fg_lgid.z);\n");
    s
}

/// The scalar an atomic holds in WGSL: `f32` atomics are `u32` bits.
fn atomic_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::I32 => "i32",
        _ => "u32",
    }
}

/// `var` for a mutable local, `let` for an immutable one.
fn kw(l: &Local) -> &'static str {
    if l.mutable {
        "var"
    } else {
        "let"
    }
}

/// A LEN expression in u32 WGSL arithmetic. The host checks that no step overflows.
pub fn len_wgsl(e: &LenExpr, kernel: &Kernel<'_>) -> String {
    let names: Vec<String> = kernel.scalars.iter().map(|s| wgsl_name(&s.name)).collect();
    let mut s = String::new();
    go(e, &names, &mut s);
    return s;

    fn go(e: &LenExpr, names: &[String], k: &mut String) {
        match e {
            LenExpr::Lit(v) => {
                let _ = write!(k, "{v}u");
            }
            LenExpr::Param(i) => {
                let _ = write!(k, "u32({})", names[*i]);
            }
            // The schedule's constants are declared by name in the source's header.
            LenExpr::Sched(name) => k.push_str(name),
            LenExpr::Binary(op, a, b) => {
                let sym = op.symbol();
                k.push('(');
                go(a, names, k);
                let _ = write!(k, " {sym} ");
                go(b, names, k);
                k.push(')');
            }
            LenExpr::Method(m, a, b) => {
                let (mut sa, mut sb) = (String::new(), String::new());
                go(a, names, &mut sa);
                go(b, names, &mut sb);
                let _ = match m {
                    LenMethod::Min => write!(k, "min({sa}, {sb})"),
                    LenMethod::Max => write!(k, "max({sa}, {sb})"),
                    LenMethod::DivCeil => {
                        write!(k, "({sa} / {sb} + select(0u, 1u, {sa} % {sb} != 0u))")
                    }
                };
            }
        }
    }
}

impl Emitter<'_> {
    fn ty(&self, t: &Ty) -> String {
        types::wgsl(t, &self.k.structs, &self.k.options.knobs)
    }

    /// `debug_print!`: the values first (as Rust evaluates the arguments), then a record
    /// taken from the cursor, written only when it is within the buffer; the cursor counts
    /// the dropped ones too.
    fn print(&mut self, format: usize, args: &[Expr]) {
        let n = self.w.fresh();
        let mut words = Vec::new();
        self.w.line("{");
        self.w.indent += 1;
        for (i, a) in args.iter().enumerate() {
            let v = self.expr(a);
            let name = format!("fg_pv{n}_{i}");
            self.w.line(&format!("let {name} = {v};"));
            let comps: Vec<String> = match &a.ty {
                Ty::Vector(_, w) => (0..*w).map(|c| format!("{name}[{c}]")).collect(),
                _ => vec![name],
            };
            let to_word = |c: String| match a.ty.component() {
                Some(Scalar::U32) => c,
                Some(Scalar::Bool) => format!("select(0u, 1u, {c})"),
                _ => format!("bitcast<u32>({c})"),
            };
            words.extend(comps.into_iter().map(to_word));
        }
        let record = print_record_words(self.k);
        self.w
            .line(&format!("let fg_ps{n} = atomicAdd(&fg_prints.cursor, 1u);"));
        self.w.line(&format!(
            "if fg_ps{n} < arrayLength(&fg_prints.words) / {record}u {{"
        ));
        self.w.indent += 1;
        self.w
            .line(&format!("let fg_pb{n} = fg_ps{n} * {record}u;"));
        let header = [
            "fg_global_index".to_string(),
            format!("{format}u"),
            "fg_print_seq".to_string(),
        ];
        for (i, w) in header.into_iter().chain(words).enumerate() {
            self.w
                .line(&format!("fg_prints.words[fg_pb{n} + {i}u] = {w};"));
        }
        self.w.indent -= 1;
        self.w.line("}");
        self.w.line("fg_print_seq += 1u;");
        self.w.indent -= 1;
        self.w.line("}");
    }

    fn helper(&mut self, name: &'static str, src: &'static str) -> &'static str {
        self.x.helpers.insert(name.to_string(), src.to_string());
        name
    }

    /// A support function whose source depends on the types it serves.
    fn helper_owned(&mut self, name: String, src: impl FnOnce() -> String) -> String {
        self.x.helpers.entry(name.clone()).or_insert_with(src);
        name
    }

    /// `&name[i]`'s operand: the atomic element, indexed by a `u32`.
    fn atomic_place(&mut self, target: AtomicTarget, index: &Expr) -> String {
        let name = self.atomic_name(target);
        let i = self.expr(index);
        format!("{name}[{i}]")
    }

    /// A cooperative load's or store's element and stride unit: an array of `HVec8`s is
    /// one of two `vec4<f16>` each in WGSL (`types::HVEC8_WGSL`), so the matrix starts at
    /// the element's first, and the stride counts those, twice as many.
    fn coop_unit(&self, target: AtomicTarget) -> (&'static str, &'static str) {
        let elem = match target {
            AtomicTarget::Binding(b) => self.k.bindings[b].elem_ty(),
            AtomicTarget::Shared(l) => match &self.locals[l].ty {
                Ty::Array(e, _) => (**e).clone(),
                t => t.clone(),
            },
        };
        match elem {
            Ty::Vector(Scalar::F16, 8) => ("[0]", " * 2u"),
            _ => ("", ""),
        }
    }

    fn atomic_name(&self, target: AtomicTarget) -> String {
        match target {
            AtomicTarget::Binding(b) => wgsl_name(&self.k.bindings[b].name),
            AtomicTarget::Shared(l) => self.names[l].clone(),
        }
    }

    /// Rust shifts by `amount mod bits` (`wrapping_shl`); WGSL needs a `u32` amount.
    fn shift_amount(&mut self, amount: &Expr, text: String) -> String {
        match amount.ty {
            Ty::Scalar(Scalar::U32) => format!("({text} & 31u)"),
            _ => format!("(u32({text}) & 31u)"),
        }
    }

    /// A math function of arguments given as WGSL text, of component type `t0`.
    fn math_text(&mut self, f: MathFn, t0: Scalar, vector: bool, a: &[String]) -> String {
        // The Rust-meaning helpers are scalar; vectors use WGSL's componentwise builtins.
        // (`f16` scalars reach the helpers through their `f32` values, in `math`.)
        let float = t0 == Scalar::F32 && !vector;
        if t0 == Scalar::F64 && !vector {
            if let Some(r) = self.math_f64(f, a) {
                return r;
            }
        }
        let call = |name: &str| format!("{name}({})", a.join(", "));
        match f {
            MathFn::Abs => call("abs"),
            MathFn::Min if float => {
                let h = self.helper("fg_min_f32", HELPER_MIN_F32);
                format!("{h}({}, {})", a[0], a[1])
            }
            MathFn::Max if float => {
                let h = self.helper("fg_max_f32", HELPER_MAX_F32);
                format!("{h}({}, {})", a[0], a[1])
            }
            MathFn::Min => call("min"),
            MathFn::Max => call("max"),
            MathFn::Clamp if float => {
                let h = self.helper("fg_clamp_f32", HELPER_CLAMP_F32);
                format!("{h}({}, {}, {})", a[0], a[1], a[2])
            }
            MathFn::Clamp => format!("min(max({}, {}), {})", a[0], a[1], a[2]),
            MathFn::Dot => call("dot"),
            MathFn::Length => call("length"),
            MathFn::Normalize => call("normalize"),
            MathFn::Sqrt => call("sqrt"),
            MathFn::Exp => call("exp"),
            MathFn::Exp2 => call("exp2"),
            MathFn::Ln => call("log"),
            MathFn::Log2 => call("log2"),
            MathFn::Sin => call("sin"),
            MathFn::Cos => call("cos"),
            MathFn::Tan => call("tan"),
            MathFn::Tanh => call("tanh"),
            MathFn::Floor => call("floor"),
            MathFn::Ceil => call("ceil"),
            MathFn::Trunc => call("trunc"),
            MathFn::RoundTiesEven => call("round"),
            MathFn::Round => {
                let h = self.helper("fg_round_f32", HELPER_ROUND_F32);
                format!("{h}({})", a[0])
            }
            MathFn::Fract => format!("({0} - trunc({0}))", a[0]),
            MathFn::MulAdd => call("fma"),
            MathFn::Powf => {
                self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
                let h = self.helper("fg_powf", HELPER_POWF);
                format!("{h}({}, {})", a[0], a[1])
            }
            MathFn::Powi => {
                self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
                let h = self.helper("fg_powf", HELPER_POWF);
                format!("{h}({}, f32({}))", a[0], a[1])
            }
            MathFn::Signum if float => {
                self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
                let h = self.helper("fg_signum_f32", HELPER_SIGNUM_F32);
                format!("{h}({})", a[0])
            }
            MathFn::Signum => call("sign"),
            MathFn::Recip if t0 == Scalar::F16 => format!("(1.0h / {})", a[0]),
            MathFn::Recip => format!("(1.0f / {})", a[0]),
            MathFn::ToBits => format!("bitcast<u32>({})", a[0]),
            // A literal argument would make a constant expression, which WGSL forbids to
            // be infinite or NaN (Tint rejects it; naga 30 folds it): those bits go
            // through `fg_f32_bits`, a function, whose result is a runtime value.
            MathFn::FromBits => format!("bitcast<f32>({})", a[0]),
            MathFn::Dot4I8Packed => format!("dot4I8Packed({}, {})", a[0], a[1]),
            MathFn::Dot4U8Packed => format!("dot4U8Packed({}, {})", a[0], a[1]),
            MathFn::CountOnes => format!("u32(countOneBits({}))", a[0]),
            MathFn::LeadingZeros => format!("u32(countLeadingZeros({}))", a[0]),
            MathFn::TrailingZeros => format!("u32(countTrailingZeros({}))", a[0]),
            MathFn::ReverseBits => call("reverseBits"),
            MathFn::IsNan => {
                let h = self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
                format!("{h}({})", a[0])
            }
            MathFn::IsFinite => format!("((bitcast<u32>({}) & 0x7f800000u) != 0x7f800000u)", a[0]),
            // WGSL division semantics make `x.div_ceil(0)` equal `x`, as `x / 0` is `x`.
            MathFn::DivCeil => format!("({0} / {1} + select(0u, 1u, {0} % {1} != 0u))", a[0], a[1]),
            MathFn::WrappingAdd => format!("({} + {})", a[0], a[1]),
            MathFn::WrappingSub => format!("({} - {})", a[0], a[1]),
            MathFn::WrappingMul => format!("({} * {})", a[0], a[1]),
            MathFn::Atan2 => call("atan2"),
            // What WGSL defines `asin` and `acos` from; drivers' own can be far less
            // accurate (Mesa's are off by 2e-4 and 3e-5), while their `atan2` and `sqrt`
            // are close. `(1 - x)(1 + x)` keeps `1 - x²` exact near ±1.
            MathFn::Asin => {
                let one = float_lit(1.0, t0);
                format!("atan2({0}, sqrt(({one} - {0}) * ({one} + {0})))", a[0])
            }
            MathFn::Acos => {
                let one = float_lit(1.0, t0);
                format!("atan2(sqrt(({one} - {0}) * ({one} + {0})), {0})", a[0])
            }
            MathFn::Atan => call("atan"),
            MathFn::Sinh => call("sinh"),
            MathFn::Cosh => call("cosh"),
            MathFn::Asinh => call("asinh"),
            MathFn::Acosh => call("acosh"),
            MathFn::Atanh => call("atanh"),
            // One rounding less than log2 and a product would lose is within any tolerance;
            // WGSL has no `log10`.
            MathFn::Log10 => format!(
                "(log2({}) * {})",
                a[0],
                float_lit(std::f64::consts::LOG10_2, t0)
            ),
            // Rust multiplies by the constant, rounded to the type; so does this (WGSL's
            // `degrees` has no 64-bit form in SPIR-V).
            MathFn::ToDegrees => format!("({} * {})", a[0], degrees_per_radian(t0)),
            MathFn::ToRadians => format!("({} * {})", a[0], radians_per_degree(t0)),
            MathFn::Hypot => {
                let h = self.typed_helper("hypot", t0);
                format!("{h}({}, {})", a[0], a[1])
            }
            MathFn::RemEuclid if t0 == Scalar::U32 => format!("({} % {})", a[0], a[1]),
            MathFn::RemEuclid => {
                let h = self.typed_helper("rem_euclid", t0);
                format!("{h}({}, {})", a[0], a[1])
            }
            MathFn::Cross => call("cross"),
            MathFn::Distance => call("distance"),
            // WGSL's builtins, with one result where WGSL leaves a choice (a NaN operand,
            // `lo > hi`): written out where the builtin could give another.
            MathFn::ClampMinMax if float => {
                let lo = self.helper("fg_max_f32", HELPER_MAX_F32);
                let hi = self.helper("fg_min_f32", HELPER_MIN_F32);
                format!("{hi}({lo}({}, {}), {})", a[0], a[1], a[2])
            }
            MathFn::ClampMinMax => format!("min(max({}, {}), {})", a[0], a[1], a[2]),
            MathFn::FractFloor => format!("({0} - floor({0}))", a[0]),
            MathFn::Sign if float => {
                self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
                let h = self.helper("fg_sign_f32", HELPER_SIGN_F32);
                format!("{h}({})", a[0])
            }
            MathFn::Sign => call("sign"),
            MathFn::InverseSqrt => call("inverseSqrt"),
            MathFn::Saturate => {
                let lo = self.helper("fg_max_f32", HELPER_MAX_F32);
                let hi = self.helper("fg_min_f32", HELPER_MIN_F32);
                format!("{hi}({lo}({}, 0.0f), 1.0f)", a[0])
            }
            MathFn::Step => format!(
                "select({}, {}, {} <= {})",
                float_lit(0.0, t0),
                float_lit(1.0, t0),
                a[0],
                a[1]
            ),
            MathFn::Mix => format!(
                "({0} * ({3} - {2}) + {1} * {2})",
                a[0],
                a[1],
                a[2],
                float_lit(1.0, t0)
            ),
            MathFn::Smoothstep => {
                self.helper("fg_max_f32", HELPER_MAX_F32);
                self.helper("fg_min_f32", HELPER_MIN_F32);
                let h = self.helper("fg_smoothstep_f32", HELPER_SMOOTHSTEP_F32);
                format!("{h}({}, {}, {})", a[0], a[1], a[2])
            }
            MathFn::Ldexp => call("ldexp"),
            MathFn::QuantizeToF16 => call("quantizeToF16"),
            MathFn::CountOneBits => call("countOneBits"),
            MathFn::CountLeadingZeros => call("countLeadingZeros"),
            MathFn::CountTrailingZeros => call("countTrailingZeros"),
            MathFn::FirstLeadingBit => call("firstLeadingBit"),
            MathFn::FirstTrailingBit => call("firstTrailingBit"),
            MathFn::ExtractBits => call("extractBits"),
            MathFn::InsertBits => call("insertBits"),
            // SPIR-V's normalised packing rounds with `round()`, whose ties the driver
            // picks (lavapipe's go away from zero): WGSL's formula, written out.
            MathFn::Pack(p) if p.normalised().is_some() => {
                let name =
                    self.helper_owned(format!("fg_{}", p.pack_name()), || pack_norm_helper(p));
                format!("{name}({})", a[0])
            }
            MathFn::Pack(p) => format!("pack{}({})", p.wgsl_suffix(), a[0]),
            MathFn::Unpack(p) => format!("unpack{}({})", p.wgsl_suffix(), a[0]),
            MathFn::FaceForward => call("faceForward"),
            MathFn::Reflect => call("reflect"),
            MathFn::Refract => call("refract"),
            MathFn::FrexpFract => format!("frexp({}).fract", a[0]),
            MathFn::FrexpExp => format!("frexp({}).exp", a[0]),
            // `HVec8` is two `vec4<f16>` (`types::HVEC8_WGSL`).
            MathFn::OctetHalf { hi } => format!("({})[{}]", a[0], u8::from(hi)),
            MathFn::OctetJoin => format!("{}({}, {})", types::HVEC8_WGSL, a[0], a[1]),
        }
    }

    /// A scalar `f16` function through the `f32` helpers that give it its meaning, on the
    /// exact `f32` value of each `f16`: the result (an `f16` operand, or a value rounded
    /// once) converts back.
    fn math_via_f32(&mut self, f: MathFn, a: &[String]) -> String {
        let wide: Vec<String> = a
            .iter()
            .enumerate()
            .map(|(i, x)| match (f, i) {
                (MathFn::Powi, 1) => x.clone(),
                _ => format!("f32({x})"),
            })
            .collect();
        let r = self.math_text(f, Scalar::F32, false, &wide);
        match f {
            MathFn::IsNan | MathFn::IsFinite => r,
            _ => format!("f16({r})"),
        }
    }

    /// A vector function whose WGSL builtin would not mean the scalar function on each
    /// component (float `min`, `max` and `clamp`, whose NaN and `lo > hi` results WGSL
    /// leaves open): a support function applying the scalar form to each component.
    fn vector_by_components(
        &mut self,
        f: MathFn,
        s: Scalar,
        n: u8,
        args: &[Expr],
        a: &[String],
    ) -> String {
        let fname = format!("fg_{}_v{n}{}", by_components_name(f), s.wgsl());
        let comps: Vec<String> = (0..n as usize)
            .map(|c| {
                let parts: Vec<String> = args
                    .iter()
                    .enumerate()
                    .map(|(i, x)| match x.ty {
                        Ty::Vector(..) => format!("a{i}.{}", ["x", "y", "z", "w"][c]),
                        _ => format!("a{i}"),
                    })
                    .collect();
                if s == Scalar::F16 {
                    self.math_via_f32(f, &parts)
                } else {
                    self.math_text(f, s, false, &parts)
                }
            })
            .collect();
        let params: Vec<String> = args
            .iter()
            .enumerate()
            .map(|(i, x)| format!("a{i}: {}", self.ty(&x.ty)))
            .collect();
        let ret = self.ty(&args[0].ty);
        let name = self.helper_owned(fname.clone(), || {
            format!(
                "fn {fname}({}) -> {ret} {{\n    return {ret}({});\n}}\n",
                params.join(", "),
                comps.join(", ")
            )
        });
        format!("{name}({})", a.join(", "))
    }

    /// The scalar `f64` forms that differ from `f32`'s: the Rust-meaning helpers, without
    /// the bit tests (WGSL has no 64-bit integers to hold the bits).
    fn math_f64(&mut self, f: MathFn, a: &[String]) -> Option<String> {
        Some(match f {
            MathFn::Min | MathFn::Max | MathFn::Clamp | MathFn::Round | MathFn::Signum => {
                let name = match f {
                    MathFn::Min => "min",
                    MathFn::Max => "max",
                    MathFn::Clamp => "clamp",
                    MathFn::Round => "round",
                    _ => "signum",
                };
                let h = self.typed_helper(name, Scalar::F64);
                format!("{h}({})", a.join(", "))
            }
            MathFn::IsNan => {
                let h = self.typed_helper("isnan", Scalar::F64);
                format!("{h}({})", a[0])
            }
            MathFn::IsFinite => {
                let h = self.typed_helper("isnan", Scalar::F64);
                format!(
                    "(!{h}({0}) && abs({0}) <= {1})",
                    a[0],
                    float_lit(f64::MAX, Scalar::F64)
                )
            }
            MathFn::Recip => format!("(1.0lf / {})", a[0]),
            _ => return None,
        })
    }

    /// A support function over `t`: `fg_<name>_<t>`, its source written for that type.
    fn typed_helper(&mut self, name: &str, t: Scalar) -> String {
        let ts = t.wgsl();
        let lit = |v: f64| match t {
            Scalar::I32 => format!("{}i", v as i32),
            _ => float_lit(v, t),
        };
        let (zero, half, one) = (lit(0.0), lit(0.5), lit(1.0));
        let inf = float_lit(f64::INFINITY, t);
        // NaN and infinity tests: through the bits for `f32` (drivers may fold `x != x`),
        // through an `f32` conversion (which keeps NaN) and a comparison for `f64`.
        self.helper("fg_isnan_f32", HELPER_ISNAN_F32);
        let wide = t == Scalar::F64;
        let max = float_lit(f64::MAX, t);
        let nan_of = |v: &str| {
            if wide {
                format!("fg_isnan_f32(f32({v}))")
            } else {
                format!("fg_isnan_f32({v})")
            }
        };
        let inf_of = |v: &str| {
            if wide {
                format!("abs({v}) > {max}")
            } else {
                format!("(bitcast<u32>({v}) & 0x7fffffffu) == 0x7f800000u")
            }
        };
        let isnan = nan_of("x");
        let fname = format!("fg_{name}_{ts}");
        let src = match name {
            "isnan" => format!("fn {fname}(x: {ts}) -> bool {{\n    return {isnan};\n}}\n"),
            "min" | "max" => format!(
                "fn {fname}(a: {ts}, b: {ts}) -> {ts} {{\n    return select(select({name}(a, b), a, {}), b, {});\n}}\n",
                nan_of("b"),
                nan_of("a")
            ),
            "clamp" => format!(
                "fn {fname}(x: {ts}, lo: {ts}, hi: {ts}) -> {ts} {{\n    return select(select(x, hi, x > hi), lo, x < lo);\n}}\n"
            ),
            "round" => format!(
                "fn {fname}(x: {ts}) -> {ts} {{\n    let t = trunc(x);\n    return select(t, t + sign(x), abs(x - t) >= {half});\n}}\n"
            ),
            "signum" => format!(
                "fn {fname}(x: {ts}) -> {ts} {{\n    // -0.0 has a negative reciprocal.\n    let s = select({one}, -{one}, x < {zero} || (x == {zero} && {one} / x < {zero}));\n    return select(s, x, {isnan});\n}}\n"
            ),
            // Rust's hypot: an infinity wins over a NaN; scaled so that no square overflows.
            "hypot" => format!(
                "fn {fname}(x: {ts}, y: {ts}) -> {ts} {{\n    let a = abs(x);\n    let b = abs(y);\n    if {} || {} {{\n        return {inf};\n    }}\n    if {} || {} {{\n        return a + b;\n    }}\n    let m = max(a, b);\n    if m == {zero} {{\n        return {zero};\n    }}\n    let r = min(a, b) / m;\n    return m * sqrt({one} + r * r);\n}}\n",
                inf_of("a"),
                inf_of("b"),
                nan_of("a"),
                nan_of("b")
            ),
            // Rust's `rem_euclid` over WGSL's `%` (which gives 0 for a zero divisor).
            _ => format!(
                "fn {fname}(x: {ts}, y: {ts}) -> {ts} {{\n    let r = x % y;\n    return select(r, r + abs(y), r < {zero});\n}}\n"
            ),
        };
        self.helper_owned(fname, || src)
    }
}

/// WGSL's spelling of the statements `back` writes for both languages, and the statements
/// whose form is WGSL's own.
/// WGSL's spelling of the expressions whose form is the language's own.
impl Exprs for Emitter<'_> {
    const SYNTAX: Syntax = Syntax::Wgsl;

    fn ty(&self, t: &Ty) -> String {
        types::wgsl(t, &self.k.structs, &self.k.options.knobs)
    }

    fn unary(&mut self, op: UnOp, a: &Expr) -> String {
        match op {
            UnOp::Neg => format!("(-{})", self.expr(a)),
            UnOp::Not => {
                let op = if a.ty == Ty::BOOL { "!" } else { "~" };
                format!("({op}{})", self.expr(a))
            }
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> String {
        let (sa, sb) = (self.expr(a), self.expr(b));
        match op {
            BinOp::Shl | BinOp::Shr => {
                let amount = self.shift_amount(b, sb);
                format!("({sa} {} {amount})", op.wgsl())
            }
            BinOp::BitXor if a.ty == Ty::BOOL => format!("({sa} != {sb})"),
            // Rust compares whole vectors to one `bool`.
            BinOp::Eq if a.ty.is_vector() => format!("all({sa} == {sb})"),
            BinOp::Ne if a.ty.is_vector() => format!("any({sa} != {sb})"),
            _ => format!("({sa} {} {sb})", op.wgsl()),
        }
    }

    fn cast(&mut self, a: &Expr, to: &Ty) -> String {
        let inner = self.expr(a);
        if a.ty == *to {
            inner
        } else {
            format!("{}({inner})", self.ty(to))
        }
    }

    fn math(&mut self, f: MathFn, args: &[Expr]) -> String {
        let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
        // A literal argument would make a constant expression, which WGSL forbids to be
        // infinite or NaN (Tint rejects it; naga 30 folds it): those bits go through
        // `fg_f32_bits`, a function, whose result is a runtime value.
        if let (MathFn::FromBits, ExprKind::IntLit(bits)) = (f, &args[0].kind) {
            if !f32::from_bits(*bits as u32).is_finite() {
                return format!("{F32_BITS_CALL}{})", a[0]);
            }
        }
        let t0 = args[0].ty.component().unwrap_or(Scalar::F32);
        let vector = args[0].ty.is_vector();
        let via_f32 = matches!(
            f,
            MathFn::Min
                | MathFn::Max
                | MathFn::Clamp
                | MathFn::Round
                | MathFn::Powf
                | MathFn::Powi
                | MathFn::Signum
                | MathFn::IsNan
                | MathFn::IsFinite
        );
        let via_f32 = via_f32
            || matches!(
                f,
                MathFn::Hypot
                    | MathFn::Log10
                    | MathFn::ToDegrees
                    | MathFn::ToRadians
                    | MathFn::RemEuclid
            );
        let via_f32 = via_f32
            || matches!(
                f,
                MathFn::ClampMinMax
                    | MathFn::FractFloor
                    | MathFn::Sign
                    | MathFn::InverseSqrt
                    | MathFn::Saturate
                    | MathFn::Step
                    | MathFn::Mix
                    | MathFn::Smoothstep
            );
        match args[0].ty {
            // naga types `frexp(f16).exp` as `i16` (which needs `SHADER_INT16`), where WGSL
            // says `i32`: through the exact `f32` value, whose parts are the same.
            Ty::Scalar(Scalar::F16) if f == MathFn::FrexpExp => format!("frexp(f32({})).exp", a[0]),
            Ty::Scalar(Scalar::F16) if f == MathFn::FrexpFract => {
                format!("f16(frexp(f32({})).fract)", a[0])
            }
            Ty::Vector(Scalar::F16, n) if f == MathFn::FrexpExp => {
                format!("frexp(vec{n}<f32>({})).exp", a[0])
            }
            Ty::Vector(Scalar::F16, n) if f == MathFn::FrexpFract => {
                format!("vec{n}<f16>(frexp(vec{n}<f32>({})).fract)", a[0])
            }
            Ty::Vector(_, n) if by_components(f, t0) => {
                self.vector_by_components(f, t0, n, args, &a)
            }
            _ if t0 == Scalar::F16 && !vector && via_f32 => self.math_via_f32(f, &a),
            _ => self.math_text(f, t0, vector, &a),
        }
    }

    /// An atomic method. On `Atomic<f32>`, held as `u32` bits, `load`, `store` and `swap`
    /// convert the bits, and the read-modify-write methods are compare-exchange loops in a
    /// support function per target and method.
    fn atomic(&mut self, op: AtomicOp, t: AtomicTarget, i: &Expr, args: &[Expr]) -> String {
        let float = match t {
            AtomicTarget::Binding(b) => self.k.bindings[b].elem == Scalar::F32,
            AtomicTarget::Shared(l) => {
                matches!(&self.locals[l].ty, Ty::Array(e, _) if **e == Ty::Scalar(Scalar::F32))
            }
        };
        let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
        if !float {
            let place = self.atomic_place(t, i);
            let mut call = format!("{}(&{place}", op.wgsl());
            for a in &args {
                let _ = write!(call, ", {a}");
            }
            call.push(')');
            return call;
        }
        match op {
            AtomicOp::Load => {
                let place = self.atomic_place(t, i);
                format!("bitcast<f32>(atomicLoad(&{place}))")
            }
            AtomicOp::Store => {
                let place = self.atomic_place(t, i);
                format!("atomicStore(&{place}, bitcast<u32>({}))", args[0])
            }
            AtomicOp::Swap => {
                let place = self.atomic_place(t, i);
                format!(
                    "bitcast<f32>(atomicExchange(&{place}, bitcast<u32>({})))",
                    args[0]
                )
            }
            _ => {
                let update = match op {
                    AtomicOp::Add => "bitcast<f32>(old) + v".to_string(),
                    AtomicOp::Sub => "bitcast<f32>(old) - v".to_string(),
                    AtomicOp::Min => {
                        let h = self.helper("fg_min_f32", HELPER_MIN_F32);
                        format!("{h}(bitcast<f32>(old), v)")
                    }
                    _ => {
                        let h = self.helper("fg_max_f32", HELPER_MAX_F32);
                        format!("{h}(bitcast<f32>(old), v)")
                    }
                };
                let name = self.atomic_name(t);
                let f = self.helper_owned(format!("fg_atomic_{}_{name}", op.name()), || {
                    format!("fn fg_atomic_{}_{name}(i: u32, v: f32) -> f32 {{\n    var old = atomicLoad(&{name}[i]);\n    loop {{\n        let r = atomicCompareExchangeWeak(&{name}[i], old, bitcast<u32>({update}));\n        if r.exchanged {{\n            break;\n        }}\n        old = r.old_value;\n    }}\n    return bitcast<f32>(old);\n}}\n", op.name())
                });
                let at = self.expr(i);
                let at = match i.ty {
                    Ty::Scalar(Scalar::U32) => at,
                    _ => format!("u32({at})"),
                };
                format!("{f}({at}, {})", args[0])
            }
        }
    }

    fn vec_new(&mut self, ty: &Ty, items: &[String]) -> String {
        if let Ty::Vector(Scalar::F16, 8) = ty {
            // `HVec8::ZERO`, its only constructor (`check::hvec8_whole_values`).
            return format!("{}()", self.ty(ty));
        }
        format!("{}({})", self.ty(ty), items.join(", "))
    }

    fn swizzle(&self, v: &str, comps: &[u8]) -> String {
        let c: String = comps
            .iter()
            .map(|c| ['x', 'y', 'z', 'w'][*c as usize])
            .collect();
        format!("({v}).{c}")
    }

    fn subgroup(&mut self, op: SubgroupOp, _ty: &Ty, args: &[Expr]) -> String {
        let items: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
        format!("{}({})", op.wgsl(), items.join(", "))
    }

    fn coop(&mut self, op: CoopOp, target: Option<AtomicTarget>, ty: &Ty, args: &[Expr]) -> String {
        let t = self.ty(ty);
        match (op, target) {
            (CoopOp::Load { row_major }, Some(target)) => {
                let f = if row_major { "coopLoadT" } else { "coopLoad" };
                let p = self.atomic_place(target, &args[0]);
                let st = self.expr(&args[1]);
                let (first, per) = self.coop_unit(target);
                format!("{f}<{t}>(&{p}{first}, ({st}){per})")
            }
            (CoopOp::MulAdd, _) => {
                let a: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("coopMultiplyAdd({}, {}, {})", a[0], a[1], a[2])
            }
            (CoopOp::Rows(r), _) => {
                let a: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                // A `CoopRow` is an `f32` of each lane, its row's.
                match r {
                    RowOp::Bin(RowBin::Max) => format!("max({}, {})", a[0], a[1]),
                    RowOp::Bin(RowBin::Min) => format!("min({}, {})", a[0], a[1]),
                    RowOp::Bin(RowBin::Add) => format!("({} + {})", a[0], a[1]),
                    RowOp::Bin(RowBin::Sub) => format!("({} - {})", a[0], a[1]),
                    RowOp::Bin(RowBin::Mul) | RowOp::Scale => format!("({} * {})", a[0], a[1]),
                    RowOp::Exp2 => format!("exp2({})", a[0]),
                    RowOp::Recip => format!("(1.0f / {})", a[0]),
                    RowOp::Splat => format!("f32({})", a[0]),
                    // The operations on an accumulator (`RowOp::ON_ACCUMULATOR`) go through
                    // memory: `row_functions`' signatures take the operands, then the
                    // subgroup's scratch and the lane.
                    RowOp::Max
                    | RowOp::Sum
                    | RowOp::MaskFrom
                    | RowOp::Exp2Rows
                    | RowOp::ScaleRows
                    | RowOp::ToA
                    | RowOp::MaxWith
                    | RowOp::AddWith => {
                        let (sg, lane) = (
                            builtin_var(Builtin::SubgroupId),
                            builtin_var(Builtin::SubgroupInvocationId),
                        );
                        format!(
                            "{}({}, {sg} * 256u, {lane})",
                            r.wgsl_function(),
                            a.join(", ")
                        )
                    }
                }
            }
            // `Zero`; a store is a statement (`Stmts::eval`).
            _ => format!("{t}()"),
        }
    }

    fn float_lit(&self, v: f64, s: Scalar) -> String {
        float_lit(v, s)
    }
}

/// WGSL's spelling of the statements whose form is the language's own.
impl Stmts for Emitter<'_> {
    /// WGSL has no `[x; N]`: short arrays are spelled out, and the rest are filled by a
    /// loop.
    fn array_fill(&mut self, mutable: bool, name: &str, t: &Ty, v: &Expr) {
        let ts = self.ty(t);
        let n = self.w.fresh();
        let val = self.expr(v);
        self.w.line(&format!("let fg_fill{n} = {val};"));
        match t {
            Ty::Array(_, ConstLen::Lit(len)) if *len <= 16 => {
                let items = vec![format!("fg_fill{n}"); *len as usize];
                let line = Syntax::Wgsl.decl(mutable, name, &ts, &Syntax::Wgsl.array(&ts, &items));
                self.w.line(&format!("{line};"));
            }
            Ty::Array(_, len) => {
                let len = match len {
                    ConstLen::Lit(l) => format!("{l}u"),
                    len => len_of(len, &self.k.options.knobs),
                };
                self.w.line(&format!("var {name}: {ts};"));
                self.w.line(&format!("for (var fg_i{n}: u32 = 0u; fg_i{n} < {len}; fg_i{n} = fg_i{n} + 1u) {{ {name}[fg_i{n}] = fg_fill{n}; }}"));
            }
            _ => {
                let line = Syntax::Wgsl.decl(mutable, name, &ts, &format!("fg_fill{n}"));
                self.w.line(&format!("{line};"));
            }
        }
    }

    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &Expr) {
        let target = self.place(place);
        let v = self.expr(value);
        match op {
            None => self.w.line(&format!("{target} = {v};")),
            Some(op) if op.is_shift() => {
                let amount = self.shift_amount(value, v);
                self.w.line(&format!("{target} {}= {amount};", op.wgsl()))
            }
            Some(BinOp::BitXor) if value.ty == Ty::BOOL => {
                self.w.line(&format!("{target} = {target} != {v};"))
            }
            Some(op) => self.w.line(&format!("{target} {}= {v};", op.wgsl())),
        }
    }

    fn compare_exchange(&mut self, cas: Exchange<'_>) {
        let float = self.locals[cas.old].ty == Ty::Scalar(Scalar::F32);
        let (c, n) = (self.expr(cas.current), self.expr(cas.new));
        let (c, n) = if float {
            (format!("bitcast<u32>({c})"), format!("bitcast<u32>({n})"))
        } else {
            (c, n)
        };
        let place = self.atomic_place(cas.target, cas.index);
        let r = format!("fg_cas{}", self.w.fresh());
        self.w.line(&format!(
            "let {r} = atomicCompareExchangeWeak(&{place}, {c}, {n});"
        ));
        let (o, x) = (&self.locals[cas.old], &self.locals[cas.exchanged]);
        let value = if float {
            format!("bitcast<f32>({r}.old_value)")
        } else {
            format!("{r}.old_value")
        };
        let lines = [
            format!(
                "{} {}: {} = {value};",
                kw(o),
                self.names[cas.old],
                self.ty(&o.ty)
            ),
            format!(
                "{} {}: bool = {r}.exchanged;",
                kw(x),
                self.names[cas.exchanged]
            ),
        ];
        for l in lines {
            self.w.line(&l);
        }
    }

    fn eval(&mut self, expr: &Expr) {
        // naga 30's SPIR-V writer panics ("Expression ... is not cached") when the
        // pointer index or the stride of `coopStore` is computed inline: both are bound
        // with `let` first, always (`tests/snapshots` holds the form).
        if let ExprKind::Coop {
            op: CoopOp::Store { row_major },
            target: Some(target),
            args,
        } = &expr.kind
        {
            let n = self.w.fresh();
            let m = self.expr(&args[0]);
            let i = self.expr(&args[1]);
            let st = self.expr(&args[2]);
            let name = self.atomic_name(*target);
            let f = if *row_major {
                "coopStoreT"
            } else {
                "coopStore"
            };
            let (first, per) = self.coop_unit(*target);
            self.w.line(&format!("let fg_coop_i{n}: u32 = {i};"));
            self.w
                .line(&format!("let fg_coop_s{n}: u32 = ({st}){per};"));
            self.w.line(&format!(
                "{f}({m}, &{name}[fg_coop_i{n}]{first}, fg_coop_s{n});"
            ));
            return;
        }
        let e = self.expr(expr);
        match expr.kind {
            ExprKind::Atomic {
                op: AtomicOp::Store,
                ..
            } => self.w.line(&format!("{e};")),
            _ => self.w.line(&format!("_ = {e};")),
        }
    }

    fn barrier(&mut self, kind: Barrier) {
        match kind {
            // WGSL's copies complete at once: waiting for them is the barrier alone.
            Barrier::Workgroup | Barrier::AsyncWait(_) => self.w.line("workgroupBarrier();"),
            Barrier::Storage => self.w.line("storageBarrier();"),
        }
    }

    fn print(&mut self, format: usize, args: &[Expr]) {
        Emitter::print(self, format, args)
    }
}

/// `180 / π` as Rust's `to_degrees` rounds it for the type.
fn degrees_per_radian(t: Scalar) -> String {
    match t {
        Scalar::F64 => float_lit(180.0f64 / std::f64::consts::PI, t),
        _ => float_lit((180.0f32 / std::f32::consts::PI) as f64, t),
    }
}

/// `π / 180` as Rust's `to_radians` rounds it for the type.
fn radians_per_degree(t: Scalar) -> String {
    match t {
        Scalar::F64 => float_lit(std::f64::consts::PI / 180.0f64, t),
        _ => float_lit((std::f32::consts::PI / 180.0f32) as f64, t),
    }
}

/// A float literal that reads back as exactly the same `f32`, or `f16`: the nearest `f16`
/// to `v`, written as the shortest decimal of its (exact) `f32` value.
pub fn float_lit(v: f64, s: Scalar) -> String {
    if s == Scalar::F64 {
        // WGSL has no 64-bit NaN or infinity literal: the `f32` one converts exactly.
        if !v.is_finite() {
            return format!("f64({})", float_lit(v, Scalar::F32));
        }
        let mut text = format!("{v:?}");
        if !text.contains('.') && !text.contains('e') {
            text.push_str(".0");
        }
        return if v < 0.0 || (v == 0.0 && v.is_sign_negative()) {
            format!("({text}lf)")
        } else {
            format!("{text}lf")
        };
    }
    let f = if s == Scalar::F16 {
        half::f16::from_bits(f16_bits(v)).to_f32()
    } else {
        v as f32
    };
    // WGSL has no literal for NaN or infinity, and a constant expression may not be one
    // (Tint rejects `bitcast<f32>(0x7f800000u)`; naga 30 folds it): they come out of a
    // function, so their value is a runtime one.
    let bits = |b: &str| {
        if s == Scalar::F16 {
            format!("f16({F32_BITS_CALL}{b}))")
        } else {
            format!("{F32_BITS_CALL}{b})")
        }
    };
    if f.is_nan() {
        return bits("0x7fc00000u");
    }
    if f.is_infinite() {
        return if f > 0.0 {
            bits("0x7f800000u")
        } else {
            bits("0xff800000u")
        };
    }
    let suffix = if s == Scalar::F16 { "h" } else { "f" };
    let mut text = format!("{f:?}");
    if !text.contains('.') && !text.contains('e') {
        text.push_str(".0");
    }
    if f < 0.0 || (f == 0.0 && f.is_sign_negative()) {
        format!("({text}{suffix})")
    } else {
        format!("{text}{suffix}")
    }
}

// NaN tests go through the bits: drivers may fold `x != x` to false.
const F32_BITS_NAME: &str = "fg_f32_bits";
const F32_BITS_CALL: &str = "fg_f32_bits(";
/// The `f32` of a bit pattern, as a runtime value: see `float_lit`.
const HELPER_F32_BITS: &str =
    "fn fg_f32_bits(bits: u32) -> f32 {\n    return bitcast<f32>(bits);\n}\n";
const HELPER_ISNAN_F32: &str = "fn fg_isnan_f32(x: f32) -> bool {\n    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;\n}\n";

// Rust's `f32::min`/`max` ignore a NaN operand; WGSL leaves that undefined.
/// WGSL's normalised packing, `floor(0.5 + scale·clamp(x, lo, 1))` per component, the
/// first in the low bits; a NaN component is `lo`, as `min`/`max` ignoring it give.
fn pack_norm_helper(p: PackFormat) -> String {
    let (scale, lo, bits) = p.normalised().unwrap_or((1.0, 0.0, 8));
    let n = 32 / bits;
    let (fv, uv, iv) = (
        format!("vec{n}<f32>"),
        format!("vec{n}<u32>"),
        format!("vec{n}<i32>"),
    );
    let mask = (1u64 << bits) - 1;
    let fields: Vec<String> = ["x", "y", "z", "w"][..n as usize]
        .iter()
        .enumerate()
        .map(|(i, c)| format!("(q.{c} << {}u)", i as u32 * bits))
        .collect();
    format!(
        "fn fg_{name}(v: {fv}) -> u32 {{\n    let nan = (bitcast<{uv}>(v) & {uv}(0x7fffffffu)) > {uv}(0x7f800000u);\n    let c = select(clamp(v, {fv}({lo:?}f), {fv}(1.0f)), {fv}({lo:?}f), nan);\n    let q = {uv}({iv}(floor(0.5f + {scale:?}f * c))) & {uv}({mask}u);\n    return {};\n}}\n",
        fields.join(" | "),
        name = p.pack_name(),
    )
}

/// Whether `f` on vectors of `s` is applied component by component through the scalar
/// form, because WGSL's vector builtin would not mean it (or there is none).
fn by_components(f: MathFn, s: Scalar) -> bool {
    let float = s.is_float();
    match f {
        MathFn::Min | MathFn::Max | MathFn::Clamp | MathFn::ClampMinMax | MathFn::Sign => float,
        MathFn::Saturate
        | MathFn::Step
        | MathFn::Smoothstep
        | MathFn::Round
        | MathFn::Signum
        | MathFn::Powf
        | MathFn::Powi
        | MathFn::Hypot => true,
        MathFn::RemEuclid => s != Scalar::U32,
        _ => false,
    }
}

/// The name of `f` in its componentwise support function's.
fn by_components_name(f: MathFn) -> &'static str {
    match f {
        // `clamp` is both Rust's method and WGSL's function, which differ.
        MathFn::ClampMinMax => "clamp_min_max",
        other => other.name(),
    }
}

const HELPER_MIN_F32: &str = "fn fg_min_f32(a: f32, b: f32) -> f32 {\n    let a_nan = (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u;\n    let b_nan = (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u;\n    return select(select(min(a, b), a, b_nan), b, a_nan);\n}\n";
const HELPER_MAX_F32: &str = "fn fg_max_f32(a: f32, b: f32) -> f32 {\n    let a_nan = (bitcast<u32>(a) & 0x7fffffffu) > 0x7f800000u;\n    let b_nan = (bitcast<u32>(b) & 0x7fffffffu) > 0x7f800000u;\n    return select(select(max(a, b), a, b_nan), b, a_nan);\n}\n";

// Rust's clamp passes NaN through and never reorders its bounds.
const HELPER_CLAMP_F32: &str =
    "fn fg_clamp_f32(x: f32, lo: f32, hi: f32) -> f32 {\n    return select(select(x, hi, x > hi), lo, x < lo);\n}\n";

// WGSL's sign, with NaN kept (WGSL leaves it open) and 0 for either zero.
const HELPER_SIGN_F32: &str = "fn fg_sign_f32(x: f32) -> f32 {\n    let s = select(select(0.0f, -1.0f, x < 0.0f), 1.0f, x > 0.0f);\n    return select(s, x, fg_isnan_f32(x));\n}\n";

// WGSL's smoothstep, its clamp written out (a NaN gives 0).
const HELPER_SMOOTHSTEP_F32: &str = "fn fg_smoothstep_f32(lo: f32, hi: f32, x: f32) -> f32 {\n    let t = fg_min_f32(fg_max_f32((x - lo) / (hi - lo), 0.0f), 1.0f);\n    return t * t * (3.0f - 2.0f * t);\n}\n";

// Rust rounds half away from zero; WGSL's `round` rounds half to even. `x - trunc(x)` is exact.
const HELPER_ROUND_F32: &str = "fn fg_round_f32(x: f32) -> f32 {\n    let t = trunc(x);\n    return select(t, t + sign(x), abs(x - t) >= 0.5f);\n}\n";

// Rust's signum: +0.0 gives 1.0, -0.0 gives -1.0, NaN stays NaN.
const HELPER_SIGNUM_F32: &str = "fn fg_signum_f32(x: f32) -> f32 {\n    let s = select(1.0f, -1.0f, (bitcast<u32>(x) & 0x80000000u) != 0u);\n    return select(s, x, fg_isnan_f32(x));\n}\n";

// Rust's powf, which is C's pow: 1 for x^0 and 1^y (NaN included), NaN for a finite negative
// base with a finite non-integral exponent, (-1)^±inf = 1, and the base's sign (-0.0 and
// -inf included) kept for odd integral exponents. WGSL's `pow` covers only positive bases.
const HELPER_POWF: &str = "fn fg_powf(x: f32, y: f32) -> f32 {\n    if y == 0.0f || x == 1.0f {\n        return 1.0f;\n    }\n    if fg_isnan_f32(x) || fg_isnan_f32(y) {\n        return fg_f32_bits(0x7fc00000u);\n    }\n    // Infinities are tested through the bits: WGSL lets drivers assume there are none.\n    let inf = fg_f32_bits(0x7f800000u);\n    let ax = abs(x);\n    let x_inf = (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;\n    let y_inf = (bitcast<u32>(y) & 0x7fffffffu) == 0x7f800000u;\n    let integral = !y_inf && trunc(y) == y;\n    var r: f32;\n    if y_inf {\n        if ax == 1.0f {\n            return 1.0f;\n        }\n        r = select(0.0f, inf, (ax > 1.0f) == (y > 0.0f));\n    } else if x_inf {\n        r = select(0.0f, inf, y > 0.0f);\n    } else if ax == 0.0f {\n        r = select(0.0f, inf, y < 0.0f);\n    } else if x < 0.0f && !integral {\n        return fg_f32_bits(0x7fc00000u);\n    } else {\n        r = pow(ax, y);\n    }\n    // Every float of magnitude 2^24 or more is an even integer.\n    let odd = integral && abs(y) < 16777216.0f && (i32(y) & 1i) != 0i;\n    if (bitcast<u32>(x) & 0x80000000u) != 0u && odd {\n        r = -r;\n    }\n    return r;\n}\n";

/// The words of one print record of kernel `k`: the header (invocation, format, order)
/// and the widest format's values, as `forge_core::prints::PrintTable::record_words`.
pub(crate) fn print_record_words(k: &Kernel<'_>) -> u32 {
    let mut widest = vec![0u32; k.prints.len()];
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Print { format, args, .. } = s {
            let words = args.iter().map(|a| match a.ty {
                Ty::Vector(_, w) => w as u32,
                _ => 1,
            });
            widest[*format] = words.sum();
        }
    });
    3 + widest.into_iter().max().unwrap_or(0)
}

/// The WGSL functions of the row operations the kernel uses (`lower::coop`'s module docs),
/// and their scratch: each subgroup's 16×16 `f32`s (`f16`s too for `to_a`) at
/// `subgroup_id·256`. Lane `l` holds row `l % 16` of a `CoopRow`. An operation stores its
/// accumulator row-major, between barriers (the first keeps the last operation's readers
/// ahead of the store), works on the floats, and loads the result after a third barrier.
fn row_functions(k: &Kernel<'_>) -> String {
    let used = k.row_ops_through_memory();
    if used.is_empty() {
        return String::new();
    }
    let wg = if k.dims() > 1 {
        "WG_X * WG_Y * WG_Z"
    } else {
        "WG"
    };
    let size = format!("({wg} + 31u) / 32u * 256u");
    let mut s = format!("\nvar<workgroup> fg_rows: array<f32, {size}>;\n");
    if used.contains(&RowOp::ToA) {
        let _ = writeln!(s, "var<workgroup> fg_rows_h: array<f16, {size}>;");
    }
    // naga's SPIR-V writer wants a `coopStore`'s index and stride bound by `let` (see
    // `Stmts::eval`).
    s.push_str(
        "fn fg_rows_put(c: coop_mat16x16<f32, C>, at: u32) {
    let stride: u32 = 16u;
    workgroupBarrier();
    coopStoreT(c, &fg_rows[at], stride);
    workgroupBarrier();
}
",
    );
    let reduce = |name: &str, fold: &str| {
        format!(
            "fn fg_{name}(c: coop_mat16x16<f32, C>, at: u32, lane: u32) -> f32 {{
    fg_rows_put(c, at);
    let row = at + (lane & 15u) * 16u;
    var x = fg_rows[row];
    for (var j = 1u; j < 16u; j++) {{
        x = {fold};
    }}
    return x;
}}
"
        )
    };
    // Element `e = lane + 32·i` of the scratch, row `e / 16`, for `i` in `0..8`; `body`
    // rewrites `fg_rows[at + e]` with `r`, `j` and the row's values (by shuffle) at hand.
    let map = |name: &str, params: &str, body: &str| {
        format!(
            "fn fg_{name}(c: coop_mat16x16<f32, C>, {params}at: u32, lane: u32) -> coop_mat16x16<f32, C> {{
    fg_rows_put(c, at);
    for (var i = 0u; i < 8u; i++) {{
        let e = lane + 32u * i;
        let r = e / 16u;
        let j = e % 16u;
        {body}
    }}
    workgroupBarrier();
    return coopLoadT<coop_mat16x16<f32, C>>(&fg_rows[at], 16u);
}}
"
        )
    };
    // Element by element with another accumulator `o`, `combine` of the two (`fg_rows[at + e]`
    // and `theirs[i]`). `o` goes through the scratch first, each lane keeping the elements it
    // will write (`fg_rows_put`'s first barrier keeps those reads ahead of `c`'s store).
    let with = |name: &str, combine: &str| {
        format!(
            "fn fg_{name}(c: coop_mat16x16<f32, C>, o: coop_mat16x16<f32, C>, at: u32, lane: u32) -> coop_mat16x16<f32, C> {{
    fg_rows_put(o, at);
    var theirs: array<f32, 8>;
    for (var i = 0u; i < 8u; i++) {{
        theirs[i] = fg_rows[at + lane + 32u * i];
    }}
    fg_rows_put(c, at);
    for (var i = 0u; i < 8u; i++) {{
        let e = lane + 32u * i;
        fg_rows[at + e] = {combine};
    }}
    workgroupBarrier();
    return coopLoadT<coop_mat16x16<f32, C>>(&fg_rows[at], 16u);
}}
"
        )
    };
    for r in used {
        s.push_str(&match r {
            RowOp::Max => reduce("row_max", "max(x, fg_rows[row + j])"),
            RowOp::Sum => reduce("row_sum", "x + fg_rows[row + j]"),
            RowOp::MaskFrom => map(
                "mask_from",
                "first: i32, step: i32, fill: f32, ",
                "if (i32(j) >= first + step * i32(r)) { fg_rows[at + e] = fill; }",
            ),
            RowOp::Exp2Rows => map(
                "exp2_rows",
                "scale: f32, m: f32, ",
                "let mr = subgroupShuffle(m, r);\n        fg_rows[at + e] = exp2(fg_rows[at + e] * scale - mr);",
            ),
            RowOp::ScaleRows => map(
                "scale_rows",
                "f: f32, ",
                "let fr = subgroupShuffle(f, r);\n        fg_rows[at + e] = fg_rows[at + e] * fr;",
            ),
            RowOp::MaxWith => with("max_with", "max(fg_rows[at + e], theirs[i])"),
            RowOp::AddWith => with("add_with", "fg_rows[at + e] + theirs[i]"),
            _ => "fn fg_to_a(c: coop_mat16x16<f32, C>, at: u32, lane: u32) -> coop_mat16x16<f16, A> {
    fg_rows_put(c, at);
    for (var i = 0u; i < 8u; i++) {
        let e = lane + 32u * i;
        fg_rows_h[at + e] = f16(fg_rows[at + e]);
    }
    workgroupBarrier();
    return coopLoadT<coop_mat16x16<f16, A>>(&fg_rows_h[at], 16u);
}
"
            .to_string(),
        });
    }
    s
}
