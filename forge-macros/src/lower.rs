//! Stage 2, model: lowers the function body into the typed statement tree of `model`,
//! resolving names, inferring types (`infer`), and rejecting constructs outside the kernel
//! language with an error at the construct and a hint.

use crate::ctxt::Ctxt;
use crate::infer::{self, Infer};
use crate::model::*;
use proc_macro2::Span;
use std::collections::HashMap;
use syn::spanned::Spanned;

pub struct Lowerer<'k, 'a> {
    cx: &'k Ctxt,
    bindings: &'k [BindingParam<'a>],
    scalars: &'k [ScalarParam<'a>],
    pub locals: Vec<Local>,
    /// Inference variable of each local.
    local_tv: Vec<usize>,
    scopes: Vec<HashMap<String, LocalId>>,
    /// Enclosing loops, innermost last.
    loop_stack: Vec<usize>,
    pub loops: usize,
    inf: Infer,
    /// Helpers callable from this body.
    helpers: &'k [HelperFn],
    /// Set while lowering a helper: the return type's variable, if it returns a value.
    in_helper: Option<Option<usize>>,
    /// Helpers called so far.
    pub calls: Vec<usize>,
    /// Subgroup operations lowered so far: the next one's id.
    subgroup_ops: usize,
}

type R<T> = Result<T, ()>;

