//! Stage 3, check: every rule a kernel must satisfy beyond parsing and typing. Each rule is
//! one function that reports at the narrowest span with a hint. The emitters assume a model
//! that passed these checks.

use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::Span;

/// wgpu's default (portable) `max_storage_buffers_per_shader_stage`.
pub const PORTABLE_STORAGE_BUFFERS: usize = 8;
/// wgpu's default (portable) `max_compute_workgroup_storage_size`.
pub const PORTABLE_WORKGROUP_BYTES: u64 = 16384;
/// wgpu's default (portable) `max_compute_invocations_per_workgroup`.
pub const PORTABLE_WORKGROUP_SIZE: u32 = 256;

pub fn check(cx: &Ctxt, k: &Kernel<'_>) {
    read_only_not_written(cx, k);
    outputs_written(cx, k);
    storage_binding_limit(cx, k);
    workgroup_size(cx, k);
    workgroup_memory_limit(cx, k);
    workgroup_memory_zeroed(cx, k);
    has_threads(cx, k);
    writes_something(cx, k);
    cases_name_scalars(cx, k);
    no_f16_yet(cx, k);
    array_values_only_in_let(cx, k);
    atomic_store_is_a_statement(cx, k);
    atomic_arrays_only_atomically(cx, k);
    uniformity::barriers_uniform(cx, k);
}

fn assigned_bindings(k: &Kernel<'_>) -> Vec<(usize, Span)> {
    let mut out = Vec::new();
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Assign {
            place: Place::Binding(b, _),
            span,
            ..
        } = s
        {
            out.push((*b, *span));
        }
    });
    out
}

/// A read-only binding (`&[T; LEN]`) is written.
fn read_only_not_written(cx: &Ctxt, k: &Kernel<'_>) {
    for (b, span) in assigned_bindings(k) {
        let binding = &k.bindings[b];
        if binding.access == Access::Read {
            cx.error(
                span,
                format!(
                    "cannot write to `{}`, a read-only binding; declare it `&mut [{}; {}]` to update it in place, or `#[out]` for a pure output",
                    binding.name,
                    binding.elem.wgsl(),
                    binding.len_text
                ),
            );
        }
    }
}

/// An `#[out]` binding is never written: its result would be all zeros.
fn outputs_written(cx: &Ctxt, k: &Kernel<'_>) {
    let written = assigned_bindings(k);
    for (i, b) in k.bindings.iter().enumerate() {
        if b.access == Access::Out && !b.atomic && !written.iter().any(|(w, _)| *w == i) {
            cx.error(
                b.span,
                format!(
                    "`#[out]` binding `{}` is never written; write it with `{}[i] = ...`, or make it an input with `&[{}; {}]`",
                    b.name,
                    b.name,
                    b.elem.wgsl(),
                    b.len_text
                ),
            );
        }
    }
}

/// More storage bindings than every adapter supports.
fn storage_binding_limit(cx: &Ctxt, k: &Kernel<'_>) {
    if let Some(b) = k.bindings.get(PORTABLE_STORAGE_BUFFERS) {
        cx.error(
            b.span,
            format!(
                "this kernel has {} storage bindings, over the portable limit of {PORTABLE_STORAGE_BUFFERS} (`max_storage_buffers_per_shader_stage`); pack several arrays into one binding",
                k.bindings.len()
            ),
        );
    }
}

/// The workgroup size is zero or over the portable limit.
fn workgroup_size(cx: &Ctxt, k: &Kernel<'_>) {
    let wg = k.options.workgroup;
    if wg == 0 || wg > PORTABLE_WORKGROUP_SIZE {
        cx.error(
            k.options.workgroup_span,
            format!("`workgroup = {wg}` is out of range; use 1 to {PORTABLE_WORKGROUP_SIZE} (`max_compute_invocations_per_workgroup`)"),
        );
    }
    let span = k.options.tune_span.unwrap_or(k.options.workgroup_span);
    let lists = [
        ("workgroup", &k.options.tune_workgroup),
        ("items", &k.options.tune_items),
        ("vector", &k.options.tune_vector),
    ];
    for (name, list) in lists {
        if list.contains(&0) {
            cx.error(
                span,
                format!("`tune({name} = ..)` contains 0; every value must be at least 1"),
            );
        }
    }
    if k.options.tune_workgroup.iter().any(|w| *w > 1024) {
        cx.error(
            span,
            "`tune(workgroup = ..)` has a value over 1024, which no adapter supports",
        );
    }
}

