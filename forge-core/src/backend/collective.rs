//! Collectives across devices: the reductions they apply ([`ReduceOp`]) and the trait of an
//! engine that moves data between devices itself ([`Collectives`], NCCL's on CUDA). Part of
//! the backend seam (layer 3).
//!
//! A collective spans several devices, so it is not a method of one [`super::Device`]: an
//! engine is opened over a list of devices (`forge_core::group::DeviceGroup::use_nccl`) and
//! takes each device's memory, in the group's order (a device's rank is its index). Where
//! there is no such engine (wgpu has no peer-to-peer), the group stages the data through
//! the host instead, and reduces it with [`ReduceOp::fold`]: the reference the engines'
//! results are checked against.

use super::Memory;
use crate::error::{ForgeError, Result};
use crate::kernel::{ElemType, ScalarType};
use std::fmt;

/// How a reduction combines the devices' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReduceOp {
    /// The sum (integers wrap).
    Sum,
    /// The product (integers wrap).
    Prod,
    /// The smallest.
    Min,
    /// The largest.
    Max,
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        })
    }
}

/// Whether a collective can carry `elem`: the scalars and vectors of `f32`, `f16`, `f64`,
/// `u32` and `i32`, not atomics or structs (whose fields a reduction has no meaning for).
/// `what` names the call in the error.
pub fn check_elem(what: &'static str, elem: ElemType) -> Result<()> {
    let scalar_ok = matches!(
        elem.scalar,
        ScalarType::F32 | ScalarType::F16 | ScalarType::F64 | ScalarType::U32 | ScalarType::I32
    );
    if elem.layout.is_some() || elem.atomic || !scalar_ok {
        return Err(ForgeError::InvalidArgument {
            kernel: what,
            message: format!(
                "tensors of `{}` cannot be reduced or gathered; collectives take f32, f16, f64, u32 and i32 and their vectors",
                elem.wgsl()
            ),
        });
    }
    Ok(())
}

impl ReduceOp {
    /// Folds `x` into `acc` element by element (`acc[i] = op(acc[i], x[i])`), both the
    /// bytes of elements of `elem` (checked by [`check_elem`]), component by component for
    /// vectors. `f16` is combined in `f32` and rounded once per step, as a device adds
    /// halves; floats follow IEEE (`Min` and `Max` of a NaN take the other operand, as
    /// Rust's `f32::min` does).
    ///
    /// ```
    /// use forge_core::backend::ReduceOp;
    /// use forge_core::{ElemType, ScalarType};
    /// let f32s = ElemType::scalar(ScalarType::F32);
    /// let mut acc: Vec<u8> = bytemuck::cast_slice(&[1.0f32, 5.0]).to_vec();
    /// ReduceOp::Max.fold(f32s, &mut acc, bytemuck::cast_slice(&[3.0f32, 2.0]));
    /// assert_eq!(bytemuck::cast_slice::<u8, f32>(&acc), &[3.0, 5.0]);
    /// ```
    pub fn fold(self, elem: ElemType, acc: &mut [u8], x: &[u8]) {
        fn each<T: bytemuck::Pod>(acc: &mut [u8], x: &[u8], f: impl Fn(T, T) -> T) {
            let (acc, x): (&mut [T], &[T]) =
                (bytemuck::cast_slice_mut(acc), bytemuck::cast_slice(x));
            for (a, b) in acc.iter_mut().zip(x) {
                *a = f(*a, *b);
            }
        }
        let op = self;
        match elem.scalar {
            ScalarType::F32 => each(acc, x, |a: f32, b| op.float(a as f64, b as f64) as f32),
            ScalarType::F64 => each(acc, x, |a: f64, b| op.float(a, b)),
            ScalarType::F16 => each(acc, x, |a: half::f16, b: half::f16| {
                half::f16::from_f32(op.float(a.to_f32() as f64, b.to_f32() as f64) as f32)
            }),
            ScalarType::U32 => each(acc, x, |a: u32, b| match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
            }),
            ScalarType::I32 => each(acc, x, |a: i32, b| match op {
                ReduceOp::Sum => a.wrapping_add(b),
                ReduceOp::Prod => a.wrapping_mul(b),
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
            }),
            // check_elem refuses the rest before any data moves.
            ScalarType::Bool => {}
        }
    }

    /// The operation on two floats. A sum or product of two `f32`s (or of two halves
    /// widened) is exact in `f64`, so rounding the result once to the element type is
    /// what the element type's own operation gives.
    fn float(self, a: f64, b: f64) -> f64 {
        match self {
            ReduceOp::Sum => a + b,
            ReduceOp::Prod => a * b,
            ReduceOp::Min => a.min(b),
            ReduceOp::Max => a.max(b),
        }
    }
}

/// An engine that runs collectives between the memories of several devices itself (NCCL
/// on CUDA), opened over a list of devices whose order gives the ranks. Every call takes
/// one memory per device, in that order; `count` is in elements of `elem`. The work is
/// ordered after what each device has recorded before it, and before what it records
/// after, as a launch would be.
pub trait Collectives: fmt::Debug + wgpu::WasmNotSendSync {
    /// The engine, as reports name it: `NCCL 2.23.4`.
    fn name(&self) -> String;

    /// How many devices it spans.
    fn devices(&self) -> usize;

    /// `recv[r] = op over every rank of send[rank]`, `count` elements each (`send` and
    /// `recv` may be the same memory: in place).
    fn all_reduce(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
        op: ReduceOp,
    ) -> Result<()>;

    /// `recv[r]` = every rank's `send`, `count` elements each, one after another in rank
    /// order.
    fn all_gather(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
    ) -> Result<()>;

    /// `recv[r]` = the `r`th block of `count` elements of the reduction of every rank's
    /// `send` (`devices() · count` elements each).
    fn reduce_scatter(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
        op: ReduceOp,
    ) -> Result<()>;
}
