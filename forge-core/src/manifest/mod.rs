//! Tuning manifests and the cache they live in. Layer 2 (offline work): the cache takes
//! its key as a value ([`ManifestKey`]: the kernel's identity, the topology hash, the
//! emission backend, the crate version), never the runtime.
//!
//! This module owns [`ManifestCache`] (the files, at
//! `<cache>/<topology hash>/<name>-<short hash>.json`, named by the kernel's
//! [`KernelId::file_stem`], so two kernels of one name never share a file; a manifest tuned
//! through another emission backend than WGSL adds it, `<name>-<short hash>.spirv.json`
//! ([`manifest_stem`]), so one kernel tuned through two backends keeps both), the checks
//! that decide whether a manifest read back can be trusted, and the runtime's memo of them
//! ([`ManifestMemo`]). What a manifest holds ([`TuningManifest`] and its parts) are values
//! of [`crate::records`], re-exported here.
//!
//! # What a manifest holds
//! The kernel's name and [`kernel_hash`] (sha256 of its WGSL for the declared schedule), the
//! [topology hash](crate::topology::HardwareProfile::topology_hash), the adapter's name, the emission
//! backend, the crate version, the declared schedule, and one [`BucketTuning`] per
//! problem-size bucket that was tuned: the problem timed, every candidate with its
//! certification and timing, and the winner.
//!
//! **Problem-size buckets.** The best schedule depends on the problem's size, so a winner
//! belongs to a bucket: `floor(log2(threads))`, where `threads` is the kernel's logical
//! invocation count (`threads` of a `dyn Kernel`) for the problem timed. Tuning another size adds or
//! replaces that size's bucket and keeps the others. [`TuningManifest::winner_for`] picks
//! the nearest tuned bucket for a given size; [`TuningManifest::winner`] (what the runtime's
//! `schedule_for` uses, since it does not know the size) is the winner of the largest
//! bucket.
//!
//! # Trust
//! Reading never fails and never panics: [`ManifestCache::load`] returns `None`, after a
//! `tracing` warning that names the file and the reason, for a file that is unreadable,
//! truncated or not a manifest, one written for another topology, kernel, kernel source,
//! crate version or emission backend, or one of a newer format. A bucket whose winner was
//! not certified, has no valid timing, is outside the kernel's tuning space, or cannot run
//! on this adapter ([`crate::plan::check_schedule`]) loses its winner, with a warning.
//!
//! # Writing
//! [`ManifestCache::store`] writes through [`crate::files::write_atomically`]: readers see
//! the old file or the new one, never a part, and concurrent writers (threads or processes)
//! leave one whole file. Tuning merges its bucket into the stored manifest under a lock
//! file beside it (`.<name>-<short hash>.lock`, [`crate::files::FileLock`], an OS advisory
//! lock that the kernel releases when its holder dies), so tuners of different sizes
//! racing on one kernel keep each other's buckets; a lock it cannot take leaves that run's
//! result uncached, with a warning.
//!
//! # Sharing
//! [`bundle`] moves the manifests of a cache to other machines as one checksummed file
//! ([`ManifestBundle`]), checked entry by entry with the same [`trust`] as a file loaded
//! here.
//!
//! # What the cache touches
//! The cache never follows a symbolic link inside its root: a topology directory or a
//! manifest that is a link is passed over by [`ManifestCache::list`] and
//! [`ManifestCache::clear`], and refused by [`ManifestCache::store`]. It reads only regular
//! files of at most [`MAX_MANIFEST_BYTES`], so a link to `/dev/zero` or a FIFO is an
//! unusable manifest, never a hang. [`ManifestCache::clear`] removes only files that parse
//! as manifests and the temporary files the cache's own writes leave behind; lock files
//! stay (removing one while a tuner holds it would let two tuners merge at once).

pub mod bundle;

pub use bundle::ManifestBundle;

