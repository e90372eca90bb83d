//! The CPU oracle's support: what the oracles that `#[forge_kernel]` generates call, and
//! nothing else. Layer 2 (offline work: the CPU side of a kernel, no device).
//!
//! This module owns:
//! - **WGSL's semantics** where they differ from Rust's: integer division and remainder,
//!   float-to-integer conversions, clamps, vector maths, packed dot products;
//! - **the interpreter's support**: the invocation ids of a workgroup, the oracle's
//!   outputs and loop budget, its type-erased arguments (`cpu_dyn`), the uniformity checks
//!   around barriers, subgroups ([`subgroup`]), cooperative matrices ([`coop`]) and their
//!   rows ([`rows`]), and prints
//!   ([`prints`]);
//! - **the checks**: indexing that reports the kernel, the invocation, the binding, the
//!   index and the length ([`ix`]), and data-race detection ([`race`]).
//!
//! What the oracle shares with the launches lives below both: the LEN and `threads`
//! evaluators and the length checks in [`crate::sizes`], the grid in [`crate::plan`]. The
//! typed call's own helpers are the runtime's (`runtime::call`).
//!
//! Generated code calls these; they are public so that it can, not as a user API. The
//! exception is [`subgroup`], whose [`subgroup::with_subgroup_size`] runs oracles with
//! another subgroup size.

use crate::error::{ForgeError, Result};
use crate::kernel::{DynArgs, ElemType, HostBuffer, ScalarValue};

pub mod coop;
pub mod prints;
pub mod race;
pub mod rows;
pub mod subgroup;
pub mod wgsl;
pub use race::{Memory, RaceDetector};

/// Checks an index: the oracle reports out-of-bounds accesses instead of clamping them.
#[inline(always)]
pub fn ix(
    kernel: &'static str,
    invocation: u32,
    binding: &'static str,
    index: i64,
    len: usize,
) -> Result<usize> {
    if index >= 0 && (index as u64) < len as u64 {
        Ok(index as usize)
    } else {
        Err(out_of_bounds(kernel, invocation, binding, index, len))
    }
}

/// [`ix`]'s error, out of line: every index of every kernel's oracle inlines [`ix`], and the
/// error's construction at each of them would be code for LLVM to compile in the user's
/// crate for a path that runs at most once.
#[cold]
#[inline(never)]
fn out_of_bounds(
    kernel: &'static str,
    invocation: u32,
    binding: &'static str,
    index: i64,
    len: usize,
) -> ForgeError {
    ForgeError::OutOfBounds {
        kernel,
        invocation: invocation as u64,
        binding,
        index,
        len,
    }
}

/// WGSL `u32` division: `x / 0` is `x`.
#[inline(always)]
pub fn div_u32(a: u32, b: u32) -> u32 {
    a.checked_div(b).unwrap_or(a)
}

/// WGSL `u32` remainder: `x % 0` is `0`.
#[inline(always)]
pub fn rem_u32(a: u32, b: u32) -> u32 {
    if b == 0 {
        0
    } else {
        a % b
    }
}

/// WGSL `i32` division: `x / 0` is `x`, and `MIN / -1` is `MIN`.
#[inline(always)]
pub fn div_i32(a: i32, b: i32) -> i32 {
    if b == 0 || (a == i32::MIN && b == -1) {
        a
    } else {
        a / b
    }
}

/// WGSL `i32` remainder: `x % 0` is `0`, and `MIN % -1` is `0`.
#[inline(always)]
pub fn rem_i32(a: i32, b: i32) -> i32 {
    if b == 0 || (a == i32::MIN && b == -1) {
        0
    } else {
        a % b
    }
}

/// WGSL's `dot4I8Packed`: the four bytes of `a` and of `b`, each a signed 8-bit integer,
/// multiplied pairwise and summed. The sum cannot overflow: it lies within ±4·128².
pub fn dot4_i8_packed(a: u32, b: u32) -> i32 {
    a.to_le_bytes()
        .iter()
        .zip(b.to_le_bytes())
        .map(|(&x, y)| i32::from(x as i8) * i32::from(y as i8))
        .sum()
}

