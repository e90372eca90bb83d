//! WGSL's constant evaluation of scalar operations: the one evaluator that `check` (which
//! reports what WGSL's constant evaluation rejects) and `unroll` (which folds the indices
//! an unrolled loop makes constant) share, so that both agree with naga and with each
//! other on every value.

use crate::model::{BinOp, Scalar, UnOp};

/// A constant scalar of the kernel language.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    U(u32),
    I(i32),
    F(f32),
    B(bool),
}

impl Const {
    /// `op` on a constant: `-` on `i32` wraps (`-i32::MIN` is `i32::MIN`, as WGSL's
    /// two's complement gives); `None` where the operand's type has no such operator.
    pub fn unary(op: UnOp, a: Const) -> Option<Const> {
        Some(match (op, a) {
            (UnOp::Neg, Const::I(x)) => Const::I(x.wrapping_neg()),
            (UnOp::Neg, Const::F(x)) => Const::F(-x),
            (UnOp::Not, Const::B(x)) => Const::B(!x),
            (UnOp::Not, Const::U(x)) => Const::U(!x),
            (UnOp::Not, Const::I(x)) => Const::I(!x),
            _ => return None,
        })
    }

    /// `a as T` between the 32-bit scalars: integers keep their bits, integers to `f32`
    /// round to nearest; `None` for float to integer (WGSL saturates where Rust's `as`
    /// does too, but not for NaN) and for the types this evaluator does not model.
    pub fn cast(self, to: Scalar) -> Option<Const> {
        Some(match (self, to) {
            (Const::U(x), Scalar::I32) => Const::I(x as i32),
            (Const::I(x), Scalar::U32) => Const::U(x as u32),
            (Const::U(x), Scalar::F32) => Const::F(x as f32),
            (Const::I(x), Scalar::F32) => Const::F(x as f32),
            (c @ Const::U(_), Scalar::U32)
            | (c @ Const::I(_), Scalar::I32)
            | (c @ Const::F(_), Scalar::F32) => c,
            _ => return None,
        })
    }

    /// WGSL's `a op b` on two constants of one type. Integer `+ - *` wrap; shift amounts
    /// are taken modulo 32 (as the emitted code masks them); float arithmetic is IEEE's
    /// and may give infinities or NaN, which the caller judges. `None` for the operations
    /// that are errors (integer division or remainder by zero, `i32::MIN / -1` and
    /// `i32::MIN % -1`), for mixed types, and for the operators a type lacks.
    pub fn binary(op: BinOp, a: Const, b: Const) -> Option<Const> {
        use BinOp::*;
        if op.is_shift() {
            let s = match b {
                Const::U(y) => y,
                Const::I(y) => y as u32,
                _ => return None,
            } & 31;
            return match (a, op) {
                (Const::U(x), Shl) => Some(Const::U(x << s)),
                (Const::U(x), _) => Some(Const::U(x >> s)),
                (Const::I(x), Shl) => Some(Const::I(x << s)),
                (Const::I(x), _) => Some(Const::I(x >> s)),
                _ => None,
            };
        }
        Some(match (a, b) {
            (Const::U(x), Const::U(y)) => int_op(op, x.into(), y.into(), false)?,
            (Const::I(x), Const::I(y)) => int_op(op, x.into(), y.into(), true)?,
            (Const::F(x), Const::F(y)) => match op {
                Add => Const::F(x + y),
                Sub => Const::F(x - y),
                Mul => Const::F(x * y),
                Div => Const::F(x / y),
                Rem => Const::F(x % y),
                _ => Const::B(compare(op, x, y)?),
            },
            (Const::B(x), Const::B(y)) => match op {
                And | BitAnd => Const::B(x && y),
                Or | BitOr => Const::B(x || y),
                BitXor | Ne => Const::B(x != y),
                Eq => Const::B(x == y),
                _ => return None,
            },
            _ => return None,
        })
    }
}

/// An integer operation (not a shift) on two `u32`s or two `i32`s, computed exactly in
/// `i64` and wrapped to 32 bits.
fn int_op(op: BinOp, x: i64, y: i64, signed: bool) -> Option<Const> {
    use BinOp::*;
    let wrap = |v: i64| match signed {
        true => Const::I(v as i32),
        false => Const::U(v as u32),
    };
    if matches!(op, Div | Rem) && (y == 0 || signed && x == i32::MIN as i64 && y == -1) {
        return None;
    }
    Some(match op {
        Add => wrap(x + y),
        Sub => wrap(x - y),
        Mul => wrap(x.wrapping_mul(y)),
        Div => wrap(x / y),
        Rem => wrap(x % y),
        BitAnd => wrap(x & y),
        BitOr => wrap(x | y),
        BitXor => wrap(x ^ y),
        _ => Const::B(compare(op, x, y)?),
    })
}

/// A comparison operator on two values (IEEE's for floats: NaN is unordered); `None` for
/// the other operators.
fn compare<T: PartialOrd>(op: BinOp, x: T, y: T) -> Option<bool> {
    Some(match op {
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_operations_wrap_and_refuse_what_wgsl_rejects() {
        use BinOp::*;
        let (u, i) = (Const::U, Const::I);
        assert_eq!(Const::binary(Add, u(u32::MAX), u(2)), Some(u(1)));
        assert_eq!(Const::binary(Sub, u(0), u(1)), Some(u(u32::MAX)));
        assert_eq!(Const::binary(Mul, i(i32::MAX), i(2)), Some(i(-2)));
        assert_eq!(Const::binary(Div, i(-7), i(2)), Some(i(-3)));
        assert_eq!(Const::binary(Rem, i(-7), i(2)), Some(i(-1)));
        assert_eq!(Const::binary(Div, u(7), u(0)), None);
        assert_eq!(Const::binary(Rem, i(7), i(0)), None);
        assert_eq!(Const::binary(Div, i(i32::MIN), i(-1)), None);
        assert_eq!(Const::binary(Rem, i(i32::MIN), i(-1)), None);
        assert_eq!(Const::binary(Shl, u(1), u(33)), Some(u(2)));
        assert_eq!(Const::binary(Shr, i(-8), u(1)), Some(i(-4)));
        assert_eq!(Const::binary(Lt, i(-1), i(0)), Some(Const::B(true)));
        assert_eq!(Const::binary(Add, u(1), i(1)), None);
        assert_eq!(Const::binary(And, u(1), u(1)), None);
        assert_eq!(
            Const::binary(BitXor, Const::B(true), Const::B(true)),
            Some(Const::B(false))
        );
        assert_eq!(Const::unary(UnOp::Neg, i(i32::MIN)), Some(i(i32::MIN)));
        assert_eq!(Const::unary(UnOp::Not, u(0)), Some(u(u32::MAX)));
        assert_eq!(Const::unary(UnOp::Neg, u(1)), None);
        assert_eq!(u(u32::MAX).cast(Scalar::I32), Some(i(-1)));
        assert_eq!(Const::F(1.5).cast(Scalar::U32), None);
        assert_eq!(
            Const::binary(Div, Const::F(1.0), Const::F(0.0)),
            Some(Const::F(f32::INFINITY))
        );
    }
}
