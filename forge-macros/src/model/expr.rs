//! Typed expressions and the operations they apply.
//!
//! Part of `model` (layer 1).

use super::sched::SchedConst;
use super::ty::{LenOp, LocalId, Scalar, Ty};
use proc_macro2::Span;

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
    /// Whether the result is the same for every invocation of the subgroup: a vote
    /// (`subgroup_all`, `subgroup_any`) or `subgroup_broadcast_first`.
    pub fn is_vote(self) -> bool {
        matches!(
            self,
            SubgroupOp::All | SubgroupOp::Any | SubgroupOp::BroadcastFirst
        )
    }

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
    /// An accumulator's rows, through its layout (the module docs of `lower::coop`):
    /// `c.row_max()`, `c.row_sum()` and the rest, `RowOp` lists them with their arguments.
    Rows(RowOp),
}

/// The operations on an accumulator's rows and on `CoopRow`s. Those that read or make an
/// accumulator ([`RowOp::through_memory`]) go through workgroup memory in WGSL, whose
/// matrices are opaque: they meet the workgroup's barriers, so they sit where one may.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowOp {
    /// `c.row_max()`: `[c]`, each row's largest element.
    Max,
    /// `c.row_sum()`: `[c]`, each row's sum.
    Sum,
    /// `c.mask_from(first, step, fill)`: `[c, first, step, fill]`, element `(r, j)` set to
    /// `fill` where `j ≥ first + step·r` (`i32`s, wrapping as WGSL's).
    MaskFrom,
    /// `c.exp2_rows(scale, m)`: `[c, scale, m]`, element `(r, j)` to `2^(x·scale − m[r])`.
    Exp2Rows,
    /// `c.scale_rows(f)`: `[c, f]`, row `r` times `f[r]`.
    ScaleRows,
    /// `c.to_a()`: `[c]`, the accumulator rounded to `f16`, as a left operand.
    ToA,
    /// `c.max(o)`: `[c, o]`, element by element the larger of two accumulators (a row's
    /// maximum over several of them then takes one reduction, not one each).
    MaxWith,
    /// `c.add(o)`: `[c, o]`, element by element the sum of two accumulators (a row's sum
    /// over several of them then takes one reduction, not one each).
    AddWith,
    /// `CoopRow::splat(x)`: `[x]`.
    Splat,
    /// `r.max(o)`, `r.min(o)`, `r.add(o)`, `r.sub(o)`, `r.mul(o)`: `[r, o]`, row by row.
    Bin(RowBin),
    /// `r.scale(x)`: `[r, x]`, every row times the `f32` `x`.
    Scale,
    /// `r.exp2()`: `[r]`.
    Exp2,
    /// `r.recip()`: `[r]`, `1 / r`.
    Recip,
}

/// A binary operation of two `CoopRow`s, row by row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowBin {
    Max,
    Min,
    Add,
    Sub,
    Mul,
}

impl RowBin {
    pub const ALL: [RowBin; 5] = [
        RowBin::Max,
        RowBin::Min,
        RowBin::Add,
        RowBin::Sub,
        RowBin::Mul,
    ];

    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            RowBin::Max => "max",
            RowBin::Min => "min",
            RowBin::Add => "add",
            RowBin::Sub => "sub",
            RowBin::Mul => "mul",
        }
    }
}

