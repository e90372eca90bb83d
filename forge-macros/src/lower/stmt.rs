//! Statements: `let`, assignments and the places they write, `if` and `match` (as
//! statements and as values), loops, `break`, `continue`, `return` and barriers. The
//! statements that are calls of atomics, cooperative stores, prints and helpers are their
//! own modules'.
//!
//! Part of `lower` (layer 3).

use super::expr::method_list;
use super::infer;
use super::{last_span, path_name, path_name_p, Lowerer, Scope, R};
use crate::model::*;
use proc_macro2::Span;
use syn::spanned::Spanned;

impl Lowerer<'_, '_> {
    pub fn block(&mut self, b: &syn::Block) -> Block {
        self.scopes.push(Scope::default());
        let mut out = Vec::new();
        for s in &b.stmts {
            self.stmt(s, &mut out);
        }
        self.scopes.pop();
        out
    }

    pub(super) fn stmt(&mut self, s: &syn::Stmt, out: &mut Block) {
        let _ = self.with_hoisted(out, |this, out| {
            this.stmt_inner(s, out);
            Ok(())
        });
    }

    /// Runs `f`, which lowers one statement (or one assignment of a value) into `out`, and
    /// puts the statements computing the `if` and `match` values of its expressions
    /// first: Rust evaluates such a value where it stands, and nothing before it in the
    /// statement can observe the difference but atomics and prints, which run after it.
    pub(super) fn with_hoisted(
        &mut self,
        out: &mut Block,
        f: impl FnOnce(&mut Self, &mut Block) -> R<()>,
    ) -> R<()> {
        let outer = std::mem::take(&mut self.pending);
        let mut body = Vec::new();
        let result = f(self, &mut body);
        let mine = std::mem::replace(&mut self.pending, outer);
        out.extend(mine);
        out.extend(body);
        result
    }

    /// An `if` or `match` used as a value inside an expression: computed into a hidden
    /// local by statements that go before the statement holding it.
    pub(super) fn hoisted_value(&mut self, e: &syn::Expr) -> R<Expr> {
        if let Some(place) = self.no_hoist {
            let what = if matches!(e, syn::Expr::Match(_)) {
                "a `match`"
            } else {
                "an `if`"
            };
            return self.err(
                e.span(),
                format!("{what} used as a value {place} is computed before its statement, which would run it when Rust would not; bind it first: `let v = if .. {{ .. }} else {{ .. }};`, or write the condition with `if`"),
            );
        }
        let mut pre = Vec::new();
        let value = self.value_or_if(e, &mut pre)?;
        self.pending.extend(pre);
        Ok(value)
    }

    fn stmt_inner(&mut self, s: &syn::Stmt, out: &mut Block) {
        match s {
            syn::Stmt::Local(l) => {
                let _ = self.local(l, out);
            }
            syn::Stmt::Expr(e, _) => {
                let _ = self.expr_stmt(e, out);
            }
            syn::Stmt::Item(syn::Item::Const(c)) => {
                let value = match self.const_value(c) {
                    Ok(v) => v,
                    // Still declared, so that its uses add no "cannot find" errors.
                    Err(()) => {
                        let tv = self.inf.error();
                        self.expr_of(ExprKind::IntLit(0), tv, c.ident.span())
                    }
                };
                if let Some(scope) = self.scopes.last_mut() {
                    scope.consts.insert(c.ident.to_string(), value);
                }
            }
            syn::Stmt::Item(i) => self.cx.error(i.span(), "items inside a kernel are not supported, except `const NAME: T = value;`; move them outside the kernel"),
            syn::Stmt::Macro(m) if m.mac.path.is_ident("debug_print") => {
                let _ = self.print(&m.mac, out);
            }
            syn::Stmt::Macro(m) => self.cx.error(
                m.span(),
                "macros are not supported in kernels; write the code out, or move host-side logic outside the kernel",
            ),
        }
    }

    /// A `let`. When it is refused, the names it declares are still declared, with a type
    /// that agrees with every use: one mistake gives one error, not one per later use.
    pub(super) fn local(&mut self, l: &syn::Local, out: &mut Block) -> R<()> {
        let before = self.locals.len();
        let result = self.local_inner(l, out);
        if result.is_err() {
            let mut names = Vec::new();
            pattern_names(&l.pat, &mut names);
            for ident in names {
                let name = ident.to_string();
                let declared = self.locals[before..].iter().any(|x| x.name == name);
                if !declared && name != "_" {
                    let tv = self.inf.error();
                    // Mutable, so that assignments to it report nothing more either.
                    let id = self.declare(&name, true, false, ident.span(), tv);
                    self.locals[id].assigned = true;
                }
            }
        }
        result
    }

