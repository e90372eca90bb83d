//! Projection of 64-byte records: `out[r] = Σ_w weights[w] · f32(word[r][w])`.
//!
//! # Records
//! A record is 64 bytes: 16 little-endian `u32` words, built from eight `u64` fields by
//! [`P64GpuWords64::from_u64_fields`], each field split into its low word then its high
//! word. [`P64ProjectExt::p64_project`] takes the records as bytes, `record_count · 64` of
//! them, as the seed did; [`P64GpuWords64::slice_as_bytes`] views typed records as bytes
//! without a copy, and [`P64ProjectExt::p64_project_records`] takes them directly.
//!
//! # Schedule
//! Memory-bound: 64 bytes read per record, 4 written. The records are bound as `UVec4`s,
//! so an invocation reads its record with four 16-byte loads, all in flight together, and
//! projects it in registers; a warp's four loads cover 2 KiB, which the L1 cache hands out
//! whole. A workgroup takes `ITEMS` chunks of `WG` consecutive records in turn. (Staging a
//! chunk through workgroup memory with contiguous loads was 5–15% slower on the H200.)
//!
//! Every record is summed over `w = 0, 1, …, 15` in order (the first term a product, then
//! `mul_add`), whatever the schedule, so every schedule gives bit-identical results.

use crate::dims::{check_len, dim};
use forge_core::{ForgeError, ForgeRuntime, Result};
use forge_macros::forge_kernel;
use std::borrow::BorrowMut;

/// `out[r] = Σ_w weights[w] · f32(word w of record r)`, one invocation per record; a record
/// is four `UVec4`s, words 0–3, 4–7, 8–11 and 12–15.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = record_count, ext = false,
    tune(workgroup = [64, 128, 256], items = [1, 2, 4]),
    reference = p64_project_reference, tolerance(abs = 1e-3, rel = 1e-4),
    case(record_count = 1), case(record_count = 7), case(record_count = 257), case(record_count = 1031),
    cost(bytes = 68 * record_count + 64, flops = 32 * record_count))]
pub fn p64_project(
    records: &[UVec4; record_count * 4],
    weights: &[f32; 16],
    #[out] out: &mut [f32; record_count],
    record_count: u32,
) {
    // The weights in registers: every index below is a constant.
    let mut w = [0.0f32; 16];
    #[unroll]
    for i in 0..16 {
        w[i] = weights[i];
    }
    for i in 0..ITEMS {
        let r = (workgroup_index() * ITEMS + i) * WG + local_index();
        if r < record_count {
            let q = [
                records[4 * r],
                records[4 * r + 1],
                records[4 * r + 2],
                records[4 * r + 3],
            ];
            let mut acc = w[0] * (q[0].x as f32);
            #[unroll]
            for j in 1..16 {
                acc = w[j].mul_add(q[j / 4][j % 4] as f32, acc);
            }
            out[r] = acc;
        }
    }
}

/// The independent reference: each word converted to `f32` as the contract says, then
/// weighted and summed in f64.
pub fn p64_project_reference(
    records: &[[u32; 4]],
    weights: &[f32],
    record_count: u32,
) -> Result<Vec<f32>> {
    Ok(records
        .as_flattened()
        .chunks_exact(16)
        .take(record_count as usize)
        .map(|rec| {
            rec.iter()
                .zip(weights)
                .map(|(&word, &w)| w as f64 * (word as f32) as f64)
                .sum::<f64>() as f32
        })
        .collect())
}

/// One 64-byte record: 16 `u32` words, laid out as the GPU reads them.
///
/// ```
/// use wgsl_forge::prelude::*;
/// let rec = P64GpuWords64::from_u64_fields([0x0000_0002_0000_0001, 3, 0, 0, 0, 0, 0, 0]);
/// assert_eq!(rec.words[..4], [1, 2, 3, 0]);
/// assert_eq!(rec.as_bytes().len(), 64);
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct P64GpuWords64 {
    /// The record's words: word `2i` is the low half of field `i`, word `2i + 1` its high half.
    pub words: [u32; 16],
}

