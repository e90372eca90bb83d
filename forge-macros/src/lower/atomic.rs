//! Atomics: `x[i].fetch_add(v)` and the other methods of `std::sync::atomic` (without the
//! ordering), on `Atomic<T>` bindings, on workgroup arrays and on a helper's arrays of
//! atomics (`x: &mut [Atomic<T>; N]`, given either), and
//! `let (old, ok) = x[i].compare_exchange_weak(current, new);`.
//!
//! Part of `lower` (layer 3).

use super::infer;
use super::{path_name, path_name_p, Lowerer, R};
use crate::model::*;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    /// The atomic that `target[i].method(..)` works on: an atomic binding, a workgroup
    /// array (whose elements become atomics) or a helper's array of atomics (as a workgroup
    /// array until `inline` puts what it is given in its place), the element's type
    /// variable, and the index.
    pub(super) fn atomic_target(
        &mut self,
        m: &syn::ExprMethodCall,
    ) -> R<(AtomicTarget, usize, Expr)> {
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
            // A helper's array of atomics: `inline` puts the atomic binding or the
            // workgroup array it is given in its place.
            let atomic_param = self.locals[id].by_ref.is_some() && self.locals[id].atomic;
            if self.locals[id].by_ref.is_some() && !atomic_param {
                let elem = match &self.locals[id].ty {
                    Ty::Array(e, _) => crate::types::ty_text(e, self.knobs),
                    _ => "u32".into(),
                };
                return self.err(ix.expr.span(), format!("`{base}` is an array of plain elements; for atomic methods a helper takes an array of atomics, `{base}: &mut [Atomic<{elem}>; N]` (an atomic binding or a `#[shared]` array)"));
            }
            if !self.locals[id].shared && !atomic_param {
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
    pub(super) fn atomic(&mut self, m: &syn::ExprMethodCall, op: AtomicOp) -> R<Expr> {
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
    pub(super) fn compare_exchange(
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
    pub(super) fn unknown_atomic_method(&self, m: &syn::ExprMethodCall) -> Option<String> {
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
}
