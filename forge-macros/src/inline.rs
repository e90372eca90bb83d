//! Inline, a stage (layer 3): a call of a `#[forge_fn]` helper that takes arrays by reference, or
//! holds barriers, subgroup operations or builtins, is replaced by the helper's body, with
//! the caller's arrays in place of the reference parameters.
//!
//! Why inline rather than pass WGSL pointers (`ptr<workgroup, array<f32, 256>>`):
//! - a register array (see `unroll`) is a set of separate locals once its indices are
//!   constant, and no pointer can stand for them; inlined, the helper's `acc[k]` is the
//!   caller's `acc_3`;
//! - the backends handle pointer parameters unevenly: HLSL has no pointers, and naga passes
//!   a function-space pointer argument there as an `inout` copy; workgroup pointers need
//!   WGSL's `unrestricted_pointer_parameters` on some targets;
//! - barriers and subgroup operations are points where the whole workgroup meets: inlined,
//!   `check` proves uniformity at each call site, and the oracle runs them where the kernel
//!   does, without a function boundary between invocations.
//!
//! Rust's order of evaluation is kept: the helper's body runs before the statement that
//! called it, as the call is evaluated before what the statement does with its value. A
//! call on the right of `&&`/`||` would then run when Rust skips it, so it is refused.
//! A `return` inside the body becomes an assignment of the result, with the rest of the body
//! moved under an `if` (or, inside a loop, a `break` and a flag).

use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::Span;

/// The function calls are inlined into: its locals, and the counters of its loops and
/// subgroup operations, which the inlined bodies extend.
pub struct Func<'a> {
    pub locals: &'a mut Vec<Local>,
    pub loops: &'a mut usize,
    pub subgroup_ops: &'a mut usize,
}

/// Inlines the calls of the inline helpers before `h` into its body, then settles what
/// its own callers need: the helpers it calls, and whether it is inlined itself (it takes
/// an array by reference, or holds a barrier, a subgroup operation or a builtin, which are
/// the kernel's).
pub fn helper(cx: &Ctxt, helpers: &[HelperFn], h: &mut HelperFn) {
    let mut f = Func {
        locals: &mut h.locals,
        loops: &mut h.loops,
        subgroup_ops: &mut h.subgroup_ops,
    };
    calls(cx, helpers, &mut f, &mut h.body);
    let mut called: Vec<usize> = Vec::new();
    let mut kernel_only = h.body.iter().any(contains_collective);
    walk_exprs(&h.body, &mut |x| match x.kind {
        ExprKind::Call(c, _) => called.push(c),
        // Builtins and cooperative matrices are the kernel's: the body exists only inlined.
        ExprKind::Builtin(_) | ExprKind::BuiltinComponent(..) | ExprKind::Coop { .. } => {
            kernel_only = true
        }
        _ => {}
    });
    called.sort();
    called.dedup();
    h.calls = called;
    // A length parameter has a value only at a call, so the body exists only inlined.
    h.inline = kernel_only || h.refs.iter().any(Option::is_some) || !h.lens.is_empty();
    settle_used(h);
}

/// Whether each of `h`'s length parameters is used where a call must give it a length
/// known at compile time: as a value, or in the type of a local, the result or a
/// parameter taken by value. Its reference parameters' types alone need none: a binding
/// given to one keeps its own length.
fn settle_used(h: &mut HelperFn) {
    for i in 0..h.lens.len() {
        let p = h.lens[i].local;
        let mut used = h.ret.as_ref().is_some_and(|t| t.mentions(p));
        used |= h.locals.iter().enumerate().any(|(id, l)| {
            let by_ref = h
                .params
                .iter()
                .zip(&h.refs)
                .any(|(q, r)| *q == id && r.is_some());
            !by_ref && l.ty.mentions(p)
        });
        walk_exprs(&h.body, &mut |x| {
            used |= matches!(x.kind, ExprKind::Local(id) if id == p)
        });
        h.lens[i].used = used;
    }
}

