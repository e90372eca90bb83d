//! The sizes of a call: the evaluators of LEN and `threads` expressions and the checks of
//! the lengths a call passes against them. Layer 1 (values): pure functions of the call's
//! scalars, below both the CPU oracle and the launches, which size every binding and every
//! grid the same way through them.
//!
//! Code that `#[forge_kernel]` generates calls these (through `__private::oracle`, its one
//! path into this crate): each binding's `LEN` is evaluated in [`len`] arithmetic and ended
//! by [`finish_len`], the `threads` expression in [`threads`] arithmetic and ended by
//! [`finish_threads`], and the slices a call passes are checked by [`check_lens`], the same
//! for the oracle (`cpu`) and the typed launch (`run`).

use crate::error::{ForgeError, Result};

/// LEN arithmetic in i128: lengths are checked for overflow, division by zero and
/// negative results before anything is allocated.
pub mod len {
    /// A failed step.
    pub type R = Result<i128, &'static str>;

    /// `a + b`
    pub fn add(a: R, b: R) -> R {
        a?.checked_add(b?).ok_or("overflow")
    }
    /// `a - b`
    pub fn sub(a: R, b: R) -> R {
        a?.checked_sub(b?).ok_or("overflow")
    }
    /// `a * b`
    pub fn mul(a: R, b: R) -> R {
        a?.checked_mul(b?).ok_or("overflow")
    }
    /// `a / b`
    pub fn div(a: R, b: R) -> R {
        let (a, b) = (a?, b?);
        if b == 0 {
            Err("division by zero")
        } else {
            Ok(a / b)
        }
    }
    /// `a % b`
    pub fn rem(a: R, b: R) -> R {
        let (a, b) = (a?, b?);
        if b == 0 {
            Err("division by zero")
        } else {
            Ok(a % b)
        }
    }
    /// `a.div_ceil(b)`
    pub fn div_ceil(a: R, b: R) -> R {
        let (a, b) = (a?, b?);
        if b == 0 {
            Err("division by zero")
        } else if a < 0 || b < 0 {
            Err("div_ceil of a negative value")
        } else {
            Ok(a / b + (a % b != 0) as i128)
        }
    }
    /// `a.min(b)`
    pub fn min(a: R, b: R) -> R {
        Ok(a?.min(b?))
    }
    /// `a.max(b)`
    pub fn max(a: R, b: R) -> R {
        Ok(a?.max(b?))
    }
    /// A literal or parameter.
    pub fn val(v: i128) -> R {
        Ok(v)
    }
}

/// `threads` arithmetic: the WGSL evaluates it in `u32`, so every step must fit in `u32`
/// for the host and the GPU to agree.
pub mod threads {
    /// A failed step.
    pub type R = Result<u32, &'static str>;
    const OVER: &str = "a step overflows u32, the type the GPU evaluates it in";

    /// A step of `op` on `a` and `b`, or `why` where it does not fit a `u32`.
    fn step(a: R, b: R, op: fn(u32, u32) -> Option<u32>, why: &'static str) -> R {
        op(a?, b?).ok_or(why)
    }

    /// `a + b`
    pub fn add(a: R, b: R) -> R {
        step(a, b, u32::checked_add, OVER)
    }
    /// `a - b`
    pub fn sub(a: R, b: R) -> R {
        step(a, b, u32::checked_sub, "a step is negative")
    }
    /// `a * b`
    pub fn mul(a: R, b: R) -> R {
        step(a, b, u32::checked_mul, OVER)
    }
    /// `a / b`
    pub fn div(a: R, b: R) -> R {
        step(a, b, u32::checked_div, "division by zero")
    }
    /// `a % b`
    pub fn rem(a: R, b: R) -> R {
        step(a, b, u32::checked_rem, "division by zero")
    }
    /// `a.div_ceil(b)`
    pub fn div_ceil(a: R, b: R) -> R {
        let (a, b) = (a?, b?);
        a.checked_div(b)
            .map(|q| q + (a % b != 0) as u32)
            .ok_or("division by zero")
    }
    /// `a.min(b)`
    pub fn min(a: R, b: R) -> R {
        Ok(a?.min(b?))
    }
    /// `a.max(b)`
    pub fn max(a: R, b: R) -> R {
        Ok(a?.max(b?))
    }
    /// A literal or a parameter (an `i32` parameter is taken as its `u32` bits, as in WGSL).
    pub fn val(v: u64) -> R {
        u32::try_from(v).map_err(|_| OVER)
    }
}

/// Turns a LEN result into a length, naming the kernel, argument and expression on failure.
pub fn finish_len(
    kernel: &'static str,
    what: &'static str,
    expr: &'static str,
    v: len::R,
) -> Result<usize> {
    let why = (
        "the length is negative",
        "the length does not fit in memory",
    );
    finish_count(kernel, what, expr, v, why)
}

/// Turns a `cost(bytes = .., flops = ..)` term into a count, naming the kernel, the
/// measure and the expression on failure.
pub fn finish_cost(
    kernel: &'static str,
    what: &'static str,
    expr: &'static str,
    v: len::R,
) -> Result<u64> {
    let why = ("the cost is negative", "the cost does not fit in 64 bits");
    finish_count(kernel, what, expr, v, why)
}

