//! Unroll, a stage (layer 3): the checked model made concrete for one schedule, as the WGSL emitter
//! writes it.
//! - `#[unroll] for i in A..B` becomes B - A copies of its body, `i` a literal in each. An
//!   immutable local computed from such literals (and from consts, `WG`, `ITEMS`, `VEC` and
//!   knobs) is a literal too, so nested bounds such as `0..half` are constant.
//! - A local array whose every index is then constant, and that is never used whole, is a
//!   register array: it becomes one local per element (`acc_0`, `acc_1`, ..), which drivers
//!   keep in registers, where an indexed `var` array may live in memory.
//!
//! The oracle runs the rolled loops: unrolling changes no result, only the shape of the
//! WGSL. A bound that is not constant is an error at the bound, reported here, where the
//! constants are known.

use crate::consts::{self, Const};
use crate::ctxt::Ctxt;
use crate::model::*;
use proc_macro2::Span;
use std::collections::HashSet;

/// The most copies one `#[unroll]` loop makes.
pub const MAX_UNROLL: u64 = 1024;

/// Unrolls a kernel for schedule `s`. `reported` keeps the errors already given for other
/// schedules, so that each shows once.
pub fn expand(
    cx: &Ctxt,
    k: &Kernel<'_>,
    s: &SchedPoint,
    reported: &mut HashSet<String>,
) -> Expanded {
    let mut sched_dependent = false;
    let mut func = |locals: &[Local], body: &Block| {
        let mut u = Unroller {
            cx,
            k,
            s,
            locals: locals.to_vec(),
            vals: vec![None; locals.len()],
            sched_dependent: false,
            reported: &mut *reported,
        };
        let body = u.fold_block(body.clone());
        let body = u.registers(body);
        sched_dependent |= u.sched_dependent;
        Func {
            locals: u.locals,
            body,
        }
    };
    let main = func(&k.locals, &k.body);
    let helpers = k
        .used_helpers()
        .into_iter()
        .map(|h| (h, func(&k.helpers[h].locals, &k.helpers[h].body)))
        .collect();
    Expanded {
        main,
        helpers,
        sched_dependent,
    }
}

/// The kernel as written, loops rolled: the WGSL of schedules outside the tuning space.
pub fn rolled(k: &Kernel<'_>) -> Expanded {
    let func = |locals: &[Local], body: &Block| Func {
        locals: locals.to_vec(),
        body: body.clone(),
    };
    Expanded {
        main: func(&k.locals, &k.body),
        helpers: k
            .used_helpers()
            .into_iter()
            .map(|h| (h, func(&k.helpers[h].locals, &k.helpers[h].body)))
            .collect(),
        sched_dependent: false,
    }
}

/// A constant value, tagged with whether it comes from an unrolled loop's variable, so
/// that the emitted code writes it as a literal.
type Val = consts::Value<bool>;

struct Unroller<'a, 'k> {
    cx: &'a Ctxt,
    k: &'a Kernel<'k>,
    s: &'a SchedPoint,
    locals: Vec<Local>,
    /// The value of each immutable local known to be constant here.
    vals: Vec<Option<Val>>,
    sched_dependent: bool,
    reported: &'a mut HashSet<String>,
}

fn literal(c: Const, ty: &Ty, span: Span) -> Expr {
    let kind = match c {
        Const::U(v) => ExprKind::IntLit(v as i64),
        Const::I(v) => ExprKind::IntLit(v as i64),
        Const::B(b) => ExprKind::BoolLit(b),
        Const::F(v) => ExprKind::FloatLit(v.into()),
    };
    Expr {
        kind,
        ty: ty.clone(),
        span,
        end: span,
        tv: 0,
    }
}

impl Unroller<'_, '_> {
    fn error(&mut self, span: Span, end: Span, msg: String) {
        if self.reported.insert(format!("{span:?}{msg}")) {
            self.cx.error_range(span, end, msg);
        }
    }

    /// The value of a constant expression: literals, consts (already copied in), the
    /// schedule's constants and the known locals, with WGSL's integer arithmetic. `None`
    /// where it is not constant, or where an operation would be an error (`check` reports
    /// those).
    fn eval(&mut self, e: &Expr) -> Option<Val> {
        consts::eval(self, e)
    }

