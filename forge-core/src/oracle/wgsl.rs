//! WGSL's builtins that no Rust method means, as the oracle computes them: the free
//! functions of the kernel language's third edition (`first_leading_bit(x)`, `mix(a, b, t)`,
//! `pack4x8snorm(v)`, ...), each after WGSL's definition.
//!
//! Where WGSL leaves a result open, the language picks one and every side (this module,
//! the WGSL the macro emits, the CUDA prelude) computes that one:
//! - `min` and `max` inside `clamp`, `saturate` and `smoothstep` ignore a NaN operand, as
//!   Rust's `f32::min` does, so `clamp(x, lo, hi)` is `min(max(x, lo), hi)` (`hi` when
//!   `lo > hi`) and `saturate(NaN)` is 0;
//! - `sign(x)` is 0 for either zero and NaN for NaN.
//!
//! Some inputs WGSL leaves undefined and this module cannot pin for the GPU, whose builtin
//! runs there: `ldexp(x, e)` for `e > 128`, `quantize_to_f16` and `pack2x16float` out of
//! `f16`'s range, the packing functions of NaN, `frexp` of an infinity or NaN. The oracle
//! gives the mathematical result (or NaN's own); the GPU's may differ.
//!
//! The float functions take `f32`: the macro computes `f16` through them and rounds once.
//! Generated code calls these; they are public so that it can, not as a user API. Part of
//! the oracle (layer 2).

/// `clamp(x, lo, hi)` on floats: `min(max(x, lo), hi)`, NaN operands ignored.
#[inline(always)]
pub fn clamp_min_max_f32(x: f32, lo: f32, hi: f32) -> f32 {
    x.max(lo).min(hi)
}

/// `clamp(x, lo, hi)` on integers: `min(max(x, lo), hi)`.
#[inline(always)]
pub fn clamp_min_max_int<T: Ord>(x: T, lo: T, hi: T) -> T {
    x.max(lo).min(hi)
}

/// `fract(x)`: `x - floor(x)` (Rust's `fract` is `x - trunc(x)`).
#[inline(always)]
pub fn fract_floor_f32(x: f32) -> f32 {
    x - x.floor()
}

