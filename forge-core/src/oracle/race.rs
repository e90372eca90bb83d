//! Data-race detection for the CPU oracle, on when [`OracleOptions::detect_races`] asks
//! for it (the certifier does). Part of the oracle (layer 2).
//!
//! The oracle runs the invocations of a workgroup one after another, so a race never shows
//! in its results: the GPU may interleave the same accesses differently. This module finds
//! them instead. Every element of a writable, non-atomic binding and of a non-atomic
//! workgroup array has a shadow: the last invocation that wrote it and the last that read
//! it, each with the barrier interval it did so in. Two accesses to one element by two
//! invocations race when at least one is a write and nothing orders them:
//! - **Storage (bindings).** Invocations of different workgroups are never ordered within
//!   one dispatch. Invocations of one workgroup are ordered by a `storage_barrier()`
//!   between the accesses (a `workgroup_barrier()` orders workgroup memory only, as in
//!   WGSL).
//! - **Workgroup memory.** Invocations are ordered by a `workgroup_barrier()` between the
//!   accesses.
//!
//! So write-write, read-after-write and write-after-read are all races. Atomic accesses
//! never race, and one invocation's own accesses are always ordered. The detector keeps two
//! readers an element: the last, and the last before it that was another invocation. A write
//! is checked against both, so reads by the writer itself never hide another invocation's
//! read; only with three or more readers in play can an earlier one go unreported. It
//! reports the first race it sees, as an error.
//!
//! [`OracleOptions::detect_races`]: crate::kernel::OracleOptions::detect_races

use crate::error::{ForgeError, Result};

/// Which barrier orders the accesses to a tracked array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// A storage binding: ordered by `storage_barrier()`, within one workgroup.
    Storage,
    /// A `#[shared]` array: ordered by `workgroup_barrier()`.
    Workgroup,
}

/// The shadow of one element, 24 bytes. Invocations are stored plus one, so that 0 means
/// none; epochs wrap, which could only hide a race after 2^32 barriers.
#[derive(Clone, Copy, Default)]
struct Cell {
    writer: u32,
    write_epoch: u32,
    /// The last reader.
    reader: u32,
    read_epoch: u32,
    /// The last reader before `reader` that was another invocation.
    earlier_reader: u32,
    earlier_read_epoch: u32,
}

struct Tracked {
    name: &'static str,
    memory: Memory,
    cells: Vec<Cell>,
}

/// Shadow state of one oracle run; see the module docs.
pub struct RaceDetector {
    kernel: &'static str,
    workgroup_size: u32,
    arrays: Vec<Tracked>,
    /// Barrier intervals: each barrier of the kind, and each new workgroup, starts one.
    storage_epoch: u32,
    workgroup_epoch: u32,
}

/// How two invocations touched an element.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Conflict {
    WriteWrite,
    ReadAfterWrite,
    WriteAfterRead,
}

impl RaceDetector {
    /// A detector for `kernel`'s run with this workgroup size, tracking nothing yet.
    pub fn new(kernel: &'static str, workgroup_size: u32) -> Self {
        RaceDetector {
            kernel,
            workgroup_size: workgroup_size.max(1),
            arrays: Vec::new(),
            storage_epoch: 0,
            workgroup_epoch: 0,
        }
    }

    /// Starts tracking an array of `len` elements; returns its slot for [`Self::read`] and
    /// [`Self::write`]. Slots are numbered in the order of the calls.
    pub fn track(&mut self, name: &'static str, memory: Memory, len: usize) -> usize {
        self.arrays.push(Tracked {
            name,
            memory,
            cells: vec![Cell::default(); len],
        });
        self.arrays.len() - 1
    }

    /// A new workgroup starts: nothing it does is ordered with what earlier ones did.
    pub fn next_workgroup(&mut self) {
        self.storage_epoch = self.storage_epoch.wrapping_add(1);
        self.workgroup_epoch = self.workgroup_epoch.wrapping_add(1);
    }

    /// A barrier: accesses to `memory` before it are ordered with those after it.
    pub fn barrier(&mut self, memory: Memory) {
        match memory {
            Memory::Storage => self.storage_epoch = self.storage_epoch.wrapping_add(1),
            Memory::Workgroup => self.workgroup_epoch = self.workgroup_epoch.wrapping_add(1),
        }
    }

