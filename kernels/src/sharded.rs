//! The built-in kernels split across the devices of a [`DeviceGroup`]: each call cuts its
//! batch into one contiguous shard per device ([`DeviceGroup::shards`]), runs every shard at
//! once with the single-device method on that device's runtime (so each device uses its
//! own tuned schedule and its own path: tensor cores where it has them), and concatenates
//! the results in order.
//!
//! | method | split along | each shard runs |
//! |---|---|---|
//! | [`ShardedExt::gemm_sharded`] | rows of `A` and `C` (`m`) | [`GemmExt::gemm`] |
//! | [`ShardedExt::gemm_f16_sharded`] | rows of `A` and `C` (`m`) | [`GemmF16Ext::gemm_f16`] |
//! | [`ShardedExt::attention_sharded`] | the `b·h` heads | [`AttentionExt::attention_with`] |
//! | [`ShardedExt::fft_batched_sharded`] | the batch | [`FftExt::fft_batched`] |
//!
//! `B` (for the products) goes whole to every device. The whole call's shape is checked
//! before any device runs, so a bad argument is the single-device method's error, not a
//! device's. A shard that fails fails the call ([`ForgeError::DeviceFailed`], naming its
//! device and rows), and nothing is returned.
//!
//! Why the result is the single-device result: each output row (head, transform) is
//! computed from its own input rows and the whole of `B` by the same code, whichever
//! device computes it, so on devices of one type the sharded result is the single-device
//! result bit for bit (`tests/group.rs` checks it, and the oracle; `DeviceGroup::certify_split`
//! checks it for a kernel on its certification cases).

use crate::attention::{heads, AttentionExt, AttentionShape};
use crate::dims::{check_len, dims};
use crate::fft::{check_data, FftExt};
use crate::gemm::GemmExt;
use crate::gemm_f16::GemmF16Ext;
use forge_core::group::DeviceGroup;
use forge_core::{f16, ForgeError, ForgeRuntime, Result};
use std::borrow::BorrowMut;

/// A product `C = A·B` with the rows of `A` (and `C`) split across the group: checks the
/// whole call's shape (every dimension at least 1 and in `u32`, `a` `m·k` long and `b`
/// `k·n`), then runs `product(rt, rows of a, rows)` on each device (`b` whole, `k` and `n`
/// as given) and concatenates the rows of `C`.
fn rows_sharded<T: Sync>(
    group: &mut DeviceGroup,
    kernel: &'static str,
    (a, b): (&[T], &[T]),
    [m, k, n]: [usize; 3],
    product: impl Fn(&mut ForgeRuntime, &[T], usize) -> Result<Vec<f32>> + Sync,
) -> Result<Vec<f32>> {
    let [m32, k32, n32] = dims(kernel, [("m", m), ("k", k), ("n", n)])?;
    if m32 == 0 || k32 == 0 || n32 == 0 {
        return Err(ForgeError::EmptyWork {
            kernel,
            what: format!("m·k·n = {m}·{k}·{n}"),
        });
    }
    check_len(kernel, "a", "m * k", m as u128 * k as u128, a.len())?;
    check_len(kernel, "b", "k * n", k as u128 * n as u128, b.len())?;
    let parts = group.map_shards(&format!("`{kernel}` rows"), m, |rt, s| {
        product(rt, &a[s.range.start * k..s.range.end * k], s.len())
    })?;
    Ok(parts.concat())
}

