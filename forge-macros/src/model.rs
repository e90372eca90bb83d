//! The kernel model: what `parse` understood of the user's function, in a form the checks
//! and emitters can walk. Every node keeps a span into the user's tokens (and the
//! parameters keep their original `syn` nodes) so that any later error points at them.

use proc_macro2::Span;

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
        })
    }
}

/// One schedule of a kernel's tuning space, as the macro sees it: the values of `WG`,
/// `ITEMS`, `VEC` and of each knob, in declaration order, and the workgroup's shape: `WG`
/// is the product of `shape`, whose first `dims` extents the kernel's grid has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedPoint {
    pub wg: u32,
    pub shape: [u32; 3],
    pub dims: usize,
    pub items: u32,
    pub vec: u32,
    pub knobs: Vec<u32>,
}

impl SchedPoint {
    /// A point with a workgroup of `shape` (1 to 3 extents) and no knobs.
    pub fn new(shape: &[u32], items: u32, vec: u32) -> Self {
        let mut s3 = [1u32; 3];
        for (d, v) in shape.iter().take(3).enumerate() {
            s3[d] = *v;
        }
        SchedPoint {
            wg: s3.iter().fold(1u32, |a, b| a.saturating_mul(*b)),
            shape: s3,
            dims: shape.len().clamp(1, 3),
            items,
            vec,
            knobs: Vec::new(),
        }
    }

    pub fn get(&self, c: SchedConst) -> u32 {
        match c {
            SchedConst::Wg => self.wg,
            SchedConst::WgAxis(d) => self.shape[d as usize % 3],
            SchedConst::Items => self.items,
            SchedConst::Vec => self.vec,
            SchedConst::Knob(i) => self.knobs.get(i).copied().unwrap_or(0),
        }
    }

    /// The workgroup as the attribute writes it: `64`, `(16, 16)` or `(4, 4, 4)`.
    pub fn shape_text(&self) -> String {
        shape_text(&self.shape[..self.dims])
    }

    /// `WG=64, ITEMS=1, VEC=1, TILE=128`, for messages.
    pub fn describe(&self, knobs: &[Knob]) -> String {
        let wg = if self.dims > 1 {
            format!("workgroup {}", self.shape_text())
        } else {
            format!("WG={}", self.wg)
        };
        let mut s = format!("{wg}, ITEMS={}, VEC={}", self.items, self.vec);
        for (k, v) in knobs.iter().zip(&self.knobs) {
            s.push_str(&format!(", {}={v}", k.name));
        }
        s
    }
}

/// A knob: `knobs(TILE = 64)` declares a named `u32` schedule constant with its default,
/// and `tune(TILE = [64, 128])` the values the tuner tries.
#[derive(Clone, Debug)]
pub struct Knob {
    pub name: String,
    pub default: u32,
    /// The tuned values; empty when the knob is not tuned.
    pub tune: Vec<u32>,
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
    /// that a subgroup holds together, WGSL's `coop_mat16x16<T, R>`.
    Coop(Scalar, CoopRole),
}

/// The role of a cooperative matrix in `a.mul_add(b, c)`: `A` (16×16 left operand), `B`
/// (right operand) or `C` (the accumulator and the result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoopRole {
    A,
    B,
    C,
}

impl CoopRole {
    /// The kernel language's type name.
    pub fn type_name(self) -> &'static str {
        match self {
            CoopRole::A => "CoopA",
            CoopRole::B => "CoopB",
            CoopRole::C => "CoopC",
        }
    }

    /// WGSL's role letter.
    pub fn wgsl(self) -> &'static str {
        match self {
            CoopRole::A => "A",
            CoopRole::B => "B",
            CoopRole::C => "C",
        }
    }

    /// The one element type the language allows for the role: `f16` operands, an `f32`
    /// accumulator (the 16×16×16 configuration that NVIDIA's Vulkan driver lists).
    pub fn elem(self) -> Scalar {
        match self {
            CoopRole::A | CoopRole::B => Scalar::F16,
            CoopRole::C => Scalar::F32,
        }
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

    /// Whether this is a cooperative matrix, or an array of them.
    pub fn is_coop(&self) -> bool {
        match self {
            Ty::Coop(..) => true,
            Ty::Array(e, _) => e.is_coop(),
            _ => false,
        }
    }
}

