//! Typed expressions and the operations they apply.
//!
//! Part of `model` (layer 1).

use super::sched::SchedConst;
use super::ty::{Scalar, Ty};
use proc_macro2::Span;

/// Index of a local variable in [`Kernel::locals`](super::Kernel::locals).
pub type LocalId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    GlobalIndex,
    LocalIndex,
    WorkgroupIndex,
    GlobalId,
    LocalId,
    WorkgroupId,
    NumWorkgroups,
    /// The invocation's lane in its subgroup.
    SubgroupInvocationId,
    SubgroupSize,
    /// The subgroup's index in the workgroup.
    SubgroupId,
    NumSubgroups,
}

impl Builtin {
    /// The call that reads it in the kernel language, for messages: `global_index()`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::GlobalIndex => "global_index()",
            Builtin::LocalIndex => "local_index()",
            Builtin::WorkgroupIndex => "workgroup_index()",
            Builtin::GlobalId => "global_id()",
            Builtin::LocalId => "local_id()",
            Builtin::WorkgroupId => "workgroup_id()",
            Builtin::NumWorkgroups => "num_workgroups()",
            Builtin::SubgroupInvocationId => "subgroup_invocation_id()",
            Builtin::SubgroupSize => "subgroup_size()",
            Builtin::SubgroupId => "subgroup_id()",
            Builtin::NumSubgroups => "num_subgroups()",
        }
    }

    /// Whether the value is the same for every invocation of a workgroup. The subgroup
    /// size is taken as one per dispatch, as Tint's uniformity analysis does in compute.
    pub fn uniform(self) -> bool {
        matches!(
            self,
            Builtin::WorkgroupIndex
                | Builtin::WorkgroupId
                | Builtin::NumWorkgroups
                | Builtin::SubgroupSize
                | Builtin::NumSubgroups
        )
    }

    /// Whether reading it needs the device's subgroup feature.
    pub fn is_subgroup(self) -> bool {
        matches!(
            self,
            Builtin::SubgroupInvocationId
                | Builtin::SubgroupSize
                | Builtin::SubgroupId
                | Builtin::NumSubgroups
        )
    }
}

/// The subgroup operations, named after WGSL's in snake case (`subgroup_add` is
/// `subgroupAdd`). Every one is collective: the invocations of a subgroup meet at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupOp {
    Add,
    Mul,
    Min,
    Max,
    And,
    Or,
    Xor,
    All,
    Any,
    ExclusiveAdd,
    InclusiveAdd,
    ExclusiveMul,
    InclusiveMul,
    /// `subgroup_broadcast(v, LANE)`, with a constant lane.
    Broadcast,
    BroadcastFirst,
    Shuffle,
    ShuffleXor,
    ShuffleDown,
    ShuffleUp,
    /// `subgroup_ballot(p)`: a `UVec4` with bit `i` set where lane `i`'s `p` holds.
    Ballot,
}

impl SubgroupOp {
    pub const ALL: [SubgroupOp; 20] = [
        SubgroupOp::Add,
        SubgroupOp::Mul,
        SubgroupOp::Min,
        SubgroupOp::Max,
        SubgroupOp::And,
        SubgroupOp::Or,
        SubgroupOp::Xor,
        SubgroupOp::All,
        SubgroupOp::Any,
        SubgroupOp::ExclusiveAdd,
        SubgroupOp::InclusiveAdd,
        SubgroupOp::ExclusiveMul,
        SubgroupOp::InclusiveMul,
        SubgroupOp::Broadcast,
        SubgroupOp::BroadcastFirst,
        SubgroupOp::Shuffle,
        SubgroupOp::ShuffleXor,
        SubgroupOp::ShuffleDown,
        SubgroupOp::ShuffleUp,
        SubgroupOp::Ballot,
    ];

