//! Traces: a recorder of timed events, written as a Chrome / Perfetto trace (the Trace
//! Event Format: `{"traceEvents": [...]}` of `"X"` complete events, `ts` and `dur` in
//! microseconds). Layer 1 (values and plumbing: it needs only the error and [`crate::files`]).
//!
//! This module owns [`Recorder`], [`Event`], which recorder a trace file has
//! ([`Recorder::shared`]) and `SpanLayer` (feature `spans`), the `tracing` layer that adds the host's spans.
//! A runtime that traces holds an `Arc<Recorder>` behind an `Option`: without a trace each
//! event costs the one branch on that option. Events are kept in memory (a `Mutex`, so that
//! compiles on worker threads and the span layer can add events) and written whole by
//! [`Recorder::write`], atomically (a temporary file, then a rename, through
//! [`crate::files::write_atomically`]): a reader never sees half a trace.
//! [`Recorder::create`] writes an empty trace at once, so that a path that cannot be written
//! is an error when the runtime is built, not a lost trace when it drops.
//!
//! **One file, one recorder.** Runtimes of one process that trace to the same path (every
//! runtime, with `FORGE_TRACE` set) share its recorder: each write holds the events of all
//! of them, so the file the last one leaves is the whole process, not whichever runtime
//! dropped last. Each runtime's GPU has a track of its own ([`gpu_track`]).
//!
//! Tracks: host events sit on the thread that recorded them (numbered from 1, named after
//! the thread); GPU events, timed by the GPU's own timestamps, on one track per device.

use crate::error::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use web_time::Instant;

#[cfg(feature = "spans")]
mod spans;
#[cfg(feature = "spans")]
pub use spans::SpanLayer;

/// The first track number of GPU tracks; host threads count up from 1, far below it.
pub const GPU_TRACK_BASE: u64 = 1 << 32;

/// The args of a launch event: the schedule and the workgroups dispatched.
pub fn launch_args(
    schedule: &crate::schedule::Schedule,
    workgroups: [u32; 3],
) -> serde_json::Map<String, serde_json::Value> {
    let mut args = serde_json::Map::new();
    args.insert("schedule".into(), schedule.to_string().into());
    args.insert(
        "workgroups".into(),
        serde_json::Value::from(workgroups.to_vec()),
    );
    args
}

/// The track (`tid`) of the GPU of the device numbered `device_id` (`crate::backend::Device::id`).
pub fn gpu_track(device_id: u64) -> u64 {
    GPU_TRACK_BASE + device_id
}

/// One complete (`"X"`) event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// What ran: a kernel's name, `upload`, a span's name.
    pub name: String,
    /// Its kind (`launch`, `gpu`, `upload`, `download`, `compile`, `certify`, `tune`,
    /// `span`): the trace viewer filters by it.
    pub cat: &'static str,
    /// Start, in microseconds since the recorder was created.
    pub ts_us: f64,
    /// Duration in microseconds.
    pub dur_us: f64,
    /// The track: a [`gpu_track`], or a host thread's number.
    pub tid: u64,
    /// What else is worth seeing: schedule, workgroups, bytes.
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// Numbers host threads from 1.
static NEXT_TID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static TID: u64 = NEXT_TID.fetch_add(1, Ordering::Relaxed);
}

/// The track number of the calling host thread.
pub fn host_tid() -> u64 {
    TID.with(|t| *t)
}

/// What a recorder holds; one lock for both, so a host event names its track in the same
/// step that adds it.
#[derive(Debug, Default)]
struct State {
    events: Vec<Event>,
    /// Track names (`thread_name` metadata): host threads and GPUs.
    tracks: BTreeMap<u64, String>,
    /// Events left out past the limit.
    dropped: u64,
}

/// The most events a recorder keeps (a few hundred bytes each in memory): a program that
/// runs for hours with a trace on keeps its first million events, and the file says how
/// many it left out (`otherData.dropped_events`), rather than growing without bound.
pub const MAX_EVENTS: usize = 1 << 20;

