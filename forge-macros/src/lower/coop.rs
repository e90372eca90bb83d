//! Cooperative matrices: `CoopA::load_row_major(&x[i], stride)`, `CoopC::zeroed()`,
//! `a.mul_add(b, c)` and `m.store_row_major(&mut y[i], stride)`; and an accumulator's
//! rows: `c.row_max()`, `c.exp2_rows(scale, m)`, `c.to_a()` and `CoopRow`'s arithmetic.
//!
//! Rows are what a softmax over a matrix of scores asks for, and what opaque matrices
//! cannot give: each backend keeps a `CoopRow` where its accumulator's rows are. CUDA
//! knows the fragments' layout, so each lane holds the values of the two rows whose
//! elements it holds, and a row's reduction is a few shuffles (`prelude_coop.cuh`). WGSL
//! does not: lane `l` of a subgroup holds row `l % 16`, and an operation on an
//! accumulator goes through a subgroup's 16×16 floats of workgroup memory, between
//! barriers (`emit_wgsl`'s row functions). The oracle holds all 16 rows in every
//! invocation, as it holds whole matrices.
//!
//! Part of `lower` (layer 3).

use super::infer;
use super::{path_name_p, Lowerer, R};
use crate::model::*;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    /// `CoopA::zeroed()`, `CoopA::load_row_major(&x[i], stride)` and
    /// `CoopA::load_col_major(&x[i], stride)`, likewise for `CoopB` and `CoopC`.
    pub(super) fn coop_call(&mut self, c: &syn::ExprCall, role: CoopRole, func: &str) -> R<Expr> {
        let span = c.span();
        let (ty, s) = (role.type_name(), role.elem());
        if role == CoopRole::Row {
            return self.row_splat(c, func);
        }
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
    pub(super) fn coop_method(
        &mut self,
        m: &syn::ExprMethodCall,
        a: Expr,
        s: Scalar,
        role: CoopRole,
    ) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        let ty = format!("{}<{}>", role.type_name(), s.wgsl());
        if name == "store_row_major" || name == "store_col_major" {
            return self.err(
                m.method.span(),
                format!("`{name}` is a statement; write `m.{name}(&mut x[i], stride);` on its own"),
            );
        }
        if role == CoopRole::Row {
            return self.row_method(m, a);
        }
        if role == CoopRole::C && name != "mul_add" {
            if let Some(op) = RowOp::ON_ACCUMULATOR.iter().find(|o| o.name() == name) {
                return self.acc_row_method(m, a, *op);
            }
        }
        if name != "mul_add" {
            let rows = if role == CoopRole::C {
                ", and on an accumulator's rows `row_max`, `row_sum`, `mask_from`, `exp2_rows`, `scale_rows` and `to_a`, and `max(o)` and `add(o)` element by element with another accumulator"
            } else {
                ""
            };
            return self.err(m.method.span(), format!("`{ty}` has no method `{name}`; cooperative matrices have `a.mul_add(b, c)` (`a·b + c`), `store_row_major` and `store_col_major`{rows}"));
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

    /// `CoopRow::splat(x)`: `x` in every row.
    fn row_splat(&mut self, c: &syn::ExprCall, func: &str) -> R<Expr> {
        let span = c.span();
        if func != "splat" || c.args.len() != 1 {
            return self.err(span, "a `CoopRow` is made with `CoopRow::splat(x)`, `x` an `f32` for every row, or by an accumulator's `row_max()` or `row_sum()`");
        }
        let x = self.scalar_arg(&c.args[0], infer::S_F32, "`CoopRow::splat` takes an `f32`")?;
        let tv = self.inf.of_coop(Scalar::F32, CoopRole::Row);
        Ok(self.expr_of(
            ExprKind::Coop {
                op: CoopOp::Rows(RowOp::Splat),
                target: None,
                args: vec![x],
            },
            tv,
            span,
        ))
    }

    /// An operand that must be a `CoopRow`.
    fn row_operand(&mut self, e: &syn::Expr, what: &str) -> R<Expr> {
        let x = self.expr(e)?;
        match self.inf.coop(x.tv) {
            Some((_, CoopRole::Row)) => Ok(x),
            _ if self.inf.is_error(x.tv) => Ok(x),
            _ => self.err(x.span, format!("{what} is a `CoopRow`, a value for each row (`CoopRow::splat(x)`, `c.row_max()`)")),
        }
    }

    /// `r.max(o)`, `r.min(o)`, `r.add(o)`, `r.sub(o)`, `r.mul(o)`, `r.scale(x)`,
    /// `r.exp2()` and `r.recip()` on a `CoopRow`, row by row.
    fn row_method(&mut self, m: &syn::ExprMethodCall, r: Expr) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        let op = match name.as_str() {
            "scale" => RowOp::Scale,
            "exp2" => RowOp::Exp2,
            "recip" => RowOp::Recip,
            _ => match RowBin::ALL.iter().find(|b| b.name() == name) {
                Some(b) => RowOp::Bin(*b),
                None => return self.err(m.method.span(), format!("`CoopRow` has no method `{name}`; it has `max`, `min`, `add`, `sub` and `mul` with another `CoopRow`, `scale(x)` by an `f32`, `exp2()` and `recip()`")),
            },
        };
        let arity = match op {
            RowOp::Exp2 | RowOp::Recip => 0,
            _ => 1,
        };
        if m.args.len() != arity {
            let form = match op {
                RowOp::Scale => {
                    "`r.scale(x)` takes the `f32` that multiplies every row".to_string()
                }
                RowOp::Bin(_) => format!("`r.{name}(o)` takes another `CoopRow`"),
                _ => format!("`r.{name}()` takes no arguments"),
            };
            return self.err(span, form);
        }
        let mut args = vec![r];
        match op {
            RowOp::Scale => {
                args.push(self.scalar_arg(
                    &m.args[0],
                    infer::S_F32,
                    "`r.scale(x)` takes an `f32`",
                )?);
            }
            RowOp::Bin(_) => {
                let what = format!("the operand of `{name}`");
                args.push(self.row_operand(&m.args[0], &what)?);
            }
            _ => {}
        }
        let tv = self.inf.of_coop(Scalar::F32, CoopRole::Row);
        Ok(self.expr_of(
            ExprKind::Coop {
                op: CoopOp::Rows(op),
                target: None,
                args,
            },
            tv,
            span,
        ))
    }

    /// An accumulator's row operations: `c.row_max()`, `c.row_sum()`,
    /// `c.mask_from(first, step, fill)`, `c.exp2_rows(scale, m)`, `c.scale_rows(f)`,
    /// `c.to_a()`, and `c.max(o)` and `c.add(o)` (element by element).
    fn acc_row_method(&mut self, m: &syn::ExprMethodCall, c: Expr, op: RowOp) -> R<Expr> {
        let span = m.span();
        let name = op.name();
        let (form, n) = match op {
            RowOp::Max | RowOp::Sum | RowOp::ToA => (format!("`c.{name}()` takes no arguments"), 0),
            RowOp::MaskFrom => ("`c.mask_from(first, step, fill)` takes two `i32`s and an `f32`: element `(r, j)` becomes `fill` where `j >= first + step * r`".to_string(), 3),
            RowOp::MaxWith => ("`c.max(o)` takes another accumulator (`CoopC<f32>`): element by element, the larger".to_string(), 1),
            RowOp::AddWith => ("`c.add(o)` takes another accumulator (`CoopC<f32>`): element by element, the sum".to_string(), 1),
            RowOp::Exp2Rows => ("`c.exp2_rows(scale, m)` takes an `f32` and a `CoopRow`: element `(r, j)` becomes `2^(x * scale - m[r])`".to_string(), 2),
            _ => ("`c.scale_rows(f)` takes a `CoopRow`: row `r` is multiplied by `f[r]`".to_string(), 1),
        };
        if m.args.len() != n {
            return self.err(span, form);
        }
        let mut args = vec![c];
        match op {
            RowOp::MaskFrom => {
                for (i, what) in [(0, "`first`"), (1, "`step`")] {
                    let msg = format!("{what} of `mask_from` is an `i32`");
                    args.push(self.scalar_arg(&m.args[i], infer::S_I32, &msg)?);
                }
                let msg = "`fill` of `mask_from` is an `f32`";
                args.push(self.scalar_arg(&m.args[2], infer::S_F32, msg)?);
            }
            RowOp::Exp2Rows => {
                let msg = "the scale of `exp2_rows` is an `f32`";
                args.push(self.scalar_arg(&m.args[0], infer::S_F32, msg)?);
                args.push(self.row_operand(&m.args[1], "the second argument of `exp2_rows`")?);
            }
            RowOp::ScaleRows => {
                args.push(self.row_operand(&m.args[0], "the argument of `scale_rows`")?);
            }
            RowOp::MaxWith | RowOp::AddWith => {
                let o = self.expr(&m.args[0])?;
                match self.inf.coop(o.tv) {
                    Some((Scalar::F32, CoopRole::C)) => args.push(o),
                    _ if self.inf.is_error(o.tv) => args.push(o),
                    _ => {
                        return self.err(
                            o.span,
                            format!(
                            "the operand of `c.{name}(o)` is another accumulator, a `CoopC<f32>`"
                        ),
                        )
                    }
                }
            }
            _ => {}
        }
        let tv = match op {
            RowOp::Max | RowOp::Sum => self.inf.of_coop(Scalar::F32, CoopRole::Row),
            RowOp::ToA => self.inf.of_coop(Scalar::F16, CoopRole::A),
            _ => self.inf.of_coop(Scalar::F32, CoopRole::C),
        };
        Ok(self.expr_of(
            ExprKind::Coop {
                op: CoopOp::Rows(op),
                target: None,
                args,
            },
            tv,
            span,
        ))
    }

    /// `m.store_row_major(&mut x[i], stride);` and `store_col_major`.
    pub(super) fn coop_store(&mut self, m: &syn::ExprMethodCall) -> R<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        let v = self.expr(&m.receiver)?;
        if self.inf.is_error(v.tv) {
            return Ok(self.poison(span));
        }
        let s = match self.inf.coop(v.tv) {
            Some((s, role)) if role != CoopRole::Row => s,
            _ => {
                return self.err(
                    v.span,
                    format!("`{name}` stores a cooperative matrix (`CoopA`, `CoopB` or `CoopC`); a `CoopRow` is a value for each row of one, kept by the subgroup: scale an accumulator's rows by it with `c.scale_rows(r)` and store that"),
                )
            }
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

    pub(super) fn coop_stride(&mut self, e: &syn::Expr, func: &str) -> R<Expr> {
        let msg = format!("the stride of `{func}` is a `u32`, in elements of the array");
        self.scalar_arg(e, infer::S_U32, &msg)
    }

    /// An argument lowered and held to `set`, with `msg` where it is not.
    fn scalar_arg(&mut self, e: &syn::Expr, set: infer::Set, msg: &str) -> R<Expr> {
        let x = self.expr(e)?;
        self.constrain_at(x.span, x.tv, set, msg);
        Ok(x)
    }

    /// The `&x[i]` (or `&mut x[i]`) of a load or store: a binding or a `#[shared]` array
    /// whose elements (or vector components) are `s`, and the index.
    pub(super) fn coop_ref(
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
            // A helper's reference parameter takes its array where the helper is called:
            // `check` holds the inlined operation to a binding or a `#[shared]` array.
            if !self.locals[id].shared && self.locals[id].by_ref.is_none() {
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
}