/// How a kernel accesses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
    Out,
}

/// A LEN expression, over scalar parameters and integer literals.
#[derive(Clone, Debug)]
pub enum LenExpr {
    Lit(u64),
    Param(usize),
    Binary(LenOp, Box<LenExpr>, Box<LenExpr>),
    Method(LenMethod, Box<LenExpr>, Box<LenExpr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LenMethod {
    DivCeil,
    Min,
    Max,
}

/// A storage binding: `name: &[T; LEN]`, `name: &mut [T; LEN]` or `#[out] name: &mut [T; LEN]`.
pub struct BindingParam<'a> {
    pub original: &'a syn::PatType,
    pub name: String,
    pub span: Span,
    /// The scalar, or `U32` for a struct (whose fields have their own).
    pub elem: Scalar,
    /// 1 for scalars, 2 or 4 for vectors, a struct's size in words.
    pub width: u8,
    /// A `#[forge_struct]` element, by index into `Kernel::structs`.
    pub strukt: Option<usize>,
    pub atomic: bool,
    pub access: Access,
    pub len: LenExpr,
    pub len_text: String,
    /// The element type as written (`f32`, `Vec4`, `Body`), for messages.
    pub elem_text: String,
}

impl BindingParam<'_> {
    /// The type of one element.
    pub fn elem_ty(&self) -> Ty {
        match (self.strukt, self.width) {
            (Some(s), _) => Ty::Struct(s),
            (None, 1) => Ty::Scalar(self.elem),
            (None, w) => Ty::Vector(self.elem, w),
        }
    }
}

/// A `#[forge_struct]`: a `#[repr(C)]` struct of 32-bit scalars, vectors of them and fixed
/// arrays of those, shared by the kernels and helpers of its `#[forge_module]`. Its host
/// type is the user's struct itself; its layout was checked against naga's.
#[derive(Clone, Debug)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<StructField>,
    /// Bytes, a multiple of 4 (WGSL's size, which the host struct's was checked to equal).
    pub size: u32,
}

#[derive(Clone, Debug)]
pub struct StructField {
    pub name: String,
    pub ty: Ty,
    /// Bytes from the start of the struct, the same in WGSL and in the host struct.
    pub offset: u32,
}

impl StructDef {
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// What a kernel of a `#[forge_module]` shares with the others: its helpers and structs.
#[derive(Clone, Default)]
pub struct Shared {
    pub helpers: Vec<HelperFn>,
    pub structs: Vec<StructDef>,
    pub consts: Vec<ConstItem>,
}

/// A scalar parameter: a field of `Params`.
pub struct ScalarParam<'a> {
    pub original: &'a syn::PatType,
    pub name: String,
    pub ty: Scalar,
    /// Its type was refused: uses of it agree with anything, so that they add no errors.
    pub refused: bool,
}

/// A parameter in declaration order.
#[derive(Clone, Copy, Debug)]
pub enum ParamRef {
    Binding(usize),
    Scalar(usize),
}

/// Index of a local variable in [`Kernel::locals`].
pub type LocalId = usize;

/// A local variable. Each `let` introduces a new one, so shadowing is explicit.
#[derive(Clone)]
pub struct Local {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    /// `#[shared]`: workgroup memory.
    pub shared: bool,
    pub span: Span,
    /// Made by the macro, not declared by the user (the value of an `if` computed before
    /// the place it is assigned to, an inlined helper's result): its name is a
    /// description, not an identifier, and this is the base of its generated name.
    pub hidden: Option<&'static str>,
    /// A helper's parameter taken by reference (`t: &mut [f32; 256]`), and whether the
    /// reference is `&mut`: calls are inlined, with the argument's array in its place.
    pub by_ref: Option<bool>,
    /// Assigned after declaration (used to warn about needless `mut` and to check writes).
    pub assigned: bool,
    /// A workgroup array that atomic methods are called on: its elements are atomics.
    pub atomic: bool,
}

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

