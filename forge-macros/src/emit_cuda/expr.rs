//! Expressions in CUDA C++. Every operation whose C meaning differs from the language's is
//! a call of the prelude's function of that name (`fg_add`, `fg_div`, `fg_shl`, ...),
//! which C++'s overloading picks for the operands' types; literals carry their type.
//!
//! Part of `emit_cuda` (layer 3).

use super::Emitter;
use crate::back::{Exprs, Syntax};
use crate::consts::f16_bits;
use crate::model::*;
use crate::names::cuda_name;
use std::fmt::Write;

/// The prelude's function for an arithmetic or bitwise operator.
fn op_fn(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Add => "fg_add",
        BinOp::Sub => "fg_sub",
        BinOp::Mul => "fg_mul",
        BinOp::Div => "fg_div",
        BinOp::Rem => "fg_rem",
        BinOp::BitAnd => "fg_and",
        BinOp::BitOr => "fg_or",
        BinOp::BitXor => "fg_xor",
        BinOp::Shl => "fg_shl",
        BinOp::Shr => "fg_shr",
        _ => return None,
    })
}

/// A float literal that reads back as exactly the same value of its type: `f16` as the
/// nearest `f16`, converted from its exact `f32` value.
pub fn float_lit(v: f64, s: Scalar) -> String {
    match s {
        Scalar::F64 => {
            if !v.is_finite() || v == 0.0 && v.is_sign_negative() {
                return format!("__longlong_as_double({:#x}ll)", v.to_bits() as i64);
            }
            let mut text = format!("{v:?}");
            if !text.contains('.') && !text.contains('e') {
                text.push_str(".0");
            }
            if v < 0.0 {
                format!("({text})")
            } else {
                text
            }
        }
        Scalar::F16 => {
            let exact = half::f16::from_bits(f16_bits(v)).to_f32();
            format!("__float2half_rn({})", float_lit(exact as f64, Scalar::F32))
        }
        _ => {
            let f = v as f32;
            if !f.is_finite() || f == 0.0 && f.is_sign_negative() {
                return format!("__uint_as_float({:#x}u)", f.to_bits());
            }
            let mut text = format!("{f:?}");
            if !text.contains('.') && !text.contains('e') {
                text.push_str(".0");
            }
            if f < 0.0 {
                format!("({text}f)")
            } else {
                format!("{text}f")
            }
        }
    }
}

/// A value of `t` that is one, for the subgroup products' identity.
fn one_of(t: &Ty) -> String {
    match t {
        Ty::Vector(s, n) => format!("fg_splat<{n}>({})", one_of(&Ty::Scalar(*s))),
        Ty::Scalar(s) if s.is_float() => float_lit(1.0, *s),
        t => Syntax::Cuda.int_lit(1, t),
    }
}

