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
//! Memory-bound. A workgroup takes `ITEMS` chunks of `WG` consecutive records in turn. Its
//! invocations copy a chunk's `16·WG` words into workgroup memory with 16 contiguous loads
//! each, all in flight together, then each invocation projects one record from workgroup
//! memory, instead of reading its own record's words 64 bytes away from its neighbour's. On
//! an H200, 16·2^20 records take 302–317 µs at `WG = 64`, 3.6–3.8 TB/s, where a device copy
//! reaches 4.2 TB/s.
//!
//! Every record is summed over `w = 0, 1, …, 15` in order (the first term a product, then
//! `mul_add`), whatever the schedule, so every schedule gives bit-identical results.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `out[r] = Σ_w weights[w] · f32(records[16·r + w])`, one invocation per record.
#[forge_kernel(crate = ::forge_core, workgroup = 64, threads = record_count, ext = false,
    tune(workgroup = [64, 128], items = [4, 1, 2]),
    reference = p64_project_reference, tolerance(abs = 1e-3, rel = 1e-4),
    case(record_count = 1), case(record_count = 7), case(record_count = 257), case(record_count = 1031))]
pub fn p64_project(
    records: &[u32; record_count * 16],
    weights: &[f32; 16],
    #[out] out: &mut [f32; record_count],
    record_count: u32,
) {
    // A stride of 17 words puts the words of neighbouring records on distinct banks.
    #[shared]
    let mut tile = [0u32; WG * 17];
    let lid = local_index();
    let total = record_count * 16;
    for i in 0..ITEMS {
        let r0 = (workgroup_index() * ITEMS + i) * WG;
        // The chunk's 16·WG words, read contiguously: 16 loads in flight per invocation.
        let g = r0 * 16 + lid;
        let v0 = if g + 0 * WG < total {
            records[g + 0 * WG]
        } else {
            0u32
        };
        let v1 = if g + 1 * WG < total {
            records[g + 1 * WG]
        } else {
            0u32
        };
        let v2 = if g + 2 * WG < total {
            records[g + 2 * WG]
        } else {
            0u32
        };
        let v3 = if g + 3 * WG < total {
            records[g + 3 * WG]
        } else {
            0u32
        };
        let v4 = if g + 4 * WG < total {
            records[g + 4 * WG]
        } else {
            0u32
        };
        let v5 = if g + 5 * WG < total {
            records[g + 5 * WG]
        } else {
            0u32
        };
        let v6 = if g + 6 * WG < total {
            records[g + 6 * WG]
        } else {
            0u32
        };
        let v7 = if g + 7 * WG < total {
            records[g + 7 * WG]
        } else {
            0u32
        };
        let v8 = if g + 8 * WG < total {
            records[g + 8 * WG]
        } else {
            0u32
        };
        let v9 = if g + 9 * WG < total {
            records[g + 9 * WG]
        } else {
            0u32
        };
        let v10 = if g + 10 * WG < total {
            records[g + 10 * WG]
        } else {
            0u32
        };
        let v11 = if g + 11 * WG < total {
            records[g + 11 * WG]
        } else {
            0u32
        };
        let v12 = if g + 12 * WG < total {
            records[g + 12 * WG]
        } else {
            0u32
        };
        let v13 = if g + 13 * WG < total {
            records[g + 13 * WG]
        } else {
            0u32
        };
        let v14 = if g + 14 * WG < total {
            records[g + 14 * WG]
        } else {
            0u32
        };
        let v15 = if g + 15 * WG < total {
            records[g + 15 * WG]
        } else {
            0u32
        };
        let q0 = 0 * WG + lid;
        tile[(q0 / 16) * 17 + q0 % 16] = v0;
        let q1 = 1 * WG + lid;
        tile[(q1 / 16) * 17 + q1 % 16] = v1;
        let q2 = 2 * WG + lid;
        tile[(q2 / 16) * 17 + q2 % 16] = v2;
        let q3 = 3 * WG + lid;
        tile[(q3 / 16) * 17 + q3 % 16] = v3;
        let q4 = 4 * WG + lid;
        tile[(q4 / 16) * 17 + q4 % 16] = v4;
        let q5 = 5 * WG + lid;
        tile[(q5 / 16) * 17 + q5 % 16] = v5;
        let q6 = 6 * WG + lid;
        tile[(q6 / 16) * 17 + q6 % 16] = v6;
        let q7 = 7 * WG + lid;
        tile[(q7 / 16) * 17 + q7 % 16] = v7;
        let q8 = 8 * WG + lid;
        tile[(q8 / 16) * 17 + q8 % 16] = v8;
        let q9 = 9 * WG + lid;
        tile[(q9 / 16) * 17 + q9 % 16] = v9;
        let q10 = 10 * WG + lid;
        tile[(q10 / 16) * 17 + q10 % 16] = v10;
        let q11 = 11 * WG + lid;
        tile[(q11 / 16) * 17 + q11 % 16] = v11;
        let q12 = 12 * WG + lid;
        tile[(q12 / 16) * 17 + q12 % 16] = v12;
        let q13 = 13 * WG + lid;
        tile[(q13 / 16) * 17 + q13 % 16] = v13;
        let q14 = 14 * WG + lid;
        tile[(q14 / 16) * 17 + q14 % 16] = v14;
        let q15 = 15 * WG + lid;
        tile[(q15 / 16) * 17 + q15 % 16] = v15;
        workgroup_barrier();
        if r0 + lid < record_count {
            let mut acc = weights[0] * (tile[lid * 17] as f32);
            acc = weights[1].mul_add(tile[lid * 17 + 1] as f32, acc);
            acc = weights[2].mul_add(tile[lid * 17 + 2] as f32, acc);
            acc = weights[3].mul_add(tile[lid * 17 + 3] as f32, acc);
            acc = weights[4].mul_add(tile[lid * 17 + 4] as f32, acc);
            acc = weights[5].mul_add(tile[lid * 17 + 5] as f32, acc);
            acc = weights[6].mul_add(tile[lid * 17 + 6] as f32, acc);
            acc = weights[7].mul_add(tile[lid * 17 + 7] as f32, acc);
            acc = weights[8].mul_add(tile[lid * 17 + 8] as f32, acc);
            acc = weights[9].mul_add(tile[lid * 17 + 9] as f32, acc);
            acc = weights[10].mul_add(tile[lid * 17 + 10] as f32, acc);
            acc = weights[11].mul_add(tile[lid * 17 + 11] as f32, acc);
            acc = weights[12].mul_add(tile[lid * 17 + 12] as f32, acc);
            acc = weights[13].mul_add(tile[lid * 17 + 13] as f32, acc);
            acc = weights[14].mul_add(tile[lid * 17 + 14] as f32, acc);
            acc = weights[15].mul_add(tile[lid * 17 + 15] as f32, acc);
            out[r0 + lid] = acc;
        }
        workgroup_barrier();
    }
}