    /// The kernel language's name.
    pub fn name(self) -> &'static str {
        match self {
            SubgroupOp::Add => "subgroup_add",
            SubgroupOp::Mul => "subgroup_mul",
            SubgroupOp::Min => "subgroup_min",
            SubgroupOp::Max => "subgroup_max",
            SubgroupOp::And => "subgroup_and",
            SubgroupOp::Or => "subgroup_or",
            SubgroupOp::Xor => "subgroup_xor",
            SubgroupOp::All => "subgroup_all",
            SubgroupOp::Any => "subgroup_any",
            SubgroupOp::ExclusiveAdd => "subgroup_exclusive_add",
            SubgroupOp::InclusiveAdd => "subgroup_inclusive_add",
            SubgroupOp::ExclusiveMul => "subgroup_exclusive_mul",
            SubgroupOp::InclusiveMul => "subgroup_inclusive_mul",
            SubgroupOp::Broadcast => "subgroup_broadcast",
            SubgroupOp::BroadcastFirst => "subgroup_broadcast_first",
            SubgroupOp::Shuffle => "subgroup_shuffle",
            SubgroupOp::ShuffleXor => "subgroup_shuffle_xor",
            SubgroupOp::ShuffleDown => "subgroup_shuffle_down",
            SubgroupOp::ShuffleUp => "subgroup_shuffle_up",
            SubgroupOp::Ballot => "subgroup_ballot",
        }
    }

    pub fn from_name(name: &str) -> Option<SubgroupOp> {
        SubgroupOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// WGSL's name.
    pub fn wgsl(self) -> &'static str {
        match self {
            SubgroupOp::Add => "subgroupAdd",
            SubgroupOp::Mul => "subgroupMul",
            SubgroupOp::Min => "subgroupMin",
            SubgroupOp::Max => "subgroupMax",
            SubgroupOp::And => "subgroupAnd",
            SubgroupOp::Or => "subgroupOr",
            SubgroupOp::Xor => "subgroupXor",
            SubgroupOp::All => "subgroupAll",
            SubgroupOp::Any => "subgroupAny",
            SubgroupOp::ExclusiveAdd => "subgroupExclusiveAdd",
            SubgroupOp::InclusiveAdd => "subgroupInclusiveAdd",
            SubgroupOp::ExclusiveMul => "subgroupExclusiveMul",
            SubgroupOp::InclusiveMul => "subgroupInclusiveMul",
            SubgroupOp::Broadcast => "subgroupBroadcast",
            SubgroupOp::BroadcastFirst => "subgroupBroadcastFirst",
            SubgroupOp::Shuffle => "subgroupShuffle",
            SubgroupOp::ShuffleXor => "subgroupShuffleXor",
            SubgroupOp::ShuffleDown => "subgroupShuffleDown",
            SubgroupOp::ShuffleUp => "subgroupShuffleUp",
            SubgroupOp::Ballot => "subgroupBallot",
        }
    }

    /// Whether the second argument is a lane (or a lane offset or mask).
    pub fn takes_lane(self) -> bool {
        matches!(
            self,
            SubgroupOp::Broadcast
                | SubgroupOp::Shuffle
                | SubgroupOp::ShuffleXor
                | SubgroupOp::ShuffleDown
                | SubgroupOp::ShuffleUp
        )
    }
}

/// A cooperative-matrix operation. Every one is collective: the invocations of a subgroup
/// meet at it with the same operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoopOp {
    /// `CoopC::zeroed()`: no arguments.
    Zero,
    /// `CoopA::load_row_major(&x[i], stride)` (or `load_col_major`): index, stride.
    Load { row_major: bool },
    /// `m.store_row_major(&mut x[i], stride)` (or `store_col_major`): matrix, index,
    /// stride; a statement.
    Store { row_major: bool },
    /// `a.mul_add(b, c)`, `a·b + c`: the three matrices.
    MulAdd,
}

impl CoopOp {
    /// The kernel language's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            CoopOp::Zero => "zeroed",
            CoopOp::Load { row_major: true } => "load_row_major",
            CoopOp::Load { row_major: false } => "load_col_major",
            CoopOp::Store { row_major: true } => "store_row_major",
            CoopOp::Store { row_major: false } => "store_col_major",
            CoopOp::MulAdd => "mul_add",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }

    pub fn wgsl(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// Built-in math and bit functions, reached as methods (`x.sqrt()`) or associated
/// functions (`f32::from_bits(u)`). Each keeps its Rust meaning on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    Abs,
    Min,
    Max,
    Clamp,
    Sqrt,
    Exp,
    Exp2,
    Ln,
    Log2,
    Sin,
    Cos,
    Tan,
    Tanh,
    Floor,
    Ceil,
    Round,
    RoundTiesEven,
    Trunc,
    Fract,
    MulAdd,
    Powf,
    Powi,
    Signum,
    Recip,
    ToBits,
    FromBits,
    CountOnes,
    LeadingZeros,
    TrailingZeros,
    ReverseBits,
    IsNan,
    IsFinite,
    DivCeil,
    Dot,
    Length,
    Normalize,
    WrappingAdd,
    WrappingSub,
    WrappingMul,
    Atan2,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Hypot,
    Log10,
    ToDegrees,
    ToRadians,
    RemEuclid,
    Cross,
    Distance,
    /// `dot4_i8_packed(a, b)`: the dot product of the four signed bytes of two `u32`s, an
    /// `i32` (WGSL's `dot4I8Packed`).
    Dot4I8Packed,
    /// `dot4_u8_packed(a, b)`: the same for unsigned bytes, a `u32` (`dot4U8Packed`).
    Dot4U8Packed,
}

