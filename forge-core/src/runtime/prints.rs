//! The runtime's side of `debug_print!`: the print buffer each launch of a printing kernel
//! binds, and the lines formatted from it, which [`ForgeRuntime::take_prints`] hands to the
//! program. Part of the runtime (layer 5).
//!
//! This module owns `Prints`, the runtime's print state: the buffer's capacity in records
//! ([`crate::RuntimeBuilder::print_capacity`], default
//! [`crate::prints::DEFAULT_CAPACITY`]), the lines formatted since the last take, and the
//! print buffers of tensor launches not yet read back. A host launch
//! ([`ForgeRuntime::launch_host`], and so `run`, `rt.name(..)` and `run_dyn`) reads its print
//! buffer back in the same readback as its results and formats the lines at once; a tensor
//! launch only records its dispatch, so its print buffer is read back, and its lines
//! formatted, at the next [`ForgeRuntime::take_prints`]; until then each such buffer
//! ([`PrintTable::buffer_bytes`] of them) stays allocated and counts against
//! the runtime's capacity, so a loop of tensor launches of a printing kernel takes its
//! prints now and then. Kernels that do not print bind no print buffer and cost nothing
//! here.

use crate::backend::Memory;
use crate::error::Result;
use crate::prints::{PrintTable, DEFAULT_CAPACITY};
use crate::runtime::ForgeRuntime;

/// A print buffer bound by a tensor launch, read back at the next take.
struct Pending {
    kernel: &'static str,
    table: &'static PrintTable,
    lease: Memory,
    bytes: u64,
}

/// The runtime's print state.
pub(crate) struct Prints {
    capacity: u32,
    lines: Vec<String>,
    pending: Vec<Pending>,
}

impl Prints {
    /// A state whose print buffers hold `capacity` records (the default where `None`).
    pub(crate) fn new(capacity: Option<u32>) -> Self {
        Prints {
            // A print buffer holds one record at least: its shader declares an array.
            capacity: capacity.unwrap_or(DEFAULT_CAPACITY).max(1),
            lines: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Records each print buffer holds.
    pub(crate) fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Formats a print buffer's words (read back after a launch of `kernel`) into lines.
    pub(crate) fn add(&mut self, kernel: &str, table: &PrintTable, words: &[u32]) {
        let (records, total) = table.decode(words);
        let dropped = total - records.len() as u64;
        self.lines
            .extend(table.lines(kernel, records, dropped, self.capacity));
    }

    /// Keeps a tensor launch's print buffer until the next take reads it back.
    pub(crate) fn keep(
        &mut self,
        kernel: &'static str,
        table: &'static PrintTable,
        lease: Memory,
        bytes: u64,
    ) {
        self.pending.push(Pending {
            kernel,
            table,
            lease,
            bytes,
        });
    }
}

impl ForgeRuntime {
    /// The print lines of the launches since the last call, in launch order: within a
    /// launch, sorted by invocation (`global_index()`) and order within the invocation,
    /// each `kernel[invocation]: text`; and, where the print buffer filled, a last line
    /// saying how many prints were dropped. Tensor launches not yet submitted are submitted
    /// first, and their print buffers read back.
    ///
    /// With `FORGE_PRINT=stderr`, every line is written to stderr too, as it is formatted.
    /// A kernel's oracle prints the same lines: see the generated `cpu_prints`.
    ///
    /// The README's "Prints from kernels" runs a printing kernel on both sides; a runtime
    /// that ran none has no lines:
    ///
    /// ```
    /// let mut rt = forge_core::ForgeRuntime::new(64 << 20, None).unwrap();
    /// assert!(rt.take_prints().is_empty());
    /// assert_eq!(rt.print_capacity(), forge_core::prints::DEFAULT_CAPACITY);
    /// ```
    pub fn take_prints(&mut self) -> Vec<String> {
        if let Err(e) = self.read_pending_prints() {
            // The lines cannot come back; the error is the device's, which the next
            // launch reports too.
            self.prints
                .lines
                .push(format!("(print buffers of tensor launches lost: {e})"));
        }
        std::mem::take(&mut self.prints.lines)
    }

    /// Puts lines taken by [`ForgeRuntime::take_prints`] back in front of those formatted
    /// since, for a procedure that takes the lines of its own runs only.
    pub(crate) fn restore_prints(&mut self, mut lines: Vec<String>) {
        lines.append(&mut self.prints.lines);
        self.prints.lines = lines;
    }

    /// Records each print buffer holds: a launch's prints past it are dropped and counted.
    pub fn print_capacity(&self) -> u32 {
        self.prints.capacity()
    }

    /// Reads back the print buffers of tensor launches, in launch order.
    fn read_pending_prints(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.prints.pending);
        if pending.is_empty() {
            return Ok(());
        }
        let mut result = Ok(());
        let mut read = Vec::new();
        for p in pending {
            if result.is_ok() {
                let mut words = vec![0u32; p.bytes.div_ceil(4) as usize];
                let from = [&p.lease];
                let mut into = [bytemuck::cast_slice_mut(&mut words)];
                let done = self.device.read(&from, &mut into);
                result = crate::blocking::block_on("reading back prints", done);
                if result.is_ok() {
                    read.push((p.kernel, p.table, words));
                }
            }
            self.device.release(p.lease);
        }
        for (kernel, table, words) in read {
            self.prints.add(kernel, table, &words);
        }
        result
    }
}
