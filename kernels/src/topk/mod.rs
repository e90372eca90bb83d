//! Top-k selection: the `k` largest values of each block of consecutive elements, and of
//! the whole input.
//!
//! # Order
//! Values are ordered as `torch.topk` orders them on CUDA, whose radix keys this kernel
//! uses: every NaN (whatever its sign or payload) is larger than `+inf`, and all NaNs are
//! equal; `+0.0` is larger than `-0.0`; otherwise the usual order of `f32`, down to `-inf`.
//! Equal values come in the order of their indices, lowest first, so results never depend
//! on the schedule or the adapter. Values are returned bit for bit as they were given
//! (NaN payloads and the sign of zero included).
//!
//! # Blocks and padding
//! The input is cut into blocks of `block` consecutive elements; the last block is shorter
//! when `block` does not divide the length. Each block contributes exactly `k` outputs, in
//! descending order, so block `i`'s results sit at `i·k .. (i+1)·k`. A last block with fewer
//! than `k` elements is padded after its real values with `-inf` and the index
//! [`TOPK_PAD_INDEX`] (`u32::MAX`), which sorts after every real value, `-inf` included.
//! The block size is always the caller's argument: it never depends on the tuned schedule.
//!
//! # Blocks: two kernels
//! With `k ≤ 8` ([`TOPK_ROWS_MAX_K`]), [`topk_rows`] gives each block to one invocation,
//! which keeps the best nine in registers (see the kernel for the packed keys, their exact
//! fallback and the schedules): one read of the input.
//!
//! Otherwise [`topk_select`] does, also in one read: a workgroup loads whole blocks into
//! workgroup memory as 32-bit keys (the order above, made unsigned) with their positions,
//! each block padded to `p = block.next_power_of_two()` slots with keys below every real
//! value. It then runs a bitonic top-k: runs of `K = k.next_power_of_two()` keys are sorted
//! by a bitonic network with alternating directions, and pairs of runs are merged by keeping
//! the larger half (Batcher's half-cleaner) and re-sorting it, until one sorted run of `K`
//! remains per block; its first `k` entries are written, values re-read from the input so
//! that they keep their bits. A workgroup holds `WG·ITEMS / p` blocks (at least one).
//! Positions are unique within a block, so the order is total and every schedule gives
//! bit-identical results. (Its `chained` mode, candidates carrying their indices, served
//! an earlier global top-k; it stays certified.)
//!
//! # Global top-k
//! [`TopkExt::topk_global`] is a radix select on a 64-bit composite key, the 32-bit order
//! key then the complemented index, which is unique and puts equal values in index order
//! ([`TopkGlobalScratch`] describes its state). Every pass is recorded into one submission
//! ([`topk_global_record`]):
//! 1. a sample of one `Vec4` in up to 256 sets a floor of 22 bits in two levels: a
//!    histogram on the top 11 bits of the key of each sampling invocation's largest
//!    element, then one on the next 11 bits of every sampled element in the bin that holds
//!    the `k`-th largest maximum. The `k`-th largest maximum is at most the sample's `k`-th
//!    largest element, and the sample is part of the data, so at least `k` elements reach
//!    the floor, and about `k` times the sampling ratio do ([`topk_radix_hist`],
//!    [`topk_radix_select`]);
//! 2. the one full read ([`topk_radix_mark`]): level 0's histogram of the elements at or
//!    above the floor, which it also marks in a bitmap (one bit per element, written per
//!    chunk of 65536 elements, so it is deterministic and needs no clearing);
//! 3. five more levels, each a histogram of the next digit (11 and 10 more bits of the key,
//!    then the index) of the marked elements that match the prefix chosen so far, read
//!    through the bitmap ([`topk_radix_refine`]), and a select of the bin that holds the
//!    element of rank `k`. Once the elements above the prefix and those matching it number
//!    at most `cap = clamp(2·next_pow2(k), 256, 2048)`, later levels do nothing; the last
//!    level always gets there. Every level works on the candidates alone, whose top `k`
//!    are the input's, so the select is exact whatever the data (when all of it is marked,
//!    the levels gather all of it);
//! 4. a collect of those elements, each workgroup from its chunk of the bitmap, in index
//!    order ([`topk_radix_collect`]);
//! 5. a bitonic sort of the at most `cap` candidates in one workgroup, which writes the
//!    first `k` ([`topk_radix_sort`]).
//!
//! # Files
//! `kernels.rs` holds the kernels and their helpers, `reference.rs` their independent
//! references (certification checks each kernel against its own; the tests check whole runs
//! against a sort), `record.rs` the recording of the passes, `ext.rs` [`TopkExt`].

mod ext;
mod kernels;
mod record;
mod reference;

pub use ext::TopkExt;
pub use kernels::*;
pub use record::{topk_global_record, topk_rows_record, TopkGlobalScratch};
pub use reference::*;

/// The index that pads a block shorter than `k`, after its real values. Its value is `-inf`.
pub const TOPK_PAD_INDEX: u32 = u32::MAX;

/// The block size of the seed's [`TopkExt::topk`].
pub const TOPK_SEED_BLOCK: usize = 64;

/// The largest block size of [`TopkExt::topk_blocks`] and [`TopkExt::topk_with_indices`].
pub const TOPK_MAX_BLOCK: usize = 1024;

/// The largest `k` of [`TopkExt::topk_global`].
pub const TOPK_GLOBAL_MAX_K: usize = 1024;

/// The largest input of [`TopkExt::topk_global`]: 2^28 elements.
pub const TOPK_GLOBAL_MAX_LEN: usize = 1 << 28;

/// The largest `k` of the register path of the block top-k ([`topk_rows`]).
pub const TOPK_ROWS_MAX_K: usize = 8;
