//! Expressions: literals, names, operators, casts, calls of builtins and helpers, struct
//! literals, and the math methods on scalars and vectors.
//!
//! Part of `lower` (layer 3).

use super::infer;
use super::{last_span, path_name, path_name_p, Lowerer, Named, R};
use crate::model::*;
use crate::names::wg_axis_index;
use crate::types::{self, ty_text};
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    pub fn expr(&mut self, e: &syn::Expr) -> R<Expr> {
        let mut x = self.expr_kind(e)?;
        x.end = last_span(e);
        Ok(x)
    }

    pub(super) fn expr_kind(&mut self, e: &syn::Expr) -> R<Expr> {
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
                        _ => {
                            return self.err(
                                span,
                                "this unary operator is not defined for this vector type",
                            )
                        }
                    };
                    let tv = a.tv;
                    return Ok(self.expr_of(ExprKind::Unary(op, Box::new(a)), tv, span));
                }
                let op = match u.op {
                    syn::UnOp::Neg(_) => {
                        self.constrain_at(
                            span,
                            a.tv,
                            infer::S_I32 | infer::S_FLOAT,
                            "cannot negate this type",
                        );
                        UnOp::Neg
                    }
                    syn::UnOp::Not(_) => {
                        self.constrain_at(
                            span,
                            a.tv,
                            infer::S_INT | infer::S_BOOL,
                            "`!` needs a `bool` or an integer",
                        );
                        UnOp::Not
                    }
                    _ => return self.err(span, "dereferencing is not supported in kernels"),
                };
                let tv = a.tv;
                Ok(self.expr_of(ExprKind::Unary(op, Box::new(a)), tv, span))
            }
            syn::Expr::Binary(b) => {
                let Some(op) = bin_op(&b.op) else {
                    return self.err(
                        b.op.span(),
                        "compound assignment is a statement, not an expression",
                    );
                };
                let l = self.expr(&b.left)?;
                let r = match op {
                    // The right operand of `&&` and `||` runs only on the left's say.
                    BinOp::And | BinOp::Or => {
                        let outer = self.no_hoist.replace("in the right operand of `&&` or `||`, which runs only when the left one lets it,");
                        let r = self.expr(&b.right);
                        self.no_hoist = outer;
                        r?
                    }
                    _ => self.expr(&b.right)?,
                };
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
                            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                                infer::S_INT | infer::S_BOOL
                            }
                            _ => infer::S_NUM,
                        };
                        self.constrain_at(
                            span,
                            l.tv,
                            set,
                            &format!("`{}` is not defined for this type", op.wgsl()),
                        );
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
                    return self.err(
                        t.span(),
                        format!(
                            "cannot cast to `{}`; casts go to `f32`, `u32`, `i32`, `f16` or `f64`",
                            quote::quote!(#t)
                        ),
                    );
                };
                if target == Scalar::Bool {
                    return self.err(
                        c.ty.span(),
                        "cannot cast to `bool`; compare instead, e.g. `x != 0`",
                    );
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
                                return self.err(
                                    span,
                                    format!("`{name}` is atomic; read it with `{name}[i].load()`"),
                                );
                            }
                            let idx = self.index_expr(&ix.index)?;
                            let tv = self.ty_var(&self.bindings[b].elem_ty());
                            return Ok(self.expr_of(
                                ExprKind::LoadBinding(b, Box::new(idx)),
                                tv,
                                span,
                            ));
                        }
                    }
                }
                let base = self.expr(&ix.expr)?;
                let Some(elem) = self.element_of(base.tv) else {
                    return self.err(
                        ix.expr.span(),
                        "this value is not an array or a vector and cannot be indexed",
                    );
                };
                let idx = self.index_expr(&ix.index)?;
                Ok(self.expr_of(
                    ExprKind::LoadArray(Box::new(base), Box::new(idx)),
                    elem,
                    span,
                ))
            }
            syn::Expr::Repeat(r) => {
                let v = self.expr(&r.expr)?;
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
                // Scalars, vectors or arrays, as in `[x0, x1]` of `Vec4`s: a register
                // array's values.
                let tv = self.inf.of_array(first, ConstLen::Lit(items.len() as u32));
                Ok(self.expr_of(ExprKind::ArrayList(items), tv, span))
            }
            syn::Expr::MethodCall(m) => self.method(m),
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::Field(f) => {
                let member = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(i) => {
                        return self.err(i.span(), "tuple fields are not supported")
                    }
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
                            format!(
                                "`{}` has no field `{member}`; its fields are {}",
                                def.name,
                                method_list(names.into_iter())
                            ),
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
                    return self.err(
                        f.member.span(),
                        format!("a `vec{n}` has no component `{member}`"),
                    );
                }
                let tv = self.inf.of_scalar(s);
                Ok(self.expr_of(ExprKind::Swizzle(Box::new(base), vec![comp]), tv, span))
            }
            syn::Expr::Struct(lit) => self.struct_literal(lit),
            syn::Expr::If(_) | syn::Expr::Match(_) => self.hoisted_value(e),
            syn::Expr::Block(_) => self.err(span, "block expressions are not supported here"),
            syn::Expr::Closure(_) => self.err(span, "closures are not supported in kernels"),
            syn::Expr::Reference(_) => self.err(
                span,
                "references are not supported in kernel bodies; index bindings directly",
            ),
            syn::Expr::Macro(_) => self.err(span, "macros are not supported in kernels"),
            syn::Expr::Tuple(_) => self.err(span, "tuples are not supported in kernels"),
            syn::Expr::Range(_) => self.err(span, "ranges are only allowed in `for` loops"),
            _ => self.err(span, "this expression is not supported in kernels"),
        }
    }

    pub(super) fn lit(&mut self, l: &syn::Lit, negate: bool) -> R<Expr> {
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

    pub(super) fn path(&mut self, p: &syn::ExprPath) -> R<Expr> {
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
        let sched = crate::names::sched_const(name, self.knobs, self.grid_dims > 1);
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

    pub(super) fn call(&mut self, c: &syn::ExprCall) -> R<Expr> {
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
            let atomics: Vec<bool> = helper
                .params
                .iter()
                .map(|p| helper.locals[*p].atomic)
                .collect();
            let refs = helper.refs.clone();
            let ret = helper.ret.clone();
            let mut args = Vec::new();
            // The lengths this call gives the helper's length parameters, and the
            // parameters given a binding, whose length is known only at run time.
            let mut lens: Vec<(LocalId, ConstLen)> = Vec::new();
            let mut bound: Vec<(LocalId, String)> = Vec::new();
            for (((a, t), by_ref), atomic) in c.args.iter().zip(&param_tys).zip(refs).zip(atomics) {
                let e = match by_ref {
                    Some(mutable) => {
                        let e = self.ref_arg(h, a, t, mutable, atomic, &mut lens)?;
                        if let (ExprKind::BindingRef(b), Ty::Array(_, len)) = (&e.kind, t) {
                            if let Some(p) = len.param() {
                                bound.push((p, self.bindings[*b].name.clone()));
                            }
                        }
                        e
                    }
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
                        let t = self.fix_lens(h, t, e.tv, a, &mut lens)?;
                        let tv = self.ty_var(&t);
                        self.unify_at(e.span, tv, e.tv);
                        e
                    }
                };
                args.push(e);
            }
            self.unfixed_lens(h, &lens, &bound, span)?;
            let tv = match ret {
                Some(ret) => self.ty_var(&ret.subst(&lens)),
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
            if let (Some((Scalar::F16, 8)), "join") = (types::vector_name(ty), ctor) {
                return self.octet_join(c);
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
        if super::wgsl::is_builtin(&name) {
            return self.wgsl_call(c, &name);
        }
        if name == "workgroup_uniform_load" {
            return self.uniform_load(c);
        }
        if matches!(
            name.as_str(),
            "workgroup_barrier" | "storage_barrier" | "async_copy" | "async_wait"
        ) {
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
    pub(super) fn struct_literal(&mut self, lit: &syn::ExprStruct) -> R<Expr> {
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
    pub(super) fn ref_arg(
        &mut self,
        h: usize,
        a: &syn::Expr,
        t: &Ty,
        mutable: bool,
        atomic: bool,
        lens: &mut Vec<(LocalId, ConstLen)>,
    ) -> R<Expr> {
        let helper = &self.helpers[h].name.clone();
        let text = ty_text(t, self.knobs);
        // The parameter as an array of atomics, as written or as suggested.
        let atomic_text = match t {
            Ty::Array(e, _) => {
                let e = ty_text(e, self.knobs);
                text.replacen(&e, &format!("Atomic<{e}>"), 1)
            }
            _ => text.clone(),
        };
        let want = match (atomic, mutable) {
            (true, _) => format!("`&mut {atomic_text}`"),
            (false, true) => format!("`&mut {text}`"),
            (false, false) => format!("`&{text}`"),
        };
        let want_atomic = format!("`&mut {atomic_text}`");
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
            if let Some(b) = self.bindings.iter().position(|b| b.name == name) {
                let wants = (want.as_str(), want_atomic.as_str());
                let t = &t.subst(lens);
                return self.binding_arg(helper, b, inner, given_mut, t, (mutable, atomic), wants);
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
        // An array of atomics is a workgroup array (whose elements become atomics) or a
        // helper's array of atomics passed on; a plain parameter takes plain elements.
        let l = &self.locals[id];
        let atomic_param = l.by_ref.is_some() && l.atomic;
        if atomic && !l.shared && !atomic_param {
            return self.err(inner.span(), format!("`{name}` is a local array; `{helper}` takes {want}, an atomic binding or a `#[shared]` array, whose elements atomic methods may work on"));
        }
        if !atomic && atomic_param {
            return self.err(inner.span(), format!("`{name}` holds atomics, and `{helper}` takes {want}, plain elements; take it as {want_atomic} in `{helper}`"));
        }
        if atomic && l.shared {
            self.locals[id].atomic = true;
        }
        let tv = self.local_tv[id];
        let t = &self.fix_lens(h, t, tv, inner, lens)?;
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

    /// A binding passed to a helper's reference parameter, which the helper reads (`&[T;
    /// N]`), writes (`&mut`) or works on atomically (`&mut [Atomic<T>; N]`, which takes
    /// atomic bindings only): the call is inlined with the binding in the parameter's
    /// place. Its element type must be the parameter's; its length is checked where the
    /// helper indexes it, as the binding's own accesses are.
    #[allow(clippy::too_many_arguments)]
    fn binding_arg(
        &mut self,
        helper: &str,
        b: usize,
        arg: &syn::Expr,
        given_mut: Option<bool>,
        t: &Ty,
        (mutable, atomic): (bool, bool),
        (want, want_atomic): (&str, &str),
    ) -> R<Expr> {
        let binding = &self.bindings[b];
        let name = binding.name.clone();
        let amp = if mutable { "&mut" } else { "&" };
        match given_mut {
            // Bindings are references already: `stage(kv)` or `stage(&mut y)`.
            Some(true) if !mutable => {
                return self.err(
                    arg.span(),
                    format!("`{helper}` takes {want}; pass `{name}`"),
                );
            }
            None if mutable => {
                return self.err(
                    arg.span(),
                    format!(
                        "`{helper}` takes {want}, so it may change the binding; pass `&mut {name}`"
                    ),
                );
            }
            _ => {}
        }
        if mutable && binding.access == Access::Read {
            return self.err(arg.span(), format!("`{name}` is a read-only binding, and `{helper}` takes it as `{amp}`; declare it `{name}: &mut [..]`, or take it as `&` in `{helper}`"));
        }
        if binding.atomic && !atomic {
            return self.err(arg.span(), format!("`{name}` is atomic, and `{helper}` takes {want}, plain elements; take it as {want_atomic} in `{helper}`"));
        }
        if atomic && !binding.atomic {
            return self.err(arg.span(), format!("`{name}` is not atomic, and `{helper}` takes {want}; declare it `{name}: &mut [Atomic<{}>; ..]`, or take plain elements in `{helper}`", binding.elem.wgsl()));
        }
        let Ty::Array(elem, _) = t else {
            return self.err(
                arg.span(),
                format!("`{helper}` takes {want}, not a binding"),
            );
        };
        let have = binding.elem_ty();
        if **elem != have {
            return self.err(
                arg.span(),
                format!(
                    "mismatched types: `{helper}` takes {want}, but `{name}` holds `{}`",
                    ty_text(&have, self.knobs)
                ),
            );
        }
        // Written through the helper: `check` sees the writes once it is inlined.
        let tv = self.ty_var(t);
        Ok(self.expr_of(ExprKind::BindingRef(b), tv, arg.span()))
    }

    /// `v.lo()` or `v.hi()`: four of an `HVec8`'s halves, as an `HVec4`.
    fn octet_half(&mut self, m: &syn::ExprMethodCall, recv: Expr, hi: bool) -> R<Expr> {
        let span = m.span();
        let name = if hi { "hi" } else { "lo" };
        if !m.args.is_empty() {
            return self.err(span, format!("`v.{name}()` takes no arguments"));
        }
        let want = self.inf.of_vector(Scalar::F16, 8);
        if self.inf.unify(want, recv.tv).is_err() {
            return self.err(
                recv.span,
                format!(
                    "`{name}()` is a method of `HVec8`: halves {} of its eight, as an `HVec4`",
                    if hi { "4 to 7" } else { "0 to 3" }
                ),
            );
        }
        let tv = self.inf.of_vector(Scalar::F16, 4);
        Ok(self.expr_of(
            ExprKind::Math(MathFn::OctetHalf { hi }, vec![recv]),
            tv,
            span,
        ))
    }

    /// `HVec8::join(lo, hi)`: two `HVec4`s, halves 0 to 3 and 4 to 7, as one `HVec8`.
    fn octet_join(&mut self, c: &syn::ExprCall) -> R<Expr> {
        let span = c.span();
        if c.args.len() != 2 {
            return self.err(
                span,
                "`HVec8::join(lo, hi)` takes two `HVec4`s: halves 0 to 3 and 4 to 7",
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            let e = self.expr(a)?;
            let want = self.inf.of_vector(Scalar::F16, 4);
            if self.inf.unify(want, e.tv).is_err() {
                return self.err(
                    e.span,
                    "`HVec8::join(lo, hi)` takes two `HVec4`s: halves 0 to 3 and 4 to 7",
                );
            }
            args.push(e);
        }
        let tv = self.inf.of_vector(Scalar::F16, 8);
        Ok(self.expr_of(ExprKind::Math(MathFn::OctetJoin, args), tv, span))
    }

    pub(super) fn method(&mut self, m: &syn::ExprMethodCall) -> R<Expr> {
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
        // A value already reported (a `let` whose initializer was refused) agrees with
        // every method: one mistake, one error.
        if self.inf.is_error(recv.tv) {
            return Ok(self.poison(span));
        }
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
        if name == "lo" || name == "hi" {
            return self.octet_half(m, recv, name == "hi");
        }
        let mut args = vec![recv];
        for a in &m.args {
            args.push(self.expr(a)?);
        }
        let rust_method = SCALAR_METHODS.iter().any(|m| m.0 == name)
            || VECTOR_METHODS.iter().any(|m| m.0 == name);
        if !rust_method && super::wgsl::is_method_spelling(&name) {
            return self.wgsl_method(m, &name, args);
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
    pub(super) fn vector_binary(
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
    pub(super) fn vector_compound(
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
    pub(super) fn vector_method(
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
}

/// The methods on scalars: name, function, arity with the receiver, the receiver's types,
/// and the result's type (`None`: the receiver's).
pub(super) type ScalarMethod = (&'static str, MathFn, usize, infer::Set, Option<Scalar>);

pub(super) const SCALAR_METHODS: &[ScalarMethod] = {
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
pub(super) const VECTOR_METHODS: &[(&str, MathFn, bool, usize)] = {
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
pub(super) const FLOAT_CONSTS: &[(&str, f32, f64)] = {
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

pub(super) fn float_const(name: &str, s: Scalar) -> Option<f64> {
    let &(_, single, double) = FLOAT_CONSTS.iter().find(|c| c.0 == name)?;
    Some(if s == Scalar::F64 {
        double
    } else {
        single as f64
    })
}

/// The packed 4×8-bit dot products, called as free functions like WGSL's: the function and
/// its result's type.
pub(super) fn packed_dot(name: &str) -> Option<(MathFn, Scalar)> {
    match name {
        "dot4_i8_packed" => Some((MathFn::Dot4I8Packed, Scalar::I32)),
        "dot4_u8_packed" => Some((MathFn::Dot4U8Packed, Scalar::U32)),
        _ => None,
    }
}

/// `a, b and c`, in backticks.
pub(super) fn method_list<'n>(names: impl Iterator<Item = &'n str>) -> String {
    let names: Vec<String> = names.map(|n| format!("`{n}`")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// `xy`, `zyx`, `wzyx`...: the components of a swizzle method, if `name` is one.
pub(super) fn swizzle(name: &str) -> Option<Vec<u8>> {
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

pub(super) fn bin_op(op: &syn::BinOp) -> Option<BinOp> {
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

pub(super) fn vec_builtin(name: &str) -> Option<Builtin> {
    Some(match name {
        "global_id" => Builtin::GlobalId,
        "local_id" => Builtin::LocalId,
        "workgroup_id" => Builtin::WorkgroupId,
        "num_workgroups" => Builtin::NumWorkgroups,
        _ => return None,
    })
}
