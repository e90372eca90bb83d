//! What the text emitters share, layer 2: the statement structure of WGSL and CUDA C++,
//! written once over a [`Lang`] that spells what the two languages spell differently, as
//! naga's `back` writers share their block structure. `emit_wgsl` and `emit_cuda` each
//! implement `Lang`; the statements whose form is the language's own (a `let` of an array
//! filled with a value, assignments, atomics, barriers, prints) are its methods, and so
//! are expressions and types.
//!
//! The shared forms keep Rust's meaning where the target's control flow differs:
//! - a range is evaluated once, into `fg_end<n>`, before the loop;
//! - `a..=b` steps before the body, so that `a..=MAX` stops after `MAX` without
//!   overflowing;
//! - `break` out of a loop from inside a `match` (a `switch`, which `break` would leave)
//!   sets the `switch`'s flag, and the code after the `switch` breaks the loop.

use crate::model::{
    Barrier, BinOp, Block, Expr, ExprKind, ForLoop, Local, LocalId, Place, Stmt, Ty,
};
use proc_macro2::Span;

/// One function's text as it is written: its lines, the indentation, the numbers of the
/// names the emitter makes (`fg_end1`), the loops and `switch`es around the statement being
/// written, and the user's tokens each line came from.
pub struct Writer {
    pub out: String,
    pub indent: usize,
    /// Loops entered so far in the function (for `break` out of a `switch`).
    loop_depth: usize,
    /// Enclosing `switch`es, innermost last: the loop depth at each and its `break` flag.
    switches: Vec<(usize, String)>,
    tmp: usize,
    /// The statement being written, as a span range.
    pub at: Option<(Span, Span)>,
    /// The origin of each line of `out`.
    pub origins: Vec<Option<(Span, Span)>>,
}

impl Writer {
    /// A writer for a function's body, indented once.
    pub fn new() -> Self {
        Writer {
            out: String::new(),
            indent: 1,
            loop_depth: 0,
            switches: Vec::new(),
            tmp: 0,
            at: None,
            origins: Vec::new(),
        }
    }