use crate::error::{ForgeError, Result};
use crate::files::FileLock;
use crate::kernel::{file_stem, Kernel, KernelId};
use crate::records::Verdict;
pub use crate::records::{
    bucket_of, BucketTuning, CandidateResult, TuningManifest, CRATE_VERSION, MANIFEST_FORMAT,
};
use crate::schedule::Schedule;
use crate::shown::shown;
use crate::target::Backend;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How long a tuner waits for another to finish merging into the same manifest: a merge is
/// one read and one write of a small file, so a longer wait means something is wrong.
const MERGE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest manifest file the cache reads: 16 MiB, far past what a kernel's buckets
/// take (a few KiB each).
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The hash that makes a manifest stale when a kernel changes: hex sha256 of its WGSL for
/// the declared schedule ([`KernelId::hash`]).
pub fn kernel_hash(kernel: &dyn Kernel) -> String {
    kernel.id().hash()
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
    /// The key for the kernel `id` on hardware of this topology hash, run through `backend`,
    /// by this crate version.
    pub fn new(id: KernelId, topology: impl Into<String>, backend: Backend) -> Self {
        ManifestKey {
            kernel: id.name().to_string(),
            kernel_hash: id.hash(),
            topology: topology.into(),
            backend: backend.to_string(),
            crate_version: CRATE_VERSION.to_string(),
        }
    }

    /// An empty manifest with this key, tuned on `adapter` for a kernel whose declared
    /// schedule is `default_schedule`.
    pub fn manifest(&self, adapter: &str, default_schedule: Schedule) -> TuningManifest {
        TuningManifest {
            format: MANIFEST_FORMAT,
            kernel: self.kernel.clone(),
            kernel_hash: self.kernel_hash.clone(),
            topology: self.topology.clone(),
            adapter: adapter.to_string(),
            backend: self.backend.clone(),
            crate_version: self.crate_version.clone(),
            default_schedule,
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
                shown(&m.kernel),
                self.kernel
            ));
        }
        if m.topology != self.topology {
            return Some(format!(
                "it was tuned on other hardware (topology {}, adapter `{}`), not this adapter's {}",
                short(&m.topology),
                shown(&m.adapter),
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
                shown(&m.crate_version),
                self.crate_version
            ));
        }
        if m.backend != self.backend {
            return Some(format!(
                "it was tuned for the `{}` emission backend, this runtime uses `{}`",
                shown(&m.backend),
                self.backend
            ));
        }
        None
    }
}

/// A hash's first 12 characters, as messages show it; a "hash" read from a file may be
/// anything, so it is shown escaped.
fn short(hash: &str) -> String {
    shown(&hash.chars().take(12).collect::<String>())
}