/// `sign(x)` on `f32`: 1, -1, or 0 for either zero; NaN stays NaN.
#[inline(always)]
pub fn sign_f32(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// `sign(x)` on `i32`.
#[inline(always)]
pub fn sign_i32(x: i32) -> i32 {
    x.signum()
}

/// `inverse_sqrt(x)`: `1 / sqrt(x)` (the GPU's is an approximation within WGSL's 2 ulp).
#[inline(always)]
pub fn inverse_sqrt_f32(x: f32) -> f32 {
    1.0 / x.sqrt()
}

/// `saturate(x)`: `clamp(x, 0, 1)`.
#[inline(always)]
pub fn saturate_f32(x: f32) -> f32 {
    clamp_min_max_f32(x, 0.0, 1.0)
}

/// `step(edge, x)`: 1 where `edge <= x`, else 0.
#[inline(always)]
pub fn step_f32(edge: f32, x: f32) -> f32 {
    if edge <= x {
        1.0
    } else {
        0.0
    }
}

/// `mix(a, b, t)`: `a·(1 - t) + b·t`, in that order.
#[inline(always)]
pub fn mix_f32(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

/// `smoothstep(lo, hi, x)`: `t·t·(3 - 2t)` for `t = saturate((x - lo) / (hi - lo))`.
#[inline(always)]
pub fn smoothstep_f32(lo: f32, hi: f32, x: f32) -> f32 {
    let t = saturate_f32((x - lo) / (hi - lo));
    t * t * (3.0 - 2.0 * t)
}

/// `ldexp(x, e)`: `x·2^e`, rounded once. `f64` holds every product exactly once `e` is
/// kept within ±350, past which an `f32` result is 0 or infinite anyway.
#[inline(always)]
pub fn ldexp_f32(x: f32, e: i32) -> f32 {
    let e = e.clamp(-350, 350);
    (f64::from(x) * 2f64.powi(e)) as f32
}

/// `quantize_to_f16(x)`: `x` rounded to the nearest `f16` (ties to even), back as `f32`.
#[inline(always)]
pub fn quantize_to_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// `frexp(x)`'s fraction: in `[0.5, 1)` with `x`'s sign, or `x` itself for a zero (and
/// for an infinity or NaN, where WGSL leaves it open).
pub fn frexp_fract_f32(x: f32) -> f32 {
    frexp_f32(x).0
}

/// `frexp(x)`'s exponent: `x = fract·2^exp`; 0 for a zero, an infinity or NaN.
pub fn frexp_exp_f32(x: f32) -> i32 {
    frexp_f32(x).1
}

fn frexp_f32(x: f32) -> (f32, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    // A subnormal is scaled into the normal range first (exactly: a power of two).
    let (y, bias) = if x.abs() < f32::MIN_POSITIVE {
        (x * 2f32.powi(32), 32)
    } else {
        (x, 0)
    };
    let bits = y.to_bits();
    let biased = ((bits >> 23) & 0xff) as i32;
    // The fraction keeps the sign and mantissa, with the exponent of [0.5, 1).
    let fract = f32::from_bits((bits & 0x807f_ffff) | (126 << 23));
    (fract, biased - 126 - bias)
}

/// Integer bit functions of WGSL over `u32` and `i32`: results of the operand's type.
pub trait Bits: Copy {
    /// The bits, as `u32`.
    fn to_u32(self) -> u32;
    /// Back from bits.
    fn from_u32(b: u32) -> Self;
    /// Whether the type is signed (`extract_bits` sign-extends, `first_leading_bit` looks
    /// for the first bit unlike the sign).
    const SIGNED: bool;
}

impl Bits for u32 {
    fn to_u32(self) -> u32 {
        self
    }
    fn from_u32(b: u32) -> Self {
        b
    }
    const SIGNED: bool = false;
}

impl Bits for i32 {
    fn to_u32(self) -> u32 {
        self as u32
    }
    fn from_u32(b: u32) -> Self {
        b as i32
    }
    const SIGNED: bool = true;
}

/// `count_one_bits(x)`.
#[inline(always)]
pub fn count_one_bits<T: Bits>(x: T) -> T {
    T::from_u32(x.to_u32().count_ones())
}

/// `count_leading_zeros(x)`: 32 for 0.
#[inline(always)]
pub fn count_leading_zeros<T: Bits>(x: T) -> T {
    T::from_u32(x.to_u32().leading_zeros())
}

/// `count_trailing_zeros(x)`: 32 for 0.
#[inline(always)]
pub fn count_trailing_zeros<T: Bits>(x: T) -> T {
    T::from_u32(x.to_u32().trailing_zeros())
}

/// `first_leading_bit(x)`: the position of the most significant 1 bit (for a negative
/// `i32`, of the most significant 0 bit); all ones (-1) where there is none.
#[inline(always)]
pub fn first_leading_bit<T: Bits>(x: T) -> T {
    let b = x.to_u32();
    let b = if T::SIGNED && b >> 31 == 1 { !b } else { b };
    T::from_u32(if b == 0 {
        u32::MAX
    } else {
        31 - b.leading_zeros()
    })
}

/// `first_trailing_bit(x)`: the position of the least significant 1 bit; all ones (-1)
/// where there is none.
#[inline(always)]
pub fn first_trailing_bit<T: Bits>(x: T) -> T {
    let b = x.to_u32();
    T::from_u32(if b == 0 { u32::MAX } else { b.trailing_zeros() })
}

/// WGSL's offset and count of `extract_bits`/`insert_bits`: `o = min(offset, 32)`,
/// `c = min(count, 32 - o)`.
fn bit_range(offset: u32, count: u32) -> (u32, u32) {
    let o = offset.min(32);
    (o, count.min(32 - o))
}

/// `extract_bits(x, offset, count)`: `count` bits of `x` from `offset`, into the low
/// bits; sign-extended from the highest for `i32`; 0 when `count` is 0.
#[inline(always)]
pub fn extract_bits<T: Bits>(x: T, offset: u32, count: u32) -> T {
    let (o, c) = bit_range(offset, count);
    if c == 0 {
        return T::from_u32(0);
    }
    let b = x.to_u32();
    // Left-align the field, then shift it down: arithmetic for `i32`.
    let up = b << (32 - o - c);
    T::from_u32(if T::SIGNED {
        ((up as i32) >> (32 - c)) as u32
    } else {
        up >> (32 - c)
    })
}

/// `insert_bits(x, bits, offset, count)`: `x` with its `count` bits from `offset`
/// replaced by the low bits of `bits`.
#[inline(always)]
pub fn insert_bits<T: Bits>(x: T, bits: T, offset: u32, count: u32) -> T {
    let (o, c) = bit_range(offset, count);
    if c == 0 {
        return x;
    }
    let mask = (u32::MAX >> (32 - c)) << o;
    T::from_u32((x.to_u32() & !mask) | ((bits.to_u32() << o) & mask))
}

/// One float into a signed normalised integer of `scale` (127 or 32767):
/// `floor(0.5 + scale·clamp(x, -1, 1))`.
fn snorm(x: f32, scale: f32) -> i32 {
    (0.5 + scale * clamp_min_max_f32(x, -1.0, 1.0)).floor() as i32
}

/// One float into an unsigned normalised integer of `scale` (255 or 65535).
fn unorm(x: f32, scale: f32) -> u32 {
    (0.5 + scale * clamp_min_max_f32(x, 0.0, 1.0)).floor() as u32
}

/// Values into one `u32`, `bits` each, the first in the low bits.
fn pack<const N: usize>(v: [u32; N], bits: u32) -> u32 {
    let mask = u32::MAX >> (32 - bits);
    v.iter()
        .enumerate()
        .fold(0, |acc, (i, &x)| acc | ((x & mask) << (bits * i as u32)))
}

/// One `u32` into `N` fields of `bits` each, the first from the low bits.
fn fields<const N: usize>(u: u32, bits: u32) -> [u32; N] {
    let mask = u32::MAX >> (32 - bits);
    std::array::from_fn(|i| (u >> (bits * i as u32)) & mask)
}

/// `pack4x8snorm(v)`.
pub fn pack4x8snorm(v: [f32; 4]) -> u32 {
    pack(v.map(|x| snorm(x, 127.0) as u32), 8)
}

/// `pack4x8unorm(v)`.
pub fn pack4x8unorm(v: [f32; 4]) -> u32 {
    pack(v.map(|x| unorm(x, 255.0)), 8)
}

/// `pack2x16snorm(v)`.
pub fn pack2x16snorm(v: [f32; 2]) -> u32 {
    pack(v.map(|x| snorm(x, 32767.0) as u32), 16)
}

/// `pack2x16unorm(v)`.
pub fn pack2x16unorm(v: [f32; 2]) -> u32 {
    pack(v.map(|x| unorm(x, 65535.0)), 16)
}

/// `pack2x16float(v)`: each component as the nearest `f16`'s bits.
pub fn pack2x16float(v: [f32; 2]) -> u32 {
    pack(v.map(|x| u32::from(half::f16::from_f32(x).to_bits())), 16)
}

/// `pack4x_i8(v)`: the low 8 bits of each component.
pub fn pack4x_i8(v: [i32; 4]) -> u32 {
    pack(v.map(|x| x as u32), 8)
}

/// `pack4x_u8(v)`: the low 8 bits of each component.
pub fn pack4x_u8(v: [u32; 4]) -> u32 {
    pack(v, 8)
}

/// `pack4x_i8_clamp(v)`: each component clamped to `[-128, 127]`.
pub fn pack4x_i8_clamp(v: [i32; 4]) -> u32 {
    pack(v.map(|x| x.clamp(-128, 127) as u32), 8)
}

/// `pack4x_u8_clamp(v)`: each component clamped to `[0, 255]`.
pub fn pack4x_u8_clamp(v: [u32; 4]) -> u32 {
    pack(v.map(|x| x.min(255)), 8)
}

/// `unpack4x8snorm(u)`: each byte, signed, over 127, at least -1.
pub fn unpack4x8snorm(u: u32) -> [f32; 4] {
    fields::<4>(u, 8).map(|b| (f32::from(b as u8 as i8) / 127.0).max(-1.0))
}

/// `unpack4x8unorm(u)`: each byte over 255.
pub fn unpack4x8unorm(u: u32) -> [f32; 4] {
    fields::<4>(u, 8).map(|b| b as f32 / 255.0)
}

/// `unpack2x16snorm(u)`: each half, signed, over 32767, at least -1.
pub fn unpack2x16snorm(u: u32) -> [f32; 2] {
    fields::<2>(u, 16).map(|b| (f32::from(b as u16 as i16) / 32767.0).max(-1.0))
}

/// `unpack2x16unorm(u)`: each half over 65535.
pub fn unpack2x16unorm(u: u32) -> [f32; 2] {
    fields::<2>(u, 16).map(|b| b as f32 / 65535.0)
}

/// `unpack2x16float(u)`: each half as an `f16`'s bits.
pub fn unpack2x16float(u: u32) -> [f32; 2] {
    fields::<2>(u, 16).map(|b| half::f16::from_bits(b as u16).to_f32())
}

/// `unpack4x_i8(u)`: each byte, sign-extended.
pub fn unpack4x_i8(u: u32) -> [i32; 4] {
    fields::<4>(u, 8).map(|b| i32::from(b as u8 as i8))
}

/// `unpack4x_u8(u)`: each byte.
pub fn unpack4x_u8(u: u32) -> [u32; 4] {
    fields::<4>(u, 8)
}

fn dot<const N: usize>(a: [f32; N], b: [f32; N]) -> f32 {
    super::dot_float(a, b)
}

/// `face_forward(n, i, nref)`: `n` where `dot(nref, i) < 0`, else `-n`.
pub fn face_forward<const N: usize>(n: [f32; N], i: [f32; N], nref: [f32; N]) -> [f32; N] {
    if dot(nref, i) < 0.0 {
        n
    } else {
        n.map(|x| -x)
    }
}

/// `reflect(i, n)`: `i - 2·dot(n, i)·n`.
pub fn reflect<const N: usize>(i: [f32; N], n: [f32; N]) -> [f32; N] {
    let d = dot(n, i);
    std::array::from_fn(|c| i[c] - 2.0 * d * n[c])
}

/// `refract(i, n, eta)`: with `k = 1 - eta²·(1 - dot(n, i)²)`, zero where `k < 0`, else
/// `eta·i - (eta·dot(n, i) + sqrt(k))·n`.
pub fn refract<const N: usize>(i: [f32; N], n: [f32; N], eta: f32) -> [f32; N] {
    let d = dot(n, i);
    let k = 1.0 - eta * eta * (1.0 - d * d);
    if k < 0.0 {
        return [0.0; N];
    }
    let s = eta * d + k.sqrt();
    std::array::from_fn(|c| eta * i[c] - s * n[c])
}

/// Vector functions of `f16` vectors: in `f32`, each component rounded once.
pub fn via_f32<const N: usize, const M: usize>(
    args: [[half::f16; N]; M],
    eta: half::f16,
    f: impl Fn([[f32; N]; M], f32) -> [f32; N],
) -> [half::f16; N] {
    f(args.map(|a| a.map(half::f16::to_f32)), eta.to_f32()).map(half::f16::from_f32)
}

/// `x.clamp(lo, hi)` on floats, the method: Rust's meaning, which panics unless
/// `lo <= hi` (a NaN bound included). The oracle reports that case as a bug in the kernel
/// (WGSL's `clamp` leaves it open, and the GPU's result is not checked); otherwise it is
/// `lo` below, `hi` above, and `x` (NaN too) between.
#[inline(always)]
pub fn clamp_method_float<T: super::Float + std::fmt::Debug>(
    kernel: &'static str,
    invocation: u32,
    x: T,
    lo: T,
    hi: T,
) -> crate::error::Result<T> {
    // `!(lo <= hi)` holds for a NaN bound too, as Rust's assertion does.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    if !(lo <= hi) {
        return Err(clamp_bounds(
            kernel,
            invocation,
            format!("{lo:?}"),
            format!("{hi:?}"),
        ));
    }
    Ok(super::clamp_float(x, lo, hi))
}

/// `x.clamp(lo, hi)` on integers, the method: reports `lo > hi` as Rust panics there.
#[inline(always)]
pub fn clamp_method_ord<T: Ord + std::fmt::Debug>(
    kernel: &'static str,
    invocation: u32,
    x: T,
    lo: T,
    hi: T,
) -> crate::error::Result<T> {
    if lo > hi {
        return Err(clamp_bounds(
            kernel,
            invocation,
            format!("{lo:?}"),
            format!("{hi:?}"),
        ));
    }
    Ok(super::clamp_ord(x, lo, hi))
}

#[cold]
#[inline(never)]
fn clamp_bounds(
    kernel: &'static str,
    invocation: u32,
    lo: String,
    hi: String,
) -> crate::error::ForgeError {
    crate::error::ForgeError::KernelBug {
        kernel,
        invocation: u64::from(invocation),
        what: format!(
            "called `x.clamp(lo, hi)` with lo = {lo} and hi = {hi}, not lo <= hi: Rust's \
             `clamp` panics there and WGSL's leaves the result open; order the bounds, or call \
             the free function `clamp(x, lo, hi)`, which is `min(max(x, lo), hi)` (so `hi`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_functions_follow_wgsl() {
        assert_eq!(first_leading_bit(0u32), u32::MAX);
        assert_eq!(first_leading_bit(1u32), 0);
        assert_eq!(first_leading_bit(0x8000_0000u32), 31);
        assert_eq!(first_leading_bit(0i32), -1);
        assert_eq!(first_leading_bit(-1i32), -1);
        assert_eq!(first_leading_bit(-2i32), 0);
        assert_eq!(first_leading_bit(i32::MIN), 30);
        assert_eq!(first_leading_bit(5i32), 2);
        assert_eq!(first_trailing_bit(0i32), -1);
        assert_eq!(first_trailing_bit(12u32), 2);
        assert_eq!(extract_bits(0xf0u32, 4, 4), 0xf);
        assert_eq!(extract_bits(0xf0i32, 4, 4), -1);
        assert_eq!(extract_bits(0xf0i32, 4, 5), 15);
        assert_eq!(extract_bits(0x1234_5678u32, 0, 32), 0x1234_5678);
        assert_eq!(extract_bits(0x1234_5678u32, 40, 8), 0);
        assert_eq!(extract_bits(-1i32, 28, 8), -1);
        assert_eq!(insert_bits(0u32, 0xffu32, 4, 4), 0xf0);
        assert_eq!(insert_bits(0xffff_ffffu32, 0, 0, 32), 0);
        assert_eq!(insert_bits(7u32, 0, 3, 0), 7);
        assert_eq!(count_leading_zeros(0i32), 32);
        assert_eq!(count_one_bits(-1i32), 32);
    }

    #[test]
    fn float_functions_follow_wgsl() {
        assert_eq!(fract_floor_f32(-0.25), 0.75);
        assert_eq!(sign_f32(-0.0).to_bits(), 0.0f32.to_bits());
        assert!(sign_f32(f32::NAN).is_nan());
        assert_eq!(clamp_min_max_f32(5.0, 3.0, 1.0), 1.0);
        assert_eq!(clamp_min_max_f32(f32::NAN, 0.0, 1.0), 0.0);
        assert_eq!(saturate_f32(f32::NAN), 0.0);
        assert_eq!(step_f32(1.0, 1.0), 1.0);
        assert_eq!(mix_f32(2.0, 4.0, 0.25), 2.5);
        assert_eq!(smoothstep_f32(0.0, 2.0, 1.0), 0.5);
        assert_eq!(ldexp_f32(1.5, 3), 12.0);
        assert_eq!(ldexp_f32(1.0, -149), f32::from_bits(1));
        assert_eq!(ldexp_f32(1.0, 1000), f32::INFINITY);
        assert_eq!(quantize_to_f16(1.0 + 2f32.powi(-12)), 1.0);
        assert_eq!(frexp_f32(8.0), (0.5, 4));
        assert_eq!(frexp_f32(-3.0), (-0.75, 2));
        assert_eq!(frexp_f32(f32::from_bits(1)), (0.5, -148));
        assert_eq!(frexp_f32(0.0), (0.0, 0));
    }

    #[test]
    fn packing_follows_wgsl() {
        assert_eq!(pack4x8snorm([1.0, -1.0, 0.0, 0.5]), 0x40_00_81_7f);
        assert_eq!(pack4x8unorm([1.0, 0.0, 2.0, -1.0]), 0x00_ff_00_ff);
        assert_eq!(pack2x16float([1.0, -2.0]), 0xc000_3c00);
        assert_eq!(pack4x_i8_clamp([300, -300, -1, 5]), 0x05_ff_80_7f);
        assert_eq!(pack4x_u8_clamp([300, 1, 2, 3]), 0x03_02_01_ff);
        assert_eq!(
            unpack4x8snorm(0x40_00_81_7f),
            [1.0, -1.0, 0.0, 64.0 / 127.0]
        );
        assert_eq!(unpack4x_i8(0x05_ff_80_7f), [127, -128, -1, 5]);
        assert_eq!(unpack2x16float(0xc000_3c00), [1.0, -2.0]);
        assert_eq!(unpack4x8snorm(0x80), [-1.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn clamp_method_reports_unordered_bounds() {
        assert_eq!(clamp_method_float("k", 3, 5.0f32, 0.0, 1.0).unwrap(), 1.0);
        let e = clamp_method_float("k", 3, 5.0f32, 1.0, 0.0).unwrap_err();
        assert!(e.to_string().contains("lo = 1.0 and hi = 0.0"), "{e}");
        assert!(clamp_method_float("k", 3, 5.0f32, f32::NAN, 0.0).is_err());
        assert!(clamp_method_ord("k", 0, 1i32, 2, 1).is_err());
        assert_eq!(clamp_method_ord("k", 0, 9u32, 2, 4).unwrap(), 4);
    }
}