/// A schedule constant: `WG`, `ITEMS`, `VEC`, or a knob by index into `Options::knobs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedConst {
    Wg,
    /// `WG_X`, `WG_Y` or `WG_Z` (0, 1, 2): a 2-D or 3-D workgroup's extent.
    WgAxis(u8),
    Items,
    Vec,
    Knob(usize),
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

/// The one list of an expression's direct children, in evaluation order, for `&` and for
/// `&mut` (`$iter` is `iter` or `iter_mut`).
macro_rules! each_child {
    ($kind:expr, $f:ident, $iter:ident) => {
        match $kind {
            ExprKind::LoadBinding(_, a)
            | ExprKind::Unary(_, a)
            | ExprKind::Cast(a)
            | ExprKind::ArrayRepeat(a)
            | ExprKind::Swizzle(a, _)
            | ExprKind::Field(a, _) => $f(a),
            ExprKind::LoadArray(a, b) | ExprKind::Binary(_, a, b) => {
                $f(a);
                $f(b)
            }
            ExprKind::Select(a, b, c) => {
                $f(a);
                $f(b);
                $f(c)
            }
            ExprKind::Math(_, args)
            | ExprKind::ArrayList(args)
            | ExprKind::VecNew(args)
            | ExprKind::StructNew(_, args)
            | ExprKind::Call(_, args)
            | ExprKind::Subgroup { args, .. }
            | ExprKind::Coop { args, .. } => args.$iter().for_each($f),
            ExprKind::Atomic { index, args, .. } => {
                $f(index);
                args.$iter().for_each($f)
            }
            ExprKind::IntLit(_)
            | ExprKind::FloatLit(_)
            | ExprKind::BoolLit(_)
            | ExprKind::Local(_)
            | ExprKind::Scalar(_)
            | ExprKind::Sched(_)
            | ExprKind::Builtin(_)
            | ExprKind::BuiltinComponent(..)
            | ExprKind::StructZero(_) => {}
        }
    };
}

impl Expr {
    /// Calls `f` on each direct sub-expression, in evaluation order. Every pass that
    /// recurses over expressions walks them through this (or `each_child_mut`), so that a
    /// new `ExprKind` is added in one place.
    pub fn each_child<'b>(&'b self, mut f: impl FnMut(&'b Expr)) {
        each_child!(&self.kind, f, iter)
    }