impl P64GpuWords64 {
    /// Builds a record from eight `u64` fields, each split into two words, low word first.
    pub fn from_u64_fields(fields: [u64; 8]) -> Self {
        let mut words = [0u32; 16];
        for (i, f) in fields.iter().enumerate() {
            words[2 * i] = *f as u32;
            words[2 * i + 1] = (*f >> 32) as u32;
        }
        P64GpuWords64 { words }
    }

    /// The record's 64 bytes, each word little-endian on the little-endian hosts wgpu runs on.
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }

    /// Records as the bytes [`P64ProjectExt::p64_project`] takes, without a copy.
    pub fn slice_as_bytes(records: &[P64GpuWords64]) -> &[u8] {
        bytemuck::cast_slice(records)
    }
}

/// `rt.p64_project(bytes, &weights, record_count)`, the seed's signature, and a typed form.
pub trait P64ProjectExt: BorrowMut<ForgeRuntime> {
    /// `out[r] = Σ_w weights[w] · f32(word[r][w])` over `record_count` records of 16 words.
    ///
    /// `bytes` holds exactly `record_count · 64` bytes: records as
    /// [`P64GpuWords64::slice_as_bytes`] gives them, each word little-endian. It needs no
    /// alignment (unaligned bytes are copied once). `weights` has 16 elements.
    ///
    /// Errors: `bytes` or `weights` of the wrong length ([`ForgeError::LengthMismatch`]),
    /// no records ([`ForgeError::EmptyWork`]), more words than `u32` indexes
    /// ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let rec = P64GpuWords64::from_u64_fields([1, 0, 0, 0, 0, 0, 0, 0]);
    /// assert_eq!(rt.p64_project(rec.as_bytes(), &[1.0; 16], 1)?, vec![1.0]);
    /// // Field 1 = 2^32 + 5 splits into words 5 and 1.
    /// let rec = P64GpuWords64::from_u64_fields([0, (1 << 32) + 5, 0, 0, 0, 0, 0, 0]);
    /// let w: Vec<f32> = (0..16).map(|i| i as f32).collect();
    /// assert_eq!(rt.p64_project(rec.as_bytes(), &w, 1)?, vec![2.0 * 5.0 + 3.0 * 1.0]);
    /// assert!(rt.p64_project(&[0u8; 63], &w, 1).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn p64_project(
        &mut self,
        bytes: &[u8],
        weights: &[f32],
        record_count: usize,
    ) -> Result<Vec<f32>> {
        let count = dim(p64_project::NAME, "record_count", record_count)?;
        let expected = record_count as u128 * 64;
        check_len(
            p64_project::NAME,
            "bytes",
            "record_count * 64",
            expected,
            bytes.len(),
        )?;
        words_fit(record_count)?;
        let rt = self.borrow_mut();
        match bytemuck::try_cast_slice::<u8, [u32; 4]>(bytes) {
            Ok(quads) => p64_project::run(rt, quads, weights, count),
            Err(_) => p64_project::run(
                rt,
                &bytemuck::pod_collect_to_vec::<u8, [u32; 4]>(bytes),
                weights,
                count,
            ),
        }
    }

    /// [`P64ProjectExt::p64_project`] over typed records: one output per record.
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// let recs = [P64GpuWords64::from_u64_fields([1, 2, 3, 4, 5, 6, 7, 8]); 3];
    /// assert_eq!(rt.p64_project_records(&recs, &[1.0; 16])?, vec![36.0; 3]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn p64_project_records(
        &mut self,
        records: &[P64GpuWords64],
        weights: &[f32],
    ) -> Result<Vec<f32>> {
        self.p64_project(
            P64GpuWords64::slice_as_bytes(records),
            weights,
            records.len(),
        )
    }
}

impl P64ProjectExt for ForgeRuntime {}

/// The kernel indexes words as `16·r + w` in `u32`.
fn words_fit(record_count: usize) -> Result<()> {
    if record_count as u128 * 16 > u32::MAX as u128 + 1 {
        return Err(ForgeError::InvalidArgument {
            kernel: p64_project::NAME,
            message: format!("{record_count} records are more than 2^28, past the kernel's u32 indexing of words"),
        });
    }
    Ok(())
}