/// Inlines every call of an inline helper in `body`.
pub fn calls(cx: &Ctxt, helpers: &[HelperFn], f: &mut Func<'_>, body: &mut Block) {
    if !helpers.iter().any(|h| h.inline) {
        return;
    }
    let mut st = Inliner { cx, helpers, f };
    *body = st.fold_block(std::mem::take(body));
}

struct Inliner<'c, 'f, 'g> {
    cx: &'c Ctxt,
    helpers: &'c [HelperFn],
    f: &'f mut Func<'g>,
}

/// A typed expression made by the inliner (after inference: the variable is unused).
fn made(kind: ExprKind, ty: Ty, span: Span) -> Expr {
    Expr {
        kind,
        ty,
        span,
        end: span,
        tv: 0,
    }
}

/// Whether an expression calls an inline helper.
fn calls_inline(helpers: &[HelperFn], e: &Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let ExprKind::Call(h, _) = x.kind {
            found |= helpers[h].inline;
        }
    });
    found
}

impl Fold for Inliner<'_, '_, '_> {
    fn fold_stmt(&mut self, s: Stmt, out: &mut Block) {
        match s {
            Stmt::Assign {
                place,
                op,
                value,
                span,
            } => {
                // The value is evaluated before the place, as Rust does for `=` and for
                // compound assignment of primitive types.
                let value = self.hoist(value, out);
                let place = self.fold_place(place, out);
                out.push(Stmt::Assign {
                    place,
                    op,
                    value,
                    span,
                })
            }
            Stmt::While { cond, body, id } if calls_inline(self.helpers, &cond) => {
                // The condition runs before every iteration: `loop { <call>; if !c { break; } .. }`.
                let span = cond.span;
                let mut inner = Vec::new();
                let cond = self.hoist(cond, &mut inner);
                let not = made(ExprKind::Unary(UnOp::Not, Box::new(cond)), Ty::BOOL, span);
                inner.push(Stmt::If {
                    cond: not,
                    then: vec![Stmt::Break { target: id, span }],
                    els: None,
                });
                inner.extend(self.fold_block(body));
                out.push(Stmt::Loop { body: inner, id })
            }
            Stmt::Eval {
                expr:
                    Expr {
                        kind: ExprKind::Call(h, args),
                        span,
                        ..
                    },
            } if self.helpers[h].inline => {
                let args = args.into_iter().map(|a| self.hoist(a, out)).collect();
                self.inline(h, args, span, out);
            }
            s => {
                let s = fold_stmt_children(self, s, out);
                out.push(s)
            }
        }
    }

    fn fold_expr(&mut self, e: Expr, out: &mut Block) -> Expr {
        self.hoist(e, out)
    }
}

