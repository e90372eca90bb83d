//! WGSL's builtins, by one rule: every builtin is a free function under its WGSL name in
//! snake case, with WGSL's meaning (`first_leading_bit(x)`, `mix(a, b, t)`, `round(x)`
//! with ties to even, `fract(x)` as `x - floor(x)`, `clamp(x, lo, hi)` as
//! `min(max(x, lo), hi)`); and where Rust has no method of that name, the method spelling
//! means the builtin too (`x.inverse_sqrt()`). The methods Rust has keep Rust's meaning
//! (`x.round()`, `x.clamp(lo, hi)`: `expr`'s tables). A builtin that gives two values
//! (`frexp`, `modf`) is bound with `let (a, b) = frexp(x);`.
//!
//! Part of `lower` (layer 3).

use super::infer::{self, Set, S_F16, S_F32, S_FLOAT, S_I32, S_INT, S_NUM, S_U32};
use super::{Lowerer, R};
use crate::model::*;
use proc_macro2::Span;
use syn::spanned::Spanned;

/// The new float builtins take `f32` and `f16` (and vectors of them); `f64` keeps to the
/// methods, whose forms the backends have.
const S_F32_16: Set = S_F32 | S_F16;

/// The shapes a builtin's first argument may take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A scalar or a vector, componentwise.
    Any,
    /// A vector.
    Vector,
    /// A 3-component vector.
    Vec3,
}

/// What an argument after the first is.
#[derive(Clone, Copy)]
enum Arg {
    /// The first argument's type.
    Same,
    /// A `u32` (`extract_bits`' offset and count).
    U32,
    /// `i32`s, one per component of the first argument (`ldexp`'s exponent).
    I32s,
    /// A scalar of the first argument's component type (`refract`'s `eta`).
    Component,
}

/// One builtin: its name, function, the scalar types and shape of its first argument,
/// the other arguments, and whether its result is a scalar of the component type (`dot`).
struct Builtin {
    name: &'static str,
    f: MathFn,
    set: Set,
    shape: Shape,
    rest: &'static [Arg],
    component_result: bool,
}

const fn b(name: &'static str, f: MathFn, set: Set, rest: &'static [Arg]) -> Builtin {
    Builtin {
        name,
        f,
        set,
        shape: Shape::Any,
        rest,
        component_result: false,
    }
}

const fn v(name: &'static str, f: MathFn, set: Set, rest: &'static [Arg]) -> Builtin {
    Builtin {
        name,
        f,
        set,
        shape: Shape::Vector,
        rest,
        component_result: false,
    }
}

const NONE: &[Arg] = &[];
const ONE: &[Arg] = &[Arg::Same];
const TWO: &[Arg] = &[Arg::Same, Arg::Same];

