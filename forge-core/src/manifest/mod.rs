//! Tuning manifests and the cache they live in.
//!
//! This module owns [`TuningManifest`] (what the tuner found for one kernel on one piece of
//! hardware), [`ManifestCache`] (the files, at `<cache>/<topology hash>/<kernel>.json`) and
//! the checks that decide whether a manifest read back can be trusted.
//!
//! # What a manifest holds
//! The kernel's name and [`kernel_hash`] (sha256 of its WGSL for the declared schedule), the
//! [topology hash](crate::HardwareProfile::topology_hash), the adapter's name, the emission
//! backend, the crate version, the declared schedule, and one [`BucketTuning`] per
//! problem-size bucket that was tuned: the problem timed, every candidate with its
//! certification and timing, and the winner.
//!
//! **Problem-size buckets.** The best schedule depends on the problem's size, so a winner
//! belongs to a bucket: `floor(log2(threads))`, where `threads` is the kernel's logical
//! invocation count ([`Kernel::threads`]) for the problem timed. Tuning another size adds or
//! replaces that size's bucket and keeps the others. [`TuningManifest::winner_for`] picks
//! the nearest tuned bucket for a given size; [`TuningManifest::winner`] (what
//! [`ForgeRuntime::schedule_for`] uses, since it does not know the size) is the winner of
//! the largest bucket.
//!
//! # Trust
//! Reading never fails and never panics: [`ManifestCache::load`] returns `None`, after a
//! `tracing` warning that names the file and the reason, for a file that is unreadable,
//! truncated or not a manifest, one written for another topology, kernel, kernel source,
//! crate version or emission backend, or one of a newer format. A bucket whose winner was
//! not certified, has no valid timing, is outside the kernel's tuning space, or cannot run
//! on this adapter ([`ForgeRuntime::check_schedule`]) loses its winner, with a warning.
//!
//! # Writing
//! [`ManifestCache::store`] writes through [`crate::files::write_atomically`]: readers see
//! the old file or the new one, never a part, and concurrent writers (threads or processes)
//! leave one whole file. Tuning merges its bucket into the stored manifest under a lock
//! file beside it (`.<kernel>.lock`, [`crate::files::FileLock`]), so tuners of different
//! sizes racing on one kernel keep each other's buckets; a lock it cannot take leaves that
//! run's result uncached, with a warning.

use crate::certify::Verdict;
use crate::error::{ForgeError, Result};
use crate::files::FileLock;
use crate::kernel::{Kernel, ScalarValue};
use crate::schedule::Schedule;
use crate::timing::Timing;
use crate::ForgeRuntime;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The manifest format this version writes. Files of a newer format are ignored.
pub const MANIFEST_FORMAT: u32 = 1;

/// The crate version written into manifests; a manifest of another version is stale.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long a tuner waits for another to finish merging into the same manifest: a merge is
/// one read and one write of a small file, so a longer wait means something is wrong.
const MERGE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// One candidate schedule as the tuner saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateResult {
    /// The schedule.
    pub schedule: Schedule,
    /// The certification verdict; `None` when the candidate was not certified because the
    /// adapter cannot run it.
    pub verdict: Option<Verdict>,
    /// Certification cases that ran.
    #[serde(default)]
    pub cases: usize,
    /// The largest absolute error certification saw.
    #[serde(default)]
    pub max_abs_err: f64,
    /// The largest relative error certification saw.
    #[serde(default)]
    pub max_rel_err: f64,
    /// The time of one dispatch on the bucket's problem; only certified candidates are
    /// timed.
    #[serde(default)]
    pub timing: Option<Timing>,
    /// Why the candidate cannot win: the first certification failure, the reason it was
    /// skipped, or the timing error.
    #[serde(default)]
    pub note: Option<String>,
}

impl CandidateResult {
    /// Whether the candidate passed certification and has a valid timing: only such a
    /// candidate can win.
    pub fn eligible(&self) -> bool {
        self.verdict == Some(Verdict::Pass) && self.timing.as_ref().is_some_and(Timing::is_valid)
    }

    /// The median time of one dispatch, where the candidate was timed.
    pub fn median_ns(&self) -> Option<f64> {
        self.timing
            .as_ref()
            .filter(|t| t.is_valid())
            .map(|t| t.median_ns)
    }
}

