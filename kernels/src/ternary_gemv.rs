//! Ternary matrix-vector product: `y[r] = scale[r] · Σ_c w[r][c] · x[c]` with weights in
//! `{-1, 0, +1}`, packed as 2-bit codes.
//!
//! # Packing
//! Codes are packed 16 to a `u32`, low bits first: weight `c` of a row sits in bits
//! `2·(c % 16)` and `2·(c % 16) + 1` of the row's word `c / 16`. The codes are `0 → 0`,
//! `1 → +1`, `2 → −1`; code `3` is reserved and reads as `0`. Each row starts on a fresh
//! word, so a row takes `k.div_ceil(16)` words and the bits past `k` in its last word are
//! ignored. [`pack_ternary`] builds this layout from `i8` weights.
//!
//! # Schedule
//! The packed weights are 2 bits each: reading them takes a sixteenth of the time an f32
//! matrix would, so decoding, not memory, is what limits a direct kernel. This one decodes
//! two codes per table lookup. For each chunk of 128 columns, the workgroup first writes a
//! table per pair of columns `(c, c+1)`: its 16 entries hold `A[lo] + B[hi]` for the 4-bit
//! code pair `lo + 4·hi`, with `A = (0, x[c], −x[c], 0)` and `B` the same for `x[c+1]`
//! (code 3 reads as 0). An invocation then adds one table entry per 4 bits of weights:
//! a shift, a mask, a load from workgroup memory and an add, for two weights.
//!
//! The tables cost the workgroup the same however many rows it holds, so a workgroup holds
//! many rows: `WG / 4` of them, each cut into 4 segments of whole chunks (a quarter of the
//! row each) taken by 4 invocations; one warp holds one segment of 32 rows, so its lanes
//! look up the same pair's table at the same time, on distinct banks. Every invocation
//! reads its row's 8 words of a chunk one chunk ahead, so the loads fly while the tables
//! are built; with `VEC = 2` it also reads the `x` of its table pairs a chunk ahead. The 4
//! segment sums meet in workgroup memory.
//!
//! The summation order depends only on `k`: each invocation adds its segment's entries in
//! column order into four accumulators (word `i` of a chunk into accumulator `i % 4`),
//! `(s0 + s1) + (s2 + s3)`, then the segments in order. Every schedule gives bit-identical
//! results.
//!
//! Weights of `0` add nothing (their entries hold only the other column's term), so an
//! infinite or NaN `x[c]` only matters where `w[r][c] ≠ 0`; with its pair partner, though,
//! `x[c] + x[c+1]` is formed for the table whatever the weights.

use crate::dims::dim;
use forge_core::{ForgeError, ForgeRuntime};
use forge_macros::forge_kernel;

/// `y[r] = scale[r] · Σ_c w[r][c] · x[c]`, with `w` packed 16 codes to a word, row stride
/// `k.div_ceil(16)` words; decoded two codes per table lookup.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 4, ext = false,
    tune(workgroup = [256, 128, 512], vector = [1, 2]),
    reference = ternary_gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, k = 1), case(m = 2, k = 4), case(m = 7, k = 13), case(m = 3, k = 16),
    case(m = 5, k = 1031), case(m = 300, k = 17), case(m = 131, k = 2053), case(m = 70, k = 4100))]