    /// `each_child`, for a pass that rewrites the children in place.
    pub fn each_child_mut(&mut self, mut f: impl FnMut(&mut Expr)) {
        each_child!(&mut self.kind, f, iter_mut)
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

/// A certification case: `case(name = value, ...)`.
pub struct Case {
    /// The `case` keyword, for errors about the whole case.
    pub span: Span,
    pub values: Vec<(syn::Ident, syn::Expr)>,
    /// Every scalar parameter's value, in declaration order, once `parse::resolve_cases`
    /// evaluated them; `None` when a value is missing or does not fit its parameter.
    pub resolved: Option<Vec<CaseValue>>,
}

/// A scalar parameter's value in a certification case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CaseValue {
    U32(u32),
    I32(i32),
    F32(f32),
}

/// A workgroup shape as the attribute writes it: `64`, `(16, 16)` or `(4, 4, 4)`.
pub fn shape_text(shape: &[u32]) -> String {
    match shape {
        [x] => x.to_string(),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// One LEN expression per dimension of `threads`, each with its text.
pub type ThreadsDims = Vec<(LenExpr, String)>;

/// Parsed `#[forge_kernel(...)]` options.
pub struct Options {
    /// The declared workgroup: one extent (`workgroup = 64`), or a shape of 2 or 3
    /// (`workgroup = (16, 16)`).
    pub workgroup: Vec<u32>,
    pub workgroup_span: Span,
    /// Whether `workgroup` was given (a 2-D or 3-D grid without one gets `(8, 8)` or
    /// `(4, 4, 4)`).
    pub workgroup_given: bool,
    /// `threads = n` or `threads = (w, h[, d])`: one LEN per dimension, each with its text,
    /// and the whole option's text and span.
    pub threads: Option<(ThreadsDims, String, Span)>,
    /// The `threads` option as written, until `parse::resolve_threads` resolves it.
    pub threads_syn: Option<syn::Expr>,
    /// `tune(workgroup = [..])`: each candidate's extents (one, or a shape of 2 or 3),
    /// with its span.
    pub tune_workgroup: Vec<(Vec<u32>, Span)>,
    pub tune_items: Vec<u32>,
    pub tune_vector: Vec<u32>,
    /// Every value of `tune(...)`: its axis, value and literal, for errors at the value.
    pub tune_values: Vec<(&'static str, u32, Span)>,
    pub reference: Option<syn::Path>,
    pub krate: syn::Path,
    pub cases: Vec<Case>,
    pub tolerance: Option<(f64, f64)>,
    pub ext: bool,
    /// `knobs(NAME = default, ..)`, with the values `tune(NAME = [..])` gives them.
    pub knobs: Vec<Knob>,
    /// `special_values = true`: the kernel handles NaN, infinities and subnormals, and is
    /// certified on them.
    pub special_values: bool,
    /// `cost(bytes = EXPR, flops = EXPR)` as written, until `parse::resolve_cost` resolves
    /// it against the scalars.
    pub cost_syn: Vec<(CostKind, syn::Expr)>,
    /// The declared cost of one call, for rooflines: each measure a LEN over the scalars,
    /// with its text.
    pub cost: Vec<(CostKind, LenExpr, String)>,
}

/// What a `cost(..)` term counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostKind {
    /// `bytes = EXPR`: the bytes a call must move to or from memory.
    Bytes,
    /// `flops = EXPR`: the floating-point operations a call does.
    Flops,
}

impl CostKind {
    pub fn name(self) -> &'static str {
        match self {
            CostKind::Bytes => "bytes",
            CostKind::Flops => "flops",
        }
    }
}

/// A module's `const NAME: T = value;`, for every kernel and helper of the module.
#[derive(Clone)]
pub struct ConstItem {
    pub name: String,
    /// The value, typed; each use is a copy of it.
    pub value: Expr,
    /// It uses `WG`, `ITEMS` or `VEC`, so it exists only in the kernel language, not as a
    /// Rust item.
    pub sched: bool,
    /// Lowering it gave errors (reported once, by the module), as for `HelperFn::failed`.
    pub failed: bool,
}

/// The whole kernel.
pub struct Kernel<'a> {
    pub func: &'a syn::ItemFn,
    pub name: String,
    pub options: Options,
    pub bindings: Vec<BindingParam<'a>>,
    pub scalars: Vec<ScalarParam<'a>>,
    pub params: Vec<ParamRef>,
    pub locals: Vec<Local>,
    pub body: Block,
    /// Number of loops (ids are 0..loops).
    pub loops: usize,
    /// The `#[forge_fn]` helpers this kernel can call (those of its `#[forge_module]`).
    pub helpers: Vec<HelperFn>,
    /// The `#[forge_struct]`s of its `#[forge_module]`.
    pub structs: Vec<StructDef>,
    /// Its `debug_print!` formats, by format id (in source order); empty for a kernel that
    /// does not print, which gets no print buffer.
    pub prints: Vec<PrintFmt>,
}

/// A device function declared with `#[forge_fn]`, over scalars, vectors and arrays, which it
/// takes by value or by reference (`&mut [f32; 256]`, of workgroup or local memory); it
/// may hold barriers and subgroup operations. It cannot read bindings or builtins.
#[derive(Clone)]
pub struct HelperFn {
    pub name: String,
    pub params: Vec<LocalId>,
    /// For each parameter taken by reference, whether the reference is `&mut`.
    pub refs: Vec<Option<bool>>,
    /// Whether calls are inlined (see `inline`): the helper takes an array by reference,
    /// or holds a barrier, a subgroup operation or a builtin.
    pub inline: bool,
    /// Lowering it gave errors (reported once, by the module): a kernel that calls it
    /// gives no WGSL and adds no error of its own.
    pub failed: bool,
    /// Loops in its body (ids are 0..loops), and subgroup operations.
    pub loops: usize,
    pub subgroup_ops: usize,
    pub ret: Option<Ty>,
    pub locals: Vec<Local>,
    pub body: Block,
    /// Helpers it calls, by index (always earlier ones, so there is no recursion).
    pub calls: Vec<usize>,
}

impl Kernel<'_> {
    /// Helpers the kernel calls, directly or through other helpers, in declaration order.
    pub fn used_helpers(&self) -> Vec<usize> {
        let mut used = vec![false; self.helpers.len()];
        let mut stack: Vec<usize> = Vec::new();
        walk_stmts(&self.body, &mut |s| {
            stmt_exprs(s, &mut |e| {
                walk_expr(e, &mut |x| {
                    if let ExprKind::Call(h, _) = x.kind {
                        stack.push(h)
                    }
                })
            })
        });
        while let Some(h) = stack.pop() {
            if !used[h] {
                used[h] = true;
                stack.extend(self.helpers[h].calls.iter().copied());
            }
        }
        (0..self.helpers.len()).filter(|h| used[*h]).collect()
    }
}