fn shared_bytes(ty: &Ty, wg: u32, items: u32, vec: u32) -> Option<u64> {
    match ty {
        Ty::Scalar(s) => Some(s.size() as u64),
        // vec3 is aligned and sized like vec4 in arrays.
        Ty::Vector(s, n) => Some(s.size() as u64 * if *n == 3 { 4 } else { *n as u64 }),
        Ty::Array(e, len) => {
            let n = match len {
                ConstLen::Lit(n) => *n as u64,
                ConstLen::Sched { wgsl, .. } => eval_sched(wgsl, wg, items, vec)?,
            };
            Some(n * shared_bytes(e, wg, items, vec)?)
        }
    }
}

/// Evaluates a WGSL length text over `WG`, `ITEMS`, `VEC` (`(WG * 2u)`): a tiny
/// recursive-descent parser, since the text came from `lower::const_len`.
pub fn eval_sched(text: &str, wg: u32, items: u32, vec: u32) -> Option<u64> {
    fn atom(t: &[char], i: &mut usize, env: (u64, u64, u64)) -> Option<u64> {
        while t.get(*i) == Some(&' ') {
            *i += 1;
        }
        if t.get(*i) == Some(&'(') {
            *i += 1;
            let v = sum(t, i, env)?;
            while t.get(*i) == Some(&' ') {
                *i += 1;
            }
            *i += 1; // ')'
            return Some(v);
        }
        let start = *i;
        while t.get(*i).is_some_and(|c| c.is_alphanumeric() || *c == '_') {
            *i += 1;
        }
        let word: String = t[start..*i].iter().collect();
        match word.as_str() {
            "WG" => Some(env.0),
            "ITEMS" => Some(env.1),
            "VEC" => Some(env.2),
            w => w.trim_end_matches('u').parse().ok(),
        }
    }
    fn prod(t: &[char], i: &mut usize, env: (u64, u64, u64)) -> Option<u64> {
        let mut v = atom(t, i, env)?;
        loop {
            while t.get(*i) == Some(&' ') {
                *i += 1;
            }
            match t.get(*i) {
                Some('*') => {
                    *i += 1;
                    v = v.checked_mul(atom(t, i, env)?)?
                }
                Some('/') => {
                    *i += 1;
                    v = v.checked_div(atom(t, i, env)?)?
                }
                _ => return Some(v),
            }
        }
    }
    fn sum(t: &[char], i: &mut usize, env: (u64, u64, u64)) -> Option<u64> {
        let mut v = prod(t, i, env)?;
        loop {
            while t.get(*i) == Some(&' ') {
                *i += 1;
            }
            match t.get(*i) {
                Some('+') => {
                    *i += 1;
                    v = v.checked_add(prod(t, i, env)?)?
                }
                Some('-') => {
                    *i += 1;
                    v = v.checked_sub(prod(t, i, env)?)?
                }
                _ => return Some(v),
            }
        }
    }
    let chars: Vec<char> = text.chars().collect();
    sum(&chars, &mut 0, (wg as u64, items as u64, vec as u64))
}

/// Workgroup memory over the portable limit, for any schedule of the tuning space.
fn workgroup_memory_limit(cx: &Ctxt, k: &Kernel<'_>) {
    for wg in k.tune_workgroups() {
        for items in k.tune_items() {
            for vec in k.tune_vectors() {
                let mut total = 0u64;
                for l in k.locals.iter().filter(|l| l.shared) {
                    let Some(bytes) = shared_bytes(&l.ty, wg, items, vec) else {
                        cx.error(l.span, "cannot evaluate the length of this workgroup array");
                        return;
                    };
                    total += bytes;
                    if total > PORTABLE_WORKGROUP_BYTES {
                        cx.error(
                            l.span,
                            format!(
                                "workgroup memory reaches {total} bytes with WG={wg}, ITEMS={items}, VEC={vec}, over the portable limit of {PORTABLE_WORKGROUP_BYTES} bytes (`max_compute_workgroup_storage_size`); use smaller tiles"
                            ),
                        );
                        return;
                    }
                }
            }
        }
    }
}

