//! Cooperative matrices in the oracle. Part of the oracle (layer 2).
//!
//! A 16×16 cooperative matrix (`CoopA<f16>`, `CoopB<f16>`, `CoopC<f32>` in the kernel
//! language) belongs to a subgroup: on the GPU each invocation holds an opaque part of it.
//! The oracle gives every invocation the whole matrix, [`Mat`], which is equivalent as long
//! as the subgroup's invocations pass the same operands, as Vulkan requires (`check` puts
//! every operation in workgroup-uniform control flow; the operands' uniformity is the
//! kernel's to keep, and certification shows a kernel that breaks it). Each invocation
//! loads and multiplies its copy; a store is made once per subgroup, by its first
//! invocation, so that race detection sees one writer, as the hardware's stores are one.
//!
//! Layout: an array element (a scalar, or a vector whose components are consecutive) is
//! the unit of the index and of the stride. Row-major, element `(r, c)` of the matrix is
//! component `c` after the start of row `r`, which begins `r·stride` elements after the
//! index; column-major swaps the roles of `r` and `c`, as SPIR-V's `RowMajorKHR` and
//! `ColumnMajorKHR` do.
//!
//! Rounding: [`mul_add`] forms each `c + Σ_k a·b` exactly (f16 products are exact in f64,
//! and 16 of them plus an f32 sum in f64 lose at most the bits past 53) and rounds to f32
//! once. Tensor cores keep fewer bits inside the sum and may truncate: each step differs
//! from the oracle by a few f32 ulps of the largest term, so a GEMM over `k` compares
//! within a relative tolerance that grows with `k`, as the kernel states.

use crate::error::{ForgeError, Result};

/// The side of a cooperative matrix.
pub const DIM: usize = 16;

/// A whole 16×16 matrix, row-major.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mat<T> {
    /// Element `(r, c)` at `r·16 + c`.
    pub e: [T; DIM * DIM],
}

/// The zero matrix of an element type.
pub trait Zero {
    /// Every element zero.
    const ZERO: Self;
}

impl Zero for Mat<f32> {
    const ZERO: Self = Mat {
        e: [0.0; DIM * DIM],
    };
}

impl Zero for Mat<half::f16> {
    const ZERO: Self = Mat {
        e: [half::f16::ZERO; DIM * DIM],
    };
}

/// An array element as consecutive components of type `T`: a scalar, or a vector.
pub trait Components<T: Copy>: Copy {
    /// The number of components.
    const N: usize;
    /// Component `c`.
    fn get(&self, c: usize) -> T;
    /// Sets component `c`.
    fn set(&mut self, c: usize, v: T);
}

macro_rules! components {
    ($($t:ty),*) => {$(
        impl Components<$t> for $t {
            const N: usize = 1;
            fn get(&self, _: usize) -> $t {
                *self
            }
            fn set(&mut self, _: usize, v: $t) {
                *self = v
            }
        }
        impl<const W: usize> Components<$t> for [$t; W] {
            const N: usize = W;
            fn get(&self, c: usize) -> $t {
                self[c]
            }
            fn set(&mut self, c: usize, v: $t) {
                self[c] = v
            }
        }
    )*};
}
components!(f32, half::f16);

/// Where matrix element `(r, c)` lies: the array element and its component. `None` when
/// the arithmetic overflows, which no array can hold.
fn place(
    index: u32,
    stride: u32,
    width: usize,
    row_major: bool,
    r: usize,
    c: usize,
) -> Option<(usize, usize)> {
    let (major, minor) = if row_major { (r, c) } else { (c, r) };
    let start = (index as u64).checked_mul(width as u64)?;
    let line = (major as u64)
        .checked_mul(stride as u64)?
        .checked_mul(width as u64)?;
    let flat = start.checked_add(line)?.checked_add(minor as u64)?;
    let flat = usize::try_from(flat).ok()?;
    Some((flat / width, flat % width))
}

/// One load or store of a matrix: the kernel, the invocation, the array, and where in it
/// the matrix starts (`index`), its stride and its layout.
struct Site {
    kernel: &'static str,
    array: &'static str,
    invocation: u32,
    index: u32,
    stride: u32,
    row_major: bool,
}

impl Site {
    fn new(
        kernel: &'static str,
        invocation: u32,
        array: &'static str,
        index: u32,
        stride: u32,
        row_major: bool,
    ) -> Site {
        Site {
            kernel,
            array,
            invocation,
            index,
            stride,
            row_major,
        }
    }

    /// Every element position of the `kind` (`load`, `store`), in row-major matrix order,
    /// checked against `len` array elements of `width` components.
    fn places(&self, kind: &str, len: usize, width: usize) -> Result<[(usize, usize); DIM * DIM]> {
        let mut out = [(0, 0); DIM * DIM];
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = place(
                self.index,
                self.stride,
                width,
                self.row_major,
                k / DIM,
                k % DIM,
            )
            .filter(|(e, _)| *e < len)
            .ok_or_else(|| self.out_of_bounds(kind, len))?;
        }
        Ok(out)
    }

    #[cold]
    #[inline(never)]
    fn out_of_bounds(&self, kind: &str, len: usize) -> ForgeError {
        let layout = if self.row_major {
            "row_major"
        } else {
            "col_major"
        };
        ForgeError::InvalidArgument {
            kernel: self.kernel,
            message: format!(
                "invocation {}: `{kind}_{layout}` at index {} with stride {} reaches past the end of `{}` ({len} elements): a 16×16 matrix spans 15 strides and 16 elements from its index",
                self.invocation, self.index, self.stride, self.array
            ),
        }
    }
}

