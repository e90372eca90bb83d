//! An accumulator's rows in the oracle: `CoopRow` and the operations of the kernel
//! language that read or make one (`c.row_max()`, `c.exp2_rows(scale, m)`, `c.to_a()`,
//! ...). Part of the oracle (layer 2).
//!
//! As with whole matrices ([`super::coop`]), every invocation holds the whole value: a
//! [`Row`] is the 16 rows' values, where a GPU spreads them over the subgroup's lanes in
//! its accumulators' layout. The arithmetic is `f32`'s, one rounding an operation, as the
//! GPU's; a row's sum adds its columns in order, where a GPU adds them in a tree, so
//! sums differ in their last bits, as any reduction's do.

use super::coop::{Mat, Zero, DIM};

/// A value for each of a 16×16 matrix's rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// Row `r`'s value.
    pub e: [f32; DIM],
}

impl Zero for Row {
    const ZERO: Self = Row { e: [0.0; DIM] };
}

/// `CoopRow::splat(x)`.
pub fn splat(x: f32) -> Row {
    Row { e: [x; DIM] }
}

/// Each row of `c` folded by `f`, from its first column.
fn reduce(c: &Mat<f32>, f: impl Fn(f32, f32) -> f32) -> Row {
    let mut out = Row::ZERO;
    for (r, o) in out.e.iter_mut().enumerate() {
        let row = &c.e[r * DIM..(r + 1) * DIM];
        *o = row[1..].iter().fold(row[0], |a, &b| f(a, b));
    }
    out
}

/// `c.row_max()`: `f32::max`, which skips a NaN as WGSL's `max` may.
pub fn max(c: &Mat<f32>) -> Row {
    reduce(c, f32::max)
}

/// `c.row_sum()`.
pub fn sum(c: &Mat<f32>) -> Row {
    reduce(c, |a, b| a + b)
}

/// Every element `(r, j)` of `c` replaced by `f(x, r)`.
fn map(c: &Mat<f32>, f: impl Fn(f32, usize, usize) -> f32) -> Mat<f32> {
    let mut out = *c;
    for (k, x) in out.e.iter_mut().enumerate() {
        *x = f(*x, k / DIM, k % DIM);
    }
    out
}

/// `c.mask_from(first, step, fill)`: element `(r, j)` becomes `fill` where
/// `j ≥ first + step·r`, in `i32` arithmetic that wraps, as WGSL's does.
pub fn mask_from(c: &Mat<f32>, first: i32, step: i32, fill: f32) -> Mat<f32> {
    map(c, |x, r, j| {
        if j as i32 >= first.wrapping_add(step.wrapping_mul(r as i32)) {
            fill
        } else {
            x
        }
    })
}

/// `c.exp2_rows(scale, m)`: element `(r, j)` becomes `2^(x·scale − m[r])`.
pub fn exp2_rows(c: &Mat<f32>, scale: f32, m: &Row) -> Mat<f32> {
    map(c, |x, r, _| (x * scale - m.e[r]).exp2())
}

/// `c.scale_rows(f)`: row `r` times `f[r]`.
pub fn scale_rows(c: &Mat<f32>, f: &Row) -> Mat<f32> {
    map(c, |x, r, _| x * f.e[r])
}

/// `c.max(o)`: element by element the larger, `f32::max` (which skips a NaN, as WGSL's
/// `max` may).
pub fn max_with(c: &Mat<f32>, o: &Mat<f32>) -> Mat<f32> {
    map(c, |x, r, j| x.max(o.e[r * DIM + j]))
}

/// `c.add(o)`: element by element the sum.
pub fn add_with(c: &Mat<f32>, o: &Mat<f32>) -> Mat<f32> {
    map(c, |x, r, j| x + o.e[r * DIM + j])
}

/// `c.to_a()`: each element rounded to the nearest `f16`, ties to even.
pub fn to_a(c: &Mat<f32>) -> Mat<half::f16> {
    Mat {
        e: c.e.map(half::f16::from_f32),
    }
}

