//! Statements in CUDA C++: `back` writes C's control flow with Rust's meaning kept (a
//! range evaluated once, `a..=MAX` that does not overflow, `break` out of a loop from inside
//! a `match`); here are C's spellings, and the statements whose form is C's own:
//! assignments through the prelude's operators, compare-exchange, and `__syncthreads()` for
//! both barriers.

use super::expr::int_lit;
use super::Emitter;
use crate::back::{Lang, Writer};
use crate::model::*;
use crate::names::cuda_name;
use crate::types::len_of;
use std::fmt::Write;

impl Lang for Emitter<'_> {
    fn w(&mut self) -> &mut Writer {
        &mut self.w
    }

    fn local(&self, id: LocalId) -> &Local {
        &self.locals[id]
    }

    fn name(&self, id: LocalId) -> String {
        self.names[id].clone()
    }

    fn ty(&self, t: &Ty) -> String {
        super::types::ty(t, &self.k.structs, &self.k.options.knobs)
    }

    fn expr(&mut self, e: &Expr) -> String {
        Emitter::expr(self, e)
    }

    fn cond(&self, c: &str) -> String {
        format!("({c})")
    }

    fn decl(&self, mutable: bool, name: &str, ty: &str, value: &str) -> String {
        let constness = if mutable { "" } else { "const " };
        format!("{constness}{ty} {name} = {value}")
    }

    /// C++ zero-initialises what has no value (`T x = {};`), as WGSL's `var` does.
    fn decl_zeroed(&self, name: &str, ty: &str) -> String {
        format!("{ty} {name} = {{}}")
    }

    fn zero_array(&self, _ty: &str) -> String {
        "{}".to_string()
    }

    fn array(&self, _ty: &str, items: &[String]) -> String {
        format!("{{{{{}}}}}", items.join(", "))
    }

    fn array_fill(&mut self, _mutable: bool, name: &str, t: &Ty, v: &Expr) {
        let ts = Lang::ty(self, t);
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

    fn forever(&self) -> &'static str {
        "for (;;)"
    }

    fn break_unless(&self, more: &str) -> String {
        format!("if (!{more}) break;")
    }

    fn step(&self, next: &str, v: &str, more: &str) -> String {
        format!("if ({more}) {next} = {v} + 1;")
    }

    fn case_label(&self, values: &[i64], ty: &Ty) -> String {
        let mut labels = String::new();
        for v in values {
            let _ = write!(labels, "case {}: ", int_lit(*v, ty));
        }
        labels.trim_end().to_string()
    }

    fn case_end(&self) -> Option<&'static str> {
        Some("    break;")
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

    fn compare_exchange(&mut self, s: &Stmt) {
        let Stmt::CompareExchange {
            old,
            exchanged,
            target,
            index,
            current,
            new,
            ..
        } = s
        else {
            return;
        };
        let float = self.atomic_float(*target);
        let (c, nv) = (self.expr(current), self.expr(new));
        let place = self.atomic_place(*target, index);
        let n = self.w.fresh();
        let (o, x) = (self.names[*old].clone(), self.names[*exchanged].clone());
        let ot = Lang::ty(self, &self.locals[*old].ty);
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

    fn barrier(&mut self, _kind: Barrier) {
        self.w.line("__syncthreads();");
    }

    /// `emit` refuses a kernel that prints before any statement is written.
    fn print(&mut self, _format: usize, _args: &[Expr]) {}
}

impl Emitter<'_> {
    /// An assignable place.
    fn place(&mut self, place: &Place) -> String {
        match place {
            Place::Local(id) => self.names[*id].clone(),
            Place::LocalIndex(id, idx) => {
                let mut t = self.names[*id].clone();
                for i in idx {
                    let i = self.expr(i);
                    let _ = write!(t, "[{i}]");
                }
                t
            }
            Place::Binding(b, i) => {
                let i = self.expr(i);
                format!("{}[{i}]", cuda_name(&self.k.bindings[*b].name))
            }
            Place::Field(base, f) => {
                let base_ty = self.k.place_ty(self.locals, base);
                let base = self.place(base);
                format!("{base}.{}", self.field_name(&base_ty, *f))
            }
            Place::Component(base, c) => {
                let base = self.place(base);
                format!("{base}.v[{c}]")
            }
            Place::Index(base, i) => {
                let base = self.place(base);
                let i = self.expr(i);
                format!("{base}[{i}]")
            }
        }
    }
}
