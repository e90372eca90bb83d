//! Constants, layer 2: WGSL's constant evaluation of scalar operations, the one evaluator
//! that `check` (which reports what WGSL's constant evaluation rejects) and `unroll` (which
//! folds the indices an unrolled loop makes constant) share, so that both agree with naga
//! and with each other on every value; and the `f16` a float literal is.

use crate::model::{BinOp, Expr, ExprKind, LocalId, MathFn, Scalar, SchedConst, Ty, UnOp};

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

/// A constant value, and what the caller tracks of how it was made (its `Env::Tag`).
#[derive(Clone, Copy, Debug)]
pub struct Value<T> {
    pub c: Const,
    pub tag: T,
}

/// What an evaluation needs beyond the expression: the values of names, and what to do
/// at the operations where the caller has something to say. The unroller folds what it
/// can and keeps floats as written; the checker reports what WGSL's constant evaluation
/// rejects.
pub trait Env {
    /// What a value carries besides itself: the unroller's "comes from an unrolled loop",
    /// the checker's "computed from literals only" and "depends on the schedule".
    type Tag: Copy;

    /// The tag of a literal.
    fn literal_tag(&self) -> Self::Tag;

    /// The tag of an operation's result, from its operands'.
    fn join(&self, a: Self::Tag, b: Self::Tag) -> Self::Tag;

    /// Whether a value of this kind folds: a literal, or a cast's result (the unroller
    /// leaves floats as written).
    fn folds(&self, _c: &Const) -> bool {
        true
    }

    /// A local's value, where it is a known constant.
    fn local(&mut self, id: LocalId) -> Option<Value<Self::Tag>>;

    /// A schedule constant's value.
    fn sched(&mut self, c: SchedConst) -> Option<Value<Self::Tag>>;

    /// `a op b`, given the operands' values where they are constant (both are evaluated
    /// first, always): the result, or `None` where it does not fold.
    fn binary(
        &mut self,
        _e: &Expr,
        op: BinOp,
        a: Option<Value<Self::Tag>>,
        b: Option<Value<Self::Tag>>,
    ) -> Option<Const> {
        Const::binary(op, a?.c, b?.c)
    }

    /// A math function, given its arguments' values where they are constant, before it
    /// folds (`min`, `max` and `div_ceil` on integers do).
    fn math(&mut self, _e: &Expr, _f: MathFn, _args: &[Option<Value<Self::Tag>>]) {}

    /// An expression that is never constant (an element read, a call, a select, ..).
    fn opaque(&mut self, _e: &Expr) {}
}