/// WGSL's numeric, bit and geometric builtins, by their names in snake case. The packing
/// builtins are `pack_format`'s, `dot4_*_packed` `expr`'s.
const BUILTINS: &[Builtin] = {
    use MathFn as M;
    &[
        b("abs", M::Abs, S_I32 | S_FLOAT, NONE),
        b("acos", M::Acos, S_FLOAT, NONE),
        b("acosh", M::Acosh, S_FLOAT, NONE),
        b("asin", M::Asin, S_FLOAT, NONE),
        b("asinh", M::Asinh, S_FLOAT, NONE),
        b("atan", M::Atan, S_FLOAT, NONE),
        b("atanh", M::Atanh, S_FLOAT, NONE),
        b("atan2", M::Atan2, S_FLOAT, ONE),
        b("ceil", M::Ceil, S_FLOAT, NONE),
        b("clamp", M::ClampMinMax, S_INT | S_F32_16, TWO),
        b("cos", M::Cos, S_FLOAT, NONE),
        b("cosh", M::Cosh, S_FLOAT, NONE),
        b("count_leading_zeros", M::CountLeadingZeros, S_INT, NONE),
        b("count_one_bits", M::CountOneBits, S_INT, NONE),
        b("count_trailing_zeros", M::CountTrailingZeros, S_INT, NONE),
        Builtin {
            name: "cross",
            f: M::Cross,
            set: S_FLOAT,
            shape: Shape::Vec3,
            rest: ONE,
            component_result: false,
        },
        b("degrees", M::ToDegrees, S_FLOAT, NONE),
        Builtin {
            component_result: true,
            ..v("distance", M::Distance, S_FLOAT, ONE)
        },
        Builtin {
            component_result: true,
            ..v("dot", M::Dot, S_NUM, ONE)
        },
        b("exp", M::Exp, S_FLOAT, NONE),
        b("exp2", M::Exp2, S_FLOAT, NONE),
        b("extract_bits", M::ExtractBits, S_INT, &[Arg::U32, Arg::U32]),
        v("face_forward", M::FaceForward, S_F32_16, TWO),
        b("first_leading_bit", M::FirstLeadingBit, S_INT, NONE),
        b("first_trailing_bit", M::FirstTrailingBit, S_INT, NONE),
        b("floor", M::Floor, S_FLOAT, NONE),
        b("fma", M::MulAdd, S_FLOAT, TWO),
        b("fract", M::FractFloor, S_F32_16, NONE),
        b(
            "insert_bits",
            M::InsertBits,
            S_INT,
            &[Arg::Same, Arg::U32, Arg::U32],
        ),
        b("inverse_sqrt", M::InverseSqrt, S_F32_16, NONE),
        b("ldexp", M::Ldexp, S_F32_16, &[Arg::I32s]),
        Builtin {
            component_result: true,
            ..v("length", M::Length, S_FLOAT, NONE)
        },
        b("log", M::Ln, S_FLOAT, NONE),
        b("log2", M::Log2, S_FLOAT, NONE),
        b("max", M::Max, S_NUM, ONE),
        b("min", M::Min, S_NUM, ONE),
        b("mix", M::Mix, S_F32_16, TWO),
        v("normalize", M::Normalize, S_FLOAT, NONE),
        b("pow", M::Powf, S_FLOAT, ONE),
        b("quantize_to_f16", M::QuantizeToF16, S_F32, NONE),
        b("radians", M::ToRadians, S_FLOAT, NONE),
        v("reflect", M::Reflect, S_F32_16, ONE),
        v(
            "refract",
            M::Refract,
            S_F32_16,
            &[Arg::Same, Arg::Component],
        ),
        b("reverse_bits", M::ReverseBits, S_INT, NONE),
        b("round", M::RoundTiesEven, S_FLOAT, NONE),
        b("saturate", M::Saturate, S_F32_16, NONE),
        b("sign", M::Sign, S_I32 | S_F32_16, NONE),
        b("sin", M::Sin, S_FLOAT, NONE),
        b("sinh", M::Sinh, S_FLOAT, NONE),
        b("smoothstep", M::Smoothstep, S_F32_16, TWO),
        b("sqrt", M::Sqrt, S_FLOAT, NONE),
        b("step", M::Step, S_F32_16, ONE),
        b("tan", M::Tan, S_FLOAT, NONE),
        b("tanh", M::Tanh, S_FLOAT, NONE),
        b("trunc", M::Trunc, S_FLOAT, NONE),
    ]
};

/// Names that Rust gives methods of another meaning or arity (`f32::log(self, base)`,
/// the integers' `pow(self, u32)`): their method spelling is not the builtin.
const RUST_METHOD_NAMES: &[&str] = &["log", "pow"];

fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// `pack4x8snorm`, `unpack2x16float`, ..: whether it packs, and the format.
fn pack_format(name: &str) -> Option<(bool, PackFormat)> {
    PackFormat::ALL.into_iter().find_map(|f| {
        if f.pack_name() == name {
            Some((true, f))
        } else if f.unpacks() && f.unpack_name() == name {
            Some((false, f))
        } else {
            None
        }
    })
}