impl Inliner<'_, '_, '_> {
    /// Inlines the calls inside `e` (innermost and leftmost first, as Rust evaluates
    /// them) into `out`, and gives `e` with each call replaced by its result.
    fn hoist(&mut self, mut e: Expr, out: &mut Block) -> Expr {
        if !calls_inline(self.helpers, &e) {
            return e;
        }
        if let ExprKind::Binary(op @ (BinOp::And | BinOp::Or), _, rhs) = &e.kind {
            if calls_inline(self.helpers, rhs) {
                let sym = op.wgsl();
                self.cx.error_range(
                    rhs.span,
                    rhs.end,
                    format!("this helper call on the right of `{sym}` would run even where `{sym}` skips it, since the helper's body is inlined before the condition; call it first, `let v = ..;`, and use `v` in the condition"),
                );
                return e;
            }
        }
        let span = e.span;
        match &mut e.kind {
            ExprKind::Call(h, args) if self.helpers[*h].inline => {
                let h = *h;
                let args: Vec<Expr> = std::mem::take(args)
                    .into_iter()
                    .map(|a| self.hoist(a, out))
                    .collect();
                return self.inline(h, args, span, out).unwrap_or(e);
            }
            _ => e.each_child_mut(|x| *x = self.hoist(x.take(), out)),
        }
        e
    }

    /// A new local of the function, copied from a helper's.
    fn local(&mut self, l: Local) -> LocalId {
        self.f.locals.push(l);
        self.f.locals.len() - 1
    }

    /// A hidden local of type `ty`.
    fn hidden(&mut self, base: &'static str, name: String, ty: Ty, span: Span) -> LocalId {
        self.local(Local {
            name,
            ty,
            mutable: true,
            shared: false,
            span,
            hidden: Some(base),
            by_ref: None,
            assigned: true,
            atomic: false,
        })
    }

    /// Puts helper `h`'s body into `out` with `args`, and gives the local that holds its
    /// result, if it returns one.
    /// Puts helper `h`'s body into `out` with `args`, and gives what stands for its result:
    /// the local that holds it, or the returned expression itself when the body returns
    /// only at its end and the value reads no memory.
    fn inline(&mut self, h: usize, args: Vec<Expr>, span: Span, out: &mut Block) -> Option<Expr> {
        let helper = &self.helpers[h];
        // Every local of the helper becomes one of the function, but reference
        // parameters, which become the caller's arrays, and parameters that are never
        // assigned and get a literal or a name, which are that argument.
        let mut map: Vec<LocalId> = vec![usize::MAX; helper.locals.len()];
        let mut subst: Vec<Option<Expr>> = vec![None; helper.locals.len()];
        // Reference parameters given a binding: their accesses become the binding's.
        let mut bind: Vec<Option<usize>> = vec![None; helper.locals.len()];
        // The lengths the arguments give the length parameters, which are their value.
        let mut lens = Vec::new();
        for (p, arg) in helper.params.iter().zip(&args) {
            if !matches!(arg.kind, ExprKind::BindingRef(_)) {
                // A disagreement was refused where the call was lowered.
                let _ = bind_lens(&helper.locals[*p].ty, &arg.ty, &mut lens);
            }
        }
        for lp in &helper.lens {
            subst[lp.local] = Some(match lens.iter().find(|(p, _)| *p == lp.local) {
                Some((_, len)) => len_value(len, span),
                // Given only bindings, and read nowhere (`settle_used`).
                None => made(ExprKind::IntLit(0), Ty::Scalar(Scalar::U32), span),
            });
        }
        for ((p, by_ref), arg) in helper.params.iter().zip(&helper.refs).zip(&args) {
            let l = &helper.locals[*p];
            if by_ref.is_some() {
                match arg.kind {
                    ExprKind::Local(id) => map[*p] = id,
                    ExprKind::BindingRef(b) => bind[*p] = Some(b),
                    _ => {}
                }
            } else if !l.mutable && !matches!(l.ty, Ty::Array(..)) && is_name_or_literal(arg) {
                subst[*p] = Some(arg.clone());
            }
        }
        for (i, l) in helper.locals.iter().enumerate() {
            if map[i] == usize::MAX && subst[i].is_none() {
                // A parameter given a binding keeps a local only so that every id maps:
                // its accesses become the binding's, so it holds no array.
                let ty = match (&l.ty, bind[i]) {
                    (Ty::Array(e, _), Some(_)) => (**e).clone(),
                    (t, _) => t.subst(&lens),
                };
                map[i] = self.local(Local {
                    by_ref: None,
                    ty,
                    ..l.clone()
                });
            }
        }
        let loops = *self.f.loops;
        *self.f.loops += helper.loops;
        let ops = *self.f.subgroup_ops;
        *self.f.subgroup_ops += helper.subgroup_ops;
        let mut remap = Remap {
            map: &map,
            subst: &subst,
            bind: &bind,
            lens: &lens,
            whole: None,
            loops,
            ops,
        };
        for ((p, by_ref), arg) in helper.params.iter().zip(&helper.refs).zip(args) {
            if by_ref.is_none() && subst[*p].is_none() {
                out.push(Stmt::Let {
                    local: map[*p],
                    init: Some(arg),
                });
            }
        }
        // A body that returns only at its end, a value that reads no memory: the value.
        if let Some((Stmt::ReturnValue { value }, rest)) = helper.body.split_last() {
            if first_return(rest).is_none() && reads_no_memory(value) {
                out.extend(remap.block(&rest.to_vec()));
                let value = remap.expr(value);
                self.whole_binding(h, remap.whole);
                return Some(value);
            }
        }
        let ret = helper.ret.as_ref().map(|t| t.subst(&lens));
        let ret = ret.map(|t| {
            let r = self.hidden("fg_ret", format!("the value of `{}`", helper.name), t, span);
            out.push(Stmt::Let {
                local: r,
                init: None,
            });
            r
        });
        let body = remap.block(&helper.body);
        let mut done = None;
        let body = self.returns(body, ret, &mut done, span);
        if let Some(d) = done {
            // Declared before the body, which sets it where a loop returns.
            out.push(Stmt::Let {
                local: d,
                init: Some(made(ExprKind::BoolLit(false), Ty::BOOL, span)),
            });
        }
        out.extend(body);
        self.whole_binding(h, remap.whole);
        let ty = self.helpers[h].ret.as_ref()?.subst(&lens);
        ret.map(|r| made(ExprKind::Local(r), ty, span))
    }

    /// A helper that uses a reference parameter given a binding other than by indexing
    /// it (as a whole array value, or indexed twice): the error, at the parameter.
    fn whole_binding(&self, h: usize, whole: Option<LocalId>) {
        if let Some(p) = whole {
            let helper = &self.helpers[h];
            let l = &helper.locals[p];
            self.cx.error(
                l.span,
                format!("`{}` is given a binding here, which `{}` can only index, one element at a time (`{}[i]`); a binding is no array value", l.name, helper.name, l.name),
            );
        }
    }

    /// The body with its `return`s made into assignments of the result `ret`: what follows
    /// a `return` in an `if` goes into the branches that do not return, and a loop that
    /// returns sets the flag `done` and breaks, with what follows it under `if !done`.
    fn returns(
        &mut self,
        stmts: Block,
        ret: Option<LocalId>,
        done: &mut Option<LocalId>,
        span: Span,
    ) -> Block {
        let mut out = Vec::new();
        let mut rest = stmts.into_iter();
        while let Some(s) = rest.next() {
            if !has_return(&s) {
                out.push(s);
                continue;
            }
            match s {
                Stmt::ReturnValue { value } => {
                    if let Some(r) = ret {
                        out.push(Stmt::Assign {
                            place: Place::Local(r),
                            op: None,
                            span: value.span,
                            value,
                        });
                    }
                    return out;
                }
                Stmt::Return { .. } => return out,
                Stmt::If { cond, then, els } => {
                    let rest: Block = rest.collect();
                    let els = els.unwrap_or_default();
                    let branch = |mut b: Block| {
                        if !always_returns(&b) {
                            b.extend(rest.iter().cloned());
                        }
                        b
                    };
                    let (then, els) = (branch(then), branch(els));
                    let then = self.returns(then, ret, done, span);
                    let els = self.returns(els, ret, done, span);
                    // `if c { return; } rest` is `if !c { rest }`.
                    if then.is_empty() && !els.is_empty() {
                        let span = cond.span;
                        out.push(Stmt::If {
                            cond: made(ExprKind::Unary(UnOp::Not, Box::new(cond)), Ty::BOOL, span),
                            then: els,
                            els: None,
                        });
                        return out;
                    }
                    let els = (!els.is_empty()).then_some(els);
                    out.push(Stmt::If { cond, then, els });
                    return out;
                }
                Stmt::Block(b) => {
                    let mut b = b;
                    b.extend(rest);
                    out.extend(self.returns(b, ret, done, span));
                    return out;
                }
                Stmt::Switch {
                    selector,
                    cases,
                    default,
                } => {
                    // As for an `if`: what follows goes into the arms that do not return.
                    let rest: Block = rest.collect();
                    let mut arm = |mut b: Block, this: &mut Self| {
                        if !always_returns(&b) {
                            b.extend(rest.iter().cloned());
                        }
                        this.returns(b, ret, done, span)
                    };
                    let cases = cases.into_iter().map(|(v, b)| (v, arm(b, self))).collect();
                    let default = arm(default, self);
                    out.push(Stmt::Switch {
                        selector,
                        cases,
                        default,
                    });
                    return out;
                }
                looped => {
                    let d = *done.get_or_insert_with(|| {
                        let id = self.f.locals.len();
                        self.f.locals.push(Local {
                            name: "the return flag of an inlined helper".into(),
                            ty: Ty::BOOL,
                            mutable: true,
                            shared: false,
                            span,
                            hidden: Some("fg_done"),
                            by_ref: None,
                            assigned: true,
                            atomic: false,
                        });
                        id
                    });
                    out.push(self.loop_returns(looped, ret, d));
                    let rest: Block = rest.collect();
                    if !rest.is_empty() {
                        let cond = made(
                            ExprKind::Unary(
                                UnOp::Not,
                                Box::new(made(ExprKind::Local(d), Ty::BOOL, span)),
                            ),
                            Ty::BOOL,
                            span,
                        );
                        let then = self.returns(rest, ret, done, span);
                        out.push(Stmt::If {
                            cond,
                            then,
                            els: None,
                        });
                    }
                    return out;
                }
            }
        }
        out
    }

    /// A loop whose body returns: each `return` sets the result and `done`, and breaks.
    fn loop_returns(&mut self, s: Stmt, ret: Option<LocalId>, done: LocalId) -> Stmt {
        match s {
            Stmt::For(mut f) => {
                if f.unroll {
                    if let Some(span) = first_return(&f.body) {
                        self.cx.error(span, "a `return` inside an `#[unroll]` loop of this helper cannot be inlined, since the loop's iterations are copies; compute the result in a local, and return it after the loop");
                    }
                }
                f.body = self.in_loop(f.body, f.id, ret, done);
                Stmt::For(f)
            }
            Stmt::While { cond, body, id } => Stmt::While {
                cond,
                body: self.in_loop(body, id, ret, done),
                id,
            },
            Stmt::Loop { body, id } => Stmt::Loop {
                body: self.in_loop(body, id, ret, done),
                id,
            },
            other => other,
        }
    }

    /// The body of loop `id`, each `return` replaced by: set the result, set `done`, break.
    fn in_loop(&mut self, body: Block, id: usize, ret: Option<LocalId>, done: LocalId) -> Block {
        let mut out = Vec::new();
        for s in body {
            match s {
                Stmt::ReturnValue { value } => {
                    let span = value.span;
                    if let Some(r) = ret {
                        out.push(Stmt::Assign {
                            place: Place::Local(r),
                            op: None,
                            span,
                            value,
                        });
                    }
                    out.extend(exit(done, id, span));
                }
                Stmt::Return { span } => out.extend(exit(done, id, span)),
                Stmt::If { cond, then, els }
                    if first_return(&then).is_some()
                        || els.as_deref().is_some_and(|e| first_return(e).is_some()) =>
                {
                    let then = self.in_loop(then, id, ret, done);
                    let els = els.map(|e| self.in_loop(e, id, ret, done));
                    out.push(Stmt::If { cond, then, els });
                }
                Stmt::Block(b) => {
                    let b = self.in_loop(b, id, ret, done);
                    out.push(Stmt::Block(b));
                }
                Stmt::Switch {
                    selector,
                    cases,
                    default,
                } => {
                    let cases = cases
                        .into_iter()
                        .map(|(v, b)| (v, self.in_loop(b, id, ret, done)))
                        .collect();
                    let default = self.in_loop(default, id, ret, done);
                    out.push(Stmt::Switch {
                        selector,
                        cases,
                        default,
                    });
                }
                s @ (Stmt::For(_) | Stmt::While { .. } | Stmt::Loop { .. }) if has_return(&s) => {
                    let span =
                        first_return(std::slice::from_ref(&s)).unwrap_or_else(Span::call_site);
                    out.push(self.loop_returns(s, ret, done));
                    out.push(Stmt::If {
                        cond: made(ExprKind::Local(done), Ty::BOOL, span),
                        then: vec![Stmt::Break { target: id, span }],
                        els: None,
                    });
                }
                s => out.push(s),
            }
        }
        out
    }
}

