//! Lower, a stage (layer 3): the function body into the typed statement tree of `model`,
//! resolving names, inferring types (`infer`), and rejecting constructs outside the kernel
//! language with an error at the construct and a hint. One `Lowerer` walks the body; its
//! methods are split by concern: statements (`stmt`), expressions (`expr`), type
//! annotations and array lengths (`ty`), atomics, asynchronous copies, subgroup
//! operations, cooperative matrices, prints and WGSL's builtins (`wgsl`), each in its
//! module; this one holds the names in scope, the
//! inference variables, and writing the solved types back (`finish`).

mod annot;
mod async_copy;
mod atomic;
mod coop;
mod expr;
mod infer;
mod lens;
mod print;
mod stmt;
mod subgroup;
mod wgsl;

#[cfg(test)]
pub(crate) use print::parse_print_format;

use infer::Infer;

use crate::consts::f16_bits;
use crate::ctxt::Ctxt;

use crate::model::*;
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
    /// Statements that compute the `if` and `match` values of the expression being
    /// lowered (`subgroup_add(if c { a } else { b })`), to go before the statement that
    /// holds it (`stmt::with_hoisted`).
    pending: Vec<Stmt>,
    /// Set where an `if` value cannot be computed ahead of its statement, since the
    /// expression there is evaluated conditionally or repeatedly: where, for the message.
    no_hoist: Option<&'static str>,
    /// While lowering a helper: the locals that hold its length parameters (`lens`).
    len_params: Vec<LocalId>,
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
            pending: Vec::new(),
            no_hoist: None,
            len_params: Vec::new(),
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
        if matches!(crate::types::ungroup(&c.ty), syn::Type::Array(_)) {
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
        l.length_params(&f.sig.generics);
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
            let (ty, by_ref) = match crate::types::ungroup(&pt.ty) {
                syn::Type::Reference(r) => {
                    if !matches!(crate::types::ungroup(&r.elem), syn::Type::Array(_)) {
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
            // `t: &mut [Atomic<u32>; N]`: an array of atomics, which takes an atomic
            // binding or a `#[shared]` array used atomically; its elements are `u32`s
            // that only atomic methods touch.
            let atomic_array = match crate::types::ungroup(ty) {
                syn::Type::Array(a) if by_ref.is_some() => {
                    crate::types::atomic_inner(&a.elem).map(|inner| {
                        syn::Type::Array(syn::TypeArray {
                            elem: Box::new(inner.clone()),
                            ..a.clone()
                        })
                    })
                }
                _ => None,
            };
            if let syn::Type::Array(a) = crate::types::ungroup(ty) {
                let elem = &a.elem;
                if atomic_array.is_some() && crate::types::elem_type(elem).is_none() {
                    cx.error_spanned(
                        elem,
                        format!("an array of atomics holds `Atomic<u32>`, `Atomic<i32>` or `Atomic<f32>`, not `{}`", quote::quote!(#elem).to_string().replace(' ', "")),
                    );
                }
            }
            if atomic_array.is_some() && by_ref == Some(false) {
                cx.error_spanned(
                    &pt.ty,
                    format!("atomic methods change the array, so a helper takes an array of atomics as `&mut`; write `{}: &mut [Atomic<..>; N]`", pi.ident),
                );
            }
            let tv = match l.type_annotation(atomic_array.as_ref().unwrap_or(ty)) {
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
            l.locals[id].atomic = atomic_array.is_some();
            params.push(id);
            refs.push(by_ref);
        }
        let signature_ok = cx.error_count() == errors;
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
                    let _ = l.with_hoisted(&mut body, |l, body| {
                        let value = l.expr(e)?;
                        if let Some(r) = ret_tv {
                            l.unify_at(value.span, r, value.tv);
                        }
                        body.push(Stmt::ReturnValue { value });
                        Ok(())
                    });
                }
                _ => l.stmt(s, &mut body),
            }
        }
        l.finish(&mut body);
        let ret = ret_tv.and_then(|r| l.inf.resolve(r));
        let lens = l.settle_length_params(&params, signature_ok);
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
            lens,
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
            // `as` converts scalars (and vectors), not arrays.
            let hint = if m.contains("array") {
                "an array type has one length, so the rows of an array of arrays, and both sides of an assignment, must match"
            } else {
                "convert with `as`, e.g. `x as u32`"
            };
            self.cx.error(span, format!("{m}; {hint}"));
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
            s.each_expr_mut(|e| self.finish_expr(e));
            s.each_block_mut(|b| self.finish_block(b));
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

/// The span of an expression's last token, for errors that underline the whole expression.
pub(super) fn last_span(e: &syn::Expr) -> Span {
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
pub(super) fn is_statement_like(e: &syn::Expr) -> bool {
    matches!(
        e,
        syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_)
    )
}

pub(super) fn path_name_p(p: &syn::Path) -> Option<String> {
    Some(
        p.segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::"),
    )
}

pub(super) fn path_name(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => path_name_p(&p.path),
        _ => None,
    }
}
