//! `tune(.., keep = EXPR)`: the condition a combination of the tuning space's candidates must
//! meet to be a schedule of the kernel, such as `ITEMS < 8 || WG == 256` where a tile
//! shape needs enough subgroups to hold it. The macro evaluates it for each combination at
//! compile time: a dropped combination gets no body, no check and no certification, and
//! `forge_core::TuneSpace::dropped` lists it for the runtime.
//!
//! Part of `model` (layer 1).

use super::sched::{SchedConst, SchedPoint};

/// A `keep` condition over literals and the schedule's constants (`WG`, `ITEMS`, `VEC`,
/// `WG_X`.., the knobs), with `u32` arithmetic, comparisons and `&&`, `||`, `!`.
#[derive(Clone, Debug)]
pub enum KeepExpr {
    Int(u32),
    Bool(bool),
    Sched(SchedConst),
    Not(Box<KeepExpr>),
    Bin(KeepOp, Box<KeepExpr>, Box<KeepExpr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// A value of a `keep` expression: `u32` arithmetic, or a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeepValue {
    Int(u32),
    Bool(bool),
}

/// `keep = EXPR` as the kernel wrote it: the condition, its text (which `forge list` shows)
/// and its tokens (where errors point).
#[derive(Clone, Debug)]
pub struct Keep {
    pub expr: KeepExpr,
    pub text: String,
    pub syn: syn::Expr,
}

impl KeepOp {
    /// Whether the operator yields a condition (comparisons, `&&`, `||`).
    pub fn is_condition(self) -> bool {
        !matches!(
            self,
            KeepOp::Add | KeepOp::Sub | KeepOp::Mul | KeepOp::Div | KeepOp::Rem
        )
    }
}

impl KeepExpr {
    /// The value at schedule `s`. Errors: arithmetic that overflows `u32` or divides by
    /// zero, and operands of the wrong kind (`WG && 2`), each as a message.
    pub fn eval(&self, s: &SchedPoint) -> Result<KeepValue, String> {
        use KeepValue::{Bool, Int};
        Ok(match self {
            KeepExpr::Int(v) => Int(*v),
            KeepExpr::Bool(b) => Bool(*b),
            KeepExpr::Sched(c) => Int(s.get(*c)),
            KeepExpr::Not(a) => match a.eval(s)? {
                Bool(b) => Bool(!b),
                Int(_) => return Err("`!` takes a condition, not a number".into()),
            },
            KeepExpr::Bin(op, a, b) => {
                // `&&` and `||` short-circuit, as in Rust: `WG >= 64 && 4096 / (WG - 64) > 8`
                // does not divide by zero at `WG = 64`.
                let a = a.eval(s)?;
                match (op, a) {
                    (KeepOp::And, Bool(false)) => return Ok(Bool(false)),
                    (KeepOp::Or, Bool(true)) => return Ok(Bool(true)),
                    _ => {}
                }
                let b = b.eval(s)?;
                match (a, b) {
                    (Int(x), Int(y)) => binary_int(*op, x, y)?,
                    (Bool(x), Bool(y)) => match op {
                        KeepOp::And => Bool(x && y),
                        KeepOp::Or => Bool(x || y),
                        KeepOp::Eq => Bool(x == y),
                        KeepOp::Ne => Bool(x != y),
                        _ => return Err(format!("`{}` takes numbers, not conditions", op.text())),
                    },
                    _ => {
                        return Err(format!(
                            "`{}` takes two numbers or two conditions, not one of each",
                            op.text()
                        ))
                    }
                }
            }
        })
    }
}

fn binary_int(op: KeepOp, x: u32, y: u32) -> Result<KeepValue, String> {
    use KeepValue::{Bool, Int};
    let arith = |v: Option<u32>| {
        v.map(Int)
            .ok_or_else(|| format!("`{x} {} {y}` overflows `u32` or divides by zero", op.text()))
    };
    match op {
        KeepOp::Add => arith(x.checked_add(y)),
        KeepOp::Sub => arith(x.checked_sub(y)),
        KeepOp::Mul => arith(x.checked_mul(y)),
        KeepOp::Div => arith(x.checked_div(y)),
        KeepOp::Rem => arith(x.checked_rem(y)),
        KeepOp::Eq => Ok(Bool(x == y)),
        KeepOp::Ne => Ok(Bool(x != y)),
        KeepOp::Lt => Ok(Bool(x < y)),
        KeepOp::Le => Ok(Bool(x <= y)),
        KeepOp::Gt => Ok(Bool(x > y)),
        KeepOp::Ge => Ok(Bool(x >= y)),
        KeepOp::And | KeepOp::Or => Err(format!("`{}` takes conditions, not numbers", op.text())),
    }
}

impl KeepOp {
    pub fn text(self) -> &'static str {
        match self {
            KeepOp::Add => "+",
            KeepOp::Sub => "-",
            KeepOp::Mul => "*",
            KeepOp::Div => "/",
            KeepOp::Rem => "%",
            KeepOp::Eq => "==",
            KeepOp::Ne => "!=",
            KeepOp::Lt => "<",
            KeepOp::Le => "<=",
            KeepOp::Gt => ">",
            KeepOp::Ge => ">=",
            KeepOp::And => "&&",
            KeepOp::Or => "||",
        }
    }
}

impl Keep {
    /// Whether `s` is kept: the condition holds. An error (which `check` reports) keeps it.
    pub fn keeps(&self, s: &SchedPoint) -> bool {
        !matches!(self.expr.eval(s), Ok(KeepValue::Bool(false)))
    }
}