/// The value of an expression where it is constant: literals, schedule constants and the
/// locals `env` knows, under WGSL's scalar operations (`Const`). Every operand is
/// evaluated, constant or not, so that `env` sees every operation.
pub fn eval<E: Env + ?Sized>(env: &mut E, e: &Expr) -> Option<Value<E::Tag>> {
    let lit = |env: &E, c: Const| {
        env.folds(&c).then(|| Value {
            c,
            tag: env.literal_tag(),
        })
    };
    match &e.kind {
        ExprKind::IntLit(v) => match e.ty {
            Ty::Scalar(Scalar::U32) => lit(env, Const::U(*v as u32)),
            Ty::Scalar(Scalar::I32) => lit(env, Const::I(*v as i32)),
            _ => None,
        },
        ExprKind::FloatLit(v) => match e.ty {
            Ty::Scalar(Scalar::F32) => lit(env, Const::F(*v as f32)),
            _ => None,
        },
        ExprKind::BoolLit(b) => lit(env, Const::B(*b)),
        ExprKind::Sched(c) => env.sched(*c),
        ExprKind::Local(id) => env.local(*id),
        ExprKind::Unary(op, a) => {
            let v = eval(env, a)?;
            let c = Const::unary(*op, v.c)?;
            Some(Value { c, ..v })
        }
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (eval(env, a), eval(env, b));
            let c = env.binary(e, *op, x, y)?;
            let (x, y) = (x?, y?);
            Some(Value {
                c,
                tag: env.join(x.tag, y.tag),
            })
        }
        ExprKind::Cast(a) => {
            let v = eval(env, a)?;
            let c = v.c.cast(e.ty.scalar()?)?;
            env.folds(&c).then_some(Value { c, ..v })
        }
        ExprKind::Math(f, args) => {
            let vals: Vec<_> = args.iter().map(|a| eval(env, a)).collect();
            env.math(e, *f, &vals);
            let (x, y) = (vals.first().copied()??, vals.get(1).copied()??);
            let c = match (f, x.c, y.c) {
                (MathFn::Min, Const::U(a), Const::U(b)) => Const::U(a.min(b)),
                (MathFn::Min, Const::I(a), Const::I(b)) => Const::I(a.min(b)),
                (MathFn::Max, Const::U(a), Const::U(b)) => Const::U(a.max(b)),
                (MathFn::Max, Const::I(a), Const::I(b)) => Const::I(a.max(b)),
                (MathFn::DivCeil, Const::U(a), Const::U(b)) if b != 0 => Const::U(a.div_ceil(b)),
                _ => return None,
            };
            Some(Value {
                c,
                tag: env.join(x.tag, y.tag),
            })
        }
        _ => {
            env.opaque(e);
            None
        }
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

/// The bits of the `f16` nearest to `v`, ties to even: the value a literal of an `f16`
/// has, in WGSL (`1.5h`), in CUDA and in the oracle.
///
/// `half` rounds an `f32` correctly, but not every `f64`: its software conversion drops the
/// low 32 bits of the mantissa before rounding, and with F16C it rounds to `f32` first,
/// each of which can turn a value just past a tie into the tie. So `v` is first rounded to
/// `f32` by round-to-odd (toward zero, the last bit set when inexact), which keeps every
/// bit that rounding to `f16` needs (`f32` has 13 bits more than `f16`: "When double
/// rounding is odd", Boldo and Melquiond, 2005), and `half` rounds that.
pub fn f16_bits(v: f64) -> u16 {
    if !v.is_finite() {
        return half::f16::from_f64(v).to_bits();
    }
    let nearest = v as f32;
    let odd = if nearest as f64 == v {
        nearest
    } else {
        // Toward zero: one step back when rounding went away from it (to infinity
        // included), then the sticky bit in the last place.
        let mut bits = nearest.to_bits();
        if (nearest as f64).abs() > v.abs() {
            bits -= 1;
        }
        f32::from_bits(bits | 1)
    };
    half::f16::from_f32(odd).to_bits()
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

    #[test]
    fn f16_rounding_is_to_the_nearest_with_ties_to_even() {
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(1.0 + 2f64.powi(-11)), 0x3c00, "a tie goes to even");
        assert_eq!(
            f16_bits(1.0 + 3.0 * 2f64.powi(-11)),
            0x3c02,
            "a tie goes to even"
        );
        assert_eq!(f16_bits(4.3535186918169995), 0x445b, "just above a tie: up");
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(65519.99), 0x7bff);
        assert_eq!(f16_bits(65520.0), 0x7c00);
        assert_eq!(f16_bits(-1e9), 0xfc00);
        assert_eq!(f16_bits(1e300), 0x7c00);
        assert_eq!(f16_bits(2f64.powi(-24)), 0x0001, "the smallest subnormal");
        assert_eq!(f16_bits(2f64.powi(-25)), 0x0000, "half of it ties to zero");
        assert_eq!(
            f16_bits(f64::from_bits(2f64.powi(-25).to_bits() + 1)),
            0x0001,
            "past the tie: up"
        );
        assert_eq!(f16_bits(1e-300), 0x0000);
        assert_eq!(f16_bits(-1e-300), 0x8000);
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(0.1), 0x2e66);
        assert_eq!(f16_bits(f64::INFINITY), 0x7c00);
        assert!(half::f16::from_bits(f16_bits(f64::NAN)).is_nan());
        // Every f16 converts to itself.
        for bits in (0..0x7c00u16).chain(0x8000..0xfc00) {
            let v = half::f16::from_bits(bits).to_f64();
            assert_eq!(f16_bits(v), bits, "{v}");
        }
    }

    /// The nearest `f16` computed another way, exactly in `f64`: `v` divided by the spacing
    /// of the `f16` values at its magnitude, rounded to an even integer, times it again.
    fn f16_bits_by_spacing(v: f64) -> u16 {
        let a = v.abs();
        if a >= 65520.0 {
            return if v > 0.0 { 0x7c00 } else { 0xfc00 };
        }
        let exp = if a < 2f64.powi(-14) {
            -14
        } else {
            ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
        };
        let q = 2f64.powi(exp - 10);
        let r = (a / q).round_ties_even() * q;
        half::f16::from_f64(r.copysign(v)).to_bits()
    }

    #[test]
    fn f16_rounding_agrees_with_rounding_by_the_spacing_near_every_tie() {
        // Each tie between neighbouring f16 values, and the f64s just around it, where a
        // conversion that rounds twice goes wrong; and a spread of other values.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for bits in (0..0x7bffu16).step_by(7) {
            let (lo, hi) = (
                half::f16::from_bits(bits).to_f64(),
                half::f16::from_bits(bits + 1).to_f64(),
            );
            let tie = (lo + hi) / 2.0;
            // `tie` is positive: one step of its bits either way is the next f64.
            let (up, down) = (
                f64::from_bits(tie.to_bits() + 1),
                f64::from_bits(tie.to_bits() - 1),
            );
            for v in [tie, up, down, tie + (hi - lo) * 1e-9] {
                for v in [v, -v] {
                    assert_eq!(f16_bits(v), f16_bits_by_spacing(v), "{v:e}");
                }
            }
        }
        for _ in 0..100_000 {
            let v = f64::from_bits(next());
            if v.is_finite() {
                assert_eq!(f16_bits(v), f16_bits_by_spacing(v), "{v:e}");
            }
            let v = (next() as f64 / u64::MAX as f64 - 0.5) * 140000.0;
            assert_eq!(f16_bits(v), f16_bits_by_spacing(v), "{v:e}");
        }
    }
}
