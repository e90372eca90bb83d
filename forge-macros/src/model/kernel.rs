//! The kernel, its parameters, options, locals and helpers, and the facts about it that
//! several stages ask.
//!
//! Part of `model` (layer 1).

use super::expr::{Builtin, CoopOp, Expr, ExprKind, RowOp};
use super::keep::Keep;
use super::sched::{Knob, SchedPoint};
use super::stmt::{Block, Place, PrintFmt, Stmt};
use super::ty::LocalId;
use super::ty::{ConstLen, LenOp, Scalar, Ty};
use super::walk::{stmt_exprs, walk_expr, walk_exprs, walk_stmts};
use proc_macro2::Span;

/// How a kernel accesses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
    Out,
}

/// A LEN expression, over scalar parameters and integer literals.
#[derive(Clone, Debug)]
pub enum LenExpr {
    Lit(u64),
    Param(usize),
    /// A constant of the schedule (`WG`, `ITEMS`, `VEC`, `WG_X`.., or a knob), by name:
    /// evaluated per schedule. `check` makes sure it names one.
    Sched(String),
    Binary(LenOp, Box<LenExpr>, Box<LenExpr>),
    Method(LenMethod, Box<LenExpr>, Box<LenExpr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenMethod {
    DivCeil,
    Min,
    Max,
}

/// A storage binding: `name: &[T; LEN]`, `name: &mut [T; LEN]` or `#[out] name: &mut [T; LEN]`.
pub struct BindingParam<'a> {
    pub original: &'a syn::PatType,
    pub name: String,
    pub span: Span,
    /// The scalar, or `U32` for a struct (whose fields have their own).
    pub elem: Scalar,
    /// 1 for scalars, 2 or 4 for vectors, a struct's size in words.
    pub width: u8,
    /// A `#[forge_struct]` element, by index into `Kernel::structs`.
    pub strukt: Option<usize>,
    pub atomic: bool,
    pub access: Access,
    pub len: LenExpr,
    pub len_text: String,
    /// The element type as written (`f32`, `Vec4`, `Body`), for messages.
    pub elem_text: String,
}

impl BindingParam<'_> {
    /// The type of one element.
    pub fn elem_ty(&self) -> Ty {
        match (self.strukt, self.width) {
            (Some(s), _) => Ty::Struct(s),
            (None, 1) => Ty::Scalar(self.elem),
            (None, w) => Ty::Vector(self.elem, w),
        }
    }
}

/// A `#[forge_struct]`: a `#[repr(C)]` struct of 32-bit scalars, vectors of them and fixed
/// arrays of those, shared by the kernels and helpers of its `#[forge_module]`. Its host
/// type is the user's struct itself; its layout was checked against naga's.
#[derive(Clone, Debug)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<StructField>,
    /// Bytes, a multiple of 4 (WGSL's size, which the host struct's was checked to equal).
    pub size: u32,
}

#[derive(Clone, Debug)]
pub struct StructField {
    pub name: String,
    pub ty: Ty,
    /// Bytes from the start of the struct, the same in WGSL and in the host struct.
    pub offset: u32,
}

impl StructDef {
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// What a kernel of a `#[forge_module]` shares with the others: its helpers and structs.
#[derive(Clone, Default)]
pub struct Shared {
    pub helpers: Vec<HelperFn>,
    pub structs: Vec<StructDef>,
    pub consts: Vec<ConstItem>,
}

/// A scalar parameter: a field of `Params`.
pub struct ScalarParam<'a> {
    pub original: &'a syn::PatType,
    pub name: String,
    pub ty: Scalar,
    /// Its type was refused: uses of it agree with anything, so that they add no errors.
    pub refused: bool,
}

/// A parameter in declaration order.
#[derive(Clone, Copy, Debug)]
pub enum ParamRef {
    Binding(usize),
    Scalar(usize),
}

/// The `hidden` base of the local that holds a `workgroup_uniform_load`'s value: `check`'s
/// uniformity analysis counts it uniform where the index is.
pub const UNIFORM_LOAD: &str = "fg_uload";