/// WGSL's `dot4U8Packed`: the same for unsigned bytes (at most 4·255², no overflow).
pub fn dot4_u8_packed(a: u32, b: u32) -> u32 {
    a.to_le_bytes()
        .iter()
        .zip(b.to_le_bytes())
        .map(|(&x, y)| u32::from(x) * u32::from(y))
        .sum()
}

/// `x.div_ceil(y)` with WGSL division: `x.div_ceil(0)` is `x`.
#[inline(always)]
pub fn div_ceil_u32(a: u32, b: u32) -> u32 {
    div_u32(a, b) + (rem_u32(a, b) != 0) as u32
}

/// WGSL's `i32(f32)`: truncation, clamped to the f32 values that fit (`2^31 - 128` at
/// the top), with NaN as 0.
#[inline(always)]
pub fn f32_to_i32(x: f32) -> i32 {
    if x.is_nan() {
        0
    } else {
        x.clamp(-2147483648.0, 2147483520.0) as i32
    }
}

/// WGSL's `u32(f32)`: truncation, clamped to `[0, 2^32 - 256]`, with NaN as 0.
#[inline(always)]
pub fn f32_to_u32(x: f32) -> u32 {
    if x.is_nan() {
        0
    } else {
        x.clamp(0.0, 4294967040.0) as u32
    }
}

/// WGSL's `i32(f16)`: truncation, clamped to the f16 values that fit (`±65504`, so an
/// infinity gives 65504), with NaN as 0.
#[inline(always)]
pub fn f16_to_i32(x: half::f16) -> i32 {
    let x = x.to_f32();
    if x.is_nan() {
        0
    } else {
        x.clamp(-65504.0, 65504.0) as i32
    }
}

/// WGSL's `u32(f16)`: truncation, clamped to `[0, 65504]`, with NaN as 0.
#[inline(always)]
pub fn f16_to_u32(x: half::f16) -> u32 {
    let x = x.to_f32();
    if x.is_nan() {
        0
    } else {
        x.clamp(0.0, 65504.0) as u32
    }
}

/// Rust's `f32::clamp` without its panic on `lo > hi`: the same formula the WGSL uses.
#[inline(always)]
pub fn clamp_f32(x: f32, lo: f32, hi: f32) -> f32 {
    clamp_float(x, lo, hi)
}

/// [`clamp_f32`] for `f32` and `f64`.
#[inline(always)]
pub fn clamp_float<T: Float>(x: T, lo: T, hi: T) -> T {
    let y = if x > hi { hi } else { x };
    if x < lo {
        lo
    } else {
        y
    }
}

/// The float types the oracle computes in: `f32`, and `f64` where kernels use it.
pub trait Float:
    Copy
    + Default
    + PartialOrd
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::Div<Output = Self>
    + core::ops::Rem<Output = Self>
{
    /// The square root.
    fn sqrt(self) -> Self;
    /// The absolute value.
    fn abs(self) -> Self;
}

impl Float for f32 {
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
}

impl Float for f64 {
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
}

/// `a.dot(b)` for `f32` and `f64` vectors, summed in order.
#[inline(always)]
pub fn dot_float<T: Float, const N: usize>(a: [T; N], b: [T; N]) -> T {
    let mut s = T::default();
    for i in 0..N {
        s = s + a[i] * b[i];
    }
    s
}

/// `a.length()` for `f32` and `f64` vectors.
#[inline(always)]
pub fn length_float<T: Float, const N: usize>(a: [T; N]) -> T {
    dot_float(a, a).sqrt()
}

/// `a.normalize()` for `f32` and `f64` vectors.
#[inline(always)]
pub fn normalize_float<T: Float, const N: usize>(a: [T; N]) -> [T; N] {
    let l = length_float(a);
    a.map(|x| x / l)
}