pub fn ternary_gemv(
    x: &[f32; k],
    packed_w: &[u32; m * k.div_ceil(16)],
    scale: &[f32; m],
    #[out] y: &mut [f32; m],
    m: u32,
    k: u32,
) {
    // 4 segments × 64 pairs of columns × 16 entries, entry `e` of pair `q` at
    // `16·q + (e ^ (q % 16))`: the builders' stores spread over the banks.
    #[shared]
    let mut lut = [0.0f32; 4096];
    let lid = local_index();
    let rows = WG / 4;
    let seg = lid / rows;
    let local_row = lid % rows;
    let row0 = workgroup_index() * rows + local_row;
    // Rows past `m` read the last row again and store nothing: every lane reaches the
    // barriers.
    let row = row0.min(m - 1);
    let words = k.div_ceil(16);
    // Each row is cut into 4 segments of whole chunks of 8 words (128 columns).
    let seg_words = words.div_ceil(4).div_ceil(8) * 8;
    let chunks = seg_words / 8;
    let rb = row * words;
    let tail = k % 16;
    let tail_mask = if tail == 0 {
        0xffff_ffffu32
    } else {
        (1u32 << (2 * tail)) - 1
    };
    let mut acc0 = 0.0f32;
    let mut acc1 = 0.0f32;
    let mut acc2 = 0.0f32;
    let mut acc3 = 0.0f32;
    // The next chunk's words, loaded a chunk ahead.
    let first = seg * seg_words;
    // With VEC = 2, the x of this invocation's table pairs (`lid` and `lid + WG`), a chunk
    // ahead too.
    let mut pa = 0.0f32;
    let mut pb = 0.0f32;
    let mut qa = 0.0f32;
    let mut qb = 0.0f32;
    if VEC == 2 {
        let c_p = (((lid) / 64) * seg_words + 0u32 * 8) * 16 + 2 * ((lid) % 64);
        pa = if (lid) < 256 && c_p < k {
            x[c_p]
        } else {
            0.0f32
        };
        pb = if (lid) < 256 && c_p + 1 < k {
            x[c_p + 1]
        } else {
            0.0f32
        };
        let c_q = (((lid + WG) / 64) * seg_words + 0u32 * 8) * 16 + 2 * ((lid + WG) % 64);
        qa = if (lid + WG) < 256 && c_q < k {
            x[c_q]
        } else {
            0.0f32
        };
        qb = if (lid + WG) < 256 && c_q + 1 < k {
            x[c_q + 1]
        } else {
            0.0f32
        };
    }
    let mut n0 = if first + 0 < words {
        packed_w[rb + first + 0]
    } else {
        0u32
    };
    let mut n1 = if first + 1 < words {
        packed_w[rb + first + 1]
    } else {
        0u32
    };
    let mut n2 = if first + 2 < words {
        packed_w[rb + first + 2]
    } else {
        0u32
    };
    let mut n3 = if first + 3 < words {
        packed_w[rb + first + 3]
    } else {
        0u32
    };
    let mut n4 = if first + 4 < words {
        packed_w[rb + first + 4]
    } else {
        0u32
    };
    let mut n5 = if first + 5 < words {
        packed_w[rb + first + 5]
    } else {
        0u32
    };
    let mut n6 = if first + 6 < words {
        packed_w[rb + first + 6]
    } else {
        0u32
    };
    let mut n7 = if first + 7 < words {
        packed_w[rb + first + 7]
    } else {
        0u32
    };
    for t in 0..chunks {
        let wb = seg * seg_words + t * 8;
        let w0 = if wb + 0 == words - 1 {
            n0 & tail_mask
        } else {
            n0
        };
        let w1 = if wb + 1 == words - 1 {
            n1 & tail_mask
        } else {
            n1
        };
        let w2 = if wb + 2 == words - 1 {
            n2 & tail_mask
        } else {
            n2
        };
        let w3 = if wb + 3 == words - 1 {
            n3 & tail_mask
        } else {
            n3
        };
        let w4 = if wb + 4 == words - 1 {
            n4 & tail_mask
        } else {
            n4
        };
        let w5 = if wb + 5 == words - 1 {
            n5 & tail_mask
        } else {
            n5
        };
        let w6 = if wb + 6 == words - 1 {
            n6 & tail_mask
        } else {
            n6
        };
        let w7 = if wb + 7 == words - 1 {
            n7 & tail_mask
        } else {
            n7
        };
        let nb = wb + 8;
        n0 = if t + 1 < chunks && nb + 0 < words {
            packed_w[rb + nb + 0]
        } else {
            0u32
        };
        n1 = if t + 1 < chunks && nb + 1 < words {
            packed_w[rb + nb + 1]
        } else {
            0u32
        };
        n2 = if t + 1 < chunks && nb + 2 < words {
            packed_w[rb + nb + 2]
        } else {
            0u32
        };
        n3 = if t + 1 < chunks && nb + 3 < words {
            packed_w[rb + nb + 3]
        } else {
            0u32
        };
        n4 = if t + 1 < chunks && nb + 4 < words {
            packed_w[rb + nb + 4]
        } else {
            0u32
        };
        n5 = if t + 1 < chunks && nb + 5 < words {
            packed_w[rb + nb + 5]
        } else {
            0u32
        };
        n6 = if t + 1 < chunks && nb + 6 < words {
            packed_w[rb + nb + 6]
        } else {
            0u32
        };
        n7 = if t + 1 < chunks && nb + 7 < words {
            packed_w[rb + nb + 7]
        } else {
            0u32
        };
        if VEC == 2 {
            let q = lid;
            if q < 256 {
                let x0 = pa;
                let x1 = pb;
                let n0 = -x0;
                let n1 = -x1;
                let b = q * 16;
                let qm = q % 16;
                lut[b + (0u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (1u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (2u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (3u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (4u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (5u32 ^ qm)] = x0 + x1;
                lut[b + (6u32 ^ qm)] = n0 + x1;
                lut[b + (7u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (8u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (9u32 ^ qm)] = x0 + n1;
                lut[b + (10u32 ^ qm)] = n0 + n1;
                lut[b + (11u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (12u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (13u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (14u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (15u32 ^ qm)] = 0.0f32 + 0.0f32;
            }
            let q = lid + WG;
            if q < 256 {
                let x0 = qa;
                let x1 = qb;
                let n0 = -x0;
                let n1 = -x1;
                let b = q * 16;
                let qm = q % 16;
                lut[b + (0u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (1u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (2u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (3u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (4u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (5u32 ^ qm)] = x0 + x1;
                lut[b + (6u32 ^ qm)] = n0 + x1;
                lut[b + (7u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (8u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (9u32 ^ qm)] = x0 + n1;
                lut[b + (10u32 ^ qm)] = n0 + n1;
                lut[b + (11u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (12u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (13u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (14u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (15u32 ^ qm)] = 0.0f32 + 0.0f32;
            }
            // Any pairs past `lid + WG` (workgroups under 128), loaded now.
            let mut q = lid + 2 * WG;
            while q < 256 {
                let c = ((q / 64) * seg_words + t * 8) * 16 + 2 * (q % 64);
                let xa = if c < k { x[c] } else { 0.0f32 };
                let xb = if c + 1 < k { x[c + 1] } else { 0.0f32 };
                if q < 256 {
                    let x0 = xa;
                    let x1 = xb;
                    let n0 = -x0;
                    let n1 = -x1;
                    let b = q * 16;
                    let qm = q % 16;
                    lut[b + (0u32 ^ qm)] = 0.0f32 + 0.0f32;
                    lut[b + (1u32 ^ qm)] = x0 + 0.0f32;
                    lut[b + (2u32 ^ qm)] = n0 + 0.0f32;
                    lut[b + (3u32 ^ qm)] = 0.0f32 + 0.0f32;
                    lut[b + (4u32 ^ qm)] = 0.0f32 + x1;
                    lut[b + (5u32 ^ qm)] = x0 + x1;
                    lut[b + (6u32 ^ qm)] = n0 + x1;
                    lut[b + (7u32 ^ qm)] = 0.0f32 + x1;
                    lut[b + (8u32 ^ qm)] = 0.0f32 + n1;
                    lut[b + (9u32 ^ qm)] = x0 + n1;
                    lut[b + (10u32 ^ qm)] = n0 + n1;
                    lut[b + (11u32 ^ qm)] = 0.0f32 + n1;
                    lut[b + (12u32 ^ qm)] = 0.0f32 + 0.0f32;
                    lut[b + (13u32 ^ qm)] = x0 + 0.0f32;
                    lut[b + (14u32 ^ qm)] = n0 + 0.0f32;
                    lut[b + (15u32 ^ qm)] = 0.0f32 + 0.0f32;
                }
                q += WG;
            }
            // The next chunk's x, loaded while this chunk is looked up.
            let c_p = (((lid) / 64) * seg_words + (t + 1) * 8) * 16 + 2 * ((lid) % 64);
            pa = if (lid) < 256 && c_p < k {
                x[c_p]
            } else {
                0.0f32
            };
            pb = if (lid) < 256 && c_p + 1 < k {
                x[c_p + 1]
            } else {
                0.0f32
            };
            let c_q = (((lid + WG) / 64) * seg_words + (t + 1) * 8) * 16 + 2 * ((lid + WG) % 64);
            qa = if (lid + WG) < 256 && c_q < k {
                x[c_q]
            } else {
                0.0f32
            };
            qb = if (lid + WG) < 256 && c_q + 1 < k {
                x[c_q + 1]
            } else {
                0.0f32
            };
        } else {
            // The chunk's tables: pair `q` (segment q / 64, pair q % 64 of its chunk) holds
            // `A[lo] + B[hi]` at entry `lo + 4·hi`, with A = (0, x0, −x0, 0) and
            // B = (0, x1, −x1, 0): code 3 reads as 0.
            let mut q = lid;
            while q < 256 {
                let c = ((q / 64) * seg_words + t * 8) * 16 + 2 * (q % 64);
                let x0 = if c < k { x[c] } else { 0.0f32 };
                let x1 = if c + 1 < k { x[c + 1] } else { 0.0f32 };
                let n0 = -x0;
                let n1 = -x1;
                let b = q * 16;
                let qm = q % 16;
                lut[b + (0u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (1u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (2u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (3u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (4u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (5u32 ^ qm)] = x0 + x1;
                lut[b + (6u32 ^ qm)] = n0 + x1;
                lut[b + (7u32 ^ qm)] = 0.0f32 + x1;
                lut[b + (8u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (9u32 ^ qm)] = x0 + n1;
                lut[b + (10u32 ^ qm)] = n0 + n1;
                lut[b + (11u32 ^ qm)] = 0.0f32 + n1;
                lut[b + (12u32 ^ qm)] = 0.0f32 + 0.0f32;
                lut[b + (13u32 ^ qm)] = x0 + 0.0f32;
                lut[b + (14u32 ^ qm)] = n0 + 0.0f32;
                lut[b + (15u32 ^ qm)] = 0.0f32 + 0.0f32;
                q += WG;
            }
        }
        workgroup_barrier();
        let tb = seg * 1024;
        acc0 += lut[tb + 0u32 + ((w0 & 15u32) ^ 0u32)];
        acc0 += lut[tb + 16u32 + (((w0 >> 4u32) & 15u32) ^ 1u32)];
        acc0 += lut[tb + 32u32 + (((w0 >> 8u32) & 15u32) ^ 2u32)];
        acc0 += lut[tb + 48u32 + (((w0 >> 12u32) & 15u32) ^ 3u32)];
        acc0 += lut[tb + 64u32 + (((w0 >> 16u32) & 15u32) ^ 4u32)];
        acc0 += lut[tb + 80u32 + (((w0 >> 20u32) & 15u32) ^ 5u32)];
        acc0 += lut[tb + 96u32 + (((w0 >> 24u32) & 15u32) ^ 6u32)];
        acc0 += lut[tb + 112u32 + ((w0 >> 28u32) ^ 7u32)];
        acc1 += lut[tb + 128u32 + ((w1 & 15u32) ^ 8u32)];
        acc1 += lut[tb + 144u32 + (((w1 >> 4u32) & 15u32) ^ 9u32)];
        acc1 += lut[tb + 160u32 + (((w1 >> 8u32) & 15u32) ^ 10u32)];
        acc1 += lut[tb + 176u32 + (((w1 >> 12u32) & 15u32) ^ 11u32)];
        acc1 += lut[tb + 192u32 + (((w1 >> 16u32) & 15u32) ^ 12u32)];
        acc1 += lut[tb + 208u32 + (((w1 >> 20u32) & 15u32) ^ 13u32)];
        acc1 += lut[tb + 224u32 + (((w1 >> 24u32) & 15u32) ^ 14u32)];
        acc1 += lut[tb + 240u32 + ((w1 >> 28u32) ^ 15u32)];
        acc2 += lut[tb + 256u32 + ((w2 & 15u32) ^ 0u32)];
        acc2 += lut[tb + 272u32 + (((w2 >> 4u32) & 15u32) ^ 1u32)];
        acc2 += lut[tb + 288u32 + (((w2 >> 8u32) & 15u32) ^ 2u32)];
        acc2 += lut[tb + 304u32 + (((w2 >> 12u32) & 15u32) ^ 3u32)];
        acc2 += lut[tb + 320u32 + (((w2 >> 16u32) & 15u32) ^ 4u32)];
        acc2 += lut[tb + 336u32 + (((w2 >> 20u32) & 15u32) ^ 5u32)];
        acc2 += lut[tb + 352u32 + (((w2 >> 24u32) & 15u32) ^ 6u32)];
        acc2 += lut[tb + 368u32 + ((w2 >> 28u32) ^ 7u32)];
        acc3 += lut[tb + 384u32 + ((w3 & 15u32) ^ 8u32)];
        acc3 += lut[tb + 400u32 + (((w3 >> 4u32) & 15u32) ^ 9u32)];
        acc3 += lut[tb + 416u32 + (((w3 >> 8u32) & 15u32) ^ 10u32)];
        acc3 += lut[tb + 432u32 + (((w3 >> 12u32) & 15u32) ^ 11u32)];
        acc3 += lut[tb + 448u32 + (((w3 >> 16u32) & 15u32) ^ 12u32)];
        acc3 += lut[tb + 464u32 + (((w3 >> 20u32) & 15u32) ^ 13u32)];
        acc3 += lut[tb + 480u32 + (((w3 >> 24u32) & 15u32) ^ 14u32)];
        acc3 += lut[tb + 496u32 + ((w3 >> 28u32) ^ 15u32)];
        acc0 += lut[tb + 512u32 + ((w4 & 15u32) ^ 0u32)];
        acc0 += lut[tb + 528u32 + (((w4 >> 4u32) & 15u32) ^ 1u32)];
        acc0 += lut[tb + 544u32 + (((w4 >> 8u32) & 15u32) ^ 2u32)];
        acc0 += lut[tb + 560u32 + (((w4 >> 12u32) & 15u32) ^ 3u32)];
        acc0 += lut[tb + 576u32 + (((w4 >> 16u32) & 15u32) ^ 4u32)];
        acc0 += lut[tb + 592u32 + (((w4 >> 20u32) & 15u32) ^ 5u32)];
        acc0 += lut[tb + 608u32 + (((w4 >> 24u32) & 15u32) ^ 6u32)];
        acc0 += lut[tb + 624u32 + ((w4 >> 28u32) ^ 7u32)];
        acc1 += lut[tb + 640u32 + ((w5 & 15u32) ^ 8u32)];
        acc1 += lut[tb + 656u32 + (((w5 >> 4u32) & 15u32) ^ 9u32)];
        acc1 += lut[tb + 672u32 + (((w5 >> 8u32) & 15u32) ^ 10u32)];
        acc1 += lut[tb + 688u32 + (((w5 >> 12u32) & 15u32) ^ 11u32)];
        acc1 += lut[tb + 704u32 + (((w5 >> 16u32) & 15u32) ^ 12u32)];
        acc1 += lut[tb + 720u32 + (((w5 >> 20u32) & 15u32) ^ 13u32)];
        acc1 += lut[tb + 736u32 + (((w5 >> 24u32) & 15u32) ^ 14u32)];
        acc1 += lut[tb + 752u32 + ((w5 >> 28u32) ^ 15u32)];
        acc2 += lut[tb + 768u32 + ((w6 & 15u32) ^ 0u32)];
        acc2 += lut[tb + 784u32 + (((w6 >> 4u32) & 15u32) ^ 1u32)];
        acc2 += lut[tb + 800u32 + (((w6 >> 8u32) & 15u32) ^ 2u32)];
        acc2 += lut[tb + 816u32 + (((w6 >> 12u32) & 15u32) ^ 3u32)];
        acc2 += lut[tb + 832u32 + (((w6 >> 16u32) & 15u32) ^ 4u32)];
        acc2 += lut[tb + 848u32 + (((w6 >> 20u32) & 15u32) ^ 5u32)];
        acc2 += lut[tb + 864u32 + (((w6 >> 24u32) & 15u32) ^ 6u32)];
        acc2 += lut[tb + 880u32 + ((w6 >> 28u32) ^ 7u32)];
        acc3 += lut[tb + 896u32 + ((w7 & 15u32) ^ 8u32)];
        acc3 += lut[tb + 912u32 + (((w7 >> 4u32) & 15u32) ^ 9u32)];
        acc3 += lut[tb + 928u32 + (((w7 >> 8u32) & 15u32) ^ 10u32)];
        acc3 += lut[tb + 944u32 + (((w7 >> 12u32) & 15u32) ^ 11u32)];
        acc3 += lut[tb + 960u32 + (((w7 >> 16u32) & 15u32) ^ 12u32)];
        acc3 += lut[tb + 976u32 + (((w7 >> 20u32) & 15u32) ^ 13u32)];
        acc3 += lut[tb + 992u32 + (((w7 >> 24u32) & 15u32) ^ 14u32)];
        acc3 += lut[tb + 1008u32 + ((w7 >> 28u32) ^ 15u32)];
        workgroup_barrier();
    }
    // The tables are done with (the loop ends on a barrier): the segment sums go there.
    lut[lid] = (acc0 + acc1) + (acc2 + acc3);
    workgroup_barrier();
    if seg == 0 && row0 < m {
        let s = ((lut[local_row] + lut[rows + local_row]) + lut[2 * rows + local_row])
            + lut[3 * rows + local_row];
        y[row0] = s * scale[row0];
    }
}

/// The independent reference: decodes every weight by its index and sums in f64.
pub fn ternary_gemv_reference(
    x: &[f32],
    packed_w: &[u32],
    scale: &[f32],
    m: u32,
    k: u32,
) -> Result<Vec<f32>, ForgeError> {
    let (m, k) = (m as usize, k as usize);
    let stride = k.div_ceil(16);
    Ok((0..m)
        .map(|r| {
            let dot: f64 = (0..k)
                .map(|c| {
                    let code = (packed_w[r * stride + c / 16] >> (2 * (c % 16))) & 0b11;
                    match code {
                        1 => x[c] as f64,
                        2 => -(x[c] as f64),
                        _ => 0.0,
                    }
                })
                .sum();
            (dot * scale[r] as f64) as f32
        })
        .collect())
}

/// Packs row-major `m×k` ternary weights into the layout [`TernaryGemvExt::ternary_gemv`]
/// reads: 16 two-bit codes to a `u32`, low bits first, `0 → 0`, `+1 → 1`, `−1 → 2`, each row
/// starting on a fresh word (`k.div_ceil(16)` words a row).
///
/// Errors: `weights.len() != m·k` ([`ForgeError::LengthMismatch`]), a zero dimension
/// ([`ForgeError::EmptyWork`]), a weight outside `{-1, 0, 1}` ([`ForgeError::InvalidArgument`],
/// naming its row and column).
///
/// ```
/// use wgsl_forge::prelude::*;
/// assert_eq!(pack_ternary(&[1, 1, 1, 1, -1, -1, -1, -1], 2, 4)?, vec![0x55, 0xAA]);
/// assert_eq!(pack_ternary(&[0, 1, -1], 1, 3)?, vec![0b10_01_00]);
/// assert!(pack_ternary(&[2], 1, 1).is_err());
/// # Ok::<(), ForgeError>(())
/// ```
pub fn pack_ternary(weights: &[i8], m: usize, k: usize) -> Result<Vec<u32>, ForgeError> {
    const NAME: &str = "pack_ternary";
    if m == 0 || k == 0 {
        return Err(ForgeError::EmptyWork {
            kernel: NAME,
            what: format!("m = {m}, k = {k}"),
        });
    }
    let expected = m
        .checked_mul(k)
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel: NAME,
            message: format!("m·k = {m}·{k} overflows usize"),
        })?;
    if weights.len() != expected {
        return Err(ForgeError::LengthMismatch {
            kernel: NAME,
            arg: "weights",
            expr: "m * k",
            expected: expected as u64,
            actual: weights.len(),
        });
    }
    let stride = k.div_ceil(16);
    let mut packed = vec![0u32; m * stride];
    for (i, &w) in weights.iter().enumerate() {
        let (r, c) = (i / k, i % k);
        let code = match w {
            0 => 0u32,
            1 => 1,
            -1 => 2,
            v => {
                return Err(ForgeError::InvalidArgument {
                    kernel: NAME,
                    message: format!("weight [{r}][{c}] is {v}; ternary weights are -1, 0 or 1"),
                })
            }
        };
        packed[r * stride + c / 16] |= code << (2 * (c % 16));
    }
    Ok(packed)
}

/// `rt.ternary_gemv(&x, &packed_w, &scale, m, k)`, the seed's signature.
pub trait TernaryGemvExt {
    /// `y[r] = scale[r] · Σ_c w[r][c] · x[c]` for an `m×k` ternary matrix packed by
    /// [`pack_ternary`]: `x` has `k` elements, `packed_w` has `m · k.div_ceil(16)` words,
    /// `scale` has `m`. Code `3` reads as `0`. Any `m`, `k` ≥ 1; `k` need not be a multiple
    /// of 16.
    ///
    /// Errors: a slice of the wrong length ([`ForgeError::LengthMismatch`]), a zero dimension
    /// ([`ForgeError::EmptyWork`]), a dimension past `u32` ([`ForgeError::InvalidArgument`]).
    ///
    /// ```
    /// use wgsl_forge::prelude::*;
    /// let mut rt = ForgeRuntime::new(1 << 26, None)?;
    /// // Row 0 is 0x55: codes 1,1,1,1 (+1 each); row 1 is 0xAA: codes 2,2,2,2 (−1 each).
    /// let y = rt.ternary_gemv(&[1.0, 2.0, 3.0, 4.0], &[0x55, 0xAA], &[2.0, 10.0], 2, 4)?;
    /// assert_eq!(y, vec![20.0, -100.0]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    fn ternary_gemv(
        &mut self,
        x: &[f32],
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>, ForgeError>;
}

impl TernaryGemvExt for ForgeRuntime {
    fn ternary_gemv(
        &mut self,
        x: &[f32],
        packed_w: &[u32],
        scale: &[f32],
        m: usize,
        k: usize,
    ) -> Result<Vec<f32>, ForgeError> {
        let (m, k) = (
            dim(ternary_gemv::NAME, "m", m)?,
            dim(ternary_gemv::NAME, "k", k)?,
        );
        ternary_gemv::run(self, x, packed_w, scale, m, k)
    }
}