/// A local variable. Each `let` introduces a new one, so shadowing is explicit.
#[derive(Clone)]
pub struct Local {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    /// `#[shared]`: workgroup memory.
    pub shared: bool,
    pub span: Span,
    /// Made by the macro, not declared by the user (the value of an `if` computed before
    /// the place it is assigned to, an inlined helper's result): its name is a
    /// description, not an identifier, and this is the base of its generated name.
    pub hidden: Option<&'static str>,
    /// A helper's parameter taken by reference (`t: &mut [f32; 256]`), and whether the
    /// reference is `&mut`: calls are inlined, with the argument's array in its place.
    pub by_ref: Option<bool>,
    /// Assigned after declaration (used to warn about needless `mut` and to check writes).
    pub assigned: bool,
    /// A workgroup array that atomic methods are called on, or a helper's reference
    /// parameter declared `&mut [Atomic<T>; N]`: its elements are atomics.
    pub atomic: bool,
}

/// A certification case: `case(name = value, ...)`.
pub struct Case {
    /// The `case` keyword, for errors about the whole case.
    pub span: Span,
    pub values: Vec<(syn::Ident, syn::Expr)>,
    /// Every scalar parameter's value, in declaration order, once `parse::resolve_cases`
    /// evaluated them; `None` when a value is missing or does not fit its parameter.
    pub resolved: Option<Vec<CaseValue>>,
}

/// A scalar parameter's value in a certification case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CaseValue {
    U32(u32),
    I32(i32),
    F32(f32),
}

/// One LEN expression per dimension of `threads`, each with its text.
pub type ThreadsDims = Vec<(LenExpr, String)>;

/// Parsed `#[forge_kernel(...)]` options.
pub struct Options {
    /// The declared workgroup: one extent (`workgroup = 64`), or a shape of 2 or 3
    /// (`workgroup = (16, 16)`).
    pub workgroup: Vec<u32>,
    pub workgroup_span: Span,
    /// Whether `workgroup` was given (a 2-D or 3-D grid without one gets `(8, 8)` or
    /// `(4, 4, 4)`).
    pub workgroup_given: bool,
    /// `threads = n` or `threads = (w, h[, d])`: one LEN per dimension, each with its text,
    /// and the whole option's text and span.
    pub threads: Option<(ThreadsDims, String, Span)>,
    /// The `threads` option as written, until `parse::resolve_threads` resolves it.
    pub threads_syn: Option<syn::Expr>,
    /// `tune(workgroup = [..])`: each candidate's extents (one, or a shape of 2 or 3),
    /// with its span.
    pub tune_workgroup: Vec<(Vec<u32>, Span)>,
    pub tune_items: Vec<u32>,
    pub tune_vector: Vec<u32>,
    /// Every value of `tune(...)`: its axis, value and literal, for errors at the value.
    pub tune_values: Vec<(&'static str, u32, Span)>,
    /// `tune(keep = EXPR)`: the condition a combination of the candidates must meet.
    pub tune_keep: Option<Keep>,
    pub reference: Option<syn::Path>,
    pub krate: syn::Path,
    pub cases: Vec<Case>,
    pub tolerance: Option<(f64, f64)>,
    pub ext: bool,
    /// `knobs(NAME = default, ..)`, with the values `tune(NAME = [..])` gives them.
    pub knobs: Vec<Knob>,
    /// `special_values = true`: the kernel handles NaN, infinities and subnormals, and is
    /// certified on them.
    pub special_values: bool,
    /// `cost(bytes = EXPR, flops = EXPR)` as written, until `parse::resolve_cost` resolves
    /// it against the scalars.
    pub cost_syn: Vec<(CostKind, syn::Expr)>,
    /// The declared cost of one call, for rooflines: each measure a LEN over the scalars,
    /// with its text.
    pub cost: Vec<(CostKind, LenExpr, String)>,
    /// `inputs(dst = permutation, ..)`: the structure of bindings' certification inputs,
    /// each with the binding's name and span.
    pub inputs: Vec<(String, InputKind, Span)>,
    /// `inputs = path`: the kernel's own certification inputs.
    pub inputs_fn: Option<syn::Path>,
    /// `tolerance(.., terms = EXPR)` as written, until `parse::resolve_cost` resolves it.
    pub terms_syn: Option<syn::Expr>,
    /// The terms each output sums, a LEN over the scalars, with its text: the certifier
    /// allows each output `2·terms·u·Σ|terms|` beside the fixed tolerance.
    pub terms: Option<(LenExpr, String)>,
    /// `indirect = count[0]`: the binding and element the launch reads its number of
    /// invocations from, on the device (at most `threads`), with the option's span.
    pub indirect: Option<(String, u32, Span)>,
}

/// A structure of certification inputs (`forge_core::Input`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// `permutation`.
    Permutation,
    /// `offsets(other)`: sorted offsets ending at `other`'s length.
    OffsetsOf(String),
    /// `indices(other)`: indices in `0..len` of `other`.
    IndicesOf(String),
}