/// An argument that can stand for a parameter that is never assigned: a literal, or a
/// name whose value the helper cannot change (it takes no scalar by reference).
fn is_name_or_literal(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::IntLit(_)
            | ExprKind::FloatLit(_)
            | ExprKind::BoolLit(_)
            | ExprKind::Local(_)
            | ExprKind::Scalar(_)
            | ExprKind::Sched(_)
            | ExprKind::Builtin(_)
            | ExprKind::BuiltinComponent(..)
    )
}

/// Whether evaluating an expression later gives the same value: it reads only locals
/// (the helper's, which nothing changes after its body) and constants.
fn reads_no_memory(e: &Expr) -> bool {
    let mut pure = true;
    walk_expr(e, &mut |x| {
        pure &= !matches!(
            x.kind,
            ExprKind::LoadBinding(..)
                | ExprKind::LoadArray(..)
                | ExprKind::Atomic { .. }
                | ExprKind::Call(..)
                | ExprKind::Subgroup { .. }
        )
    });
    pure
}

/// A length as a `u32` value: a literal, or the expression over the schedule's constants
/// (and, inlined into a helper, its own length parameters' values).
fn len_value(len: &ConstLen, span: Span) -> Expr {
    fn go(c: &CExpr, span: Span) -> Expr {
        let kind = match c {
            CExpr::Lit(v) => ExprKind::IntLit(*v as i64),
            CExpr::Sched(s) => ExprKind::Sched(*s),
            CExpr::Param(l, _) => ExprKind::Local(*l),
            CExpr::Bin(op, a, b) => {
                ExprKind::Binary((*op).into(), Box::new(go(a, span)), Box::new(go(b, span)))
            }
        };
        made(kind, Ty::Scalar(Scalar::U32), span)
    }
    match len {
        ConstLen::Lit(v) => made(ExprKind::IntLit(*v as i64), Ty::Scalar(Scalar::U32), span),
        ConstLen::Sched(c) => go(c, span),
    }
}