    pub(super) fn local_inner(&mut self, l: &syn::Local, out: &mut Block) -> R<()> {
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init) {
            if let syn::Expr::MethodCall(m) = &*init.expr {
                if m.method == "compare_exchange_weak" {
                    return self.compare_exchange(pt, m, out);
                }
            }
            if let syn::Expr::Call(c) = &*init.expr {
                if let Some(name) = path_name(&c.func).filter(|n| n == "frexp" || n == "modf") {
                    return self.split_float(pt, c, &name, out);
                }
            }
        }
        // `let (a, b) = (x, y);` is two `let`s, evaluated left to right as Rust does.
        if let (syn::Pat::Tuple(pt), Some(init)) = (&l.pat, &l.init) {
            if let syn::Expr::Tuple(et) = &*init.expr {
                if pt.elems.len() != et.elems.len() {
                    return self.err(
                        l.pat.span(),
                        format!(
                            "this pattern has {} names but the tuple has {} values",
                            pt.elems.len(),
                            et.elems.len()
                        ),
                    );
                }
                for (p, e) in pt.elems.iter().zip(&et.elems) {
                    let single = syn::Local {
                        attrs: l.attrs.clone(),
                        let_token: l.let_token,
                        pat: p.clone(),
                        init: Some(syn::LocalInit {
                            eq_token: init.eq_token,
                            expr: Box::new(e.clone()),
                            diverge: None,
                        }),
                        semi_token: l.semi_token,
                    };
                    self.local(&single, out)?;
                }
                return Ok(());
            }
        }
        let shared = l.attrs.iter().any(|a| a.path().is_ident("shared"));
        for a in &l.attrs {
            if !a.path().is_ident("shared") {
                self.cx.error_spanned(
                    a,
                    "unknown attribute on `let`; only `#[shared]` (workgroup memory) is allowed",
                );
            }
        }
        let (pat, ann) = match &l.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let (name, mutable, span) = match pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                pi.ident.to_string(),
                pi.mutability.is_some(),
                pi.ident.span(),
            ),
            other => {
                return self.err(
                    other.span(),
                    "only simple `let name` and `let mut name` bindings are supported",
                )
            }
        };
        if name == "_" {
            return self.err(span, "`let _` is not supported; bind the value to a name");
        }
        let ann_tv = match ann {
            Some(t) => Some(self.type_annotation(t)?),
            None => None,
        };
        if let Some(init) = &l.init {
            if let Some((_, d)) = &init.diverge {
                return self.err(d.span(), "`let ... else` is not supported in kernels");
            }
        }
        if shared && self.in_helper.is_some() {
            return self.err(
                span,
                "helpers cannot declare workgroup memory; declare it in the kernel",
            );
        }
        if shared {
            if !mutable {
                self.cx.error(span, "workgroup memory must be mutable; write `#[shared] let mut name = [0.0f32; LEN];`");
            }
            let Some(init) = &l.init else {
                return self.err(
                    span,
                    "workgroup memory needs an initializer such as `[0.0f32; 256]`",
                );
            };
            if !matches!(&*init.expr, syn::Expr::Repeat(_)) {
                return self.err(
                    init.expr.span(),
                    "workgroup memory is declared as `[value; LEN]`, e.g. `[0.0f32; WG]`",
                );
            }
            if !self.loop_stack.is_empty() || self.scopes.len() > 2 {
                self.cx.error(span, "declare workgroup memory at the top of the kernel body, outside loops and branches");
            }
        }
        // `let x = if c { a } else { b };` becomes a declaration and an `if` assigning `x`.
        if let Some(init) = &l.init {
            if matches!(&*init.expr, syn::Expr::If(_) | syn::Expr::Match(_)) {
                let tv = ann_tv.unwrap_or_else(|| self.inf.fresh());
                let id = self.declare(&name, mutable, shared, span, tv);
                self.locals[id].assigned = true;
                out.push(Stmt::Let {
                    local: id,
                    init: None,
                });
                return self.value_into(&init.expr, id, out);
            }
        }
        let init = match &l.init {
            Some(i) => Some(self.expr(&i.expr)?),
            None => None,
        };
        let tv = match (&init, ann_tv) {
            (Some(e), Some(a)) => {
                self.unify_at(e.span, a, e.tv);
                a
            }
            (Some(e), None) => e.tv,
            (None, Some(a)) => a,
            (None, None) => self.inf.fresh(),
        };
        if shared {
            if let Some(e) = &init {
                if !self.inf.is_array(e.tv) {
                    self.cx.error(e.span, "workgroup memory must be an array");
                }
            }
        }
        let id = self.declare(&name, mutable, shared, span, tv);
        out.push(Stmt::Let { local: id, init });
        Ok(())
    }

    /// An expression statement: an assignment, control flow, a barrier, or a call for its
    /// effect (of a helper, an atomic method, a cooperative store, a print).
    pub(super) fn expr_stmt(&mut self, e: &syn::Expr, out: &mut Block) -> R<()> {
        let span = e.span();
        if let Some(a) = stmt_attrs(e).first() {
            let msg = if a.path().is_ident("unroll") {
                "`#[unroll]` applies to a `for` loop over a constant range, such as `#[unroll] for i in 0..4`"
            } else {
                "attributes are not supported on this statement; the kernel language knows `#[unroll]` on `for` loops and `#[shared]` on `let`"
            };
            self.cx.error_spanned(a, msg);
        }
        let barrier = |c: &syn::ExprCall| match path_name(&c.func).as_deref() {
            Some("workgroup_barrier") => Some(Barrier::Workgroup),
            Some("storage_barrier") => Some(Barrier::Storage),
            _ => None,
        };
        match e {
            syn::Expr::Assign(a) => self.assign(a, span, out),
            syn::Expr::Binary(b) if compound_op(&b.op).is_some() => {
                self.compound_assign(b, span, out)
            }
            syn::Expr::If(ei) => {
                let s = self.if_stmt(ei)?;
                out.push(s);
                Ok(())
            }
            syn::Expr::Match(mt) => self.match_stmt(mt, None, out),
            syn::Expr::ForLoop(f) => self.for_loop(f, out),
            syn::Expr::While(w) => self.while_loop(w, out),
            syn::Expr::Loop(l) => self.loop_stmt(l, out),
            syn::Expr::Break(b) => self.break_stmt(b, span, out),
            syn::Expr::Continue(c) => self.continue_stmt(c, span, out),
            syn::Expr::Return(r) => self.return_stmt(r, span, out),
            syn::Expr::Call(c)
                if matches!(
                    path_name(&c.func).as_deref(),
                    Some("async_copy" | "async_wait")
                ) =>
            {
                self.async_call(c, span, out)
            }
            syn::Expr::Call(c) if barrier(c).is_some() => {
                let kind = barrier(c).unwrap_or(Barrier::Workgroup);
                out.push(Stmt::Barrier { kind, span });
                Ok(())
            }
            syn::Expr::Block(b) => self.bare_block(b, span, out),
            syn::Expr::Paren(p) => self.expr_stmt(&p.expr, out),
            syn::Expr::Macro(m) if m.mac.path.is_ident("debug_print") => self.print(&m.mac, out),
            // A helper called for its effects on the arrays it takes by reference (or for
            // its barriers); `inline` puts its body here.
            syn::Expr::Call(c)
                if path_name(&c.func)
                    .is_some_and(|n| self.helpers.iter().any(|h| h.name == n && h.inline)) =>
            {
                self.call_statement = true;
                let expr = self.call(c);
                self.call_statement = false;
                out.push(Stmt::Eval { expr: expr? });
                Ok(())
            }
            syn::Expr::MethodCall(m) if AtomicOp::from_method(&m.method.to_string()).is_some() => {
                let expr = self.expr(e)?;
                out.push(Stmt::Eval { expr });
                Ok(())
            }
            syn::Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "store_row_major" | "store_col_major"
                ) =>
            {
                let expr = self.coop_store(m)?;
                out.push(Stmt::Eval { expr });
                Ok(())
            }
            other => {
                // An expression statement without effect: lower it for its errors, then
                // reject it, since WGSL has no expression statements.
                let e = self.expr(other)?;
                self.err(
                    e.span,
                    "this expression has no effect; assign its value or remove it",
                )
            }
        }
    }

    /// `place = value`; `x = if c { a } else { b }` assigns `x` in each branch.
    fn assign(&mut self, a: &syn::ExprAssign, span: Span, out: &mut Block) -> R<()> {
        if matches!(&*a.right, syn::Expr::If(_) | syn::Expr::Match(_)) {
            if let syn::Expr::Path(p) = &*a.left {
                if let Some(id) = p.path.get_ident().and_then(|i| self.lookup(&i.to_string())) {
                    self.mark_assigned(id, a.left.span());
                    return self.value_into(&a.right, id, out);
                }
            }
        }
        let value = self.value_or_if(&a.right, out)?;
        let (place, ptv) = self.place(&a.left)?;
        self.unify_at(value.span, ptv, value.tv);
        out.push(Stmt::Assign {
            place,
            op: None,
            value,
            span,
        });
        Ok(())
    }

    /// `place op= value`.
    fn compound_assign(&mut self, b: &syn::ExprBinary, span: Span, out: &mut Block) -> R<()> {
        let op = compound_op(&b.op).unwrap_or(BinOp::Add);
        let value = self.value_or_if(&b.right, out)?;
        let (place, ptv) = self.place(&b.left)?;
        if let Some((s, n)) = self.inf.vector(ptv) {
            self.vector_compound(op, ptv, &value, s, n, &b.op)?;
        } else if op.is_shift() {
            self.constrain_at(b.left.span(), ptv, infer::S_INT, "shifts need integers");
            self.constrain_at(
                value.span,
                value.tv,
                infer::S_INT,
                "shift amounts are integers",
            );
        } else {
            self.unify_at(value.span, ptv, value.tv);
            let set = match op {
                BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => infer::S_INT | infer::S_BOOL,
                _ => infer::S_NUM,
            };
            self.constrain_at(
                span,
                ptv,
                set,
                &format!("`{}=` is not defined for this type", op.wgsl()),
            );
        }
        out.push(Stmt::Assign {
            place,
            op: Some(op),
            value,
            span,
        });
        Ok(())
    }

    /// `for i in a..b` (or `..=`), `#[unroll]` or not.
    fn for_loop(&mut self, f: &syn::ExprForLoop, out: &mut Block) -> R<()> {
        if let Some(l) = &f.label {
            return self.err(l.span(), "loop labels are not supported in kernels");
        }
        let mut unroll = false;
        for a in &f.attrs {
            if !a.path().is_ident("unroll") {
                self.cx
                    .error_spanned(a, "unknown attribute on `for`; only `#[unroll]` is allowed");
            } else if !matches!(a.meta, syn::Meta::Path(_)) {
                self.cx.error_spanned(&a.meta, "`#[unroll]` takes no arguments: the loop's constant bounds say how many copies it makes");
            } else {
                unroll = true;
            }
        }
        let syn::Pat::Ident(pi) = &*f.pat else {
            return self.err(f.pat.span(), "the loop variable must be a plain name");
        };
        if let syn::Expr::MethodCall(m) = &*f.expr {
            return self.stepped_loop(f, pi, m, unroll, out);
        }
        let syn::Expr::Range(r) = &*f.expr else {
            return self.err(
                f.expr.span(),
                "kernels loop over ranges only, such as `for i in 0..n`; for other strides use `while`",
            );
        };
        let (start, end, inclusive) = self.loop_bounds(r)?;
        let id = self.new_loop(unroll);
        self.scopes.push(Scope::default());
        let var = self.declare(
            &pi.ident.to_string(),
            false,
            false,
            pi.ident.span(),
            start.tv,
        );
        self.loop_stack.push(id);
        let body = self.block(&f.body);
        self.loop_stack.pop();
        self.scopes.pop();
        out.push(Stmt::For(ForLoop {
            var,
            start,
            end,
            inclusive,
            body,
            id,
            unroll,
        }));
        Ok(())
    }

    /// A loop range's bounds, of one integer type, and whether it is inclusive. A refused
    /// bound still lets the body be lowered, for its own errors.
    fn loop_bounds(&mut self, r: &syn::ExprRange) -> R<(Expr, Expr, bool)> {
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return self.err(r.span(), "a loop range needs both bounds, such as `0..n`");
        };
        let start = self
            .expr(start)
            .unwrap_or_else(|_| self.poison(start.span()));
        let end = self.expr(end).unwrap_or_else(|_| self.poison(end.span()));
        self.unify_at(end.span, start.tv, end.tv);
        self.constrain_at(
            start.span,
            start.tv,
            infer::S_INT,
            "loop ranges are integer ranges",
        );
        Ok((start, end, matches!(r.limits, syn::RangeLimits::Closed(_))))
    }

    /// `for i in (a..b).step_by(k)` and `for i in (a..b).rev()` (`..=` too): a loop over
    /// a counter `t`, from which the body's `i` is computed (`a + t·k`, or `b - 1 - t`
    /// for `a + b - 1 - t`), so that `continue` and the uniformity analysis see a plain
    /// range. The bounds and the step are evaluated once, before the loop, as Rust does.
    fn stepped_loop(
        &mut self,
        f: &syn::ExprForLoop,
        pi: &syn::PatIdent,
        m: &syn::ExprMethodCall,
        unroll: bool,
        out: &mut Block,
    ) -> R<()> {
        let method = m.method.to_string();
        let mut receiver = &*m.receiver;
        while let syn::Expr::Paren(p) = receiver {
            receiver = &p.expr;
        }
        let hint = "kernels loop over ranges, `(a..b).step_by(k)` and `(a..b).rev()`, such as `for i in (0..n).step_by(WG)`";
        let syn::Expr::Range(r) = receiver else {
            return self.err(
                f.expr.span(),
                format!("{hint}; for other iterations use `while`"),
            );
        };
        let stepped = match (method.as_str(), m.args.len()) {
            ("step_by", 1) => true,
            ("rev", 0) => false,
            ("step_by" | "rev", _) => {
                return self.err(m.span(), "`step_by` takes the step, and `rev` nothing: `(a..b).step_by(k)`, `(a..b).rev()`");
            }
            _ => {
                return self.err(
                    m.method.span(),
                    format!("`.{method}()` on a loop range is not supported; {hint}"),
                )
            }
        };
        if unroll {
            return self.err(m.method.span(), format!("`#[unroll]` loops count over a constant range `A..B`; a `.{method}()` loop is not unrolled"));
        }
        let (start, end, inclusive) = self.loop_bounds(r)?;
        let (span, tv) = (start.span, start.tv);
        let a = self.bind_hidden("fg_lo", "loop start", start, out);
        let b = self.bind_hidden("fg_hi", "loop end", end, out);
        let local = |this: &mut Self, id: LocalId| this.expr_of(ExprKind::Local(id), tv, span);
        let bin = |this: &mut Self, op: BinOp, x: Expr, y: Expr| {
            let t = x.tv;
            this.expr_of(ExprKind::Binary(op, Box::new(x), Box::new(y)), t, span)
        };
        let one = |this: &mut Self| this.expr_of(ExprKind::IntLit(1), tv, span);
        // The counter `t` runs over a range of the bounds' type; `i` is computed from it.
        let mut guard = None;
        let (t_start, t_end, t_inclusive, step) = if stepped {
            let k = self.expr(&m.args[0])?;
            self.unify_at(k.span, tv, k.tv);
            let k = self.bind_hidden("fg_step", "loop step", k, out);
            // The number of steps: `(b - a - 1) / k + 1` values from `a` below `b` (`(b - a)
            // / k + 1` up to `b` inclusive), none when the range is empty.
            let d = {
                let (x, y) = (local(self, b), local(self, a));
                bin(self, BinOp::Sub, x, y)
            };
            let d = if inclusive {
                d
            } else {
                let o = one(self);
                bin(self, BinOp::Sub, d, o)
            };
            let kk = local(self, k);
            let q = bin(self, BinOp::Div, d, kk);
            let (x, y) = (local(self, a), local(self, b));
            // The loop runs under `if a < b` (`a <= b`): the count of an empty range
            // would wrap.
            let mut nonempty = if inclusive {
                bin(self, BinOp::Le, x, y)
            } else {
                bin(self, BinOp::Lt, x, y)
            };
            nonempty.tv = self.inf.of_scalar(Scalar::Bool);
            guard = Some(nonempty);
            (
                self.expr_of(ExprKind::IntLit(0), tv, span),
                q,
                true,
                Some(k),
            )
        } else {
            (local(self, a), local(self, b), inclusive, None)
        };
        let id = self.new_loop(false);
        self.scopes.push(Scope::default());
        let counter = self.declare("fg_t", false, false, span, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_t");
        }
        self.locals[counter].name = "loop counter".to_string();
        self.locals[counter].hidden = Some("fg_t");
        let t = local(self, counter);
        // `i = a + t·k` stepping; `i = a + b - t` reversed over `a..=b` (`- 1` over `a..b`).
        let value = match step {
            Some(k) => {
                let kk = local(self, k);
                let prod = bin(self, BinOp::Mul, t, kk);
                let base = local(self, a);
                bin(self, BinOp::Add, base, prod)
            }
            None => {
                let (x, y) = (local(self, a), local(self, b));
                let sum = bin(self, BinOp::Add, x, y);
                let top = if inclusive {
                    sum
                } else {
                    let o = one(self);
                    bin(self, BinOp::Sub, sum, o)
                };
                bin(self, BinOp::Sub, top, t)
            }
        };
        let var = self.declare(&pi.ident.to_string(), false, false, pi.ident.span(), tv);
        self.loop_stack.push(id);
        let mut body = vec![Stmt::Let {
            local: var,
            init: Some(value),
        }];
        body.extend(self.block(&f.body));
        self.loop_stack.pop();
        self.scopes.pop();
        let for_loop = Stmt::For(ForLoop {
            var: counter,
            start: t_start,
            end: t_end,
            inclusive: t_inclusive,
            body,
            id,
            unroll: false,
        });
        out.push(match guard {
            Some(cond) => Stmt::If {
                cond,
                then: vec![for_loop],
                els: None,
            },
            None => for_loop,
        });
        Ok(())
    }

    /// A hidden local holding `value`, declared in `out`: `what` names it in messages.
    fn bind_hidden(
        &mut self,
        base: &'static str,
        what: &str,
        value: Expr,
        out: &mut Block,
    ) -> LocalId {
        let (span, tv) = (value.span, value.tv);
        let id = self.declare(base, false, false, span, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove(base);
        }
        self.locals[id].name = what.to_string();
        self.locals[id].hidden = Some(base);
        out.push(Stmt::Let {
            local: id,
            init: Some(value),
        });
        id
    }

    /// `while cond { .. }`.
    fn while_loop(&mut self, w: &syn::ExprWhile, out: &mut Block) -> R<()> {
        if let Some(l) = &w.label {
            return self.err(l.span(), "loop labels are not supported in kernels");
        }
        let outer = self
            .no_hoist
            .replace("in a `while` condition, which runs before each iteration,");
        let cond = self.expr(&w.cond);
        self.no_hoist = outer;
        let cond = cond?;
        self.constrain_at(
            cond.span,
            cond.tv,
            infer::S_BOOL,
            "a `while` condition must be `bool`",
        );
        let id = self.new_loop(false);
        self.loop_stack.push(id);
        let body = self.block(&w.body);
        self.loop_stack.pop();
        out.push(Stmt::While { cond, body, id });
        Ok(())
    }

    /// `loop { .. }`.
    fn loop_stmt(&mut self, l: &syn::ExprLoop, out: &mut Block) -> R<()> {
        if let Some(lb) = &l.label {
            return self.err(lb.span(), "loop labels are not supported in kernels");
        }
        let id = self.new_loop(false);
        self.loop_stack.push(id);
        let body = self.block(&l.body);
        self.loop_stack.pop();
        out.push(Stmt::Loop { body, id });
        Ok(())
    }

    /// `break` out of the innermost loop.
    fn break_stmt(&mut self, b: &syn::ExprBreak, span: Span, out: &mut Block) -> R<()> {
        if b.label.is_some() || b.expr.is_some() {
            return self.err(
                span,
                "`break` with a label or a value is not supported in kernels",
            );
        }
        let Some(&target) = self.loop_stack.last() else {
            return self.err(span, "`break` outside of a loop");
        };
        if self.unrolled[target] {
            return self.err(span, "`break` cannot leave an `#[unroll]` loop, whose iterations are copies of its body; guard the rest of the body with an `if`, or drop `#[unroll]`");
        }
        out.push(Stmt::Break { target, span });
        Ok(())
    }

    /// `continue` with the innermost loop's next iteration.
    fn continue_stmt(&mut self, c: &syn::ExprContinue, span: Span, out: &mut Block) -> R<()> {
        if c.label.is_some() {
            return self.err(span, "`continue` with a label is not supported in kernels");
        }
        let Some(&target) = self.loop_stack.last() else {
            return self.err(span, "`continue` outside of a loop");
        };
        if self.unrolled[target] {
            return self.err(span, "`continue` cannot skip to the next copy of an `#[unroll]` loop's body; guard the rest of the body with an `if`, or drop `#[unroll]`");
        }
        out.push(Stmt::Continue { target, span });
        Ok(())
    }

    /// `return`: of the kernel (no value), or of a helper (its value).
    fn return_stmt(&mut self, r: &syn::ExprReturn, span: Span, out: &mut Block) -> R<()> {
        if let Some(ret) = self.in_helper {
            match (&r.expr, ret) {
                (Some(e), Some(rt)) => {
                    let value = self.expr(e)?;
                    self.unify_at(value.span, rt, value.tv);
                    out.push(Stmt::ReturnValue { value });
                }
                (None, None) => out.push(Stmt::Return { span }),
                (Some(e), None) => {
                    return self.err(e.span(), "this helper declares no return type; add `-> T`")
                }
                (None, Some(_)) => {
                    return self.err(span, "this helper returns a value; write `return value;`")
                }
            }
            return Ok(());
        }
        if let Some(e) = &r.expr {
            return self.err(
                e.span(),
                "a kernel returns nothing; write results through `#[out]` bindings",
            );
        }
        out.push(Stmt::Return { span });
        Ok(())
    }

    /// `{ .. }`, a block that only scopes names.
    fn bare_block(&mut self, b: &syn::ExprBlock, span: Span, out: &mut Block) -> R<()> {
        if b.label.is_some() {
            return self.err(span, "labelled blocks are not supported in kernels");
        }
        let inner = self.block(&b.block);
        // A bare block only scopes names: splice it as an always-taken `if`.
        let t = self.inf.of_scalar(Scalar::Bool);
        let cond = self.expr_of(ExprKind::BoolLit(true), t, span);
        out.push(Stmt::If {
            cond,
            then: inner,
            els: None,
        });
        Ok(())
    }

    pub(super) fn if_stmt(&mut self, ei: &syn::ExprIf) -> R<Stmt> {
        let cond = self.expr(&ei.cond)?;
        self.constrain_at(
            cond.span,
            cond.tv,
            infer::S_BOOL,
            "an `if` condition must be `bool`",
        );
        let then = self.block(&ei.then_branch);
        let els = match &ei.else_branch {
            None => None,
            Some((_, e)) => Some(match &**e {
                syn::Expr::Block(b) => self.block(&b.block),
                // The `else if`'s own `if` values go inside the `else`.
                syn::Expr::If(inner) => {
                    let mut v = Vec::new();
                    self.with_hoisted(&mut v, |this, v| {
                        v.push(this.if_stmt(inner)?);
                        Ok(())
                    })?;
                    v
                }
                other => return self.err(other.span(), "expected a block after `else`"),
            }),
        };
        Ok(Stmt::If { cond, then, els })
    }

    /// Lowers `target = if c { ..; a } else { ..; b }` into an `if` that assigns `target`
    /// in each branch.
    pub(super) fn if_into(&mut self, ei: &syn::ExprIf, target: LocalId, out: &mut Block) -> R<()> {
        self.with_hoisted(out, |this, out| this.if_into_inner(ei, target, out))
    }

    fn if_into_inner(&mut self, ei: &syn::ExprIf, target: LocalId, out: &mut Block) -> R<()> {
        let cond = self.expr(&ei.cond)?;
        self.constrain_at(
            cond.span,
            cond.tv,
            infer::S_BOOL,
            "an `if` condition must be `bool`",
        );
        let then = self.block_into(&ei.then_branch, target)?;
        let els = match &ei.else_branch {
            None => return self.err(ei.span(), "an `if` used as a value needs an `else` branch"),
            Some((_, e)) => match &**e {
                syn::Expr::Block(b) => self.block_into(&b.block, target)?,
                syn::Expr::If(inner) => {
                    let mut v = Vec::new();
                    self.if_into(inner, target, &mut v)?;
                    v
                }
                other => return self.err(other.span(), "expected a block after `else`"),
            },
        };
        out.push(Stmt::If {
            cond,
            then,
            els: Some(els),
        });
        Ok(())
    }

    /// Lowers an `if` or `match` that gives a value into statements assigning `target`.
    pub(super) fn value_into(&mut self, e: &syn::Expr, target: LocalId, out: &mut Block) -> R<()> {
        match e {
            syn::Expr::If(ei) => self.if_into(ei, target, out),
            syn::Expr::Match(mt) => self.match_stmt(mt, Some(target), out),
            syn::Expr::Paren(p) => self.value_into(&p.expr, target, out),
            other => self.with_hoisted(out, |this, out| {
                let value = this.expr(other)?;
                let tv = this.local_tv[target];
                this.unify_at(value.span, tv, value.tv);
                out.push(Stmt::Assign {
                    place: Place::Local(target),
                    op: None,
                    value,
                    span: other.span(),
                });
                Ok(())
            }),
        }
    }

    /// `match` on an integer, as a statement or (with `target`) giving the value of
    /// `target`. The scrutinee is evaluated once into a hidden local, which an arm `n => ..`
    /// binds; each arm's values are those that no earlier arm names, as Rust matches the
    /// first arm that fits.
    pub(super) fn match_stmt(
        &mut self,
        mt: &syn::ExprMatch,
        target: Option<LocalId>,
        out: &mut Block,
    ) -> R<()> {
        let scrutinee = self.expr(&mt.expr)?;
        self.constrain_at(
            scrutinee.span,
            scrutinee.tv,
            infer::S_INT,
            "`match` works on `u32` and `i32` values; for other types use `if`/`else`",
        );
        let (span, tv) = (scrutinee.span, scrutinee.tv);
        let hidden = self.declare("fg_match", false, false, span, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_match");
        }
        self.locals[hidden].name = "match value".to_string();
        self.locals[hidden].hidden = Some("fg_match");
        out.push(Stmt::Let {
            local: hidden,
            init: Some(scrutinee),
        });
        let mut selector = self.expr_of(ExprKind::Local(hidden), tv, span);
        selector.end = last_span(&mt.expr);
        let mut seen = std::collections::HashSet::new();
        let mut cases = Vec::new();
        let mut default: Option<Block> = None;
        for arm in &mt.arms {
            if let Some((if_token, _)) = &arm.guard {
                self.cx.error(
                    if_token.span(),
                    "`match` guards are not supported in kernels: an arm is a `switch` case; test inside the arm instead: `n => if cond { .. } else { .. }`",
                );
                continue;
            }
            let mut values = Vec::new();
            let mut catch_all: Option<Option<&syn::PatIdent>> = None;
            let alternatives: Vec<&syn::Pat> = match &arm.pat {
                syn::Pat::Or(o) => o.cases.iter().collect(),
                p => vec![p],
            };
            for p in alternatives {
                match p {
                    syn::Pat::Wild(_) => catch_all = Some(None),
                    syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        catch_all = Some(Some(pi))
                    }
                    _ => {
                        if let Ok(vs) = self.pattern_values(p, tv) {
                            values.extend(vs);
                        }
                    }
                }
            }
            if default.is_some() {
                // Unreachable after a catch-all arm, as rustc would warn; nothing runs it.
                continue;
            }
            self.scopes.push(Scope::default());
            let mut body = Vec::new();
            if let Some(Some(pi)) = catch_all {
                let id = self.declare(
                    &pi.ident.to_string(),
                    pi.mutability.is_some(),
                    false,
                    pi.ident.span(),
                    tv,
                );
                let init = self.expr_of(ExprKind::Local(hidden), tv, span);
                body.push(Stmt::Let {
                    local: id,
                    init: Some(init),
                });
            }
            let lowered = match target {
                Some(t) => self.arm_value(&arm.body, t, &mut body),
                None => self.arm_stmt(&arm.body, &mut body),
            };
            self.scopes.pop();
            if lowered.is_err() {
                continue;
            }
            if catch_all.is_some() {
                default = Some(body);
            } else {
                values.retain(|v| seen.insert(*v));
                if !values.is_empty() {
                    cases.push((values, body));
                }
            }
        }
        let Some(default) = default else {
            return self.err(
                mt.match_token.span(),
                "this `match` needs a catch-all arm, since its arms do not cover every integer: add `_ => {}` (or `_ => value` for a `match` that gives one) as the last arm",
            );
        };
        out.push(Stmt::Switch {
            selector,
            cases,
            default,
        });
        Ok(())
    }

    /// The values of a literal or range pattern, with the scrutinee's type constrained to
    /// hold them.
    pub(super) fn pattern_values(&mut self, p: &syn::Pat, tv: usize) -> R<Vec<i64>> {
        const MAX_RANGE: i64 = 256;
        let int = |e: &syn::Expr| -> Option<i64> {
            match e {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse::<i64>().ok(),
                _ => None,
            }
        };
        let values: Vec<i64> = match p {
            syn::Pat::Lit(l) => match int(&syn::Expr::Lit(l.clone())) {
                Some(v) => vec![v],
                None => return self.err_spanned(p, "`match` arms are integer literals (`3`), ranges of them (`4..=7`), `|` between them, or `_`"),
            },
            syn::Pat::Range(r) => {
                let (Some(a), Some(b)) = (r.start.as_deref().and_then(int), r.end.as_deref().and_then(int)) else {
                    return self.err_spanned(p, "a range arm needs two integer literals as bounds, such as `4..=7`");
                };
                let b = match r.limits {
                    syn::RangeLimits::Closed(_) => b,
                    syn::RangeLimits::HalfOpen(_) => b - 1,
                };
                if b < a {
                    return self.err_spanned(p, "this range arm matches no value; its start must not be above its end");
                }
                if b - a >= MAX_RANGE {
                    return self.err_spanned(p, format!("this range arm covers {} values, but a `match` becomes a WGSL `switch` whose cases name each value, up to {MAX_RANGE} an arm; test wide ranges with `if x >= a && x <= b`", b - a + 1));
                }
                (a..=b).collect()
            }
            syn::Pat::Paren(inner) => return self.pattern_values(&inner.pat, tv),
            other => return self.err_spanned(other, "`match` arms are integer literals (`3`), ranges of them (`4..=7`), `|` between them, or `_`"),
        };
        let (lo, hi) = (
            values[0].min(values[values.len() - 1]),
            values[0].max(values[values.len() - 1]),
        );
        if lo < i32::MIN as i64 || hi > u32::MAX as i64 {
            return self.err_spanned(p, "this pattern does not fit in 32 bits");
        }
        if lo < 0 {
            self.constrain_at(
                p.span(),
                tv,
                infer::S_I32,
                "a negative arm needs an `i32` value",
            );
        }
        if hi > i32::MAX as i64 {
            self.constrain_at(
                p.span(),
                tv,
                infer::S_U32,
                "an arm above `i32::MAX` needs a `u32` value",
            );
        }
        Ok(values)
    }

    /// The body of a `match` arm that is a statement: a block, or one expression.
    pub(super) fn arm_stmt(&mut self, body: &syn::Expr, out: &mut Block) -> R<()> {
        match body {
            syn::Expr::Block(b) if b.label.is_none() => {
                for s in &b.block.stmts {
                    self.stmt(s, out);
                }
                Ok(())
            }
            syn::Expr::Tuple(t) if t.elems.is_empty() => Ok(()),
            other => self.expr_stmt(other, out),
        }
    }

    /// The body of a `match` arm that gives the value of `target`.
    pub(super) fn arm_value(
        &mut self,
        body: &syn::Expr,
        target: LocalId,
        out: &mut Block,
    ) -> R<()> {
        match body {
            syn::Expr::Block(b) if b.label.is_none() => {
                let inner = self.block_into(&b.block, target)?;
                out.extend(inner);
                Ok(())
            }
            other => self.value_into(other, target, out),
        }
    }

    /// The right-hand side of an assignment. An `if` value (`y[i] = if c { a } else { b }`,
    /// `acc += if ..`) is computed first into a fresh local, as Rust evaluates the value
    /// before the place; the assignment then reads that local.
    pub(super) fn value_or_if(&mut self, e: &syn::Expr, out: &mut Block) -> R<Expr> {
        let mut inner = e;
        while let syn::Expr::Paren(p) = inner {
            inner = &p.expr;
        }
        if !matches!(inner, syn::Expr::If(_) | syn::Expr::Match(_)) {
            return self.expr(e);
        }
        let span = e.span();
        let tv = self.inf.fresh();
        let id = self.declare("fg_if", true, false, span, tv);
        // A hidden local: no user name resolves to it, and messages call it what it is.
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_if");
        }
        self.locals[id].name = "if value".to_string();
        self.locals[id].hidden = Some("fg_if");
        self.locals[id].assigned = true;
        out.push(Stmt::Let {
            local: id,
            init: None,
        });
        self.value_into(inner, id, out)?;
        let mut value = self.expr_of(ExprKind::Local(id), tv, span);
        value.end = last_span(e);
        Ok(value)
    }

    pub(super) fn block_into(&mut self, b: &syn::Block, target: LocalId) -> R<Block> {
        self.scopes.push(Scope::default());
        let mut out = Vec::new();
        let n = b.stmts.len();
        let mut result = Ok(());
        for (i, s) in b.stmts.iter().enumerate() {
            match s {
                syn::Stmt::Expr(e, None) if i + 1 == n => {
                    result = self.value_into(e, target, &mut out);
                }
                _ => self.stmt(s, &mut out),
            }
        }
        if !matches!(b.stmts.last(), Some(syn::Stmt::Expr(_, None))) {
            self.cx.error(
                b.span(),
                "this branch must end with the value it gives, without a `;`",
            );
        }
        self.scopes.pop();
        result.map(|_| out)
    }

    pub(super) fn mark_assigned(&mut self, id: LocalId, span: Span) {
        let l = &mut self.locals[id];
        l.assigned = true;
        if !l.mutable {
            let name = l.name.clone();
            self.cx.error(span, format!("cannot assign twice to immutable variable `{name}`; declare it with `let mut {name}`"));
        }
    }

    /// An assignable place and its type variable.
    pub(super) fn place(&mut self, e: &syn::Expr) -> R<(Place, usize)> {
        match e {
            syn::Expr::Field(f) => {
                let syn::Member::Named(id) = &f.member else {
                    return self.err(f.member.span(), "tuple fields are not supported");
                };
                let (base, btv) = self.place(&f.base)?;
                if let Some((s, n)) = self.inf.vector(btv) {
                    let c = match id.to_string().as_str() {
                        "x" => 0,
                        "y" => 1,
                        "z" => 2,
                        "w" => 3,
                        _ => 4,
                    };
                    if c >= n {
                        return self.err(id.span(), format!("a `vec{n}` has no component `{id}`"));
                    }
                    let tv = self.inf.of_scalar(s);
                    return Ok((Place::Component(Box::new(base), c), tv));
                }
                let Some(st) = self.inf.strukt(btv) else {
                    return self.err_spanned(
                        e,
                        "only the fields of a `#[forge_struct]` and the components of a vector can be assigned",
                    );
                };
                let def = &self.structs[st];
                let Some(i) = def.field(&id.to_string()) else {
                    let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
                    return self.err(id.span(), format!("`{}` has no field `{id}`; its fields are {}", def.name, method_list(names.into_iter())));
                };
                let ty = def.fields[i].ty.clone();
                let tv = self.ty_var(&ty);
                Ok((Place::Field(Box::new(base), i), tv))
            }
            syn::Expr::Path(p) => {
                let name = path_name_p(&p.path).unwrap_or_default();
                if let Some(id) = self.lookup(&name) {
                    self.mark_assigned(id, p.span());
                    return Ok((Place::Local(id), self.local_tv[id]));
                }
                if self.bindings.iter().any(|b| b.name == name) {
                    return self.err(p.span(), format!("a binding is written element by element; write `{name}[i] = ...`"));
                }
                if self.scalars.iter().any(|s| s.name == name) {
                    return self.err(
                        p.span(),
                        format!("cannot assign to scalar parameter `{name}`; copy it first with `let mut {name} = {name};`"),
                    );
                }
                self.err(p.span(), format!("cannot find value `{name}` in this kernel"))
            }
            syn::Expr::Index(ix) => {
                // Collect the index chain down to its root.
                let mut chain = vec![&*ix.index];
                let mut root = &*ix.expr;
                while let syn::Expr::Index(inner) = root {
                    chain.push(&*inner.index);
                    root = &*inner.expr;
                }
                chain.reverse();
                let name = match root {
                    syn::Expr::Path(p) => path_name_p(&p.path).unwrap_or_default(),
                    syn::Expr::Field(_) => {
                        // An array field: `p.hits[0] = ..`.
                        let (base, btv) = self.place(&ix.expr)?;
                        let Some(elem) = self.inf.array_elem(btv) else {
                            return self.err(ix.expr.span(), "this value is not an array and cannot be indexed");
                        };
                        let i = self.index_expr(&ix.index)?;
                        return Ok((Place::Index(Box::new(base), i), elem));
                    }
                    other => return self.err(other.span(), "only bindings, local arrays and arrays in struct fields can be indexed"),
                };
                // A local shadows a binding of the same name, as in Rust.
                let binding = match self.lookup(&name) {
                    Some(_) => None,
                    None => self.bindings.iter().position(|b| b.name == name),
                };
                if let Some(b) = binding {
                    if chain.len() != 1 {
                        return self.err(e.span(), "bindings are one-dimensional; compute a flat index");
                    }
                    let idx = self.index_expr(chain[0])?;
                    let binding = &self.bindings[b];
                    if binding.atomic {
                        return self.err(
                            e.span(),
                            format!("`{name}` is atomic; write it with `{name}[i].store(v)` or `{name}[i].fetch_add(v)`"),
                        );
                    }
                    let tv = self.ty_var(&binding.elem_ty());
                    return Ok((Place::Binding(b, idx), tv));
                }
                let Some(id) = self.lookup(&name) else {
                    return self.err(root.span(), format!("cannot find value `{name}` in this kernel"));
                };
                if !self.locals[id].mutable {
                    let n = self.locals[id].name.clone();
                    let msg = if self.locals[id].by_ref.is_some() {
                        format!("cannot assign to an element of `{n}`, which is behind a `&` reference; take it as `{n}: &mut [..]`")
                    } else {
                        format!("cannot assign to an element of immutable array `{n}`; declare it with `let mut {n}`")
                    };
                    self.cx.error(root.span(), msg);
                }
                self.locals[id].assigned = true;
                let mut tv = self.local_tv[id];
                let mut idxs = Vec::new();
                for i in chain {
                    let Some(elem) = self.element_of(tv) else {
                        return self.err(i.span(), "this value is not an array or a vector and cannot be indexed");
                    };
                    idxs.push(self.index_expr(i)?);
                    tv = elem;
                }
                Ok((Place::LocalIndex(id, idxs), tv))
            }
            syn::Expr::Paren(p) => self.place(&p.expr),
            other => self.err(other.span(), "cannot assign to this expression; assign to a local, a local array element or a binding element"),
        }
    }

    pub(super) fn index_expr(&mut self, e: &syn::Expr) -> R<Expr> {
        let i = self.expr(e)?;
        self.constrain_at(i.span, i.tv, infer::S_INT, "indices are `u32` or `i32`");
        Ok(i)
    }
}