/// Whether `name` is named like a topology hash (64 hex digits), as the cache's folders are.
fn is_topology_hash(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Every bucket winner of `m` that cannot be trusted for `kernel`, with the reason: a knob
/// the kernel does not declare, outside its tuning space, not among the recorded
/// candidates, not certified, without a valid timing, or (given the adapter's `limits`)
/// one the adapter cannot run. Without `limits` (importing a bundle for hardware that is
/// not here) the adapter's check is left to the runtime that loads the manifest.
pub fn untrusted_winners(
    kernel: &dyn Kernel,
    limits: Option<&wgpu::Limits>,
    m: &TuningManifest,
) -> Vec<(u32, Schedule, String)> {
    let space = kernel.tune_space().candidates();
    let default = kernel.default_schedule();
    let mut out = Vec::new();
    for b in &m.buckets {
        let Some(w) = b.winner else { continue };
        let unknown = w.knobs().find(|(n, _)| default.knob(n).is_none());
        let adapter = limits.and_then(|l| crate::plan::check_schedule(kernel.name(), &w, l).err());
        let reason = if let Some((knob, _)) = unknown {
            Some(format!(
                "it is stale: it sets the knob `{knob}`, which the kernel does not declare"
            ))
        } else if let Some(e) = adapter {
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
            out.push((b.bucket, w, reason));
        }
    }
    out
}

/// Drops, with a warning, every bucket winner that cannot be trusted for `kernel` on an
/// adapter with these `limits` ([`untrusted_winners`]). Returns the number of winners
/// dropped. `origin` names where the manifest came from in the warning (a file, a bundle).
pub fn sanitize(
    kernel: &dyn Kernel,
    limits: &wgpu::Limits,
    m: &mut TuningManifest,
    origin: &dyn fmt::Display,
) -> usize {
    let untrusted = untrusted_winners(kernel, Some(limits), m);
    for (bucket, schedule, reason) in &untrusted {
        tracing::warn!(
            path = %origin,
            kernel = kernel.name(),
            bucket,
            schedule = %schedule,
            "ignoring the cached winner: {reason}"
        );
        // Every bucket of that number: a file may hold one number twice (the tuner never
        // writes it so), and the copy's winner is just as untrusted (found by fuzzing).
        for b in m
            .buckets
            .iter_mut()
            .filter(|b| b.bucket == *bucket && b.winner == Some(*schedule))
        {
            b.winner = None;
        }
    }
    untrusted.len()
}

/// The checks every manifest passes before the runtime uses it, from a file or a bundle
/// alike: it must match `key` ([`ManifestKey::mismatch`]), and its winners are
/// [sanitized](sanitize) for `kernel` on an adapter with these `limits`. `None`, after a
/// warning naming `origin` and the reason, when it does not match.
pub fn trust(
    key: &ManifestKey,
    kernel: &dyn Kernel,
    limits: &wgpu::Limits,
    mut m: TuningManifest,
    origin: &dyn fmt::Display,
) -> Option<TuningManifest> {
    if let Some(why) = key.mismatch(&m) {
        tracing::warn!(path = %origin, kernel = kernel.name(), "ignoring the tuning manifest: {why}");
        return None;
    }
    sanitize(kernel, limits, &mut m, origin);
    Some(m)
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

/// The file stem of a manifest: the kernel's [`file_stem`] for the WGSL emission (the
/// default, where every manifest written before backends were named lives too), and
/// `<stem>.<backend>` for another one, so that tuning one kernel through WGSL and through
/// SPIR-V keeps both manifests instead of each overwriting the other. A backend read from
/// a file is not trusted: it is written as the topology folder is (`file_safe`, one-to-one,
/// `%XX` for every byte outside `[A-Za-z0-9_]`). The `.` cannot occur in a [`file_stem`] or
/// in an escaped backend, so stems of different backends never meet.
///
/// ```
/// use forge_core::manifest::manifest_stem;
/// let hash = "0123456789abcdef0123"; // the first 12 digits name the file
/// assert_eq!(manifest_stem("gemv", hash, "wgsl"), "gemv-0123456789ab");
/// assert_eq!(manifest_stem("gemv", hash, ""), "gemv-0123456789ab"); // a file from before
/// assert_eq!(manifest_stem("gemv", hash, "spirv"), "gemv-0123456789ab.spirv");
/// assert_eq!(manifest_stem("gemv", hash, "../x"), "gemv-0123456789ab.%2E%2E%2Fx");
/// ```
pub fn manifest_stem(kernel: &str, kernel_hash: &str, backend: &str) -> String {
    let stem = file_stem(kernel, kernel_hash);
    // A file from before manifests named their backend has none: it lives at the WGSL
    // place, where it was written.
    if backend.is_empty() || backend == Backend::Wgsl.name() {
        return stem;
    }
    format!("{stem}.{}", file_safe(backend))
}

/// The manifest cache: `<root>/<topology hash>/<name>-<short hash>.json` (see
/// [`manifest_stem`] for other emission backends).
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

    /// Where the manifest of the kernel `id` for hardware `topology`, tuned through the
    /// WGSL emission, lives: `<root>/<topology>/<id.file_stem()>.json`. Another emission
    /// backend's is at [`ManifestCache::key_path`].
    pub fn path(&self, topology: &str, id: &KernelId) -> PathBuf {
        self.path_of(topology, &id.file_stem())
    }

    fn path_of(&self, topology: &str, stem: &str) -> PathBuf {
        self.root
            .join(file_safe(topology))
            .join(format!("{stem}.json"))
    }

    /// Reads and parses one manifest, without checking what it was written for.
    pub fn read(
        &self,
        topology: &str,
        id: &KernelId,
    ) -> std::result::Result<TuningManifest, ReadError> {
        read_file(&self.path(topology, id))
    }

    /// The manifest stored under `key`, if there is one and it can be trusted for `kernel`
    /// on an adapter with these `limits`; see the [module docs](self). Never fails:
    /// whatever is wrong is a warning and `None`.
    pub fn load(
        &self,
        key: &ManifestKey,
        kernel: &dyn Kernel,
        limits: &wgpu::Limits,
    ) -> Option<TuningManifest> {
        let path = self.key_path(key);
        let m = match read_file(&path) {
            Ok(m) => m,
            Err(ReadError::Missing) => {
                tracing::debug!(path = %crate::shown::shown_path(&path), "no tuning manifest");
                return None;
            }
            Err(ReadError::Unusable(why)) => {
                tracing::warn!(path = %crate::shown::shown_path(&path), kernel = kernel.name(), "ignoring the tuning manifest: {why}");
                return None;
            }
        };
        trust(key, kernel, limits, m, &crate::shown::shown_path(&path))
    }

    /// Where the manifest of `key` lives: `<root>/<topology>/<`[`manifest_stem`]`>.json`,
    /// which names the emission backend unless it is WGSL.
    pub fn key_path(&self, key: &ManifestKey) -> PathBuf {
        self.path_of(
            &key.topology,
            &manifest_stem(&key.kernel, &key.kernel_hash, &key.backend),
        )
    }

    /// Writes `manifest` atomically to its place; returns the path. Fails when the
    /// directory cannot be created or written (the caller decides whether that matters:
    /// the tuner warns and goes on without caching).
    pub fn store(&self, manifest: &TuningManifest) -> Result<PathBuf> {
        let mut json = serde_json::to_vec_pretty(manifest).map_err(|e| ForgeError::Io {
            context: format!("serializing the manifest of `{}`", manifest.kernel),
            source: std::io::Error::other(e),
        })?;
        json.push(b'\n');
        self.write_file(manifest, &json)
    }

    /// Writes `bytes`, the file of `manifest`, atomically to that manifest's place (what
    /// [`ManifestCache::store`] and a bundle's import share); returns the path.
    fn write_file(&self, manifest: &TuningManifest, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.path_of(
            &manifest.topology,
            &manifest_stem(&manifest.kernel, &manifest.kernel_hash, &manifest.backend),
        );
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        crate::files::create_real_dir(&dir)?;
        crate::files::write_atomically(&path, bytes)?;
        Ok(path)
    }

    /// Runs `f` holding the lock of `key`'s manifest, a hidden file beside it (so that
    /// `list` and `clear` pass over it): tuners of other sizes racing on the same kernel
    /// then read, merge and write one after another, and keep each other's buckets.
    /// Errors: the directory or the lock cannot be created, or another holder keeps the
    /// lock past a 10 s wait; `f` has not run then.
    pub fn with_lock<R>(&self, key: &ManifestKey, f: impl FnOnce() -> R) -> Result<R> {
        let path = self.key_path(key);
        let dir = path.parent().unwrap_or(&self.root);
        crate::files::create_real_dir(dir)?;
        let stem = manifest_stem(&key.kernel, &key.kernel_hash, &key.backend);
        let lock_path = dir.join(format!(".{stem}.lock"));
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
                let bytes = std::fs::symlink_metadata(&path)
                    .map(|m| m.len())
                    .unwrap_or(0);
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

    /// Removes every manifest (and temporary file the cache's writes left behind) under the
    /// root, and the topology directories they leave empty. A file is removed only if it is
    /// a regular file (not a link) that parses as a manifest, or is named as the cache names
    /// its temporary files; everything else is left alone. Returns the number of manifests
    /// removed.
    pub fn clear(&self) -> Result<usize> {
        self.clear_with(&|_| false).map(|(manifests, _)| manifests)
    }

    /// [`ManifestCache::clear`], also removing the files of the topology directories that
    /// `also` says are ours (the driver's pipeline caches, which the device layer keeps
    /// there). Returns the manifests and the other files removed.
    pub fn clear_with(&self, also: &dyn Fn(&Path) -> bool) -> Result<(usize, usize)> {
        let mut removed = 0;
        let mut others = 0;
        for dir in self.topology_dirs()? {
            for path in read_dir(&dir)? {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let regular =
                    std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
                let temp = crate::files::is_temp_for(&name, ".json");
                let manifest = !temp
                    && name.ends_with(".json")
                    && !name.starts_with('.')
                    && regular
                    && read_file(&path).is_ok();
                let other = regular && !temp && !manifest && also(&path);
                if regular && (temp || manifest || other) {
                    std::fs::remove_file(&path).map_err(|e| ForgeError::Io {
                        context: format!("removing `{}`", crate::shown::shown_path(&path)),
                        source: e,
                    })?;
                    removed += manifest as usize;
                    others += other as usize;
                }
            }
            // Only succeeds when empty, which is what we want.
            let _ = std::fs::remove_dir(&dir);
        }
        Ok((removed, others))
    }

    /// The directories under the root named like a topology hash: directories themselves,
    /// never symbolic links to one.
    fn topology_dirs(&self) -> Result<Vec<PathBuf>> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let mut dirs: Vec<PathBuf> = read_dir(&self.root)?
            .into_iter()
            .filter(|p| crate::files::is_real_dir(p))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_topology_hash)
            })
            .collect();
        dirs.sort();
        Ok(dirs)
    }
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| ForgeError::Io {
        context: format!("listing `{}`", crate::shown::shown_path(dir)),
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
    use crate::files::ReadRefusal;
    let bytes = match crate::files::read_bounded(path, MAX_MANIFEST_BYTES) {
        Ok(b) => b,
        Err(ReadRefusal::Missing) => return Err(ReadError::Missing),
        Err(why) => return Err(ReadError::Unusable(why.to_string())),
    };
    parse(&bytes)
}

