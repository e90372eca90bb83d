//! Walking the tree: the one list of every node's children, and the two ways a pass goes
//! over them, as naga's and syn's passes do: [`Visit`] reads a tree, [`Fold`] rebuilds it
//! (a statement may become several, or none). Each method's default walks the node's
//! children, so a pass overrides only the nodes it gives a meaning to, and a new kind of
//! node is added in the model (here: its children) and in those passes, nowhere else.
//!
//! The order is fixed: a statement's own expressions come before the blocks nested in it,
//! and an assignment's place (its indices, root first) before its value. A pass for which
//! Rust's order of evaluation matters (`inline`, which hoists calls out of a statement:
//! Rust evaluates `place = value`'s value first) says so where it overrides it.
//!
//! Part of `model` (layer 1).

use super::expr::{AtomicTarget, Expr, ExprKind};
use super::stmt::{Block, ForLoop, Place, Stmt};
use super::ty::LocalId;
use super::ty::Ty;

/// The one list of an expression's direct children, in evaluation order, for `&` and for
/// `&mut` (`$iter` is `iter` or `iter_mut`).
macro_rules! each_child {
    ($kind:expr, $f:ident, $iter:ident) => {
        match $kind {
            ExprKind::LoadBinding(_, a)
            | ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::ArrayRepeat(a)
            | ExprKind::Swizzle(a, _)
            | ExprKind::Field(a, _) => $f(a),
            ExprKind::LoadArray(a, b) | ExprKind::Binary(_, a, b) => {
                $f(a);
                $f(b)
            }
            ExprKind::Select(a, b, c) => {
                $f(a);
                $f(b);
                $f(c)
            }
            ExprKind::Math(_, args)
            | ExprKind::ArrayList(args)
            | ExprKind::VecNew(args)
            | ExprKind::StructNew(_, args)
            | ExprKind::Call(_, args)
            | ExprKind::Subgroup { args, .. }
            | ExprKind::Coop { args, .. } => args.$iter().for_each($f),
            ExprKind::Atomic { index, args, .. } => {
                $f(index);
                args.$iter().for_each($f)
            }
            ExprKind::IntLit(_)
            | ExprKind::FloatLit(_)
            | ExprKind::BoolLit(_)
            | ExprKind::Local(_)
            | ExprKind::Scalar(_)
            | ExprKind::Sched(_)
            | ExprKind::Builtin(_)
            | ExprKind::BuiltinComponent(..)
            | ExprKind::StructZero(_)
            | ExprKind::BindingRef(_) => {}
        }
    };
}

