//! [`Command`]: the work a device records, in order. Part of the backend seam (layer 3).
//!
//! The runtime hands a device a slice of commands at a time
//! ([`crate::backend::Device::record`]): a host call's uploads, clears and launch, a
//! timing's resets and timed dispatches. One slice is one unit for the device: wgpu
//! records it inside one set of error scopes into its pending encoder, CUDA enqueues each
//! command on its stream as it comes. Either way the commands run in the order given,
//! after every command recorded before them.

use super::handles::{Compiled, Memory, Prepared, Stamps};
use crate::plan::LaunchPlan;

/// One step of work on a device. See the [module docs](self).
#[derive(Debug)]
pub enum Command<'a> {
    /// Copies `data` to the start of `to`, zero-padded to whole words. `to` must be memory
    /// that no recorded command uses (memory just leased for this call): the data may land
    /// before the commands recorded earlier (wgpu writes it through the queue, ahead of the
    /// next submission), and before every command recorded after it.
    Upload {
        /// Where the data goes.
        to: &'a Memory,
        /// The bytes.
        data: &'a [u8],
    },
    /// Copies `data` to the start of `to`, zero-padded to whole words, after the commands
    /// recorded before it: a tensor's write.
    Write {
        /// Where the data goes.
        to: &'a Memory,
        /// The bytes.
        data: &'a [u8],
    },
    /// Zeroes the first `bytes` (a multiple of 4) of `to`.
    Clear {
        /// The memory.
        to: &'a Memory,
        /// How many bytes.
        bytes: u64,
    },
    /// Copies `bytes` (a multiple of 4) of `from`, from byte `from_offset`, into `to` at
    /// byte `to_offset` (both multiples of 4).
    Copy {
        /// The source.
        from: &'a Memory,
        /// Where the bytes start in `from`.
        from_offset: u64,
        /// The destination.
        to: &'a Memory,
        /// Where they go in `to`.
        to_offset: u64,
        /// How many bytes.
        bytes: u64,
    },
    /// One launch of a compiled kernel on memory, bound for it alone.
    Launch(Launch<'a>),
    /// `count` dispatches of prepared launches, one after another in one pass, on the
    /// prepared sets of memory in turn from set `set` (wrapping); with `timed`, between the
    /// pass's two timestamps, at slots `index` and `index + 1` of the stamps.
    Dispatch {
        /// The launches, bound ahead ([`crate::backend::Device::prepare`]).
        prepared: &'a Prepared,
        /// The set of memory the first dispatch takes.
        set: usize,
        /// Dispatches in the pass.
        count: u32,
        /// Where the pass's start and end are timestamped: the stamps and the first slot.
        timed: Option<(&'a Stamps, u32)>,
    },
    /// A timestamp at slot `index` of `stamps`, written once every command recorded before
    /// it has finished.
    Stamp {
        /// The slots.
        stamps: &'a Stamps,
        /// The slot.
        index: u32,
    },
}

/// One launch of [`Command::Launch`]: the plan's grid of the compiled kernel, with storage
/// binding `i` bound to `bindings[i]` over the plan's padded size, the plan's `Params`
/// (where it has any), and a printing kernel's print buffer.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// The kernel, compiled for the plan's schedule.
    pub compiled: &'a Compiled,
    /// The checked launch: sizes, grid, `Params`.
    pub plan: &'a LaunchPlan,
    /// One memory per storage binding, in layout order.
    pub bindings: &'a [&'a Memory],
    /// The print buffer and its binding number, for a kernel that prints.
    pub prints: Option<(u32, &'a Memory)>,
    /// Where an indirect kernel's launch reads its count (`None`: the plan's grid is the
    /// launch's). The plan's grid is then the bound's, which always covers the count; a
    /// device may dispatch fewer workgroups from the count (wgpu), or the bound's grid,
    /// whose surplus workgroups leave at once (CUDA).
    pub indirect: Option<IndirectSource<'a>>,
}

/// An indirect launch's count: element `element` of `count`, at most `bound` invocations.
#[derive(Clone, Copy, Debug)]
pub struct IndirectSource<'a> {
    /// The binding's memory.
    pub count: &'a Memory,
    /// The element.
    pub element: u32,
    /// The bound, the kernel's `threads`.
    pub bound: u32,
}
