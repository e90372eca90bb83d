//! The runtime methods: the seed's `rt.topk`, any block size, indices, and the global
//! top-k.

use super::kernels::{topk_rows, topk_select};
use super::record::{check_global, invalid, topk_global_record, TopkGlobalScratch};
use super::{TOPK_MAX_BLOCK, TOPK_ROWS_MAX_K, TOPK_SEED_BLOCK};
use crate::dims::quads;
use forge_core::{ForgeError, ForgeRuntime, Result};
use std::borrow::BorrowMut;

/// Checks what every top-k method needs: a non-empty input that `u32` indexes and `k ≥ 1`.
fn check_input(input: &[f32], k: usize) -> Result<u32> {
    if input.is_empty() || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: topk_select::NAME,
            what: format!("{} values, k = {k}", input.len()),
        });
    }
    // Indices and the kernel's thread count (up to twice the length) stay in u32.
    if input.len() > (u32::MAX / 2) as usize {
        return Err(invalid(format!(
            "the input has {} elements; at most 2^31 - 1 are supported",
            input.len()
        )));
    }
    Ok(input.len() as u32)
}

/// The block top-k on the GPU: values and indices (within the block when `local`).
fn blocks(
    rt: &mut ForgeRuntime,
    input: &[f32],
    k: usize,
    block: usize,
    local: bool,
) -> Result<(Vec<f32>, Vec<u32>)> {
    let n = check_input(input, k)?;
    if block == 0 || block > TOPK_MAX_BLOCK || k > block {
        return Err(invalid(format!(
            "`block` = {block} with `k` = {k}: the block must be 1..={TOPK_MAX_BLOCK}, k at most the block"
        )));
    }
    let (b, k32) = (block as u32, k as u32);
    let local = u32::from(local);
    if k <= TOPK_ROWS_MAX_K {
        // The values as `Vec4`s, zero-padded to a multiple of four.
        return topk_rows::run(rt, &quads(input), n, b, k32, local);
    }
    let p = b.next_power_of_two();
    topk_select::run(rt, input, &[0], n, b, k32, p, 0, local)
}

/// The global top-k on the GPU: values and indices into `input`.
fn global(rt: &mut ForgeRuntime, input: &[f32], k: usize) -> Result<(Vec<f32>, Vec<u32>)> {
    let n = check_input(input, k)?;
    check_global(input.len(), k)?;
    let vals = rt.upload(&quads(input))?;
    let scratch = TopkGlobalScratch::new(rt, input.len())?;
    let out_vals = rt.zeros::<f32>(k)?;
    let out_ids = rt.zeros::<u32>(k)?;
    topk_global_record(rt, &vals, n, k as u32, &scratch, &out_vals, &out_ids)?;
    Ok((rt.download(&out_vals)?, rt.download(&out_ids)?))
}

/// `rt.topk(&input, k)`, the seed's signature, and what goes beyond it: any block size,
/// indices, and a global top-k.
pub trait TopkExt: BorrowMut<ForgeRuntime> {
    /// The `k` largest values of each block of 64 consecutive values (the last block may be
    /// shorter), in descending order, concatenated: `k` values per block.
    ///
    /// This is [`TopkExt::topk_blocks`] with a block of 64; see the [module
    /// docs](crate::topk) for the order (NaN is largest, as in `torch.topk`) and for the
    /// `-inf` padding of a last block shorter than `k`.
    ///
    /// Errors: an empty input or `k = 0` ([`ForgeError::EmptyWork`]); `k > 64`
    /// ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// assert_eq!(rt.topk(&[3.0, 9.0, 1.0, 7.0, 5.0], 3)?, vec![9.0, 7.0, 5.0]);
    /// assert_eq!(rt.topk(&[5.0, 1.0, 9.0, 2.0], 2)?, vec![9.0, 5.0]);
    /// assert!(rt.topk(&[1.0], 0).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>> {
        Ok(blocks(self.borrow_mut(), input, k, TOPK_SEED_BLOCK, true)?.0)
    }

    /// The `k` largest values of each block of `block` consecutive values, in descending
    /// order, concatenated: block `i`'s values are at `i·k .. (i+1)·k`. A last block with
    /// fewer than `k` values is padded with `-inf` after its real values.
    ///
    /// `block` is 1..=1024 and `k` is 1..=`block`. Errors: an empty input or `k = 0`
    /// ([`ForgeError::EmptyWork`]); `block` out of range, `k > block`, or more than
    /// 2^31 - 1 values ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let x = [1.0, 4.0, 2.0, f32::NAN, 0.5, 3.0, 8.0];
    /// // Blocks [1, 4, 2], [NaN, 0.5, 3], [8]: NaN is the largest; the last block is padded.
    /// let top = rt.topk_blocks(&x, 2, 3)?;
    /// assert_eq!(top[..2], [4.0, 2.0]);
    /// assert!(top[2].is_nan() && top[3] == 3.0);
    /// assert_eq!(top[4..], [8.0, f32::NEG_INFINITY]);
    /// assert!(rt.topk_blocks(&x, 4, 3).is_err()); // k > block
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_blocks(&mut self, input: &[f32], k: usize, block: usize) -> Result<Vec<f32>> {
        Ok(blocks(self.borrow_mut(), input, k, block, true)?.0)
    }

    /// [`TopkExt::topk_blocks`] with each value's index within its block, as
    /// `torch.topk(x.view(-1, block), k)` gives them: equal values come lowest index
    /// first. Padding has the index [`TOPK_PAD_INDEX`](super::TOPK_PAD_INDEX); add `i·block` for a position in
    /// `input`.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let (v, i) = rt.topk_with_indices(&[2.0, 7.0, 7.0, 1.0, 5.0], 2, 4)?;
    /// assert_eq!(v, vec![7.0, 7.0, 5.0, f32::NEG_INFINITY]);
    /// assert_eq!(i, vec![1, 2, 0, TOPK_PAD_INDEX]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
        block: usize,
    ) -> Result<(Vec<f32>, Vec<u32>)> {
        blocks(self.borrow_mut(), input, k, block, true)
    }

    /// The `k` largest values of the whole input, in descending order, as
    /// `torch.topk(x, k)` gives them.
    ///
    /// `k` is 1..=1024 and at most the input's length; the input has at most 2^28 values.
    /// Several passes run on the device in one submission (see the [module
    /// docs](crate::topk)). Errors: an empty input or `k = 0` ([`ForgeError::EmptyWork`]);
    /// `k` too large or an input too long ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let x: Vec<f32> = (0..5000).map(|i| ((i * 37) % 5000) as f32).collect();
    /// assert_eq!(rt.topk_global(&x, 3)?, vec![4999.0, 4998.0, 4997.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_global(&mut self, input: &[f32], k: usize) -> Result<Vec<f32>> {
        Ok(global(self.borrow_mut(), input, k)?.0)
    }

    /// [`TopkExt::topk_global`] with each value's index in `input`; equal values come
    /// lowest index first.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let (v, i) = rt.topk_global_with_indices(&[1.0, 9.0, 3.0, 9.0], 3)?;
    /// assert_eq!((v, i), (vec![9.0, 9.0, 3.0], vec![1, 3, 2]));
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn topk_global_with_indices(
        &mut self,
        input: &[f32],
        k: usize,
    ) -> Result<(Vec<f32>, Vec<u32>)> {
        global(self.borrow_mut(), input, k)
    }
}

impl TopkExt for ForgeRuntime {}