/// What a `cost(..)` term counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostKind {
    /// `bytes = EXPR`: the bytes a call must move to or from memory.
    Bytes,
    /// `flops = EXPR`: the floating-point operations a call does.
    Flops,
}

impl CostKind {
    pub fn name(self) -> &'static str {
        match self {
            CostKind::Bytes => "bytes",
            CostKind::Flops => "flops",
        }
    }
}

/// A module's `const NAME: T = value;`, for every kernel and helper of the module.
#[derive(Clone)]
pub struct ConstItem {
    pub name: String,
    /// The value, typed; each use is a copy of it.
    pub value: Expr,
    /// It uses `WG`, `ITEMS` or `VEC`, so it exists only in the kernel language, not as a
    /// Rust item.
    pub sched: bool,
    /// Lowering it gave errors (reported once, by the module), as for `HelperFn::failed`.
    pub failed: bool,
}

/// The whole kernel.
pub struct Kernel<'a> {
    pub func: &'a syn::ItemFn,
    pub name: String,
    pub options: Options,
    pub bindings: Vec<BindingParam<'a>>,
    pub scalars: Vec<ScalarParam<'a>>,
    pub params: Vec<ParamRef>,
    pub locals: Vec<Local>,
    pub body: Block,
    /// Number of loops (ids are 0..loops).
    pub loops: usize,
    /// The `#[forge_fn]` helpers this kernel can call (those of its `#[forge_module]`).
    pub helpers: Vec<HelperFn>,
    /// The `#[forge_struct]`s of its `#[forge_module]`.
    pub structs: Vec<StructDef>,
    /// Its `debug_print!` formats, by format id (in source order); empty for a kernel that
    /// does not print, which gets no print buffer.
    pub prints: Vec<PrintFmt>,
    /// A cooperative-matrix operation stands under a subgroup's vote (`check` found it, and
    /// made sure of it): the WGSL turns naga's workgroup-wide rule for it off.
    pub coop_under_vote: bool,
}

/// A device function declared with `#[forge_fn]`, over scalars, vectors and arrays, which it
/// takes by value or by reference (`&mut [f32; 256]`, of workgroup or local memory); it
/// may hold barriers and subgroup operations. It cannot read bindings or builtins.
#[derive(Clone)]
pub struct HelperFn {
    pub name: String,
    pub params: Vec<LocalId>,
    /// For each parameter taken by reference, whether the reference is `&mut`.
    pub refs: Vec<Option<bool>>,
    /// Whether calls are inlined (see `inline`): the helper takes an array by reference,
    /// or holds a barrier, a subgroup operation or a builtin.
    pub inline: bool,
    /// Lowering it gave errors (reported once, by the module): a kernel that calls it
    /// gives no WGSL and adds no error of its own.
    pub failed: bool,
    /// Loops in its body (ids are 0..loops), and subgroup operations.
    pub loops: usize,
    pub subgroup_ops: usize,
    pub ret: Option<Ty>,
    pub locals: Vec<Local>,
    pub body: Block,
    /// Helpers it calls, by index (always earlier ones, so there is no recursion).
    pub calls: Vec<usize>,
    /// Its length parameters (`fn scan<const N: usize>(t: &mut [u32; N])`), in order.
    pub lens: Vec<LenParam>,
}