/// Workgroup memory starts zeroed in WGSL; a non-zero initial value would be silently
/// ignored, so it is rejected.
fn workgroup_memory_zeroed(cx: &Ctxt, k: &Kernel<'_>) {
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Let {
            local,
            init: Some(e),
            ..
        } = s
        {
            if !k.locals[*local].shared {
                return;
            }
            let zero = match &e.kind {
                ExprKind::ArrayRepeat(v) => is_zero(v),
                _ => false,
            };
            if !zero {
                cx.error(e.span, "workgroup memory starts zeroed; initialise it with zeros, such as `[0.0f32; WG]`, and write values in the kernel");
            }
        }
    });
}

/// A literal zero, or a vector of them.
pub fn is_zero(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::IntLit(x) => *x == 0,
        ExprKind::FloatLit(x) => *x == 0.0 && x.is_sign_positive(),
        ExprKind::BoolLit(b) => !b,
        ExprKind::VecNew(args) => args.iter().all(is_zero),
        _ => false,
    }
}

/// The number of invocations must be known.
fn has_threads(cx: &Ctxt, k: &Kernel<'_>) {
    if k.threads_len().is_none() {
        cx.error(
            k.func.sig.ident.span(),
            "cannot tell how many invocations to launch; add `threads = EXPR` to `#[forge_kernel(...)]`",
        );
    }
}

/// A kernel without a writable binding computes nothing observable.
fn writes_something(cx: &Ctxt, k: &Kernel<'_>) {
    if !k.bindings.iter().any(|b| b.access != Access::Read) {
        cx.error(
            k.func.sig.ident.span(),
            "this kernel has no writable binding, so its work is lost; add an `#[out]` or `&mut` binding",
        );
    }
}

/// `case(name = value)` must name scalar parameters, and give every one of them.
fn cases_name_scalars(cx: &Ctxt, k: &Kernel<'_>) {
    for case in &k.options.cases {
        for (id, _) in case {
            if !k.scalars.iter().any(|s| *id == s.name) {
                cx.error(
                    id.span(),
                    format!("`case` names `{id}`, which is not a scalar parameter of this kernel"),
                );
            }
        }
        for s in &k.scalars {
            if !case.iter().any(|(id, _)| *id == s.name) {
                let span = case
                    .first()
                    .map(|(id, _)| id.span())
                    .unwrap_or(k.func.sig.ident.span());
                cx.error(
                    span,
                    format!(
                        "this `case` does not give `{}`; every scalar parameter needs a value",
                        s.name
                    ),
                );
            }
        }
    }
}

/// f16 needs an f16-capable CPU oracle, which is not built yet.
fn no_f16_yet(cx: &Ctxt, k: &Kernel<'_>) {
    for b in &k.bindings {
        if b.elem == Scalar::F16 {
            cx.error(
                b.elem_span,
                "`f16` bindings are not supported yet; use `f32`",
            );
        }
    }
    for l in &k.locals {
        if matches!(l.ty, Ty::Scalar(Scalar::F16)) {
            cx.error(l.span, "`f16` locals are not supported yet; use `f32`");
        }
    }
}

/// Array values (`[x; N]`, `[a, b]`) only initialise locals: WGSL has no array repeat
/// expression, so the emitters expand them at the `let`.
fn array_values_only_in_let(cx: &Ctxt, k: &Kernel<'_>) {
    let check_expr = |e: &Expr, top_ok: bool| {
        let mut first = true;
        walk_expr(e, &mut |x| {
            let top = std::mem::take(&mut first);
            if matches!(x.kind, ExprKind::ArrayRepeat(_) | ExprKind::ArrayList(_))
                && !(top && top_ok)
            {
                cx.error(
                    x.span,
                    "array values can only initialise a `let`; declare the array first",
                );
            }
        });
    };
    walk_stmts(&k.body, &mut |s| match s {
        Stmt::Let { init: Some(e), .. } => check_expr(e, true),
        _ => stmt_exprs(s, &mut |e| check_expr(e, false)),
    });
}