/// `group.gemm_sharded(&a, &b, m, k, n)` and the other built-ins split across a group.
///
/// ```
/// use wgsl_forge::prelude::*;
/// let mut group = DeviceGroup::replicate(ForgeRuntime::builder().capacity(1 << 24), 2)?;
/// let h = |v: &[f32]| v.iter().map(|x| f16::from_f32(*x)).collect::<Vec<_>>();
/// // Three rows of A: two on device 0, one on device 1; B goes to both.
/// let (a, b) = (h(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), h(&[1.0, 0.0, 0.0, 1.0]));
/// assert_eq!(group.gemm_f16_sharded(&a, &b, 3, 2, 2)?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// // Attention over b·h = 2 heads, one per device: each output row is the mean of V's rows.
/// let (q, k) = (h(&[0.0; 64]), h(&[1.0; 64]));
/// let v = h(&(0..64).map(|i| i as f32).collect::<Vec<_>>());
/// let o = group.attention_sharded(&q, &k, &v, AttentionShape::new(1, 2, 2, 16, false))?;
/// assert_eq!((o[0].to_f32(), o[32].to_f32()), (8.0, 40.0));
/// # Ok::<(), ForgeError>(())
/// ```
pub trait ShardedExt: BorrowMut<DeviceGroup> {
    /// [`GemmExt::gemm`] with the rows of `A` (and `C`) split across the devices: `C =
    /// A·B` for row-major `A` (`m×k`) and `B` (`k×n`), returned row-major `m×n`.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut group = DeviceGroup::replicate(ForgeRuntime::builder().capacity(1 << 24), 2)?;
    /// let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2×3: one row per device
    /// let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0]; // 3×2
    /// assert_eq!(group.gemm_sharded(&a, &b, 2, 3, 2)?, vec![58.0, 64.0, 139.0, 154.0]);
    /// assert!(group.gemm_sharded(&a, &b, 2, 0, 2).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    ///
    /// Errors: those of [`GemmExt::gemm`] for the whole call; a device that failed
    /// ([`ForgeError::DeviceFailed`]).
    fn gemm_sharded(
        &mut self,
        a: &[f32],
        b: &[f32],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>> {
        rows_sharded(self.borrow_mut(), "gemm", (a, b), [m, k, n], |rt, a, m| {
            rt.gemm(a, b, m, k, n)
        })
    }

    /// [`GemmF16Ext::gemm_f16`] with the rows of `A` (and `C`) split across the devices:
    /// `f16` `A` (`m×k`) and `B` (`k×n`), `C` in `f32`. Each device takes tensor cores
    /// where it has them. Errors: those of [`GemmF16Ext::gemm_f16`] for the whole call; a
    /// device that failed ([`ForgeError::DeviceFailed`]).
    fn gemm_f16_sharded(
        &mut self,
        a: &[f16],
        b: &[f16],
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Vec<f32>> {
        rows_sharded(
            self.borrow_mut(),
            "gemm_f16",
            (a, b),
            [m, k, n],
            |rt, a, m| rt.gemm_f16(a, b, m, k, n),
        )
    }

    /// [`AttentionExt::attention_with`] with the `b·h` heads split across the devices: `q`,
    /// `k`, `v` and the result are `b × h × s × d`, row-major, as `shape` gives them (its
    /// scale included). Errors: those of [`AttentionExt::attention_with`] for the whole call;
    /// a device that failed ([`ForgeError::DeviceFailed`]).
    fn attention_sharded(
        &mut self,
        q: &[f16],
        k: &[f16],
        v: &[f16],
        shape: AttentionShape,
    ) -> Result<Vec<f16>> {
        let name = crate::attention::attention::NAME;
        let AttentionShape { b, h, s, d, .. } = shape;
        let [bh, _, _] = heads(name, [q.len(), k.len(), v.len()], b, h, s, d)?;
        let head = s * d;
        let parts =
            self.borrow_mut()
                .map_shards("`attention` heads (b·h)", bh as usize, |rt, sh| {
                    let rows = sh.range.start * head..sh.range.end * head;
                    let (q, k, v) = (&q[rows.clone()], &k[rows.clone()], &v[rows]);
                    let part = AttentionShape {
                        b: 1,
                        h: sh.len(),
                        ..shape
                    };
                    rt.attention_with(q, k, v, part)
                })?;
        Ok(parts.concat())
    }

    /// [`FftExt::fft_batched`] with the batch split across the devices: `batch` forward
    /// transforms of length `n`, interleaved, one after another in `data` (`2·n·batch`
    /// floats).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut group = DeviceGroup::replicate(ForgeRuntime::builder().capacity(1 << 24), 2)?;
    /// // Two transforms of length 2, one per device: [1, 1] → [2, 0] and [1, -1] → [0, 2].
    /// let out = group.fft_batched_sharded(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, -1.0, 0.0], 2, 2)?;
    /// assert_eq!(out, vec![2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    ///
    /// Errors: those of [`FftExt::fft_batched`] for the whole call; a device that failed
    /// ([`ForgeError::DeviceFailed`]).
    fn fft_batched_sharded(&mut self, data: &[f32], n: usize, batch: usize) -> Result<Vec<f32>> {
        check_data(data, n, batch)?;
        let parts = self
            .borrow_mut()
            .map_shards("`fft` transforms", batch, |rt, s| {
                rt.fft_batched(
                    &data[2 * n * s.range.start..2 * n * s.range.end],
                    n,
                    s.len(),
                )
            })?;
        Ok(parts.concat())
    }
}

impl ShardedExt for DeviceGroup {}
