//! Asynchronous copies from storage into workgroup memory: `async_copy(&mut tile[i], &x[j])`
//! starts one, and `async_wait(n)` waits for all but this invocation's `n` latest batches,
//! then is a workgroup barrier. A multi-stage pipeline is written once with them: CUDA runs
//! the copies in the background (`cp.async`), and WGSL and the oracle, which have no such
//! copy, complete each at once, so that there `async_wait` is the barrier alone.
//!
//! Part of `lower` (layer 3).

use super::{path_name, Lowerer, R};
use crate::model::*;
use proc_macro2::Span;

impl Lowerer<'_, '_> {
    /// `async_copy(&mut dst[i], &src[j]);` or `async_wait(n);`, a statement.
    pub(super) fn async_call(&mut self, c: &syn::ExprCall, span: Span, out: &mut Block) -> R<()> {
        match path_name(&c.func).as_deref() {
            Some("async_copy") => self.async_copy(c, span, out),
            _ => self.async_wait(c, span, out),
        }
    }

    /// `async_copy(&mut dst[i], &src[j])`: `dst` a `#[shared]` array, `src` a storage
    /// binding, of one element type. In a helper either may be a reference parameter,
    /// which takes its array where the helper is called: `check` holds the inlined copy
    /// to workgroup memory and storage, so that a helper may stage a tile.
    fn async_copy(&mut self, c: &syn::ExprCall, span: Span, out: &mut Block) -> R<()> {
        const FORM: &str = ASYNC_COPY_FORM;
        if c.args.len() != 2 {
            return self.err(span, format!("{FORM}: it takes two references"));
        }
        let (dst, src) = (&c.args[0], &c.args[1]);
        let dst_elem = match dst {
            syn::Expr::Reference(r) if r.mutability.is_some() => &*r.expr,
            _ => {
                return self.err_spanned(dst, format!("{FORM}: its destination is `&mut tile[i]`"))
            }
        };
        let src_elem = match src {
            syn::Expr::Reference(r) if r.mutability.is_none() => &*r.expr,
            _ => return self.err_spanned(src, format!("{FORM}: its source is `&x[j]`")),
        };
        let value = self.expr(src_elem)?;
        let storage = match &value.kind {
            ExprKind::LoadBinding(..) => true,
            ExprKind::LoadArray(base, _) => self.is_ref_param(base),
            _ => false,
        };
        if !storage {
            return self.err_spanned(src, format!("{FORM}: {ASYNC_COPY_FROM_STORAGE}"));
        }
        let (place, ptv) = self.place(dst_elem)?;
        let shared = match &place {
            Place::LocalIndex(id, _) => {
                self.locals[*id].shared || self.locals[*id].by_ref.is_some()
            }
            _ => false,
        };
        if !shared {
            return self.err_spanned(dst, format!("{FORM}: {ASYNC_COPY_INTO_SHARED}"));
        }
        // A 16-byte copy is an `HVec8` on both sides: elements of 8 bytes (or a binding of
        // halves) hold no 16-byte element to copy, and the copy does not reinterpret.
        let (dv, sv) = (self.inf.vector(ptv), self.inf.vector(value.tv));
        if dv != sv && (dv == Some((Scalar::F16, 8)) || sv == Some((Scalar::F16, 8))) {
            let text = |v: Option<(Scalar, u8)>| match v {
                Some((Scalar::F16, n)) => format!("`HVec{n}`s"),
                Some((s, n)) => format!("`vec{n}<{}>`s", s.wgsl()),
                None => "elements of another type".to_string(),
            };
            return self.err_spanned(
                src,
                format!("{FORM}, of one element type: the destination holds {} and the source {}; for 16-byte copies declare the binding `&[HVec8; ..]` (its rows then a multiple of 8 halves, padded on the host) and the `#[shared]` array `[HVec8::ZERO; ..]`", text(dv), text(sv)),
            );
        }
        self.unify_at(value.span, ptv, value.tv);
        out.push(Stmt::AsyncCopy { place, value, span });
        Ok(())
    }

    /// Whether `e` is a helper's reference parameter, which may be given a binding.
    fn is_ref_param(&self, e: &Expr) -> bool {
        matches!(e.kind, ExprKind::Local(id) if self.locals[id].by_ref.is_some())
    }

    /// `async_wait(n)`, `n` an integer literal: the batches left in flight.
    fn async_wait(&mut self, c: &syn::ExprCall, span: Span, out: &mut Block) -> R<()> {
        const FORM: &str = "`async_wait(n)` waits until at most the `n` latest batches of this invocation's `async_copy`s are in flight (a batch: the copies since the previous `async_wait`), then is a workgroup barrier";
        let n = match c.args.first() {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            })) if c.args.len() == 1 => n.base10_parse::<u32>().ok(),
            _ => None,
        };
        let Some(n) = n.filter(|n| *n <= MAX_BATCHES_IN_FLIGHT) else {
            return self.err(
                span,
                format!("{FORM}; `n` is an integer literal from 0 to {MAX_BATCHES_IN_FLIGHT}, such as `async_wait(0)` (wait for every copy)"),
            );
        };
        out.push(Stmt::Barrier {
            kind: Barrier::AsyncWait(n),
            span,
        });
        Ok(())
    }
}

/// The most batches `async_wait` may leave in flight: past a few stages, a pipeline holds
/// more workgroup memory than it gains (PTX takes any count; this bounds a typo).
const MAX_BATCHES_IN_FLIGHT: u32 = 8;