/// `a.cross(b)`, as glam and WGSL define it.
#[inline(always)]
pub fn cross<T: Float>(a: [T; 3], b: [T; 3]) -> [T; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// `a.distance(b)`: the length of `a - b`.
#[inline(always)]
pub fn distance<T: Float, const N: usize>(a: [T; N], b: [T; N]) -> T {
    let mut d = a;
    for i in 0..N {
        d[i] = a[i] - b[i];
    }
    length_float(d)
}

/// `a.cross(b)` for `f16` vectors, in f32 and rounded once per component.
#[inline(always)]
pub fn cross_f16(a: [half::f16; 3], b: [half::f16; 3]) -> [half::f16; 3] {
    cross(a.map(half::f16::to_f32), b.map(half::f16::to_f32)).map(half::f16::from_f32)
}

/// `a.distance(b)` for `f16` vectors, in f32 and rounded once.
#[inline(always)]
pub fn distance_f16<const N: usize>(a: [half::f16; N], b: [half::f16; N]) -> half::f16 {
    half::f16::from_f32(distance(a.map(half::f16::to_f32), b.map(half::f16::to_f32)))
}

/// `x.rem_euclid(y)` on `i32` with WGSL's `%` underneath (`x % 0` is 0), wrapping where
/// Rust's would overflow (`i32::MIN.rem_euclid(-1)`).
#[inline(always)]
pub fn rem_euclid_i32(x: i32, y: i32) -> i32 {
    let r = rem_i32(x, y);
    if r < 0 {
        r.wrapping_add(y.wrapping_abs())
    } else {
        r
    }
}

/// `x.rem_euclid(y)` on `u32`: WGSL's `%` (`x % 0` is 0).
#[inline(always)]
pub fn rem_euclid_u32(x: u32, y: u32) -> u32 {
    rem_u32(x, y)
}

/// `x.rem_euclid(y)` on `f32`, as Rust defines it.
#[inline(always)]
pub fn rem_euclid_f32(x: f32, y: f32) -> f32 {
    rem_euclid_float(x, y)
}

/// `x.rem_euclid(y)` on `f64`, as Rust defines it.
#[inline(always)]
pub fn rem_euclid_f64(x: f64, y: f64) -> f64 {
    rem_euclid_float(x, y)
}

#[inline(always)]
fn rem_euclid_float<T: Float>(x: T, y: T) -> T {
    let r = x % y;
    if r < T::default() {
        r + y.abs()
    } else {
        r
    }
}

/// WGSL's `i32(f64)`: truncation, clamped to the `i32` range (every `i32` is an `f64`),
/// with NaN as 0.
#[inline(always)]
pub fn f64_to_i32(x: f64) -> i32 {
    if x.is_nan() {
        0
    } else {
        x.clamp(i32::MIN as f64, i32::MAX as f64) as i32
    }
}

/// WGSL's `u32(f64)`: truncation, clamped to the `u32` range, with NaN as 0.
#[inline(always)]
pub fn f64_to_u32(x: f64) -> u32 {
    if x.is_nan() {
        0
    } else {
        x.clamp(0.0, u32::MAX as f64) as u32
    }
}

/// WGSL's `f16(f64)`: the nearest `f16`, ties to even, rounded once. Through `f32` only
/// where that rounding is exact (the value is already an `f32`); otherwise by the
/// neighbours of the `f32` guess.
pub fn f64_to_f16(x: f64) -> half::f16 {
    let guess = half::f16::from_f64(x);
    if !x.is_finite() || !guess.is_finite() || guess.to_f64() == x {
        return guess;
    }
    // The nearest of the guess and its two neighbours; a tie goes to the even one.
    let bits = guess.to_bits();
    let mut best = guess;
    for b in [bits.wrapping_sub(1), bits.wrapping_add(1)] {
        let c = half::f16::from_bits(b);
        if !c.is_finite() && !c.is_infinite() {
            continue;
        }
        let (dc, db) = ((c.to_f64() - x).abs(), (best.to_f64() - x).abs());
        if dc < db || (dc == db && b & 1 == 0) {
            best = c;
        }
    }
    best
}

/// Rust-meaning integer clamp without the panic on `lo > hi`: `min(max(x, lo), hi)`.
#[inline(always)]
pub fn clamp_ord<T: Ord>(x: T, lo: T, hi: T) -> T {
    x.max(lo).min(hi)
}

/// `a.dot(b)` for float vectors.
#[inline(always)]
pub fn dot_f32<const N: usize>(a: [f32; N], b: [f32; N]) -> f32 {
    let mut s = 0.0f32;
    for i in 0..N {
        s += a[i] * b[i];
    }
    s
}

/// `a.dot(b)` for integer vectors, wrapping as WGSL's integers do.
#[inline(always)]
pub fn dot_int<T: WrappingInt, const N: usize>(a: [T; N], b: [T; N]) -> T {
    let mut s = T::default();
    for i in 0..N {
        s = s.wadd(a[i].wmul(b[i]));
    }
    s
}

/// Wrapping arithmetic on `u32` and `i32`, for [`dot_int`].
pub trait WrappingInt: Copy + Default {
    /// Wrapping addition.
    fn wadd(self, o: Self) -> Self;
    /// Wrapping multiplication.
    fn wmul(self, o: Self) -> Self;
}

impl WrappingInt for u32 {
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn wmul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
}

impl WrappingInt for i32 {
    fn wadd(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn wmul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
}

/// `a.length()`
#[inline(always)]
pub fn length<const N: usize>(a: [f32; N]) -> f32 {
    dot_f32(a, a).sqrt()
}

/// `a.normalize()`
#[inline(always)]
pub fn normalize<const N: usize>(a: [f32; N]) -> [f32; N] {
    let l = length(a);
    a.map(|x| x / l)
}

/// `a.dot(b)` for `f16` vectors: summed in f32 and rounded once (WGSL leaves the
/// intermediate precision of `dot` to the implementation).
#[inline(always)]
pub fn dot_f16<const N: usize>(a: [half::f16; N], b: [half::f16; N]) -> half::f16 {
    half::f16::from_f32(dot_f32(a.map(half::f16::to_f32), b.map(half::f16::to_f32)))
}

/// `a.length()` for `f16` vectors, in f32 and rounded once.
#[inline(always)]
pub fn length_f16<const N: usize>(a: [half::f16; N]) -> half::f16 {
    half::f16::from_f32(length(a.map(half::f16::to_f32)))
}

/// `a.normalize()` for `f16` vectors, in f32 and rounded once per component.
#[inline(always)]
pub fn normalize_f16<const N: usize>(a: [half::f16; N]) -> [half::f16; N] {
    normalize(a.map(half::f16::to_f32)).map(half::f16::from_f32)
}

/// An invocation's `local_id()` from its `local_index()` in a workgroup of `shape`.
#[inline(always)]
pub fn local_id(lane: u32, shape: [u32; 3]) -> [u32; 3] {
    [
        lane % shape[0],
        (lane / shape[0]) % shape[1],
        lane / (shape[0] * shape[1]),
    ]
}

/// An invocation's `global_id()`: its workgroup's logical id times the shape, plus its
/// local id, wrapping as WGSL's `u32` does.
#[inline(always)]
pub fn global_id(workgroup: [u32; 3], lane: u32, shape: [u32; 3]) -> [u32; 3] {
    let l = local_id(lane, shape);
    [0, 1, 2].map(|d| workgroup[d].wrapping_mul(shape[d]).wrapping_add(l[d]))
}

/// An invocation's `global_index()`: `x + w·(y + h·z)` of its `global_id()` in a grid of
/// `threads` (wrapping, as in WGSL).
#[inline(always)]
pub fn global_index(workgroup: [u32; 3], lane: u32, shape: [u32; 3], threads: [u32; 3]) -> u32 {
    let g = global_id(workgroup, lane, shape);
    g[0].wrapping_add(threads[0].wrapping_mul(g[1].wrapping_add(threads[1].wrapping_mul(g[2]))))
}

/// A zeroed output of `len` elements.
pub fn zeroed<T: bytemuck::Zeroable + Clone>(len: usize) -> Vec<T> {
    vec![T::zeroed(); len]
}

/// Checks that `kernel` declares `schedule` ([`crate::plan::check_declared`]): the oracle,
/// like the runtime, runs a kernel only at a schedule it was written for.
pub fn check_schedule(
    kernel: &dyn crate::kernel::Kernel,
    schedule: &crate::Schedule,
) -> Result<()> {
    crate::plan::check_dims(kernel, schedule)?;
    crate::plan::check_declared(kernel, schedule)
}

/// The oracle's zeroed outputs, one per `(name, expression, length)`, after checking that
/// their bytes together stay within [`OracleOptions::max_bytes`](crate::OracleOptions).
/// Nothing is allocated when they do not.
pub fn outputs_fit(
    kernel: &'static str,
    outs: &[(&'static str, &'static str, usize, usize)],
    options: &crate::kernel::OracleOptions,
) -> Result<()> {
    let mut total = 0u64;
    for &(arg, expr, len, size) in outs {
        total = total
            .checked_add(crate::sizes::out_bytes(kernel, arg, expr, len, size)?)
            .ok_or(ForgeError::BadExpression {
                kernel,
                what: arg,
                expr,
                reason: "the outputs' sizes in bytes overflow u64",
            })?;
        if total > options.max_bytes {
            return Err(ForgeError::OracleTooLarge {
                kernel,
                what: format!(
                    "its outputs (`{arg}`: {len} elements of {size} bytes, `{expr}`, and those before it)"
                ),
                requested: total,
                limit: options.max_bytes,
            });
        }
    }
    Ok(())
}

/// The oracle's loop budget ([`OracleOptions::max_loop_iterations`](crate::OracleOptions)):
/// every loop iteration ticks it, and an invocation (or, for a loop the workgroup runs
/// together, a workgroup) that runs past the budget without another invocation running in
/// between is stopped with [`ForgeError::LoopBudgetExceeded`].
#[derive(Debug)]
pub struct LoopBudget {
    kernel: &'static str,
    limit: u64,
    /// The invocation whose iterations `lane_used` counts.
    lane: u64,
    lane_used: u64,
    group_used: u64,
}

impl LoopBudget {
    /// A budget of `limit` iterations for `kernel`.
    pub fn new(kernel: &'static str, options: &crate::kernel::OracleOptions) -> Self {
        LoopBudget {
            kernel,
            limit: options.max_loop_iterations,
            lane: u64::MAX,
            lane_used: 0,
            group_used: 0,
        }
    }

    /// One iteration of a loop of invocation `invocation`.
    #[inline(always)]
    pub fn lane(&mut self, invocation: u32) -> Result<()> {
        let invocation = invocation as u64;
        if invocation != self.lane {
            self.lane = invocation;
            self.lane_used = 0;
        }
        self.lane_used += 1;
        if self.lane_used > self.limit {
            return Err(self.exceeded(format_args!("invocation {invocation}"), self.lane_used));
        }
        Ok(())
    }

    /// One iteration of a loop that workgroup `workgroup` runs together (one that encloses a
    /// barrier or a subgroup operation).
    #[inline(always)]
    pub fn group(&mut self, workgroup: u64) -> Result<()> {
        self.group_used += 1;
        if self.group_used > self.limit {
            return Err(self.exceeded(format_args!("workgroup {workgroup}"), self.group_used));
        }
        Ok(())
    }

    /// The error when `whom` ran past the budget on its `used`-th iteration; out of line, as
    /// [`ix`]'s error is, because [`lane`](Self::lane) and [`group`](Self::group) are
    /// inlined into every loop of every kernel's oracle.
    #[cold]
    #[inline(never)]
    fn exceeded(&self, whom: std::fmt::Arguments<'_>, used: u64) -> ForgeError {
        ForgeError::LoopBudgetExceeded {
            kernel: self.kernel,
            whom: whom.to_string(),
            iterations: used - 1,
        }
    }

    /// A new workgroup starts: its uniform loops count from zero.
    #[inline(always)]
    pub fn next_workgroup(&mut self) {
        self.group_used = 0;
        self.lane = u64::MAX;
    }
}

/// A binding's contents in dyn arguments, as a typed slice.
pub fn buf<'a, T: bytemuck::Pod>(
    kernel: &'static str,
    args: &'a DynArgs,
    i: usize,
    arg: &'static str,
) -> Result<&'a [T]> {
    let b = args
        .buffers
        .get(i)
        .and_then(|b| b.as_ref())
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel,
            message: format!("no data given for binding `{arg}`"),
        })?;
    let all: &[T] =
        bytemuck::try_cast_slice(b.words()).map_err(|e| ForgeError::InvalidArgument {
            kernel,
            message: format!("binding `{arg}` cannot be viewed as its element type: {e}"),
        })?;
    // `T` is the host element (`[f32; 2]` for a `Vec2` binding) or, for some callers, its
    // scalar: count in bytes so both views see exactly `len` elements.
    let n = b.len() * b.elem().size() / std::mem::size_of::<T>().max(1);
    all.get(..n).ok_or_else(|| ForgeError::InvalidArgument {
        kernel,
        message: format!("binding `{arg}` is shorter than its length"),
    })
}