    /// `let x = if CONST { a } else { b };` was lowered as a declaration and an `if`: once
    /// the `if` is folded to `x = a`, it is `let x = a;` again (a literal `a` is written
    /// where `x` is used). Says whether it was such a `let`.
    fn bind_folded_value(&mut self, branch: &Block, out: &mut Block) -> bool {
        let (
            [Stmt::Assign {
                place: Place::Local(id),
                op: None,
                value,
                ..
            }],
            Some(Stmt::Let { local, init: None }),
        ) = (branch.as_slice(), out.last())
        else {
            return false;
        };
        if id != local || self.locals[*id].mutable {
            return false;
        }
        let (id, value) = (*id, value.clone());
        out.pop();
        if matches!(value.kind, ExprKind::IntLit(_) | ExprKind::BoolLit(_)) {
            if let Some(v) = self.eval(&value) {
                self.vals[id] = Some(Val { tag: true, ..v });
                return true;
            }
        }
        out.push(Stmt::Let {
            local: id,
            init: Some(value),
        });
        true
    }

    /// The value of a condition that is constant for this schedule; `None` (and the
    /// schedule-dependence unchanged) where it is not.
    fn constant_bool(&mut self, cond: &Expr) -> Option<bool> {
        let before = self.sched_dependent;
        match self.eval(cond) {
            Some(Val { c: Const::B(b), .. }) => Some(b),
            _ => {
                self.sched_dependent = before;
                None
            }
        }
    }

    /// The first part of a bound that is not constant, as a noun phrase.
    fn culprit(&self, e: &Expr) -> String {
        let mut found = None;
        walk_expr(e, &mut |x| {
            if found.is_some() {
                return;
            }
            found = match &x.kind {
                ExprKind::Scalar(i) => Some(format!(
                    "`{}`, a scalar parameter known only at run time",
                    self.k.scalars[*i].name
                )),
                ExprKind::Local(id) if self.vals[*id].is_none() => {
                    let l = &self.locals[*id];
                    Some(if l.mutable {
                        format!("`{}`, a mutable local", l.name)
                    } else {
                        format!("`{}`, a local computed at run time", l.name)
                    })
                }
                ExprKind::LoadBinding(b, _) => {
                    Some(format!("the binding `{}`", self.k.bindings[*b].name))
                }
                ExprKind::Builtin(_) | ExprKind::BuiltinComponent(..) => {
                    Some("a builtin, which differs between invocations".to_string())
                }
                ExprKind::FloatLit(_) => Some("a float".to_string()),
                _ => None,
            };
        });
        found.unwrap_or_else(|| "a value known only at run time".to_string())
    }
}

/// The unroller's constants: the schedule's values, and the immutable locals known so far;
/// floats stay in the code as written.
impl consts::Env for Unroller<'_, '_> {
    /// Whether the value comes from an unrolled loop's variable.
    type Tag = bool;

    fn literal_tag(&self) -> bool {
        false
    }

    fn join(&self, a: bool, b: bool) -> bool {
        a || b
    }

    fn folds(&self, c: &Const) -> bool {
        !matches!(c, Const::F(_))
    }

    fn local(&mut self, id: LocalId) -> Option<Val> {
        self.vals[id]
    }

    fn sched(&mut self, c: SchedConst) -> Option<Val> {
        self.sched_dependent = true;
        Some(Val {
            c: Const::U(self.s.get(c)),
            tag: false,
        })
    }
}