    /// One line, indented.
    pub fn line(&mut self, text: &str) {
        self.origins.push(self.at);
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// A fresh number for a name the emitter makes.
    pub fn fresh(&mut self) -> usize {
        self.tmp += 1;
        self.tmp
    }
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

/// What a target language spells its own way.
pub trait Lang {
    /// The function being written.
    fn w(&mut self) -> &mut Writer;

    /// The function's local `id`, and its name.
    fn local(&self, id: LocalId) -> &Local;
    fn name(&self, id: LocalId) -> String;

    /// A type and an expression, in the language.
    fn ty(&self, t: &Ty) -> String;
    fn expr(&mut self, e: &Expr) -> String;

    /// A condition as `if`, `while` and `switch` take it: bare in WGSL, in parentheses in C.
    fn cond(&self, c: &str) -> String;

    /// `name` declared with a value, without the `;`: WGSL's `let`/`var name: T = v`, C's
    /// `const T name = v`/`T name = v`.
    fn decl(&self, mutable: bool, name: &str, ty: &str, value: &str) -> String;

    /// A local declared without a value, which is zero in both languages: WGSL's `var`,
    /// C++'s value-initialisation.
    fn decl_zeroed(&self, name: &str, ty: &str) -> String;

    /// The zero value of an array type, and an array of `items`.
    fn zero_array(&self, ty: &str) -> String;
    fn array(&self, ty: &str, items: &[String]) -> String;

    /// `let name = [v; N]` (or of another type) for a `v` that is not zero.
    fn array_fill(&mut self, mutable: bool, name: &str, t: &Ty, v: &Expr);

    /// A loop without a condition: `loop`, `for (;;)`.
    fn forever(&self) -> &'static str;

    /// The first line of an inclusive range's loop: `break` unless `more`.
    fn break_unless(&self, more: &str) -> String;

    /// The inclusive range's step to `v + 1`, taken before the body: C takes it only while
    /// there are more, since a signed overflow is undefined there.
    fn step(&self, next: &str, v: &str, more: &str) -> String;

    /// A `switch` case's label for `values` of the selector's type `ty`, and the line that
    /// ends each case's body, where C needs one to not fall through.
    fn case_label(&self, values: &[i64], ty: &Ty) -> String;
    fn case_end(&self) -> Option<&'static str>;

    /// The statements whose form is the language's own.
    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &Expr);
    fn compare_exchange(&mut self, s: &Stmt);
    fn eval(&mut self, e: &Expr);
    fn barrier(&mut self, kind: Barrier);
    fn print(&mut self, format: usize, args: &[Expr]);
}

/// The user's tokens a statement came from, for the errors that a validator (naga) reports
/// on the generated line.
pub fn origin(s: &Stmt) -> Option<(Span, Span)> {
    let range = |e: &Expr| Some((e.span, e.end));
    match s {
        Stmt::Let { init: Some(e), .. } => range(e),
        Stmt::Let { .. } | Stmt::Loop { .. } => None,
        Stmt::Assign { span, value, .. } => Some((*span, value.end)),
        Stmt::If { cond, .. } | Stmt::While { cond, .. } => range(cond),
        Stmt::For(ForLoop { start, end, .. }) => Some((start.span, end.end)),
        Stmt::Break { span, .. }
        | Stmt::Continue { span, .. }
        | Stmt::Return { span }
        | Stmt::Barrier { span, .. } => Some((*span, *span)),
        Stmt::ReturnValue { value } => range(value),
        Stmt::Block(_) => None,
        Stmt::Eval { expr } => range(expr),
        Stmt::Switch { selector, .. } => range(selector),
        Stmt::CompareExchange { span, .. } | Stmt::Print { span, .. } => Some((*span, *span)),
    }
}

/// The statements of a block.
pub fn block<L: Lang + ?Sized>(l: &mut L, b: &Block) {
    for s in b {
        stmt(l, s);
    }
}

/// `header {`, the block indented, and the closing `}` left to the caller.
fn nested<L: Lang + ?Sized>(l: &mut L, header: &str, b: &Block) {
    if header.is_empty() {
        l.w().line("{");
    } else {
        l.w().line(&format!("{header} {{"));
    }
    l.w().indent += 1;
    block(l, b);
    l.w().indent -= 1;
}

/// A loop body, indented: `break` inside it no longer crosses the enclosing `switch`es.
fn loop_body<L: Lang + ?Sized>(l: &mut L, b: &Block) {
    l.w().indent += 1;
    l.w().loop_depth += 1;
    block(l, b);
    l.w().loop_depth -= 1;
    l.w().indent -= 1;
    l.w().line("}");
}

/// `break` of the innermost loop. Inside a `switch` of that loop, `break` would leave the
/// `switch` only: it sets the `switch`'s flag instead, and the code after the `switch`
/// breaks the loop (again through an outer `switch` if there is one).
fn break_loop(w: &mut Writer) {
    let crossing = w
        .switches
        .iter()
        .rposition(|(depth, _)| *depth == w.loop_depth);
    if let Some(i) = crossing {
        let flag = w.switches[i].1.clone();
        w.line(&format!("{flag} = true;"));
    }
    w.line("break;");
}

/// One statement.
pub fn stmt<L: Lang + ?Sized>(l: &mut L, s: &Stmt) {
    l.w().at = origin(s);
    match s {
        Stmt::Let { local, init } => let_stmt(l, *local, init.as_ref()),
        Stmt::Assign {
            place, op, value, ..
        } => l.assign(place, *op, value),
        Stmt::If { cond, then, els } => {
            let c = l.expr(cond);
            let header = format!("if {}", l.cond(&c));
            nested(l, &header, then);
            match els {
                None => l.w().line("}"),
                Some(e) => {
                    l.w().line("} else {");
                    l.w().indent += 1;
                    block(l, e);
                    l.w().indent -= 1;
                    l.w().line("}");
                }
            }
        }
        Stmt::For(f) => for_range(l, f),
        Stmt::While { cond, body, .. } => {
            let c = l.expr(cond);
            let header = format!("while {} {{", l.cond(&c));
            l.w().line(&header);
            loop_body(l, body);
        }
        Stmt::Loop { body, .. } => {
            let header = format!("{} {{", l.forever());
            l.w().line(&header);
            loop_body(l, body);
        }
        Stmt::Break { .. } => break_loop(l.w()),
        Stmt::Continue { .. } => l.w().line("continue;"),
        Stmt::Return { .. } => l.w().line("return;"),
        Stmt::ReturnValue { value } => {
            let v = l.expr(value);
            l.w().line(&format!("return {v};"));
        }
        Stmt::Switch {
            selector,
            cases,
            default,
        } => switch(l, selector, cases, default),
        Stmt::CompareExchange { .. } => l.compare_exchange(s),
        Stmt::Block(b) => {
            nested(l, "", b);
            l.w().line("}");
        }
        Stmt::Eval { expr } => l.eval(expr),
        Stmt::Barrier { kind, .. } => l.barrier(*kind),
        Stmt::Print { format, args, .. } => l.print(*format, args),
    }
}

/// A `let`. Workgroup arrays are declared with the entry point, not here.
fn let_stmt<L: Lang + ?Sized>(l: &mut L, local: LocalId, init: Option<&Expr>) {
    let loc = l.local(local);
    if loc.shared {
        return;
    }
    let (mutable, lty) = (loc.mutable || init.is_none(), loc.ty.clone());
    let (name, t) = (l.name(local), l.ty(&lty));
    let line = match init {
        None => l.decl_zeroed(&name, &t),
        Some(e) => match &e.kind {
            ExprKind::ArrayRepeat(v) if v.is_zero() => {
                l.decl(mutable, &name, &t, &l.zero_array(&t))
            }
            ExprKind::ArrayRepeat(v) => return l.array_fill(mutable, &name, &lty, v),
            ExprKind::ArrayList(items) => {
                let items: Vec<String> = items.iter().map(|i| l.expr(i)).collect();
                l.decl(mutable, &name, &t, &l.array(&t, &items))
            }
            _ => {
                let v = l.expr(e);
                l.decl(mutable, &name, &t, &v)
            }
        },
    };
    l.w().line(&format!("{line};"));
}

/// `for var in start..end` (or `..=`), in a block of its own that holds the end, which is
/// evaluated once, as Rust evaluates a range.
fn for_range<L: Lang + ?Sized>(l: &mut L, f: &ForLoop) {
    let ForLoop {
        var,
        start,
        end,
        inclusive,
        body,
        ..
    } = f;
    let v = l.name(*var);
    let t = l.ty(&l.local(*var).ty);
    let (s0, e0) = (l.expr(start), l.expr(end));
    let n = l.w().fresh();
    let (end, next, more) = (
        format!("fg_end{n}"),
        format!("fg_next{n}"),
        format!("fg_more{n}"),
    );
    l.w().line("{");
    l.w().indent += 1;
    let line = format!("{};", l.decl(false, &end, &t, &e0));
    l.w().line(&line);
    if !inclusive {
        let line = format!(
            "for ({}; {v} < {end}; {v} = {v} + 1) {{",
            l.decl(true, &v, &t, &s0)
        );
        l.w().line(&line);
    } else {
        // `a..=MAX` must stop after MAX without overflowing: step before the body.
        let bool_ty = l.ty(&Ty::BOOL);
        let lines = [
            format!("{};", l.decl(true, &next, &t, &s0)),
            format!(
                "{};",
                l.decl(true, &more, &bool_ty, &format!("{next} <= {end}"))
            ),
            format!("{} {{", l.forever()),
        ];
        let inner = [
            l.break_unless(&more),
            format!("{};", l.decl(false, &v, &t, &next)),
            format!("{more} = {v} < {end};"),
            l.step(&next, &v, &more),
        ];
        for line in lines {
            l.w().line(&line);
        }
        l.w().indent += 1;
        for line in inner {
            l.w().line(&line);
        }
        l.w().indent -= 1;
    }
    loop_body(l, body);
    l.w().indent -= 1;
    l.w().line("}");
}

/// `match` as a `switch`: each case's values, its body, and no fall-through.
fn switch<L: Lang + ?Sized>(
    l: &mut L,
    selector: &Expr,
    cases: &[(Vec<i64>, Block)],
    default: &Block,
) {
    let sel = l.expr(selector);
    let flag = format!("fg_brk{}", l.w().fresh());
    let breaks = l.w().loop_depth > 0 && {
        let mut found = false;
        for b in cases.iter().map(|(_, b)| b).chain([default]) {
            crate::model::walk_stmts(b, &mut |s| found |= matches!(s, Stmt::Break { .. }));
        }
        found
    };
    if breaks {
        let line = format!("{};", l.decl(true, &flag, &l.ty(&Ty::BOOL), "false"));
        l.w().line(&line);
    }
    let header = format!("switch {} {{", l.cond(&sel));
    l.w().line(&header);
    l.w().indent += 1;
    let depth = l.w().loop_depth;
    l.w().switches.push((depth, flag.clone()));
    let end = l.case_end();
    let arms = cases
        .iter()
        .map(|(values, body)| (l.case_label(values, &selector.ty), body))
        .collect::<Vec<_>>();
    for (label, body) in arms.into_iter().chain([("default:".to_string(), default)]) {
        nested(l, &label, body);
        if let Some(end) = end {
            l.w().line(end);
        }
        l.w().line("}");
    }
    l.w().switches.pop();
    l.w().indent -= 1;
    l.w().line("}");
    if breaks {
        let header = format!("if {} {{", l.cond(&flag));
        l.w().line(&header);
        l.w().indent += 1;
        break_loop(l.w());
        l.w().indent -= 1;
        l.w().line("}");
    }
}