/// A LEN result as a count of type `T`; `why` says what a negative value and a value past
/// `T` are.
fn finish_count<T: TryFrom<i128>>(
    kernel: &'static str,
    what: &'static str,
    expr: &'static str,
    v: len::R,
    (negative, too_big): (&'static str, &'static str),
) -> Result<T> {
    let bad = |reason| ForgeError::BadExpression {
        kernel,
        what,
        expr,
        reason,
    };
    let v = v.map_err(bad)?;
    if v < 0 {
        return Err(bad(negative));
    }
    T::try_from(v).map_err(|_| bad(too_big))
}

/// Turns a `threads` result into a count; zero threads is zero-sized work.
pub fn finish_threads(kernel: &'static str, expr: &'static str, v: threads::R) -> Result<u32> {
    let v = v.map_err(|reason| ForgeError::BadExpression {
        kernel,
        what: "threads",
        expr,
        reason,
    })?;
    if v == 0 {
        return Err(ForgeError::EmptyWork {
            kernel,
            what: format!("`threads = {expr}` is 0"),
        });
    }
    Ok(v)
}

/// Checks a 2-D or 3-D grid's extents, before anything is allocated: the invocations
/// must fit the `u32` that `global_index()` numbers them with, else
/// [`ForgeError::GridTooLarge`].
pub fn check_grid(kernel: &'static str, threads: [u32; 3]) -> Result<[u32; 3]> {
    let t = crate::schedule::Threads(threads.map(u64::from));
    if t.total() > u32::MAX as u64 {
        return Err(ForgeError::GridTooLarge {
            kernel,
            threads: t.to_string(),
            reason: format!(
                "{} invocations, past the {} that `global_index()` (a `u32`) numbers",
                t.total(),
                u32::MAX
            ),
        });
    }
    Ok(threads)
}

/// Checks a slice argument's length against its LEN.
pub fn check_len(
    kernel: &'static str,
    arg: &'static str,
    expr: &'static str,
    expected: usize,
    actual: usize,
) -> Result<()> {
    check_out_len(kernel, arg, expr, expected)?;
    if expected != actual {
        return Err(ForgeError::LengthMismatch {
            kernel,
            arg,
            expr,
            expected: expected as u64,
            actual,
        });
    }
    Ok(())
}

/// Checks an output's length (it is allocated, so only emptiness matters).
pub fn check_out_len(
    kernel: &'static str,
    arg: &'static str,
    expr: &'static str,
    expected: usize,
) -> Result<()> {
    if expected == 0 {
        return Err(ForgeError::EmptyWork {
            kernel,
            what: format!("`{arg}` has length `{expr}` = 0"),
        });
    }
    Ok(())
}

/// Checks every binding's length against its LEN, as the typed calls and the oracle do:
/// `actual` holds the length of each slice or tensor a call passes, `None` for an `#[out]`
/// binding that the call allocates. The passed ones are checked first, in binding order,
/// then the allocated ones (which only must not be empty), as the slices come before the
/// allocations.
pub fn check_lens(
    kernel: &'static str,
    layout: &[crate::kernel::Binding],
    expected: &[usize],
    actual: &[Option<usize>],
) -> Result<()> {
    for ((b, e), a) in layout.iter().zip(expected).zip(actual) {
        if let Some(a) = a {
            check_len(kernel, b.name, b.len, *e, *a)?;
        }
    }
    for ((b, e), a) in layout.iter().zip(expected).zip(actual) {
        if a.is_none() {
            check_out_len(kernel, b.name, b.len, *e)?;
        }
    }
    Ok(())
}

/// The bytes of `len` elements of `size` bytes each, for an `#[out]` binding (which the
/// typed call allocates on the device, and the oracle on the host): a product that
/// overflows is an error that names the argument, never a wrapped small size.
pub fn out_bytes(
    kernel: &'static str,
    arg: &'static str,
    expr: &'static str,
    len: usize,
    size: usize,
) -> Result<u64> {
    (len as u64)
        .checked_mul(size as u64)
        .ok_or(ForgeError::BadExpression {
            kernel,
            what: arg,
            expr,
            reason: "its size in bytes overflows u64",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_fail_with_the_argument_named() {
        assert_eq!(finish_len("k", "x", "n * 2", len::val(6)).unwrap(), 6);
        let neg = finish_len("k", "x", "n - 9", len::sub(len::val(1), len::val(9)));
        assert!(
            matches!(neg, Err(ForgeError::BadExpression { what: "x", reason, .. }) if reason.contains("negative"))
        );
        assert!(finish_len("k", "x", "n / 0", len::div(len::val(1), len::val(0))).is_err());
        assert!(matches!(
            finish_threads("k", "n", threads::val(0)),
            Err(ForgeError::EmptyWork { .. })
        ));
        assert!(threads::val(1 << 32).is_err());
        assert!(check_grid("k", [1 << 16, 1 << 16, 1]).is_err());
        assert!(matches!(
            check_len("k", "x", "n", 3, 4),
            Err(ForgeError::LengthMismatch {
                expected: 3,
                actual: 4,
                ..
            })
        ));
        assert!(out_bytes("k", "y", "n", usize::MAX, 8).is_err());
    }
}
