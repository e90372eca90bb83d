//! Statements in CUDA C++: `back` writes C's control flow with Rust's meaning kept (a
//! range evaluated once, `a..=MAX` that does not overflow, `break` out of a loop from inside
//! a `match`); here are C's spellings, and the statements whose form is C's own:
//! assignments through the prelude's operators, compare-exchange, and `__syncthreads()` for
//! both barriers.
//!
//! Part of `emit_cuda` (layer 3).

use super::Emitter;
use crate::back::{Exchange, Exprs, Stmts};
use crate::model::*;
use crate::types::len_of;

impl Stmts for Emitter<'_> {
    fn array_fill(&mut self, _mutable: bool, name: &str, t: &Ty, v: &Expr) {
        let ts = self.ty(t);
        let n = self.w.fresh();
        let val = self.expr(v);
        let len = match t {
            Ty::Array(_, len) => len_of(len, &self.k.options.knobs),
            _ => "1".into(),
        };
        self.w.line(&format!("const auto fg_fill{n} = {val};"));
        self.w.line(&format!("{ts} {name};"));
        self.w.line(&format!(
            "for (unsigned fg_i{n} = 0u; fg_i{n} < {len}; ++fg_i{n}) {name}[fg_i{n}] = fg_fill{n};"
        ));
    }

    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &Expr) {
        let target = self.place(place);
        match op {
            None => {
                let v = self.expr(value);
                self.w.line(&format!("{target} = {v};"));
            }
            // The place is named once: its indices are evaluated once.
            Some(op) if !place.indices().is_empty() => {
                let n = self.w.fresh();
                let r = format!("fg_ref{n}");
                let v = self.compound(op, &r, value);
                self.w
                    .line(&format!("{{ auto &{r} = {target}; {r} = {v}; }}"));
            }
            Some(op) => {
                let v = self.compound(op, &target, value);
                self.w.line(&format!("{target} = {v};"));
            }
        }
    }

    fn compare_exchange(&mut self, cas: Exchange<'_>) {
        let float = self.atomic_float(cas.target);
        let (c, nv) = (self.expr(cas.current), self.expr(cas.new));
        let place = self.atomic_place(cas.target, cas.index);
        let n = self.w.fresh();
        let (o, x) = (
            self.names[cas.old].clone(),
            self.names[cas.exchanged].clone(),
        );
        let ot = self.ty(&self.locals[cas.old].ty);
        if float {
            // On the bits, as WGSL's float atomics are `u32`s.
            self.w
                .line(&format!("const unsigned fg_cmp{n} = __float_as_uint({c});"));
            self.w.line(&format!(
                "const unsigned fg_cas{n} = atomicCAS((unsigned *){place}, fg_cmp{n}, __float_as_uint({nv}));"
            ));
            self.w
                .line(&format!("{ot} {o} = __uint_as_float(fg_cas{n});"));
        } else {
            self.w.line(&format!("const {ot} fg_cmp{n} = {c};"));
            self.w.line(&format!(
                "const {ot} fg_cas{n} = atomicCAS({place}, fg_cmp{n}, {nv});"
            ));
            self.w.line(&format!("{ot} {o} = fg_cas{n};"));
        }
        self.w.line(&format!("bool {x} = fg_cas{n} == fg_cmp{n};"));
    }

    fn eval(&mut self, expr: &Expr) {
        let e = self.expr(expr);
        self.w.line(&format!("(void){e};"));
    }

    fn barrier(&mut self, kind: Barrier) {
        match kind {
            Barrier::AsyncWait(n) => self.w.line(&format!("fg_async_wait<{n}>();")),
            Barrier::Workgroup | Barrier::Storage => self.w.line("__syncthreads();"),
        }
    }

    /// The prelude's `fg_async_copy`: `cp.async` where the element allows it.
    fn async_copy(&mut self, place: &Place, value: &Expr) {
        let dst = self.place(place);
        let ExprKind::LoadBinding(b, index) = &value.kind else {
            // `lower` makes every source a binding's element.
            return self.assign(place, None, value);
        };
        let src = self.atomic_place(AtomicTarget::Binding(*b), index);
        self.w.line(&format!("fg_async_copy(&{dst}, {src});"));
    }

    /// `emit` refuses a kernel that prints before any statement is written.
    fn print(&mut self, _format: usize, _args: &[Expr]) {}
}