/// A statement's own expressions, in the order of the module docs, for `&` and `&mut`.
macro_rules! each_expr {
    ($s:expr, $f:ident, $iter:ident, $indices:ident) => {
        match $s {
            Stmt::Let { init: Some(e), .. } => $f(e),
            Stmt::Assign { place, value, .. } | Stmt::AsyncCopy { place, value, .. } => {
                place.$indices().into_iter().for_each(&mut $f);
                $f(value)
            }
            Stmt::If { cond, .. } | Stmt::While { cond, .. } => $f(cond),
            Stmt::Switch { selector, .. } => $f(selector),
            Stmt::CompareExchange {
                index,
                current,
                new,
                ..
            } => {
                $f(index);
                $f(current);
                $f(new)
            }
            Stmt::Eval { expr } => $f(expr),
            Stmt::Print { args, .. } => args.$iter().for_each($f),
            Stmt::ReturnValue { value } => $f(value),
            Stmt::For(ForLoop { start, end, .. }) => {
                $f(start);
                $f(end)
            }
            Stmt::Let { init: None, .. }
            | Stmt::Loop { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Return { .. }
            | Stmt::Barrier { .. }
            | Stmt::Block(_) => {}
        }
    };
}

/// The blocks nested in a statement, in order, for `&` and `&mut`.
macro_rules! each_block {
    ($s:expr, $f:ident, $iter:ident) => {
        match $s {
            Stmt::If { then, els, .. } => {
                $f(then);
                if let Some(e) = els {
                    $f(e)
                }
            }
            Stmt::For(ForLoop { body, .. })
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. }
            | Stmt::Block(body) => $f(body),
            Stmt::Switch { cases, default, .. } => {
                cases.$iter().for_each(|(_, b)| $f(b));
                $f(default)
            }
            Stmt::Let { .. }
            | Stmt::Assign { .. }
            | Stmt::AsyncCopy { .. }
            | Stmt::CompareExchange { .. }
            | Stmt::Eval { .. }
            | Stmt::Print { .. }
            | Stmt::ReturnValue { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Return { .. }
            | Stmt::Barrier { .. } => {}
        }
    };
}

impl Expr {
    /// Calls `f` on each direct sub-expression, in evaluation order.
    pub fn each_child<'b>(&'b self, mut f: impl FnMut(&'b Expr)) {
        each_child!(&self.kind, f, iter)
    }

    /// `each_child`, for a pass that rewrites the children in place.
    pub fn each_child_mut(&mut self, mut f: impl FnMut(&mut Expr)) {
        each_child!(&mut self.kind, f, iter_mut)
    }

    /// The expression, leaving a placeholder (`false`) in its place: for a pass that
    /// rebuilds an expression it holds by `&mut`.
    pub fn take(&mut self) -> Expr {
        let span = self.span;
        std::mem::replace(
            self,
            Expr {
                kind: ExprKind::BoolLit(false),
                ty: Ty::BOOL,
                span,
                end: span,
                tv: 0,
            },
        )
    }
}

impl Stmt {
    /// Calls `f` on the statement's own expressions (not those of the statements nested in
    /// it).
    pub fn each_expr<'b>(&'b self, mut f: impl FnMut(&'b Expr)) {
        each_expr!(self, f, iter, indices)
    }

    /// `each_expr`, for a pass that rewrites them in place.
    pub fn each_expr_mut(&mut self, mut f: impl FnMut(&mut Expr)) {
        each_expr!(self, f, iter_mut, indices_mut)
    }

    /// Calls `f` on each block nested in the statement.
    pub fn each_block<'b>(&'b self, mut f: impl FnMut(&'b Block)) {
        each_block!(self, f, iter)
    }

    /// `each_block`, for a pass that rewrites them in place.
    pub fn each_block_mut(&mut self, mut f: impl FnMut(&mut Block)) {
        each_block!(self, f, iter_mut)
    }

    /// Calls `local` on every local the statement itself names outside its expressions
    /// (the one a `let` or a `for` declares, the results of a compare-exchange, the root of
    /// an assigned place and an atomic target), and `loop_id` on every loop id it holds:
    /// for a pass that renumbers them.
    pub fn each_id_mut(
        &mut self,
        mut local: impl FnMut(&mut LocalId),
        mut loop_id: impl FnMut(&mut usize),
    ) {
        match self {
            Stmt::Let { local: id, .. } => local(id),
            Stmt::Assign { place, .. } | Stmt::AsyncCopy { place, .. } => {
                place.each_local_mut(&mut local)
            }
            Stmt::For(f) => {
                local(&mut f.var);
                loop_id(&mut f.id)
            }
            Stmt::While { id, .. } | Stmt::Loop { id, .. } => loop_id(id),
            Stmt::Break { target, .. } | Stmt::Continue { target, .. } => loop_id(target),
            Stmt::CompareExchange {
                old,
                exchanged,
                target,
                ..
            } => {
                local(old);
                local(exchanged);
                if let AtomicTarget::Shared(id) = target {
                    local(id)
                }
            }
            Stmt::If { .. }
            | Stmt::Switch { .. }
            | Stmt::Eval { .. }
            | Stmt::Print { .. }
            | Stmt::ReturnValue { .. }
            | Stmt::Return { .. }
            | Stmt::Barrier { .. }
            | Stmt::Block(_) => {}
        }
    }
}

impl Place {
    /// Calls `f` on the local at the root of the place, if it is a local's.
    pub fn each_local_mut(&mut self, f: &mut impl FnMut(&mut LocalId)) {
        match self {
            Place::Local(id) | Place::LocalIndex(id, _) => f(id),
            Place::Binding(..) => {}
            Place::Field(p, _) | Place::Component(p, _) | Place::Index(p, _) => p.each_local_mut(f),
        }
    }
}

impl ExprKind {
    /// The local an expression reads or works on directly, outside its sub-expressions: a
    /// read of a local, or the workgroup array of an atomic or cooperative operation.
    pub fn local_mut(&mut self) -> Option<&mut LocalId> {
        match self {
            ExprKind::Local(id)
            | ExprKind::Atomic {
                target: AtomicTarget::Shared(id),
                ..
            }
            | ExprKind::Coop {
                target: Some(AtomicTarget::Shared(id)),
                ..
            } => Some(id),
            _ => None,
        }
    }
}

/// A pass that reads a tree. The defaults visit every node, depth first, in the order of
/// the module docs.
pub trait Visit<'a> {
    fn visit_block(&mut self, b: &'a Block) {
        for s in b {
            self.visit_stmt(s);
        }
    }

    fn visit_stmt(&mut self, s: &'a Stmt) {
        walk_stmt(self, s)
    }

    fn visit_expr(&mut self, e: &'a Expr) {
        e.each_child(|c| self.visit_expr(c))
    }
}

/// A statement's children, visited: its expressions, then its blocks.
pub fn walk_stmt<'a, V: Visit<'a> + ?Sized>(v: &mut V, s: &'a Stmt) {
    s.each_expr(|e| v.visit_expr(e));
    s.each_block(|b| v.visit_block(b));
}