    /// Invocation `invocation` (the global index) reads element `index` of `slot`.
    ///
    /// [`read`](Self::read) and [`write`](Self::write) are not `#[inline]`: every access of
    /// every kernel's oracle calls them (only when races are detected), and inlined they
    /// were code that each user crate's LLVM compiled again at each access.
    pub fn read(&mut self, slot: usize, index: usize, invocation: u32) -> Result<()> {
        let Some(cell) = self.arrays[slot].cells.get(index).copied() else {
            return Ok(());
        };
        let (writer, when) = (cell.writer, cell.write_epoch);
        self.check(
            slot,
            index,
            writer,
            when,
            invocation,
            Conflict::ReadAfterWrite,
        )?;
        let epoch = self.epoch(slot);
        let me = invocation.wrapping_add(1);
        let cell = &mut self.arrays[slot].cells[index];
        if cell.reader != me {
            cell.earlier_reader = cell.reader;
            cell.earlier_read_epoch = cell.read_epoch;
        }
        cell.reader = me;
        cell.read_epoch = epoch;
        Ok(())
    }

    /// Every element of `slot` is read at once (a whole workgroup array copied).
    pub fn read_all(&mut self, slot: usize, invocation: u32) -> Result<()> {
        for index in 0..self.arrays[slot].cells.len() {
            self.read(slot, index, invocation)?;
        }
        Ok(())
    }

    /// Invocation `invocation` writes element `index` of `slot`.
    pub fn write(&mut self, slot: usize, index: usize, invocation: u32) -> Result<()> {
        let Some(cell) = self.arrays[slot].cells.get(index).copied() else {
            return Ok(());
        };
        let (writer, when) = (cell.writer, cell.write_epoch);
        self.check(slot, index, writer, when, invocation, Conflict::WriteWrite)?;
        for (reader, when) in [
            (cell.reader, cell.read_epoch),
            (cell.earlier_reader, cell.earlier_read_epoch),
        ] {
            self.check(
                slot,
                index,
                reader,
                when,
                invocation,
                Conflict::WriteAfterRead,
            )?;
        }
        let epoch = self.epoch(slot);
        let cell = &mut self.arrays[slot].cells[index];
        cell.writer = invocation.wrapping_add(1);
        cell.write_epoch = epoch;
        Ok(())
    }

    /// An error when `other`'s earlier access (an invocation plus one, 0 for none) races
    /// with `invocation`'s access now.
    #[inline]
    fn check(
        &self,
        slot: usize,
        index: usize,
        other: u32,
        other_epoch: u32,
        invocation: u32,
        conflict: Conflict,
    ) -> Result<()> {
        let me = invocation.wrapping_add(1);
        let memory = self.arrays[slot].memory;
        if other == 0
            || other == me
            || ordered(
                other,
                other_epoch,
                me,
                self.epoch(slot),
                self.workgroup_size,
                memory,
            )
        {
            return Ok(());
        }
        Err(self.race(slot, index, other.wrapping_sub(1), invocation, conflict))
    }

    fn epoch(&self, slot: usize) -> u32 {
        match self.arrays[slot].memory {
            Memory::Storage => self.storage_epoch,
            Memory::Workgroup => self.workgroup_epoch,
        }
    }

    fn race(
        &self,
        slot: usize,
        index: usize,
        first: u32,
        second: u32,
        conflict: Conflict,
    ) -> ForgeError {
        let t = &self.arrays[slot];
        let wg = self.workgroup_size;
        let who = |inv: u32| {
            format!(
                "invocation {inv} (workgroup {}, local {})",
                inv / wg,
                inv % wg
            )
        };
        let (did_first, did_second) = match conflict {
            Conflict::WriteWrite => ("wrote", "wrote it too"),
            Conflict::ReadAfterWrite => ("wrote", "read it"),
            Conflict::WriteAfterRead => ("read", "wrote it"),
        };
        // Two writers of one element computed the same index: where it comes from an input
        // (a scatter), the inputs collide, which no barrier fixes.
        let inputs = "if the index comes from an input (a scatter `y[dst[i]] = ..`), the inputs repeat it: certify with inputs that do not, `#[forge_kernel(inputs(dst = permutation))]` or `inputs = path`";
        let across = first / wg != second / wg;
        let write_write = conflict == Conflict::WriteWrite;
        let why = match t.memory {
            Memory::Workgroup => "with no `workgroup_barrier()` between them".to_string(),
            Memory::Storage if across && write_write => format!(
                "across different workgroups: two writers of one element collide, which no barrier fixes; {inputs}; otherwise give each element one writer, or use an atomic binding"
            ),
            Memory::Storage if across => {
                "and invocations of different workgroups cannot order their accesses within one dispatch; give each element one writer, or use an atomic binding".to_string()
            }
            Memory::Storage if write_write => format!(
                "with no `storage_barrier()` between them; {inputs}"
            ),
            Memory::Storage => "with no `storage_barrier()` between them".to_string(),
        };
        ForgeError::DataRace {
            kernel: self.kernel,
            binding: t.name,
            index: index as u64,
            first: first as u64,
            second: second as u64,
            access: format!(
                "{} {did_first} it, then {} {did_second} {why}",
                who(first),
                who(second)
            ),
        }
    }
}