/// A length parameter of a helper: the length of the arrays that a call gives the
/// parameters whose type has it as a whole length (`t: &mut [u32; N]`). Calls are
/// inlined, and each replaces it, in types and as a value, by its length there.
#[derive(Clone, Debug)]
pub struct LenParam {
    /// The local that holds its value in the body (a `u32`, as `WG` is), and whose id
    /// `CExpr::Param` names in types.
    pub local: LocalId,
    /// Whether the body uses it as a value or in a type other than its parameters': a
    /// call must then give it a length known at compile time, not only a binding's.
    pub used: bool,
}

impl Kernel<'_> {
    /// Helpers the kernel calls, directly or through other helpers, in declaration order.
    pub fn used_helpers(&self) -> Vec<usize> {
        let mut used = vec![false; self.helpers.len()];
        let mut stack: Vec<usize> = Vec::new();
        walk_exprs(&self.body, &mut |x| {
            if let ExprKind::Call(h, _) = x.kind {
                stack.push(h)
            }
        });
        while let Some(h) = stack.pop() {
            if !used[h] {
                used[h] = true;
                stack.extend(self.helpers[h].calls.iter().copied());
            }
        }
        (0..self.helpers.len()).filter(|h| used[*h]).collect()
    }
}

impl Kernel<'_> {
    /// The print buffer's binding number: one past the `Params` uniform's, whether or not
    /// the kernel has scalars, so the bindings before it never move.
    pub fn prints_binding(&self) -> usize {
        self.bindings.len() + 1
    }

    /// Whether the body calls a subgroup operation or reads a subgroup builtin, which
    /// needs the device's subgroup feature; WGSL's row operations shuffle within the
    /// subgroup too (`emit_wgsl`'s row functions).
    pub fn uses_subgroups(&self) -> bool {
        let mut found = !self.row_ops_through_memory().is_empty();
        walk_exprs(&self.body, &mut |x| match x.kind {
            ExprKind::Subgroup { .. } => found = true,
            ExprKind::Builtin(b) if b.is_subgroup() => found = true,
            _ => {}
        });
        found
    }

    /// The workgroup memory WGSL's row operations take with schedule `s`: a subgroup's
    /// 16×16 `f32`s for each 32 invocations, and as many `f16`s where `to_a` is used.
    pub fn row_scratch_bytes(&self, s: &SchedPoint) -> u64 {
        let used = self.row_ops_through_memory();
        if used.is_empty() {
            return 0;
        }
        let per = if used.contains(&RowOp::ToA) { 6 } else { 4 };
        (s.wg as u64).div_ceil(32) * 256 * per
    }

    /// The row operations the body uses that WGSL takes through workgroup memory
    /// (`RowOp::through_memory`), each once, in a fixed order.
    pub fn row_ops_through_memory(&self) -> Vec<RowOp> {
        let mut used = Vec::new();
        walk_exprs(&self.body, &mut |x| {
            if let ExprKind::Coop {
                op: CoopOp::Rows(r),
                ..
            } = x.kind
            {
                if r.through_memory() && !used.contains(&r) {
                    used.push(r);
                }
            }
        });
        used.sort_by_key(|r| r.name());
        used
    }

    /// Whether the kernel, or a helper it calls, calls one of WGSL's builtins that no Rust
    /// method means (`MathFn::is_wgsl_only`).
    pub fn uses_wgsl_builtins(&self) -> bool {
        let mut found = false;
        let mut visit =
            |x: &Expr| found |= matches!(x.kind, ExprKind::Math(f, _) if f.is_wgsl_only());
        walk_exprs(&self.body, &mut visit);
        for h in self.used_helpers() {
            walk_exprs(&self.helpers[h].body, &mut visit);
        }
        found
    }

    /// Whether the body uses a cooperative matrix, which needs the device's
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX` (and `enable wgpu_cooperative_matrix;`).
    pub fn uses_coop(&self) -> bool {
        let mut found = self.locals.iter().any(|l| l.ty.is_coop());
        walk_exprs(&self.body, &mut |x| {
            found |= matches!(x.kind, ExprKind::Coop { .. })
        });
        found
    }

    /// Whether the kernel's results cannot depend on its workgroup size, so that it may run
    /// at any (`Kernel::workgroup_free` in forge-core): neither its body nor a helper it
    /// calls reads `WG`, `ITEMS` or `VEC`, a builtin other than `global_index()` and
    /// `global_id()`, workgroup memory, a barrier or a subgroup operation, and no local's
    /// type has a length over the schedule.
    pub fn workgroup_free(&self) -> bool {
        fn sched_len(t: &Ty) -> bool {
            match t {
                Ty::Array(e, len) => matches!(len, ConstLen::Sched { .. }) || sched_len(e),
                _ => false,
            }
        }
        let locals_free = |locals: &[Local]| !locals.iter().any(|l| l.shared || sched_len(&l.ty));
        let body_free = |body: &Block| {
            let mut free = true;
            walk_stmts(body, &mut |s| {
                if matches!(s, Stmt::Barrier { .. }) {
                    free = false;
                }
                stmt_exprs(s, &mut |e| {
                    walk_expr(e, &mut |x| match x.kind {
                        ExprKind::Sched(_) | ExprKind::Subgroup { .. } => free = false,
                        ExprKind::Builtin(b) | ExprKind::BuiltinComponent(b, _)
                            if !matches!(b, Builtin::GlobalIndex | Builtin::GlobalId) =>
                        {
                            free = false
                        }
                        _ => {}
                    })
                })
            });
            free
        };
        locals_free(&self.locals)
            && body_free(&self.body)
            && self.used_helpers().into_iter().all(|h| {
                let h = &self.helpers[h];
                locals_free(&h.locals) && body_free(&h.body)
            })
    }

    /// The LEN expression of each dimension of `threads`, each with its text: the option's,
    /// or else the first `#[out]` binding's length, then the first binding's (1-D).
    pub fn threads_dims(&self) -> Vec<(&LenExpr, String)> {
        if let Some((dims, _, _)) = &self.options.threads {
            return dims.iter().map(|(e, t)| (e, t.clone())).collect();
        }
        self.bindings
            .iter()
            .find(|b| b.access == Access::Out)
            .or(self.bindings.first())
            .map(|b| vec![(&b.len, b.len_text.clone())])
            .unwrap_or_default()
    }

    /// The LEN expression of a 1-D kernel's `threads` (the first dimension's of a grid).
    pub fn threads_len(&self) -> Option<&LenExpr> {
        self.threads_dims().first().map(|(e, _)| *e)
    }

    /// `indirect = count[0]`: the binding (by index) and the element the launch reads its
    /// number of invocations from; `None` for a kernel launched on a count known on the
    /// host, or where `check` refuses the option.
    pub fn indirect(&self) -> Option<(usize, u32)> {
        let (name, element, _) = self.options.indirect.as_ref()?;
        let b = self.bindings.iter().position(|b| b.name == *name)?;
        Some((b, *element))
    }

    pub fn threads_text(&self) -> String {
        if let Some((_, t, _)) = &self.options.threads {
            return t.clone();
        }
        self.threads_dims()
            .first()
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| "1".into())
    }

    /// The grid's dimensions: `threads`'s, else the declared workgroup's.
    pub fn dims(&self) -> usize {
        match &self.options.threads {
            Some((dims, _, _)) => dims.len().clamp(1, 3),
            None => self.options.workgroup.len().clamp(1, 3),
        }
    }

    /// The tuning space's workgroups, or the declared one alone.
    pub fn tune_workgroups(&self) -> Vec<Vec<u32>> {
        if self.options.tune_workgroup.is_empty() {
            vec![self.options.workgroup.clone()]
        } else {
            self.options
                .tune_workgroup
                .iter()
                .map(|(w, _)| w.clone())
                .collect()
        }
    }

    pub fn tune_items(&self) -> Vec<u32> {
        if self.options.tune_items.is_empty() {
            vec![1]
        } else {
            self.options.tune_items.clone()
        }
    }

    pub fn tune_vectors(&self) -> Vec<u32> {
        if self.options.tune_vector.is_empty() {
            vec![1]
        } else {
            self.options.tune_vector.clone()
        }
    }

    /// The default schedule: the declared workgroup, and the first items and vector values.
    pub fn default_schedule(&self) -> SchedPoint {
        SchedPoint {
            knobs: self.options.knobs.iter().map(|k| k.default).collect(),
            ..SchedPoint::new(
                &self.options.workgroup,
                self.tune_items()[0],
                self.tune_vectors()[0],
            )
        }
    }

    /// Every schedule the kernel can run with and be certified at: the default, then each
    /// point of the tuning space (every combination of the axes and the knobs that `keep`
    /// keeps), once each.
    pub fn schedules(&self) -> Vec<SchedPoint> {
        let mut out = vec![self.default_schedule()];
        for p in self.tune_product() {
            if self.keeps(&p) && !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// Whether `tune(keep = ..)` keeps `s` (every point, without `keep`).
    pub fn keeps(&self, s: &SchedPoint) -> bool {
        self.options.tune_keep.as_ref().is_none_or(|k| k.keeps(s))
    }

    /// Every combination of the tuning axes and the knobs, `keep` not applied, in the order
    /// of `forge_core::TuneSpace::candidates` (the last knob varies fastest).
    pub fn tune_product(&self) -> Vec<SchedPoint> {
        let mut points: Vec<SchedPoint> = Vec::new();
        for wg in self.tune_workgroups() {
            for items in self.tune_items() {
                for vec in self.tune_vectors() {
                    points.push(SchedPoint::new(&wg, items, vec));
                }
            }
        }
        for k in &self.options.knobs {
            let values = if k.tune.is_empty() {
                vec![k.default]
            } else {
                k.tune.clone()
            };
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.knobs.push(*v);
                        q
                    })
                })
                .collect();
        }
        points
    }
}