/// `done = true; break;` out of loop `id`.
fn exit(done: LocalId, id: usize, span: Span) -> [Stmt; 2] {
    [
        Stmt::Assign {
            place: Place::Local(done),
            op: None,
            value: made(ExprKind::BoolLit(true), Ty::BOOL, span),
            span,
        },
        Stmt::Break { target: id, span },
    ]
}

/// Whether a statement is or holds a `return`.
fn has_return(s: &Stmt) -> bool {
    first_return(std::slice::from_ref(s)).is_some()
}

/// The span of the first `return` in a block, nested statements included.
fn first_return(b: &[Stmt]) -> Option<Span> {
    let mut found = None;
    walk_stmts(b, &mut |x| match x {
        Stmt::Return { span } if found.is_none() => found = Some(*span),
        Stmt::ReturnValue { value } if found.is_none() => found = Some(value.span),
        _ => {}
    });
    found
}

/// Whether every path through a block ends in a `return`.
fn always_returns(b: &Block) -> bool {
    match b.last() {
        Some(Stmt::Return { .. } | Stmt::ReturnValue { .. }) => true,
        Some(Stmt::If {
            then,
            els: Some(els),
            ..
        }) => always_returns(then) && always_returns(els),
        Some(Stmt::Block(b)) => always_returns(b),
        Some(Stmt::Switch { cases, default, .. }) => {
            cases.iter().all(|(_, b)| always_returns(b)) && always_returns(default)
        }
        _ => false,
    }
}