/// The tuning of one problem-size bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketTuning {
    /// `floor(log2(threads))`; see [`bucket_of`].
    pub bucket: u32,
    /// The logical invocations of the problem timed.
    pub threads: u64,
    /// The problem timed: the kernel's scalar arguments, in declaration order.
    pub scalars: Vec<ScalarValue>,
    /// The problem as `name=value, ...`, for people.
    #[serde(default)]
    pub problem: String,
    /// Every candidate, in the order tried.
    pub candidates: Vec<CandidateResult>,
    /// The fastest certified candidate; `None` when no candidate qualified.
    pub winner: Option<Schedule>,
    /// When it was tuned, in seconds since the Unix epoch.
    #[serde(default)]
    pub tuned_at: u64,
}

impl BucketTuning {
    /// The winner's result.
    pub fn winner_result(&self) -> Option<&CandidateResult> {
        let w = self.winner?;
        self.candidates.iter().find(|c| c.schedule == w)
    }

    /// The result of the candidate with this schedule.
    pub fn candidate(&self, schedule: &Schedule) -> Option<&CandidateResult> {
        self.candidates.iter().find(|c| c.schedule == *schedule)
    }

    /// The fastest eligible candidate.
    pub fn fastest(&self) -> Option<Schedule> {
        self.candidates
            .iter()
            .filter(|c| c.eligible())
            .min_by(|a, b| {
                a.median_ns()
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.median_ns().unwrap_or(f64::INFINITY))
            })
            .map(|c| c.schedule)
    }
}

/// What the tuner found for one kernel on one adapter: see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningManifest {
    /// The file format; see [`MANIFEST_FORMAT`].
    #[serde(default)]
    pub format: u32,
    /// The kernel's name.
    pub kernel: String,
    /// [`kernel_hash`] of the kernel the manifest was tuned for.
    pub kernel_hash: String,
    /// The topology hash of the adapter.
    pub topology: String,
    /// The adapter's name.
    pub adapter: String,
    /// The emission backend (`wgsl`, `spirv`) the candidates ran with.
    #[serde(default)]
    pub backend: String,
    /// The version of the crate that wrote it.
    pub crate_version: String,
    /// The kernel's declared schedule.
    pub default_schedule: Schedule,
    /// One entry per tuned problem-size bucket, sorted by bucket.
    pub buckets: Vec<BucketTuning>,
}

impl TuningManifest {
    /// The schedule to use when the problem's size is not known: the winner of the
    /// largest bucket that has one.
    pub fn winner(&self) -> Option<Schedule> {
        self.buckets.iter().rev().find_map(|b| b.winner)
    }

    /// The winner of the tuned bucket nearest to `threads` (ties go to the larger bucket).
    pub fn winner_for(&self, threads: u64) -> Option<Schedule> {
        let want = bucket_of(threads) as i64;
        self.buckets
            .iter()
            .filter(|b| b.winner.is_some())
            .min_by_key(|b| ((b.bucket as i64 - want).abs(), -(b.bucket as i64)))
            .and_then(|b| b.winner)
    }

    /// The tuning of one bucket.
    pub fn bucket(&self, bucket: u32) -> Option<&BucketTuning> {
        self.buckets.iter().find(|b| b.bucket == bucket)
    }

    /// Adds `tuning`, replacing the bucket of the same number; keeps buckets sorted.
    pub fn insert(&mut self, tuning: BucketTuning) {
        self.buckets.retain(|b| b.bucket != tuning.bucket);
        self.buckets.push(tuning);
        self.buckets.sort_by_key(|b| b.bucket);
    }
}

/// The problem-size bucket of a problem with `threads` logical invocations:
/// `floor(log2(threads))`, and 0 for 0 or 1.
///
/// ```
/// use forge_core::manifest::bucket_of;
/// assert_eq!((bucket_of(1), bucket_of(1023), bucket_of(1024), bucket_of(0)), (0, 9, 10, 0));
/// ```
pub fn bucket_of(threads: u64) -> u32 {
    63 - threads.max(1).leading_zeros()
}