/// Whether `name` is a WGSL builtin this module lowers as a free function.
pub(super) fn is_builtin(name: &str) -> bool {
    builtin(name).is_some() || pack_format(name).is_some() || matches!(name, "frexp" | "modf")
}

/// Whether `x.name(..)` is the builtin's method spelling: a builtin of that name that Rust
/// has no method for.
pub(super) fn is_method_spelling(name: &str) -> bool {
    (builtin(name).is_some() || pack_format(name).is_some()) && !RUST_METHOD_NAMES.contains(&name)
}

/// A vector type as kernels spell it (glam's names): `Vec4`, `UVec2`, `HVec3`.
fn vector_text(s: Scalar, n: u8) -> String {
    let prefix = match s {
        Scalar::U32 => "U",
        Scalar::I32 => "I",
        Scalar::F16 => "H",
        Scalar::F64 => "D",
        _ => "",
    };
    format!("{prefix}Vec{n}")
}

/// The types of a set, for messages: "`f32` or `f16`".
fn set_text(set: Set) -> String {
    let names: Vec<&str> = [
        (S_F32, "f32"),
        (S_F16, "f16"),
        (infer::S_F64, "f64"),
        (S_U32, "u32"),
        (S_I32, "i32"),
    ]
    .iter()
    .filter(|(s, _)| set & s != 0)
    .map(|(_, n)| *n)
    .collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

impl Lowerer<'_, '_> {
    /// A call of a WGSL builtin, `name(args..)`: `c` is the call, for its spans.
    pub(super) fn wgsl_call(&mut self, c: &syn::ExprCall, name: &str) -> R<Expr> {
        if matches!(name, "frexp" | "modf") {
            return self.err(
                c.span(),
                format!(
                    "`{name}` gives two values: bind them with `let ({}) = {name}(x);`",
                    if name == "frexp" {
                        "fract, exp"
                    } else {
                        "fract, whole"
                    }
                ),
            );
        }
        let mut args = Vec::new();
        for a in &c.args {
            args.push(self.expr(a)?);
        }
        self.wgsl_builtin(name, args, c.span(), c.func.span())
    }

    /// `x.name(args..)` where `name` is a builtin Rust has no method for: the builtin, with
    /// the receiver as its first argument.
    pub(super) fn wgsl_method(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        args: Vec<Expr>,
    ) -> R<Expr> {
        self.wgsl_builtin(name, args, m.span(), m.method.span())
    }

    fn wgsl_builtin(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        span: Span,
        name_span: Span,
    ) -> R<Expr> {
        if let Some((packs, format)) = pack_format(name) {
            return self.pack(name, packs, format, args, span);
        }
        let Some(b) = builtin(name) else {
            return self.err(name_span, format!("unknown builtin `{name}`"));
        };
        if args.len() != b.rest.len() + 1 {
            return self.err(
                span,
                format!(
                    "`{name}` takes {} argument(s), but {} were given",
                    b.rest.len() + 1,
                    args.len()
                ),
            );
        }
        let first = (args[0].span, args[0].tv);
        let what = format!("`{name}` takes {}", set_text(b.set));
        let vector = self.inf.vector(first.1);
        match (vector, b.shape) {
            (Some((s, n)), _) => {
                if infer::bit(s) & b.set == 0 {
                    return self.err(
                        first.0,
                        format!("{what} or vectors of them, not `{}`", vector_text(s, n)),
                    );
                }
                if b.shape == Shape::Vec3 && n != 3 {
                    return self.err(
                        first.0,
                        format!(
                            "`{name}` is defined for 3-component vectors, but this is `{}`",
                            vector_text(s, n)
                        ),
                    );
                }
            }
            (None, Shape::Any) => self.constrain_at(first.0, first.1, b.set, &what),
            (None, _) => {
                return self.err(
                    first.0,
                    format!("`{name}` takes vectors of {}", set_text(b.set)),
                );
            }
        }
        for (a, kind) in args[1..].iter().zip(b.rest) {
            let (sp, t) = (a.span, a.tv);
            match kind {
                Arg::Same => self.unify_at(sp, first.1, t),
                Arg::U32 => self.constrain_at(
                    sp,
                    t,
                    S_U32,
                    &format!("`{name}` takes a `u32` offset and count"),
                ),
                Arg::I32s => match vector {
                    Some((_, n)) => {
                        let want = self.inf.of_vector(Scalar::I32, n);
                        self.unify_at(sp, want, t);
                    }
                    None => self.constrain_at(
                        sp,
                        t,
                        S_I32,
                        &format!("`{name}` takes an `i32` exponent"),
                    ),
                },
                Arg::Component => match vector {
                    Some((s, _)) => {
                        let want = self.inf.of_scalar(s);
                        self.unify_at(sp, want, t);
                    }
                    None => self.unify_at(sp, first.1, t),
                },
            }
        }
        let tv = match (b.component_result, vector) {
            (true, Some((s, _))) => self.inf.of_scalar(s),
            _ => first.1,
        };
        Ok(self.expr_of(ExprKind::Math(b.f, args), tv, span))
    }

    /// `workgroup_uniform_load(&t[i])`: WGSL's `workgroupUniformLoad`, a workgroup barrier,
    /// the load of an element of workgroup memory, and a barrier again, so that every
    /// invocation reads the same value, which the uniformity analysis counts as uniform
    /// where the index is. The three are statements before the one that holds the call.
    pub(super) fn uniform_load(&mut self, c: &syn::ExprCall) -> R<Expr> {
        let span = c.span();
        let form = "`workgroup_uniform_load(&tile[i])`, an element of a `#[shared]` array";
        if let Some(place) = self.no_hoist {
            return self.err(span, format!("`workgroup_uniform_load` {place} holds barriers, which run before its statement; call it first, `let v = workgroup_uniform_load(&tile[i]);`"));
        }
        let arg = match c.args.first() {
            Some(syn::Expr::Reference(r)) if c.args.len() == 1 && r.mutability.is_none() => {
                &*r.expr
            }
            _ => {
                return self.err(
                    span,
                    format!("`workgroup_uniform_load` takes a reference: {form}"),
                )
            }
        };
        let load = self.expr(arg)?;
        let mut root = &load;
        while let ExprKind::LoadArray(base, _) = &root.kind {
            root = base;
        }
        let shared = matches!(root.kind, ExprKind::Local(id) if self.locals[id].shared);
        if !shared || !matches!(load.kind, ExprKind::LoadArray(..)) {
            return self.err(
                arg.span(),
                format!("`workgroup_uniform_load` reads workgroup memory: {form}"),
            );
        }
        let (lspan, tv) = (load.span, load.tv);
        let id = self.declare("fg_uload", false, false, lspan, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_uload");
        }
        self.locals[id].name = "the value of `workgroup_uniform_load`".to_string();
        self.locals[id].hidden = Some(UNIFORM_LOAD);
        let barrier = Stmt::Barrier {
            kind: Barrier::Workgroup,
            span,
        };
        self.pending.extend([
            barrier.clone(),
            Stmt::Let {
                local: id,
                init: Some(load),
            },
            barrier,
        ]);
        Ok(self.expr_of(ExprKind::Local(id), tv, span))
    }

    /// `pack4x8snorm(v)` (a vector into a `u32`) and `unpack4x8snorm(u)` (back).
    fn pack(
        &mut self,
        name: &str,
        packs: bool,
        format: PackFormat,
        args: Vec<Expr>,
        span: Span,
    ) -> R<Expr> {
        let (s, n) = format.vector();
        let vec_text = format!("`{}`", vector_text(s, n));
        if args.len() != 1 {
            let takes = if packs { vec_text } else { "`u32`".to_string() };
            return self.err(span, format!("`{name}` takes one {takes}"));
        }
        let (sp, t) = (args[0].span, args[0].tv);
        let (f, tv) = if packs {
            let want = self.inf.of_vector(s, n);
            if self.inf.unify(want, t).is_err() {
                return self.err(sp, format!("`{name}` takes a {vec_text}"));
            }
            (MathFn::Pack(format), self.inf.of_scalar(Scalar::U32))
        } else {
            self.constrain_at(sp, t, S_U32, &format!("`{name}` takes a `u32`"));
            (MathFn::Unpack(format), self.inf.of_vector(s, n))
        };
        Ok(self.expr_of(ExprKind::Math(f, args), tv, span))
    }

    /// `let (fract, exp) = frexp(x);` and `let (fract, whole) = modf(x);`: `x` is evaluated
    /// once, into a hidden local, and each name bound to its part.
    pub(super) fn split_float(
        &mut self,
        pat: &syn::PatTuple,
        c: &syn::ExprCall,
        name: &str,
        out: &mut Block,
    ) -> R<()> {
        let parts = if name == "frexp" {
            "fract, exp"
        } else {
            "fract, whole"
        };
        if c.args.len() != 1 {
            return self.err(
                c.span(),
                format!("`{name}` takes one float: `let ({parts}) = {name}(x);`"),
            );
        }
        if pat.elems.len() != 2 {
            return self.err(
                pat.span(),
                format!("`{name}` gives two values: `let ({parts}) = {name}(x);`"),
            );
        }
        let x = self.expr(&c.args[0])?;
        let (span, tv) = (x.span, x.tv);
        match self.inf.vector(tv) {
            Some((s, n)) if infer::bit(s) & S_F32_16 == 0 => {
                return self.err(
                    span,
                    format!(
                        "`{name}` takes `f32` or `f16`, or vectors of them, not `{}`",
                        vector_text(s, n)
                    ),
                );
            }
            Some(_) => {}
            None => self.constrain_at(
                span,
                tv,
                S_F32_16,
                &format!("`{name}` takes `f32` or `f16`"),
            ),
        }
        let hidden = self.declare("fg_split", false, false, span, tv);
        if let Some(scope) = self.scopes.last_mut() {
            scope.locals.remove("fg_split");
        }
        self.locals[hidden].name = format!("{name} operand");
        self.locals[hidden].hidden = Some("fg_split");
        out.push(Stmt::Let {
            local: hidden,
            init: Some(x),
        });
        let (first, second) = if name == "frexp" {
            (MathFn::FrexpFract, MathFn::FrexpExp)
        } else {
            (MathFn::Fract, MathFn::Trunc)
        };
        let second_tv = match (name, self.inf.vector(tv)) {
            ("frexp", Some((_, n))) => self.inf.of_vector(Scalar::I32, n),
            ("frexp", None) => self.inf.of_scalar(Scalar::I32),
            _ => tv,
        };
        for (p, (f, ptv)) in pat.elems.iter().zip([(first, tv), (second, second_tv)]) {
            let (pname, mutable, pspan) = match p {
                syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                    pi.ident.to_string(),
                    pi.mutability.is_some(),
                    pi.ident.span(),
                ),
                syn::Pat::Wild(_) => continue,
                other => {
                    return self.err(
                        other.span(),
                        format!("bind each value of `{name}` to a name (or `_`)"),
                    );
                }
            };
            let operand = self.expr_of(ExprKind::Local(hidden), tv, span);
            let value = self.expr_of(ExprKind::Math(f, vec![operand]), ptv, span);
            let id = self.declare(&pname, mutable, false, pspan, ptv);
            out.push(Stmt::Let {
                local: id,
                init: Some(value),
            });
        }
        Ok(())
    }
}