/// `x[i].store(v)` gives no value, so it must stand alone as a statement.
fn atomic_store_is_a_statement(cx: &Ctxt, k: &Kernel<'_>) {
    walk_stmts(&k.body, &mut |s| {
        let top = match s {
            Stmt::Eval { expr, .. } => Some(expr as *const Expr),
            _ => None,
        };
        stmt_exprs(s, &mut |e| {
            walk_expr(e, &mut |x| {
                if let ExprKind::Atomic {
                    op: AtomicOp::Store,
                    ..
                } = x.kind
                {
                    if top != Some(x as *const Expr) {
                        cx.error(
                            x.span,
                            "`store` gives no value; write it as a statement: `a[i].store(v);`",
                        );
                    }
                }
            })
        });
    });
}

/// A workgroup array used atomically is made of atomics: every access must be atomic.
fn atomic_arrays_only_atomically(cx: &Ctxt, k: &Kernel<'_>) {
    let plain = |id: LocalId, span: Span| {
        let l = &k.locals[id];
        if l.atomic {
            cx.error(
                span,
                format!("`{}` is used atomically elsewhere, so every access must be atomic; read it with `{}[i].load()` and write it with `{}[i].store(v)`", l.name, l.name, l.name),
            );
        }
    };
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Assign {
            place: Place::LocalIndex(id, _) | Place::Local(id),
            span,
            ..
        } = s
        {
            plain(*id, *span);
        }
        stmt_exprs(s, &mut |e| {
            walk_expr(e, &mut |x| {
                if let ExprKind::Local(id) = x.kind {
                    plain(id, x.span);
                }
            })
        });
    });
}

/// Uniformity: where barriers may sit. The rules are WGSL's, restricted to our language.
pub mod uniformity {
    use super::*;

    pub struct Analysis {
        /// Locals whose value may differ between invocations of a workgroup.
        pub nonuniform: Vec<bool>,
    }

