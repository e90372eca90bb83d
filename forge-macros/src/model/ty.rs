//! Types of the kernel language, and the compile-time lengths of its arrays.
//!
//! Part of `model` (layer 1).

use super::sched::{SchedConst, SchedPoint};

/// Index of a local variable in [`Kernel::locals`](super::Kernel::locals).
pub type LocalId = usize;

/// A scalar type of the kernel language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    F32,
    U32,
    I32,
    F16,
    /// Where the adapter has `SHADER_F64`.
    F64,
    Bool,
}

impl Scalar {
    pub fn wgsl(self) -> &'static str {
        match self {
            Scalar::F32 => "f32",
            Scalar::U32 => "u32",
            Scalar::I32 => "i32",
            Scalar::F16 => "f16",
            Scalar::F64 => "f64",
            Scalar::Bool => "bool",
        }
    }

    /// The `forge_core::ScalarType` variant name.
    pub fn core_variant(self) -> &'static str {
        match self {
            Scalar::F32 => "F32",
            Scalar::U32 => "U32",
            Scalar::I32 => "I32",
            Scalar::F16 => "F16",
            Scalar::F64 => "F64",
            Scalar::Bool => "Bool",
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Scalar::U32 | Scalar::I32)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F16 | Scalar::F64)
    }

    pub fn size(self) -> u32 {
        match self {
            Scalar::F16 => 2,
            Scalar::F64 => 8,
            _ => 4,
        }
    }
}

/// A compile-time length: a literal, or an expression over the schedule's constants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConstLen {
    Lit(u32),
    Sched(CExpr),
}

/// A `u32` expression over literals and the schedule's constants (`WG * 2`, `TILE + 1`),
/// as array lengths use them: evaluated for each schedule by `eval`, and written out by
/// the emitters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CExpr {
    Lit(u32),
    Sched(SchedConst),
    Bin(LenOp, Box<CExpr>, Box<CExpr>),
    /// A length parameter of a `#[forge_fn]` helper (`const N: usize`), by the helper's
    /// local that holds its value, and its name for messages. Only a helper's own types
    /// hold one: inlining a call replaces it by the length the call gives it.
    Param(LocalId, String),
}

impl CExpr {
    /// The value for a schedule; `None` when a step overflows `u32` or divides by zero,
    /// which `check` reports.
    pub fn eval(&self, s: &SchedPoint) -> Option<u32> {
        Some(match self {
            CExpr::Lit(v) => *v,
            CExpr::Sched(c) => s.get(*c),
            CExpr::Bin(op, a, b) => {
                let (a, b) = (a.eval(s)?, b.eval(s)?);
                match op {
                    LenOp::Add => a.checked_add(b)?,
                    LenOp::Sub => a.checked_sub(b)?,
                    LenOp::Mul => a.checked_mul(b)?,
                    LenOp::Div => a.checked_div(b)?,
                    LenOp::Rem => a.checked_rem(b)?,
                }
            }
            CExpr::Param(..) => return None,
        })
    }

    /// Whether it is literals alone, which `ConstLen::Lit` holds evaluated.
    fn is_lit(&self) -> bool {
        match self {
            CExpr::Lit(_) => true,
            CExpr::Sched(_) | CExpr::Param(..) => false,
            CExpr::Bin(_, a, b) => a.is_lit() && b.is_lit(),
        }
    }

    fn mentions(&self, p: LocalId) -> bool {
        match self {
            CExpr::Param(l, _) => *l == p,
            CExpr::Bin(_, a, b) => a.mentions(p) || b.mentions(p),
            CExpr::Lit(_) | CExpr::Sched(_) => false,
        }
    }

    fn subst(&self, lens: &[(LocalId, ConstLen)]) -> CExpr {
        match self {
            CExpr::Param(l, _) => match lens.iter().find(|(p, _)| p == l) {
                Some((_, ConstLen::Lit(v))) => CExpr::Lit(*v),
                Some((_, ConstLen::Sched(c))) => c.clone(),
                None => self.clone(),
            },
            CExpr::Bin(op, a, b) => {
                CExpr::Bin(*op, Box::new(a.subst(lens)), Box::new(b.subst(lens)))
            }
            other => other.clone(),
        }
    }
}

impl ConstLen {
    /// The length parameter this length is, when it is one alone (`[T; N]`).
    pub fn param(&self) -> Option<LocalId> {
        match self {
            ConstLen::Sched(CExpr::Param(l, _)) => Some(*l),
            _ => None,
        }
    }

    /// The length with each length parameter that `lens` gives replaced by its length; a
    /// length of literals alone is evaluated, as `[T; 4 * 2]` is where it is written.
    pub fn subst(&self, lens: &[(LocalId, ConstLen)]) -> ConstLen {
        let ConstLen::Sched(c) = self else {
            return self.clone();
        };
        let c = c.subst(lens);
        let none = SchedPoint::new(&[0], 0, 0);
        match c.eval(&none) {
            Some(v) if c.is_lit() && v > 0 => ConstLen::Lit(v),
            _ => ConstLen::Sched(c),
        }
    }
}

