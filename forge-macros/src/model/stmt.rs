//! Statements, and the places they assign.
//!
//! Part of `model` (layer 1).

use super::expr::{AtomicTarget, BinOp, Expr};
use super::ty::LocalId;
use proc_macro2::Span;

/// Something that can be assigned to.
#[derive(Clone, Debug)]
pub enum Place {
    Local(LocalId),
    /// `a[i]` or `a[i][j]` on a local or workgroup array: the local and the index chain.
    LocalIndex(LocalId, Vec<Expr>),
    Binding(usize, Expr),
    /// A field of a struct place: `b.vel`, `bodies[i].pos`.
    Field(Box<Place>, usize),
    /// A component of a vector place: `v.y`, `p.pos.x`.
    Component(Box<Place>, u8),
    /// An element of an array place that is not a local's: `p.hits[0]`.
    Index(Box<Place>, Expr),
}

impl Place {
    /// The place whose field this is, through every field: a local, a local's element or a
    /// binding's element.
    pub fn root(&self) -> &Place {
        match self {
            Place::Field(p, _) | Place::Component(p, _) | Place::Index(p, _) => p.root(),
            p => p,
        }
    }

    /// Every index expression of the place, root first.
    pub fn indices(&self) -> Vec<&Expr> {
        match self {
            Place::Local(_) => Vec::new(),
            Place::LocalIndex(_, idx) => idx.iter().collect(),
            Place::Binding(_, i) => vec![i],
            Place::Field(p, _) | Place::Component(p, _) => p.indices(),
            Place::Index(p, i) => {
                let mut v = p.indices();
                v.push(i);
                v
            }
        }
    }

    /// The same, mutably.
    pub fn indices_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Place::Local(_) => Vec::new(),
            Place::LocalIndex(_, idx) => idx.iter_mut().collect(),
            Place::Binding(_, i) => vec![i],
            Place::Field(p, _) | Place::Component(p, _) => p.indices_mut(),
            Place::Index(p, i) => {
                let mut v = p.indices_mut();
                v.push(i);
                v
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    Workgroup,
    Storage,
    /// `async_wait(n)`: closes this invocation's batch of `async_copy`s, waits until at
    /// most the `n` latest batches are still in flight, then is a workgroup barrier. Where
    /// copies are plain assignments (WGSL, the oracle), it is a workgroup barrier.
    AsyncWait(u32),
}

/// `for var in start..end` (`..=` when `inclusive`). One struct, so that a pass that
/// rewrites some of its parts takes the loop whole and puts it back with the rest kept.
#[derive(Clone, Debug)]
pub struct ForLoop {
    pub var: LocalId,
    pub start: Expr,
    pub end: Expr,
    pub inclusive: bool,
    pub body: Block,
    pub id: usize,
    /// `#[unroll]`: the bounds are constant, and `unroll` copies the body once per
    /// value of the variable.
    pub unroll: bool,
}

/// A statement. Loops carry an id so that `break`/`continue` name their target.
#[derive(Clone, Debug)]
pub enum Stmt {
    Let {
        local: LocalId,
        init: Option<Expr>,
    },
    Assign {
        place: Place,
        op: Option<BinOp>,
        value: Expr,
        span: Span,
    },
    If {
        cond: Expr,
        then: Block,
        els: Option<Block>,
    },
    For(ForLoop),
    While {
        cond: Expr,
        body: Block,
        id: usize,
    },
    Loop {
        body: Block,
        id: usize,
    },
    Break {
        target: usize,
        span: Span,
    },
    Continue {
        target: usize,
        span: Span,
    },
    Return {
        span: Span,
    },
    Barrier {
        kind: Barrier,
        span: Span,
    },
    /// `async_copy(&mut dst[i], &src[j])`: an element of a storage binding copied into
    /// workgroup memory, complete at the next `async_wait` (CUDA's `cp.async`); in WGSL and
    /// in the oracle, the assignment `dst[i] = src[j]` at once. `place` is the workgroup
    /// array's element, `value` the binding's (`ExprKind::LoadBinding`); in a helper, either
    /// may be a reference parameter's element until it is inlined (`check` then holds them
    /// to workgroup memory and storage).
    AsyncCopy {
        place: Place,
        value: Expr,
        span: Span,
    },
    /// `return value` in a helper function (a tail expression becomes one too).
    ReturnValue {
        value: Expr,
    },
    /// An atomic method called for its effect; its value is dropped.
    Eval {
        expr: Expr,
    },
    /// `let (old, exchanged) = target[index].compare_exchange_weak(current, new);`: WGSL's
    /// `atomicCompareExchangeWeak`, which may fail spuriously (the oracle never does).
    CompareExchange {
        old: LocalId,
        exchanged: LocalId,
        target: AtomicTarget,
        index: Expr,
        current: Expr,
        new: Expr,
        span: Span,
    },
    /// `match` on an integer, as WGSL's `switch`. A value belongs to the first arm that
    /// names it, as in Rust, so each case lists only its own values; `default` is the
    /// `_` arm.
    Switch {
        selector: Expr,
        cases: Vec<(Vec<i64>, Block)>,
        default: Block,
    },
    /// A block that only scopes the names declared in it: one copy of an unrolled body.
    Block(Block),
    /// `debug_print!("fmt", args..)`: format `format` of `Kernel::prints`, with its
    /// arguments' values. The GPU appends a record to the print buffer, the oracle records
    /// the same values.
    Print {
        format: usize,
        args: Vec<Expr>,
        span: Span,
    },
}

/// A `debug_print!` format string, parsed: the literal text around the placeholders
/// (`pieces` has one more entry than `debug`, with `{{` and `}}` unescaped), and whether
/// each placeholder is `{:?}`.
#[derive(Clone, Debug)]
pub struct PrintFmt {
    pub text: String,
    pub pieces: Vec<String>,
    pub debug: Vec<bool>,
    /// The format string literal.
    pub span: Span,
}

pub type Block = Vec<Stmt>;

/// What `async_copy` does, the start of each of its messages.
pub const ASYNC_COPY_FORM: &str = "`async_copy(&mut tile[i], &x[j])` copies element `j` of storage binding `x` into element `i` of `#[shared]` array `tile`";

/// Why an asynchronous copy's destination is refused.
pub const ASYNC_COPY_INTO_SHARED: &str = "the destination is an element of a `#[shared]` array (workgroup memory), the only memory an asynchronous copy writes";

/// Why an asynchronous copy's source is refused.
pub const ASYNC_COPY_FROM_STORAGE: &str =
    "the source is an element of a storage binding, and asynchronous copies read storage only";
