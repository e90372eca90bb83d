//! Stage 2, model: lowers the function body into the typed statement tree of `model`,
//! resolving names, inferring types (`infer`), and rejecting constructs outside the kernel
//! language with an error at the construct and a hint.

use crate::consts::f16_bits;
use crate::ctxt::Ctxt;
use crate::infer::{self, Infer};
use crate::model::*;
use crate::names::wg_axis_index;
use crate::types::{self, ty_text};
use proc_macro2::Span;
use std::collections::HashMap;
use syn::spanned::Spanned;

pub struct Lowerer<'k, 'a> {
    cx: &'k Ctxt,
    bindings: &'k [BindingParam<'a>],
    scalars: &'k [ScalarParam<'a>],
    knobs: &'k [Knob],
    pub locals: Vec<Local>,
    /// Inference variable of each local.
    local_tv: Vec<usize>,
    scopes: Vec<Scope>,
    /// Enclosing loops, innermost last.
    loop_stack: Vec<usize>,
    pub loops: usize,
    /// Whether each loop, by id, is `#[unroll]`ed.
    unrolled: Vec<bool>,
    inf: Infer,
    /// Helpers callable from this body.
    helpers: &'k [HelperFn],
    /// The module's `#[forge_struct]`s.
    structs: &'k [StructDef],
    /// Set while lowering a helper: the return type's variable, if it returns a value.
    in_helper: Option<Option<usize>>,
    /// Helpers called so far.
    pub calls: Vec<usize>,
    /// Subgroup operations lowered so far: the next one's id.
    pub subgroup_ops: usize,
    /// Set while lowering a helper call that is a statement, whose value may be nothing.
    call_statement: bool,
    /// The body uses a helper or a module const that failed to lower, whose errors are
    /// reported already: it must emit nothing, and report nothing more about it.
    pub tainted: bool,
    /// The kernel's grid dimensions: `WG_X`, `WG_Y` and `WG_Z` exist in 2-D and 3-D ones.
    pub grid_dims: usize,
    /// The module consts that failed to lower.
    failed_consts: Vec<String>,
    /// The `debug_print!` formats lowered so far: the next one's id.
    pub prints: Vec<PrintFmt>,
}

type R<T> = Result<T, ()>;

/// What a body can use of its `#[forge_module]`.
#[derive(Clone, Copy)]
pub struct Module<'k> {
    pub helpers: &'k [HelperFn],
    pub structs: &'k [StructDef],
    pub consts: &'k [ConstItem],
}

impl Shared {
    /// What a body sees of the module.
    pub fn module(&self) -> Module<'_> {
        Module {
            helpers: &self.helpers,
            structs: &self.structs,
            consts: &self.consts,
        }
    }
}

/// The names one block declares: its locals, and its `const` items with their values.
#[derive(Default)]
struct Scope {
    locals: HashMap<String, LocalId>,
    consts: HashMap<String, Expr>,
}

/// What a name resolves to.
enum Named<'s> {
    Local(LocalId),
    Const(&'s Expr),
}