impl MathFn {
    /// The method's (or free function's) name in the kernel language, for messages.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Abs => "abs",
            MathFn::Min => "min",
            MathFn::Max => "max",
            MathFn::Clamp => "clamp",
            MathFn::Sqrt => "sqrt",
            MathFn::Exp => "exp",
            MathFn::Exp2 => "exp2",
            MathFn::Ln => "ln",
            MathFn::Log2 => "log2",
            MathFn::Sin => "sin",
            MathFn::Cos => "cos",
            MathFn::Tan => "tan",
            MathFn::Tanh => "tanh",
            MathFn::Floor => "floor",
            MathFn::Ceil => "ceil",
            MathFn::Round => "round",
            MathFn::RoundTiesEven => "round_ties_even",
            MathFn::Trunc => "trunc",
            MathFn::Fract => "fract",
            MathFn::MulAdd => "mul_add",
            MathFn::Powf => "powf",
            MathFn::Powi => "powi",
            MathFn::Signum => "signum",
            MathFn::Recip => "recip",
            MathFn::ToBits => "to_bits",
            MathFn::FromBits => "from_bits",
            MathFn::CountOnes => "count_ones",
            MathFn::LeadingZeros => "leading_zeros",
            MathFn::TrailingZeros => "trailing_zeros",
            MathFn::ReverseBits => "reverse_bits",
            MathFn::IsNan => "is_nan",
            MathFn::IsFinite => "is_finite",
            MathFn::DivCeil => "div_ceil",
            MathFn::Dot => "dot",
            MathFn::Length => "length",
            MathFn::Normalize => "normalize",
            MathFn::WrappingAdd => "wrapping_add",
            MathFn::WrappingSub => "wrapping_sub",
            MathFn::WrappingMul => "wrapping_mul",
            MathFn::Atan2 => "atan2",
            MathFn::Asin => "asin",
            MathFn::Acos => "acos",
            MathFn::Atan => "atan",
            MathFn::Sinh => "sinh",
            MathFn::Cosh => "cosh",
            MathFn::Asinh => "asinh",
            MathFn::Acosh => "acosh",
            MathFn::Atanh => "atanh",
            MathFn::Hypot => "hypot",
            MathFn::Log10 => "log10",
            MathFn::ToDegrees => "to_degrees",
            MathFn::ToRadians => "to_radians",
            MathFn::RemEuclid => "rem_euclid",
            MathFn::Cross => "cross",
            MathFn::Distance => "distance",
            MathFn::Dot4I8Packed => "dot4_i8_packed",
            MathFn::Dot4U8Packed => "dot4_u8_packed",
        }
    }

    /// Whether GPUs compute it on `f64`: SPIR-V's GLSL.std.450 defines the transcendental
    /// functions (`Sin`, `Exp`, `Pow`, ...) for 16- and 32-bit floats only.
    pub fn on_f64(self) -> bool {
        !matches!(
            self,
            MathFn::Exp
                | MathFn::Exp2
                | MathFn::Ln
                | MathFn::Log2
                | MathFn::Log10
                | MathFn::Sin
                | MathFn::Cos
                | MathFn::Tan
                | MathFn::Tanh
                | MathFn::Asin
                | MathFn::Acos
                | MathFn::Atan
                | MathFn::Atan2
                | MathFn::Sinh
                | MathFn::Cosh
                | MathFn::Asinh
                | MathFn::Acosh
                | MathFn::Atanh
                | MathFn::Powf
                | MathFn::Powi
                | MathFn::ToBits
                | MathFn::FromBits
        )
    }
}

/// A typed expression.
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
    /// The span of the expression's last token: an error from `span` to `end` underlines
    /// the whole expression (see `Ctxt::error_range`).
    pub end: Span,
    /// The inference variable `parse` gave this expression; `ty` is its solution.
    pub tv: usize,
}

