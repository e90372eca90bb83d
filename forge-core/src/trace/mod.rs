//! Traces: a recorder of timed events, written as a Chrome / Perfetto trace (the Trace
//! Event Format: `{"traceEvents": [...]}` of `"X"` complete events, `ts` and `dur` in
//! microseconds). Layer 1 (values and plumbing: it needs only the error and [`crate::files`]).
//!
//! This module owns [`Recorder`] and [`Event`]. A runtime that traces holds an
//! `Option<Arc<Recorder>>`: without a trace each event costs the one branch on that option.
//! Events are kept in memory (a `Mutex<Vec<Event>>`, so that callbacks of other threads can
//! add GPU events) and written whole by [`Recorder::write`], atomically (a temporary file,
//! then a rename, through [`crate::files::write_atomically`]): a reader never sees half a
//! trace. [`Recorder::create`] writes an empty trace at once, so that a path that cannot be
//! written is an error when the runtime is built, not a lost trace when it drops.
//!
//! Tracks: host events sit on the thread that recorded them (a small number per OS thread);
//! GPU events, timed by the GPU's own timestamps, on one track of their own named `GPU`
//! ([`GPU_TID`]).

use crate::error::Result;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The track (`tid`) of events timed on the GPU's clock.
pub const GPU_TID: u64 = 0;

/// One complete (`"X"`) event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// What ran: a kernel's name, `upload`, a span's name.
    pub name: String,
    /// Its kind (`launch`, `upload`, `download`, `compile`, `certify`, `tune`, `span`): the
    /// trace viewer filters by it.
    pub cat: &'static str,
    /// Start, in microseconds since the recorder was created.
    pub ts_us: f64,
    /// Duration in microseconds.
    pub dur_us: f64,
    /// The track: [`GPU_TID`], or a host thread's number.
    pub tid: u64,
    /// What else is worth seeing: schedule, workgroups, bytes.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// Numbers host threads from 1 ([`GPU_TID`] is 0).
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static TID: u64 = NEXT_TID.fetch_add(1, Ordering::Relaxed);
}

/// The track number of the calling host thread.
pub fn host_tid() -> u64 {
    TID.with(|t| *t)
}

/// Collects events and writes them to one trace file; see the [module docs](self).
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    start: Instant,
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    /// A recorder that writes to `path`, which it writes at once with an empty trace.
    ///
    /// Errors: what [`crate::files::write_atomically`] refuses (a directory, a link, a
    /// read-only file) or cannot do (a missing directory) as a [`crate::ForgeError`].
    pub fn create(path: impl Into<PathBuf>) -> Result<Recorder> {
        let rec = Recorder {
            path: path.into(),
            start: Instant::now(),
            events: Mutex::new(Vec::new()),
        };
        rec.write()?;
        Ok(rec)
    }

    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Microseconds since the recorder was created, on the host's monotonic clock.
    pub fn now_us(&self) -> f64 {
        self.us_at(Instant::now())
    }

    /// `at` in microseconds since the recorder was created (0 for an earlier instant).
    pub fn us_at(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64() * 1e6
    }

    /// Adds an event.
    pub fn record(&self, event: Event) {
        // A poisoned lock only means another thread panicked mid-push; the list is whole.
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events.push(event);
    }

    /// Adds a host event of the calling thread that started at `start` and ends now.
    pub fn host(
        &self,
        cat: &'static str,
        name: impl Into<String>,
        start: Instant,
        args: serde_json::Map<String, serde_json::Value>,
    ) {
        let ts_us = self.us_at(start);
        self.record(Event {
            name: name.into(),
            cat,
            ts_us,
            dur_us: (self.now_us() - ts_us).max(0.0),
            tid: host_tid(),
            args,
        });
    }

    /// The events recorded so far, in the order they were recorded.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The trace as JSON: the events sorted by start, and metadata naming the tracks.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let pid = std::process::id();
        let mut events = self.events();
        events.sort_by(|a, b| a.ts_us.total_cmp(&b.ts_us));
        let mut out = vec![
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": GPU_TID,
                   "args": {"name": "wgsl-forge"}}),
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": GPU_TID,
                   "args": {"name": "GPU"}}),
        ];
        out.extend(events.into_iter().map(|e| {
            json!({"ph": "X", "name": e.name, "cat": e.cat, "ts": e.ts_us, "dur": e.dur_us,
                   "pid": pid, "tid": e.tid, "args": e.args})
        }));
        json!({"traceEvents": out, "displayTimeUnit": "ns"})
    }

    /// Writes the trace, atomically, over the file at [`Recorder::path`].
    pub fn write(&self) -> Result<()> {
        let bytes = serde_json::to_vec(&self.to_json()).unwrap_or_default();
        crate::files::write_atomically(&self.path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("forge-trace-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_valid_trace_json_in_order() {
        let dir = scratch("order");
        let path = dir.join("t.json");
        let rec = Recorder::create(&path).unwrap();
        let empty: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(empty["traceEvents"].as_array().unwrap().len(), 2);
        let t0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut args = serde_json::Map::new();
        args.insert("bytes".into(), 12.into());
        rec.record(Event {
            name: "gemv".into(),
            cat: "launch",
            ts_us: 5000.0,
            dur_us: 7.5,
            tid: GPU_TID,
            args: serde_json::Map::new(),
        });
        rec.host("upload", "upload", t0, args);
        rec.write().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let xs: Vec<&serde_json::Value> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(xs.len(), 2);
        // Sorted by start: the upload began at t0, before the launch at 5 ms.
        assert_eq!(xs[0]["name"], "upload");
        assert_eq!(xs[0]["args"]["bytes"], 12);
        assert!(xs[0]["dur"].as_f64().unwrap() >= 2000.0);
        assert_eq!(xs[0]["tid"].as_u64().unwrap(), host_tid());
        assert_eq!(xs[1]["name"], "gemv");
        assert_eq!(xs[1]["tid"], GPU_TID);
        assert_eq!(xs[1]["dur"], 7.5);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_path_is_an_error_at_creation() {
        let dir = scratch("refused");
        assert!(Recorder::create(&dir).is_err(), "a directory is refused");
        assert!(Recorder::create(dir.join("missing/t.json")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
