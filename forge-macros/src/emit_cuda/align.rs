//! What the CUDA emitter can prove about an integer index before the kernel runs: how many
//! low bits of its value are zero, for every invocation. A cooperative-matrix load from
//! workgroup memory whose rows are proved to start on 16 bytes takes `ldmatrix` with no
//! test at run time; otherwise the prelude tests the address and keeps an element-by-element
//! path beside it (`prelude_coop.cuh`). The test is cheap, but each load then sits behind
//! its own branch, and ptxas no longer issues a step's loads together ahead of its
//! multiplies: in `gemm_f16` the proof removed a third of the instructions.
//!
//! The facts come from the kernel made concrete for one schedule (`Expanded`): literals,
//! the schedule's constants, WGSL's integer operations (`consts`), and the immutable
//! locals, whose one `let` gives their value wherever they are read. Nothing else is
//! assumed: a parameter, a builtin or a `var` has no known zero bits.
//!
//! Part of `emit_cuda` (layer 3).

use crate::consts::{self, Const, Value};
use crate::model::*;
use std::collections::HashMap;

/// Known low zero bits of the kernel's integer expressions, for one schedule.
pub(crate) struct Align<'k> {
    sched: &'k SchedPoint,
    /// Each immutable local's initial value: its value everywhere it is read.
    lets: HashMap<LocalId, &'k Expr>,
    /// Locals being evaluated: a guard against a cycle the model should never hold.
    open: Vec<LocalId>,
}

impl<'k> Align<'k> {
    /// The facts of `f`, the kernel's function made concrete for schedule `sched`.
    pub fn new(f: &'k Func, sched: &'k SchedPoint) -> Self {
        let mut lets = HashMap::new();
        walk_stmts(&f.body, &mut |s| {
            if let Stmt::Let {
                local,
                init: Some(init),
            } = s
            {
                let l = &f.locals[*local];
                if !l.mutable && !l.assigned && !l.shared && l.by_ref.is_none() {
                    lets.insert(*local, init);
                }
            }
        });
        Align {
            sched,
            lets,
            open: Vec::new(),
        }
    }

    /// How many low bits of `e`'s value are zero in every invocation (32 for zero); 0 for
    /// what is not a 32-bit integer or not known. Wrapping arithmetic keeps the count:
    /// `2^j` divides `x mod 2^32` wherever it divides `x`.
    pub fn zero_bits(&mut self, e: &Expr) -> u32 {
        if !matches!(e.ty, Ty::Scalar(Scalar::U32 | Scalar::I32)) {
            return 0;
        }
        match self.value(e) {
            Some(Const::U(v)) => return v.trailing_zeros(),
            Some(Const::I(v)) => return v.trailing_zeros(),
            _ => {}
        }
        let shift = |b: &Expr, this: &mut Self| match this.value(b) {
            Some(Const::U(s)) => Some(s & 31),
            Some(Const::I(s)) => Some(s as u32 & 31),
            _ => None,
        };
        match &e.kind {
            ExprKind::Local(id) => self.local(*id),
            ExprKind::Cast(a) => self.zero_bits(a),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Add | BinOp::Sub | BinOp::BitOr | BinOp::BitXor => {
                    self.zero_bits(a).min(self.zero_bits(b))
                }
                BinOp::Mul => (self.zero_bits(a) + self.zero_bits(b)).min(32),
                BinOp::BitAnd => self.zero_bits(a).max(self.zero_bits(b)),
                BinOp::Shl => match shift(b, self) {
                    Some(s) => (self.zero_bits(a) + s).min(32),
                    None => 0,
                },
                // `x >> s` (logical or arithmetic) keeps the zero bits above `s`.
                BinOp::Shr => match shift(b, self) {
                    Some(s) => self.zero_bits(a).saturating_sub(s),
                    None => 0,
                },
                // By a constant power of two `2^j`: `x / 2^j` keeps the zero bits above
                // `j`, and `x % 2^j` (non-negative `x`: `u32` only) is `x & (2^j - 1)`.
                // WGSL's `x / 0` is `x`; an `i32` quotient rounds toward zero, which a
                // shift does not, so only `u32` is taken.
                BinOp::Div | BinOp::Rem if e.ty == Ty::Scalar(Scalar::U32) => match self.value(b) {
                    Some(Const::U(d)) if d.is_power_of_two() => {
                        let z = self.zero_bits(a);
                        match op {
                            BinOp::Div => z.saturating_sub(d.trailing_zeros()),
                            _ => z,
                        }
                    }
                    Some(Const::U(0)) => self.zero_bits(a),
                    _ => 0,
                },
                _ => 0,
            },
            _ => 0,
        }
    }

    fn local(&mut self, id: LocalId) -> u32 {
        let Some(init) = self.lets.get(&id).copied() else {
            return 0;
        };
        if self.open.contains(&id) {
            return 0;
        }
        self.open.push(id);
        let z = self.zero_bits(init);
        self.open.pop();
        z
    }

    /// `e`'s value where it is the same constant in every invocation.
    fn value(&mut self, e: &Expr) -> Option<Const> {
        consts::eval(self, e).map(|v| v.c)
    }
}

impl consts::Env for Align<'_> {
    type Tag = ();

    fn literal_tag(&self) {}

    fn join(&self, _: (), _: ()) {}

    fn folds(&self, c: &Const) -> bool {
        !matches!(c, Const::F(_))
    }

    fn local(&mut self, id: LocalId) -> Option<Value<()>> {
        let init = self.lets.get(&id).copied()?;
        if self.open.contains(&id) {
            return None;
        }
        self.open.push(id);
        let v = consts::eval(self, init);
        self.open.pop();
        v
    }

    fn sched(&mut self, c: SchedConst) -> Option<Value<()>> {
        Some(Value {
            c: Const::U(self.sched.get(c)),
            tag: (),
        })
    }
}
