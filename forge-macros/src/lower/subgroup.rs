//! Subgroup operations: `subgroup_add(v)`, `subgroup_shuffle(v, lane)`, .. (WGSL's, in
//! snake case).
//!
//! Part of `lower` (layer 3).

use super::infer;
use super::{Lowerer, R};
use crate::model::*;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    /// `subgroup_add(v)`, `subgroup_shuffle(v, lane)` and the other subgroup operations.
    pub(super) fn subgroup(&mut self, c: &syn::ExprCall, op: SubgroupOp) -> R<Expr> {
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
}