/// C's spelling of the expressions whose form is the language's own.
impl Exprs for Emitter<'_> {
    const SYNTAX: Syntax = Syntax::Cuda;

    fn ty(&self, t: &Ty) -> String {
        super::types::ty(t, &self.k.structs, &self.k.options.knobs)
    }

    fn unary(&mut self, op: UnOp, a: &Expr) -> String {
        match op {
            UnOp::Neg => format!("fg_neg({})", self.expr(a)),
            UnOp::Not if a.ty == Ty::BOOL => format!("(!{})", self.expr(a)),
            UnOp::Not => format!("fg_not({})", self.expr(a)),
        }
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> String {
        let (sa, sb) = (self.expr(a), self.expr(b));
        let boolean = a.ty == Ty::BOOL;
        match op {
            // `&`, `|` and `^` on `bool` evaluate both sides, as Rust's do.
            BinOp::BitAnd if boolean => format!("((bool)({sa} & {sb}))"),
            BinOp::BitOr if boolean => format!("((bool)({sa} | {sb}))"),
            BinOp::BitXor if boolean => format!("({sa} != {sb})"),
            // Rust compares whole vectors to one `bool`.
            BinOp::Eq if a.ty.is_vector() => format!("fg_all_eq({sa}, {sb})"),
            BinOp::Ne if a.ty.is_vector() => format!("(!fg_all_eq({sa}, {sb}))"),
            _ => match op_fn(op) {
                Some(f) => format!("{f}({sa}, {sb})"),
                None => format!("({sa} {} {sb})", op.wgsl()),
            },
        }
    }

    fn cast(&mut self, a: &Expr, to: &Ty) -> String {
        let inner = self.expr(a);
        cast(&a.ty, to, inner)
    }

    fn math(&mut self, f: MathFn, args: &[Expr]) -> String {
        let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
        let call = |name: &str| format!("{name}({})", a.join(", "));
        match f {
            MathFn::Abs => call("fg_abs"),
            MathFn::Min => call("fg_min"),
            MathFn::Max => call("fg_max"),
            MathFn::Clamp => call("fg_clamp"),
            MathFn::Sqrt => call("fg_sqrt"),
            MathFn::Exp => call("fg_exp"),
            MathFn::Exp2 => call("fg_exp2"),
            MathFn::Ln => call("fg_ln"),
            MathFn::Log2 => call("fg_log2"),
            MathFn::Log10 => call("fg_log10"),
            MathFn::Sin => call("fg_sin"),
            MathFn::Cos => call("fg_cos"),
            MathFn::Tan => call("fg_tan"),
            MathFn::Tanh => call("fg_tanh"),
            MathFn::Asin => call("fg_asin"),
            MathFn::Acos => call("fg_acos"),
            MathFn::Atan => call("fg_atan"),
            MathFn::Atan2 => call("fg_atan2"),
            MathFn::Sinh => call("fg_sinh"),
            MathFn::Cosh => call("fg_cosh"),
            MathFn::Asinh => call("fg_asinh"),
            MathFn::Acosh => call("fg_acosh"),
            MathFn::Atanh => call("fg_atanh"),
            MathFn::Floor => call("fg_floor"),
            MathFn::Ceil => call("fg_ceil"),
            MathFn::Round => call("fg_round"),
            MathFn::RoundTiesEven => call("fg_round_ties_even"),
            MathFn::Trunc => call("fg_trunc"),
            MathFn::Fract => call("fg_fract"),
            MathFn::MulAdd => call("fg_mul_add"),
            MathFn::Powf => call("fg_powf"),
            MathFn::Powi => call("fg_powi"),
            MathFn::Signum => call("fg_signum"),
            MathFn::Recip => call("fg_recip"),
            MathFn::ToBits => call("fg_to_bits"),
            MathFn::FromBits => call("fg_from_bits"),
            MathFn::CountOnes => call("fg_count_ones"),
            MathFn::LeadingZeros => call("fg_leading_zeros"),
            MathFn::TrailingZeros => call("fg_trailing_zeros"),
            MathFn::ReverseBits => call("fg_reverse_bits"),
            MathFn::IsNan => call("fg_isnan"),
            MathFn::IsFinite => call("fg_isfinite"),
            MathFn::DivCeil => call("fg_div_ceil"),
            MathFn::Dot => call("fg_dot"),
            MathFn::Length => call("fg_length"),
            MathFn::Normalize => call("fg_normalize"),
            MathFn::Cross => call("fg_cross"),
            MathFn::Distance => call("fg_distance"),
            MathFn::WrappingAdd => call("fg_add"),
            MathFn::WrappingSub => call("fg_sub"),
            MathFn::WrappingMul => call("fg_mul"),
            MathFn::Hypot => call("fg_hypot"),
            MathFn::ToDegrees => call("fg_to_degrees"),
            MathFn::ToRadians => call("fg_to_radians"),
            MathFn::RemEuclid => call("fg_rem_euclid"),
            MathFn::Dot4I8Packed => call("fg_dot4_i8_packed"),
            MathFn::Dot4U8Packed => call("fg_dot4_u8_packed"),
            MathFn::ClampMinMax => call("fg_clamp_min_max"),
            MathFn::FractFloor => call("fg_fract_floor"),
            MathFn::Sign => call("fg_sign"),
            MathFn::InverseSqrt => call("fg_inverse_sqrt"),
            MathFn::Saturate => call("fg_saturate"),
            MathFn::Step => call("fg_step"),
            MathFn::Mix => call("fg_mix"),
            MathFn::Smoothstep => call("fg_smoothstep"),
            MathFn::Ldexp => call("fg_ldexp"),
            MathFn::QuantizeToF16 => call("fg_quantize_to_f16"),
            MathFn::CountOneBits => call("fg_count_one_bits"),
            MathFn::CountLeadingZeros => call("fg_count_leading_zeros"),
            MathFn::CountTrailingZeros => call("fg_count_trailing_zeros"),
            MathFn::FirstLeadingBit => call("fg_first_leading_bit"),
            MathFn::FirstTrailingBit => call("fg_first_trailing_bit"),
            MathFn::ExtractBits => call("fg_extract_bits"),
            MathFn::InsertBits => call("fg_insert_bits"),
            MathFn::Pack(p) => call(&format!("fg_{}", p.pack_name())),
            MathFn::Unpack(p) => call(&format!("fg_{}", p.unpack_name())),
            MathFn::FaceForward => call("fg_face_forward"),
            MathFn::Reflect => call("fg_reflect"),
            MathFn::Refract => call("fg_refract"),
            MathFn::FrexpFract => call("fg_frexp_fract"),
            MathFn::FrexpExp => call("fg_frexp_exp"),
            MathFn::OctetHalf { hi: false } => format!("fg_swz<0, 1, 2, 3>({})", a[0]),
            MathFn::OctetHalf { hi: true } => format!("fg_swz<4, 5, 6, 7>({})", a[0]),
            MathFn::OctetJoin => format!("fg_join({}, {})", a[0], a[1]),
        }
    }

    /// An atomic method: CUDA's atomic functions, which return the old value. `f32` adds
    /// and swaps are native; its `fetch_sub`, `fetch_min` and `fetch_max` are
    /// compare-exchange loops in the prelude. A load is a volatile read, a store an
    /// exchange whose old value is dropped.
    fn atomic(&mut self, op: AtomicOp, t: AtomicTarget, i: &Expr, args: &[Expr]) -> String {
        let float = self.atomic_float(t);
        let place = self.atomic_place(t, i);
        let args: Vec<String> = args.iter().map(|a| self.expr(a)).collect();
        let f = match (op, float) {
            (AtomicOp::Load, _) => return format!("fg_atomic_load({place})"),
            (AtomicOp::Add, _) => "atomicAdd",
            (AtomicOp::Sub, false) => "atomicSub",
            (AtomicOp::Sub, true) => "fg_atomic_sub_f32",
            (AtomicOp::Max, false) => "atomicMax",
            (AtomicOp::Max, true) => "fg_atomic_max_f32",
            (AtomicOp::Min, false) => "atomicMin",
            (AtomicOp::Min, true) => "fg_atomic_min_f32",
            (AtomicOp::And, _) => "atomicAnd",
            (AtomicOp::Or, _) => "atomicOr",
            (AtomicOp::Xor, _) => "atomicXor",
            (AtomicOp::Swap | AtomicOp::Store, _) => "atomicExch",
        };
        let mut call = format!("{f}({place}");
        for a in &args {
            let _ = write!(call, ", {a}");
        }
        call.push(')');
        call
    }

    fn vec_new(&mut self, ty: &Ty, items: &[String]) -> String {
        match ty {
            Ty::Vector(_, n) if items.len() == 1 && *n > 1 => {
                format!("fg_splat<{n}>({})", items[0])
            }
            t => format!("{}{{{{{}}}}}", self.ty(t), items.join(", ")),
        }
    }

    fn swizzle(&self, v: &str, comps: &[u8]) -> String {
        match comps {
            [c] => format!("({v}).v[{c}]"),
            cs => {
                let idx: Vec<String> = cs.iter().map(|c| c.to_string()).collect();
                format!("fg_swz<{}>({v})", idx.join(", "))
            }
        }
    }

    /// A subgroup operation over the warp's lanes that the workgroup has (`fg_sg_mask`, a
    /// prefix of the warp): shuffles, votes and the prelude's scans.
    fn subgroup(&mut self, op: SubgroupOp, ty: &Ty, args: &[Expr]) -> String {
        let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
        let m = "fg_sg_mask";
        let lane = |x: &str| format!("(unsigned)({x})");
        let reduce = |f: &str| format!("fg_sg_reduce({m}, fg_sg_lane, {}, {f}())", a[0]);
        match op {
            SubgroupOp::Add => reduce("fg_op_add"),
            SubgroupOp::Mul => reduce("fg_op_mul"),
            SubgroupOp::Min => reduce("fg_op_min"),
            SubgroupOp::Max => reduce("fg_op_max"),
            SubgroupOp::And => reduce("fg_op_and"),
            SubgroupOp::Or => reduce("fg_op_or"),
            SubgroupOp::Xor => reduce("fg_op_xor"),
            SubgroupOp::All => format!("(__all_sync({m}, {}) != 0)", a[0]),
            SubgroupOp::Any => format!("(__any_sync({m}, {}) != 0)", a[0]),
            SubgroupOp::InclusiveAdd => {
                format!("fg_sg_inclusive({m}, fg_sg_lane, {}, fg_op_add())", a[0])
            }
            SubgroupOp::InclusiveMul => {
                format!("fg_sg_inclusive({m}, fg_sg_lane, {}, fg_op_mul())", a[0])
            }
            SubgroupOp::ExclusiveAdd => format!(
                "fg_sg_exclusive({m}, fg_sg_lane, {}, fg_op_add(), {}{{}})",
                a[0],
                self.ty(ty)
            ),
            SubgroupOp::ExclusiveMul => format!(
                "fg_sg_exclusive({m}, fg_sg_lane, {}, fg_op_mul(), {})",
                a[0],
                one_of(ty)
            ),
            SubgroupOp::Broadcast | SubgroupOp::Shuffle => {
                format!("fg_shfl({m}, {}, {})", a[0], lane(&a[1]))
            }
            // The lanes are a prefix of the warp: the first active one is lane 0.
            SubgroupOp::BroadcastFirst => format!("fg_shfl({m}, {}, 0u)", a[0]),
            SubgroupOp::ShuffleXor => format!("fg_shfl_xor({m}, {}, {})", a[0], lane(&a[1])),
            SubgroupOp::ShuffleDown => format!("fg_shfl_down({m}, {}, {})", a[0], lane(&a[1])),
            SubgroupOp::ShuffleUp => format!("fg_shfl_up({m}, {}, {})", a[0], lane(&a[1])),
            SubgroupOp::Ballot => {
                format!(
                    "fg_vec<unsigned, 4>{{{{__ballot_sync({m}, {}), 0u, 0u, 0u}}}}",
                    a[0]
                )
            }
        }
    }

    /// A cooperative-matrix operation: the prelude's fragments and functions
    /// (`prelude_coop.cuh`). A load or store takes the address of its first element as a
    /// pointer to the matrix's scalars, and its stride in scalars: an array of vectors'
    /// stride counts vectors, as `oracle::coop` does, so it is scaled by their width.
    fn coop(&mut self, op: CoopOp, target: Option<AtomicTarget>, ty: &Ty, args: &[Expr]) -> String {
        let order = |row_major: bool| if row_major { "true" } else { "false" };
        match (op, target) {
            (CoopOp::Load { row_major }, Some(target)) => {
                let (scalar, width) = self.coop_elem(target);
                let place = self.atomic_place(target, &args[0]);
                let stride = self.expr(&args[1]);
                let role = match ty {
                    Ty::Coop(_, role) => role.wgsl().to_ascii_lowercase(),
                    _ => String::from("c"),
                };
                let ldsm = self.ldmatrix_mode(target, &args[0], &args[1]);
                format!(
                    "fg_coop_load_{role}<{}, {ldsm}>((const {scalar} *)({place}), (unsigned)({stride}) * {width}u)",
                    order(row_major)
                )
            }
            (CoopOp::Store { row_major }, Some(target)) => {
                let (scalar, width) = self.coop_elem(target);
                let m = self.expr(&args[0]);
                let place = self.atomic_place(target, &args[1]);
                let stride = self.expr(&args[2]);
                format!(
                    "fg_coop_store<{}>({m}, ({scalar} *)({place}), (unsigned)({stride}) * {width}u)",
                    order(row_major)
                )
            }
            (CoopOp::MulAdd, _) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                format!("fg_coop_mul_add({}, {}, {})", a[0], a[1], a[2])
            }
            (CoopOp::Rows(r), _) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                let zip = |op: &str| format!("fg_coop_row_zip({}, {}, {op}{{}})", a[0], a[1]);
                match r {
                    RowOp::Max => format!("fg_coop_row_reduce({}, fg_coop_op_max{{}})", a[0]),
                    RowOp::Sum => format!("fg_coop_row_reduce({}, fg_op_add{{}})", a[0]),
                    RowOp::MaskFrom => {
                        format!("fg_coop_mask_from({}, {}, {}, {})", a[0], a[1], a[2], a[3])
                    }
                    RowOp::Exp2Rows => format!("fg_coop_exp2_rows({}, {}, {})", a[0], a[1], a[2]),
                    RowOp::ScaleRows => format!("fg_coop_scale_rows({}, {})", a[0], a[1]),
                    RowOp::ToA => format!("fg_coop_to_a({})", a[0]),
                    RowOp::MaxWith => format!("fg_coop_max_with({}, {})", a[0], a[1]),
                    RowOp::AddWith => format!("fg_coop_add_with({}, {})", a[0], a[1]),
                    RowOp::Splat => format!("fg_coop_row_splat({})", a[0]),
                    RowOp::Bin(b) => zip(match b {
                        RowBin::Max => "fg_coop_op_max",
                        RowBin::Min => "fg_coop_op_min",
                        RowBin::Add => "fg_op_add",
                        RowBin::Sub => "fg_op_sub",
                        RowBin::Mul => "fg_op_mul",
                    }),
                    RowOp::Scale => format!("fg_coop_row_scale({}, {})", a[0], a[1]),
                    RowOp::Exp2 => format!("fg_coop_row_exp2({})", a[0]),
                    RowOp::Recip => format!("fg_coop_row_recip({})", a[0]),
                }
            }
            // `zeroed()`: C++ zero-initialises the fragment's registers.
            _ => format!("{}{{}}", self.ty(ty)),
        }
    }

    fn float_lit(&self, v: f64, s: Scalar) -> String {
        float_lit(v, s)
    }
}