/// `coopLoad` / `coopLoadT`: the matrix at `buf[index]`; `touch` sees each array element
/// read (race detection), once per matrix element.
#[allow(clippy::too_many_arguments)]
pub fn load<T: Copy, E: Components<T>>(
    kernel: &'static str,
    invocation: u32,
    array: &'static str,
    buf: &[E],
    index: u32,
    stride: u32,
    row_major: bool,
    mut touch: impl FnMut(usize) -> Result<()>,
) -> Result<Mat<T>> {
    let site = Site::new(kernel, invocation, array, index, stride, row_major);
    let at = site.places("load", buf.len(), E::N)?;
    let first = buf[at[0].0].get(at[0].1);
    let mut m = Mat {
        e: [first; DIM * DIM],
    };
    for (k, (e, c)) in at.into_iter().enumerate() {
        touch(e)?;
        m.e[k] = buf[e].get(c);
    }
    Ok(m)
}

/// `coopStore` / `coopStoreT`: `m` written to `buf[index]`; `touch` sees each array
/// element written.
#[allow(clippy::too_many_arguments)]
pub fn store<T: Copy, E: Components<T>>(
    kernel: &'static str,
    invocation: u32,
    array: &'static str,
    m: &Mat<T>,
    buf: &mut [E],
    index: u32,
    stride: u32,
    row_major: bool,
    mut touch: impl FnMut(usize) -> Result<()>,
) -> Result<()> {
    let site = Site::new(kernel, invocation, array, index, stride, row_major);
    let at = site.places("store", buf.len(), E::N)?;
    for (k, (e, c)) in at.into_iter().enumerate() {
        touch(e)?;
        buf[e].set(c, m.e[k]);
    }
    Ok(())
}

/// `coopMultiplyAdd(a, b, c)`: `a·b + c`, each element `c + Σ_k a·b` formed exactly and
/// rounded to f32 once (see the module's note on rounding).
pub fn mul_add(a: &Mat<half::f16>, b: &Mat<half::f16>, c: &Mat<f32>) -> Mat<f32> {
    let a: [f64; DIM * DIM] = a.e.map(|x| x.to_f64());
    let b: [f64; DIM * DIM] = b.e.map(|x| x.to_f64());
    let mut out = *c;
    for r in 0..DIM {
        for col in 0..DIM {
            let mut s = c.e[r * DIM + col] as f64;
            for k in 0..DIM {
                s += a[r * DIM + k] * b[k * DIM + col];
            }
            out.e[r * DIM + col] = s as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn ok(_: usize) -> Result<()> {
        Ok(())
    }

    #[test]
    fn row_and_column_major_loads_transpose_each_other() {
        let buf: Vec<f32> = (0..40 * 16).map(|i| i as f32).collect();
        let r = load::<f32, f32>("k", 0, "x", &buf, 3, 40, true, ok).unwrap();
        let c = load::<f32, f32>("k", 0, "x", &buf, 3, 40, false, ok).unwrap();
        for i in 0..DIM {
            for j in 0..DIM {
                assert_eq!(r.e[i * DIM + j], (3 + i * 40 + j) as f32);
                assert_eq!(c.e[j * DIM + i], r.e[i * DIM + j]);
            }
        }
    }

    #[test]
    fn vector_arrays_count_index_and_stride_in_vectors() {
        let buf: Vec<[f32; 4]> = (0..65)
            .map(|i| [0, 1, 2, 3].map(|c| (4 * i + c) as f32))
            .collect();
        let m = load::<f32, [f32; 4]>("k", 0, "x", &buf, 1, 4, true, ok).unwrap();
        // Row r starts at vector 1 + 4r, component 0: flat 4 + 16r.
        assert_eq!(m.e[0], 4.0);
        assert_eq!(m.e[DIM + 5], 25.0);
        let mut out = vec![[0.0f32; 4]; 65];
        store("k", 0, "y", &m, &mut out, 1, 4, true, ok).unwrap();
        assert_eq!(out[1..], buf[1..]);
    }

    #[test]
    fn reaching_past_the_end_is_an_error() {
        let buf = vec![0.0f32; 255];
        let e = load::<f32, f32>("k", 7, "x", &buf, 0, 16, true, ok).unwrap_err();
        assert!(e.to_string().contains("past the end of `x`"), "{e}");
        assert!(load::<f32, f32>("k", 0, "x", &buf, u32::MAX, u32::MAX, true, ok).is_err());
    }

    #[test]
    fn mul_add_is_the_exact_product_rounded_once() {
        let mut a = Mat::<f16>::ZERO;
        let mut b = Mat::<f16>::ZERO;
        for i in 0..DIM * DIM {
            a.e[i] = f16::from_f32(((i * 7) % 13) as f32 - 6.0);
            b.e[i] = f16::from_f32(((i * 5) % 11) as f32 * 0.25);
        }
        let mut c = Mat::<f32>::ZERO;
        c.e[17] = 1.0e8;
        let d = mul_add(&a, &b, &c);
        for r in 0..DIM {
            for col in 0..DIM {
                let want: f64 = c.e[r * DIM + col] as f64
                    + (0..DIM)
                        .map(|k| a.e[r * DIM + k].to_f64() * b.e[k * DIM + col].to_f64())
                        .sum::<f64>();
                assert_eq!(d.e[r * DIM + col], want as f32);
            }
        }
    }
}
