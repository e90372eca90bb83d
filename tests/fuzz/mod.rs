//! What the fuzz campaigns share (`tests/fuzz_*.rs`, issue 35): cargo-fuzz needs a nightly
//! toolchain, so each campaign is a proptest run, long when asked for, whose failures
//! are shrunk and their seeds persisted beside the test
//! (`tests/<campaign>.proptest-regressions`, committed): every run, the short one of
//! `cargo test` included, replays them first.
//!
//! - `FORGE_FUZZ_CASES`: the cases of each campaign (default [`DEFAULT_CASES`], a few
//!   seconds, for CI);
//! - `FORGE_FUZZ_SECONDS`: stop a campaign after this long even if its cases are not all
//!   run (for a campaign of a set length: `FORGE_FUZZ_CASES=100000000
//!   FORGE_FUZZ_SECONDS=1800`).
//!
//! Each campaign prints one line at the end: its cases, time and failures.

#![allow(dead_code)]

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestError, TestRunner};
use std::fmt::Debug;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cases of a campaign in the normal test run.
pub const DEFAULT_CASES: u32 = 64;

/// How long a message may be, in characters: the longest fixed text of one, with a few
/// values from outside in it, each shown cut to about 200 characters.
pub const MAX_MESSAGE: usize = 1500;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs `test` on values of `strategy` for the campaign's cases (or its seconds): in rounds
/// of proptest runs, each with a fresh seed, each replaying the persisted failures first.
/// `file` is the campaign's source file (`file!()`), next to which failures persist.
pub fn campaign<S>(
    name: &str,
    file: &'static str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let total = env_u64("FORGE_FUZZ_CASES").unwrap_or(DEFAULT_CASES as u64);
    let budget = env_u64("FORGE_FUZZ_SECONDS").map(Duration::from_secs);
    let start = Instant::now();
    let mut done = 0u64;
    // Rounds of about a minute (200 cases first, then as many as the rate so far runs in
    // a minute, from 50 to 5000), so that the time budget is looked at now and then.
    let mut round_size = 200u64;
    while done < total && budget.is_none_or(|b| start.elapsed() < b) {
        let round = (total - done).min(round_size) as u32;
        let config = Config {
            cases: round,
            failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
                "proptest-regressions",
            ))),
            source_file: Some(file),
            // A failing case of a long campaign is worth a long shrink.
            max_shrink_iters: 20_000,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        match runner.run(&strategy, &test) {
            Ok(()) => {
                done += round as u64;
                let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-3);
                round_size = ((rate * 60.0) as u64).clamp(50, 5000);
                if budget.is_some() {
                    eprintln!(
                        "fuzz campaign `{name}`: {done} cases in {:.0} s so far",
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            Err(TestError::Fail(why, value)) => {
                let shown = format!("{value:#?}");
                panic!(
                    "fuzz campaign `{name}`: failed after {done} cases and {:.0} s: {why}\nminimal input (its seed is now in the regressions file):\n{}",
                    start.elapsed().as_secs_f64(),
                    &shown[..shown.len().min(20_000)]
                );
            }
            Err(TestError::Abort(why)) => panic!("fuzz campaign `{name}` aborted: {why}"),
        }
    }
    eprintln!(
        "fuzz campaign `{name}`: {done} cases in {:.1} s, no failure",
        start.elapsed().as_secs_f64()
    );
}

/// Fails the case unless `text` (a message the library made) is at most [`MAX_MESSAGE`]
/// characters a line and holds no control character but line breaks.
pub fn bounded_message(what: &str, text: &str) -> Result<(), TestCaseError> {
    for line in text.lines() {
        let n = line.chars().count();
        if n > MAX_MESSAGE {
            return Err(TestCaseError::fail(format!(
                "{what}: a message line of {n} characters: {}",
                line.chars().take(600).collect::<String>()
            )));
        }
        if let Some(c) = line.chars().find(|c| c.is_control()) {
            return Err(TestCaseError::fail(format!(
                "{what}: a raw {c:?} in a message: {}",
                line.chars().take(600).collect::<String>()
            )));
        }
    }
    Ok(())
}

/// A writer into a shared buffer: what `tracing` logs while a case runs.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The text logged so far.
    pub fn text(&self) -> String {
        self.0
            .lock()
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default()
    }
}

/// Runs `f` with every `tracing` event of this thread (warnings and debug lines, without
/// colours) written into a buffer, and returns `f`'s result and the text logged.
pub fn logged<R>(f: impl FnOnce() -> R) -> (R, String) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .without_time()
        .with_writer(move || writer.clone())
        .finish();
    let r = tracing::subscriber::with_default(subscriber, f);
    (r, captured.text())
}

/// `f()`, or a failed case that says it panicked.
pub fn no_panic<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, TestCaseError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// Counts of what the cases reached (parsed, loaded, imported, ...), printed after a
/// campaign: a campaign whose inputs never get past the first check tests little.
#[derive(Default)]
pub struct Tally(Mutex<Vec<(String, AtomicU64)>>);

impl Tally {
    /// Counts one case that reached `what`.
    pub fn hit(&self, what: impl Into<String>) {
        let what = what.into();
        if let Ok(mut v) = self.0.lock() {
            match v.iter().find(|(w, _)| *w == what) {
                Some((_, n)) => {
                    n.fetch_add(1, Ordering::Relaxed);
                }
                None => v.push((what, AtomicU64::new(1))),
            }
        }
    }

    /// `what: n, ...`, in the order first reached.
    pub fn summary(&self) -> String {
        self.0
            .lock()
            .map(|v| {
                v.iter()
                    .map(|(w, n)| format!("{w}: {}", n.load(Ordering::Relaxed)))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }
}