impl Emitter<'_> {
    /// The prelude's function of a compound assignment `place op= value`.
    pub(super) fn compound(&mut self, op: BinOp, target: &str, value: &Expr) -> String {
        let v = self.expr(value);
        match op {
            BinOp::BitXor if value.ty == Ty::BOOL => format!("{target} != {v}"),
            BinOp::BitAnd | BinOp::BitOr if value.ty == Ty::BOOL => {
                format!("(bool)({target} {} {v})", op.wgsl())
            }
            _ => match op_fn(op) {
                Some(f) => format!("{f}({target}, {v})"),
                None => format!("{target} {} {v}", op.wgsl()),
            },
        }
    }

    /// The atomic element's address: `&bins[i]`.
    pub(super) fn atomic_place(&mut self, target: AtomicTarget, index: &Expr) -> String {
        let name = match target {
            AtomicTarget::Binding(b) => cuda_name(&self.k.bindings[b].name),
            AtomicTarget::Shared(l) => self.names[l].clone(),
        };
        let i = self.expr(index);
        format!("&{name}[{i}]")
    }

    /// How a cooperative load at `target[index]` with row stride `stride` (in elements)
    /// may use `ldmatrix`, the prelude's `LDSM` (`prelude_coop.cuh`): 0 never (a binding),
    /// 2 always, where every row is proved to start on 16 bytes (`align`: the arrays of
    /// workgroup memory are aligned to 16), 1 after a test at run time.
    fn ldmatrix_mode(&mut self, target: AtomicTarget, index: &Expr, stride: &Expr) -> u8 {
        let AtomicTarget::Shared(l) = target else {
            return 0;
        };
        let elem_bytes = match self.coop_elem_ty(target) {
            Ty::Vector(s, n) => s.size() * u32::from(n),
            Ty::Scalar(s) => s.size(),
            _ => return 1,
        };
        let (Some(facts), true) = (self.x.as_mut(), self.locals[l].shared) else {
            return 1;
        };
        if !elem_bytes.is_power_of_two() {
            return 1;
        }
        let scale = elem_bytes.trailing_zeros();
        let rows_on_16 = |z: u32| z + scale >= 4;
        if rows_on_16(facts.zero_bits(index)) && rows_on_16(facts.zero_bits(stride)) {
            2
        } else {
            1
        }
    }

    /// The element type of the array a cooperative load or store reads or writes.
    fn coop_elem_ty(&self, target: AtomicTarget) -> Ty {
        match target {
            AtomicTarget::Binding(b) => self.k.bindings[b].elem_ty(),
            AtomicTarget::Shared(l) => match &self.locals[l].ty {
                Ty::Array(e, _) => (**e).clone(),
                t => t.clone(),
            },
        }
    }

    /// The scalar type and the width of a cooperative load's or store's array elements.
    fn coop_elem(&self, target: AtomicTarget) -> (&'static str, u8) {
        match self.coop_elem_ty(target) {
            Ty::Vector(s, n) => (super::types::scalar(s), n),
            Ty::Scalar(s) => (super::types::scalar(s), 1),
            _ => ("float", 1),
        }
    }

    /// Whether an atomic target holds `f32`s.
    pub(super) fn atomic_float(&self, target: AtomicTarget) -> bool {
        match target {
            AtomicTarget::Binding(b) => self.k.bindings[b].elem == Scalar::F32,
            AtomicTarget::Shared(l) => {
                matches!(&self.locals[l].ty, Ty::Array(e, _) if **e == Ty::Scalar(Scalar::F32))
            }
        }
    }
}

/// `inner`, of type `from`, converted to `to` as the language converts: integers by their
/// bits, floats to integers truncated and clamped (the prelude's `fg_f32_to_i32`, ...),
/// everything else by C's conversion, which rounds to nearest.
pub fn cast(from: &Ty, to: &Ty, inner: String) -> String {
    let (Some(f), Some(t)) = (from.scalar(), to.scalar()) else {
        return inner;
    };
    if f == t {
        return inner;
    }
    let name = |s: Scalar| s.wgsl();
    match (f, t) {
        (Scalar::F32 | Scalar::F64 | Scalar::F16, Scalar::I32 | Scalar::U32) => {
            format!("fg_{}_to_{}({inner})", name(f), name(t))
        }
        (Scalar::F16, _) => format!("({})__half2float({inner})", super::types::scalar(t)),
        (Scalar::F64, Scalar::F16) => format!("__double2half({inner})"),
        (Scalar::I32, Scalar::F16) => format!("__int2half_rn({inner})"),
        (Scalar::U32, Scalar::F16) => format!("__uint2half_rn({inner})"),
        (_, Scalar::F16) => format!("__float2half_rn((float)({inner}))"),
        _ => format!("(({}){inner})", super::types::scalar(t)),
    }
}
