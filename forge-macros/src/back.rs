//! What the text emitters share, layer 2: the structure of the functions that WGSL and
//! CUDA C++ are written as, once, as naga's `back` writers share theirs. A function being
//! written is a [`Function`]; each emitter adds its own state to it (`X`) and implements
//! [`Exprs`] and [`Stmts`] for it, with the parts whose form is the language's own: types, the
//! expressions that differ (literals, operators, casts, math, atomics, vectors, subgroup
//! and cooperative operations), a `let` of an array filled with a value, assignments,
//! compare-exchange, expression statements, barriers and prints. What the two languages
//! only spell differently is listed side by side in [`Syntax`].
//!
//! The shared forms keep Rust's meaning where the target's control flow differs:
//! - a range is evaluated once, into `fg_end<n>`, before the loop;
//! - `a..=b` steps before the body, so that `a..=MAX` stops after `MAX` without
//!   overflowing;
//! - `break` out of a loop from inside a `match` (a `switch`, which `break` would leave)
//!   sets the `switch`'s flag, and the code after the `switch` breaks the loop.

use crate::model::{
    AtomicOp, AtomicTarget, Barrier, BinOp, Block, Builtin, CoopOp, Expr, ExprKind, ForLoop,
    Kernel, Local, LocalId, MathFn, Place, Scalar, Stmt, SubgroupOp, Ty, UnOp,
};
use crate::names::{
    builtin_var, cuda_name, cuda_struct_name, helper_name, sched_name, wgsl_name, wgsl_struct_name,
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

/// A function being written: the kernel it belongs to, its locals (the kernel's or a
/// helper's) and their names in the language, its text, and the emitter's own state.
pub struct Function<'k, X> {
    pub k: &'k Kernel<'k>,
    pub locals: &'k [Local],
    pub names: Vec<String>,
    pub w: Writer,
    pub x: X,
}

impl<'k, X> Function<'k, X> {
    pub fn new(k: &'k Kernel<'k>, locals: &'k [Local], names: Vec<String>, x: X) -> Self {
        Function {
            k,
            locals,
            names,
            w: Writer::new(),
            x,
        }
    }
}

/// What the two languages spell differently, and nothing else: each arm is one language's
/// spelling of the same thing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Wgsl,
    Cuda,
}

impl Syntax {
    /// A user's identifier (a binding's, a parameter's, a field's).
    pub fn ident(self, name: &str) -> String {
        match self {
            Syntax::Wgsl => wgsl_name(name),
            Syntax::Cuda => cuda_name(name),
        }
    }

    /// An integer literal of type `t`: `u32`s carry their suffix in both, `i32`s in WGSL,
    /// and `i32::MIN`, which no literal can write, is computed.
    pub fn int_lit(self, v: i64, t: &Ty) -> String {
        let i = match self {
            Syntax::Wgsl => "i",
            Syntax::Cuda => "",
        };
        match t {
            Ty::Scalar(Scalar::U32) => format!("{v}u"),
            _ if v == i32::MIN as i64 => format!("(-2147483647{i} - 1{i})"),
            _ if v < 0 => format!("({v}{i})"),
            _ => format!("{v}{i}"),
        }
    }