impl State {
    fn push(&mut self, event: Event, limit: usize) {
        if self.events.len() < limit {
            self.events.push(event);
        } else {
            if self.dropped == 0 {
                tracing::warn!(limit, "the trace is full; later events are left out");
            }
            self.dropped += 1;
        }
    }
}

/// Collects events and writes them to one trace file; see the [module docs](self).
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    start: Instant,
    state: Mutex<State>,
    /// [`MAX_EVENTS`]; smaller in tests.
    limit: usize,
}

/// The recorders alive in this process, by path: what [`Recorder::shared`] hands out again
/// and what `SpanLayer` (feature `spans`) records into.
static LIVE: Mutex<Vec<Weak<Recorder>>> = Mutex::new(Vec::new());

/// The live recorders (dead entries are dropped on the way), for `SpanLayer`.
#[cfg(any(feature = "spans", test))]
pub(crate) fn live() -> Vec<Arc<Recorder>> {
    let mut list = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    list.retain(|w| w.strong_count() > 0);
    list.iter().filter_map(Weak::upgrade).collect()
}

/// `path` made absolute (relative to the working directory), so two spellings of one file
/// share a recorder.
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
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
            state: Mutex::new(State::default()),
            limit: MAX_EVENTS,
        };
        rec.write()?;
        Ok(rec)
    }

    /// The recorder of the trace at `path`: the one a live runtime of this process already
    /// writes there, else a new one ([`Recorder::create`], which writes an empty trace at
    /// once). See "One file, one recorder" in the [module docs](self).
    pub fn shared(path: impl AsRef<Path>) -> Result<Arc<Recorder>> {
        let path = absolute(path.as_ref());
        // Held across the creation, so two runtimes built at once still share one.
        let mut list = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|w| w.strong_count() > 0);
        if let Some(rec) = list
            .iter()
            .filter_map(Weak::upgrade)
            .find(|r| r.path == path)
        {
            return Ok(rec);
        }
        let rec = Arc::new(Recorder::create(path)?);
        list.push(Arc::downgrade(&rec));
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

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-push; the list is whole.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an event.
    pub fn record(&self, event: Event) {
        self.state().push(event, self.limit);
    }

    /// Names a track (a GPU's, say); the trace viewer shows the name.
    pub fn name_track(&self, tid: u64, name: impl Into<String>) {
        self.state().tracks.insert(tid, name.into());
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
        let tid = host_tid();
        let event = Event {
            name: name.into(),
            cat,
            ts_us,
            dur_us: (self.now_us() - ts_us).max(0.0),
            tid,
            args,
        };
        let mut state = self.state();
        state.tracks.entry(tid).or_insert_with(|| {
            let thread = std::thread::current();
            match thread.name() {
                Some(name) => format!("host: {name}"),
                None => format!("host thread {tid}"),
            }
        });
        state.push(event, self.limit);
    }

    /// The events recorded so far, in the order they were recorded.
    pub fn events(&self) -> Vec<Event> {
        self.state().events.clone()
    }

    /// The trace as JSON: metadata naming the process and the tracks, then the events
    /// sorted by start.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let pid = std::process::id();
        let (mut events, tracks, dropped) = {
            let state = self.state();
            (state.events.clone(), state.tracks.clone(), state.dropped)
        };
        // Stable: events that start together keep the order they were recorded in.
        events.sort_by(|a, b| a.ts_us.total_cmp(&b.ts_us));
        let mut out = vec![
            json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                  "args": {"name": "wgsl-forge"}}),
        ];
        out.extend(tracks.into_iter().map(|(tid, name)| {
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                   "args": {"name": name}})
        }));
        out.extend(events.into_iter().map(|e| {
            json!({"ph": "X", "name": e.name, "cat": e.cat, "ts": e.ts_us, "dur": e.dur_us,
                   "pid": pid, "tid": e.tid, "args": e.args})
        }));
        json!({"traceEvents": out, "displayTimeUnit": "ns",
               "otherData": {"dropped_events": dropped}})
    }

    /// Writes the trace, atomically, over the file at [`Recorder::path`].
    pub fn write(&self) -> Result<()> {
        let bytes = serde_json::to_vec(&self.to_json()).unwrap_or_default();
        crate::files::write_atomically(&self.path, &bytes)
    }
}