impl Kernel<'_> {
    /// The builtins the body reads, whole or by component, in the order it first reads them.
    pub fn used_builtins(&self) -> Vec<Builtin> {
        let mut used = Vec::new();
        walk_exprs(&self.body, &mut |x| {
            if let ExprKind::Builtin(b) | ExprKind::BuiltinComponent(b, _) = x.kind {
                if !used.contains(&b) {
                    used.push(b);
                }
            }
        });
        used
    }

    /// The subgroup builtins the body reads, in a fixed order; WGSL's row operations read
    /// the subgroup's id and the lane's (their scratch and their row).
    pub fn used_subgroup_builtins(&self) -> Vec<Builtin> {
        let mut used = Vec::new();
        if !self.row_ops_through_memory().is_empty() {
            used.extend([Builtin::SubgroupInvocationId, Builtin::SubgroupId]);
        }
        walk_exprs(&self.body, &mut |x| {
            if let ExprKind::Builtin(b) = x.kind {
                if b.is_subgroup() && !used.contains(&b) {
                    used.push(b);
                }
            }
        });
        used.sort_by_key(|b| *b as u8);
        used
    }

    /// The `#[forge_struct]`s the kernel or a helper it calls has a value of, in
    /// declaration order.
    pub fn used_structs(&self) -> Vec<usize> {
        let mut used = vec![false; self.structs.len()];
        let mut mark = |t: &Ty| {
            let mut t = t;
            while let Ty::Array(e, _) = t {
                t = e;
            }
            if let Ty::Struct(s) = t {
                used[*s] = true;
            }
        };
        for b in &self.bindings {
            mark(&b.elem_ty());
        }
        let mut bodies: Vec<(&[Local], &Block)> = vec![(&self.locals, &self.body)];
        for h in self.used_helpers() {
            let h = &self.helpers[h];
            if let Some(r) = &h.ret {
                mark(r);
            }
            bodies.push((&h.locals, &h.body));
        }
        for (locals, body) in bodies {
            locals.iter().for_each(|l| mark(&l.ty));
            walk_exprs(body, &mut |x| mark(&x.ty));
        }
        (0..self.structs.len()).filter(|s| used[*s]).collect()
    }

    /// Whether any value of the kernel, or of a helper it calls, is an `f16` or holds some.
    pub fn uses_f16(&self) -> bool {
        self.uses_scalar(Scalar::F16)
    }

    /// Whether any value of the kernel, or of a helper it calls, is an `f64` or holds some.
    pub fn uses_f64(&self) -> bool {
        self.uses_scalar(Scalar::F64)
    }

    fn uses_scalar(&self, scalar: Scalar) -> bool {
        let has = |t: &Ty| {
            let mut t = t;
            while let Ty::Array(e, _) = t {
                t = e;
            }
            t.component() == Some(scalar) || matches!(t, Ty::Coop(s, _) if *s == scalar)
        };
        let body_has = |locals: &[Local], body: &Block| {
            let mut found = locals.iter().any(|l| has(&l.ty));
            walk_exprs(body, &mut |x| found |= has(&x.ty));
            found
        };
        self.bindings.iter().any(|b| b.elem == scalar)
            || body_has(&self.locals, &self.body)
            || self.used_helpers().into_iter().any(|h| {
                let h = &self.helpers[h];
                h.ret.as_ref().is_some_and(has) || body_has(&h.locals, &h.body)
            })
    }

    /// The type of a place of a function whose locals are `locals`, from its root local's
    /// or binding's type.
    pub fn place_ty(&self, locals: &[Local], place: &Place) -> Ty {
        match place {
            Place::Local(id) => locals[*id].ty.clone(),
            Place::LocalIndex(id, idx) => {
                let mut t = locals[*id].ty.clone();
                for _ in idx {
                    if let Ty::Array(e, _) = t {
                        t = *e;
                    }
                }
                t
            }
            Place::Binding(b, _) => self.bindings[*b].elem_ty(),
            Place::Field(base, f) => match self.place_ty(locals, base) {
                Ty::Struct(s) => self.structs[s].fields[*f].ty.clone(),
                t => t,
            },
            Place::Component(base, _) => match self.place_ty(locals, base) {
                Ty::Vector(s, _) => Ty::Scalar(s),
                t => t,
            },
            Place::Index(base, _) => match self.place_ty(locals, base) {
                Ty::Array(e, _) => *e,
                t => t,
            },
        }
    }
}