impl Expr {
    /// Whether this is a literal zero, or a vector or struct of them.
    pub fn is_zero(&self) -> bool {
        match &self.kind {
            ExprKind::IntLit(x) => *x == 0,
            ExprKind::FloatLit(x) => *x == 0.0 && x.is_sign_positive(),
            ExprKind::BoolLit(b) => !b,
            ExprKind::VecNew(args) | ExprKind::StructNew(_, args) => args.iter().all(Expr::is_zero),
            ExprKind::StructZero(_) => true,
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// Integer literal (two's complement bits for i32) or float literal.
    IntLit(i64),
    FloatLit(f64),
    BoolLit(bool),
    Local(LocalId),
    Scalar(usize),
    Sched(SchedConst),
    Builtin(Builtin),
    /// Component of a `*_id()` builtin: `global_id().x`.
    BuiltinComponent(Builtin, u8),
    /// Read of a storage binding element.
    LoadBinding(usize, Box<Expr>),
    /// Read of a local or workgroup array element.
    LoadArray(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>),
    Math(MathFn, Vec<Expr>),
    /// `[x; N]`
    ArrayRepeat(Box<Expr>),
    /// `[a, b, c]`
    ArrayList(Vec<Expr>),
    /// `target[i].fetch_add(v)` and the other atomic methods; the value is the old one
    /// (`load` gives the current one, `store` gives nothing and is a statement).
    Atomic {
        op: AtomicOp,
        target: AtomicTarget,
        index: Box<Expr>,
        args: Vec<Expr>,
    },
    /// `Vec4::new(a, b, c, d)` (one argument per component) or `Vec4::splat(x)` (one).
    VecNew(Vec<Expr>),
    /// `v.x` (one component) or `v.zyx()` (a swizzle), components as 0..=3.
    Swizzle(Box<Expr>, Vec<u8>),
    /// `Body { pos: a, vel: b }`: the struct and its fields' values in declaration order.
    StructNew(usize, Vec<Expr>),
    /// `Body::zeroed()`: every field zero.
    StructZero(usize),
    /// `b.vel`: a struct's field, by index.
    Field(Box<Expr>, usize),
    /// `select(if_false, if_true, cond)`, as WGSL's `select`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A call of a `#[forge_fn]` helper, by index into `Kernel::helpers`.
    Call(usize, Vec<Expr>),
    /// A subgroup operation: the value, then the lane for those that take one. `id`
    /// numbers the kernel's subgroup operations from 0, for the oracle's buffers.
    Subgroup {
        op: SubgroupOp,
        id: usize,
        args: Vec<Expr>,
    },
    /// A cooperative-matrix operation; `target` is the array a load or store reads or
    /// writes (a binding or a `#[shared]` array), `args` as `CoopOp` lists them.
    Coop {
        op: CoopOp,
        target: Option<AtomicTarget>,
        args: Vec<Expr>,
    },
}

/// What an atomic method works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicTarget {
    /// An `Atomic<u32>`/`Atomic<i32>` binding.
    Binding(usize),
    /// A workgroup array used atomically.
    Shared(LocalId),
}

/// The atomic methods, named after `std::sync::atomic` without the ordering argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Max,
    Min,
    And,
    Or,
    Xor,
    Swap,
    Load,
    Store,
}

impl AtomicOp {
    pub fn from_method(name: &str) -> Option<AtomicOp> {
        Some(match name {
            "fetch_add" => AtomicOp::Add,
            "fetch_sub" => AtomicOp::Sub,
            "fetch_max" => AtomicOp::Max,
            "fetch_min" => AtomicOp::Min,
            "fetch_and" => AtomicOp::And,
            "fetch_or" => AtomicOp::Or,
            "fetch_xor" => AtomicOp::Xor,
            "swap" => AtomicOp::Swap,
            "load" => AtomicOp::Load,
            "store" => AtomicOp::Store,
            _ => return None,
        })
    }

    pub fn arity(self) -> usize {
        match self {
            AtomicOp::Load => 0,
            _ => 1,
        }
    }

    /// The method's name in the kernel language.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "fetch_add",
            AtomicOp::Sub => "fetch_sub",
            AtomicOp::Max => "fetch_max",
            AtomicOp::Min => "fetch_min",
            AtomicOp::And => "fetch_and",
            AtomicOp::Or => "fetch_or",
            AtomicOp::Xor => "fetch_xor",
            AtomicOp::Swap => "swap",
            AtomicOp::Load => "load",
            AtomicOp::Store => "store",
        }
    }

    /// Whether `Atomic<f32>` has it: WGSL's atomics hold integers, so a float atomic is
    /// a `u32` updated by a compare-exchange loop, and only arithmetic and ordering make
    /// sense on its value (the bitwise methods would act on its bits).
    pub fn on_float(self) -> bool {
        !matches!(self, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor)
    }

    /// Every method, in the order messages and the README list them.
    pub const ALL: [AtomicOp; 10] = [
        AtomicOp::Add,
        AtomicOp::Sub,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Load,
        AtomicOp::Store,
        AtomicOp::Swap,
    ];

    /// The methods of an atomic of this scalar type, with `compare_exchange_weak`, as a list
    /// for messages.
    pub fn list_for(s: Scalar) -> String {
        let mut names: Vec<String> = AtomicOp::ALL
            .iter()
            .filter(|op| !s.is_float() || op.on_float())
            .map(|op| format!("`{}`", op.name()))
            .collect();
        names.push("`compare_exchange_weak`".into());
        names.join(", ")
    }

    pub fn wgsl(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomicAdd",
            AtomicOp::Sub => "atomicSub",
            AtomicOp::Max => "atomicMax",
            AtomicOp::Min => "atomicMin",
            AtomicOp::And => "atomicAnd",
            AtomicOp::Or => "atomicOr",
            AtomicOp::Xor => "atomicXor",
            AtomicOp::Swap => "atomicExchange",
            AtomicOp::Load => "atomicLoad",
            AtomicOp::Store => "atomicStore",
        }
    }
}