/// The statements that unrolling changes; every other one is copied with its expressions
/// folded (`Unroller::expr`).
impl Fold for Unroller<'_, '_> {
    fn fold_stmt(&mut self, s: Stmt, out: &mut Block) {
        match s {
            Stmt::For(f) if f.unroll => self.unroll(f, out),
            Stmt::Let {
                local,
                init: Some(e),
            } => {
                let l = &self.locals[local];
                if !l.mutable && !l.shared {
                    if let Some(v) = self.eval(&e) {
                        self.vals[local] = Some(v);
                        // A value from an unrolled variable is written as a literal where
                        // it is used; the `let` goes.
                        if v.tag {
                            return;
                        }
                    }
                }
                let init = self.expr(e).0;
                out.push(Stmt::Let {
                    local,
                    init: Some(init),
                });
            }
            Stmt::If { cond, then, els } => {
                let (cond, folded) = self.expr(cond);
                // A condition on an unrolled value (`if r == 0`) or on the schedule's
                // constants (`if VEC == 2`, `if wide` with `let wide = ITEMS >= 4`) picks
                // its branch here, so that the WGSL holds only the schedule's code.
                let constant = match (folded, &cond.kind) {
                    (true, ExprKind::BoolLit(b)) => Some(*b),
                    _ => self.constant_bool(&cond),
                };
                if let Some(b) = constant {
                    let taken = if b { Some(then) } else { els };
                    if let Some(branch) = taken {
                        let branch = self.fold_block(branch);
                        if self.bind_folded_value(&branch, out) {
                            return;
                        }
                        scoped(branch, out);
                    }
                    return;
                }
                let then = self.fold_block(then);
                let els = els.map(|e| self.fold_block(e));
                out.push(Stmt::If { cond, then, els });
            }
            Stmt::Switch {
                selector,
                mut cases,
                default,
            } => {
                let (selector, folded) = self.expr(selector);
                // A `match` on an unrolled value picks its arm here.
                if let (true, ExprKind::IntLit(v)) = (folded, &selector.kind) {
                    let arm = match cases.iter().position(|(vals, _)| vals.contains(v)) {
                        Some(i) => cases.swap_remove(i).1,
                        None => default,
                    };
                    let arm = self.fold_block(arm);
                    scoped(arm, out);
                    return;
                }
                let cases = cases
                    .into_iter()
                    .map(|(v, b)| (v, self.fold_block(b)))
                    .collect();
                let default = self.fold_block(default);
                out.push(Stmt::Switch {
                    selector,
                    cases,
                    default,
                });
            }
            s => {
                let s = fold_stmt_children(self, s, out);
                out.push(s)
            }
        }
    }

    fn fold_expr(&mut self, e: Expr, _: &mut Block) -> Expr {
        self.expr(e).0
    }
}

/// Statements that take the place of one (an unrolled copy, a branch picked): in a block
/// of their own if they declare names, which they keep to themselves.
fn scoped(stmts: Block, out: &mut Block) {
    if stmts.iter().any(|s| matches!(s, Stmt::Let { .. })) {
        out.push(Stmt::Block(stmts));
    } else {
        out.extend(stmts);
    }
}

impl Unroller<'_, '_> {
    /// `#[unroll] for var in start..end`: one copy of the body per value.
    fn unroll(&mut self, f: ForLoop, out: &mut Block) {
        let ForLoop {
            var,
            start,
            end,
            inclusive,
            body,
            ..
        } = f;
        let bound = |u: &mut Self, e: &Expr| -> Option<i64> {
            match u.eval(e).map(|v| v.c) {
                Some(Const::U(x)) => Some(x as i64),
                Some(Const::I(x)) => Some(x as i64),
                _ => {
                    let why = u.culprit(e);
                    u.error(
                        e.span,
                        e.end,
                        format!("the bounds of an `#[unroll]` loop must be constant, but this one depends on {why}; build it from literals, consts, `WG`, `ITEMS`, `VEC` and knobs, or drop `#[unroll]` to loop at run time"),
                    );
                    None
                }
            }
        };
        let (a, b) = (bound(self, &start), bound(self, &end));
        let (Some(a), Some(b)) = (a, b) else {
            return;
        };
        let last = if inclusive { b } else { b - 1 };
        let count = (last - a + 1).max(0) as u64;
        if count > MAX_UNROLL {
            let when = format!(" with {}", self.s.describe(&self.k.options.knobs));
            self.error(
                start.span,
                end.end,
                format!("this `#[unroll]` loop would make {count} copies of its body{when}, more than the {MAX_UNROLL} it allows; unroll an inner loop of fewer iterations, or drop `#[unroll]`"),
            );
            return;
        }
        let signed = self.locals[var].ty == Ty::I32;
        for v in a..=last {
            let c = if signed {
                Const::I(v as i32)
            } else {
                Const::U(v as u32)
            };
            self.vals[var] = Some(Val { c, tag: true });
            let copy = self.fold_block(body.clone());
            scoped(copy, out);
        }
        self.vals[var] = None;
    }