impl Kernel<'_> {
    /// The print buffer's binding number: one past the `Params` uniform's, whether or not
    /// the kernel has scalars, so the bindings before it never move.
    pub fn prints_binding(&self) -> usize {
        self.bindings.len() + 1
    }

    /// Whether the body calls a subgroup operation or reads a subgroup builtin, which
    /// needs the device's subgroup feature.
    pub fn uses_subgroups(&self) -> bool {
        let mut found = false;
        walk_stmts(&self.body, &mut |s| {
            stmt_exprs(s, &mut |e| {
                walk_expr(e, &mut |x| match x.kind {
                    ExprKind::Subgroup { .. } => found = true,
                    ExprKind::Builtin(b) if b.is_subgroup() => found = true,
                    _ => {}
                })
            })
        });
        found
    }

    /// Whether the body uses a cooperative matrix, which needs the device's
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX` (and `enable wgpu_cooperative_matrix;`).
    pub fn uses_coop(&self) -> bool {
        let mut found = self.locals.iter().any(|l| l.ty.is_coop());
        walk_stmts(&self.body, &mut |s| {
            stmt_exprs(s, &mut |e| {
                walk_expr(e, &mut |x| found |= matches!(x.kind, ExprKind::Coop { .. }))
            })
        });
        found
    }

    /// Whether the kernel's results cannot depend on its workgroup size, so that it may run
    /// at any (`Kernel::workgroup_free` in forge-core): neither its body nor a helper it
    /// calls reads `WG`, `ITEMS` or `VEC`, a builtin other than `global_index()` and
    /// `global_id()`, workgroup memory, a barrier or a subgroup operation, and no local's
    /// type has a length over the schedule.
    pub fn workgroup_free(&self) -> bool {
        fn sched_len(t: &Ty) -> bool {
            match t {
                Ty::Array(e, len) => matches!(len, ConstLen::Sched { .. }) || sched_len(e),
                _ => false,
            }
        }
        let locals_free = |locals: &[Local]| !locals.iter().any(|l| l.shared || sched_len(&l.ty));
        let body_free = |body: &Block| {
            let mut free = true;
            walk_stmts(body, &mut |s| {
                if matches!(s, Stmt::Barrier { .. }) {
                    free = false;
                }
                stmt_exprs(s, &mut |e| {
                    walk_expr(e, &mut |x| match x.kind {
                        ExprKind::Sched(_) | ExprKind::Subgroup { .. } => free = false,
                        ExprKind::Builtin(b) | ExprKind::BuiltinComponent(b, _)
                            if !matches!(b, Builtin::GlobalIndex | Builtin::GlobalId) =>
                        {
                            free = false
                        }
                        _ => {}
                    })
                })
            });
            free
        };
        locals_free(&self.locals)
            && body_free(&self.body)
            && self.used_helpers().into_iter().all(|h| {
                let h = &self.helpers[h];
                locals_free(&h.locals) && body_free(&h.body)
            })
    }

    /// The LEN expression of each dimension of `threads`, each with its text: the option's,
    /// or else the first `#[out]` binding's length, then the first binding's (1-D).
    pub fn threads_dims(&self) -> Vec<(&LenExpr, String)> {
        if let Some((dims, _, _)) = &self.options.threads {
            return dims.iter().map(|(e, t)| (e, t.clone())).collect();
        }
        self.bindings
            .iter()
            .find(|b| b.access == Access::Out)
            .or(self.bindings.first())
            .map(|b| vec![(&b.len, b.len_text.clone())])
            .unwrap_or_default()
    }

    /// The LEN expression of a 1-D kernel's `threads` (the first dimension's of a grid).
    pub fn threads_len(&self) -> Option<&LenExpr> {
        self.threads_dims().first().map(|(e, _)| *e)
    }

    pub fn threads_text(&self) -> String {
        if let Some((_, t, _)) = &self.options.threads {
            return t.clone();
        }
        self.threads_dims()
            .first()
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| "1".into())
    }

    /// The grid's dimensions: `threads`'s, else the declared workgroup's.
    pub fn dims(&self) -> usize {
        match &self.options.threads {
            Some((dims, _, _)) => dims.len().clamp(1, 3),
            None => self.options.workgroup.len().clamp(1, 3),
        }
    }

    /// The tuning space's workgroups, or the declared one alone.
    pub fn tune_workgroups(&self) -> Vec<Vec<u32>> {
        if self.options.tune_workgroup.is_empty() {
            vec![self.options.workgroup.clone()]
        } else {
            self.options
                .tune_workgroup
                .iter()
                .map(|(w, _)| w.clone())
                .collect()
        }
    }

    pub fn tune_items(&self) -> Vec<u32> {
        if self.options.tune_items.is_empty() {
            vec![1]
        } else {
            self.options.tune_items.clone()
        }
    }

    pub fn tune_vectors(&self) -> Vec<u32> {
        if self.options.tune_vector.is_empty() {
            vec![1]
        } else {
            self.options.tune_vector.clone()
        }
    }

    /// The default schedule: the declared workgroup, and the first items and vector values.
    pub fn default_schedule(&self) -> SchedPoint {
        SchedPoint {
            knobs: self.options.knobs.iter().map(|k| k.default).collect(),
            ..SchedPoint::new(
                &self.options.workgroup,
                self.tune_items()[0],
                self.tune_vectors()[0],
            )
        }
    }

    /// Every schedule the kernel can run with and be certified at: the default, then each
    /// point of the tuning space (every combination of the axes and the knobs), once each.
    pub fn schedules(&self) -> Vec<SchedPoint> {
        let mut out = vec![self.default_schedule()];
        let mut points: Vec<SchedPoint> = Vec::new();
        for wg in self.tune_workgroups() {
            for items in self.tune_items() {
                for vec in self.tune_vectors() {
                    points.push(SchedPoint::new(&wg, items, vec));
                }
            }
        }
        for k in &self.options.knobs {
            let values = if k.tune.is_empty() {
                vec![k.default]
            } else {
                k.tune.clone()
            };
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.knobs.push(*v);
                        q
                    })
                })
                .collect();
        }
        for p in points {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// Walks every statement of a block, depth first.
pub fn walk_stmts<'b>(block: &'b Block, f: &mut dyn FnMut(&'b Stmt)) {
    for s in block {
        f(s);
        match s {
            Stmt::If { then, els, .. } => {
                walk_stmts(then, f);
                if let Some(e) = els {
                    walk_stmts(e, f);
                }
            }
            Stmt::For(ForLoop { body, .. })
            | Stmt::While { body, .. }
            | Stmt::Loop { body, .. }
            | Stmt::Block(body) => walk_stmts(body, f),
            Stmt::Switch { cases, default, .. } => {
                for (_, b) in cases {
                    walk_stmts(b, f);
                }
                walk_stmts(default, f);
            }
            _ => {}
        }
    }
}

/// Whether an expression calls a subgroup operation.
pub fn expr_has_subgroup_op(e: &Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if matches!(x.kind, ExprKind::Subgroup { .. }) {
            found = true;
        }
    });
    found
}