/// Row by row: `a.max(b)`, `a.min(b)`, `a.add(b)`, `a.sub(b)`, `a.mul(b)`.
pub fn zip(a: &Row, b: &Row, f: impl Fn(f32, f32) -> f32) -> Row {
    let mut out = *a;
    for (o, y) in out.e.iter_mut().zip(b.e) {
        *o = f(*o, y);
    }
    out
}

/// Row by row, one operand: `r.scale(x)`, `r.exp2()`, `r.recip()`.
pub fn each(a: &Row, f: impl Fn(f32) -> f32) -> Row {
    Row { e: a.e.map(f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix with element `(r, j)` at `f(r, j)`.
    fn mat(f: impl Fn(usize, usize) -> f32) -> Mat<f32> {
        let mut m = Mat::<f32>::ZERO;
        for k in 0..DIM * DIM {
            m.e[k] = f(k / DIM, k % DIM);
        }
        m
    }

    #[test]
    fn reductions_run_along_rows() {
        let c = mat(|r, j| (r as f32) * 100.0 + j as f32 - if j == 3 { 50.0 } else { 0.0 });
        let (mx, s) = (max(&c), sum(&c));
        for r in 0..DIM {
            let row: Vec<f32> = (0..DIM).map(|j| c.e[r * DIM + j]).collect();
            assert_eq!(mx.e[r], row.iter().cloned().fold(f32::MIN, f32::max));
            assert_eq!(s.e[r], row.iter().sum::<f32>());
        }
    }

    #[test]
    fn masks_cover_the_tail_and_the_triangle() {
        let c = mat(|_, _| 1.0);
        // Columns 5 and on, in every row.
        let t = mask_from(&c, 5, 0, -1.0);
        // Strictly above the diagonal: j ≥ 1 + r.
        let u = mask_from(&c, 1, 1, -1.0);
        // Extremes wrap, as WGSL's `i32`s do: `MAX + MAX·r` is `MAX - r - r`... for odd
        // `r` it is negative, so the whole row is masked.
        let wrap = mask_from(&c, i32::MAX, i32::MAX, -1.0);
        for r in 0..DIM {
            for j in 0..DIM {
                let k = r * DIM + j;
                assert_eq!(t.e[k], if j >= 5 { -1.0 } else { 1.0 });
                assert_eq!(u.e[k], if j > r { -1.0 } else { 1.0 });
                let at = i32::MAX.wrapping_add(i32::MAX.wrapping_mul(r as i32));
                assert_eq!(wrap.e[k], if (j as i32) >= at { -1.0 } else { 1.0 });
                assert_eq!(at < 0, r % 2 == 1);
            }
        }
    }

    #[test]
    fn row_operands_broadcast_along_their_row() {
        let c = mat(|r, j| (r * DIM + j) as f32 / 64.0);
        let mut m = Row::ZERO;
        for r in 0..DIM {
            m.e[r] = r as f32 * 0.5;
        }
        let e = exp2_rows(&c, 0.25, &m);
        let s = scale_rows(&c, &m);
        for r in 0..DIM {
            for j in 0..DIM {
                let (k, x) = (r * DIM + j, c.e[r * DIM + j]);
                assert_eq!(e.e[k], (x * 0.25 - m.e[r]).exp2());
                assert_eq!(s.e[k], x * m.e[r]);
            }
        }
        assert_eq!(zip(&m, &splat(1.0), f32::max).e[0], 1.0);
        assert_eq!(each(&m, f32::recip).e[2], 1.0);
    }

    #[test]
    fn to_a_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and the next f16: ties go to 1, the even one.
        let c = mat(|r, _| {
            if r == 0 {
                1.0 + f32::powi(2.0, -11)
            } else {
                70000.0
            }
        });
        let a = to_a(&c);
        assert_eq!(a.e[0], half::f16::ONE);
        assert_eq!(a.e[DIM], half::f16::INFINITY);
    }
}