impl<'k, 'a> Lowerer<'k, 'a> {
    pub fn new(
        cx: &'k Ctxt,
        bindings: &'k [BindingParam<'a>],
        scalars: &'k [ScalarParam<'a>],
        helpers: &'k [HelperFn],
    ) -> Self {
        Lowerer {
            cx,
            bindings,
            scalars,
            locals: Vec::new(),
            local_tv: Vec::new(),
            scopes: vec![HashMap::new()],
            loop_stack: Vec::new(),
            loops: 0,
            inf: Infer::new(),
            helpers,
            in_helper: None,
            calls: Vec::new(),
            subgroup_ops: 0,
        }
    }

    /// Lowers a `#[forge_fn]` helper. `earlier` are the helpers declared before it, the
    /// only ones it may call.
    pub fn helper(cx: &'k Ctxt, f: &syn::ItemFn, earlier: &'k [HelperFn]) -> Option<HelperFn> {
        let mut l = Lowerer::new(cx, &[], &[], earlier);
        if let Some(g) = f.sig.generics.params.first() {
            cx.error(g.span(), "generic helpers are not supported");
        }
        let mut params = Vec::new();
        for arg in &f.sig.inputs {
            let syn::FnArg::Typed(pt) = arg else {
                cx.error(arg.span(), "a helper cannot take `self`");
                continue;
            };
            let syn::Pat::Ident(pi) = &*pt.pat else {
                cx.error(pt.pat.span(), "helper parameters must be plain identifiers");
                continue;
            };
            let Ok(tv) = l.type_annotation(&pt.ty) else {
                continue;
            };
            params.push(l.declare(
                &pi.ident.to_string(),
                pi.mutability.is_some(),
                false,
                pi.ident.span(),
                tv,
            ));
        }
        let ret_tv = match &f.sig.output {
            syn::ReturnType::Default => None,
            syn::ReturnType::Type(_, t) => l.type_annotation(t).ok(),
        };
        l.in_helper = Some(ret_tv);
        let mut body = Vec::new();
        let n = f.block.stmts.len();
        for (i, s) in f.block.stmts.iter().enumerate() {
            match s {
                // The tail expression is the return value.
                syn::Stmt::Expr(e, None)
                    if i + 1 == n && ret_tv.is_some() && !is_statement_like(e) =>
                {
                    if let Ok(value) = l.expr(e) {
                        if let Some(r) = ret_tv {
                            l.unify_at(value.span, r, value.tv);
                        }
                        body.push(Stmt::ReturnValue { value });
                    }
                }
                _ => l.stmt(s, &mut body),
            }
        }
        l.finish(&mut body);
        let ret = ret_tv.and_then(|r| l.inf.resolve(r));
        let mut calls = std::mem::take(&mut l.calls);
        calls.sort();
        calls.dedup();
        Some(HelperFn {
            name: f.sig.ident.to_string(),
            params,
            ret,
            locals: std::mem::take(&mut l.locals),
            body,
            calls,
        })
    }

    fn err<T>(&self, span: Span, msg: impl std::fmt::Display) -> R<T> {
        self.cx.error(span, msg);
        Err(())
    }

    fn unify_at(&mut self, span: Span, a: usize, b: usize) {
        if let Err(m) = self.inf.unify(a, b) {
            self.cx
                .error(span, format!("{m}; convert with `as`, e.g. `x as u32`"));
        }
    }

    fn constrain_at(&mut self, span: Span, v: usize, set: infer::Set, what: &str) {
        if let Err(m) = self.inf.constrain(v, set) {
            self.cx.error(span, format!("{what}: {m}"));
        }
    }

    /// A variable fixed to a scalar or vector type.
    fn ty_var(&mut self, t: &Ty) -> usize {
        match t {
            Ty::Vector(s, n) => self.inf.of_vector(*s, *n),
            Ty::Scalar(s) => self.inf.of_scalar(*s),
            Ty::Array(..) => self.inf.fresh(),
        }
    }

    fn expr_of(&mut self, kind: ExprKind, tv: usize, span: Span) -> Expr {
        Expr {
            kind,
            ty: Ty::BOOL,
            span,
            end: span,
            tv,
        }
    }

    fn declare(
        &mut self,
        name: &str,
        mutable: bool,
        shared: bool,
        span: Span,
        tv: usize,
    ) -> LocalId {
        let id = self.locals.len();
        self.locals.push(Local {
            name: name.to_string(),
            ty: Ty::BOOL,
            mutable,
            shared,
            span,
            hidden: None,
            assigned: false,
            atomic: false,
        });
        self.local_tv.push(tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), id);
        }
        id
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    // ---- statements --------------------------------------------------------------

    pub fn block(&mut self, b: &syn::Block) -> Block {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        for s in &b.stmts {
            self.stmt(s, &mut out);
        }
        self.scopes.pop();
        out
    }

    fn stmt(&mut self, s: &syn::Stmt, out: &mut Block) {
        match s {
            syn::Stmt::Local(l) => {
                let _ = self.local(l, out);
            }
            syn::Stmt::Expr(e, _) => {
                let _ = self.expr_stmt(e, out);
            }
            syn::Stmt::Item(i) => self.cx.error(i.span(), "items inside a kernel are not supported; move them outside the kernel"),
            syn::Stmt::Macro(m) => self.cx.error(
                m.span(),
                "macros are not supported in kernels; write the code out, or move host-side logic outside the kernel",
            ),
        }
    }

    fn local(&mut self, l: &syn::Local, out: &mut Block) -> R<()> {
        // `let (a, b) = (x, y);` is two `let`s, evaluated left to right as Rust does.
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init) {
            if let syn::Expr::Tuple(et) = &*init.expr {
                if pt.elems.len() != et.elems.len() {
                    return self.err(
                        l.pat.span(),
                        format!(
                            "this pattern has {} names but the tuple has {} values",
                            pt.elems.len(),
                            et.elems.len()
                        ),
                    );
                }
                for (p, e) in pt.elems.iter().zip(&et.elems) {
                    let single = syn::Local {
                        attrs: l.attrs.clone(),
                        let_token: l.let_token,
                        pat: p.clone(),
                        init: Some(syn::LocalInit {
                            eq_token: init.eq_token,
                            expr: Box::new(e.clone()),
                            diverge: None,
                        }),
                        semi_token: l.semi_token,
                    };
                    self.local(&single, out)?;
                }
                return Ok(());
            }
        }
        let shared = l.attrs.iter().any(|a| a.path().is_ident("shared"));
        for a in &l.attrs {
            if !a.path().is_ident("shared") {
                self.cx.error_spanned(
                    a,
                    "unknown attribute on `let`; only `#[shared]` (workgroup memory) is allowed",
                );
            }
        }
        let (pat, ann) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let (name, mutable, span) = match pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                pi.ident.to_string(),
                pi.mutability.is_some(),
                pi.ident.span(),
            ),
            other => {
                return self.err(
                    other.span(),
                    "only simple `let name` and `let mut name` bindings are supported",
                )
            }
        };
        if name == "_" {
            return self.err(span, "`let _` is not supported; bind the value to a name");
        }
        let ann_tv = match ann {
            Some(t) => Some(self.type_annotation(t)?),
            None => None,
        };
        if let Some(init) = &l.init {
            if let Some((_, d)) = &init.diverge {
                return self.err(d.span(), "`let ... else` is not supported in kernels");
            }
        }
        if shared && self.in_helper.is_some() {
            return self.err(
                span,
                "helpers cannot declare workgroup memory; declare it in the kernel",
            );
        }
        if shared {
            if !mutable {
                self.cx.error(span, "workgroup memory must be mutable; write `#[shared] let mut name = [0.0f32; LEN];`");
            }
            let Some(init) = &l.init else {
                return self.err(
                    span,
                    "workgroup memory needs an initializer such as `[0.0f32; 256]`",
                );
            };
            if !matches!(&*init.expr, syn::Expr::Repeat(_)) {
                return self.err(
                    init.expr.span(),
                    "workgroup memory is declared as `[value; LEN]`, e.g. `[0.0f32; WG]`",
                );
            }
            if !self.loop_stack.is_empty() || self.scopes.len() > 2 {
                self.cx.error(span, "declare workgroup memory at the top of the kernel body, outside loops and branches");
            }
        }
        // `let x = if c { a } else { b };` becomes a declaration and an `if` assigning `x`.
        if let Some(init) = &l.init {
            if let syn::Expr::If(ei) = &*init.expr {
                let tv = ann_tv.unwrap_or_else(|| self.inf.fresh());
                let id = self.declare(&name, mutable, shared, span, tv);
                self.locals[id].assigned = true;
                out.push(Stmt::Let {
                    local: id,
                    init: None,
                });
                return self.if_into(ei, id, out);
            }
        }
        let init = match &l.init {
            Some(i) => Some(self.expr(&i.expr)?),
            None => None,
        };
        let tv = match (&init, ann_tv) {
            (Some(e), Some(a)) => {
                self.unify_at(e.span, a, e.tv);
                a
            }
            (Some(e), None) => e.tv,
            (None, Some(a)) => a,
            (None, None) => self.inf.fresh(),
        };
        if shared {
            if let Some(e) = &init {
                if !self.inf.is_array(e.tv) {
                    self.cx.error(e.span, "workgroup memory must be an array");
                }
            }
        }
        let id = self.declare(&name, mutable, shared, span, tv);
        out.push(Stmt::Let { local: id, init });
        Ok(())
    }

    fn type_annotation(&mut self, t: &syn::Type) -> R<usize> {
        if let Some(s) = crate::parse::scalar_type(t) {
            return Ok(self.inf.of_scalar(s));
        }
        if let Some((s, n)) = crate::parse::vector_type(t) {
            return Ok(self.inf.of_vector(s, n));
        }
        if let syn::Type::Array(a) = t {
            let e = self.type_annotation(&a.elem)?;
            let len = self.const_len(&a.len)?;
            return Ok(self.inf.of_array(e, len));
        }
        self.err(
            t.span(),
            format!(
                "unsupported type `{}`; use `f32`, `u32`, `i32`, `bool` or `[T; N]`",
                quote::quote!(#t)
            ),
        )
    }

    /// Array lengths: an integer literal, or an expression over `WG`, `ITEMS`, `VEC`.
    fn const_len(&mut self, e: &syn::Expr) -> R<ConstLen> {
        fn go(
            e: &syn::Expr,
            w: &mut String,
            r: &mut String,
            lit_only: &mut bool,
        ) -> Result<(), Span> {
            match e {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => {
                    let v: u32 = i.base10_parse().map_err(|_| i.span())?;
                    w.push_str(&format!("{v}u"));
                    r.push_str(&format!("{v}usize"));
                }
                syn::Expr::Path(p) => {
                    let n = p
                        .path
                        .get_ident()
                        .map(|i| i.to_string())
                        .unwrap_or_default();
                    let rust = match n.as_str() {
                        "WG" => "__fg_wg",
                        "ITEMS" => "__fg_items",
                        "VEC" => "__fg_vec",
                        _ => return Err(p.span()),
                    };
                    *lit_only = false;
                    w.push_str(&n);
                    r.push_str(&format!("({rust} as usize)"));
                }
                syn::Expr::Paren(p) => {
                    w.push('(');
                    r.push('(');
                    go(&p.expr, w, r, lit_only)?;
                    w.push(')');
                    r.push(')');
                }
                syn::Expr::Binary(b) => {
                    let op = match b.op {
                        syn::BinOp::Add(_) => "+",
                        syn::BinOp::Sub(_) => "-",
                        syn::BinOp::Mul(_) => "*",
                        syn::BinOp::Div(_) => "/",
                        _ => return Err(b.op.span()),
                    };
                    w.push('(');
                    r.push('(');
                    go(&b.left, w, r, lit_only)?;
                    w.push_str(&format!(" {op} "));
                    r.push_str(&format!(" {op} "));
                    go(&b.right, w, r, lit_only)?;
                    w.push(')');
                    r.push(')');
                }
                other => return Err(other.span()),
            }
            Ok(())
        }
        let (mut w, mut r, mut lit_only) = (String::new(), String::new(), true);
        match go(e, &mut w, &mut r, &mut lit_only) {
            Err(span) => self.err(
                span,
                "array lengths must be integer literals or expressions over `WG`, `ITEMS` and `VEC`; kernel locals have a fixed size",
            ),
            Ok(()) if lit_only => {
                // Evaluate literal-only lengths now, so the oracle can use a Rust array.
                match eval_lit_len(e) {
                    Some(v) if v > 0 => Ok(ConstLen::Lit(v)),
                    _ => self.err(e.span(), "array length must be a positive integer that fits in `u32`"),
                }
            }
            Ok(()) => Ok(ConstLen::Sched { wgsl: w, rust: r }),
        }
    }

    fn expr_stmt(&mut self, e: &syn::Expr, out: &mut Block) -> R<()> {
        let span = e.span();
        match e {
            syn::Expr::Assign(a) => {
                if let syn::Expr::If(ei) = &*a.right {
                    if let syn::Expr::Path(p) = &*a.left {
                        if let Some(id) =
                            p.path.get_ident().and_then(|i| self.lookup(&i.to_string()))
                        {
                            self.mark_assigned(id, a.left.span());
                            return self.if_into(ei, id, out);
                        }
                    }
                }
                let value = self.value_or_if(&a.right, out)?;
                let (place, ptv) = self.place(&a.left)?;
                self.unify_at(value.span, ptv, value.tv);
                out.push(Stmt::Assign {
                    place,
                    op: None,
                    value,
                    span,
                });
            }
            syn::Expr::Binary(b) if compound_op(&b.op).is_some() => {
                let op = compound_op(&b.op).unwrap_or(BinOp::Add);
                let value = self.value_or_if(&b.right, out)?;
                let (place, ptv) = self.place(&b.left)?;
                if op.is_shift() {
                    self.constrain_at(b.left.span(), ptv, infer::S_INT, "shifts need integers");
                    self.constrain_at(
                        value.span,
                        value.tv,
                        infer::S_INT,
                        "shift amounts are integers",
                    );
                } else {
                    self.unify_at(value.span, ptv, value.tv);
                    let set = match op {
                        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                            infer::S_INT | infer::S_BOOL
                        }
                        _ => infer::S_NUM,
                    };
                    self.constrain_at(
                        span,
                        ptv,
                        set,
                        &format!("`{}=` is not defined for this type", op.wgsl()),
                    );
                }
                out.push(Stmt::Assign {
                    place,
                    op: Some(op),
                    value,
                    span,
                });
            }
            syn::Expr::If(ei) => {
                let s = self.if_stmt(ei)?;
                out.push(s);
            }
            syn::Expr::ForLoop(f) => {
                if let Some(l) = &f.label {
                    return self.err(l.span(), "loop labels are not supported in kernels");
                }
                let syn::Pat::Ident(pi) = &*f.pat else {
                    return self.err(f.pat.span(), "the loop variable must be a plain name");
                };
                let syn::Expr::Range(r) = &*f.expr else {
                    return self.err(
                        f.expr.span(),
                        "kernels loop over ranges only, such as `for i in 0..n`; for other strides use `while`",
                    );
                };
                let (Some(start), Some(end)) = (&r.start, &r.end) else {
                    return self.err(r.span(), "a loop range needs both bounds, such as `0..n`");
                };
                let start = self.expr(start)?;
                let end = self.expr(end)?;
                self.unify_at(end.span, start.tv, end.tv);
                self.constrain_at(
                    start.span,
                    start.tv,
                    infer::S_INT,
                    "loop ranges are integer ranges",
                );
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let id = self.loops;
                self.loops += 1;
                self.scopes.push(HashMap::new());
                let var = self.declare(
                    &pi.ident.to_string(),
                    false,
                    false,
                    pi.ident.span(),
                    start.tv,
                );
                self.loop_stack.push(id);
                let body = self.block(&f.body);
                self.loop_stack.pop();
                self.scopes.pop();
                out.push(Stmt::For {
                    var,
                    start,
                    end,
                    inclusive,
                    body,
                    id,
                });
            }
            syn::Expr::While(w) => {
                if let Some(l) = &w.label {
                    return self.err(l.span(), "loop labels are not supported in kernels");
                }
                let cond = self.expr(&w.cond)?;
                self.constrain_at(
                    cond.span,
                    cond.tv,
                    infer::S_BOOL,
                    "a `while` condition must be `bool`",
                );
                let id = self.loops;
                self.loops += 1;
                self.loop_stack.push(id);
                let body = self.block(&w.body);
                self.loop_stack.pop();
                out.push(Stmt::While { cond, body, id });
            }
            syn::Expr::Loop(l) => {
                if let Some(lb) = &l.label {
                    return self.err(lb.span(), "loop labels are not supported in kernels");
                }
                let id = self.loops;
                self.loops += 1;
                self.loop_stack.push(id);
                let body = self.block(&l.body);
                self.loop_stack.pop();
                out.push(Stmt::Loop { body, id });
            }
            syn::Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return self.err(
                        span,
                        "`break` with a label or a value is not supported in kernels",
                    );
                }
                let Some(&target) = self.loop_stack.last() else {
                    return self.err(span, "`break` outside of a loop");
                };
                out.push(Stmt::Break { target, span });
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    return self.err(span, "`continue` with a label is not supported in kernels");
                }
                let Some(&target) = self.loop_stack.last() else {
                    return self.err(span, "`continue` outside of a loop");
                };
                out.push(Stmt::Continue { target, span });
            }
            syn::Expr::Return(r) => {
                if let Some(ret) = self.in_helper {
                    match (&r.expr, ret) {
                        (Some(e), Some(rt)) => {
                            let value = self.expr(e)?;
                            self.unify_at(value.span, rt, value.tv);
                            out.push(Stmt::ReturnValue { value });
                        }
                        (None, None) => out.push(Stmt::Return { span }),
                        (Some(e), None) => {
                            return self
                                .err(e.span(), "this helper declares no return type; add `-> T`")
                        }
                        (None, Some(_)) => {
                            return self
                                .err(span, "this helper returns a value; write `return value;`")
                        }
                    }
                    return Ok(());
                }
                if let Some(e) = &r.expr {
                    return self.err(
                        e.span(),
                        "a kernel returns nothing; write results through `#[out]` bindings",
                    );
                }
                out.push(Stmt::Return { span });
            }
            syn::Expr::Call(c)
                if self.in_helper.is_some()
                    && matches!(
                        path_name(&c.func).as_deref(),
                        Some("workgroup_barrier" | "storage_barrier")
                    ) =>
            {
                return self.err(span, "barriers belong in the kernel body, not in helpers");
            }
            syn::Expr::Call(c) if path_name(&c.func).as_deref() == Some("workgroup_barrier") => out
                .push(Stmt::Barrier {
                    kind: Barrier::Workgroup,
                    span,
                }),
            syn::Expr::Call(c) if path_name(&c.func).as_deref() == Some("storage_barrier") => out
                .push(Stmt::Barrier {
                    kind: Barrier::Storage,
                    span,
                }),
            syn::Expr::Block(b) => {
                if b.label.is_some() {
                    return self.err(span, "labelled blocks are not supported in kernels");
                }
                let inner = self.block(&b.block);
                // A bare block only scopes names: splice it as an always-taken `if`.
                let t = self.inf.of_scalar(Scalar::Bool);
                let cond = self.expr_of(ExprKind::BoolLit(true), t, span);
                out.push(Stmt::If {
                    cond,
                    then: inner,
                    els: None,
                });
            }
            syn::Expr::Paren(p) => return self.expr_stmt(&p.expr, out),
            syn::Expr::MethodCall(m) if AtomicOp::from_method(&m.method.to_string()).is_some() => {
                let expr = self.method(m)?;
                out.push(Stmt::Eval { expr });
            }
            other => {
                // An expression statement without effect: lower it for its errors, then
                // reject it, since WGSL has no expression statements.
                let e = self.expr(other)?;
                return self.err(
                    e.span,
                    "this expression has no effect; assign its value or remove it",
                );
            }
        }
        Ok(())
    }

    fn if_stmt(&mut self, ei: &syn::ExprIf) -> R<Stmt> {
        let cond = self.expr(&ei.cond)?;
        self.constrain_at(
            cond.span,
            cond.tv,
            infer::S_BOOL,
            "an `if` condition must be `bool`",
        );
        let then = self.block(&ei.then_branch);
        let els = match &ei.else_branch {
            None => None,
            Some((_, e)) => Some(match &**e {
                syn::Expr::Block(b) => self.block(&b.block),
                syn::Expr::If(inner) => vec![self.if_stmt(inner)?],
                other => return self.err(other.span(), "expected a block after `else`"),
            }),
        };
        Ok(Stmt::If { cond, then, els })
    }

    /// Lowers `target = if c { ..; a } else { ..; b }` into an `if` that assigns `target`
    /// in each branch.
    fn if_into(&mut self, ei: &syn::ExprIf, target: LocalId, out: &mut Block) -> R<()> {
        let cond = self.expr(&ei.cond)?;
        self.constrain_at(
            cond.span,
            cond.tv,
            infer::S_BOOL,
            "an `if` condition must be `bool`",
        );
        let then = self.block_into(&ei.then_branch, target)?;
        let els = match &ei.else_branch {
            None => return self.err(ei.span(), "an `if` used as a value needs an `else` branch"),
            Some((_, e)) => match &**e {
                syn::Expr::Block(b) => self.block_into(&b.block, target)?,
                syn::Expr::If(inner) => {
                    let mut v = Vec::new();
                    self.if_into(inner, target, &mut v)?;
                    v
                }
                other => return self.err(other.span(), "expected a block after `else`"),
            },
        };
        out.push(Stmt::If {
            cond,
            then,
            els: Some(els),
        });
        Ok(())
    }

    /// The right-hand side of an assignment. An `if` value (`y[i] = if c { a } else { b }`,
    /// `acc += if ..`) is computed first into a fresh local, as Rust evaluates the value
    /// before the place; the assignment then reads that local.
    fn value_or_if(&mut self, e: &syn::Expr, out: &mut Block) -> R<Expr> {
        let mut inner = e;
        while let syn::Expr::Paren(p) = inner {
            inner = &p.expr;
        }
        let syn::Expr::If(ei) = inner else {
            return self.expr(e);
        };
        let span = e.span();
        let tv = self.inf.fresh();
        let id = self.declare("fg_if", true, false, span, tv);
        // A hidden local: no user name resolves to it, and messages call it what it is.
        if let Some(scope) = self.scopes.last_mut() {
            scope.remove("fg_if");
        }
        self.locals[id].name = "if value".to_string();
        self.locals[id].hidden = Some("fg_if");
        self.locals[id].assigned = true;
        out.push(Stmt::Let {
            local: id,
            init: None,
        });
        self.if_into(ei, id, out)?;
        let mut value = self.expr_of(ExprKind::Local(id), tv, span);
        value.end = last_span(e);
        Ok(value)
    }

    fn block_into(&mut self, b: &syn::Block, target: LocalId) -> R<Block> {
        self.scopes.push(HashMap::new());
        let mut out = Vec::new();
        let n = b.stmts.len();
        let mut result = Ok(());
        for (i, s) in b.stmts.iter().enumerate() {
            match s {
                syn::Stmt::Expr(e, None) if i + 1 == n => {
                    result = (|| {
                        if let syn::Expr::If(inner) = e {
                            return self.if_into(inner, target, &mut out);
                        }
                        let value = self.expr(e)?;
                        let tv = self.local_tv[target];
                        self.unify_at(value.span, tv, value.tv);
                        out.push(Stmt::Assign {
                            place: Place::Local(target),
                            op: None,
                            value,
                            span: e.span(),
                        });
                        Ok(())
                    })();
                }
                _ => self.stmt(s, &mut out),
            }
        }
        if !matches!(b.stmts.last(), Some(syn::Stmt::Expr(_, None))) {
            self.cx.error(
                b.span(),
                "this branch must end with the value it gives, without a `;`",
            );
        }
        self.scopes.pop();
        result.map(|_| out)
    }

    fn mark_assigned(&mut self, id: LocalId, span: Span) {
        let l = &mut self.locals[id];
        l.assigned = true;
        if !l.mutable {
            let name = l.name.clone();
            self.cx.error(span, format!("cannot assign twice to immutable variable `{name}`; declare it with `let mut {name}`"));
        }
    }

    /// An assignable place and its type variable.
    fn place(&mut self, e: &syn::Expr) -> R<(Place, usize)> {
        match e {
            syn::Expr::Path(p) => {
                let name = path_name_p(&p.path).unwrap_or_default();
                if let Some(id) = self.lookup(&name) {
                    self.mark_assigned(id, p.span());
                    return Ok((Place::Local(id), self.local_tv[id]));
                }
                if self.bindings.iter().any(|b| b.name == name) {
                    return self.err(p.span(), format!("a binding is written element by element; write `{name}[i] = ...`"));
                }
                if self.scalars.iter().any(|s| s.name == name) {
                    return self.err(
                        p.span(),
                        format!("cannot assign to scalar parameter `{name}`; copy it first with `let mut {name} = {name};`"),
                    );
                }
                self.err(p.span(), format!("cannot find value `{name}` in this kernel"))
            }
            syn::Expr::Index(ix) => {
                // Collect the index chain down to its root.
                let mut chain = vec![&*ix.index];
                let mut root = &*ix.expr;
                while let syn::Expr::Index(inner) = root {
                    chain.push(&*inner.index);
                    root = &*inner.expr;
                }
                chain.reverse();
                let name = match root {
                    syn::Expr::Path(p) => path_name_p(&p.path).unwrap_or_default(),
                    other => return self.err(other.span(), "only bindings and local arrays can be indexed"),
                };
                if let Some(b) = self.bindings.iter().position(|b| b.name == name) {
                    if chain.len() != 1 {
                        return self.err(e.span(), "bindings are one-dimensional; compute a flat index");
                    }
                    let idx = self.index_expr(chain[0])?;
                    let binding = &self.bindings[b];
                    if binding.atomic {
                        return self.err(
                            e.span(),
                            format!("`{name}` is atomic; write it with `{name}[i].store(v)` or `{name}[i].fetch_add(v)`"),
                        );
                    }
                    let tv = self.ty_var(&binding.elem_ty());
                    return Ok((Place::Binding(b, idx), tv));
                }
                let Some(id) = self.lookup(&name) else {
                    return self.err(root.span(), format!("cannot find value `{name}` in this kernel"));
                };
                if !self.locals[id].mutable {
                    let n = self.locals[id].name.clone();
                    self.cx.error(root.span(), format!("cannot assign to an element of immutable array `{n}`; declare it with `let mut {n}`"));
                }
                self.locals[id].assigned = true;
                let mut tv = self.local_tv[id];
                let mut idxs = Vec::new();
                for i in chain {
                    let Some(elem) = self.inf.array_elem(tv) else {
                        return self.err(i.span(), "this value is not an array and cannot be indexed");
                    };
                    idxs.push(self.index_expr(i)?);
                    tv = elem;
                }
                Ok((Place::LocalIndex(id, idxs), tv))
            }
            syn::Expr::Paren(p) => self.place(&p.expr),
            other => self.err(other.span(), "cannot assign to this expression; assign to a local, a local array element or a binding element"),
        }
    }

    fn index_expr(&mut self, e: &syn::Expr) -> R<Expr> {
        let i = self.expr(e)?;
        self.constrain_at(i.span, i.tv, infer::S_INT, "indices are `u32` or `i32`");
        Ok(i)
    }

    // ---- expressions -------------------------------------------------------------

    pub fn expr(&mut self, e: &syn::Expr) -> R<Expr> {
        let mut x = self.expr_kind(e)?;
        x.end = last_span(e);
        Ok(x)
    }

    fn expr_kind(&mut self, e: &syn::Expr) -> R<Expr> {
        let span = e.span();
        match e {
            syn::Expr::Lit(l) => self.lit(&l.lit, false),
            syn::Expr::Paren(p) => self.expr(&p.expr),
            syn::Expr::Group(g) => self.expr(&g.expr),
            syn::Expr::Path(p) => self.path(p),
            syn::Expr::Unary(u) => {
                if let (syn::UnOp::Neg(_), syn::Expr::Lit(l)) = (&u.op, &*u.expr) {
                    return self.lit(&l.lit, true);
                }
                let a = self.expr(&u.expr)?;
                if let Some((s, _)) = self.inf.vector(a.tv) {
                    let op = match u.op {
                        syn::UnOp::Neg(_) if s != Scalar::U32 => UnOp::Neg,
                        syn::UnOp::Not(_) if s.is_int() => UnOp::Not,
                        _ => return self.err(span, "this unary operator is not defined for this vector type"),
                    };
                    let tv = a.tv;
                    return Ok(self.expr_of(ExprKind::Unary(op, Box::new(a)), tv, span));
                }
                let op = match u.op {
                    syn::UnOp::Neg(_) => {
                        self.constrain_at(span, a.tv, infer::S_I32 | infer::S_FLOAT, "cannot negate this type");
                        UnOp::Neg
                    }
                    syn::UnOp::Not(_) => {
                        self.constrain_at(span, a.tv, infer::S_INT | infer::S_BOOL, "`!` needs a `bool` or an integer");
                        UnOp::Not
                    }
                    _ => return self.err(span, "dereferencing is not supported in kernels"),
                };
                let tv = a.tv;
                Ok(self.expr_of(ExprKind::Unary(op, Box::new(a)), tv, span))
            }
            syn::Expr::Binary(b) => {
                let Some(op) = bin_op(&b.op) else {
                    return self.err(b.op.span(), "compound assignment is a statement, not an expression");
                };
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                let lv = self.inf.vector(l.tv);
                let rv = self.inf.vector(r.tv);
                if let Some((s, n)) = lv.or(rv) {
                    return self.vector_binary(op, l, r, s, n, span);
                }
                let tv = if op.is_shift() {
                    self.constrain_at(l.span, l.tv, infer::S_INT, "shifts need integers");
                    self.constrain_at(r.span, r.tv, infer::S_INT, "shift amounts are integers");
                    l.tv
                } else if op.is_logical() {
                    self.constrain_at(l.span, l.tv, infer::S_BOOL, "`&&` and `||` need `bool`");
                    self.constrain_at(r.span, r.tv, infer::S_BOOL, "`&&` and `||` need `bool`");
                    l.tv
                } else {
                    self.unify_at(r.span, l.tv, r.tv);
                    if op.is_comparison() {
                        self.constrain_at(span, l.tv, infer::S_ANY, "cannot compare arrays");
                        self.inf.of_scalar(Scalar::Bool)
                    } else {
                        let set = match op {
                            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => infer::S_INT | infer::S_BOOL,
                            _ => infer::S_NUM,
                        };
                        self.constrain_at(span, l.tv, set, &format!("`{}` is not defined for this type", op.wgsl()));
                        l.tv
                    }
                };
                Ok(self.expr_of(ExprKind::Binary(op, Box::new(l), Box::new(r)), tv, span))
            }
            syn::Expr::Cast(c) => {
                let a = self.expr(&c.expr)?;
                if self.inf.vector(a.tv).is_some() {
                    return self.err(span, "vectors cannot be cast with `as`; build a new one with `UVec4::new(v.x as u32, ..)`");
                }
                let Some(target) = crate::parse::scalar_type(&c.ty) else {
                    let t = &c.ty;
                    return self.err(t.span(), format!("cannot cast to `{}`; casts go to `f32`, `u32`, `i32` or `f16`", quote::quote!(#t)));
                };
                if target == Scalar::Bool {
                    return self.err(c.ty.span(), "cannot cast to `bool`; compare instead, e.g. `x != 0`");
                }
                self.constrain_at(a.span, a.tv, infer::S_ANY, "only scalars can be cast");
                let tv = self.inf.of_scalar(target);
                Ok(self.expr_of(ExprKind::Cast(Box::new(a)), tv, span))
            }
            syn::Expr::Index(ix) => {
                if let syn::Expr::Path(p) = &*ix.expr {
                    let name = path_name_p(&p.path).unwrap_or_default();
                    if self.lookup(&name).is_none() {
                        if let Some(b) = self.bindings.iter().position(|b| b.name == name) {
                            if self.bindings[b].atomic {
                                return self.err(span, format!("`{name}` is atomic; read it with `{name}[i].load()`"));
                            }
                            let idx = self.index_expr(&ix.index)?;
                            let tv = self.ty_var(&self.bindings[b].elem_ty());
                            return Ok(self.expr_of(ExprKind::LoadBinding(b, Box::new(idx)), tv, span));
                        }
                    }
                }
                let base = self.expr(&ix.expr)?;
                let Some(elem) = self.inf.array_elem(base.tv) else {
                    return self.err(ix.expr.span(), "this value is not an array and cannot be indexed");
                };
                let idx = self.index_expr(&ix.index)?;
                Ok(self.expr_of(ExprKind::LoadArray(Box::new(base), Box::new(idx)), elem, span))
            }
            syn::Expr::Repeat(r) => {
                let v = self.expr(&r.expr)?;
                if self.inf.is_array(v.tv) {
                    return self.err(v.span, "arrays of arrays are not supported; use a flat array");
                }
                let len = self.const_len(&r.len)?;
                let tv = self.inf.of_array(v.tv, len);
                Ok(self.expr_of(ExprKind::ArrayRepeat(Box::new(v)), tv, span))
            }
            syn::Expr::Array(a) => {
                if a.elems.is_empty() {
                    return self.err(span, "empty arrays are not supported");
                }
                let mut items = Vec::new();
                for el in &a.elems {
                    items.push(self.expr(el)?);
                }
                let first = items[0].tv;
                for it in &items[1..] {
                    let (s, t) = (it.span, it.tv);
                    self.unify_at(s, first, t);
                }
                self.constrain_at(span, first, infer::S_ANY, "arrays of arrays are not supported");
                let tv = self.inf.of_array(first, ConstLen::Lit(items.len() as u32));
                Ok(self.expr_of(ExprKind::ArrayList(items), tv, span))
            }
            syn::Expr::MethodCall(m) => self.method(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::Field(f) => {
                let member = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => return self.err(i.span(), "tuple fields are not supported"),
                };
                let comp = match member.as_str() {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    "w" => 3,
                    _ => return self.err(f.member.span(), "unknown field; vectors and the `*_id()` builtins have fields `x`, `y`, `z` (and `w`)"),
                };
                if let syn::Expr::Call(c) = &*f.base {
                    if let Some(b) = path_name(&c.func).and_then(|n| vec_builtin(&n)) {
                        if !c.args.is_empty() {
                            return self.err(c.args.span(), "builtins take no arguments");
                        }
                        let tv = self.inf.of_scalar(Scalar::U32);
                        return Ok(self.expr_of(ExprKind::BuiltinComponent(b, comp), tv, span));
                    }
                }
                let base = self.expr(&f.base)?;
                let Some((s, n)) = self.inf.vector(base.tv) else {
                    return self.err(span, "field access is supported on vectors and on `global_id()`, `local_id()`, `workgroup_id()` and `num_workgroups()`");
                };
                if comp >= n {
                    return self.err(f.member.span(), format!("a `vec{n}` has no component `{member}`"));
                }
                let tv = self.inf.of_scalar(s);
                Ok(self.expr_of(ExprKind::Swizzle(Box::new(base), vec![comp]), tv, span))
            }
            syn::Expr::If(_) => self.err(span, "an `if` used as a value must be the whole right-hand side of a `let` or an assignment; bind it first: `let v = if .. { .. } else { .. };`"),
            syn::Expr::Block(_) => self.err(span, "block expressions are not supported here"),
            syn::Expr::Closure(_) => self.err(span, "closures are not supported in kernels"),
            syn::Expr::Reference(_) => self.err(span, "references are not supported in kernel bodies; index bindings directly"),
            syn::Expr::Macro(_) => self.err(span, "macros are not supported in kernels"),
            syn::Expr::Tuple(_) => self.err(span, "tuples are not supported in kernels"),
            syn::Expr::Match(_) => self.err(span, "`match` is not supported in kernels; use `if`/`else`"),
            syn::Expr::Range(_) => self.err(span, "ranges are only allowed in `for` loops"),
            _ => self.err(span, "this expression is not supported in kernels"),
        }
    }

    fn lit(&mut self, l: &syn::Lit, negate: bool) -> R<Expr> {
        let span = l.span();
        match l {
            syn::Lit::Int(i) => {
                let raw: u64 = match i.base10_parse() {
                    Ok(v) => v,
                    Err(e) => {
                        self.cx.syn_error(e);
                        return Err(());
                    }
                };
                let tv = match i.suffix() {
                    "" => self
                        .inf
                        .of_set(if negate { infer::S_I32 } else { infer::S_INT }),
                    "u32" => self.inf.of_scalar(Scalar::U32),
                    "i32" => self.inf.of_scalar(Scalar::I32),
                    "f32" => self.inf.of_scalar(Scalar::F32),
                    s => {
                        return self.err(
                            span,
                            format!(
                            "unsupported literal suffix `{s}`; kernels use `u32`, `i32` and `f32`"
                        ),
                        )
                    }
                };
                if i.suffix() == "f32" {
                    let v = if negate { -(raw as f64) } else { raw as f64 };
                    return Ok(self.expr_of(ExprKind::FloatLit(v), tv, span));
                }
                if negate && i.suffix() == "u32" {
                    return self.err(span, "cannot negate a `u32` literal");
                }
                let v = if negate { -(raw as i128) } else { raw as i128 };
                if v > u32::MAX as i128 || v < i32::MIN as i128 {
                    return self.err(span, "integer literal out of range for 32 bits");
                }
                Ok(self.expr_of(ExprKind::IntLit(v as i64), tv, span))
            }
            syn::Lit::Float(f) => {
                let v: f64 = match f.base10_parse() {
                    Ok(v) => v,
                    Err(e) => {
                        self.cx.syn_error(e);
                        return Err(());
                    }
                };
                let tv = match f.suffix() {
                    "" => self.inf.of_set(infer::S_FLOAT),
                    "f32" => self.inf.of_scalar(Scalar::F32),
                    "f16" => self.inf.of_scalar(Scalar::F16),
                    s => {
                        return self.err(
                            span,
                            format!(
                                "unsupported literal suffix `{s}`; kernels use `f32` (and `f16`)"
                            ),
                        )
                    }
                };
                Ok(self.expr_of(ExprKind::FloatLit(if negate { -v } else { v }), tv, span))
            }
            syn::Lit::Bool(b) => {
                if negate {
                    return self.err(span, "cannot negate a `bool`; use `!`");
                }
                let tv = self.inf.of_scalar(Scalar::Bool);
                Ok(self.expr_of(ExprKind::BoolLit(b.value), tv, span))
            }
            _ => self.err(
                span,
                "unsupported literal; kernels use integer, float and `bool` literals",
            ),
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> R<Expr> {
        let span = p.span();
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        if segs.len() == 2 {
            if let Some((s, n)) = crate::parse::vector_name(&segs[0]) {
                let v = match (segs[1].as_str(), s) {
                    ("ZERO", Scalar::F32 | Scalar::F16) => ExprKind::FloatLit(0.0),
                    ("ONE", Scalar::F32 | Scalar::F16) => ExprKind::FloatLit(1.0),
                    ("ZERO", _) => ExprKind::IntLit(0),
                    ("ONE", _) => ExprKind::IntLit(1),
                    _ => {
                        return self.err(
                            span,
                            format!(
                                "unknown constant `{}`; vectors have `ZERO` and `ONE`",
                                segs.join("::")
                            ),
                        )
                    }
                };
                let ct = self.inf.of_scalar(s);
                let c = self.expr_of(v, ct, span);
                let tv = self.inf.of_vector(s, n);
                return Ok(self.expr_of(ExprKind::VecNew(vec![c]), tv, span));
            }
            let s = match segs[0].as_str() {
                "f32" => Scalar::F32,
                "u32" => Scalar::U32,
                "i32" => Scalar::I32,
                _ => return self.err(span, format!("unknown path `{}`", segs.join("::"))),
            };
            let tv = self.inf.of_scalar(s);
            let kind = match (s, segs[1].as_str()) {
                (Scalar::F32, "INFINITY") => ExprKind::FloatLit(f64::INFINITY),
                (Scalar::F32, "NEG_INFINITY") => ExprKind::FloatLit(f64::NEG_INFINITY),
                (Scalar::F32, "NAN") => ExprKind::FloatLit(f64::NAN),
                (Scalar::F32, "MAX") => ExprKind::FloatLit(f32::MAX as f64),
                (Scalar::F32, "MIN") => ExprKind::FloatLit(f32::MIN as f64),
                (Scalar::F32, "EPSILON") => ExprKind::FloatLit(f32::EPSILON as f64),
                (Scalar::F32, "MIN_POSITIVE") => ExprKind::FloatLit(f32::MIN_POSITIVE as f64),
                (Scalar::U32, "MAX") => ExprKind::IntLit(u32::MAX as i64),
                (Scalar::U32, "MIN") => ExprKind::IntLit(0),
                (Scalar::I32, "MAX") => ExprKind::IntLit(i32::MAX as i64),
                (Scalar::I32, "MIN") => ExprKind::IntLit(i32::MIN as i64),
                _ => return self.err(span, format!("unknown constant `{}`", segs.join("::"))),
            };
            return Ok(self.expr_of(kind, tv, span));
        }
        if segs.len() != 1 {
            return self.err(span, format!("unknown path `{}`", segs.join("::")));
        }
        let name = &segs[0];
        if let Some(id) = self.lookup(name) {
            let tv = self.local_tv[id];
            return Ok(self.expr_of(ExprKind::Local(id), tv, span));
        }
        if let Some(i) = self.scalars.iter().position(|s| &s.name == name) {
            let tv = self.inf.of_scalar(self.scalars[i].ty);
            return Ok(self.expr_of(ExprKind::Scalar(i), tv, span));
        }
        let sched = match name.as_str() {
            "WG" => Some(SchedConst::Wg),
            "ITEMS" => Some(SchedConst::Items),
            "VEC" => Some(SchedConst::Vec),
            _ => None,
        };
        if let Some(c) = sched {
            let tv = self.inf.of_scalar(Scalar::U32);
            return Ok(self.expr_of(ExprKind::Sched(c), tv, span));
        }
        if self.bindings.iter().any(|b| &b.name == name) {
            return self.err(
                span,
                format!("binding `{name}` can only be indexed, as in `{name}[i]`"),
            );
        }
        self.err(span, format!("cannot find value `{name}` in this kernel"))
    }

    fn call(&mut self, c: &syn::ExprCall) -> R<Expr> {
        let span = c.span();
        let Some(name) = path_name(&c.func) else {
            return self.err(
                c.func.span(),
                "only builtins and `f32::from_bits` can be called in kernels",
            );
        };
        if let Some(h) = self.helpers.iter().position(|h| h.name == name) {
            let helper = &self.helpers[h];
            if c.args.len() != helper.params.len() {
                return self.err(
                    span,
                    format!(
                        "`{name}` takes {} argument(s), but {} were given",
                        helper.params.len(),
                        c.args.len()
                    ),
                );
            }
            let param_tys: Vec<Ty> = helper
                .params
                .iter()
                .map(|p| helper.locals[*p].ty.clone())
                .collect();
            let ret = helper.ret.clone();
            let mut args = Vec::new();
            for (a, t) in c.args.iter().zip(&param_tys) {
                let e = self.expr(a)?;
                let tv = self.ty_var(t);
                self.unify_at(e.span, tv, e.tv);
                args.push(e);
            }
            let Some(ret) = ret else {
                return self.err(
                    span,
                    format!("`{name}` returns nothing, so it cannot be used as a value"),
                );
            };
            let tv = self.ty_var(&ret);
            self.calls.push(h);
            return Ok(self.expr_of(ExprKind::Call(h, args), tv, span));
        }
        let scalar_builtin = match name.as_str() {
            "global_index" => Some(Builtin::GlobalIndex),
            "local_index" => Some(Builtin::LocalIndex),
            "workgroup_index" => Some(Builtin::WorkgroupIndex),
            "subgroup_invocation_id" => Some(Builtin::SubgroupInvocationId),
            "subgroup_size" => Some(Builtin::SubgroupSize),
            "subgroup_id" => Some(Builtin::SubgroupId),
            "num_subgroups" => Some(Builtin::NumSubgroups),
            _ => None,
        };
        if scalar_builtin.is_some() && self.in_helper.is_some() {
            return self.err(
                span,
                format!("helpers cannot read `{name}()`; pass its value as an argument"),
            );
        }
        if let Some(b) = scalar_builtin {
            if !c.args.is_empty() {
                return self.err(c.args.span(), "builtins take no arguments");
            }
            let tv = self.inf.of_scalar(Scalar::U32);
            return Ok(self.expr_of(ExprKind::Builtin(b), tv, span));
        }
        if vec_builtin(&name).is_some() {
            return self.err(
                span,
                format!("`{name}()` is a vector; use a component such as `{name}().x`"),
            );
        }
        if let Some((ty, ctor)) = name.split_once("::") {
            if let Some((s, n)) = crate::parse::vector_name(ty) {
                let want = match ctor {
                    "new" => n as usize,
                    "splat" => 1,
                    _ => return self.err(c.func.span(), format!("unknown constructor `{name}`; vectors are built with `{ty}::new(..)` or `{ty}::splat(x)`")),
                };
                if c.args.len() != want {
                    return self.err(span, format!("`{name}` takes {want} argument(s)"));
                }
                let mut args = Vec::new();
                for a in &c.args {
                    let e = self.expr(a)?;
                    self.constrain_at(
                        e.span,
                        e.tv,
                        infer::bit(s),
                        &format!("`{name}` takes `{}` components", s.wgsl()),
                    );
                    args.push(e);
                }
                let tv = self.inf.of_vector(s, n);
                return Ok(self.expr_of(ExprKind::VecNew(args), tv, span));
            }
        }
        if let Some(op) = SubgroupOp::from_name(&name) {
            return self.subgroup(c, op);
        }
        if name == "select" {
            if c.args.len() != 3 {
                return self.err(
                    span,
                    "`select(if_false, if_true, condition)` takes three arguments",
                );
            }
            let f = self.expr(&c.args[0])?;
            let t = self.expr(&c.args[1])?;
            let cond = self.expr(&c.args[2])?;
            self.unify_at(t.span, f.tv, t.tv);
            self.constrain_at(
                cond.span,
                cond.tv,
                infer::S_BOOL,
                "the condition of `select` is a `bool`",
            );
            let tv = f.tv;
            return Ok(self.expr_of(
                ExprKind::Select(Box::new(f), Box::new(t), Box::new(cond)),
                tv,
                span,
            ));
        }
        if name == "f32::from_bits" {
            if c.args.len() != 1 {
                return self.err(span, "`f32::from_bits` takes one `u32`");
            }
            let a = self.expr(&c.args[0])?;
            self.constrain_at(a.span, a.tv, infer::S_U32, "`f32::from_bits` takes a `u32`");
            let tv = self.inf.of_scalar(Scalar::F32);
            return Ok(self.expr_of(ExprKind::Math(MathFn::FromBits, vec![a]), tv, span));
        }
        if name == "workgroup_barrier" || name == "storage_barrier" {
            return self.err(
                span,
                format!("`{name}()` is a statement; write `{name}();` on its own"),
            );
        }
        self.err(
            c.func.span(),
            format!("cannot call `{name}` in a kernel; kernels call builtins (`global_index()`, ...) and methods such as `x.sqrt()`"),
        )
    }

    /// `subgroup_add(v)`, `subgroup_shuffle(v, lane)` and the other subgroup operations.
    fn subgroup(&mut self, c: &syn::ExprCall, op: SubgroupOp) -> R<Expr> {
        use infer::{S_BOOL, S_F32, S_INT, S_U32};
        let span = c.span();
        let name = op.name();
        if self.in_helper.is_some() {
            return self.err(
                span,
                format!("helpers cannot call `{name}`: subgroup operations are collective and belong in the kernel body; call it there and pass the value in"),
            );
        }
        let predicate = matches!(op, SubgroupOp::All | SubgroupOp::Any | SubgroupOp::Ballot);
        let want = if op.takes_lane() { 2 } else { 1 };
        if c.args.len() != want {
            let usage = match op {
                SubgroupOp::Broadcast => {
                    "`subgroup_broadcast(value, LANE)` takes a value and a constant `u32` lane"
                        .to_string()
                }
                _ if op.takes_lane() => {
                    format!("`{name}(value, lane)` takes a value and a `u32` lane")
                }
                _ if predicate => format!("`{name}(condition)` takes one `bool`"),
                _ => format!("`{name}(value)` takes one value"),
            };
            return self.err(span, usage);
        }
        let v = self.expr(&c.args[0])?;
        if predicate {
            self.constrain_at(v.span, v.tv, S_BOOL, &format!("`{name}` takes a `bool`"));
        } else {
            let (set, what) = match op {
                SubgroupOp::And | SubgroupOp::Or | SubgroupOp::Xor => {
                    (S_INT, "`u32` or `i32` values, or vectors of them")
                }
                _ => (
                    S_F32 | S_INT,
                    "`f32`, `u32` or `i32` values, or vectors of them",
                ),
            };
            match self.inf.vector(v.tv) {
                Some((s, n)) if infer::bit(s) & set == 0 => {
                    return self.err(
                        v.span,
                        format!("`{name}` takes {what}, not `vec{n}<{}>`", s.wgsl()),
                    )
                }
                Some(_) => {}
                None => self.constrain_at(v.span, v.tv, set, &format!("`{name}` takes {what}")),
            }
        }
        let mut args = vec![v];
        if op.takes_lane() {
            let lane = self.expr(&c.args[1])?;
            self.constrain_at(
                lane.span,
                lane.tv,
                S_U32,
                &format!("the lane of `{name}` is a `u32`"),
            );
            args.push(lane);
        }
        let tv = match op {
            SubgroupOp::All | SubgroupOp::Any => self.inf.of_scalar(Scalar::Bool),
            SubgroupOp::Ballot => self.inf.of_vector(Scalar::U32, 4),
            _ => args[0].tv,
        };
        let id = self.subgroup_ops;
        self.subgroup_ops += 1;
        Ok(self.expr_of(ExprKind::Subgroup { op, id, args }, tv, span))
    }

    /// `target[i].fetch_add(v)` and friends, on an atomic binding or a workgroup array.
    fn atomic(&mut self, m: &syn::ExprMethodCall, op: AtomicOp) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        let syn::Expr::Index(ix) = &*m.receiver else {
            return self.err(m.receiver.span(), format!("`{name}` is an atomic method; call it on an element, as in `bins[i].{name}(..)`"));
        };
        let base =
            match &*ix.expr {
                syn::Expr::Path(p) => path_name_p(&p.path).unwrap_or_default(),
                other => return self.err(
                    other.span(),
                    "atomic methods work on elements of an atomic binding or a `#[shared]` array",
                ),
            };
        let (target, elem_tv) = if let Some(id) = self.lookup(&base) {
            if !self.locals[id].shared {
                return self.err(ix.expr.span(), format!("`{base}` is a local; atomic methods work on an `Atomic<u32>` binding or a `#[shared]` array"));
            }
            self.locals[id].atomic = true;
            let tv = self.local_tv[id];
            let Some(elem) = self.inf.array_elem(tv) else {
                return self.err(ix.expr.span(), "expected an array");
            };
            self.constrain_at(
                ix.expr.span(),
                elem,
                infer::S_INT,
                "atomic workgroup arrays hold `u32` or `i32`",
            );
            (AtomicTarget::Shared(id), elem)
        } else if let Some(b) = self.bindings.iter().position(|b| b.name == base) {
            if !self.bindings[b].atomic {
                let t = self.bindings[b].elem.wgsl();
                return self.err(
                    ix.expr.span(),
                    format!("`{base}` is not atomic; declare it as `&mut [Atomic<{t}>; {}]` to use `{name}`", self.bindings[b].len_text),
                );
            }
            let tv = self.inf.of_scalar(self.bindings[b].elem);
            (AtomicTarget::Binding(b), tv)
        } else {
            return self.err(
                ix.expr.span(),
                format!("cannot find value `{base}` in this kernel"),
            );
        };
        if m.args.len() != op.arity() {
            return self.err(
                span,
                format!(
                    "`{name}` takes {} argument(s) and no memory ordering",
                    op.arity()
                ),
            );
        }
        let index = self.index_expr(&ix.index)?;
        let mut args = Vec::new();
        for a in &m.args {
            let e = self.expr(a)?;
            self.unify_at(e.span, elem_tv, e.tv);
            args.push(e);
        }
        Ok(self.expr_of(
            ExprKind::Atomic {
                op,
                target,
                index: Box::new(index),
                args,
            },
            elem_tv,
            span,
        ))
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> R<Expr> {
        use infer::{S_F32, S_FLOAT, S_I32, S_INT, S_NUM};
        let span = m.span();
        let name = m.method.to_string();
        if let Some(op) = AtomicOp::from_method(&name) {
            return self.atomic(m, op);
        }
        let recv = self.expr(&m.receiver)?;
        if let Some((s, n)) = self.inf.vector(recv.tv) {
            if let Some(comps) = swizzle(&name) {
                if !m.args.is_empty() {
                    return self.err(span, "swizzles take no arguments");
                }
                if let Some(bad) = comps.iter().find(|c| **c >= n) {
                    return self.err(
                        m.method.span(),
                        format!(
                            "a `vec{n}` has no component `{}`",
                            ["x", "y", "z", "w"][*bad as usize]
                        ),
                    );
                }
                let tv = self.inf.of_vector(s, comps.len() as u8);
                return Ok(self.expr_of(ExprKind::Swizzle(Box::new(recv), comps), tv, span));
            }
        }
        let mut args = vec![recv];
        for a in &m.args {
            args.push(self.expr(a)?);
        }
        if let Some((s, n)) = self.inf.vector(args[0].tv) {
            return self.vector_method(&name, m, args, s, n);
        }
        // (function, arity including the receiver, receiver set, result: None = receiver's type)
        let (f, arity, set, result): (MathFn, usize, infer::Set, Option<Scalar>) = match name.as_str() {
            "abs" => (MathFn::Abs, 1, S_I32 | S_FLOAT, None),
            "min" => (MathFn::Min, 2, S_NUM, None),
            "max" => (MathFn::Max, 2, S_NUM, None),
            "clamp" => (MathFn::Clamp, 3, S_NUM, None),
            "sqrt" => (MathFn::Sqrt, 1, S_FLOAT, None),
            "exp" => (MathFn::Exp, 1, S_FLOAT, None),
            "exp2" => (MathFn::Exp2, 1, S_FLOAT, None),
            "ln" => (MathFn::Ln, 1, S_FLOAT, None),
            "log2" => (MathFn::Log2, 1, S_FLOAT, None),
            "sin" => (MathFn::Sin, 1, S_FLOAT, None),
            "cos" => (MathFn::Cos, 1, S_FLOAT, None),
            "tan" => (MathFn::Tan, 1, S_FLOAT, None),
            "tanh" => (MathFn::Tanh, 1, S_FLOAT, None),
            "floor" => (MathFn::Floor, 1, S_FLOAT, None),
            "ceil" => (MathFn::Ceil, 1, S_FLOAT, None),
            "round" => (MathFn::Round, 1, S_FLOAT, None),
            "round_ties_even" => (MathFn::RoundTiesEven, 1, S_FLOAT, None),
            "trunc" => (MathFn::Trunc, 1, S_FLOAT, None),
            "fract" => (MathFn::Fract, 1, S_FLOAT, None),
            "mul_add" => (MathFn::MulAdd, 3, S_FLOAT, None),
            "powf" => (MathFn::Powf, 2, S_FLOAT, None),
            "signum" => (MathFn::Signum, 1, S_I32 | S_FLOAT, None),
            "recip" => (MathFn::Recip, 1, S_FLOAT, None),
            "to_bits" => (MathFn::ToBits, 1, S_F32, Some(Scalar::U32)),
            "count_ones" => (MathFn::CountOnes, 1, S_INT, Some(Scalar::U32)),
            "leading_zeros" => (MathFn::LeadingZeros, 1, S_INT, Some(Scalar::U32)),
            "trailing_zeros" => (MathFn::TrailingZeros, 1, S_INT, Some(Scalar::U32)),
            "reverse_bits" => (MathFn::ReverseBits, 1, S_INT, None),
            "is_nan" => (MathFn::IsNan, 1, S_FLOAT, Some(Scalar::Bool)),
            "is_finite" => (MathFn::IsFinite, 1, S_FLOAT, Some(Scalar::Bool)),
            "div_ceil" => (MathFn::DivCeil, 2, infer::S_U32, None),
            "wrapping_add" => (MathFn::WrappingAdd, 2, S_INT, None),
            "wrapping_sub" => (MathFn::WrappingSub, 2, S_INT, None),
            "wrapping_mul" => (MathFn::WrappingMul, 2, S_INT, None),
            "powi" => {
                if args.len() != 2 {
                    return self.err(span, "`powi` takes one `i32` argument");
                }
                let (s0, t0, s1, t1) = (args[0].span, args[0].tv, args[1].span, args[1].tv);
                self.constrain_at(s0, t0, S_FLOAT, "`powi` is a float method");
                self.constrain_at(s1, t1, S_I32, "`powi` takes an `i32` exponent");
                return Ok(self.expr_of(ExprKind::Math(MathFn::Powi, args), t0, span));
            }
            _ => {
                return self.err(
                    m.method.span(),
                    format!(
                        "unsupported method `{name}`; kernels support abs, min, max, clamp, sqrt, exp, exp2, ln, log2, sin, cos, tan, tanh, floor, ceil, round, round_ties_even, trunc, fract, mul_add, powf, powi, signum, recip, to_bits, count_ones, leading_zeros, trailing_zeros, reverse_bits, is_nan, is_finite, div_ceil and wrapping_add/sub/mul"
                    ),
                )
            }
        };
        if args.len() != arity {
            return self.err(span, format!("`{name}` takes {} argument(s)", arity - 1));
        }
        let t0 = args[0].tv;
        for a in &args[1..] {
            let (s, t) = (a.span, a.tv);
            self.unify_at(s, t0, t);
        }
        let s0 = args[0].span;
        self.constrain_at(
            s0,
            t0,
            set,
            &format!("`{name}` is not defined for this type"),
        );
        let tv = match result {
            Some(s) => self.inf.of_scalar(s),
            None => t0,
        };
        Ok(self.expr_of(ExprKind::Math(f, args), tv, span))
    }

    /// Vector arithmetic: vector with vector of the same type, or with a scalar of its
    /// component type; `==`/`!=` compare whole vectors, as glam's do.
    fn vector_binary(
        &mut self,
        op: BinOp,
        l: Expr,
        r: Expr,
        s: Scalar,
        n: u8,
        span: Span,
    ) -> R<Expr> {
        let (lv, rv) = (
            self.inf.vector(l.tv).is_some(),
            self.inf.vector(r.tv).is_some(),
        );
        match (lv, rv) {
            (true, true) => self.unify_at(r.span, l.tv, r.tv),
            (true, false) => self.constrain_at(
                r.span,
                r.tv,
                infer::bit(s),
                "a vector combines with a scalar of its component type",
            ),
            _ => self.constrain_at(
                l.span,
                l.tv,
                infer::bit(s),
                "a vector combines with a scalar of its component type",
            ),
        }
        let tv = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                if lv {
                    l.tv
                } else {
                    r.tv
                }
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor if s.is_int() => {
                if lv {
                    l.tv
                } else {
                    r.tv
                }
            }
            BinOp::Eq | BinOp::Ne if lv && rv => self.inf.of_scalar(Scalar::Bool),
            _ => {
                return self.err(
                    span,
                    format!("`{}` is not supported on `vec{n}<{}>`; vectors support `+ - * / %`, `& | ^` on integers, and `==`/`!=` between vectors", op.wgsl(), s.wgsl()),
                )
            }
        };
        Ok(self.expr_of(ExprKind::Binary(op, Box::new(l), Box::new(r)), tv, span))
    }

    /// Methods on vectors: componentwise math, as glam's, and `dot`, `length`, `normalize`.
    fn vector_method(
        &mut self,
        name: &str,
        m: &syn::ExprMethodCall,
        args: Vec<Expr>,
        s: Scalar,
        n: u8,
    ) -> R<Expr> {
        let span = m.span();
        let float_only = |f| (f, true);
        let any = |f| (f, false);
        let ((f, needs_float), arity) = match name {
            "abs" => (any(MathFn::Abs), 1),
            "min" => (any(MathFn::Min), 2),
            "max" => (any(MathFn::Max), 2),
            "clamp" => (any(MathFn::Clamp), 3),
            "sqrt" => (float_only(MathFn::Sqrt), 1),
            "exp" => (float_only(MathFn::Exp), 1),
            "exp2" => (float_only(MathFn::Exp2), 1),
            "ln" => (float_only(MathFn::Ln), 1),
            "log2" => (float_only(MathFn::Log2), 1),
            "sin" => (float_only(MathFn::Sin), 1),
            "cos" => (float_only(MathFn::Cos), 1),
            "tanh" => (float_only(MathFn::Tanh), 1),
            "floor" => (float_only(MathFn::Floor), 1),
            "ceil" => (float_only(MathFn::Ceil), 1),
            "trunc" => (float_only(MathFn::Trunc), 1),
            "mul_add" => (float_only(MathFn::MulAdd), 3),
            "dot" => (any(MathFn::Dot), 2),
            "length" => (float_only(MathFn::Length), 1),
            "normalize" => (float_only(MathFn::Normalize), 1),
            _ => {
                return self.err(
                    m.method.span(),
                    format!("unsupported vector method `{name}`; vectors support swizzles, abs, min, max, clamp, sqrt, exp, exp2, ln, log2, sin, cos, tanh, floor, ceil, trunc, mul_add, dot, length and normalize"),
                )
            }
        };
        if needs_float && !s.is_float() {
            return self.err(
                m.method.span(),
                format!(
                    "`{name}` needs a float vector, but this is `vec{n}<{}>`",
                    s.wgsl()
                ),
            );
        }
        if args.len() != arity {
            return self.err(span, format!("`{name}` takes {} argument(s)", arity - 1));
        }
        let t0 = args[0].tv;
        for a in &args[1..] {
            let (sp, t) = (a.span, a.tv);
            self.unify_at(sp, t0, t);
        }
        let tv = match f {
            MathFn::Dot | MathFn::Length => self.inf.of_scalar(s),
            _ => t0,
        };
        Ok(self.expr_of(ExprKind::Math(f, args), tv, span))
    }

    // ---- solving -----------------------------------------------------------------

    /// Writes the solved types into every local and expression. Unsolvable types are
    /// errors at the local or expression.
    pub fn finish(&mut self, body: &mut Block) {
        for i in 0..self.locals.len() {
            match self.inf.resolve(self.local_tv[i]) {
                Some(t) => self.locals[i].ty = t,
                None if self.locals[i].hidden.is_some() => self.cx.error(
                    self.locals[i].span,
                    "type annotations needed for the value of this `if`; give a branch a value of known type, such as `0.0f32` or `x as f32`",
                ),
                None => {
                    let n = &self.locals[i].name;
                    self.cx.error(
                        self.locals[i].span,
                        format!("type annotations needed for `{n}`; give it a type, as in `let {n}: f32 = ..`"),
                    );
                }
            }
        }
        self.finish_block(body);
    }

    fn finish_block(&mut self, b: &mut Block) {
        for s in b {
            match s {
                Stmt::Let { init: Some(e), .. } => self.finish_expr(e),
                Stmt::Assign { place, value, .. } => {
                    match place {
                        Place::LocalIndex(_, idx) => {
                            idx.iter_mut().for_each(|e| self.finish_expr(e))
                        }
                        Place::Binding(_, e) => self.finish_expr(e),
                        Place::Local(_) => {}
                    }
                    self.finish_expr(value)
                }
                Stmt::If {
                    cond, then, els, ..
                } => {
                    self.finish_expr(cond);
                    self.finish_block(then);
                    if let Some(e) = els {
                        self.finish_block(e)
                    }
                }
                Stmt::For {
                    start, end, body, ..
                } => {
                    self.finish_expr(start);
                    self.finish_expr(end);
                    self.finish_block(body)
                }
                Stmt::While { cond, body, .. } => {
                    self.finish_expr(cond);
                    self.finish_block(body)
                }
                Stmt::Loop { body, .. } => self.finish_block(body),
                Stmt::Eval { expr, .. } => self.finish_expr(expr),
                Stmt::ReturnValue { value } => self.finish_expr(value),
                _ => {}
            }
        }
    }

    fn finish_expr(&mut self, e: &mut Expr) {
        match self.inf.resolve(e.tv) {
            Some(t) => e.ty = t,
            None => self.cx.error(e.span, "type annotations needed"),
        }
        match &mut e.kind {
            ExprKind::LoadBinding(_, i) => self.finish_expr(i),
            ExprKind::LoadArray(a, i) => {
                self.finish_expr(a);
                self.finish_expr(i)
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(a) | ExprKind::ArrayRepeat(a) => {
                self.finish_expr(a)
            }
            ExprKind::Binary(_, a, b) => {
                self.finish_expr(a);
                self.finish_expr(b)
            }
            ExprKind::Math(_, args) | ExprKind::ArrayList(args) => {
                args.iter_mut().for_each(|a| self.finish_expr(a))
            }
            ExprKind::Atomic { index, args, .. } => {
                self.finish_expr(index);
                args.iter_mut().for_each(|a| self.finish_expr(a))
            }
            ExprKind::VecNew(args) | ExprKind::Call(_, args) | ExprKind::Subgroup { args, .. } => {
                args.iter_mut().for_each(|a| self.finish_expr(a))
            }
            ExprKind::Swizzle(a, _) => self.finish_expr(a),
            ExprKind::Select(a, b, c) => {
                self.finish_expr(a);
                self.finish_expr(b);
                self.finish_expr(c)
            }
            _ => {}
        }
        // Literals must fit the type they settled on.
        if let (ExprKind::IntLit(v), Ty::Scalar(s)) = (&e.kind, &e.ty) {
            let ok = match s {
                Scalar::U32 => (0..=u32::MAX as i64).contains(v),
                Scalar::I32 => (i32::MIN as i64..=i32::MAX as i64).contains(v),
                _ => true,
            };
            if !ok {
                self.cx
                    .error(e.span, format!("literal out of range for `{}`", s.wgsl()));
            }
        }
        if let (ExprKind::IntLit(v), Ty::Scalar(s)) = (&e.kind, &e.ty) {
            if s.is_float() {
                e.kind = ExprKind::FloatLit(*v as f64);
            }
        }
        // WGSL rejects an `h` literal that rounds to infinity.
        if let (ExprKind::FloatLit(v), Ty::Scalar(Scalar::F16)) = (&e.kind, &e.ty) {
            let bits = crate::emit_oracle::f16_bits(*v);
            if v.is_finite() && bits & 0x7fff == 0x7c00 {
                self.cx.error(
                    e.span,
                    "literal out of range for `f16`, whose largest finite value is 65504",
                );
            }
        }
    }
}

/// The span of an expression's last token, for errors that underline the whole expression.
fn last_span(e: &syn::Expr) -> Span {
    match e {
        syn::Expr::Binary(b) => last_span(&b.right),
        syn::Expr::Unary(u) => last_span(&u.expr),
        syn::Expr::Cast(c) => c.ty.span(),
        syn::Expr::Paren(p) => p.paren_token.span.close(),
        syn::Expr::Call(c) => c.paren_token.span.close(),
        syn::Expr::MethodCall(m) => m.paren_token.span.close(),
        syn::Expr::Index(i) => i.bracket_token.span.close(),
        syn::Expr::Field(f) => f.member.span(),
        syn::Expr::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.span())
            .unwrap_or_else(|| e.span()),
        other => quote::ToTokens::to_token_stream(other)
            .into_iter()
            .last()
            .map(|t| t.span())
            .unwrap_or_else(|| other.span()),
    }
}

/// Expressions that are statements in tail position (loops): not a return value.
fn is_statement_like(e: &syn::Expr) -> bool {
    matches!(
        e,
        syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_)
    )
}

/// `xy`, `zyx`, `wzyx`...: the components of a swizzle method, if `name` is one.
fn swizzle(name: &str) -> Option<Vec<u8>> {
    if !(2..=4).contains(&name.len()) {
        return None;
    }
    name.chars()
        .map(|c| match c {
            'x' => Some(0),
            'y' => Some(1),
            'z' => Some(2),
            'w' => Some(3),
            _ => None,
        })
        .collect()
}

fn eval_lit_len(e: &syn::Expr) -> Option<u32> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok(),
        syn::Expr::Paren(p) => eval_lit_len(&p.expr),
        syn::Expr::Binary(b) => {
            let (l, r) = (eval_lit_len(&b.left)?, eval_lit_len(&b.right)?);
            match b.op {
                syn::BinOp::Add(_) => l.checked_add(r),
                syn::BinOp::Sub(_) => l.checked_sub(r),
                syn::BinOp::Mul(_) => l.checked_mul(r),
                syn::BinOp::Div(_) => l.checked_div(r),
                _ => None,
            }
        }
        _ => None,
    }
}

fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinOp::Add,
        syn::BinOp::SubAssign(_) => BinOp::Sub,
        syn::BinOp::MulAssign(_) => BinOp::Mul,
        syn::BinOp::DivAssign(_) => BinOp::Div,
        syn::BinOp::RemAssign(_) => BinOp::Rem,
        syn::BinOp::BitAndAssign(_) => BinOp::BitAnd,
        syn::BinOp::BitOrAssign(_) => BinOp::BitOr,
        syn::BinOp::BitXorAssign(_) => BinOp::BitXor,
        syn::BinOp::ShlAssign(_) => BinOp::Shl,
        syn::BinOp::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}

fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::Add(_) => BinOp::Add,
        syn::BinOp::Sub(_) => BinOp::Sub,
        syn::BinOp::Mul(_) => BinOp::Mul,
        syn::BinOp::Div(_) => BinOp::Div,
        syn::BinOp::Rem(_) => BinOp::Rem,
        syn::BinOp::BitAnd(_) => BinOp::BitAnd,
        syn::BinOp::BitOr(_) => BinOp::BitOr,
        syn::BinOp::BitXor(_) => BinOp::BitXor,
        syn::BinOp::Shl(_) => BinOp::Shl,
        syn::BinOp::Shr(_) => BinOp::Shr,
        syn::BinOp::Eq(_) => BinOp::Eq,
        syn::BinOp::Ne(_) => BinOp::Ne,
        syn::BinOp::Lt(_) => BinOp::Lt,
        syn::BinOp::Le(_) => BinOp::Le,
        syn::BinOp::Gt(_) => BinOp::Gt,
        syn::BinOp::Ge(_) => BinOp::Ge,
        syn::BinOp::And(_) => BinOp::And,
        syn::BinOp::Or(_) => BinOp::Or,
        _ => return None,
    })
}

fn vec_builtin(name: &str) -> Option<Builtin> {
    Some(match name {
        "global_id" => Builtin::GlobalId,
        "local_id" => Builtin::LocalId,
        "workgroup_id" => Builtin::WorkgroupId,
        "num_workgroups" => Builtin::NumWorkgroups,
        _ => return None,
    })
}

fn path_name_p(p: &syn::Path) -> Option<String> {
    Some(
        p.segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::"),
    )
}

fn path_name(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => path_name_p(&p.path),
        _ => None,
    }
}