/// Renumbers a helper's body into the function it is inlined into: locals through `map`,
/// loop ids and subgroup operation ids after the function's own.
struct Remap<'m> {
    map: &'m [LocalId],
    /// The parameters that are their argument.
    subst: &'m [Option<Expr>],
    /// The reference parameters given a binding.
    bind: &'m [Option<usize>],
    /// The lengths the call gives the helper's length parameters, for the types.
    lens: &'m [(LocalId, ConstLen)],
    /// A parameter given a binding and used otherwise than indexed once.
    whole: Option<LocalId>,
    loops: usize,
    ops: usize,
}

impl Remap<'_> {
    /// `p[i]..` of a parameter given binding `b` as the binding's element place.
    fn bound_place(&mut self, place: Place) -> Place {
        match place {
            Place::LocalIndex(id, idxs) if self.bind[id].is_some() => {
                let b = self.bind[id].unwrap_or_default();
                if idxs.len() != 1 {
                    self.whole = Some(id);
                    return Place::LocalIndex(id, idxs);
                }
                match idxs.into_iter().next() {
                    Some(i) => Place::Binding(b, i),
                    None => Place::Local(id),
                }
            }
            Place::Local(id) if self.bind[id].is_some() => {
                self.whole = Some(id);
                Place::Local(id)
            }
            Place::Field(p, f) => Place::Field(Box::new(self.bound_place(*p)), f),
            Place::Component(p, c) => Place::Component(Box::new(self.bound_place(*p)), c),
            Place::Index(p, i) => Place::Index(Box::new(self.bound_place(*p)), i),
            p => p,
        }
    }
}