    /// A copy of an expression with the unrolled values written as literals, and the
    /// integer operations on them folded. Also says whether it is such a literal.
    fn expr(&mut self, e: Expr) -> (Expr, bool) {
        if let ExprKind::Local(id) = e.kind {
            if let Some(v) = self.vals[id].filter(|v| v.tag) {
                return (literal(v.c, &e.ty, e.span), true);
            }
        }
        let mut out = e;
        let mut folded = false;
        out.each_child_mut(|x| {
            let (y, f) = self.expr(x.take());
            *x = y;
            folded |= f;
        });
        // An integer operation on a literal from an unrolled loop is folded, so that
        // `acc[k + half]` indexes with one literal.
        if folded
            && matches!(
                out.kind,
                ExprKind::Unary(..) | ExprKind::Binary(..) | ExprKind::Cast(_)
            )
        {
            if let Some(v) = self.eval(&out) {
                return (literal(v.c, &out.ty, out.span), true);
            }
        }
        // A vector's component at a constant index is a swizzle: `av.w`, not `av[3]`.
        if let ExprKind::LoadArray(base, idx) = &out.kind {
            if let (Ty::Vector(_, n), ExprKind::IntLit(c)) = (&base.ty, &idx.kind) {
                if (0..*n as i64).contains(c) {
                    let base = base.clone();
                    return (
                        Expr {
                            kind: ExprKind::Swizzle(base, vec![*c as u8]),
                            ..out
                        },
                        false,
                    );
                }
            }
        }
        if folded {
            // `x * 0` or `true || x` may leave a literal, which the caller folds further.
            let out = simplify(out);
            let literal = matches!(out.kind, ExprKind::IntLit(_) | ExprKind::BoolLit(_));
            return (out, literal);
        }
        (out, false)
    }

    // ---- register arrays ---------------------------------------------------------

    /// The length of an array type for this schedule.
    fn len(&self, t: &Ty) -> Option<u32> {
        match t {
            Ty::Array(_, ConstLen::Lit(n)) => Some(*n),
            Ty::Array(_, ConstLen::Sched(c)) => c.eval(self.s),
            _ => None,
        }
    }

    /// A constant index into an array of length `len`.
    fn index(&mut self, idx: &Expr, len: u32) -> Option<u32> {
        match self.eval(idx)?.c {
            Const::U(i) if i < len => Some(i),
            Const::I(i) if i >= 0 && (i as u32) < len => Some(i as u32),
            _ => None,
        }
    }

    /// Makes each register array one local per element.
    fn registers(&mut self, body: Block) -> Block {
        // Candidates: local arrays of scalars, vectors or cooperative matrices.
        let mut ok: Vec<bool> = self
            .locals
            .iter()
            .map(|l| {
                !l.shared
                    && l.by_ref.is_none()
                    && matches!(&l.ty, Ty::Array(e, _) if matches!(**e, Ty::Scalar(_) | Ty::Vector(..) | Ty::Coop(..)))
            })
            .collect();
        let lens: Vec<u32> = self
            .locals
            .iter()
            .map(|l| self.len(&l.ty).unwrap_or(0))
            .collect();
        for (i, l) in lens.iter().enumerate() {
            if *l == 0 {
                ok[i] = false;
            }
        }
        // Every use must be an element at a constant index, or the `let` itself.
        let mut uses = Uses {
            u: self,
            ok: &mut ok,
            lens: &lens,
        };
        uses.visit_block(&body);
        if !ok.iter().any(|x| *x) {
            return body;
        }
        // One local per element.
        let mut elems: Vec<Vec<LocalId>> = vec![Vec::new(); self.locals.len()];
        for id in 0..ok.len() {
            if !ok[id] {
                continue;
            }
            let l = self.locals[id].clone();
            let Ty::Array(e, _) = &l.ty else { continue };
            for i in 0..lens[id] {
                self.locals.push(Local {
                    name: format!("{}_{i}", l.name),
                    ty: (**e).clone(),
                    hidden: None,
                    by_ref: None,
                    ..l.clone()
                });
                self.vals.push(None);
                elems[id].push(self.locals.len() - 1);
            }
        }
        let mut r = Registers { u: self, elems };
        r.fold_block(body)
    }
}