/// The identifiers a pattern binds, for declaring them after an error.
pub(super) fn pattern_names<'p>(p: &'p syn::Pat, out: &mut Vec<&'p syn::Ident>) {
    match p {
        syn::Pat::Ident(pi) => {
            out.push(&pi.ident);
            if let Some((_, sub)) = &pi.subpat {
                pattern_names(sub, out);
            }
        }
        syn::Pat::Type(pt) => pattern_names(&pt.pat, out),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|e| pattern_names(e, out)),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| pattern_names(&f.pat, out)),
        syn::Pat::Reference(r) => pattern_names(&r.pat, out),
        syn::Pat::Paren(p) => pattern_names(&p.pat, out),
        syn::Pat::Or(o) => {
            if let Some(first) = o.cases.first() {
                pattern_names(first, out)
            }
        }
        _ => {}
    }
}

/// The attributes of an expression statement other than a `for` loop (whose attributes
/// are its own business).
pub(super) fn stmt_attrs(e: &syn::Expr) -> &[syn::Attribute] {
    match e {
        syn::Expr::While(x) => &x.attrs,
        syn::Expr::Loop(x) => &x.attrs,
        syn::Expr::If(x) => &x.attrs,
        syn::Expr::Block(x) => &x.attrs,
        syn::Expr::Assign(x) => &x.attrs,
        syn::Expr::Binary(x) => &x.attrs,
        syn::Expr::Call(x) => &x.attrs,
        syn::Expr::MethodCall(x) => &x.attrs,
        _ => &[],
    }
}

pub(super) fn compound_op(op: &syn::BinOp) -> Option<BinOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinOp::Add,
        syn::BinOp::SubAssign(_) => BinOp::Sub,
        syn::BinOp::MulAssign(_) => BinOp::Mul,
        syn::BinOp::DivAssign(_) => BinOp::Div,
        syn::BinOp::RemAssign(_) => BinOp::Rem,
        syn::BinOp::BitAndAssign(_) => BinOp::BitAnd,
        syn::BinOp::BitOrAssign(_) => BinOp::BitOr,
        syn::BinOp::BitXorAssign(_) => BinOp::BitXor,
        syn::BinOp::ShlAssign(_) => BinOp::Shl,
        syn::BinOp::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}