/// Whether a statement's own expressions (not those of nested statements) call a
/// subgroup operation.
pub fn has_subgroup_op(s: &Stmt) -> bool {
    let mut found = false;
    stmt_exprs(s, &mut |e| found |= expr_has_subgroup_op(e));
    found
}

/// Whether a statement is or contains a collective point: a barrier, where the
/// invocations of a workgroup meet, or a subgroup operation, where those of a subgroup do.
pub fn contains_collective(s: &Stmt) -> bool {
    let mut found = false;
    walk_stmts(&vec![s.clone()], &mut |s| {
        if matches!(s, Stmt::Barrier { .. }) || has_subgroup_op(s) {
            found = true;
        }
    });
    found
}

/// Whether a compound statement (`if`, loops) holds a collective point in its body, so
/// that its control flow must run the same way for the whole workgroup.
pub fn collective_inside(s: &Stmt) -> bool {
    let in_block = |b: &Block| b.iter().any(contains_collective);
    match s {
        Stmt::If { then, els, .. } => in_block(then) || els.as_ref().is_some_and(in_block),
        Stmt::For(ForLoop { body, .. })
        | Stmt::While { body, .. }
        | Stmt::Loop { body, .. }
        | Stmt::Block(body) => in_block(body),
        Stmt::Switch { cases, default, .. } => {
            cases.iter().any(|(_, b)| in_block(b)) || in_block(default)
        }
        _ => false,
    }
}

/// Calls `f` on every expression of a statement (not of nested statements).
pub fn stmt_exprs<'b>(s: &'b Stmt, f: &mut dyn FnMut(&'b Expr)) {
    match s {
        Stmt::Let { init: Some(e), .. } => f(e),
        Stmt::Assign { place, value, .. } => {
            place.indices().into_iter().for_each(&mut *f);
            f(value)
        }
        Stmt::If { cond, .. } | Stmt::While { cond, .. } => f(cond),
        Stmt::Switch { selector, .. } => f(selector),
        Stmt::CompareExchange {
            index,
            current,
            new,
            ..
        } => {
            f(index);
            f(current);
            f(new)
        }
        Stmt::Eval { expr, .. } => f(expr),
        Stmt::Print { args, .. } => args.iter().for_each(f),
        Stmt::ReturnValue { value } => f(value),
        Stmt::For(ForLoop { start, end, .. }) => {
            f(start);
            f(end)
        }
        _ => {}
    }
}

/// Calls `f` on an expression and every sub-expression.
pub fn walk_expr<'b>(e: &'b Expr, f: &mut dyn FnMut(&'b Expr)) {
    f(e);
    e.each_child(|c| walk_expr(c, f));
}