/// What an unrolled literal makes of an operation that could not be folded: `x + 0` and
/// `x * 1` are `x`, and an integer below 2^24 cast to a float is that float.
fn simplify(e: Expr) -> Expr {
    let int = |x: &Expr, v: i64| {
        matches!(x.kind, ExprKind::IntLit(y) if y == v) && x.ty.scalar().is_some_and(Scalar::is_int)
    };
    // `(x + 4) + 1` is `x + 5`: integer addition wraps, so it reassociates exactly.
    if let ExprKind::Binary(BinOp::Add, a, b) = &e.kind {
        if let (ExprKind::Binary(BinOp::Add, x, c1), ExprKind::IntLit(c2)) = (&a.kind, &b.kind) {
            if let ExprKind::IntLit(c1) = c1.kind {
                let sum = match e.ty {
                    Ty::Scalar(Scalar::U32) => Some((c1 as u32).wrapping_add(*c2 as u32) as i64),
                    Ty::Scalar(Scalar::I32) => Some((c1 as i32).wrapping_add(*c2 as i32) as i64),
                    _ => None,
                };
                if let Some(sum) = sum {
                    let lit = Expr {
                        kind: ExprKind::IntLit(sum),
                        ..(**b).clone()
                    };
                    return Expr {
                        kind: ExprKind::Binary(BinOp::Add, x.clone(), Box::new(lit)),
                        ..e
                    };
                }
            }
        }
    }
    let boolean = |x: &Expr| match x.kind {
        ExprKind::BoolLit(b) => Some(b),
        _ => None,
    };
    match e.kind {
        // Integer products with 0 are 0 (they wrap, so no overflow is lost), and `&&`/`||`
        // with a constant side reduce as they would short-circuit (the other side is free
        // of effects: helper calls run before the statement).
        ExprKind::Binary(BinOp::Mul, _, b) if int(&b, 0) => *b,
        ExprKind::Binary(BinOp::Mul, a, _) if int(&a, 0) => *a,
        ExprKind::Binary(BinOp::And, a, b) => match (boolean(&a), boolean(&b)) {
            (Some(true), _) => *b,
            (_, Some(true)) => *a,
            (Some(false), _) => *a,
            (_, Some(false)) => *b,
            _ => Expr {
                kind: ExprKind::Binary(BinOp::And, a, b),
                ..e
            },
        },
        ExprKind::Binary(BinOp::Or, a, b) => match (boolean(&a), boolean(&b)) {
            (Some(false), _) => *b,
            (_, Some(false)) => *a,
            (Some(true), _) => *a,
            (_, Some(true)) => *b,
            _ => Expr {
                kind: ExprKind::Binary(BinOp::Or, a, b),
                ..e
            },
        },
        ExprKind::Binary(BinOp::Shl | BinOp::Shr, a, b) if int(&b, 0) => *a,
        ExprKind::Binary(BinOp::Shl | BinOp::Shr, a, _) if int(&a, 0) => *a,
        ExprKind::Binary(BinOp::Add, a, b) if int(&b, 0) => *a,
        ExprKind::Binary(BinOp::Add, a, b) if int(&a, 0) => *b,
        ExprKind::Binary(BinOp::Sub, a, b) if int(&b, 0) => *a,
        ExprKind::Binary(BinOp::Mul, a, b) if int(&b, 1) => *a,
        ExprKind::Binary(BinOp::Mul, a, b) if int(&a, 1) => *b,
        ExprKind::Cast(a) if e.ty.scalar().is_some_and(Scalar::is_float) => match a.kind {
            ExprKind::IntLit(v) if v.abs() < 1 << 24 => Expr {
                kind: ExprKind::FloatLit(v as f64),
                ..e
            },
            kind => Expr {
                kind: ExprKind::Cast(Box::new(Expr { kind, ..*a })),
                ..e
            },
        },
        kind => Expr { kind, ..e },
    }
}

/// Finds the local arrays used otherwise than element by element at constant indices.
struct Uses<'u, 'a, 'k> {
    u: &'u mut Unroller<'a, 'k>,
    ok: &'u mut Vec<bool>,
    lens: &'u [u32],
}

impl<'b> Visit<'b> for Uses<'_, '_, '_> {
    fn visit_stmt(&mut self, s: &'b Stmt) {
        match s {
            Stmt::Let { local, init } => match init.as_ref().map(|e| &e.kind) {
                None => {}
                Some(ExprKind::ArrayRepeat(v)) => self.visit_expr(v),
                Some(ExprKind::ArrayList(items)) => items.iter().for_each(|i| self.visit_expr(i)),
                Some(_) => {
                    self.ok[*local] = false;
                    walk_stmt(self, s);
                }
            },
            Stmt::Assign { place, .. } => {
                match place.root() {
                    // A whole local (`a = b`, or a field of a struct local).
                    Place::Local(id) => self.ok[*id] = false,
                    Place::LocalIndex(id, idx) => {
                        let constant =
                            idx.len() == 1 && self.u.index(&idx[0], self.lens[*id]).is_some();
                        if !constant {
                            self.ok[*id] = false;
                        }
                    }
                    _ => {}
                }
                walk_stmt(self, s);
            }
            s => walk_stmt(self, s),
        }
    }

    fn visit_expr(&mut self, e: &'b Expr) {
        match &e.kind {
            ExprKind::LoadArray(base, idx) => {
                if let ExprKind::Local(id) = base.kind {
                    if self.u.index(idx, self.lens[id]).is_none() {
                        self.ok[id] = false;
                    }
                } else {
                    self.visit_expr(base);
                }
                self.visit_expr(idx);
            }
            ExprKind::Local(id) => self.ok[*id] = false,
            _ => e.each_child(|a| self.visit_expr(a)),
        }
    }
}