/// Whether an earlier access by `other` (an invocation plus one) in `other_epoch` is ordered
/// before an access by `me` in `epoch`.
#[inline]
fn ordered(
    other: u32,
    other_epoch: u32,
    me: u32,
    epoch: u32,
    workgroup_size: u32,
    memory: Memory,
) -> bool {
    match memory {
        Memory::Workgroup => other_epoch != epoch,
        Memory::Storage => {
            other.wrapping_sub(1) / workgroup_size == me.wrapping_sub(1) / workgroup_size
                && other_epoch != epoch
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn race_of(r: Result<()>) -> String {
        match r {
            Err(e @ ForgeError::DataRace { .. }) => e.to_string(),
            other => panic!("expected a data race, got {other:?}"),
        }
    }

    #[test]
    fn workgroup_memory_needs_a_workgroup_barrier() {
        let mut d = RaceDetector::new("k", 4);
        let t = d.track("tile", Memory::Workgroup, 4);
        d.next_workgroup();
        d.write(t, 1, 1).unwrap();
        d.read(t, 1, 1).unwrap(); // its own write
        let msg = race_of(d.read(t, 1, 2));
        assert!(
            msg.contains("`tile[1]`")
                && msg.contains("invocation 1 (workgroup 0, local 1) wrote it"),
            "{msg}"
        );
        // After a barrier the same read is fine, and a storage barrier does not count.
        let mut d = RaceDetector::new("k", 4);
        let t = d.track("tile", Memory::Workgroup, 4);
        d.next_workgroup();
        d.write(t, 1, 1).unwrap();
        d.barrier(Memory::Storage);
        assert!(d.read(t, 1, 2).is_err());
        d.barrier(Memory::Workgroup);
        d.read(t, 1, 3).unwrap();
        // Write after another invocation's read in the same interval.
        let msg = race_of(d.write(t, 1, 0));
        assert!(msg.contains("read it, then invocation 0"), "{msg}");
    }

    #[test]
    fn storage_races_across_workgroups_whatever_the_barriers() {
        let mut d = RaceDetector::new("k", 2);
        let y = d.track("y", Memory::Storage, 8);
        d.next_workgroup();
        d.write(y, 5, 0).unwrap();
        d.barrier(Memory::Storage);
        d.write(y, 5, 1).unwrap(); // same workgroup, after a storage barrier
        d.next_workgroup();
        let msg = race_of(d.write(y, 5, 2));
        assert!(
            msg.contains("different workgroups") && msg.contains("invocation 1"),
            "{msg}"
        );
        // Two writers in different workgroups: a collision, which no barrier fixes.
        assert!(
            msg.contains("collide") && msg.contains("inputs(dst = permutation)"),
            "{msg}"
        );
        // Distinct elements never race.
        d.write(y, 6, 3).unwrap();
        d.read(y, 7, 2).unwrap();
        d.write(y, 7, 2).unwrap();
    }

    #[test]
    fn a_writers_own_read_does_not_hide_another_invocations() {
        // Invocation 0 reads, then 1 reads and writes: 1's read was the last one, but 0's
        // read is still unordered with the write.
        let mut d = RaceDetector::new("k", 4);
        let t = d.track("tile", Memory::Workgroup, 4);
        d.next_workgroup();
        d.read(t, 2, 0).unwrap();
        d.read(t, 2, 1).unwrap();
        d.read(t, 2, 1).unwrap();
        let msg = race_of(d.write(t, 2, 1));
        assert!(
            msg.contains("invocation 0 (workgroup 0, local 0) read it, then invocation 1"),
            "{msg}"
        );
        // Ordered by a barrier, the same pattern is fine; so is a writer that was the only
        // reader.
        let mut d = RaceDetector::new("k", 4);
        let t = d.track("tile", Memory::Workgroup, 4);
        d.next_workgroup();
        d.read(t, 2, 0).unwrap();
        d.barrier(Memory::Workgroup);
        d.read(t, 2, 1).unwrap();
        d.write(t, 2, 1).unwrap();
        d.read(t, 3, 2).unwrap();
        d.read(t, 3, 2).unwrap();
        d.write(t, 3, 2).unwrap();
    }
}