/// A pass that rebuilds a tree. A statement is folded into `out`, the block being built,
/// where it may put statements before itself (a hoisted call), several (an unrolled
/// loop) or none; an expression is folded with that block at hand too.
pub trait Fold {
    fn fold_block(&mut self, b: Block) -> Block {
        let mut out = Vec::with_capacity(b.len());
        for s in b {
            self.fold_stmt(s, &mut out);
        }
        out
    }

    fn fold_stmt(&mut self, s: Stmt, out: &mut Block) {
        let s = fold_stmt_children(self, s, out);
        out.push(s)
    }

    fn fold_place(&mut self, p: Place, out: &mut Block) -> Place {
        fold_place_children(self, p, out)
    }

    fn fold_expr(&mut self, e: Expr, out: &mut Block) -> Expr {
        fold_expr_children(self, e, out)
    }
}

/// An expression with its children folded.
pub fn fold_expr_children<F: Fold + ?Sized>(f: &mut F, mut e: Expr, out: &mut Block) -> Expr {
    e.each_child_mut(|c| *c = f.fold_expr(c.take(), out));
    e
}

/// A statement with its children folded: its expressions (an assignment's place whole,
/// through `fold_place`), then its blocks.
pub fn fold_stmt_children<F: Fold + ?Sized>(f: &mut F, mut s: Stmt, out: &mut Block) -> Stmt {
    match &mut s {
        Stmt::Assign { place, value, .. } | Stmt::AsyncCopy { place, value, .. } => {
            let p = std::mem::replace(place, Place::Local(0));
            *place = f.fold_place(p, out);
            *value = f.fold_expr(value.take(), out);
        }
        s => s.each_expr_mut(|e| *e = f.fold_expr(e.take(), out)),
    }
    s.each_block_mut(|b| *b = f.fold_block(std::mem::take(b)));
    s
}

/// A place with its indices folded, root first.
pub fn fold_place_children<F: Fold + ?Sized>(f: &mut F, p: Place, out: &mut Block) -> Place {
    match p {
        Place::Local(_) => p,
        Place::LocalIndex(id, idx) => {
            Place::LocalIndex(id, idx.into_iter().map(|i| f.fold_expr(i, out)).collect())
        }
        Place::Binding(b, i) => Place::Binding(b, f.fold_expr(i, out)),
        Place::Field(p, i) => Place::Field(Box::new(f.fold_place(*p, out)), i),
        Place::Component(p, c) => Place::Component(Box::new(f.fold_place(*p, out)), c),
        Place::Index(p, i) => {
            let p = f.fold_place(*p, out);
            Place::Index(Box::new(p), f.fold_expr(i, out))
        }
    }
}

/// Walks every statement of a block, depth first.
pub fn walk_stmts<'b>(block: &'b [Stmt], f: &mut dyn FnMut(&'b Stmt)) {
    for s in block {
        f(s);
        s.each_block(|b| walk_stmts(b, f));
    }
}

/// Calls `f` on every expression of a statement (not of nested statements).
pub fn stmt_exprs<'b>(s: &'b Stmt, f: &mut dyn FnMut(&'b Expr)) {
    s.each_expr(f)
}

/// Calls `f` on an expression and every sub-expression.
pub fn walk_expr<'b>(e: &'b Expr, f: &mut dyn FnMut(&'b Expr)) {
    f(e);
    e.each_child(|c| walk_expr(c, f));
}

/// Calls `f` on every expression of a block, every sub-expression and nested statement's
/// included.
pub fn walk_exprs<'b>(block: &'b Block, f: &mut dyn FnMut(&'b Expr)) {
    walk_stmts(block, &mut |s| s.each_expr(|e| walk_expr(e, f)));
}

/// Whether an expression calls a subgroup operation.
pub fn expr_has_subgroup_op(e: &Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        found |= matches!(x.kind, ExprKind::Subgroup { .. });
    });
    found
}

/// Whether a statement's own expressions (not those of nested statements) call a
/// subgroup operation.
pub fn has_subgroup_op(s: &Stmt) -> bool {
    let mut found = false;
    s.each_expr(|e| found |= expr_has_subgroup_op(e));
    found
}

/// Whether a statement is or contains a collective point: a barrier, where the
/// invocations of a workgroup meet, or a subgroup operation, where those of a subgroup do.
pub fn contains_collective(s: &Stmt) -> bool {
    let collective = |s: &Stmt| matches!(s, Stmt::Barrier { .. }) || has_subgroup_op(s);
    let mut found = collective(s);
    s.each_block(|b| walk_stmts(b, &mut |x| found |= collective(x)));
    found
}

/// Whether a compound statement (`if`, loops) holds a collective point in its body, so
/// that its control flow must run the same way for the whole workgroup.
pub fn collective_inside(s: &Stmt) -> bool {
    let mut found = false;
    s.each_block(|b| found |= b.iter().any(contains_collective));
    found
}