/// The hash that makes a manifest stale when a kernel changes: hex sha256 of its WGSL for
/// the declared schedule.
pub fn kernel_hash(kernel: &dyn Kernel) -> String {
    hex(&Sha256::digest(
        kernel.wgsl(&kernel.default_schedule()).as_bytes(),
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a manifest must match to be trusted on this runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestKey {
    /// The kernel's name.
    pub kernel: String,
    /// [`kernel_hash`].
    pub kernel_hash: String,
    /// The runtime's topology hash.
    pub topology: String,
    /// The runtime's emission backend.
    pub backend: String,
    /// [`CRATE_VERSION`].
    pub crate_version: String,
}

impl ManifestKey {
    /// The key for `kernel` on `rt`.
    pub fn new(rt: &ForgeRuntime, kernel: &dyn Kernel) -> Self {
        ManifestKey {
            kernel: kernel.name().to_string(),
            kernel_hash: kernel_hash(kernel),
            topology: rt.topology_hash(),
            backend: rt.emission().to_string(),
            crate_version: CRATE_VERSION.to_string(),
        }
    }

    /// An empty manifest with this key.
    pub fn manifest(&self, rt: &ForgeRuntime, kernel: &dyn Kernel) -> TuningManifest {
        TuningManifest {
            format: MANIFEST_FORMAT,
            kernel: self.kernel.clone(),
            kernel_hash: self.kernel_hash.clone(),
            topology: self.topology.clone(),
            adapter: rt.adapter_info().name.clone(),
            backend: self.backend.clone(),
            crate_version: self.crate_version.clone(),
            default_schedule: kernel.default_schedule(),
            buckets: Vec::new(),
        }
    }

    /// Why `m` cannot be used under this key, or `None` when it matches.
    pub fn mismatch(&self, m: &TuningManifest) -> Option<String> {
        if m.format > MANIFEST_FORMAT {
            return Some(format!(
                "it has format {}, newer than this version's {MANIFEST_FORMAT}",
                m.format
            ));
        }
        if m.kernel != self.kernel {
            return Some(format!(
                "it is for kernel `{}`, not `{}`",
                m.kernel, self.kernel
            ));
        }
        if m.topology != self.topology {
            return Some(format!(
                "it was tuned on other hardware (topology {}, adapter `{}`), not this adapter's {}",
                short(&m.topology),
                m.adapter,
                short(&self.topology)
            ));
        }
        if m.kernel_hash != self.kernel_hash {
            return Some(format!(
                "it is stale: the kernel's source changed (hash {} there, {} now)",
                short(&m.kernel_hash),
                short(&self.kernel_hash)
            ));
        }
        if m.crate_version != self.crate_version {
            return Some(format!(
                "it is stale: written by version {}, this is {}",
                m.crate_version, self.crate_version
            ));
        }
        if m.backend != self.backend {
            return Some(format!(
                "it was tuned for the `{}` emission backend, this runtime uses `{}`",
                m.backend, self.backend
            ));
        }
        None
    }
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Drops, with a warning, every bucket winner that cannot be trusted on `rt` for `kernel`.
/// Returns the number of winners dropped.
pub fn sanitize(
    rt: &ForgeRuntime,
    kernel: &dyn Kernel,
    m: &mut TuningManifest,
    path: &Path,
) -> usize {
    let space = kernel.tune_space().candidates();
    let default = kernel.default_schedule();
    let mut dropped = 0;
    for b in &mut m.buckets {
        let Some(w) = b.winner else { continue };
        let reason = if let Err(e) = rt.check_schedule(kernel, &w) {
            Some(format!("the adapter cannot run it: {e}"))
        } else if w != default && !space.contains(&w) {
            Some("it is not in the kernel's tuning space".to_string())
        } else {
            match b.candidate(&w) {
                None => Some("it is not among the recorded candidates".to_string()),
                Some(c) if c.verdict != Some(Verdict::Pass) => {
                    Some("it did not pass certification".to_string())
                }
                Some(c) if !c.eligible() => {
                    Some("its timing is missing or not a positive number".to_string())
                }
                Some(_) => None,
            }
        };
        if let Some(reason) = reason {
            tracing::warn!(
                path = %path.display(),
                kernel = kernel.name(),
                bucket = b.bucket,
                schedule = %w,
                "ignoring the cached winner: {reason}"
            );
            b.winner = None;
            dropped += 1;
        }
    }
    dropped
}

/// Why a manifest file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// There is no such file (not worth a warning).
    Missing,
    /// The file exists but could not be read or parsed, or was written for something else.
    Unusable(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => f.write_str("no manifest"),
            ReadError::Unusable(why) => f.write_str(why),
        }
    }
}

/// One file in the cache, as `forge cache ls` shows it.
#[derive(Clone, Debug)]
pub struct CacheEntry {
    /// The file.
    pub path: PathBuf,
    /// The topology directory it sits in.
    pub topology: String,
    /// The manifest, or why it could not be read.
    pub manifest: std::result::Result<TuningManifest, String>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The manifest cache: `<root>/<topology hash>/<kernel>.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestCache {
    root: PathBuf,
}

impl ManifestCache {
    /// The cache rooted at `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ManifestCache { root: root.into() }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the manifest of `kernel` for `topology` lives.
    pub fn path(&self, topology: &str, kernel: &str) -> PathBuf {
        self.root
            .join(file_safe(topology))
            .join(format!("{}.json", file_safe(kernel)))
    }

    /// Reads and parses one manifest, without checking what it was written for.
    pub fn read(
        &self,
        topology: &str,
        kernel: &str,
    ) -> std::result::Result<TuningManifest, ReadError> {
        read_file(&self.path(topology, kernel))
    }

    /// The manifest of `kernel` for `rt`, if one is stored and can be trusted; see the
    /// [module docs](self). Never fails: whatever is wrong is a warning and `None`.
    pub fn load(&self, rt: &ForgeRuntime, kernel: &dyn Kernel) -> Option<TuningManifest> {
        let key = ManifestKey::new(rt, kernel);
        self.load_keyed(rt, kernel, &key)
    }

    pub(crate) fn load_keyed(
        &self,
        rt: &ForgeRuntime,
        kernel: &dyn Kernel,
        key: &ManifestKey,
    ) -> Option<TuningManifest> {
        let path = self.path(&key.topology, &key.kernel);
        let mut m = match read_file(&path) {
            Ok(m) => m,
            Err(ReadError::Missing) => {
                tracing::debug!(path = %path.display(), "no tuning manifest");
                return None;
            }
            Err(ReadError::Unusable(why)) => {
                tracing::warn!(path = %path.display(), kernel = kernel.name(), "ignoring the tuning manifest: {why}");
                return None;
            }
        };
        if let Some(why) = key.mismatch(&m) {
            tracing::warn!(path = %path.display(), kernel = kernel.name(), "ignoring the tuning manifest: {why}");
            return None;
        }
        sanitize(rt, kernel, &mut m, &path);
        Some(m)
    }

    /// Writes `manifest` atomically to its place; returns the path. Fails when the
    /// directory cannot be created or written (the caller decides whether that matters:
    /// the tuner warns and goes on without caching).
    pub fn store(&self, manifest: &TuningManifest) -> Result<PathBuf> {
        let path = self.path(&manifest.topology, &manifest.kernel);
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        let io = |what: &str, p: &Path, source| ForgeError::Io {
            context: format!("{what} `{}`", p.display()),
            source,
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| io("creating the manifest directory", &dir, e))?;
        let mut json = serde_json::to_vec_pretty(manifest)
            .map_err(|e| io("serializing", &path, std::io::Error::other(e)))?;
        json.push(b'\n');
        crate::files::write_atomically(&path, &json)?;
        Ok(path)
    }

    /// Runs `f` holding the lock of `key`'s manifest, a hidden file beside it (so that
    /// `list` and `clear` pass over it): tuners of other sizes racing on the same kernel
    /// then read, merge and write one after another, and keep each other's buckets.
    /// Errors: the directory or the lock cannot be created, or another holder keeps the
    /// lock past [`MERGE_LOCK_WAIT`]; `f` has not run then.
    pub(crate) fn with_lock<R>(&self, key: &ManifestKey, f: impl FnOnce() -> R) -> Result<R> {
        let path = self.path(&key.topology, &key.kernel);
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(|e| ForgeError::Io {
            context: format!("creating the manifest directory `{}`", dir.display()),
            source: e,
        })?;
        let lock_path = dir.join(format!(".{}.lock", file_safe(&key.kernel)));
        let _held = FileLock::acquire(&lock_path, MERGE_LOCK_WAIT)?;
        Ok(f())
    }

    /// Every manifest under the root, by topology and kernel. A missing root is empty.
    pub fn list(&self) -> Result<Vec<CacheEntry>> {
        let mut out = Vec::new();
        for dir in self.topology_dirs()? {
            let topology = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut files: Vec<PathBuf> = read_dir(&dir)?
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "json") && !is_hidden(p))
                .collect();
            files.sort();
            for path in files {
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                let manifest = read_file(&path).map_err(|e| e.to_string());
                out.push(CacheEntry {
                    path,
                    topology: topology.clone(),
                    manifest,
                    bytes,
                });
            }
        }
        Ok(out)
    }

    /// Removes every manifest (and leftover temporary file) under the root, and the
    /// topology directories they leave empty. Other files are left alone. Returns the
    /// number of manifests removed.
    pub fn clear(&self) -> Result<usize> {
        let mut removed = 0;
        for dir in self.topology_dirs()? {
            for path in read_dir(&dir)? {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let ours = (name.ends_with(".json") && !name.starts_with('.'))
                    || (name.starts_with('.') && name.ends_with(".tmp"));
                if ours && path.is_file() {
                    std::fs::remove_file(&path).map_err(|e| ForgeError::Io {
                        context: format!("removing `{}`", path.display()),
                        source: e,
                    })?;
                    if !name.ends_with(".tmp") {
                        removed += 1;
                    }
                }
            }
            // Only succeeds when empty, which is what we want.
            let _ = std::fs::remove_dir(&dir);
        }
        Ok(removed)
    }

    /// The directories under the root named like a topology hash.
    fn topology_dirs(&self) -> Result<Vec<PathBuf>> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let mut dirs: Vec<PathBuf> = read_dir(&self.root)?
            .into_iter()
            .filter(|p| p.is_dir())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.len() == 64 && n.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .collect();
        dirs.sort();
        Ok(dirs)
    }
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| ForgeError::Io {
        context: format!("listing `{}`", dir.display()),
        source: e,
    })?;
    Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
}

fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

fn read_file(path: &Path) -> std::result::Result<TuningManifest, ReadError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Unusable(format!("cannot read it: {e}"))),
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        let what = if e.is_eof() {
            "it is truncated"
        } else {
            "it is not a valid manifest"
        };
        ReadError::Unusable(format!("{what}: {e}"))
    })
}

/// A name safe as one path component: ASCII letters, digits, `_` and `-`; anything else
/// becomes `_`.
fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

/// The runtime's memo of manifests, so that the cache is read once per kernel and runtime.
/// Keyed by the kernel's name and its layout's address, which tell kernel types apart.
#[derive(Debug, Default)]
pub(crate) struct ManifestMemo {
    map: Mutex<HashMap<MemoKey, Option<Arc<TuningManifest>>>>,
}

/// A kernel's name and the address of its layout.
type MemoKey = (&'static str, usize);

impl ManifestMemo {
    fn key(kernel: &dyn Kernel) -> MemoKey {
        (kernel.name(), kernel.layout().as_ptr() as usize)
    }

    pub(crate) fn get_or_load(
        &self,
        kernel: &dyn Kernel,
        load: impl FnOnce() -> Option<TuningManifest>,
    ) -> Option<Arc<TuningManifest>> {
        let key = Self::key(kernel);
        if let Ok(map) = self.map.lock() {
            if let Some(hit) = map.get(&key) {
                return hit.clone();
            }
        }
        // Loaded outside the lock: reading a file must not block other kernels' lookups.
        let loaded = load().map(Arc::new);
        if let Ok(mut map) = self.map.lock() {
            return map.entry(key).or_insert(loaded).clone();
        }
        loaded
    }

    pub(crate) fn peek(&self, kernel: &dyn Kernel) -> Option<Option<Arc<TuningManifest>>> {
        self.map.lock().ok()?.get(&Self::key(kernel)).cloned()
    }

    pub(crate) fn set(&self, kernel: &dyn Kernel, manifest: Option<TuningManifest>) {
        if let Ok(mut map) = self.map.lock() {
            map.insert(Self::key(kernel), manifest.map(Arc::new));
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            map.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(wg: u32, verdict: Verdict, ns: f64) -> CandidateResult {
        CandidateResult {
            schedule: Schedule::with_workgroup(wg),
            verdict: Some(verdict),
            cases: 3,
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            timing: Timing::from_pass_ns(&[ns * 4.0], 4, crate::timing::Timer::Timestamp),
            note: None,
        }
    }

    fn bucket(b: u32, winner: u32) -> BucketTuning {
        BucketTuning {
            bucket: b,
            threads: 1 << b,
            scalars: vec![ScalarValue::U32(1 << b)],
            problem: format!("n={}", 1u64 << b),
            candidates: vec![
                candidate(64, Verdict::Pass, 10.0),
                candidate(128, Verdict::Pass, 5.0),
            ],
            winner: Some(Schedule::with_workgroup(winner)),
            tuned_at: 0,
        }
    }

    fn manifest() -> TuningManifest {
        TuningManifest {
            format: MANIFEST_FORMAT,
            kernel: "k".into(),
            kernel_hash: "ab".repeat(32),
            topology: "cd".repeat(32),
            adapter: "test".into(),
            backend: "wgsl".into(),
            crate_version: CRATE_VERSION.into(),
            default_schedule: Schedule::with_workgroup(64),
            buckets: vec![],
        }
    }

    #[test]
    fn buckets_are_inserted_sorted_and_replaced() {
        let mut m = manifest();
        m.insert(bucket(20, 128));
        m.insert(bucket(10, 64));
        m.insert(bucket(20, 64));
        assert_eq!(
            m.buckets.iter().map(|b| b.bucket).collect::<Vec<_>>(),
            vec![10, 20]
        );
        assert_eq!(
            m.bucket(20).unwrap().winner,
            Some(Schedule::with_workgroup(64))
        );
    }

    #[test]
    fn winner_lookup_by_size() {
        let mut m = manifest();
        assert_eq!(m.winner(), None);
        m.insert(bucket(10, 64));
        m.insert(bucket(20, 128));
        assert_eq!(m.winner(), Some(Schedule::with_workgroup(128)));
        assert_eq!(m.winner_for(1 << 11), Some(Schedule::with_workgroup(64)));
        assert_eq!(m.winner_for(1 << 19), Some(Schedule::with_workgroup(128)));
        // Equidistant: the larger bucket.
        assert_eq!(m.winner_for(1 << 15), Some(Schedule::with_workgroup(128)));
        m.buckets[1].winner = None;
        assert_eq!(m.winner(), Some(Schedule::with_workgroup(64)));
        assert_eq!(m.winner_for(1 << 30), Some(Schedule::with_workgroup(64)));
    }

    #[test]
    fn fastest_ignores_failed_and_untimed() {
        let mut b = bucket(4, 64);
        b.candidates.push(candidate(32, Verdict::Fail, 1.0));
        let mut untimed = candidate(16, Verdict::Pass, 1.0);
        untimed.timing = None;
        b.candidates.push(untimed);
        let mut zero = candidate(8, Verdict::Pass, 1.0);
        zero.timing.as_mut().unwrap().median_ns = 0.0;
        b.candidates.push(zero);
        assert_eq!(b.fastest(), Some(Schedule::with_workgroup(128)));
    }

    #[test]
    fn key_mismatches_are_named() {
        let m = manifest();
        let key = ManifestKey {
            kernel: m.kernel.clone(),
            kernel_hash: m.kernel_hash.clone(),
            topology: m.topology.clone(),
            backend: m.backend.clone(),
            crate_version: m.crate_version.clone(),
        };
        assert_eq!(key.mismatch(&m), None);
        type Change = fn(&mut TuningManifest);
        let cases: [(&str, Change); 6] = [
            ("other hardware", |m| m.topology = "ef".repeat(32)),
            ("source changed", |m| m.kernel_hash = "00".repeat(32)),
            ("version", |m| m.crate_version = "0.0.0-old".into()),
            ("emission backend", |m| m.backend = "spirv".into()),
            ("kernel `j`", |m| m.kernel = "j".into()),
            ("newer", |m| m.format = MANIFEST_FORMAT + 1),
        ];
        for (needle, change) in cases {
            let mut bad = m.clone();
            change(&mut bad);
            let why = key.mismatch(&bad).expect(needle);
            assert!(why.contains(needle), "{why}");
        }
    }

    #[test]
    fn manifests_round_trip_and_old_files_load() {
        let mut m = manifest();
        m.insert(bucket(12, 128));
        let json = serde_json::to_string(&m).unwrap();
        let back: TuningManifest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        // A file without the fields added later still loads.
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let obj = v.as_object_mut().unwrap();
        obj.remove("format");
        obj.remove("backend");
        let b = obj["buckets"][0].as_object_mut().unwrap();
        b.remove("problem");
        b.remove("tuned_at");
        let c = b["candidates"][0].as_object_mut().unwrap();
        c.remove("note");
        c.remove("cases");
        let old: TuningManifest = serde_json::from_value(v).unwrap();
        assert_eq!(old.format, 0);
        assert_eq!(old.buckets[0].winner, Some(Schedule::with_workgroup(128)));
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_safe("gemv"), "gemv");
        assert_eq!(file_safe("../x y"), "___x_y");
        assert_eq!(file_safe(""), "_");
        let cache = ManifestCache::new("/c");
        assert_eq!(cache.path("ab", "k"), PathBuf::from("/c/ab/k.json"));
    }
}