impl RowOp {
    /// The kernel language's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            RowOp::Max => "row_max",
            RowOp::Sum => "row_sum",
            RowOp::MaskFrom => "mask_from",
            RowOp::Exp2Rows => "exp2_rows",
            RowOp::ScaleRows => "scale_rows",
            RowOp::ToA => "to_a",
            RowOp::MaxWith => "max",
            RowOp::AddWith => "add",
            RowOp::Splat => "splat",
            RowOp::Bin(b) => b.name(),
            RowOp::Scale => "scale",
            RowOp::Exp2 => "exp2",
            RowOp::Recip => "recip",
        }
    }

    /// The methods of an accumulator (`c.row_max()`, ...), the rest being `CoopRow`'s.
    pub const ON_ACCUMULATOR: [RowOp; 8] = [
        RowOp::Max,
        RowOp::Sum,
        RowOp::MaskFrom,
        RowOp::Exp2Rows,
        RowOp::ScaleRows,
        RowOp::ToA,
        RowOp::MaxWith,
        RowOp::AddWith,
    ];

    /// Whether WGSL takes the operation through workgroup memory: those of an accumulator
    /// (one in or out). It then holds barriers, and must sit in workgroup-uniform control
    /// flow.
    pub fn through_memory(self) -> bool {
        Self::ON_ACCUMULATOR.contains(&self)
    }

    /// The WGSL function that takes an accumulator's operation through workgroup memory
    /// (`emit_wgsl::row_functions`): `fg_` and its name, but for `c.max(o)` and `c.add(o)`,
    /// whose names are the language's `max` and `add`.
    pub fn wgsl_function(self) -> String {
        match self {
            RowOp::MaxWith => "fg_max_with".to_string(),
            RowOp::AddWith => "fg_add_with".to_string(),
            _ => format!("fg_{}", self.name()),
        }
    }
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
            CoopOp::Rows(r) => r.name(),
        }
    }
}

/// A length's operation as the body's: lengths (`[T; n * 4]`) and the values of
/// expressions share their arithmetic.
impl From<LenOp> for BinOp {
    fn from(op: LenOp) -> BinOp {
        match op {
            LenOp::Add => BinOp::Add,
            LenOp::Sub => BinOp::Sub,
            LenOp::Mul => BinOp::Mul,
            LenOp::Div => BinOp::Div,
            LenOp::Rem => BinOp::Rem,
        }
    }
}

impl BinOp {
    /// The operation of a length, where lengths have this one (`+ - * / %`).
    pub fn len_op(self) -> Option<LenOp> {
        Some(match self {
            BinOp::Add => LenOp::Add,
            BinOp::Sub => LenOp::Sub,
            BinOp::Mul => LenOp::Mul,
            BinOp::Div => LenOp::Div,
            BinOp::Rem => LenOp::Rem,
            _ => return None,
        })
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

    // WGSL's builtins whose meaning no Rust method has: free functions under their WGSL
    // names, and methods where Rust has no method of that name (`wgsl_builtins` in
    // `lower` lists them). Each means what WGSL defines; where WGSL leaves a result open
    // (a NaN operand, `lo > hi`), the language picks one of WGSL's results and every
    // side computes that one.
    /// `clamp(x, lo, hi)`: `min(max(x, lo), hi)`, `min` and `max` ignoring a NaN operand
    /// (so `hi` when `lo > hi`).
    ClampMinMax,
    /// `fract(x)`: `x - floor(x)`.
    FractFloor,
    /// `sign(x)`: 1, 0 or -1 (0 for either zero; NaN stays NaN).
    Sign,
    /// `inverse_sqrt(x)`: `1 / sqrt(x)`.
    InverseSqrt,
    /// `saturate(x)`: `clamp(x, 0, 1)`.
    Saturate,
    /// `step(edge, x)`: 1 where `edge <= x`, else 0.
    Step,
    /// `mix(a, b, t)`: `a·(1 - t) + b·t`.
    Mix,
    /// `smoothstep(lo, hi, x)`: `t·t·(3 - 2t)` for `t = saturate((x - lo) / (hi - lo))`.
    Smoothstep,
    /// `ldexp(x, e)`: `x·2^e`.
    Ldexp,
    /// `quantize_to_f16(x)`: `x` rounded to the nearest `f16` (ties to even), as an `f32`.
    QuantizeToF16,
    /// `count_one_bits(x)`, of the operand's type (Rust's `count_ones` gives a `u32`).
    CountOneBits,
    /// `count_leading_zeros(x)`, of the operand's type.
    CountLeadingZeros,
    /// `count_trailing_zeros(x)`, of the operand's type.
    CountTrailingZeros,
    /// `first_leading_bit(x)`: the most significant 1 bit (of a negative `i32`: 0 bit),
    /// or -1 (all ones) where there is none.
    FirstLeadingBit,
    /// `first_trailing_bit(x)`: the least significant 1 bit, or -1 (all ones).
    FirstTrailingBit,
    /// `extract_bits(x, offset, count)`: `count` bits from `offset`, sign-extended for
    /// `i32`; `offset` and `count` are clamped to the width as WGSL clamps them.
    ExtractBits,
    /// `insert_bits(x, bits, offset, count)`: `x` with `count` bits from `offset`
    /// replaced by `bits`' low bits.
    InsertBits,
    /// `pack4x8snorm(v)` and the rest of the family: a vector into one `u32`.
    Pack(PackFormat),
    /// `unpack4x8snorm(u)` and the rest: one `u32` into a vector.
    Unpack(PackFormat),
    /// `face_forward(n, i, nref)`: `n` where `dot(nref, i) < 0`, else `-n`.
    FaceForward,
    /// `reflect(i, n)`: `i - 2·dot(n, i)·n`.
    Reflect,
    /// `refract(i, n, eta)`.
    Refract,
    /// The `fract` of `let (fract, exp) = frexp(x);`: in `[0.5, 1)` with `x`'s sign.
    FrexpFract,
    /// The `exp` of `frexp(x)`, an `i32`: `x = fract·2^exp`.
    FrexpExp,
    /// `v.lo()` and `v.hi()` of an `HVec8`: halves 0 to 3, or 4 to 7, as an `HVec4`.
    OctetHalf {
        hi: bool,
    },
    /// `HVec8::join(lo, hi)`: two `HVec4`s as one `HVec8`.
    OctetJoin,
}

/// The formats of WGSL's `pack*`/`unpack*` builtins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackFormat {
    Snorm4x8,
    Unorm4x8,
    I8x4,
    U8x4,
    I8x4Clamp,
    U8x4Clamp,
    Snorm2x16,
    Unorm2x16,
    Float2x16,
}