    /// The function that picks between two values, `select(f, t, c)`.
    fn select(self) -> &'static str {
        match self {
            Syntax::Wgsl => "select",
            Syntax::Cuda => "fg_select",
        }
    }

    /// The function that builds struct `def` from its fields' values, and a zero struct.
    fn struct_ctor(self, k: &Kernel<'_>, s: usize) -> String {
        match self {
            Syntax::Wgsl => wgsl_struct_name(&k.structs[s]),
            Syntax::Cuda => format!("fg_make_{}", cuda_struct_name(&k.structs[s])),
        }
    }

    fn struct_zero(self, k: &Kernel<'_>, s: usize) -> String {
        match self {
            Syntax::Wgsl => format!("{}()", wgsl_struct_name(&k.structs[s])),
            Syntax::Cuda => format!("{}{{}}", cuda_struct_name(&k.structs[s])),
        }
    }

    /// A vector place's component `c`: `.x`, `.v[0]`.
    fn component(self, c: u8) -> String {
        match self {
            Syntax::Wgsl => format!(".{}", ["x", "y", "z", "w"][c as usize]),
            Syntax::Cuda => format!(".v[{c}]"),
        }
    }

    /// A condition as `if`, `while` and `switch` take it: bare in WGSL, in parentheses in C.
    fn cond(self, c: &str) -> String {
        match self {
            Syntax::Wgsl => c.to_string(),
            Syntax::Cuda => format!("({c})"),
        }
    }

    /// `name` declared with a value, without the `;`.
    pub fn decl(self, mutable: bool, name: &str, ty: &str, value: &str) -> String {
        match (self, mutable) {
            (Syntax::Wgsl, true) => format!("var {name}: {ty} = {value}"),
            (Syntax::Wgsl, false) => format!("let {name}: {ty} = {value}"),
            (Syntax::Cuda, true) => format!("{ty} {name} = {value}"),
            (Syntax::Cuda, false) => format!("const {ty} {name} = {value}"),
        }
    }

    /// A local declared without a value, which is zero in both languages: WGSL's `var`,
    /// C++'s value-initialisation.
    fn decl_zeroed(self, name: &str, ty: &str) -> String {
        match self {
            Syntax::Wgsl => format!("var {name}: {ty}"),
            Syntax::Cuda => format!("{ty} {name} = {{}}"),
        }
    }

    /// The zero value of an array type `ty`, and an array of `items`.
    fn zero_array(self, ty: &str) -> String {
        match self {
            Syntax::Wgsl => format!("{ty}()"),
            Syntax::Cuda => "{}".to_string(),
        }
    }

    pub fn array(self, ty: &str, items: &[String]) -> String {
        match self {
            Syntax::Wgsl => format!("{ty}({})", items.join(", ")),
            Syntax::Cuda => format!("{{{{{}}}}}", items.join(", ")),
        }
    }

    /// A loop without a condition.
    fn forever(self) -> &'static str {
        match self {
            Syntax::Wgsl => "loop",
            Syntax::Cuda => "for (;;)",
        }
    }

    /// The first line of an inclusive range's loop: `break` unless `more`.
    fn break_unless(self, more: &str) -> String {
        match self {
            Syntax::Wgsl => format!("if !{more} {{ break; }}"),
            Syntax::Cuda => format!("if (!{more}) break;"),
        }
    }

    /// The inclusive range's step to `v + 1`, taken before the body: C takes it only while
    /// there are more, since a signed overflow is undefined there.
    fn step(self, next: &str, v: &str, more: &str) -> String {
        match self {
            Syntax::Wgsl => format!("{next} = {v} + 1;"),
            Syntax::Cuda => format!("if ({more}) {next} = {v} + 1;"),
        }
    }

    /// A `switch` case's label for `values` of the selector's type `ty`.
    fn case_label(self, values: &[i64], ty: &Ty) -> String {
        let vs: Vec<String> = values.iter().map(|v| self.int_lit(*v, ty)).collect();
        match self {
            Syntax::Wgsl => format!("case {}:", vs.join(", ")),
            Syntax::Cuda => vs
                .iter()
                .map(|v| format!("case {v}:"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// The line that ends each case's body, where C needs one to not fall through.
    fn case_end(self) -> Option<&'static str> {
        match self {
            Syntax::Wgsl => None,
            Syntax::Cuda => Some("    break;"),
        }
    }
}

/// The expressions a language writes its own way: the emitter's part of a [`Function`].
pub trait Exprs {
    const SYNTAX: Syntax;

    /// A type, in the language.
    fn ty(&self, t: &Ty) -> String;

    fn unary(&mut self, op: UnOp, a: &Expr) -> String;
    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> String;
    fn cast(&mut self, a: &Expr, to: &Ty) -> String;
    fn math(&mut self, f: MathFn, args: &[Expr]) -> String;
    fn atomic(&mut self, op: AtomicOp, t: AtomicTarget, i: &Expr, args: &[Expr]) -> String;
    /// A vector from its components' values (one, splat, or one each).
    fn vec_new(&mut self, ty: &Ty, items: &[String]) -> String;
    fn swizzle(&self, v: &str, comps: &[u8]) -> String;
    fn subgroup(&mut self, op: SubgroupOp, ty: &Ty, args: &[Expr]) -> String;
    fn coop(&mut self, op: CoopOp, target: Option<AtomicTarget>, ty: &Ty, args: &[Expr]) -> String;
    /// A float literal that reads back as exactly the same value of type `s`.
    fn float_lit(&self, v: f64, s: Scalar) -> String;
}

/// A compare-exchange statement's parts: the locals that take the old value and whether
/// it was exchanged, the atomic element, and the value expected and the one stored.
pub struct Exchange<'a> {
    pub old: LocalId,
    pub exchanged: LocalId,
    pub target: AtomicTarget,
    pub index: &'a Expr,
    pub current: &'a Expr,
    pub new: &'a Expr,
}

/// The statements a language writes its own way.
pub trait Stmts: Exprs {
    /// `let name = [v; N]` (or of another type) for a `v` that is not zero.
    fn array_fill(&mut self, mutable: bool, name: &str, t: &Ty, v: &Expr);
    fn assign(&mut self, place: &Place, op: Option<BinOp>, value: &Expr);
    /// `async_copy(&mut place, &value)`: by default the assignment, which completes at
    /// once (a language with asynchronous copies writes its own).
    fn async_copy(&mut self, place: &Place, value: &Expr) {
        self.assign(place, None, value)
    }
    /// `let (old, exchanged) = target[index].compare_exchange_weak(current, new);`
    fn compare_exchange(&mut self, x: Exchange<'_>);
    /// An atomic method or a cooperative store called for its effect.
    fn eval(&mut self, e: &Expr);
    fn barrier(&mut self, kind: Barrier);
    fn print(&mut self, format: usize, args: &[Expr]);
}

impl<X> Function<'_, X>
where
    Self: Exprs,
{
    /// An expression: the forms both languages share (literals, names, element reads,
    /// helper calls, selects, structs and their fields) here, the others through `Exprs`.
    pub fn expr(&mut self, e: &Expr) -> String {
        let (k, syntax) = (self.k, Self::SYNTAX);
        match &e.kind {
            ExprKind::Local(id) => self.names[*id].clone(),
            ExprKind::Scalar(i) => syntax.ident(&k.scalars[*i].name),
            ExprKind::Sched(c) => sched_name(*c, &k.options.knobs),
            ExprKind::Builtin(b) => builtin_var(*b).into(),
            ExprKind::LoadBinding(b, i) => {
                let i = self.expr(i);
                format!("{}[{i}]", syntax.ident(&k.bindings[*b].name))
            }
            ExprKind::LoadArray(a, i) => {
                let (a, i) = (self.expr(a), self.expr(i));
                format!("{a}[{i}]")
            }
            ExprKind::Call(h, args) => {
                let items: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("{}({})", helper_name(&k.helpers[*h]), items.join(", "))
            }
            ExprKind::Select(f, t, c) => {
                let (f, t, c) = (self.expr(f), self.expr(t), self.expr(c));
                format!("{}({f}, {t}, {c})", syntax.select())
            }
            ExprKind::StructNew(s, args) => {
                let items: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                format!("{}({})", syntax.struct_ctor(k, *s), items.join(", "))
            }
            ExprKind::StructZero(s) => syntax.struct_zero(k, *s),
            // Inlining replaced every binding argument; `inline` reports any left.
            ExprKind::BindingRef(b) => k.bindings[*b].name.clone(),
            ExprKind::Field(base, f) => {
                let name = self.field_name(&base.ty, *f);
                let base = self.expr(base);
                format!("({base}).{name}")
            }
            ExprKind::IntLit(v) => syntax.int_lit(*v, &e.ty),
            ExprKind::FloatLit(v) => self.float_lit(*v, e.ty.scalar().unwrap_or(Scalar::F32)),
            ExprKind::BoolLit(b) => b.to_string(),
            ExprKind::BuiltinComponent(b, c) => {
                format!("{}{}", builtin_var(*b), syntax.component(*c))
            }
            ExprKind::Unary(op, a) => self.unary(*op, a),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b),
            ExprKind::Cast(a) => self.cast(a, &e.ty),
            ExprKind::Math(f, args) => self.math(*f, args),
            ExprKind::Atomic {
                op,
                target,
                index,
                args,
            } => self.atomic(*op, *target, index, args),
            ExprKind::VecNew(args) => {
                let items: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
                self.vec_new(&e.ty, &items)
            }
            ExprKind::Swizzle(v, comps) => {
                let v = self.expr(v);
                self.swizzle(&v, comps)
            }
            ExprKind::Subgroup { op, args, .. } => self.subgroup(*op, &e.ty, args),
            ExprKind::Coop { op, target, args } => self.coop(*op, *target, &e.ty, args),
            // `check::array_values_only_in_let` keeps these at `let`s, handled there.
            ExprKind::ArrayRepeat(_) | ExprKind::ArrayList(_) => String::from("/* array value */"),
        }
    }

    /// The name of field `f` of a struct type.
    fn field_name(&self, t: &Ty, f: usize) -> String {
        match t {
            Ty::Struct(s) => Self::SYNTAX.ident(&self.k.structs[*s].fields[f].name),
            _ => String::new(),
        }
    }

    /// An assignable place.
    pub fn place(&mut self, place: &Place) -> String {
        match place {
            Place::Local(id) => self.names[*id].clone(),
            Place::LocalIndex(id, idx) => {
                let mut t = self.names[*id].clone();
                for i in idx {
                    let i = self.expr(i);
                    t.push_str(&format!("[{i}]"));
                }
                t
            }
            Place::Binding(b, i) => {
                let i = self.expr(i);
                format!("{}[{i}]", Self::SYNTAX.ident(&self.k.bindings[*b].name))
            }
            Place::Field(base, f) => {
                let base_ty = self.k.place_ty(self.locals, base);
                let base = self.place(base);
                format!("{base}.{}", self.field_name(&base_ty, *f))
            }
            Place::Component(base, c) => {
                let base = self.place(base);
                format!("{base}{}", Self::SYNTAX.component(*c))
            }
            Place::Index(base, i) => {
                let base = self.place(base);
                let i = self.expr(i);
                format!("{base}[{i}]")
            }
        }
    }
}

impl<X> Function<'_, X>
where
    Self: Stmts,
{
    /// The statements of a block.
    pub fn block(&mut self, b: &Block) {
        for s in b {
            self.stmt(s);
        }
    }

    /// `header {`, the block indented, and the closing `}` left to the caller.
    fn nested(&mut self, header: &str, b: &Block) {
        if header.is_empty() {
            self.w.line("{");
        } else {
            self.w.line(&format!("{header} {{"));
        }
        self.w.indent += 1;
        self.block(b);
        self.w.indent -= 1;
    }

    /// A loop body, indented and closed: `break` inside it no longer crosses the enclosing
    /// `switch`es.
    fn loop_body(&mut self, b: &Block) {
        self.w.indent += 1;
        self.w.loop_depth += 1;
        self.block(b);
        self.w.loop_depth -= 1;
        self.w.indent -= 1;
        self.w.line("}");
    }

    /// `break` of the innermost loop. Inside a `switch` of that loop, `break` would leave
    /// the `switch` only: it sets the `switch`'s flag instead, and the code after the
    /// `switch` breaks the loop (again through an outer `switch` if there is one).
    fn break_loop(&mut self) {
        let w = &mut self.w;
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
    pub fn stmt(&mut self, s: &Stmt) {
        let syntax = Self::SYNTAX;
        self.w.at = origin(s);
        match s {
            Stmt::Let { local, init } => self.let_stmt(*local, init.as_ref()),
            Stmt::Assign {
                place, op, value, ..
            } => self.assign(place, *op, value),
            Stmt::AsyncCopy { place, value, .. } => self.async_copy(place, value),
            Stmt::If { cond, then, els } => {
                let c = self.expr(cond);
                self.nested(&format!("if {}", syntax.cond(&c)), then);
                match els {
                    None => self.w.line("}"),
                    Some(e) => {
                        self.w.line("} else {");
                        self.w.indent += 1;
                        self.block(e);
                        self.w.indent -= 1;
                        self.w.line("}");
                    }
                }
            }
            Stmt::For(f) => self.for_range(f),
            Stmt::While { cond, body, .. } => {
                let c = self.expr(cond);
                self.w.line(&format!("while {} {{", syntax.cond(&c)));
                self.loop_body(body);
            }
            Stmt::Loop { body, .. } => {
                self.w.line(&format!("{} {{", syntax.forever()));
                self.loop_body(body);
            }
            Stmt::Break { .. } => self.break_loop(),
            Stmt::Continue { .. } => self.w.line("continue;"),
            Stmt::Return { .. } => self.w.line("return;"),
            Stmt::ReturnValue { value } => {
                let v = self.expr(value);
                self.w.line(&format!("return {v};"));
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
                let (old, exchanged, target) = (*old, *exchanged, *target);
                self.compare_exchange(Exchange {
                    old,
                    exchanged,
                    target,
                    index,
                    current,
                    new,
                })
            }
            Stmt::Block(b) => {
                self.nested("", b);
                self.w.line("}");
            }
            Stmt::Eval { expr } => self.eval(expr),
            Stmt::Barrier { kind, .. } => self.barrier(*kind),
            Stmt::Print { format, args, .. } => self.print(*format, args),
        }
    }

    /// A `let`. Workgroup arrays are declared with the entry point, not here.
    fn let_stmt(&mut self, id: LocalId, init: Option<&Expr>) {
        let syntax = Self::SYNTAX;
        let l = &self.locals[id];
        if l.shared {
            return;
        }
        let mutable = l.mutable || init.is_none();
        let (name, t) = (self.names[id].clone(), self.ty(&l.ty));
        let line = match init {
            None => syntax.decl_zeroed(&name, &t),
            Some(e) => match &e.kind {
                ExprKind::ArrayRepeat(v) if v.is_zero() => {
                    syntax.decl(mutable, &name, &t, &syntax.zero_array(&t))
                }
                ExprKind::ArrayRepeat(v) => return self.array_fill(mutable, &name, &l.ty, v),
                ExprKind::ArrayList(items) => {
                    let items: Vec<String> = items.iter().map(|i| self.expr(i)).collect();
                    syntax.decl(mutable, &name, &t, &syntax.array(&t, &items))
                }
                _ => {
                    let v = self.expr(e);
                    syntax.decl(mutable, &name, &t, &v)
                }
            },
        };
        self.w.line(&format!("{line};"));
    }

    /// `for var in start..end` (or `..=`), in a block of its own that holds the end, which
    /// is evaluated once, as Rust evaluates a range.
    fn for_range(&mut self, f: &ForLoop) {
        let syntax = Self::SYNTAX;
        let ForLoop {
            var,
            start,
            end,
            inclusive,
            body,
            ..
        } = f;
        let v = self.names[*var].clone();
        let t = self.ty(&self.locals[*var].ty);
        let (s0, e0) = (self.expr(start), self.expr(end));
        let n = self.w.fresh();
        let (end, next, more) = (
            format!("fg_end{n}"),
            format!("fg_next{n}"),
            format!("fg_more{n}"),
        );
        self.w.line("{");
        self.w.indent += 1;
        self.w
            .line(&format!("{};", syntax.decl(false, &end, &t, &e0)));
        if !inclusive {
            let head = syntax.decl(true, &v, &t, &s0);
            self.w
                .line(&format!("for ({head}; {v} < {end}; {v} = {v} + 1) {{"));
        } else {
            // `a..=MAX` must stop after MAX without overflowing: step before the body.
            let bool_ty = self.ty(&Ty::BOOL);
            let more_init = format!("{next} <= {end}");
            self.w
                .line(&format!("{};", syntax.decl(true, &next, &t, &s0)));
            self.w.line(&format!(
                "{};",
                syntax.decl(true, &more, &bool_ty, &more_init)
            ));
            self.w.line(&format!("{} {{", syntax.forever()));
            self.w.indent += 1;
            self.w.line(&syntax.break_unless(&more));
            self.w
                .line(&format!("{};", syntax.decl(false, &v, &t, &next)));
            self.w.line(&format!("{more} = {v} < {end};"));
            self.w.line(&syntax.step(&next, &v, &more));
            self.w.indent -= 1;
        }
        self.loop_body(body);
        self.w.indent -= 1;
        self.w.line("}");
    }

    /// `match` as a `switch`: each case's values, its body, and no fall-through.
    fn switch(&mut self, selector: &Expr, cases: &[(Vec<i64>, Block)], default: &Block) {
        let syntax = Self::SYNTAX;
        let sel = self.expr(selector);
        let flag = format!("fg_brk{}", self.w.fresh());
        let breaks = self.w.loop_depth > 0 && {
            let mut found = false;
            for b in cases.iter().map(|(_, b)| b).chain([default]) {
                crate::model::walk_stmts(b, &mut |s| found |= matches!(s, Stmt::Break { .. }));
            }
            found
        };
        if breaks {
            let bool_ty = self.ty(&Ty::BOOL);
            self.w
                .line(&format!("{};", syntax.decl(true, &flag, &bool_ty, "false")));
        }
        self.w.line(&format!("switch {} {{", syntax.cond(&sel)));
        self.w.indent += 1;
        self.w.switches.push((self.w.loop_depth, flag.clone()));
        let labelled = cases
            .iter()
            .map(|(values, body)| (syntax.case_label(values, &selector.ty), body));
        for (label, body) in labelled.chain([("default:".to_string(), default)]) {
            self.nested(&label, body);
            if let Some(end) = syntax.case_end() {
                self.w.line(end);
            }
            self.w.line("}");
        }
        self.w.switches.pop();
        self.w.indent -= 1;
        self.w.line("}");
        if breaks {
            self.w.line(&format!("if {} {{", syntax.cond(&flag)));
            self.w.indent += 1;
            self.break_loop();
            self.w.indent -= 1;
            self.w.line("}");
        }
    }
}

/// The logical ids a 1-D kernel's body reads, which its entry point declares from the
/// linear indices, each with its components: `global_id()` and `workgroup_id()` (y and z
/// 0), and `num_workgroups()` (`groups` in x, y and z 1).
pub fn logical_ids_1d<'g>(k: &Kernel<'_>, groups: &'g str) -> Vec<(&'static str, [&'g str; 3])> {
    let used = k.used_builtins();
    [
        (Builtin::GlobalId, ["fg_global_index", "0u", "0u"]),
        (Builtin::WorkgroupId, ["fg_wg_index", "0u", "0u"]),
        (Builtin::NumWorkgroups, [groups, "1u", "1u"]),
    ]
    .into_iter()
    .filter(|(b, _)| used.contains(b))
    .map(|(b, xyz)| (builtin_var(b), xyz))
    .collect()
}

/// The user's tokens a statement came from, for the errors that a validator (naga) reports
/// on the generated line.
pub fn origin(s: &Stmt) -> Option<(Span, Span)> {
    let range = |e: &Expr| Some((e.span, e.end));
    match s {
        Stmt::Let { init: Some(e), .. } => range(e),
        Stmt::Let { .. } | Stmt::Loop { .. } => None,
        Stmt::Assign { span, value, .. } | Stmt::AsyncCopy { span, value, .. } => {
            Some((*span, value.end))
        }
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
