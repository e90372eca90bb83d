//! Statements in CUDA C++: C's control flow, with Rust's meaning kept where C's differs
//! (a range evaluated once, `a..=MAX` that does not overflow, `break` out of a loop from
//! inside a `match`), and `__syncthreads()` for both barriers.

use super::expr::int_lit;
use super::Emitter;
use crate::model::*;
use crate::names::cuda_name;
use crate::types::len_of;
use std::fmt::Write;

impl Emitter<'_> {
    pub(super) fn block_contents(&mut self, b: &Block) {
        for s in b {
            self.stmt(s);
        }
    }

    /// `header {`, the block indented, and the closing `}` left to the caller.
    fn nested(&mut self, header: &str, b: &Block) {
        if header.is_empty() {
            self.line("{");
        } else {
            self.line(&format!("{header} {{"));
        }
        self.indent += 1;
        self.block_contents(b);
        self.indent -= 1;
    }

    /// A loop body: `break` inside it no longer crosses the enclosing `switch`es.
    fn loop_body(&mut self, b: &Block) {
        self.loop_depth += 1;
        self.block_contents(b);
        self.loop_depth -= 1;
    }

    /// `break` of the innermost loop. Inside a `switch` of that loop, C's `break` would
    /// leave the `switch` only: it sets the `switch`'s flag instead, and the code after
    /// the `switch` breaks the loop (again through an outer `switch` if there is one).
    fn break_loop(&mut self) {
        let crossing = self
            .switches
            .iter()
            .rposition(|(depth, _)| *depth == self.loop_depth);
        if let Some(i) = crossing {
            let flag = self.switches[i].1.clone();
            self.line(&format!("{flag} = true;"));
        }
        self.line("break;");
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let { local, init } => self.let_stmt(*local, init.as_ref()),
            Stmt::Assign {
                place, op, value, ..
            } => {
                let target = self.place(place);
                match op {
                    None => {
                        let v = self.expr(value);
                        self.line(&format!("{target} = {v};"));
                    }
                    // The place is named once: its indices are evaluated once.
                    Some(op) if !place.indices().is_empty() => {
                        let n = self.fresh();
                        let r = format!("fg_ref{n}");
                        let v = self.compound(*op, &r, value);
                        self.line(&format!("{{ auto &{r} = {target}; {r} = {v}; }}"));
                    }
                    Some(op) => {
                        let v = self.compound(*op, &target, value);
                        self.line(&format!("{target} = {v};"));
                    }
                }
            }
            Stmt::If { cond, then, els } => {
                let c = self.expr(cond);
                self.nested(&format!("if ({c})"), then);
                match els {
                    None => self.line("}"),
                    Some(e) => {
                        self.line("} else {");
                        self.indent += 1;
                        self.block_contents(e);
                        self.indent -= 1;
                        self.line("}");
                    }
                }
            }
            Stmt::For(ForLoop {
                var,
                start,
                end,
                inclusive,
                body,
                ..
            }) => {
                let v = self.names[*var].clone();
                let t = self.ty(&self.locals[*var].ty);
                let (s0, e0) = (self.expr(start), self.expr(end));
                let n = self.fresh();
                // Rust evaluates the range once; so does this.
                self.line("{");
                self.indent += 1;
                self.line(&format!("const {t} fg_end{n} = {e0};"));
                if !inclusive {
                    self.line(&format!(
                        "for ({t} {v} = {s0}; {v} < fg_end{n}; {v} = {v} + 1) {{"
                    ));
                } else {
                    // `a..=MAX` must stop after MAX without overflowing: step before the body.
                    self.line(&format!("{t} fg_next{n} = {s0};"));
                    self.line(&format!("bool fg_more{n} = fg_next{n} <= fg_end{n};"));
                    self.line("for (;;) {");
                    self.line(&format!("    if (!fg_more{n}) break;"));
                    self.line(&format!("    const {t} {v} = fg_next{n};"));
                    self.line(&format!("    fg_more{n} = {v} < fg_end{n};"));
                    self.line(&format!("    if (fg_more{n}) fg_next{n} = {v} + 1;"));
                }
                self.indent += 1;
                self.loop_body(body);
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
            Stmt::While { cond, body, .. } => {
                let c = self.expr(cond);
                self.line(&format!("while ({c}) {{"));
                self.indent += 1;
                self.loop_body(body);
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Loop { body, .. } => {
                self.line("for (;;) {");
                self.indent += 1;
                self.loop_body(body);
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Break { .. } => self.break_loop(),
            Stmt::Continue { .. } => self.line("continue;"),
            Stmt::Return { .. } => self.line("return;"),
            Stmt::ReturnValue { value } => {
                let v = self.expr(value);
                self.line(&format!("return {v};"));
            }
            Stmt::Switch {
                selector,
                cases,
                default,
            } => self.switch(selector, cases, default),
            Stmt::CompareExchange {
                old,
                exchanged,
                target,
                index,
                current,
                new,
                ..
            } => {
                let float = self.atomic_float(*target);
                let (c, nv) = (self.expr(current), self.expr(new));
                let place = self.atomic_place(*target, index);
                let n = self.fresh();
                let (o, x) = (self.names[*old].clone(), self.names[*exchanged].clone());
                let ot = self.ty(&self.locals[*old].ty);
                if float {
                    // On the bits, as WGSL's float atomics are `u32`s.
                    self.line(&format!("const unsigned fg_cmp{n} = __float_as_uint({c});"));
                    self.line(&format!(
                        "const unsigned fg_cas{n} = atomicCAS((unsigned *){place}, fg_cmp{n}, __float_as_uint({nv}));"
                    ));
                    self.line(&format!("{ot} {o} = __uint_as_float(fg_cas{n});"));
                } else {
                    self.line(&format!("const {ot} fg_cmp{n} = {c};"));
                    self.line(&format!(
                        "const {ot} fg_cas{n} = atomicCAS({place}, fg_cmp{n}, {nv});"
                    ));
                    self.line(&format!("{ot} {o} = fg_cas{n};"));
                }
                self.line(&format!("bool {x} = fg_cas{n} == fg_cmp{n};"));
            }
            Stmt::Block(b) => {
                self.nested("", b);
                self.line("}");
            }
            Stmt::Eval { expr } => {
                let e = self.expr(expr);
                self.line(&format!("(void){e};"));
            }
            Stmt::Barrier { .. } => self.line("__syncthreads();"),
            // `emit` refuses a kernel that prints before any statement is written.
            Stmt::Print { .. } => {}
        }
    }

    /// `let`: workgroup arrays are declared at the kernel's start; C++ zero-initialises
    /// what has no value (`T x = {};`), as WGSL's `var` does.
    fn let_stmt(&mut self, local: LocalId, init: Option<&Expr>) {
        let l = &self.locals[local];
        if l.shared {
            return;
        }
        let name = self.names[local].clone();
        let t = self.ty(&l.ty);
        let constness = if l.mutable || init.is_none() {
            ""
        } else {
            "const "
        };
        let ty = l.ty.clone();
        match init {
            None => self.line(&format!("{t} {name} = {{}};")),
            Some(e) => match &e.kind {
                ExprKind::ArrayRepeat(v) if v.is_zero() => {
                    self.line(&format!("{constness}{t} {name} = {{}};"))
                }
                ExprKind::ArrayRepeat(v) => {
                    let n = self.fresh();
                    let val = self.expr(v);
                    let len = match &ty {
                        Ty::Array(_, len) => len_of(len, &self.k.options.knobs),
                        _ => "1".into(),
                    };
                    self.line(&format!("const auto fg_fill{n} = {val};"));
                    self.line(&format!("{t} {name};"));
                    self.line(&format!(
                        "for (unsigned fg_i{n} = 0u; fg_i{n} < {len}; ++fg_i{n}) {name}[fg_i{n}] = fg_fill{n};"
                    ));
                }
                ExprKind::ArrayList(items) => {
                    let items: Vec<String> = items.iter().map(|i| self.expr(i)).collect();
                    self.line(&format!(
                        "{constness}{t} {name} = {{{{{}}}}};",
                        items.join(", ")
                    ));
                }
                _ => {
                    let v = self.expr(e);
                    self.line(&format!("{constness}{t} {name} = {v};"));
                }
            },
        }
    }

    /// `match` as C's `switch`: each case ends in `break`, so none falls through.
    fn switch(&mut self, selector: &Expr, cases: &[(Vec<i64>, Block)], default: &Block) {
        let sel = self.expr(selector);
        let flag = format!("fg_brk{}", self.fresh());
        let breaks = self.loop_depth > 0 && {
            let mut found = false;
            for b in cases.iter().map(|(_, b)| b).chain([default]) {
                walk_stmts(b, &mut |s| found |= matches!(s, Stmt::Break { .. }));
            }
            found
        };
        if breaks {
            self.line(&format!("bool {flag} = false;"));
        }
        self.line(&format!("switch ({sel}) {{"));
        self.indent += 1;
        self.switches.push((self.loop_depth, flag.clone()));
        for (values, body) in cases {
            let mut labels = String::new();
            for v in values {
                let _ = write!(labels, "case {}: ", int_lit(*v, &selector.ty));
            }
            self.nested(labels.trim_end(), body);
            self.line("    break;");
            self.line("}");
        }
        self.nested("default:", default);
        self.line("    break;");
        self.line("}");
        self.switches.pop();
        self.indent -= 1;
        self.line("}");
        if breaks {
            self.line(&format!("if ({flag}) {{"));
            self.indent += 1;
            self.break_loop();
            self.indent -= 1;
            self.line("}");
        }
    }

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