/// `types(T = [..])` of a generic kernel, as written: the parameter, and each instance's
/// type.
pub struct GenericTypes {
    pub param: proc_macro2::Ident,
    pub types: Vec<(proc_macro2::Ident, Scalar)>,
}

/// Workgroup memory sizes, beside the structs they read (a type alone cannot size a struct).
impl Ty {
    /// The bytes a value of this type takes in workgroup memory with schedule `s`, as WGSL
    /// lays it out (naga's sizes: a `vec3` as a `vec4` in an array, a struct as its
    /// `#[forge_struct]` layout); `None` where an array's length overflows or divides by
    /// zero. The CUDA emitter's layout never takes more (its `vec3` is 12 bytes).
    pub fn workgroup_bytes(&self, structs: &[StructDef], s: &SchedPoint) -> Option<u64> {
        match self {
            Ty::Struct(st) => Some(structs[*st].size as u64),
            Ty::Scalar(sc) => Some(sc.size() as u64),
            Ty::Vector(sc, n) => Some(sc.size() as u64 * if *n == 3 { 4 } else { *n as u64 }),
            // A lane's share: a subgroup of 32 holds the 256 elements, 8 a lane (workgroup
            // memory refuses cooperative matrices: `check`'s `coop_not_shared`).
            Ty::Coop(sc, _) => Some(8 * sc.size() as u64),
            Ty::Array(e, len) => {
                let n = match len {
                    ConstLen::Lit(n) => *n as u64,
                    ConstLen::Sched(c) => c.eval(s)? as u64,
                };
                n.checked_mul(e.workgroup_bytes(structs, s)?)
            }
        }
    }
}