impl<'k, 'a> Lowerer<'k, 'a> {
    /// A lowerer for a kernel's body (or, with no bindings, scalars and knobs, for a
    /// helper's or a module `const`'s), in `module`.
    pub fn new(
        cx: &'k Ctxt,
        bindings: &'k [BindingParam<'a>],
        scalars: &'k [ScalarParam<'a>],
        knobs: &'k [Knob],
        module: Module<'k>,
    ) -> Self {
        let Module {
            helpers,
            structs,
            consts,
        } = module;
        let mut l = Lowerer {
            structs,
            cx,
            bindings,
            scalars,
            knobs,
            grid_dims: 1,
            locals: Vec::new(),
            local_tv: Vec::new(),
            scopes: vec![Scope::default()],
            loop_stack: Vec::new(),
            loops: 0,
            unrolled: Vec::new(),
            inf: Infer::new(),
            helpers,
            in_helper: None,
            calls: Vec::new(),
            subgroup_ops: 0,
            call_statement: false,
            tainted: false,
            prints: Vec::new(),
            failed_consts: consts
                .iter()
                .filter(|c| c.failed)
                .map(|c| c.name.clone())
                .collect(),
        };
        // Module consts are the outermost names; their types are settled, so each use
        // gets variables of this body's inference.
        for c in consts {
            let value = match c.failed {
                false => l.retype(&c.value),
                true => l.poison(c.value.span),
            };
            l.scopes[0].consts.insert(c.name.clone(), value);
        }
        l
    }

    /// A copy of a typed expression with fresh inference variables fixed to its types.
    fn retype(&mut self, e: &Expr) -> Expr {
        let mut e = e.clone();
        fn go(l: &mut Lowerer<'_, '_>, e: &mut Expr) {
            e.tv = l.ty_var(&e.ty);
            e.each_child_mut(|a| go(l, a));
        }
        go(self, &mut e);
        e
    }

    /// Lowers a module's `const NAME: T = value;`: a constant of the kernel language,
    /// usable in every kernel and helper of the module. `shared` holds the consts before it.
    pub fn module_const(cx: &'k Ctxt, c: &syn::ItemConst, shared: &'k Shared) -> Option<ConstItem> {
        let errors = cx.error_count();
        let mut l = Lowerer::new(cx, &[], &[], &[], shared.module());
        let value = l.const_value(c);
        let mut body = Vec::new();
        l.finish(&mut body);
        let mut value = value.unwrap_or_else(|()| l.poison(c.ident.span()));
        l.finish_expr(&mut value);
        let mut sched = false;
        walk_expr(&value, &mut |x| {
            sched |= matches!(x.kind, ExprKind::Sched(_))
        });
        Some(ConstItem {
            name: c.ident.to_string(),
            value,
            sched,
            failed: l.tainted || cx.error_count() > errors,
        })
    }

    /// `WG_X`, `WG_Y` or `WG_Z`, in a kernel with a 2-D or 3-D grid.
    fn wg_axis(&self, name: &str) -> Option<SchedConst> {
        wg_axis_index(name)
            .filter(|_| self.grid_dims > 1)
            .map(SchedConst::WgAxis)
    }

    /// The value of a `const` item, checked to be constant, with its declared type.
    fn const_value(&mut self, c: &syn::ItemConst) -> R<Expr> {
        let name = c.ident.to_string();
        if let Some(g) = c.generics.params.first() {
            return self.err(g.span(), "generic `const` items are not supported");
        }
        if matches!(
            name.as_str(),
            "WG" | "ITEMS" | "VEC" | "WG_X" | "WG_Y" | "WG_Z"
        ) || self.knobs.iter().any(|k| k.name == name)
        {
            return self.err(
                c.ident.span(),
                format!("`{name}` is already a schedule constant of this kernel; name the `const` differently"),
            );
        }
        if matches!(&*c.ty, syn::Type::Array(_)) {
            return self.err(
                c.ty.span(),
                "array `const`s are not supported; declare the table with `let`, as in `let t = [1.0f32, 0.5];`",
            );
        }
        let tv = self.type_annotation(&c.ty)?;
        let value = self.expr(&c.expr)?;
        self.unify_at(value.span, tv, value.tv);
        let mut bad = None;
        walk_expr(&value, &mut |x| {
            let ok = matches!(
                x.kind,
                ExprKind::IntLit(_)
                    | ExprKind::FloatLit(_)
                    | ExprKind::BoolLit(_)
                    | ExprKind::Sched(_)
                    | ExprKind::Unary(..)
                    | ExprKind::Binary(..)
                    | ExprKind::Cast(_)
                    | ExprKind::VecNew(_)
                    | ExprKind::Swizzle(..)
                    | ExprKind::Math(..)
                    | ExprKind::Select(..)
            );
            if !ok && bad.is_none() {
                bad = Some((x.span, x.end));
            }
        });
        if let Some((start, end)) = bad {
            self.cx.error_range(
                start,
                end,
                "a `const` is computed at compile time, from literals, other consts, `WG`, `ITEMS`, `VEC`, knobs and arithmetic; for a value computed at run time use `let`",
            );
            return Err(());
        }
        Ok(value)
    }

    /// Lowers a `#[forge_fn]` helper. `shared` holds what the module declared before it:
    /// the helpers it may call, the structs and the consts. Its calls of inline helpers
    /// are still calls: `inline::helper` inlines them.
    pub fn helper(cx: &'k Ctxt, f: &syn::ItemFn, shared: &'k Shared) -> Option<HelperFn> {
        let errors = cx.error_count();
        let mut l = Lowerer::new(cx, &[], &[], &[], shared.module());
        if let Some(g) = f.sig.generics.params.first() {
            cx.error(g.span(), "generic helpers are not supported");
        }
        let mut params = Vec::new();
        let mut refs = Vec::new();
        for arg in &f.sig.inputs {
            let syn::FnArg::Typed(pt) = arg else {
                cx.error(arg.span(), "a helper cannot take `self`");
                continue;
            };
            let syn::Pat::Ident(pi) = &*pt.pat else {
                cx.error(pt.pat.span(), "helper parameters must be plain identifiers");
                continue;
            };
            // `t: &mut [f32; 256]` and `t: &[f32; N]`: an array by reference.
            let (ty, by_ref) = match &*pt.ty {
                syn::Type::Reference(r) => {
                    if !matches!(&*r.elem, syn::Type::Array(_)) {
                        let t = &r.elem;
                        cx.error(
                            pt.ty.span(),
                            format!("helpers take arrays by reference, and scalars and vectors by value; write `{}: {}`", pi.ident, quote::quote!(#t)),
                        );
                    }
                    if let Some(lt) = &r.lifetime {
                        cx.error(
                            lt.span(),
                            "helper references take no lifetime; write `&mut [T; N]`",
                        );
                    }
                    (&*r.elem, Some(r.mutability.is_some()))
                }
                t => (t, None),
            };
            if by_ref.is_some() && pi.mutability.is_some() {
                cx.error(
                    pi.ident.span(),
                    format!("`mut {0}` would rebind the reference, which helpers cannot; write `{0}: &mut [..]` to change the array", pi.ident),
                );
            }
            let tv = match l.type_annotation(ty) {
                Ok(tv) => tv,
                Err(()) => l.inf.error(),
            };
            let id = l.declare(
                &pi.ident.to_string(),
                pi.mutability.is_some() || by_ref == Some(true),
                false,
                pi.ident.span(),
                tv,
            );
            l.locals[id].by_ref = by_ref;
            params.push(id);
            refs.push(by_ref);
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
        let locals = std::mem::take(&mut l.locals);
        Some(HelperFn {
            name: f.sig.ident.to_string(),
            params,
            // Settled once its own calls are inlined (`inline::helper`).
            inline: false,
            failed: l.tainted || cx.error_count() > errors,
            refs,
            loops: l.loops,
            subgroup_ops: l.subgroup_ops,
            ret,
            locals,
            body,
            calls: Vec::new(),
        })
    }

    /// The type variable of an element: of an array, or a component of a vector (`v[k]`,
    /// as glam's `Index`, which an unrolled `k` makes a constant swizzle).
    fn element_of(&mut self, tv: usize) -> Option<usize> {
        if let Some(e) = self.inf.array_elem(tv) {
            return Some(e);
        }
        let (s, _) = self.inf.vector(tv)?;
        Some(self.inf.of_scalar(s))
    }

    /// A new loop's id.
    fn new_loop(&mut self, unroll: bool) -> usize {
        self.unrolled.push(unroll);
        self.loops += 1;
        self.loops - 1
    }

    /// A stand-in for an expression already reported as an error, so that what uses it
    /// reports nothing more.
    fn poison(&mut self, span: Span) -> Expr {
        let tv = self.inf.error();
        self.expr_of(ExprKind::IntLit(0), tv, span)
    }

    fn err<T>(&self, span: Span, msg: impl std::fmt::Display) -> R<T> {
        self.cx.error(span, msg);
        Err(())
    }

    /// An error underlining all of `tokens`.
    fn err_spanned<T>(&self, tokens: impl quote::ToTokens, msg: impl std::fmt::Display) -> R<T> {
        self.cx.error_spanned(tokens, msg);
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

    /// A variable fixed to a type.
    fn ty_var(&mut self, t: &Ty) -> usize {
        match t {
            Ty::Vector(s, n) => self.inf.of_vector(*s, *n),
            Ty::Scalar(s) => self.inf.of_scalar(*s),
            Ty::Array(e, len) => {
                let e = self.ty_var(e);
                self.inf.of_array(e, len.clone())
            }
            Ty::Struct(s) => self.inf.of_struct(*s),
            Ty::Coop(s, r) => self.inf.of_coop(*s, *r),
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
            by_ref: None,
            assigned: false,
            atomic: false,
        });
        self.local_tv.push(tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.insert(name.to_string(), id);
        }
        id
    }

    /// What a name means here: the innermost local or `const` of that name.
    fn resolve(&self, name: &str) -> Option<Named<'_>> {
        self.scopes.iter().rev().find_map(|s| {
            s.locals
                .get(name)
                .map(|id| Named::Local(*id))
                .or_else(|| s.consts.get(name).map(Named::Const))
        })
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        match self.resolve(name)? {
            Named::Local(id) => Some(id),
            Named::Const(_) => None,
        }
    }

    // ---- statements --------------------------------------------------------------

    pub fn block(&mut self, b: &syn::Block) -> Block {
        self.scopes.push(Scope::default());
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
            syn::Stmt::Item(syn::Item::Const(c)) => {
                let value = match self.const_value(c) {
                    Ok(v) => v,
                    // Still declared, so that its uses add no "cannot find" errors.
                    Err(()) => {
                        let tv = self.inf.error();
                        self.expr_of(ExprKind::IntLit(0), tv, c.ident.span())
                    }
                };
                if let Some(scope) = self.scopes.last_mut() {
                    scope.consts.insert(c.ident.to_string(), value);
                }
            }
            syn::Stmt::Item(i) => self.cx.error(i.span(), "items inside a kernel are not supported, except `const NAME: T = value;`; move them outside the kernel"),
            syn::Stmt::Macro(m) if m.mac.path.is_ident("debug_print") => {
                let _ = self.print(&m.mac, out);
            }
            syn::Stmt::Macro(m) => self.cx.error(
                m.span(),
                "macros are not supported in kernels; write the code out, or move host-side logic outside the kernel",
            ),
        }
    }

    /// A `let`. When it is refused, the names it declares are still declared, with a type
    /// that agrees with every use: one mistake gives one error, not one per later use.
    fn local(&mut self, l: &syn::Local, out: &mut Block) -> R<()> {
        let before = self.locals.len();
        let result = self.local_inner(l, out);
        if result.is_err() {
            let mut names = Vec::new();
            pattern_names(&l.pat, &mut names);
            for ident in names {
                let name = ident.to_string();
                let declared = self.locals[before..].iter().any(|x| x.name == name);
                if !declared && name != "_" {
                    let tv = self.inf.error();
                    // Mutable, so that assignments to it report nothing more either.
                    let id = self.declare(&name, true, false, ident.span(), tv);
                    self.locals[id].assigned = true;
                }
            }
        }
        result
    }

    fn local_inner(&mut self, l: &syn::Local, out: &mut Block) -> R<()> {
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init) {
            if let syn::Expr::MethodCall(m) = &*init.expr {
                if m.method == "compare_exchange_weak" {
                    return self.compare_exchange(pt, m, out);
                }
            }
        }
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
            if matches!(&*init.expr, syn::Expr::If(_) | syn::Expr::Match(_)) {
                let tv = ann_tv.unwrap_or_else(|| self.inf.fresh());
                let id = self.declare(&name, mutable, shared, span, tv);
                self.locals[id].assigned = true;
                out.push(Stmt::Let {
                    local: id,
                    init: None,
                });
                return self.value_into(&init.expr, id, out);
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
        if let Some(s) = types::struct_type(t, self.structs) {
            return Ok(self.inf.of_struct(s));
        }
        if let Some(s) = types::scalar_type(t) {
            return Ok(self.inf.of_scalar(s));
        }
        if let Some((s, n)) = types::vector_type(t) {
            return Ok(self.inf.of_vector(s, n));
        }
        match types::coop_type(t) {
            Some(Ok((s, role))) => {
                self.coop_allowed(t.span())?;
                return Ok(self.inf.of_coop(s, role));
            }
            Some(Err(msg)) => return self.err(t.span(), msg),
            None => {}
        }
        if let syn::Type::Array(a) = t {
            let e = self.type_annotation(&a.elem)?;
            let len = self.const_len(&a.len)?;
            return Ok(self.inf.of_array(e, len));
        }
        self.err(
            t.span(),
            format!(
                "unsupported type `{}`; use `f32`, `u32`, `i32`, `f16`, `f64`, `bool`, a vector such as `Vec4`, or `[T; N]`",
                quote::quote!(#t)
            ),
        )
    }

    /// Array lengths: integer literals, `WG`, `ITEMS`, `VEC`, knobs and `u32` consts, with
    /// `+ - * / %` and parentheses. A length without schedule constants is evaluated now,
    /// so that the oracle can use a Rust array.
    fn const_len(&mut self, e: &syn::Expr) -> R<ConstLen> {
        const HINT: &str = "array lengths are integer literals, consts, `WG`, `ITEMS`, `VEC` and knobs, with `+ - * / %`; kernel arrays have a size fixed at compile time";
        let c = match self.len_expr(e) {
            Ok(c) => c,
            Err(span) => return self.err(span, HINT),
        };
        let lit_only = {
            fn lit(c: &CExpr) -> bool {
                match c {
                    CExpr::Lit(_) => true,
                    CExpr::Sched(_) => false,
                    CExpr::Bin(_, a, b) => lit(a) && lit(b),
                }
            }
            lit(&c)
        };
        if !lit_only {
            return Ok(ConstLen::Sched(c));
        }
        let none = SchedPoint::new(&[0], 0, 0);
        match c.eval(&none) {
            Some(v) if v > 0 => Ok(ConstLen::Lit(v)),
            _ => self.err(
                e.span(),
                "array length must be a positive integer that fits in `u32`",
            ),
        }
    }

    fn len_expr(&mut self, e: &syn::Expr) -> Result<CExpr, Span> {
        Ok(match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => CExpr::Lit(i.base10_parse().map_err(|_| i.span())?),
            syn::Expr::Paren(p) => self.len_expr(&p.expr)?,
            syn::Expr::Group(g) => self.len_expr(&g.expr)?,
            syn::Expr::Path(p) => {
                let name = p
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                if let Some(Named::Const(v)) = self.resolve(&name) {
                    let v = v.clone();
                    return const_cexpr(&v).ok_or(p.span());
                }
                match name.as_str() {
                    "WG" => CExpr::Sched(SchedConst::Wg),
                    "ITEMS" => CExpr::Sched(SchedConst::Items),
                    "VEC" => CExpr::Sched(SchedConst::Vec),
                    _ => match self.knobs.iter().position(|k| k.name == name) {
                        Some(i) => CExpr::Sched(SchedConst::Knob(i)),
                        None => match self.wg_axis(&name) {
                            Some(c) => CExpr::Sched(c),
                            None => return Err(p.span()),
                        },
                    },
                }
            }
            syn::Expr::Binary(b) => {
                let op = match b.op {
                    syn::BinOp::Add(_) => LenOp::Add,
                    syn::BinOp::Sub(_) => LenOp::Sub,
                    syn::BinOp::Mul(_) => LenOp::Mul,
                    syn::BinOp::Div(_) => LenOp::Div,
                    syn::BinOp::Rem(_) => LenOp::Rem,
                    _ => return Err(b.op.span()),
                };
                let (l, r) = (self.len_expr(&b.left)?, self.len_expr(&b.right)?);
                CExpr::Bin(op, Box::new(l), Box::new(r))
            }
            other => return Err(other.span()),
        })
    }

    fn expr_stmt(&mut self, e: &syn::Expr, out: &mut Block) -> R<()> {
        let span = e.span();
        if let Some(a) = stmt_attrs(e).first() {
            let msg = if a.path().is_ident("unroll") {
                "`#[unroll]` applies to a `for` loop over a constant range, such as `#[unroll] for i in 0..4`"
            } else {
                "attributes are not supported on this statement; the kernel language knows `#[unroll]` on `for` loops and `#[shared]` on `let`"
            };
            self.cx.error_spanned(a, msg);
        }
        match e {
            syn::Expr::Assign(a) => {
                if matches!(&*a.right, syn::Expr::If(_) | syn::Expr::Match(_)) {
                    if let syn::Expr::Path(p) = &*a.left {
                        if let Some(id) =
                            p.path.get_ident().and_then(|i| self.lookup(&i.to_string()))
                        {
                            self.mark_assigned(id, a.left.span());
                            return self.value_into(&a.right, id, out);
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
                if let Some((s, n)) = self.inf.vector(ptv) {
                    self.vector_compound(op, ptv, &value, s, n, &b.op)?;
                } else if op.is_shift() {
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
            syn::Expr::Match(mt) => return self.match_stmt(mt, None, out),
            syn::Expr::ForLoop(f) => {
                if let Some(l) = &f.label {
                    return self.err(l.span(), "loop labels are not supported in kernels");
                }
                let mut unroll = false;
                for a in &f.attrs {
                    if !a.path().is_ident("unroll") {
                        self.cx.error_spanned(
                            a,
                            "unknown attribute on `for`; only `#[unroll]` is allowed",
                        );
                    } else if !matches!(a.meta, syn::Meta::Path(_)) {
                        self.cx.error_spanned(&a.meta, "`#[unroll]` takes no arguments: the loop's constant bounds say how many copies it makes");
                    } else {
                        unroll = true;
                    }
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
                // A refused bound still lets the body be lowered, for its own errors.
                let start = self
                    .expr(start)
                    .unwrap_or_else(|_| self.poison(start.span()));
                let end = self.expr(end).unwrap_or_else(|_| self.poison(end.span()));
                self.unify_at(end.span, start.tv, end.tv);
                self.constrain_at(
                    start.span,
                    start.tv,
                    infer::S_INT,
                    "loop ranges are integer ranges",
                );
                let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
                let id = self.new_loop(unroll);
                self.scopes.push(Scope::default());
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
                out.push(Stmt::For(ForLoop {
                    var,
                    start,
                    end,
                    inclusive,
                    body,
                    id,
                    unroll,
                }));
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
                let id = self.new_loop(false);
                self.loop_stack.push(id);
                let body = self.block(&w.body);
                self.loop_stack.pop();
                out.push(Stmt::While { cond, body, id });
            }
            syn::Expr::Loop(l) => {
                if let Some(lb) = &l.label {
                    return self.err(lb.span(), "loop labels are not supported in kernels");
                }
                let id = self.new_loop(false);
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
                if self.unrolled[target] {
                    return self.err(span, "`break` cannot leave an `#[unroll]` loop, whose iterations are copies of its body; guard the rest of the body with an `if`, or drop `#[unroll]`");
                }
                out.push(Stmt::Break { target, span });
            }
            syn::Expr::Continue(c) => {
                if c.label.is_some() {
                    return self.err(span, "`continue` with a label is not supported in kernels");
                }
                let Some(&target) = self.loop_stack.last() else {
                    return self.err(span, "`continue` outside of a loop");
                };
                if self.unrolled[target] {
                    return self.err(span, "`continue` cannot skip to the next copy of an `#[unroll]` loop's body; guard the rest of the body with an `if`, or drop `#[unroll]`");
                }
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
            syn::Expr::Macro(m) if m.mac.path.is_ident("debug_print") => {
                return self.print(&m.mac, out)
            }
            // A helper called for its effects on the arrays it takes by reference (or for
            // its barriers); `inline` puts its body here.
            syn::Expr::Call(c)
                if path_name(&c.func)
                    .is_some_and(|n| self.helpers.iter().any(|h| h.name == n && h.inline)) =>
            {
                self.call_statement = true;
                let expr = self.call(c);
                self.call_statement = false;
                out.push(Stmt::Eval { expr: expr? });
            }
            syn::Expr::MethodCall(m) if AtomicOp::from_method(&m.method.to_string()).is_some() => {
                let expr = self.expr(e)?;
                out.push(Stmt::Eval { expr });
            }
            syn::Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "store_row_major" | "store_col_major"
                ) =>
            {
                let expr = self.coop_store(m)?;
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

    /// `debug_print!("fmt", args..)`: its format string parsed into a new format of the
    /// kernel, and its arguments lowered. `check::prints` checks the count and the types.
    fn print(&mut self, mac: &syn::Macro, out: &mut Block) -> R<()> {
        use syn::parse::Parser;
        let span = mac.path.span();
        if self.in_helper.is_some() {
            return self.err(span, "`debug_print!` is allowed in kernel bodies only, not in `#[forge_fn]` helpers; return the value and print it in the kernel");
        }
        let parser = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        let items = match parser.parse2(mac.tokens.clone()) {
            Ok(items) => items,
            Err(e) => {
                return self.err(
                    e.span(),
                    format!("`debug_print!` takes a format string and values: {e}"),
                )
            }
        };
        let mut items = items.into_iter();
        let lit = match items.next() {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(lit),
                ..
            })) => lit,
            Some(other) => {
                return self.err(
                    other.span(),
                    "the first argument of `debug_print!` is a format string literal: `debug_print!(\"i = {}\", i)`",
                )
            }
            None => {
                return self.err(
                    mac.delimiter.span().join(),
                    "`debug_print!` needs a format string: `debug_print!(\"i = {}\", i)`",
                )
            }
        };
        let text = lit.value();
        let (pieces, debug) = match parse_print_format(&text) {
            Ok(p) => p,
            Err(why) => return self.err(lit.span(), why),
        };
        let mut args = Vec::new();
        for a in items {
            args.push(self.expr(&a)?);
        }
        let format = self.prints.len();
        self.prints.push(PrintFmt {
            text,
            pieces,
            debug,
            span: lit.span(),
        });
        out.push(Stmt::Print { format, args, span });
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

    /// Lowers an `if` or `match` that gives a value into statements assigning `target`.
    fn value_into(&mut self, e: &syn::Expr, target: LocalId, out: &mut Block) -> R<()> {
        match e {
            syn::Expr::If(ei) => self.if_into(ei, target, out),
            syn::Expr::Match(mt) => self.match_stmt(mt, Some(target), out),
            syn::Expr::Paren(p) => self.value_into(&p.expr, target, out),
            other => {
                let value = self.expr(other)?;
                let tv = self.local_tv[target];
                self.unify_at(value.span, tv, value.tv);
                out.push(Stmt::Assign {
                    place: Place::Local(target),
                    op: None,
                    value,
                    span: other.span(),
                });
                Ok(())
            }
        }
    }

    /// `match` on an integer, as a statement or (with `target`) giving the value of
    /// `target`. The scrutinee is evaluated once into a hidden local, which an arm `n => ..`
    /// binds; each arm's values are those that no earlier arm names, as Rust matches the
    /// first arm that fits.
    fn match_stmt(
        &mut self,
        mt: &syn::ExprMatch,
        target: Option<LocalId>,
        out: &mut Block,
    ) -> R<()> {
        let scrutinee = self.expr(&mt.expr)?;
        self.constrain_at(
            scrutinee.span,
            scrutinee.tv,
            infer::S_INT,
            "`match` works on `u32` and `i32` values; for other types use `if`/`else`",
        );
        let (span, tv) = (scrutinee.span, scrutinee.tv);
        let hidden = self.declare("fg_match", false, false, span, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_match");
        }
        self.locals[hidden].name = "match value".to_string();
        self.locals[hidden].hidden = Some("fg_match");
        out.push(Stmt::Let {
            local: hidden,
            init: Some(scrutinee),
        });
        let mut selector = self.expr_of(ExprKind::Local(hidden), tv, span);
        selector.end = last_span(&mt.expr);
        let mut seen = std::collections::HashSet::new();
        let mut cases = Vec::new();
        let mut default: Option<Block> = None;
        for arm in &mt.arms {
            if let Some((if_token, _)) = &arm.guard {
                self.cx.error(
                    if_token.span(),
                    "`match` guards are not supported in kernels: an arm is a `switch` case; test inside the arm instead: `n => if cond { .. } else { .. }`",
                );
                continue;
            }
            let mut values = Vec::new();
            let mut catch_all: Option<Option<&syn::PatIdent>> = None;
            let alternatives: Vec<&syn::Pat> = match &arm.pat {
                syn::Pat::Or(o) => o.cases.iter().collect(),
                p => vec![p],
            };
            for p in alternatives {
                match p {
                    syn::Pat::Wild(_) => catch_all = Some(None),
                    syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        catch_all = Some(Some(pi))
                    }
                    _ => {
                        if let Ok(vs) = self.pattern_values(p, tv) {
                            values.extend(vs);
                        }
                    }
                }
            }
            if default.is_some() {
                // Unreachable after a catch-all arm, as rustc would warn; nothing runs it.
                continue;
            }
            self.scopes.push(Scope::default());
            let mut body = Vec::new();
            if let Some(Some(pi)) = catch_all {
                let id = self.declare(
                    &pi.ident.to_string(),
                    pi.mutability.is_some(),
                    false,
                    pi.ident.span(),
                    tv,
                );
                let init = self.expr_of(ExprKind::Local(hidden), tv, span);
                body.push(Stmt::Let {
                    local: id,
                    init: Some(init),
                });
            }
            let lowered = match target {
                Some(t) => self.arm_value(&arm.body, t, &mut body),
                None => self.arm_stmt(&arm.body, &mut body),
            };
            self.scopes.pop();
            if lowered.is_err() {
                continue;
            }
            if catch_all.is_some() {
                default = Some(body);
            } else {
                values.retain(|v| seen.insert(*v));
                if !values.is_empty() {
                    cases.push((values, body));
                }
            }
        }
        let Some(default) = default else {
            return self.err(
                mt.match_token.span(),
                "this `match` needs a catch-all arm, since its arms do not cover every integer: add `_ => {}` (or `_ => value` for a `match` that gives one) as the last arm",
            );
        };
        out.push(Stmt::Switch {
            selector,
            cases,
            default,
        });
        Ok(())
    }

    /// The values of a literal or range pattern, with the scrutinee's type constrained to
    /// hold them.
    fn pattern_values(&mut self, p: &syn::Pat, tv: usize) -> R<Vec<i64>> {
        const MAX_RANGE: i64 = 256;
        let int = |e: &syn::Expr| -> Option<i64> {
            match e {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse::<i64>().ok(),
                _ => None,
            }
        };
        let values: Vec<i64> = match p {
            syn::Pat::Lit(l) => match int(&syn::Expr::Lit(l.clone())) {
                Some(v) => vec![v],
                None => return self.err_spanned(p, "`match` arms are integer literals (`3`), ranges of them (`4..=7`), `|` between them, or `_`"),
            },
            syn::Pat::Range(r) => {
                let (Some(a), Some(b)) = (r.start.as_deref().and_then(int), r.end.as_deref().and_then(int)) else {
                    return self.err_spanned(p, "a range arm needs two integer literals as bounds, such as `4..=7`");
                };
                let b = match r.limits {
                    syn::RangeLimits::Closed(_) => b,
                    syn::RangeLimits::HalfOpen(_) => b - 1,
                };
                if b < a {
                    return self.err_spanned(p, "this range arm matches no value; its start must not be above its end");
                }
                if b - a >= MAX_RANGE {
                    return self.err_spanned(p, format!("this range arm covers {} values, but a `match` becomes a WGSL `switch` whose cases name each value, up to {MAX_RANGE} an arm; test wide ranges with `if x >= a && x <= b`", b - a + 1));
                }
                (a..=b).collect()
            }
            syn::Pat::Paren(inner) => return self.pattern_values(&inner.pat, tv),
            other => return self.err_spanned(other, "`match` arms are integer literals (`3`), ranges of them (`4..=7`), `|` between them, or `_`"),
        };
        let (lo, hi) = (
            values[0].min(values[values.len() - 1]),
            values[0].max(values[values.len() - 1]),
        );
        if lo < i32::MIN as i64 || hi > u32::MAX as i64 {
            return self.err_spanned(p, "this pattern does not fit in 32 bits");
        }
        if lo < 0 {
            self.constrain_at(
                p.span(),
                tv,
                infer::S_I32,
                "a negative arm needs an `i32` value",
            );
        }
        if hi > i32::MAX as i64 {
            self.constrain_at(
                p.span(),
                tv,
                infer::S_U32,
                "an arm above `i32::MAX` needs a `u32` value",
            );
        }
        Ok(values)
    }

    /// The body of a `match` arm that is a statement: a block, or one expression.
    fn arm_stmt(&mut self, body: &syn::Expr, out: &mut Block) -> R<()> {
        match body {
            syn::Expr::Block(b) if b.label.is_none() => {
                for s in &b.block.stmts {
                    self.stmt(s, out);
                }
                Ok(())
            }
            syn::Expr::Tuple(t) if t.elems.is_empty() => Ok(()),
            other => self.expr_stmt(other, out),
        }
    }

    /// The body of a `match` arm that gives the value of `target`.
    fn arm_value(&mut self, body: &syn::Expr, target: LocalId, out: &mut Block) -> R<()> {
        match body {
            syn::Expr::Block(b) if b.label.is_none() => {
                let inner = self.block_into(&b.block, target)?;
                out.extend(inner);
                Ok(())
            }
            other => self.value_into(other, target, out),
        }
    }

    /// The right-hand side of an assignment. An `if` value (`y[i] = if c { a } else { b }`,
    /// `acc += if ..`) is computed first into a fresh local, as Rust evaluates the value
    /// before the place; the assignment then reads that local.
    fn value_or_if(&mut self, e: &syn::Expr, out: &mut Block) -> R<Expr> {
        let mut inner = e;
        while let syn::Expr::Paren(p) = inner {
            inner = &p.expr;
        }
        if !matches!(inner, syn::Expr::If(_) | syn::Expr::Match(_)) {
            return self.expr(e);
        }
        let span = e.span();
        let tv = self.inf.fresh();
        let id = self.declare("fg_if", true, false, span, tv);
        // A hidden local: no user name resolves to it, and messages call it what it is.
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_if");
        }
        self.locals[id].name = "if value".to_string();
        self.locals[id].hidden = Some("fg_if");
        self.locals[id].assigned = true;
        out.push(Stmt::Let {
            local: id,
            init: None,
        });
        self.value_into(inner, id, out)?;
        let mut value = self.expr_of(ExprKind::Local(id), tv, span);
        value.end = last_span(e);
        Ok(value)
    }

    fn block_into(&mut self, b: &syn::Block, target: LocalId) -> R<Block> {
        self.scopes.push(Scope::default());
        let mut out = Vec::new();
        let n = b.stmts.len();
        let mut result = Ok(());
        for (i, s) in b.stmts.iter().enumerate() {
            match s {
                syn::Stmt::Expr(e, None) if i + 1 == n => {
                    result = self.value_into(e, target, &mut out);
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
            syn::Expr::Field(f) => {
                let syn::Member::Named(id) = &f.member else {
                    return self.err(f.member.span(), "tuple fields are not supported");
                };
                let (base, btv) = self.place(&f.base)?;
                if let Some((s, n)) = self.inf.vector(btv) {
                    let c = match id.to_string().as_str() {
                        "x" => 0,
                        "y" => 1,
                        "z" => 2,
                        "w" => 3,
                        _ => 4,
                    };
                    if c >= n {
                        return self.err(id.span(), format!("a `vec{n}` has no component `{id}`"));
                    }
                    let tv = self.inf.of_scalar(s);
                    return Ok((Place::Component(Box::new(base), c), tv));
                }
                let Some(st) = self.inf.strukt(btv) else {
                    return self.err_spanned(
                        e,
                        "only the fields of a `#[forge_struct]` and the components of a vector can be assigned",
                    );
                };
                let def = &self.structs[st];
                let Some(i) = def.field(&id.to_string()) else {
                    let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
                    return self.err(id.span(), format!("`{}` has no field `{id}`; its fields are {}", def.name, method_list(names.into_iter())));
                };
                let ty = def.fields[i].ty.clone();
                let tv = self.ty_var(&ty);
                Ok((Place::Field(Box::new(base), i), tv))
            }
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
                    syn::Expr::Field(_) => {
                        // An array field: `p.hits[0] = ..`.
                        let (base, btv) = self.place(&ix.expr)?;
                        let Some(elem) = self.inf.array_elem(btv) else {
                            return self.err(ix.expr.span(), "this value is not an array and cannot be indexed");
                        };
                        let i = self.index_expr(&ix.index)?;
                        return Ok((Place::Index(Box::new(base), i), elem));
                    }
                    other => return self.err(other.span(), "only bindings, local arrays and arrays in struct fields can be indexed"),
                };
                // A local shadows a binding of the same name, as in Rust.
                let binding = match self.lookup(&name) {
                    Some(_) => None,
                    None => self.bindings.iter().position(|b| b.name == name),
                };
                if let Some(b) = binding {
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
                    let msg = if self.locals[id].by_ref.is_some() {
                        format!("cannot assign to an element of `{n}`, which is behind a `&` reference; take it as `{n}: &mut [..]`")
                    } else {
                        format!("cannot assign to an element of immutable array `{n}`; declare it with `let mut {n}`")
                    };
                    self.cx.error(root.span(), msg);
                }
                self.locals[id].assigned = true;
                let mut tv = self.local_tv[id];
                let mut idxs = Vec::new();
                for i in chain {
                    let Some(elem) = self.element_of(tv) else {
                        return self.err(i.span(), "this value is not an array or a vector and cannot be indexed");
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
                let Some(target) = types::scalar_type(&c.ty) else {
                    let t = &c.ty;
                    return self.err(t.span(), format!("cannot cast to `{}`; casts go to `f32`, `u32`, `i32`, `f16` or `f64`", quote::quote!(#t)));
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
                let Some(elem) = self.element_of(base.tv) else {
                    return self.err(ix.expr.span(), "this value is not an array or a vector and cannot be indexed");
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
                // Scalars or vectors, as in `[x0, x1]` of `Vec4`s: a register array's values.
                if self.inf.is_array(first) {
                    return self.err(span, "arrays of arrays are not supported; use a flat array");
                }
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
                    "x" => Some(0),
                    "y" => Some(1),
                    "z" => Some(2),
                    "w" => Some(3),
                    _ => None,
                };
                if let (syn::Expr::Call(c), Some(comp)) = (&*f.base, comp) {
                    if let Some(b) = path_name(&c.func).and_then(|n| vec_builtin(&n)) {
                        if !c.args.is_empty() {
                            return self.err(c.args.span(), "builtins take no arguments");
                        }
                        let tv = self.inf.of_scalar(Scalar::U32);
                        return Ok(self.expr_of(ExprKind::BuiltinComponent(b, comp), tv, span));
                    }
                }
                let base = self.expr(&f.base)?;
                if let Some(st) = self.inf.strukt(base.tv) {
                    let def = &self.structs[st];
                    let Some(i) = def.field(&member) else {
                        let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
                        return self.err(
                            f.member.span(),
                            format!("`{}` has no field `{member}`; its fields are {}", def.name, method_list(names.into_iter())),
                        );
                    };
                    let ty = def.fields[i].ty.clone();
                    let tv = self.ty_var(&ty);
                    return Ok(self.expr_of(ExprKind::Field(Box::new(base), i), tv, span));
                }
                let Some(comp) = comp else {
                    return self.err(f.member.span(), "unknown field; vectors and the `*_id()` builtins have fields `x`, `y`, `z` (and `w`), and a `#[forge_struct]` the fields it declares");
                };
                let Some((s, n)) = self.inf.vector(base.tv) else {
                    return self.err(span, "field access is supported on vectors, on `global_id()`, `local_id()`, `workgroup_id()` and `num_workgroups()`, and on `#[forge_struct]`s");
                };
                if comp >= n {
                    return self.err(f.member.span(), format!("a `vec{n}` has no component `{member}`"));
                }
                let tv = self.inf.of_scalar(s);
                Ok(self.expr_of(ExprKind::Swizzle(Box::new(base), vec![comp]), tv, span))
            }
            syn::Expr::Struct(lit) => self.struct_literal(lit),
            syn::Expr::If(_) => self.err(span, "an `if` used as a value must be the whole right-hand side of a `let` or an assignment; bind it first: `let v = if .. { .. } else { .. };`"),
            syn::Expr::Block(_) => self.err(span, "block expressions are not supported here"),
            syn::Expr::Closure(_) => self.err(span, "closures are not supported in kernels"),
            syn::Expr::Reference(_) => self.err(span, "references are not supported in kernel bodies; index bindings directly"),
            syn::Expr::Macro(_) => self.err(span, "macros are not supported in kernels"),
            syn::Expr::Tuple(_) => self.err(span, "tuples are not supported in kernels"),
            syn::Expr::Match(_) => self.err(span, "a `match` used as a value must be the whole right-hand side of a `let` or an assignment; bind it first: `let v = match x { .. };`"),
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
                    "f64" => self.inf.of_scalar(Scalar::F64),
                    s => {
                        return self.err(
                            span,
                            format!(
                            "unsupported literal suffix `{s}`; kernels use `u32`, `i32`, `f32` and `f64`"
                        ),
                        )
                    }
                };
                if matches!(i.suffix(), "f32" | "f64") {
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
                    "f64" => self.inf.of_scalar(Scalar::F64),
                    s => {
                        return self.err(
                            span,
                            format!(
                            "unsupported literal suffix `{s}`; kernels use `f32`, `f16` and `f64`"
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
        // `f32::consts::PI`, also through `std::` or `core::`.
        let names: Vec<&str> = segs.iter().map(String::as_str).collect();
        let consts_path = match names.as_slice() {
            ["std" | "core", rest @ ..] if rest.len() == 3 => rest,
            all => all,
        };
        if let [ty @ ("f32" | "f64"), "consts", name] = consts_path {
            {
                let s = if *ty == "f32" {
                    Scalar::F32
                } else {
                    Scalar::F64
                };
                let Some(v) = float_const(name, s) else {
                    return self.err(
                        span,
                        format!(
                            "unknown constant `{}`; `{ty}::consts` has {}",
                            segs.join("::"),
                            method_list(FLOAT_CONSTS.iter().map(|c| c.0))
                        ),
                    );
                };
                let tv = self.inf.of_scalar(s);
                return Ok(self.expr_of(ExprKind::FloatLit(v), tv, span));
            }
        }
        if segs.len() == 2 {
            if let Some((s, n)) = types::vector_name(&segs[0]) {
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
                "f64" => Scalar::F64,
                _ => return self.err(span, format!("unknown path `{}`", segs.join("::"))),
            };
            let tv = self.inf.of_scalar(s);
            let kind = match (s, segs[1].as_str()) {
                (Scalar::F64, "INFINITY") => ExprKind::FloatLit(f64::INFINITY),
                (Scalar::F64, "NEG_INFINITY") => ExprKind::FloatLit(f64::NEG_INFINITY),
                (Scalar::F64, "NAN") => ExprKind::FloatLit(f64::NAN),
                (Scalar::F64, "MAX") => ExprKind::FloatLit(f64::MAX),
                (Scalar::F64, "MIN") => ExprKind::FloatLit(f64::MIN),
                (Scalar::F64, "EPSILON") => ExprKind::FloatLit(f64::EPSILON),
                (Scalar::F64, "MIN_POSITIVE") => ExprKind::FloatLit(f64::MIN_POSITIVE),
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
        match self.resolve(name) {
            Some(Named::Local(id)) => {
                let tv = self.local_tv[id];
                return Ok(self.expr_of(ExprKind::Local(id), tv, span));
            }
            Some(Named::Const(value)) => {
                // A use is a copy of the value, pointing at the use.
                let mut v = value.clone();
                v.span = span;
                v.end = span;
                self.tainted |= self.failed_consts.contains(name);
                return Ok(v);
            }
            None => {}
        }
        if let Some(i) = self.scalars.iter().position(|s| &s.name == name) {
            let tv = if self.scalars[i].refused {
                self.inf.error()
            } else {
                self.inf.of_scalar(self.scalars[i].ty)
            };
            return Ok(self.expr_of(ExprKind::Scalar(i), tv, span));
        }
        let sched = match name.as_str() {
            "WG" => Some(SchedConst::Wg),
            "ITEMS" => Some(SchedConst::Items),
            "VEC" => Some(SchedConst::Vec),
            _ => self
                .knobs
                .iter()
                .position(|k| &k.name == name)
                .map(SchedConst::Knob)
                .or_else(|| self.wg_axis(name)),
        };
        if sched.is_none() && wg_axis_index(name).is_some() {
            return self.err(
                span,
                format!("`{name}` is a 2-D or 3-D workgroup's extent, and this kernel's grid is 1-D; use `WG`, or give the kernel `threads = (w, h)` and `workgroup = (16, 16)`"),
            );
        }
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
        let statement = std::mem::take(&mut self.call_statement);
        if let Some(h) = self.helpers.iter().position(|h| h.name == name) {
            let helper = &self.helpers[h];
            self.tainted |= helper.failed;
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
            let refs = helper.refs.clone();
            let ret = helper.ret.clone();
            let mut args = Vec::new();
            for ((a, t), by_ref) in c.args.iter().zip(&param_tys).zip(refs) {
                let e = match by_ref {
                    Some(mutable) => self.ref_arg(&name, a, t, mutable)?,
                    None => {
                        if let syn::Expr::Reference(r) = a {
                            return self.err(
                                a.span(),
                                format!(
                                    "`{name}` takes this argument by value; pass `{}`",
                                    quote::quote!(#r.expr).to_string().replace(' ', "")
                                ),
                            );
                        }
                        let e = self.expr(a)?;
                        let tv = self.ty_var(t);
                        self.unify_at(e.span, tv, e.tv);
                        e
                    }
                };
                args.push(e);
            }
            let tv = match ret {
                Some(ret) => self.ty_var(&ret),
                // A statement: `inline` replaces it with the helper's body.
                None if self.helpers[h].inline && statement => self.inf.of_scalar(Scalar::Bool),
                None => {
                    return self.err(
                        span,
                        format!("`{name}` returns nothing, so it cannot be used as a value"),
                    )
                }
            };
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
        if let Some(b) = scalar_builtin {
            if !c.args.is_empty() {
                return self.err(c.args.span(), "builtins take no arguments");
            }
            let tv = self.inf.of_scalar(Scalar::U32);
            return Ok(self.expr_of(ExprKind::Builtin(b), tv, span));
        }
        if let Some(b) = vec_builtin(&name) {
            if !c.args.is_empty() {
                return self.err(c.args.span(), "builtins take no arguments");
            }
            let tv = self.inf.of_vector(Scalar::U32, 3);
            return Ok(self.expr_of(ExprKind::Builtin(b), tv, span));
        }
        if let Some((ty, ctor)) = name.split_once("::") {
            if let Some(role) = types::coop_role(ty) {
                return self.coop_call(c, role, ctor);
            }
            if let Some(st) = self.structs.iter().position(|s| s.name == ty) {
                if ctor != "zeroed" || !c.args.is_empty() {
                    return self.err(c.func.span(), format!("`{name}` is not a function of `{ty}`; build one with `{ty} {{ .. }}`, or `{ty}::zeroed()` for zeros"));
                }
                let tv = self.inf.of_struct(st);
                return Ok(self.expr_of(ExprKind::StructZero(st), tv, span));
            }
            if let Some((s, n)) = types::vector_name(ty) {
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
        if let Some((f, result)) = packed_dot(&name) {
            if c.args.len() != 2 {
                return self.err(span, format!("`{name}(a, b)` takes two `u32`s"));
            }
            let mut args = Vec::new();
            for a in &c.args {
                let e = self.expr(a)?;
                self.constrain_at(
                    e.span,
                    e.tv,
                    infer::S_U32,
                    &format!("`{name}` takes `u32`s, each holding four bytes"),
                );
                args.push(e);
            }
            let tv = self.inf.of_scalar(result);
            return Ok(self.expr_of(ExprKind::Math(f, args), tv, span));
        }
        if name == "workgroup_barrier" || name == "storage_barrier" {
            return self.err(
                span,
                format!("`{name}()` is a statement; write `{name}();` on its own"),
            );
        }
        // In a helper, an unknown call is most often recursion or a helper declared later:
        // the user's error, which naga would otherwise reject as a bug of the macro's.
        if self.in_helper.is_some() {
            return self.err(
                c.func.span(),
                format!("cannot call `{name}` from a `#[forge_fn]` helper: a helper calls builtins, methods and the helpers declared before it, never itself or a later one (WGSL has no recursion); declare `{name}` above this helper, or turn the recursion into a loop"),
            );
        }
        self.err(
            c.func.span(),
            format!("cannot call `{name}` in a kernel; kernels call builtins (`global_index()`, ...) and methods such as `x.sqrt()`"),
        )
    }

    /// `Body { pos: a, vel: b }`: every field once, in any order; evaluated in declaration
    /// order, as WGSL's constructor evaluates its arguments.
    fn struct_literal(&mut self, lit: &syn::ExprStruct) -> R<Expr> {
        let span = lit.span();
        let name = path_name_p(&lit.path).unwrap_or_default();
        let Some(st) = self.structs.iter().position(|s| s.name == name) else {
            return self.err_spanned(&lit.path, format!("`{name}` is not a `#[forge_struct]` of this module; declare it there with `#[forge_struct]`"));
        };
        let def = &self.structs[st];
        if let Some(rest) = &lit.rest {
            return self.err_spanned(rest, format!("every field of `{name}` is given in a kernel; for zeros write `{name}::zeroed()`"));
        }
        let mut values: Vec<Option<Expr>> = vec![None; def.fields.len()];
        for fv in &lit.fields {
            let syn::Member::Named(id) = &fv.member else {
                return self.err_spanned(&fv.member, format!("`{name}` has named fields"));
            };
            let Some(i) = def.field(&id.to_string()) else {
                let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
                return self.err(
                    id.span(),
                    format!(
                        "`{name}` has no field `{id}`; its fields are {}",
                        method_list(names.into_iter())
                    ),
                );
            };
            if values[i].is_some() {
                return self.err(id.span(), format!("field `{id}` is given twice"));
            }
            let ty = def.fields[i].ty.clone();
            let e = self.expr(&fv.expr)?;
            let tv = self.ty_var(&ty);
            self.unify_at(e.span, tv, e.tv);
            values[i] = Some(e);
        }
        let def = &self.structs[st];
        let missing: Vec<String> = def
            .fields
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|(f, _)| format!("`{}`", f.name))
            .collect();
        if !missing.is_empty() {
            return self.err(span, format!("missing field(s) {} in this `{name}`; give every field, or start from `{name}::zeroed()` and assign the fields you need", missing.join(", ")));
        }
        let tv = self.inf.of_struct(st);
        Ok(self.expr_of(
            ExprKind::StructNew(st, values.into_iter().flatten().collect()),
            tv,
            span,
        ))
    }

    /// An argument for a helper's reference parameter: `&mut t` or `&t` of a local or
    /// workgroup array, or a reference parameter of the helper being lowered, passed on.
    /// It is the array itself, as `ExprKind::Local`; `inline` puts it in the parameter's
    /// place.
    fn ref_arg(&mut self, helper: &str, a: &syn::Expr, t: &Ty, mutable: bool) -> R<Expr> {
        let want = format!(
            "`&{}{}`",
            if mutable { "mut " } else { "" },
            ty_text(t, self.knobs)
        );
        let (inner, given_mut) = match a {
            syn::Expr::Reference(r) => (&*r.expr, Some(r.mutability.is_some())),
            other => (other, None),
        };
        let inner = match inner {
            // `&mut *t`, a reborrow of a reference parameter.
            syn::Expr::Unary(syn::ExprUnary {
                op: syn::UnOp::Deref(_),
                expr,
                ..
            }) => &**expr,
            other => other,
        };
        let name = match inner {
            syn::Expr::Path(p) => path_name_p(&p.path).unwrap_or_default(),
            other => {
                return self.err(
                    other.span(),
                    format!("`{helper}` takes {want}: pass a local or `#[shared]` array, as in `{helper}(&mut tile, ..)`"),
                )
            }
        };
        let Some(id) = self.lookup(&name) else {
            if self.bindings.iter().any(|b| b.name == name) {
                return self.err(
                    inner.span(),
                    format!("`{name}` is a binding, and helpers take local and `#[shared]` arrays by reference; pass the elements the helper needs, or copy them into a local array first"),
                );
            }
            return self.err(
                inner.span(),
                format!("cannot find value `{name}` in this kernel"),
            );
        };
        let passed_on = self.locals[id].by_ref;
        match (given_mut, passed_on) {
            // A reference parameter passed on as it is: `g(t)`.
            (None, Some(m)) if m || !mutable => {}
            (None, _) => {
                let amp = if mutable { "&mut " } else { "&" };
                return self.err(
                    a.span(),
                    format!("`{helper}` takes {want}; pass a reference: `{amp}{name}`"),
                );
            }
            (Some(false), _) if mutable => {
                return self.err(
                    a.span(),
                    format!(
                        "`{helper}` takes {want}, so it may change the array; pass `&mut {name}`"
                    ),
                )
            }
            _ => {}
        }
        if mutable {
            let l = &self.locals[id];
            let writable = l.by_ref.unwrap_or(l.mutable);
            if !writable {
                let msg = if l.by_ref.is_some() {
                    format!("cannot pass `{name}` as `&mut`: it is a `&` reference; take it as `{name}: &mut [..]`")
                } else {
                    format!("cannot borrow `{name}` as mutable, as it is not declared as mutable; declare it with `let mut {name}`")
                };
                return self.err(inner.span(), msg);
            }
            self.locals[id].assigned = true;
        }
        let tv = self.local_tv[id];
        let want_tv = self.ty_var(t);
        if self.inf.unify(want_tv, tv).is_err() {
            let found = self
                .inf
                .resolve(tv)
                .map(|t| ty_text(&t, self.knobs))
                .unwrap_or_else(|| "another type".into());
            return self.err(
                inner.span(),
                format!("mismatched types: `{helper}` takes {want}, but `{name}` is `{found}`"),
            );
        }
        Ok(self.expr_of(ExprKind::Local(id), tv, inner.span()))
    }

    /// `subgroup_add(v)`, `subgroup_shuffle(v, lane)` and the other subgroup operations.
    fn subgroup(&mut self, c: &syn::ExprCall, op: SubgroupOp) -> R<Expr> {
        use infer::{S_BOOL, S_F32, S_INT, S_U32};
        let span = c.span();
        let name = op.name();
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

    // ---- cooperative matrices ----------------------------------------------------

    /// Cooperative matrices are collective values of a subgroup: the oracle runs them with
    /// the kernel's lanes (`__fg_lane`), which helpers do not see.
    fn coop_allowed(&self, span: Span) -> R<()> {
        if self.in_helper.is_some() {
            return self.err(span, "cooperative matrices belong to the kernel body: a `#[forge_fn]` helper cannot hold one or call their operations (they are collective over the subgroup); compute indices in the helper and load, multiply and store in the kernel");
        }
        Ok(())
    }

    /// `CoopA::zeroed()`, `CoopA::load_row_major(&x[i], stride)` and
    /// `CoopA::load_col_major(&x[i], stride)`, likewise for `CoopB` and `CoopC`.
    fn coop_call(&mut self, c: &syn::ExprCall, role: CoopRole, func: &str) -> R<Expr> {
        let span = c.span();
        self.coop_allowed(span)?;
        let (ty, s) = (role.type_name(), role.elem());
        let (op, args, target) = match func {
            "zeroed" => {
                if !c.args.is_empty() {
                    return self.err(c.args.span(), format!("`{ty}::zeroed()` takes no arguments"));
                }
                (CoopOp::Zero, Vec::new(), None)
            }
            "load_row_major" | "load_col_major" => {
                if c.args.len() != 2 {
                    return self.err(span, format!("`{ty}::{func}(&x[i], stride)` takes a reference to the matrix's first element and the stride between its {}, in elements of `x`", if func == "load_row_major" { "rows" } else { "columns" }));
                }
                let (target, index) = self.coop_ref(&c.args[0], false, s, func)?;
                let stride = self.coop_stride(&c.args[1], func)?;
                let op = CoopOp::Load {
                    row_major: func == "load_row_major",
                };
                (op, vec![index, stride], Some(target))
            }
            _ => return self.err(c.func.span(), format!("`{func}` is not a function of `{ty}`; a cooperative matrix is made with `{ty}::zeroed()`, `{ty}::load_row_major(&x[i], stride)` or `{ty}::load_col_major(&x[i], stride)`")),
        };
        let tv = self.inf.of_coop(s, role);
        Ok(self.expr_of(ExprKind::Coop { op, target, args }, tv, span))
    }

    /// `a.mul_add(b, c)` on a cooperative matrix: `CoopA<f16>·CoopB<f16> + CoopC<f32>`.
    fn coop_method(
        &mut self,
        m: &syn::ExprMethodCall,
        a: Expr,
        s: Scalar,
        role: CoopRole,
    ) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        self.coop_allowed(span)?;
        let ty = format!("{}<{}>", role.type_name(), s.wgsl());
        if name == "store_row_major" || name == "store_col_major" {
            return self.err(
                m.method.span(),
                format!("`{name}` is a statement; write `m.{name}(&mut x[i], stride);` on its own"),
            );
        }
        if name != "mul_add" {
            return self.err(m.method.span(), format!("`{ty}` has no method `{name}`; cooperative matrices have `a.mul_add(b, c)` (`a·b + c`), `store_row_major` and `store_col_major`"));
        }
        if role != CoopRole::A {
            return self.err(a.span, format!("`mul_add` is called on the left operand, a `CoopA<f16>`, not on a `{ty}`: write `a.mul_add(b, c)` for `a·b + c`"));
        }
        if m.args.len() != 2 {
            return self.err(span, "`a.mul_add(b, c)` takes the right operand, a `CoopB<f16>`, and the accumulator, a `CoopC<f32>`");
        }
        let b = self.expr(&m.args[0])?;
        let c = self.expr(&m.args[1])?;
        for (e, want) in [(&b, CoopRole::B), (&c, CoopRole::C)] {
            let what = if want == CoopRole::B {
                "the right operand of `mul_add`"
            } else {
                "the accumulator of `mul_add`"
            };
            let wt = format!("{}<{}>", want.type_name(), want.elem().wgsl());
            match self.inf.coop(e.tv) {
                Some((_, r)) if r == want => {}
                Some((es, r)) => {
                    return self.err(
                        e.span,
                        format!(
                            "{what} is a `{wt}`, not a `{}<{}>`",
                            r.type_name(),
                            es.wgsl()
                        ),
                    )
                }
                None => return self.err(e.span, format!("{what} is a cooperative matrix `{wt}`")),
            }
        }
        let tv = c.tv;
        Ok(self.expr_of(
            ExprKind::Coop {
                op: CoopOp::MulAdd,
                target: None,
                args: vec![a, b, c],
            },
            tv,
            span,
        ))
    }

    /// `m.store_row_major(&mut x[i], stride);` and `store_col_major`.
    fn coop_store(&mut self, m: &syn::ExprMethodCall) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        self.coop_allowed(span)?;
        let v = self.expr(&m.receiver)?;
        if self.inf.is_error(v.tv) {
            return Ok(self.poison(span));
        }
        let Some((s, _)) = self.inf.coop(v.tv) else {
            return self.err(
                v.span,
                format!("`{name}` stores a cooperative matrix (`CoopA`, `CoopB` or `CoopC`)"),
            );
        };
        if m.args.len() != 2 {
            return self.err(span, format!("`m.{name}(&mut x[i], stride)` takes a `&mut` reference to the first element and the stride, in elements of `x`"));
        }
        let (target, index) = self.coop_ref(&m.args[0], true, s, &name)?;
        let stride = self.coop_stride(&m.args[1], &name)?;
        let tv = self.inf.of_scalar(Scalar::Bool);
        Ok(self.expr_of(
            ExprKind::Coop {
                op: CoopOp::Store {
                    row_major: name == "store_row_major",
                },
                target: Some(target),
                args: vec![v, index, stride],
            },
            tv,
            span,
        ))
    }

    fn coop_stride(&mut self, e: &syn::Expr, func: &str) -> R<Expr> {
        let st = self.expr(e)?;
        self.constrain_at(
            st.span,
            st.tv,
            infer::S_U32,
            &format!("the stride of `{func}` is a `u32`, in elements of the array"),
        );
        Ok(st)
    }

    /// The `&x[i]` (or `&mut x[i]`) of a load or store: a binding or a `#[shared]` array
    /// whose elements (or vector components) are `s`, and the index.
    fn coop_ref(
        &mut self,
        e: &syn::Expr,
        mutable: bool,
        s: Scalar,
        func: &str,
    ) -> R<(AtomicTarget, Expr)> {
        let form = if mutable { "&mut x[i]" } else { "&x[i]" };
        let ix = match e {
            syn::Expr::Reference(r) if r.mutability.is_some() == mutable => match &*r.expr {
                syn::Expr::Index(ix) => ix,
                _ => return self.err(e.span(), format!("`{func}` takes `{form}`: a reference to an element of a binding or a `#[shared]` array")),
            },
            _ => return self.err(e.span(), format!("`{func}` takes `{form}`: a reference to an element of a binding or a `#[shared]` array")),
        };
        let base = match &*ix.expr {
            syn::Expr::Path(p) => path_name_p(&p.path).unwrap_or_default(),
            other => {
                return self.err(
                    other.span(),
                    format!("`{func}` works on a binding or a `#[shared]` array"),
                )
            }
        };
        let what = format!(
            "`{func}` of a `{}` matrix works on an array of `{}` (or of vectors of them)",
            s.wgsl(),
            s.wgsl()
        );
        let target = if let Some(id) = self.lookup(&base) {
            if !self.locals[id].shared {
                return self.err(
                    ix.expr.span(),
                    format!(
                        "`{base}` is a local; `{func}` works on a binding or a `#[shared]` array"
                    ),
                );
            }
            if mutable {
                self.mark_assigned(id, ix.expr.span());
            }
            let tv = self.local_tv[id];
            let Some(elem) = self.inf.array_elem(tv) else {
                return self.err(ix.expr.span(), "expected an array");
            };
            match self.inf.vector(elem) {
                Some((es, _)) if es != s => return self.err(ix.expr.span(), what),
                Some(_) => {}
                None => self.constrain_at(ix.expr.span(), elem, infer::bit(s), &what),
            }
            AtomicTarget::Shared(id)
        } else if let Some(b) = self.bindings.iter().position(|b| b.name == base) {
            let bd = &self.bindings[b];
            if bd.elem != s || bd.atomic || bd.strukt.is_some() {
                return self.err(
                    ix.expr.span(),
                    format!("{what}, and `{base}` holds `{}`", bd.elem_text),
                );
            }
            if mutable && bd.access == Access::Read {
                return self.err(ix.expr.span(), format!("`{base}` is read-only; declare it `&mut [{}; {}]` or `#[out]` to store into it", bd.elem_text, bd.len_text));
            }
            AtomicTarget::Binding(b)
        } else {
            return self.err(
                ix.expr.span(),
                format!("cannot find value `{base}` in this kernel"),
            );
        };
        let index = self.index_expr(&ix.index)?;
        self.constrain_at(
            index.span,
            index.tv,
            infer::S_U32,
            &format!("the index of `{func}` is a `u32`"),
        );
        Ok((target, index))
    }

    /// The atomic that `target[i].method(..)` works on: an atomic binding or a workgroup
    /// array (whose elements become atomics), the element's type variable, and the index.
    fn atomic_target(&mut self, m: &syn::ExprMethodCall) -> R<(AtomicTarget, usize, Expr)> {
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
                infer::S_INT | infer::S_F32,
                "atomic workgroup arrays hold `u32`, `i32` or `f32`",
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
        let index = self.index_expr(&ix.index)?;
        Ok((target, elem_tv, index))
    }

    /// `target[i].fetch_add(v)` and friends, on an atomic binding or a workgroup array.
    fn atomic(&mut self, m: &syn::ExprMethodCall, op: AtomicOp) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        let (target, elem_tv, index) = self.atomic_target(m)?;
        if m.args.len() != op.arity() {
            return self.err(
                span,
                format!(
                    "`{name}` takes {} argument(s) and no memory ordering",
                    op.arity()
                ),
            );
        }
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

    /// `let (old, exchanged) = target[i].compare_exchange_weak(current, new);`
    fn compare_exchange(
        &mut self,
        pat: &syn::PatTuple,
        m: &syn::ExprMethodCall,
        out: &mut Block,
    ) -> R<()> {
        let span = m.span();
        let (target, elem_tv, index) = self.atomic_target(m)?;
        if m.args.len() != 2 {
            return self.err(
                span,
                "`compare_exchange_weak(current, new)` takes the expected value and the new one, and no memory orderings",
            );
        }
        let current = self.expr(&m.args[0])?;
        self.unify_at(current.span, elem_tv, current.tv);
        let new = self.expr(&m.args[1])?;
        self.unify_at(new.span, elem_tv, new.tv);
        if pat.elems.len() != 2 {
            return self.err(
                pat.span(),
                "`compare_exchange_weak` gives two values: write `let (old, exchanged) = ..`",
            );
        }
        let bool_tv = self.inf.of_scalar(Scalar::Bool);
        let mut ids = Vec::new();
        for (p, tv) in pat.elems.iter().zip([elem_tv, bool_tv]) {
            let (name, mutable, pspan) = match p {
                syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                    pi.ident.to_string(),
                    pi.mutability.is_some(),
                    pi.ident.span(),
                ),
                // `_` still needs a local in the generated code; no name resolves to it.
                syn::Pat::Wild(w) => ("fg_unused".to_string(), false, w.span()),
                other => {
                    return self.err(
                        other.span(),
                        "bind each value of `compare_exchange_weak` to a name (or `_`)",
                    )
                }
            };
            let id = self.declare(&name, mutable, false, pspan, tv);
            if name == "fg_unused" {
                if let Some(scope) = self.scopes.last_mut() {
                    scope.locals.remove("fg_unused");
                }
                self.locals[id].name = "_".to_string();
                self.locals[id].hidden = Some("fg_unused");
            }
            ids.push(id);
        }
        out.push(Stmt::CompareExchange {
            old: ids[0],
            exchanged: ids[1],
            target,
            index,
            current,
            new,
            span,
        });
        Ok(())
    }

    /// A method called on an element of an atomic binding that is not an atomic method:
    /// the error lists the methods its type has.
    fn unknown_atomic_method(&self, m: &syn::ExprMethodCall) -> Option<String> {
        let syn::Expr::Index(ix) = &*m.receiver else {
            return None;
        };
        let base = path_name(&ix.expr)?;
        if self.lookup(&base).is_some() {
            return None;
        }
        let b = self.bindings.iter().find(|b| b.name == base && b.atomic)?;
        let name = m.method.to_string();
        let t = b.elem.wgsl();
        if name == "compare_exchange_weak" {
            return Some(format!(
                "`compare_exchange_weak` gives two values, the old one and whether it was exchanged: bind them with `let (old, exchanged) = {base}[i].compare_exchange_weak(current, new);`"
            ));
        }
        Some(format!(
            "unsupported atomic method `{name}`; `Atomic<{t}>` has {}",
            AtomicOp::list_for(b.elem)
        ))
    }

    fn method(&mut self, m: &syn::ExprMethodCall) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        if let Some(op) = AtomicOp::from_method(&name) {
            return self.atomic(m, op);
        }
        if let Some(msg) = self.unknown_atomic_method(m) {
            return self.err(m.method.span(), msg);
        }
        if name == "compare_exchange_weak" {
            return self.err(
                m.method.span(),
                "`compare_exchange_weak` gives two values, the old one and whether it was exchanged: bind them with `let (old, exchanged) = a[i].compare_exchange_weak(current, new);`",
            );
        }
        let recv = self.expr(&m.receiver)?;
        if let Some((s, role)) = self.inf.coop(recv.tv) {
            return self.coop_method(m, recv, s, role);
        }
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
        let Some(&(_, f, arity, set, result)) = SCALAR_METHODS.iter().find(|m| m.0 == name) else {
            return self.err(
                m.method.span(),
                format!(
                    "unsupported method `{name}`; kernels support {}",
                    method_list(SCALAR_METHODS.iter().map(|m| m.0))
                ),
            );
        };
        if args.len() != arity {
            return self.err(span, format!("`{name}` takes {} argument(s)", arity - 1));
        }
        if f == MathFn::Powi {
            let (s0, t0, s1, t1) = (args[0].span, args[0].tv, args[1].span, args[1].tv);
            self.constrain_at(s0, t0, infer::S_FLOAT, "`powi` is a float method");
            self.constrain_at(s1, t1, infer::S_I32, "`powi` takes an `i32` exponent");
            return Ok(self.expr_of(ExprKind::Math(MathFn::Powi, args), t0, span));
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

    /// `v += w` and `v *= s` on a vector place: a vector of its type, or a scalar of its
    /// component type, as `vector_binary` allows.
    fn vector_compound(
        &mut self,
        op: BinOp,
        place_tv: usize,
        value: &Expr,
        s: Scalar,
        n: u8,
        op_tokens: &syn::BinOp,
    ) -> R<()> {
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => true,
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => s.is_int(),
            _ => false,
        };
        if !ok {
            return self.err_spanned(
                op_tokens,
                format!("`{}=` is not supported on `vec{n}<{}>`; vectors support `+= -= *= /= %=`, and `&= |= ^=` on integers", op.wgsl(), s.wgsl()),
            );
        }
        if self.inf.vector(value.tv).is_some() {
            self.unify_at(value.span, place_tv, value.tv);
        } else {
            self.constrain_at(
                value.span,
                value.tv,
                infer::bit(s),
                "a vector combines with a vector of its type or a scalar of its component type",
            );
        }
        Ok(())
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
        let Some(&(_, f, needs_float, arity)) = VECTOR_METHODS.iter().find(|m| m.0 == name) else {
            return self.err(
                m.method.span(),
                format!(
                    "unsupported vector method `{name}`; vectors support swizzles, {}",
                    method_list(VECTOR_METHODS.iter().map(|m| m.0))
                ),
            );
        };
        if f == MathFn::Cross && n != 3 {
            return self.err(
                m.method.span(),
                format!("`cross` is defined for 3-component vectors, but this is `vec{n}<{}>`; build one with `Vec3::new(..)`", s.wgsl()),
            );
        }
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
            MathFn::Dot | MathFn::Length | MathFn::Distance => self.inf.of_scalar(s),
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
                    for e in place.indices_mut() {
                        self.finish_expr(e);
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
                Stmt::For(ForLoop {
                    start, end, body, ..
                }) => {
                    self.finish_expr(start);
                    self.finish_expr(end);
                    self.finish_block(body)
                }
                Stmt::While { cond, body, .. } => {
                    self.finish_expr(cond);
                    self.finish_block(body)
                }
                Stmt::Loop { body, .. } => self.finish_block(body),
                Stmt::Switch {
                    selector,
                    cases,
                    default,
                } => {
                    self.finish_expr(selector);
                    for (_, b) in cases {
                        self.finish_block(b);
                    }
                    self.finish_block(default)
                }
                Stmt::CompareExchange {
                    index,
                    current,
                    new,
                    ..
                } => {
                    self.finish_expr(index);
                    self.finish_expr(current);
                    self.finish_expr(new)
                }
                Stmt::Eval { expr, .. } => self.finish_expr(expr),
                Stmt::Print { args, .. } => args.iter_mut().for_each(|a| self.finish_expr(a)),
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
        e.each_child_mut(|a| self.finish_expr(a));
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
            let bits = f16_bits(*v);
            if v.is_finite() && bits & 0x7fff == 0x7c00 {
                self.cx.error(
                    e.span,
                    "literal out of range for `f16`, whose largest finite value is 65504",
                );
            }
        }
    }
}

/// The methods on scalars: name, function, arity with the receiver, the receiver's types,
/// and the result's type (`None`: the receiver's).
type ScalarMethod = (&'static str, MathFn, usize, infer::Set, Option<Scalar>);
const SCALAR_METHODS: &[ScalarMethod] = {
    use infer::{S_F32, S_FLOAT, S_I32, S_INT, S_NUM, S_U32};
    use MathFn as M;
    &[
        ("abs", M::Abs, 1, S_I32 | S_FLOAT, None),
        ("min", M::Min, 2, S_NUM, None),
        ("max", M::Max, 2, S_NUM, None),
        ("clamp", M::Clamp, 3, S_NUM, None),
        ("sqrt", M::Sqrt, 1, S_FLOAT, None),
        ("exp", M::Exp, 1, S_FLOAT, None),
        ("exp2", M::Exp2, 1, S_FLOAT, None),
        ("ln", M::Ln, 1, S_FLOAT, None),
        ("log2", M::Log2, 1, S_FLOAT, None),
        ("log10", M::Log10, 1, S_FLOAT, None),
        ("sin", M::Sin, 1, S_FLOAT, None),
        ("cos", M::Cos, 1, S_FLOAT, None),
        ("tan", M::Tan, 1, S_FLOAT, None),
        ("asin", M::Asin, 1, S_FLOAT, None),
        ("acos", M::Acos, 1, S_FLOAT, None),
        ("atan", M::Atan, 1, S_FLOAT, None),
        ("atan2", M::Atan2, 2, S_FLOAT, None),
        ("sinh", M::Sinh, 1, S_FLOAT, None),
        ("cosh", M::Cosh, 1, S_FLOAT, None),
        ("tanh", M::Tanh, 1, S_FLOAT, None),
        ("asinh", M::Asinh, 1, S_FLOAT, None),
        ("acosh", M::Acosh, 1, S_FLOAT, None),
        ("atanh", M::Atanh, 1, S_FLOAT, None),
        ("hypot", M::Hypot, 2, S_FLOAT, None),
        ("to_degrees", M::ToDegrees, 1, S_FLOAT, None),
        ("to_radians", M::ToRadians, 1, S_FLOAT, None),
        ("floor", M::Floor, 1, S_FLOAT, None),
        ("ceil", M::Ceil, 1, S_FLOAT, None),
        ("round", M::Round, 1, S_FLOAT, None),
        ("round_ties_even", M::RoundTiesEven, 1, S_FLOAT, None),
        ("trunc", M::Trunc, 1, S_FLOAT, None),
        ("fract", M::Fract, 1, S_FLOAT, None),
        ("mul_add", M::MulAdd, 3, S_FLOAT, None),
        ("powf", M::Powf, 2, S_FLOAT, None),
        ("powi", M::Powi, 2, S_FLOAT, None),
        ("signum", M::Signum, 1, S_I32 | S_FLOAT, None),
        ("recip", M::Recip, 1, S_FLOAT, None),
        ("rem_euclid", M::RemEuclid, 2, S_NUM, None),
        ("is_nan", M::IsNan, 1, S_FLOAT, Some(Scalar::Bool)),
        ("is_finite", M::IsFinite, 1, S_FLOAT, Some(Scalar::Bool)),
        ("to_bits", M::ToBits, 1, S_F32, Some(Scalar::U32)),
        ("count_ones", M::CountOnes, 1, S_INT, Some(Scalar::U32)),
        (
            "leading_zeros",
            M::LeadingZeros,
            1,
            S_INT,
            Some(Scalar::U32),
        ),
        (
            "trailing_zeros",
            M::TrailingZeros,
            1,
            S_INT,
            Some(Scalar::U32),
        ),
        ("reverse_bits", M::ReverseBits, 1, S_INT, None),
        ("div_ceil", M::DivCeil, 2, S_U32, None),
        ("wrapping_add", M::WrappingAdd, 2, S_INT, None),
        ("wrapping_sub", M::WrappingSub, 2, S_INT, None),
        ("wrapping_mul", M::WrappingMul, 2, S_INT, None),
    ]
};

/// The methods on vectors, componentwise as glam's unless noted: name, function, whether
/// it needs float components, and arity with the receiver.
const VECTOR_METHODS: &[(&str, MathFn, bool, usize)] = {
    use MathFn as M;
    &[
        ("abs", M::Abs, false, 1),
        ("min", M::Min, false, 2),
        ("max", M::Max, false, 2),
        ("clamp", M::Clamp, false, 3),
        ("sqrt", M::Sqrt, true, 1),
        ("exp", M::Exp, true, 1),
        ("exp2", M::Exp2, true, 1),
        ("ln", M::Ln, true, 1),
        ("log2", M::Log2, true, 1),
        ("sin", M::Sin, true, 1),
        ("cos", M::Cos, true, 1),
        ("tanh", M::Tanh, true, 1),
        ("floor", M::Floor, true, 1),
        ("ceil", M::Ceil, true, 1),
        ("trunc", M::Trunc, true, 1),
        ("mul_add", M::MulAdd, true, 3),
        ("dot", M::Dot, false, 2),
        ("cross", M::Cross, true, 2),
        ("length", M::Length, true, 1),
        ("distance", M::Distance, true, 2),
        ("normalize", M::Normalize, true, 1),
    ]
};

/// `f32::consts` and `f64::consts`, by name: each value of `f32` is the `f32` constant
/// itself (exact in `f64`), so that rounding twice cannot move it.
const FLOAT_CONSTS: &[(&str, f32, f64)] = {
    use std::{f32::consts as s, f64::consts as d};
    &[
        ("PI", s::PI, d::PI),
        ("TAU", s::TAU, d::TAU),
        ("E", s::E, d::E),
        ("SQRT_2", s::SQRT_2, d::SQRT_2),
        ("FRAC_1_SQRT_2", s::FRAC_1_SQRT_2, d::FRAC_1_SQRT_2),
        ("FRAC_1_PI", s::FRAC_1_PI, d::FRAC_1_PI),
        ("FRAC_2_PI", s::FRAC_2_PI, d::FRAC_2_PI),
        ("FRAC_2_SQRT_PI", s::FRAC_2_SQRT_PI, d::FRAC_2_SQRT_PI),
        ("FRAC_PI_2", s::FRAC_PI_2, d::FRAC_PI_2),
        ("FRAC_PI_3", s::FRAC_PI_3, d::FRAC_PI_3),
        ("FRAC_PI_4", s::FRAC_PI_4, d::FRAC_PI_4),
        ("FRAC_PI_6", s::FRAC_PI_6, d::FRAC_PI_6),
        ("FRAC_PI_8", s::FRAC_PI_8, d::FRAC_PI_8),
        ("LN_2", s::LN_2, d::LN_2),
        ("LN_10", s::LN_10, d::LN_10),
        ("LOG2_E", s::LOG2_E, d::LOG2_E),
        ("LOG2_10", s::LOG2_10, d::LOG2_10),
        ("LOG10_E", s::LOG10_E, d::LOG10_E),
        ("LOG10_2", s::LOG10_2, d::LOG10_2),
    ]
};

fn float_const(name: &str, s: Scalar) -> Option<f64> {
    let &(_, single, double) = FLOAT_CONSTS.iter().find(|c| c.0 == name)?;
    Some(if s == Scalar::F64 {
        double
    } else {
        single as f64
    })
}

/// The packed 4×8-bit dot products, called as free functions like WGSL's: the function and
/// its result's type.
fn packed_dot(name: &str) -> Option<(MathFn, Scalar)> {
    match name {
        "dot4_i8_packed" => Some((MathFn::Dot4I8Packed, Scalar::I32)),
        "dot4_u8_packed" => Some((MathFn::Dot4U8Packed, Scalar::U32)),
        _ => None,
    }
}

/// `a, b and c`, in backticks.
fn method_list<'n>(names: impl Iterator<Item = &'n str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// The identifiers a pattern binds, for declaring them after an error.
fn pattern_names<'p>(p: &'p syn::Pat, out: &mut Vec<&'p syn::Ident>) {
    match p {
        syn::Pat::Ident(pi) => {
            out.push(&pi.ident);
            if let Some((_, sub)) = &pi.subpat {
                pattern_names(sub, out);
            }
        }
        syn::Pat::Type(pt) => pattern_names(&pt.pat, out),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| pattern_names(&f.pat, out)),
        syn::Pat::Reference(r) => pattern_names(&r.pat, out),
        syn::Pat::Paren(p) => pattern_names(&p.pat, out),
        syn::Pat::Or(o) => {
            if let Some(first) = o.cases.first() {
                pattern_names(first, out)
            }
        }
        _ => {}
    }
}

/// The attributes of an expression statement other than a `for` loop (whose attributes
/// are its own business).
fn stmt_attrs(e: &syn::Expr) -> &[syn::Attribute] {
    match e {
        syn::Expr::While(x) => &x.attrs,
        syn::Expr::Loop(x) => &x.attrs,
        syn::Expr::If(x) => &x.attrs,
        syn::Expr::Block(x) => &x.attrs,
        syn::Expr::Assign(x) => &x.attrs,
        syn::Expr::Binary(x) => &x.attrs,
        syn::Expr::Call(x) => &x.attrs,
        syn::Expr::MethodCall(x) => &x.attrs,
        _ => &[],
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

/// A const's value as an array length, when it is a `u32` expression of literals and
/// schedule constants.
fn const_cexpr(e: &Expr) -> Option<CExpr> {
    Some(match &e.kind {
        ExprKind::IntLit(v) => CExpr::Lit(u32::try_from(*v).ok()?),
        ExprKind::Sched(c) => CExpr::Sched(*c),
        ExprKind::Cast(a) => const_cexpr(a)?,
        ExprKind::Binary(op, a, b) => {
            let op = match op {
                BinOp::Add => LenOp::Add,
                BinOp::Sub => LenOp::Sub,
                BinOp::Mul => LenOp::Mul,
                BinOp::Div => LenOp::Div,
                BinOp::Rem => LenOp::Rem,
                _ => return None,
            };
            CExpr::Bin(op, Box::new(const_cexpr(a)?), Box::new(const_cexpr(b)?))
        }
        _ => return None,
    })
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

/// A `debug_print!` format string: the literal text around each placeholder (`{{` and
/// `}}` unescaped) and whether each placeholder is `{:?}`; or why it is not one.
pub(crate) fn parse_print_format(text: &str) -> Result<(Vec<String>, Vec<bool>), String> {
    let mut pieces = Vec::new();
    let mut cur = String::new();
    let mut debug = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' | '}' if chars.peek() == Some(&c) => {
                chars.next();
                cur.push(c);
            }
            '{' => {
                let mut spec = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => spec.push(c),
                        None => return Err("this format string has a `{` that is never closed; write `{{` for a literal brace".into()),
                    }
                }
                match spec.as_str() {
                    "" => debug.push(false),
                    ":?" => debug.push(true),
                    other => return Err(format!("`debug_print!` supports the placeholders `{{}}` and `{{:?}}` only, not `{{{other}}}`; format the value in the host program, or print it whole")),
                }
                pieces.push(std::mem::take(&mut cur));
            }
            '}' => return Err(
                "this format string has a `}` that opens nothing; write `}}` for a literal brace"
                    .into(),
            ),
            c => cur.push(c),
        }
    }
    pieces.push(cur);
    Ok((pieces, debug))
}