/// Wraps a typed result as a type-erased buffer.
pub fn host<T: bytemuck::Pod>(elem: ElemType, data: &[T]) -> HostBuffer {
    HostBuffer::from_slice(elem, data)
}

/// The scalar getters of `cpu_dyn`: each takes scalar `i` (named `name`) of its type from
/// dyn arguments, or says what it got instead.
macro_rules! scalar_getters {
    ($($(#[$doc:meta])* $getter:ident -> $ty:ident = $variant:ident;)*) => {$(
        $(#[$doc])*
        pub fn $getter(
            kernel: &'static str,
            v: &[ScalarValue],
            i: usize,
            name: &'static str,
        ) -> Result<$ty> {
            match v.get(i) {
                Some(ScalarValue::$variant(x)) => Ok(*x),
                other => Err(scalar_error(kernel, name, stringify!($ty), other)),
            }
        }
    )*};
}

scalar_getters! {
    /// A `u32` scalar from dyn arguments.
    scalar_u32 -> u32 = U32;
    /// An `i32` scalar from dyn arguments.
    scalar_i32 -> i32 = I32;
    /// An `f32` scalar from dyn arguments.
    scalar_f32 -> f32 = F32;
}

fn scalar_error(
    kernel: &'static str,
    name: &str,
    ty: &str,
    got: Option<&ScalarValue>,
) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel,
        message: match got {
            Some(v) => format!("scalar `{name}` must be `{ty}`, got {v:?}"),
            None => format!("scalar `{name}` is missing"),
        },
    }
}