/// A host event that ends when it drops: for work with several ways out (a certification
/// case that fails early, say), so that every way out records it. Without a recorder it
/// holds nothing and [`HostEvent::arg`] does nothing.
#[derive(Debug)]
pub struct HostEvent {
    open: Option<OpenEvent>,
}

#[derive(Debug)]
struct OpenEvent {
    recorder: Arc<Recorder>,
    cat: &'static str,
    name: String,
    start: Instant,
    args: serde_json::Map<String, serde_json::Value>,
}

impl HostEvent {
    /// An event of category `cat` named `name` that starts now, recorded into `recorder`
    /// when it drops; `None` (no trace) makes an event that records nothing.
    pub fn begin(recorder: Option<&Arc<Recorder>>, cat: &'static str, name: &str) -> HostEvent {
        HostEvent {
            open: recorder.map(|r| OpenEvent {
                recorder: Arc::clone(r),
                cat,
                name: name.to_string(),
                start: Instant::now(),
                args: serde_json::Map::new(),
            }),
        }
    }

    /// Sets an arg; `value` is only called when the event is recorded.
    pub fn arg<V: Into<serde_json::Value>>(&mut self, key: &str, value: impl FnOnce() -> V) {
        if let Some(open) = &mut self.open {
            open.args.insert(key.to_string(), value().into());
        }
    }
}

impl Drop for HostEvent {
    fn drop(&mut self) {
        if let Some(e) = self.open.take() {
            e.recorder.host(e.cat, e.name, e.start, e.args);
        }
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
        assert_eq!(empty["traceEvents"].as_array().unwrap().len(), 1);
        let t0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let mut args = serde_json::Map::new();
        args.insert("bytes".into(), 12.into());
        rec.record(Event {
            name: "gemv".into(),
            cat: "launch",
            // Recorded first, but it starts 5 ms after the upload (not at a fixed time:
            // creating the recorder syncs a file, which may itself take milliseconds).
            ts_us: rec.us_at(t0) + 5000.0,
            dur_us: 7.5,
            tid: gpu_track(7),
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
        // Sorted by start: the upload began at t0, before the launch 5 ms later.
        assert_eq!(xs[0]["name"], "upload");
        assert_eq!(xs[0]["args"]["bytes"], 12);
        assert!(xs[0]["dur"].as_f64().unwrap() >= 2000.0);
        assert_eq!(xs[0]["tid"].as_u64().unwrap(), host_tid());
        assert_eq!(xs[1]["name"], "gemv");
        assert_eq!(xs[1]["tid"], gpu_track(7));
        let names: Vec<_> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["tid"].as_u64().unwrap())
            .collect();
        assert_eq!(names, vec![host_tid()], "the host thread's track is named");
        assert_eq!(xs[1]["dur"], 7.5);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_path_has_one_recorder_while_it_lives() {
        let dir = scratch("shared");
        let a = Recorder::shared(dir.join("t.json")).unwrap();
        // Another spelling of the same file.
        let b = Recorder::shared(dir.join(".").join("t.json")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = Recorder::shared(dir.join("u.json")).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        drop((a, b));
        assert!(live().iter().all(|r| r.path() != dir.join("t.json")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_full_recorder_counts_what_it_leaves_out() {
        let dir = scratch("full");
        let mut rec = Recorder::create(dir.join("t.json")).unwrap();
        rec.limit = 2;
        for i in 0..5 {
            rec.host(
                "upload",
                format!("u{i}"),
                Instant::now(),
                serde_json::Map::new(),
            );
        }
        let v = rec.to_json();
        let names: Vec<&str> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["u0", "u1"]);
        assert_eq!(v["otherData"]["dropped_events"], 3);
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