/// A manifest from the bytes of its file: what is wrong with them is a reason, never a
/// panic.
fn parse(bytes: &[u8]) -> std::result::Result<TuningManifest, ReadError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let what = if e.is_eof() {
            "it is truncated"
        } else {
            "it is not a valid manifest"
        };
        // serde quotes the values it refuses, unescaped and whole.
        ReadError::Unusable(format!("{what}: {}", shown(&e.to_string())))
    })
}

/// A name safe as one path component, one-to-one: ASCII letters, digits and `_` stay, every
/// other byte is written `%XX` (a topology hash is hex, so it is its own name), and the
/// empty name is `%`.
fn file_safe(name: &str) -> String {
    if name.is_empty() {
        return "%".into();
    }
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The runtime's memo of manifests, so that the cache is read once per kernel and runtime.
/// Keyed by the kernel's [`KernelId`]: two kernels of one name keep apart.
#[derive(Debug, Default)]
pub struct ManifestMemo {
    map: Mutex<HashMap<KernelId, Option<Arc<TuningManifest>>>>,
}

impl ManifestMemo {
    /// What is remembered for `id`, else what `load` returns, remembered (`None` too: a
    /// missing or untrusted manifest is not looked for again).
    pub fn get_or_load(
        &self,
        id: &KernelId,
        load: impl FnOnce() -> Option<TuningManifest>,
    ) -> Option<Arc<TuningManifest>> {
        if let Ok(map) = self.map.lock() {
            if let Some(hit) = map.get(id) {
                return hit.clone();
            }
        }
        // Loaded outside the lock: reading a file must not block other kernels' lookups.
        let loaded = load().map(Arc::new);
        if let Ok(mut map) = self.map.lock() {
            return map.entry(*id).or_insert(loaded).clone();
        }
        loaded
    }

    /// What is remembered for `id`, without loading: `None` when nothing is.
    pub fn peek(&self, id: &KernelId) -> Option<Option<Arc<TuningManifest>>> {
        self.map.lock().ok()?.get(id).cloned()
    }

    /// Remembers `manifest` for `id`.
    pub fn set(&self, id: &KernelId, manifest: Option<TuningManifest>) {
        if let Ok(mut map) = self.map.lock() {
            map.insert(*id, manifest.map(Arc::new));
        }
    }

    /// Forgets everything.
    pub fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            map.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ScalarValue;
    use crate::records::{Timer, Timing};

    fn candidate(wg: u32, verdict: Verdict, ns: f64) -> CandidateResult {
        CandidateResult {
            schedule: Schedule::with_workgroup(wg),
            verdict: Some(verdict),
            cases: 3,
            max_abs_err: 0.0,
            max_rel_err: 0.0,
            timing: Timing::from_pass_ns(&[ns * 4.0], 4, Timer::Timestamp),
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

    /// One kernel tuned through WGSL and through SPIR-V keeps both manifests, each at its
    /// own place, each read back by its own key.
    #[test]
    fn each_emission_backend_has_its_own_manifest_file() {
        let root =
            std::env::temp_dir().join(format!("forge-manifest-backends-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let cache = ManifestCache::new(&root);
        let id = KernelId::new("k", "source");
        let keys: Vec<ManifestKey> = [Backend::Wgsl, Backend::Spirv]
            .into_iter()
            .map(|b| ManifestKey::new(id, "cd".repeat(32), b))
            .collect();
        for (key, winner) in keys.iter().zip([64, 128]) {
            let mut m = key.manifest("test", Schedule::with_workgroup(64));
            m.insert(bucket(12, winner));
            assert_eq!(cache.store(&m).unwrap(), cache.key_path(key));
        }
        assert_eq!(cache.key_path(&keys[0]), cache.path(&keys[0].topology, &id));
        assert_eq!(
            cache
                .key_path(&keys[1])
                .file_name()
                .unwrap()
                .to_str()
                .unwrap(),
            format!("{}.spirv.json", id.file_stem())
        );
        for (key, winner) in keys.iter().zip([64, 128]) {
            let m = read_file(&cache.key_path(key)).unwrap();
            assert_eq!(m.backend, key.backend);
            assert_eq!(m.winner(), Some(Schedule::with_workgroup(winner)));
        }
        assert_eq!(cache.list().unwrap().len(), 2);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_safe("gemv"), "gemv");
        assert_eq!(file_safe("../x y"), "%2E%2E%2Fx%20y");
        assert_eq!(file_safe(""), "%");
        assert_ne!(file_safe("a-b"), file_safe("a_b"));
        let cache = ManifestCache::new("/c");
        let id = KernelId::new("k", "source");
        assert_eq!(
            cache.path("ab", &id),
            PathBuf::from(format!("/c/ab/k-{}.json", id.short_hash()))
        );
        let generic = KernelId::new("scale<f32>", "source");
        assert_eq!(
            cache.path("ab", &generic),
            PathBuf::from(format!("/c/ab/scale%3Cf32%3E-{}.json", id.short_hash()))
        );
    }
}