/// Rewrites the register arrays' uses into their elements.
struct Registers<'u, 'a, 'k> {
    u: &'u mut Unroller<'a, 'k>,
    /// For each register array, its elements' locals (empty for other locals).
    elems: Vec<Vec<LocalId>>,
}

impl Registers<'_, '_, '_> {
    fn element(&mut self, id: LocalId, idx: &Expr) -> Option<LocalId> {
        let elems = self.elems.get(id).filter(|e| !e.is_empty())?.clone();
        let i = self.u.index(idx, elems.len() as u32)?;
        Some(elems[i as usize])
    }
}

impl Fold for Registers<'_, '_, '_> {
    fn fold_stmt(&mut self, s: Stmt, out: &mut Block) {
        match s {
            Stmt::Let { local, init } if !self.elems[local].is_empty() => {
                let elems = self.elems[local].clone();
                match init.map(|e| e.kind) {
                    None => out.extend(elems.iter().map(|e| Stmt::Let {
                        local: *e,
                        init: None,
                    })),
                    Some(ExprKind::ArrayList(items)) => {
                        for (e, v) in elems.iter().zip(items) {
                            let v = self.fold_expr(v, out);
                            out.push(Stmt::Let {
                                local: *e,
                                init: Some(v),
                            });
                        }
                    }
                    Some(ExprKind::ArrayRepeat(v)) => {
                        let v = self.fold_expr(*v, out);
                        // `[v; N]` evaluates `v` once; a literal can be written N times.
                        let simple = matches!(
                            &v.kind,
                            ExprKind::IntLit(_)
                                | ExprKind::FloatLit(_)
                                | ExprKind::BoolLit(_)
                                | ExprKind::Local(_)
                        ) || matches!(&v.kind, ExprKind::VecNew(a) if a.iter().all(|x| matches!(x.kind, ExprKind::IntLit(_) | ExprKind::FloatLit(_) | ExprKind::BoolLit(_))));
                        let value = if simple {
                            v
                        } else {
                            let fill = self.u.locals.len();
                            self.u.locals.push(Local {
                                name: "the value of an array repeat".into(),
                                ty: v.ty.clone(),
                                mutable: false,
                                shared: false,
                                span: v.span,
                                hidden: Some("fg_fill"),
                                by_ref: None,
                                assigned: false,
                                atomic: false,
                            });
                            self.u.vals.push(None);
                            let (ty, span) = (v.ty.clone(), v.span);
                            out.push(Stmt::Let {
                                local: fill,
                                init: Some(v),
                            });
                            literal_local(fill, ty, span)
                        };
                        for e in elems {
                            out.push(Stmt::Let {
                                local: e,
                                init: Some(value.clone()),
                            });
                        }
                    }
                    Some(_) => {}
                }
            }
            s => {
                let s = fold_stmt_children(self, s, out);
                out.push(s)
            }
        }
    }

    /// A place, with a register array's element as its local.
    fn fold_place(&mut self, p: Place, out: &mut Block) -> Place {
        match p {
            Place::LocalIndex(id, idx) if idx.len() == 1 => match self.element(id, &idx[0]) {
                Some(e) => Place::Local(e),
                None => fold_place_children(self, Place::LocalIndex(id, idx), out),
            },
            p => fold_place_children(self, p, out),
        }
    }

    /// An expression, with a register array's element read as its local.
    fn fold_expr(&mut self, e: Expr, out: &mut Block) -> Expr {
        if let ExprKind::LoadArray(base, idx) = &e.kind {
            if let ExprKind::Local(id) = base.kind {
                if let Some(el) = self.element(id, idx) {
                    return literal_local(el, e.ty, e.span);
                }
            }
        }
        fold_expr_children(self, e, out)
    }
}

/// A read of a local.
fn literal_local(id: LocalId, ty: Ty, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Local(id),
        ty,
        span,
        end: span,
        tv: 0,
    }
}