/// Checks that a condition enclosing a barrier agrees across the workgroup's invocations.
#[inline]
pub fn agree(
    kernel: &'static str,
    workgroup: u64,
    what: &'static str,
    seen: &mut Option<bool>,
    c: bool,
) -> Result<()> {
    agree_value(kernel, workgroup, what, seen, c)
}

/// Like [`agree`], for loop bounds and other values.
#[inline]
pub fn agree_value<T: PartialEq + Copy>(
    kernel: &'static str,
    workgroup: u64,
    what: &'static str,
    seen: &mut Option<T>,
    v: T,
) -> Result<()> {
    match *seen {
        None => {
            *seen = Some(v);
            Ok(())
        }
        Some(p) if p == v => Ok(()),
        Some(_) => Err(ForgeError::NonUniform {
            kernel,
            workgroup,
            what,
        }),
    }
}

/// Whether any invocation of the workgroup is still running (out of line, as the helpers
/// of `kernel` are: a slice search written in every kernel's expansion would be compiled
/// again for each).
pub fn any_alive(alive: &[bool]) -> bool {
    alive.contains(&true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_follows_wgsl() {
        assert_eq!(div_u32(7, 0), 7);
        assert_eq!(rem_u32(7, 0), 0);
        assert_eq!(div_i32(i32::MIN, -1), i32::MIN);
        assert_eq!(rem_i32(i32::MIN, -1), 0);
        assert_eq!(div_i32(-7, 2), -3);
        assert_eq!(rem_i32(-7, 2), -1);
    }

    #[test]
    fn float_to_int_clamps_like_wgsl() {
        assert_eq!(f32_to_i32(3.0e9), 2147483520);
        assert_eq!(f32_to_i32(-3.0e9), i32::MIN);
        assert_eq!(f32_to_u32(-1.0), 0);
        assert_eq!(f32_to_u32(f32::NAN), 0);
        assert_eq!(f32_to_u32(5.9), 5);
    }

    #[test]
    fn index_errors_name_everything() {
        let e = ix("k", 5, "buf", 10, 10).unwrap_err().to_string();
        assert!(
            e.contains("`k`")
                && e.contains("invocation 5")
                && e.contains("`buf`")
                && e.contains("10"),
            "{e}"
        );
        assert!(ix("k", 0, "b", -1, 10).is_err());
        assert_eq!(ix("k", 0, "b", 9, 10).unwrap(), 9);
    }
}