/// A type of the kernel language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Scalar(Scalar),
    /// A vector of 2, 3 or 4 components (`Vec4`, `UVec2`, ...).
    Vector(Scalar, u8),
    /// A fixed-size array: a local or workgroup array.
    Array(Box<Ty>, ConstLen),
    /// A `#[forge_struct]`, by index into `Kernel::structs`.
    Struct(usize),
    /// A 16×16 cooperative matrix (`CoopA<f16>`, `CoopB<f16>`, `CoopC<f32>`): a value
    /// that a subgroup holds together, WGSL's `coop_mat16x16<T, R>`; or `CoopRow`, a
    /// value for each of such a matrix's 16 rows, which the subgroup holds in the layout
    /// of its accumulators.
    Coop(Scalar, CoopRole),
}

/// The role of a cooperative matrix in `a.mul_add(b, c)`: `A` (16×16 left operand), `B`
/// (right operand) or `C` (the accumulator and the result); or `Row`, the `f32` values of
/// an accumulator's 16 rows (`c.row_max()`), laid out as the accumulator is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoopRole {
    A,
    B,
    C,
    Row,
}

impl CoopRole {
    /// The kernel language's type name.
    pub fn type_name(self) -> &'static str {
        match self {
            CoopRole::A => "CoopA",
            CoopRole::B => "CoopB",
            CoopRole::C => "CoopC",
            CoopRole::Row => "CoopRow",
        }
    }

    /// WGSL's role letter.
    pub fn wgsl(self) -> &'static str {
        match self {
            CoopRole::A => "A",
            CoopRole::B => "B",
            CoopRole::C => "C",
            CoopRole::Row => "R",
        }
    }

    /// The one element type the language allows for the role: `f16` operands, an `f32`
    /// accumulator (the 16×16×16 configuration that NVIDIA's Vulkan driver lists).
    pub fn elem(self) -> Scalar {
        match self {
            CoopRole::A | CoopRole::B => Scalar::F16,
            CoopRole::C | CoopRole::Row => Scalar::F32,
        }
    }
}

impl Ty {
    pub const I32: Ty = Ty::Scalar(Scalar::I32);
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);

    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// The scalar of a scalar or the component type of a vector.
    pub fn component(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) | Ty::Vector(s, _) => Some(*s),
            _ => None,
        }
    }

    pub fn is_vector(&self) -> bool {
        matches!(self, Ty::Vector(..))
    }

    /// The type with the length parameters that `lens` gives replaced (see
    /// `ConstLen::subst`).
    pub fn subst(&self, lens: &[(LocalId, ConstLen)]) -> Ty {
        match self {
            Ty::Array(e, len) => Ty::Array(Box::new(e.subst(lens)), len.subst(lens)),
            t => t.clone(),
        }
    }

    /// Whether an array length of the type uses length parameter `p`.
    pub fn mentions(&self, p: LocalId) -> bool {
        match self {
            Ty::Array(e, ConstLen::Sched(c)) => c.mentions(p) || e.mentions(p),
            Ty::Array(e, ConstLen::Lit(_)) => e.mentions(p),
            _ => false,
        }
    }

    /// Whether this is a cooperative matrix, or an array of them.
    pub fn is_coop(&self) -> bool {
        match self {
            Ty::Coop(..) => true,
            Ty::Array(e, _) => e.is_coop(),
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl LenOp {
    /// The operator, as Rust, WGSL and C write it.
    pub fn symbol(self) -> &'static str {
        match self {
            LenOp::Add => "+",
            LenOp::Sub => "-",
            LenOp::Mul => "*",
            LenOp::Div => "/",
            LenOp::Rem => "%",
        }
    }
}

/// Fixes the length parameters of a helper's parameter type `param` (`&mut [u32; N]`)
/// from the type of the argument a call gives it, adding each to `lens`: a parameter that
/// is an array's whole length takes the argument's length there. On a disagreement with
/// a length fixed before: the parameter, the length before and this one.
pub fn bind_lens(
    param: &Ty,
    arg: &Ty,
    lens: &mut Vec<(LocalId, ConstLen)>,
) -> Result<(), (LocalId, ConstLen, ConstLen)> {
    let (Ty::Array(pe, plen), Ty::Array(ae, alen)) = (param, arg) else {
        return Ok(());
    };
    if let Some(p) = plen.param() {
        match lens.iter().find(|(l, _)| *l == p) {
            None => lens.push((p, alen.clone())),
            Some((_, before)) if before != alen => return Err((p, before.clone(), alen.clone())),
            Some(_) => {}
        }
    }
    bind_lens(pe, ae, lens)
}
