//! Type annotations and array lengths: `let x: [f32; WG * 2]`, a helper's parameter types,
//! a `const`'s type.
//!
//! Part of `lower` (layer 3).

use super::{Lowerer, Named, R};
use crate::model::*;
use crate::types;
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    pub(super) fn type_annotation(&mut self, t: &syn::Type) -> R<usize> {
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
                return Ok(self.inf.of_coop(s, role));
            }
            Some(Err(msg)) => return self.err(t.span(), msg),
            None => {}
        }
        if let syn::Type::Array(a) = crate::types::ungroup(t) {
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
    pub(super) fn const_len(&mut self, e: &syn::Expr) -> R<ConstLen> {
        const HINT: &str = "array lengths are integer literals, consts, `WG`, `ITEMS`, `VEC` and knobs, with `+ - * / %`; kernel arrays have a size fixed at compile time";
        let c = match self.len_expr(e) {
            Ok(c) => c,
            Err(span) => return self.err(span, HINT),
        };
        let lit_only = {
            fn lit(c: &CExpr) -> bool {
                match c {
                    CExpr::Lit(_) => true,
                    CExpr::Sched(_) | CExpr::Param(..) => false,
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

    pub(super) fn len_expr(&mut self, e: &syn::Expr) -> Result<CExpr, Span> {
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
                match self.resolve(&name) {
                    Some(Named::Const(v)) => {
                        let v = v.clone();
                        return const_cexpr(&v).ok_or(p.span());
                    }
                    // A helper's `const N: usize`, which each call fixes (`lens`).
                    Some(Named::Local(id)) if self.len_params.contains(&id) => {
                        return Ok(CExpr::Param(id, name));
                    }
                    _ => {}
                }
                match crate::names::sched_const(&name, self.knobs, self.grid_dims > 1) {
                    Some(c) => CExpr::Sched(c),
                    None => return Err(p.span()),
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
}

/// A const's value as an array length, when it is a `u32` expression of literals and
/// schedule constants.
pub(super) fn const_cexpr(e: &Expr) -> Option<CExpr> {
    Some(match &e.kind {
        ExprKind::IntLit(v) => CExpr::Lit(u32::try_from(*v).ok()?),
        ExprKind::Sched(c) => CExpr::Sched(*c),
        ExprKind::Cast(a) => const_cexpr(a)?,
        ExprKind::Binary(op, a, b) => CExpr::Bin(
            op.len_op()?,
            Box::new(const_cexpr(a)?),
            Box::new(const_cexpr(b)?),
        ),
        _ => return None,
    })
}