impl Remap<'_> {
    fn block(&mut self, b: &Block) -> Block {
        self.fold_block(b.clone())
    }

    fn expr(&mut self, e: &Expr) -> Expr {
        self.fold_expr(e.clone(), &mut Vec::new())
    }
}

impl Remap<'_> {
    /// An atomic method on an array of atomics given a binding: on the binding.
    fn bound_target(&self, target: &mut AtomicTarget) {
        if let AtomicTarget::Shared(id) = *target {
            if let Some(b) = self.bind[id] {
                *target = AtomicTarget::Binding(b);
            }
        }
    }
}

impl Fold for Remap<'_> {
    fn fold_stmt(&mut self, mut s: Stmt, out: &mut Block) {
        match &mut s {
            Stmt::Assign { place, .. } | Stmt::AsyncCopy { place, .. } => {
                let p = std::mem::replace(place, Place::Local(0));
                *place = self.bound_place(p);
            }
            Stmt::CompareExchange { target, .. } => self.bound_target(target),
            _ => {}
        }
        let (map, loops) = (self.map, self.loops);
        s.each_id_mut(|id| *id = map[*id], |id| *id += loops);
        let s = fold_stmt_children(self, s, out);
        out.push(s)
    }

    fn fold_expr(&mut self, mut e: Expr, out: &mut Block) -> Expr {
        if !self.lens.is_empty() {
            e.ty = e.ty.subst(self.lens);
        }
        if let ExprKind::Local(id) = e.kind {
            if let Some(arg) = &self.subst[id] {
                return arg.clone();
            }
            if self.bind[id].is_some() {
                self.whole = Some(id);
            }
        }
        // `p[i]` of a parameter given a binding: the binding's element.
        if let ExprKind::LoadArray(base, idx) = &mut e.kind {
            if let ExprKind::Local(id) = base.kind {
                if let Some(b) = self.bind[id] {
                    let idx = self.fold_expr(idx.take(), out);
                    e.kind = ExprKind::LoadBinding(b, Box::new(idx));
                    return e;
                }
            }
        }
        if let ExprKind::Atomic { target, .. }
        | ExprKind::Coop {
            target: Some(target),
            ..
        } = &mut e.kind
        {
            self.bound_target(target);
        }
        if let Some(id) = e.kind.local_mut() {
            *id = self.map[*id];
        }
        if let ExprKind::Subgroup { id, .. } = &mut e.kind {
            *id += self.ops;
        }
        fold_expr_children(self, e, out)
    }
}