/// The independent reference: each word converted to `f32` as the contract says, then
/// weighted and summed in f64.
pub fn p64_project_reference(
    records: &[u32],
    weights: &[f32],
    record_count: u32,
) -> Result<Vec<f32>, ForgeError> {
    Ok(records
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
pub trait P64ProjectExt {
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
    ) -> Result<Vec<f32>, ForgeError>;

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
    ) -> Result<Vec<f32>, ForgeError>;
}

impl P64ProjectExt for ForgeRuntime {
    fn p64_project(
        &mut self,
        bytes: &[u8],
        weights: &[f32],
        record_count: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let count = dim(p64_project::NAME, "record_count", record_count)?;
        let expected = record_count as u128 * 64;
        if bytes.len() as u128 != expected {
            return Err(ForgeError::LengthMismatch {
                kernel: p64_project::NAME,
                arg: "bytes",
                expr: "record_count * 64",
                expected: expected as u64,
                actual: bytes.len(),
            });
        }
        words_fit(record_count)?;
        match bytemuck::try_cast_slice::<u8, u32>(bytes) {
            Ok(words) => p64_project::run(self, words, weights, count),
            Err(_) => p64_project::run(
                self,
                &bytemuck::pod_collect_to_vec::<u8, u32>(bytes),
                weights,
                count,
            ),
        }
    }

    fn p64_project_records(
        &mut self,
        records: &[P64GpuWords64],
        weights: &[f32],
    ) -> Result<Vec<f32>, ForgeError> {
        let count = dim(p64_project::NAME, "record_count", records.len())?;
        words_fit(records.len())?;
        p64_project::run(self, bytemuck::cast_slice(records), weights, count)
    }
}

/// The kernel indexes words as `16·r + w` in `u32`.
fn words_fit(record_count: usize) -> Result<(), ForgeError> {
    if record_count as u128 * 16 > u32::MAX as u128 + 1 {
        return Err(ForgeError::InvalidArgument {
            kernel: p64_project::NAME,
            message: format!("{record_count} records are more than 2^28, past the kernel's u32 indexing of words"),
        });
    }
    Ok(())
}
