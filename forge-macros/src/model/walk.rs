//! Walking the tree: every pass that visits or rewrites statements and expressions goes
//! through these, so that a new kind of node is added here and in the passes that give
//! it meaning.

use super::expr::{Expr, ExprKind};
use super::stmt::{Block, ForLoop, Stmt};

/// Walks every statement of a block, depth first.
pub fn walk_stmts<'b>(block: &'b Block, f: &mut dyn FnMut(&'b Stmt)) {
    for s in block {
        f(s);
        match s {
            Stmt::If { then, els, .. } => {
                walk_stmts(then, f);
                if let Some(e) = els {
                    walk_stmts(e, f);
                }
            }
            Stmt::For(ForLoop { body, .. })
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. }
            | Stmt::Block(body) => walk_stmts(body, f),
            Stmt::Switch { cases, default, .. } => {
                for (_, b) in cases {
                    walk_stmts(b, f);
                }
                walk_stmts(default, f);
            }
            _ => {}
        }
    }
}

/// Whether an expression calls a subgroup operation.
pub fn expr_has_subgroup_op(e: &Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if matches!(x.kind, ExprKind::Subgroup { .. }) {
            found = true;
        }
    });
    found
}

/// Whether a statement's own expressions (not those of nested statements) call a
/// subgroup operation.
pub fn has_subgroup_op(s: &Stmt) -> bool {
    let mut found = false;
    stmt_exprs(s, &mut |e| found |= expr_has_subgroup_op(e));
    found
}

/// Whether a statement is or contains a collective point: a barrier, where the
/// invocations of a workgroup meet, or a subgroup operation, where those of a subgroup do.
pub fn contains_collective(s: &Stmt) -> bool {
    let mut found = false;
    walk_stmts(&vec![s.clone()], &mut |s| {
        if matches!(s, Stmt::Barrier { .. }) || has_subgroup_op(s) {
            found = true;
        }
    });
    found
}

/// Whether a compound statement (`if`, loops) holds a collective point in its body, so
/// that its control flow must run the same way for the whole workgroup.
pub fn collective_inside(s: &Stmt) -> bool {
    let in_block = |b: &Block| b.iter().any(contains_collective);
    match s {
        Stmt::If { then, els, .. } => in_block(then) || els.as_ref().is_some_and(in_block),
        Stmt::For(ForLoop { body, .. })
        | Stmt::While { body, .. }
        | Stmt::Loop { body, .. }
        | Stmt::Block(body) => in_block(body),
        Stmt::Switch { cases, default, .. } => {
            cases.iter().any(|(_, b)| in_block(b)) || in_block(default)
        }
        _ => false,
    }
}

/// Calls `f` on every expression of a statement (not of nested statements).
pub fn stmt_exprs<'b>(s: &'b Stmt, f: &mut dyn FnMut(&'b Expr)) {
    match s {
        Stmt::Let { init: Some(e), .. } => f(e),
        Stmt::Assign { place, value, .. } => {
            place.indices().into_iter().for_each(&mut *f);
            f(value)
        }
        Stmt::If { cond, .. } | Stmt::While { cond, .. } => f(cond),
        Stmt::Switch { selector, .. } => f(selector),
        Stmt::CompareExchange {
            index,
            current,
            new,
            ..
        } => {
            f(index);
            f(current);
            f(new)
        }
        Stmt::Eval { expr, .. } => f(expr),
        Stmt::Print { args, .. } => args.iter().for_each(f),
        Stmt::ReturnValue { value } => f(value),
        Stmt::For(ForLoop { start, end, .. }) => {
            f(start);
            f(end)
        }
        _ => {}
    }
}

/// Calls `f` on an expression and every sub-expression.
pub fn walk_expr<'b>(e: &'b Expr, f: &mut dyn FnMut(&'b Expr)) {
    f(e);
    e.each_child(|c| walk_expr(c, f));
}
