//! Length parameters of helpers: `fn scan<const N: usize>(t: &mut [u32; N], lid: u32)`.
//! A helper that declares one is inlined at each call (see `inline`), so `N` needs no
//! WGSL of its own: each call fixes it to the length of the array it gives `t`, and the
//! inlined body has that length in its types and, where it reads `N`, as a `u32` value.
//! This module declares them, and works out what a call gives them.
//!
//! Part of `lower` (layer 3).

use super::{Lowerer, R};
use crate::model::*;
use crate::types::{len_text, ty_text};

impl Lowerer<'_, '_> {
    /// Declares a helper's `const N: usize` parameters as immutable `u32` locals of its
    /// body, in scope for its parameters' types, and refuses every other generic form.
    pub(super) fn length_params(&mut self, g: &syn::Generics) {
        for p in &g.params {
            match p {
                syn::GenericParam::Const(c) => {
                    let name = c.ident.to_string();
                    let usize_ty = matches!(crate::types::ungroup(&c.ty), syn::Type::Path(t) if t.qself.is_none() && t.path.is_ident("usize"));
                    if !usize_ty {
                        self.cx.error_spanned(
                            &c.ty,
                            format!("an array's length is a `usize` in Rust; write `const {name}: usize`"),
                        );
                    }
                    if let Some(d) = &c.default {
                        self.cx.error_spanned(
                            d,
                            format!("a length parameter takes no default: each call gives `{name}` the length of its array; write `const {name}: usize`"),
                        );
                    }
                    if crate::names::sched_const(&name, &[], true).is_some() {
                        self.cx.error(
                            c.ident.span(),
                            format!("`{name}` is a schedule constant of every kernel; name the length parameter differently, as in `const N: usize`"),
                        );
                    }
                    if self.len_params.iter().any(|l| self.locals[*l].name == name) {
                        self.cx.error(
                            c.ident.span(),
                            format!("the length parameter `{name}` is declared twice"),
                        );
                        continue;
                    }
                    let tv = self.inf.of_scalar(Scalar::U32);
                    let id = self.declare(&name, false, false, c.ident.span(), tv);
                    self.len_params.push(id);
                }
                syn::GenericParam::Type(t) => self.cx.error(
                    t.ident.span(),
                    format!("helpers are not generic over types; a generic kernel's helper takes the instance's type as written in the kernel, and a helper may be generic over the lengths of its arrays only, as in `fn scan<const N: usize>(t: &mut [u32; N])`; remove `{}`", t.ident),
                ),
                syn::GenericParam::Lifetime(lt) => self.cx.error(
                    lt.lifetime.span(),
                    "helpers take no lifetime parameters, as their references take no lifetime; write `&mut [T; N]`",
                ),
            }
        }
        if let Some(w) = &g.where_clause {
            self.cx.error_spanned(
                w,
                "helpers take no `where` clause; a helper may be generic over the lengths of its arrays only, `const N: usize`",
            );
        }
    }

    /// The helper's length parameters, once its parameters' types are solved: each must be
    /// the whole length of an array that a parameter takes (`t: &mut [u32; N]`), where a
    /// call can fix it.
    /// `checked` is false where the helper's signature had errors already, which may
    /// leave a parameter's type unknown.
    pub(super) fn settle_length_params(&self, params: &[LocalId], checked: bool) -> Vec<LenParam> {
        let mut lens = Vec::new();
        for &id in &self.len_params {
            fn whole(t: &Ty, p: LocalId) -> bool {
                match t {
                    Ty::Array(e, len) => len.param() == Some(p) || whole(e, p),
                    _ => false,
                }
            }
            if checked && !params.iter().any(|q| whole(&self.locals[*q].ty, id)) {
                let name = &self.locals[id].name;
                self.cx.error(
                    self.locals[id].span,
                    format!("`{name}` is the whole length of no parameter's array, so no call can fix it; use it as one, as in `t: &mut [u32; {name}]`"),
                );
            }
            // `used` is settled once the helper's own calls are inlined (`inline::helper`).
            lens.push(LenParam {
                local: id,
                used: false,
            });
        }
        lens
    }

    /// At a call of helper `h`, the type of the parameter that argument `arg` (of type
    /// variable `tv`) is given to, with the length parameters fixed so far and those this
    /// argument fixes replaced (`lens` gains the latter). A parameter's type without length
    /// parameters is returned as it is.
    pub(super) fn fix_lens(
        &mut self,
        h: usize,
        t: &Ty,
        tv: usize,
        arg: &syn::Expr,
        lens: &mut Vec<(LocalId, ConstLen)>,
    ) -> R<Ty> {
        if !has_param(t) {
            return Ok(t.clone());
        }
        let helper = &self.helpers[h];
        let want = ty_text(&t.subst(lens), self.knobs);
        let Some(have) = self.inf.resolve(tv).filter(|h| matches!(h, Ty::Array(..))) else {
            return self.err_spanned(
                arg,
                format!("`{}` takes `{want}` here, whose length this argument gives, but its length is not known here; pass an array declared with its length", helper.name),
            );
        };
        if let Err((p, before, now)) = bind_lens(t, &have, lens) {
            return self.err_spanned(
                arg,
                format!(
                    "mismatched array lengths: `{}` takes one length `{}` for these arrays, which an argument before gives as `{}` and this one as `{}`; pass arrays of one length",
                    helper.name,
                    helper.locals[p].name,
                    len_text(&before, self.knobs),
                    len_text(&now, self.knobs)
                ),
            );
        }
        Ok(t.subst(lens))
    }

    /// After a call's arguments: a length parameter that no argument fixed, which only a
    /// binding was given (its length is known at run time), is an error where the helper
    /// uses it; where it does not, nothing needs its value.
    pub(super) fn unfixed_lens(
        &self,
        h: usize,
        lens: &[(LocalId, ConstLen)],
        bound: &[(LocalId, String)],
        span: proc_macro2::Span,
    ) -> R<()> {
        let helper = &self.helpers[h];
        if helper.failed {
            return Ok(());
        }
        for lp in &helper.lens {
            if !lp.used || lens.iter().any(|(p, _)| *p == lp.local) {
                continue;
            }
            let name = &helper.locals[lp.local].name;
            let by = bound
                .iter()
                .find(|(p, _)| *p == lp.local)
                .map(|(_, b)| format!("only binding `{b}`, whose length is known at run time"))
                .unwrap_or_else(|| "no array".into());
            return self.err(
                span,
                format!("`{}` uses its length parameter `{name}`, to which this call gives {by}; pass a local or `#[shared]` array for it, whose length is known at compile time", helper.name),
            );
        }
        Ok(())
    }
}

/// Whether an array length of the type is, or uses, a length parameter.
pub(super) fn has_param(t: &Ty) -> bool {
    fn go(c: &CExpr) -> bool {
        match c {
            CExpr::Param(..) => true,
            CExpr::Bin(_, a, b) => go(a) || go(b),
            CExpr::Lit(_) | CExpr::Sched(_) => false,
        }
    }
    match t {
        Ty::Array(e, len) => matches!(len, ConstLen::Sched(c) if go(c)) || has_param(e),
        _ => false,
    }
}
