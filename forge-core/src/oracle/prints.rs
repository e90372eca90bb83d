//! The oracle's side of `debug_print!`: a run of a printing kernel's oracle collects its
//! records on this thread, then formats them with [`PrintTable::lines`], as the runtime
//! formats the GPU's, so both sides print the same lines in the same order. Part of the
//! oracle (layer 2).
//!
//! The generated `cpu_prints` (and [`capture`], for kernels known only as `&dyn Kernel`)
//! hands the lines to the program; `FORGE_PRINT=stderr` writes them to stderr as they are
//! formatted, whether or not anything captures them.

use crate::prints::{PrintRecord, PrintTable};
use std::cell::RefCell;

thread_local! {
    /// The records of each oracle run in progress on this thread, innermost last.
    static RUNS: RefCell<Vec<Vec<PrintRecord>>> = const { RefCell::new(Vec::new()) };
    /// The lines of each [`capture`] in progress on this thread, innermost last.
    static SINKS: RefCell<Vec<Vec<String>>> = const { RefCell::new(Vec::new()) };
}

/// One oracle run of a printing kernel: begun before its invocations run, finished after.
/// Dropped unfinished (the run failed), it discards its records.
#[must_use]
pub struct Run {
    finished: bool,
}

impl Run {
    /// Starts collecting this thread's prints.
    pub fn begin() -> Run {
        RUNS.with(|r| r.borrow_mut().push(Vec::new()));
        Run { finished: false }
    }

    /// Formats the run's records as `kernel`'s lines and hands them to the innermost
    /// [`capture`] of this thread, if any.
    pub fn finish(mut self, kernel: &str, table: &PrintTable) {
        self.finished = true;
        let mut records = RUNS.with(|r| r.borrow_mut().pop()).unwrap_or_default();
        // The oracle runs each invocation's statements in order (invocations take turns
        // between barriers), so a stable sort by invocation keeps each one's own order.
        records.sort_by_key(|r| r.invocation);
        let mut seq = 0;
        for i in 0..records.len() {
            if i > 0 && records[i].invocation != records[i - 1].invocation {
                seq = 0;
            }
            records[i].seq = seq;
            seq += 1;
        }
        let lines = table.lines(kernel, records, 0, 0);
        SINKS.with(|s| {
            if let Some(top) = s.borrow_mut().last_mut() {
                top.extend(lines);
            }
        });
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.finished {
            RUNS.with(|r| r.borrow_mut().pop());
        }
    }
}

/// Records one print of the innermost run on this thread (the generated oracle calls it).
pub fn record(invocation: u32, format: u32, values: &[u32]) {
    RUNS.with(|r| {
        if let Some(run) = r.borrow_mut().last_mut() {
            run.push(PrintRecord {
                invocation,
                seq: 0,
                format,
                values: values.to_vec(),
            });
        }
    })
}

/// Runs `f` and returns, with its result, the print lines of every oracle run that `f` made
/// on this thread, in order.
///
/// ```
/// let ((), lines) = forge_core::oracle::prints::capture(|| ());
/// assert!(lines.is_empty());
/// ```
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    struct Sink;
    impl Drop for Sink {
        // Popped even when `f` panics, so a later capture starts empty.
        fn drop(&mut self) {
            SINKS.with(|s| s.borrow_mut().pop());
        }
    }
    SINKS.with(|s| s.borrow_mut().push(Vec::new()));
    let sink = Sink;
    let out = f();
    let lines = SINKS.with(|s| s.borrow_mut().last_mut().map(std::mem::take));
    drop(sink);
    (out, lines.unwrap_or_default())
}