impl PackFormat {
    pub const ALL: [PackFormat; 9] = [
        PackFormat::Snorm4x8,
        PackFormat::Unorm4x8,
        PackFormat::I8x4,
        PackFormat::U8x4,
        PackFormat::I8x4Clamp,
        PackFormat::U8x4Clamp,
        PackFormat::Snorm2x16,
        PackFormat::Unorm2x16,
        PackFormat::Float2x16,
    ];

    /// The packing function's name in the kernel language.
    pub fn pack_name(self) -> &'static str {
        match self {
            PackFormat::Snorm4x8 => "pack4x8snorm",
            PackFormat::Unorm4x8 => "pack4x8unorm",
            PackFormat::I8x4 => "pack4x_i8",
            PackFormat::U8x4 => "pack4x_u8",
            PackFormat::I8x4Clamp => "pack4x_i8_clamp",
            PackFormat::U8x4Clamp => "pack4x_u8_clamp",
            PackFormat::Snorm2x16 => "pack2x16snorm",
            PackFormat::Unorm2x16 => "pack2x16unorm",
            PackFormat::Float2x16 => "pack2x16float",
        }
    }

    /// The unpacking function's name in the kernel language.
    pub fn unpack_name(self) -> &'static str {
        match self {
            PackFormat::Snorm4x8 => "unpack4x8snorm",
            PackFormat::Unorm4x8 => "unpack4x8unorm",
            PackFormat::I8x4 | PackFormat::I8x4Clamp => "unpack4x_i8",
            PackFormat::U8x4 | PackFormat::U8x4Clamp => "unpack4x_u8",
            PackFormat::Snorm2x16 => "unpack2x16snorm",
            PackFormat::Unorm2x16 => "unpack2x16unorm",
            PackFormat::Float2x16 => "unpack2x16float",
        }
    }

    /// WGSL's suffix: `pack4xI8Clamp`.
    pub fn wgsl_suffix(self) -> &'static str {
        match self {
            PackFormat::I8x4 => "4xI8",
            PackFormat::U8x4 => "4xU8",
            PackFormat::I8x4Clamp => "4xI8Clamp",
            PackFormat::U8x4Clamp => "4xU8Clamp",
            PackFormat::Snorm4x8 => "4x8snorm",
            PackFormat::Unorm4x8 => "4x8unorm",
            PackFormat::Snorm2x16 => "2x16snorm",
            PackFormat::Unorm2x16 => "2x16unorm",
            PackFormat::Float2x16 => "2x16float",
        }
    }

    /// The vector packed or unpacked: its component type and width.
    pub fn vector(self) -> (Scalar, u8) {
        match self {
            PackFormat::Snorm4x8 | PackFormat::Unorm4x8 => (Scalar::F32, 4),
            PackFormat::I8x4 | PackFormat::I8x4Clamp => (Scalar::I32, 4),
            PackFormat::U8x4 | PackFormat::U8x4Clamp => (Scalar::U32, 4),
            _ => (Scalar::F32, 2),
        }
    }

    /// For the normalised formats, `(scale, lo, bits)`: each component packs as
    /// `floor(0.5 + scale·clamp(x, lo, 1))` into `bits` bits.
    pub fn normalised(self) -> Option<(f32, f32, u32)> {
        match self {
            PackFormat::Snorm4x8 => Some((127.0, -1.0, 8)),
            PackFormat::Unorm4x8 => Some((255.0, 0.0, 8)),
            PackFormat::Snorm2x16 => Some((32767.0, -1.0, 16)),
            PackFormat::Unorm2x16 => Some((65535.0, 0.0, 16)),
            _ => None,
        }
    }

    /// Whether WGSL has the unpacking function (the clamping forms only pack).
    pub fn unpacks(self) -> bool {
        !matches!(self, PackFormat::I8x4Clamp | PackFormat::U8x4Clamp)
    }
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
            MathFn::ClampMinMax => "clamp",
            MathFn::FractFloor => "fract",
            MathFn::Sign => "sign",
            MathFn::InverseSqrt => "inverse_sqrt",
            MathFn::Saturate => "saturate",
            MathFn::Step => "step",
            MathFn::Mix => "mix",
            MathFn::Smoothstep => "smoothstep",
            MathFn::Ldexp => "ldexp",
            MathFn::QuantizeToF16 => "quantize_to_f16",
            MathFn::CountOneBits => "count_one_bits",
            MathFn::CountLeadingZeros => "count_leading_zeros",
            MathFn::CountTrailingZeros => "count_trailing_zeros",
            MathFn::FirstLeadingBit => "first_leading_bit",
            MathFn::FirstTrailingBit => "first_trailing_bit",
            MathFn::ExtractBits => "extract_bits",
            MathFn::InsertBits => "insert_bits",
            MathFn::Pack(f) => f.pack_name(),
            MathFn::Unpack(f) => f.unpack_name(),
            MathFn::FaceForward => "face_forward",
            MathFn::Reflect => "reflect",
            MathFn::Refract => "refract",
            MathFn::FrexpFract | MathFn::FrexpExp => "frexp",
            MathFn::OctetHalf { hi: false } => "lo",
            MathFn::OctetHalf { hi: true } => "hi",
            MathFn::OctetJoin => "join",
        }
    }

    /// Whether it is one of WGSL's builtins that no Rust method means (the CUDA emitter
    /// adds their part of the prelude only to kernels that call one).
    pub fn is_wgsl_only(self) -> bool {
        matches!(
            self,
            MathFn::ClampMinMax
                | MathFn::FractFloor
                | MathFn::Sign
                | MathFn::InverseSqrt
                | MathFn::Saturate
                | MathFn::Step
                | MathFn::Mix
                | MathFn::Smoothstep
                | MathFn::Ldexp
                | MathFn::QuantizeToF16
                | MathFn::CountOneBits
                | MathFn::CountLeadingZeros
                | MathFn::CountTrailingZeros
                | MathFn::FirstLeadingBit
                | MathFn::FirstTrailingBit
                | MathFn::ExtractBits
                | MathFn::InsertBits
                | MathFn::Pack(_)
                | MathFn::Unpack(_)
                | MathFn::FaceForward
                | MathFn::Reflect
                | MathFn::Refract
                | MathFn::FrexpFract
                | MathFn::FrexpExp
        )
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
            // `0 as T` in a generic kernel: zero of every numeric type.
            ExprKind::Cast(inner) => inner.is_zero(),
            ExprKind::ArrayRepeat(inner) => inner.is_zero(),
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
    /// A binding passed to a helper's reference parameter (`stage(&mut t, kv, 0)`): only
    /// an argument, which inlining replaces, each access of the parameter becoming one of
    /// the binding (the helper is specialised per call site).
    BindingRef(usize),
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