    struct State<'k> {
        k: &'k Kernel<'k>,
        nonuniform: Vec<bool>,
        /// Loops whose iterations some invocations may leave early.
        loop_divergent: Vec<bool>,
        changed: bool,
        /// Set once a `return` under non-uniform control flow has run.
        returned_divergently: Option<Span>,
        /// Barrier errors, collected on the final pass.
        errors: Option<Vec<(Span, String)>>,
    }

    pub fn expr_uniform(e: &Expr, nonuniform: &[bool]) -> bool {
        let mut ok = true;
        walk_expr(e, &mut |x| match &x.kind {
            ExprKind::LoadBinding(..) | ExprKind::Atomic { .. } => ok = false,
            ExprKind::Local(id) if nonuniform[*id] => ok = false,
            ExprKind::Builtin(b) | ExprKind::BuiltinComponent(b, _) if !b.uniform() => ok = false,
            _ => {}
        });
        ok
    }

    impl State<'_> {
        fn mark(&mut self, id: LocalId) {
            if !self.nonuniform[id] {
                self.nonuniform[id] = true;
                self.changed = true;
            }
        }

        fn uni(&self, e: &Expr) -> bool {
            // Reads of workgroup memory differ between invocations, as WGSL assumes.
            let mut shared = false;
            walk_expr(e, &mut |x| {
                if let ExprKind::Local(id) = x.kind {
                    if self.k.locals[id].shared {
                        shared = true;
                    }
                }
            });
            !shared && expr_uniform(e, &self.nonuniform)
        }

        fn block(&mut self, b: &Block, ctrl: Option<Span>) {
            for s in b {
                self.stmt(s, ctrl);
            }
        }

        /// `ctrl` is `None` in uniform control flow, or the span of what made it non-uniform.
        fn stmt(&mut self, s: &Stmt, ctrl: Option<Span>) {
            let ctrl = ctrl.or(self.returned_divergently);
            match s {
                Stmt::Let { local, init, .. } => {
                    if ctrl.is_some()
                        || init.as_ref().is_some_and(|e| !self.uni(e))
                        || self.k.locals[*local].shared
                    {
                        self.mark(*local);
                    }
                }
                Stmt::Assign { place, value, .. } => {
                    let id = match place {
                        Place::Local(id) => Some((*id, true)),
                        Place::LocalIndex(id, idx) => Some((*id, idx.iter().all(|i| self.uni(i)))),
                        Place::Binding(..) => None,
                    };
                    if let Some((id, idx_uniform)) = id {
                        if ctrl.is_some() || !idx_uniform || !self.uni(value) {
                            self.mark(id);
                        }
                    }
                }
                Stmt::If {
                    cond, then, els, ..
                } => {
                    let inner = ctrl.or((!self.uni(cond)).then_some(cond.span));
                    self.block(then, inner);
                    if let Some(e) = els {
                        self.block(e, inner);
                    }
                }
                Stmt::For {
                    var,
                    start,
                    end,
                    body,
                    id,
                    span,
                    ..
                } => {
                    let bounds = self.uni(start) && self.uni(end);
                    if ctrl.is_some() || !bounds {
                        self.mark(*var);
                    }
                    let inner = ctrl
                        .or((!bounds).then_some(start.span))
                        .or(self.loop_divergent[*id].then_some(*span));
                    self.block(body, inner);
                }
                Stmt::While {
                    cond,
                    body,
                    id,
                    span,
                } => {
                    // The condition is evaluated after the body too: iterate for its locals.
                    let inner = ctrl
                        .or((!self.uni(cond)).then_some(cond.span))
                        .or(self.loop_divergent[*id].then_some(*span));
                    self.block(body, inner);
                    let inner = inner.or((!self.uni(cond)).then_some(cond.span));
                    self.block(body, inner);
                }
                Stmt::Loop { body, id, span } => {
                    let inner = ctrl.or(self.loop_divergent[*id].then_some(*span));
                    self.block(body, inner);
                }
                Stmt::Break { target, span } | Stmt::Continue { target, span } => {
                    if ctrl.is_some() && !self.loop_divergent[*target] {
                        self.loop_divergent[*target] = true;
                        self.changed = true;
                        let _ = span;
                    }
                }
                Stmt::Return { span } => {
                    if ctrl.is_some() && self.returned_divergently.is_none() {
                        self.returned_divergently = Some(*span);
                    }
                }
                Stmt::Eval { .. } | Stmt::ReturnValue { .. } => {}
                Stmt::Barrier { kind, span } => {
                    if let (Some(errors), Some(why)) = (&mut self.errors, ctrl) {
                        let name = match kind {
                            Barrier::Workgroup => "workgroup_barrier()",
                            Barrier::Storage => "storage_barrier()",
                        };
                        let _ = why;
                        errors.push((
                            *span,
                            format!(
                                "`{name}` sits in non-uniform control flow: an enclosing condition, loop exit or earlier `return` depends on values that differ between invocations; base the control flow on scalar parameters, literals, `WG`/`ITEMS`/`VEC` and `workgroup_index()` only"
                            ),
                        ));
                    }
                }
            }
        }
    }

    pub fn analyse(k: &Kernel<'_>) -> Analysis {
        let mut st = State {
            k,
            nonuniform: vec![false; k.locals.len()],
            loop_divergent: vec![false; k.loops],
            changed: true,
            returned_divergently: None,
            errors: None,
        };
        while st.changed {
            st.changed = false;
            st.returned_divergently = None;
            st.block(&k.body, None);
        }
        Analysis {
            nonuniform: st.nonuniform,
        }
    }

    /// A barrier in non-uniform control flow.
    pub fn barriers_uniform(cx: &Ctxt, k: &Kernel<'_>) {
        let a = analyse(k);
        let mut st = State {
            k,
            nonuniform: a.nonuniform,
            loop_divergent: vec![false; k.loops],
            changed: true,
            returned_divergently: None,
            errors: None,
        };
        while st.changed {
            st.changed = false;
            st.returned_divergently = None;
            st.block(&k.body, None);
        }
        st.errors = Some(Vec::new());
        st.returned_divergently = None;
        st.block(&k.body, None);
        for (span, msg) in st.errors.unwrap_or_default() {
            cx.error(span, msg);
        }
    }
}
