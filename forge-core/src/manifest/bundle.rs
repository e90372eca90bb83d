//! Manifest bundles: the tuned manifests of a cache as one checksummed file. Part of the
//! manifest cache (layer 2): it takes the cache, the kernels and the adapter's limits as
//! values, never the runtime.
//!
//! A bundle moves tuning to machines that did not tune: `forge cache export FILE` on one
//! machine, `forge cache import FILE` on identical ones; or a bundle embedded in the
//! program (`include_bytes!`) and handed to the runtime's builder
//! (`RuntimeBuilder::manifest_bundle`), so that a program running where there is no cache
//! directory (the web) still gets tuned schedules: the runtime looks a kernel's manifest up
//! in the bundle when its cache holds no trusted one.
//!
//! # The file
//! JSON: a format tag ([`BUNDLE_FORMAT`]), a version ([`BUNDLE_VERSION`]), a sha256, and
//! the entries. An entry holds the topology hash of the folder its manifest was in, the
//! kernel's name, and the manifest file's exact text as a string: re-serialising a parsed
//! manifest could change its bytes (floats, in particular), so an imported file is
//! byte-for-byte the exported one. The sha256 covers the entries in a canonical encoding
//! that does not depend on the JSON's layout: for each entry in order, its topology,
//! kernel and manifest text, each as a little-endian `u64` length and its UTF-8 bytes.
//!
//! # Trust
//! - **The bundle as a whole.** Bytes that are not JSON, not a bundle, of a newer version,
//!   or whose checksum does not match (truncated, edited) are a
//!   [`ForgeError::BadBundle`], and nothing is written or used from them.
//! - **Each entry** is checked as the cache checks a file it loads ([`super::trust`]): it
//!   parses as a manifest; its kernel name, kernel source hash, crate version and
//!   emission backend match ([`ManifestKey::mismatch`]); every winner is one the kernel
//!   can trust ([`super::untrusted_winners`]). Another machine's topology is no reason to
//!   reject an entry (manifests are keyed by topology; that is what makes them
//!   shareable), but an entry whose manifest was tuned on another topology than the one
//!   it is filed under is rejected.
//! - **Import** ([`ManifestBundle::import_into`]) checks each entry against the kernels
//!   the program knows (for `forge`, the built-ins). An entry for a kernel it does not
//!   know is rejected as an *unknown kernel*: its source hash cannot be checked, and
//!   nothing enters the cache unchecked. One whose kernel is known by name but whose
//!   source changed is rejected as stale. The adapter's limits are checked later, when the
//!   manifest is loaded on the machine it is for. A rejected entry is reported with its
//!   reason and skipped; the others are imported.
//! - **The runtime** ([`ManifestBundle::load`]) checks an entry when it looks it up,
//!   against the kernel and the adapter at hand, through the same [`super::trust`] as the
//!   cache; an entry that fails is passed over with a warning.
//!
//! # Writing
//! Import checks every entry before it writes any. Each entry is then written under the
//! cache's merge lock ([`ManifestCache::with_lock`]), atomically
//! ([`crate::files::write_atomically`]). A manifest already in its place that the cache
//! would trust under the entry's key is kept, unless `replace` is asked for; a missing,
//! unreadable or stale one is replaced. The driver's pipeline cache files
//! (`pipelines-*.bin`) beside the manifests are not manifests and are not exported.
//!
//! ```
//! use forge_core::manifest::bundle::ManifestBundle;
//! use forge_core::manifest::ManifestCache;
//! # use forge_core::*;
//! # use forge_core::kernel::*;
//! # use forge_core::manifest::ManifestKey;
//! # struct K;
//! # impl Kernel for K {
//! #     fn name(&self) -> &'static str { "doc_bundle_k" }
//! #     fn wgsl(&self, _: &Schedule) -> String { "// doc".into() }
//! #     fn layout(&self) -> &'static [Binding] { &[] }
//! #     fn scalars(&self) -> &'static [ScalarParam] { &[] }
//! #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
//! #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
//! #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
//! #     fn binding_lens_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
//! #     fn grid_threads_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(1u64)) }
//! #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
//! # }
//! let tmp = std::env::temp_dir().join(format!("forge-doc-bundle-{}", std::process::id()));
//! let (here, there) = (ManifestCache::new(tmp.join("a")), ManifestCache::new(tmp.join("b")));
//! // One machine's cache holds a manifest for the kernel `K` ...
//! let key = ManifestKey::new(K.id(), "ab".repeat(32), Backend::Wgsl);
//! here.store(&key.manifest("some adapter", K.default_schedule()))?;
//! // ... exported as one file, and imported on another machine.
//! let export = ManifestBundle::from_cache(&here)?;
//! assert_eq!(export.bundle.entries().len(), 1);
//! export.bundle.write(&tmp.join("tuned.bundle"))?;
//! let bundle = ManifestBundle::read(&tmp.join("tuned.bundle"))?;
//! let report = bundle.import_into(&there, &[&K], false)?;
//! assert_eq!((report.imported.len(), report.kept.len(), report.rejected.len()), (1, 0, 0));
//! let path = here.path(&key.topology, &K.id());
//! assert_eq!(std::fs::read(&path)?, std::fs::read(there.path(&key.topology, &K.id()))?);
//! // Importing again keeps what is there; a program that does not know `K` rejects it.
//! assert_eq!(bundle.import_into(&there, &[&K], false)?.kept.len(), 1);
//! let report = bundle.import_into(&there, &[], false)?;
//! assert!(report.rejected[0].1.contains("unknown kernel"), "{report}");
//! // A bundle edited after export is refused as a whole.
//! let mut bytes = export.bundle.to_bytes()?;
//! let at = bytes.windows(12).position(|w| w == b"some adapter").unwrap();
//! bytes[at] = b'S';
//! assert!(matches!(ManifestBundle::from_bytes(&bytes), Err(ForgeError::BadBundle { .. })));
//! std::fs::remove_dir_all(&tmp)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{
    is_topology_hash, manifest_stem, parse, read_file, short, trust, untrusted_winners,
    ManifestCache, ManifestKey, TuningManifest, MAX_MANIFEST_BYTES,
};
use crate::error::{ForgeError, Result};
use crate::files::ReadRefusal;
use crate::kernel::Kernel;
use crate::shown::shown;
use crate::target::Backend;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// The format tag that opens every bundle file.
pub const BUNDLE_FORMAT: &str = "wgsl-forge-manifest-bundle";

/// The bundle version this crate writes, and the newest it reads.
pub const BUNDLE_VERSION: u32 = 1;

/// The largest bundle file read: 256 MiB, room for thousands of manifests.
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;

/// The file as serde sees it.
#[derive(Serialize, Deserialize)]
struct BundleFile {
    format: String,
    version: u32,
    sha256: String,
    entries: Vec<EntryFile>,
}

#[derive(Serialize, Deserialize)]
struct EntryFile {
    topology: String,
    kernel: String,
    manifest: String,
}

/// One manifest in a bundle: where it was filed, and its file's exact text.
#[derive(Clone, Debug)]
pub struct BundleEntry {
    topology: String,
    kernel: String,
    text: String,
    /// The text parsed once, or why it does not parse.
    parsed: std::result::Result<TuningManifest, String>,
}

impl BundleEntry {
    /// An entry for the manifest file whose exact text is `text`, filed under `topology`
    /// for the kernel named `kernel`. It is checked when it is imported or looked up, not
    /// here.
    pub fn new(
        topology: impl Into<String>,
        kernel: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let text = text.into();
        let parsed = parse(text.as_bytes()).map_err(|e| e.to_string());
        BundleEntry {
            topology: topology.into(),
            kernel: kernel.into(),
            text,
            parsed,
        }
    }

    /// The topology hash it is filed under.
    pub fn topology(&self) -> &str {
        &self.topology
    }

    /// The kernel's name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// The manifest file's exact text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The manifest, or why its text is not one.
    pub fn manifest(&self) -> std::result::Result<&TuningManifest, &str> {
        self.parsed.as_ref().map_err(String::as_str)
    }

    /// How reports name it: `kernel@hash` (the kernel's name and the first 12 digits of
    /// its source hash, as `forge cache ls` shows it) `on` the topology's first 12 digits.
    pub fn label(&self) -> String {
        let hash = self
            .parsed
            .as_ref()
            .map_or_else(|_| "?".into(), |m| short(&m.kernel_hash));
        format!(
            "{}@{hash} on {}",
            shown(&self.kernel),
            short(&self.topology)
        )
    }

    /// Where the canonical encoding hashes it: three length-prefixed strings.
    fn digest_into(&self, h: &mut Sha256) {
        for s in [&self.topology, &self.kernel, &self.text] {
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
    }
}

/// Tuned manifests as one checksummed file; see the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct ManifestBundle {
    entries: Vec<BundleEntry>,
}

/// What [`ManifestBundle::from_cache`] made: the bundle, and the files it left out.
#[derive(Clone, Debug)]
pub struct Export {
    /// Every usable manifest of the cache.
    pub bundle: ManifestBundle,
    /// Each file left out, with the reason: unreadable, not a manifest, or filed under
    /// another topology or kernel than it names (the cache would never load it).
    pub skipped: Vec<(PathBuf, String)>,
}

/// What [`ManifestBundle::import_into`] did with each entry, by [`BundleEntry::label`].
#[derive(Clone, Debug, Default)]
pub struct ImportReport {
    /// Entries written, with the file each was written to.
    pub imported: Vec<(String, PathBuf)>,
    /// Entries not written because a trusted manifest was already in their place.
    pub kept: Vec<(String, PathBuf)>,
    /// Entries rejected, with the reason.
    pub rejected: Vec<(String, String)>,
}

impl ImportReport {
    /// `imported N, kept M existing, rejected R`.
    pub fn summary(&self) -> String {
        format!(
            "imported {}, kept {} existing, rejected {}",
            self.imported.len(),
            self.kept.len(),
            self.rejected.len()
        )
    }
}

impl fmt::Display for ImportReport {
    /// The [summary](ImportReport::summary), then a line per rejected entry with its
    /// reason.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())?;
        for (label, why) in &self.rejected {
            write!(f, "\n  rejected {label}: {why}")?;
        }
        Ok(())
    }
}

/// The decision about one entry, made before anything is written.
struct Accepted<'a> {
    entry: &'a BundleEntry,
    manifest: &'a TuningManifest,
    key: ManifestKey,
}

impl ManifestBundle {
    /// An empty bundle.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry at the end.
    pub fn push(&mut self, entry: BundleEntry) {
        self.entries.push(entry);
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[BundleEntry] {
        &self.entries
    }

    /// Every manifest under `cache`'s topology folders, as their files' exact text. A file
    /// that is unreadable, not a manifest, or filed under another topology or kernel than
    /// it names is left out and listed in [`Export::skipped`]. Errors: the cache's
    /// folders cannot be listed.
    pub fn from_cache(cache: &ManifestCache) -> Result<Export> {
        let mut bundle = ManifestBundle::new();
        let mut skipped = Vec::new();
        for e in cache.list()? {
            match exported_entry(&e.path, &e.topology) {
                Ok(entry) => bundle.push(entry),
                Err(why) => skipped.push((e.path, why)),
            }
        }
        Ok(Export { bundle, skipped })
    }

    /// The sha256 of the entries in the canonical encoding (see the [module docs](self)),
    /// in hex.
    pub fn checksum(&self) -> String {
        let mut h = Sha256::new();
        h.update(BUNDLE_FORMAT.as_bytes());
        h.update(BUNDLE_VERSION.to_le_bytes());
        h.update((self.entries.len() as u64).to_le_bytes());
        for e in &self.entries {
            e.digest_into(&mut h);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bundle file: JSON, with its checksum.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let file = BundleFile {
            format: BUNDLE_FORMAT.to_string(),
            version: BUNDLE_VERSION,
            sha256: self.checksum(),
            entries: self
                .entries
                .iter()
                .map(|e| EntryFile {
                    topology: e.topology.clone(),
                    kernel: e.kernel.clone(),
                    manifest: e.text.clone(),
                })
                .collect(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| ForgeError::Io {
            context: "serializing a manifest bundle".into(),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Writes the bundle file to `path`, atomically; it replaces only a regular file
    /// ([`crate::files::write_atomically`]).
    pub fn write(&self, path: &Path) -> Result<()> {
        crate::files::write_atomically(path, &self.to_bytes()?)
    }

    /// The bundle in `bytes` (what [`ManifestBundle::to_bytes`] wrote, e.g. embedded with
    /// `include_bytes!`). Errors: [`ForgeError::BadBundle`] for bytes that are not JSON,
    /// not a bundle, of a newer version, or whose checksum does not match.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::decode(bytes, "given as bytes")
    }

    /// The bundle file at `path` (a regular file of at most [`MAX_BUNDLE_BYTES`]).
    /// Errors: as [`ManifestBundle::from_bytes`], and the file cannot be read
    /// ([`ForgeError::Io`], [`ForgeError::RefusedPath`]).
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = crate::files::read_bounded(path, MAX_BUNDLE_BYTES).map_err(|e| match e {
            ReadRefusal::Missing => ForgeError::Io {
                context: format!(
                    "reading the manifest bundle `{}`",
                    crate::shown::shown_path(path)
                ),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
            ReadRefusal::Refused(reason) => ForgeError::RefusedPath {
                path: crate::shown::shown_path(path),
                reason,
            },
            ReadRefusal::Io(source) => ForgeError::Io {
                context: format!(
                    "reading the manifest bundle `{}`",
                    crate::shown::shown_path(path)
                ),
                source,
            },
        })?;
        Self::decode(&bytes, &format!("`{}`", crate::shown::shown_path(path)))
    }

    /// The bundle in `bytes`, which came from `origin` (for the error).
    pub(crate) fn decode(bytes: &[u8], origin: &str) -> Result<Self> {
        let bad = |reason: String| ForgeError::BadBundle {
            origin: origin.to_string(),
            reason,
        };
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            bad(if e.is_eof() {
                format!(
                    "it is truncated ({}); export it again",
                    shown(&e.to_string())
                )
            } else {
                format!(
                    "it is not JSON ({}), so not a manifest bundle",
                    shown(&e.to_string())
                )
            })
        })?;
        if value.get("format").and_then(|f| f.as_str()) != Some(BUNDLE_FORMAT) {
            return Err(bad(format!(
                "it is not a manifest bundle: it has no format tag `{BUNDLE_FORMAT}` (write one with `forge cache export FILE`)"
            )));
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v <= BUNDLE_VERSION as u64 => {}
            Some(v) => {
                return Err(bad(format!(
                    "it has version {v}, newer than this version's {BUNDLE_VERSION}; export it with this version of WGSL Forge"
                )))
            }
            None => return Err(bad("it has no version number".into())),
        }
        let file: BundleFile = serde_json::from_value(value).map_err(|e| {
            bad(format!(
                "it is not a valid manifest bundle: {}",
                shown(&e.to_string())
            ))
        })?;
        let bundle = ManifestBundle {
            entries: file
                .entries
                .into_iter()
                .map(|e| BundleEntry::new(e.topology, e.kernel, e.manifest))
                .collect(),
        };
        if !file.sha256.eq_ignore_ascii_case(&bundle.checksum()) {
            return Err(bad(
                "its checksum does not match its entries: it was edited or damaged after it was exported; nothing was used from it (export it again)"
                    .into(),
            ));
        }
        Ok(bundle)
    }

    /// Writes every entry that `kernels` can vouch for into `cache`; see the [module
    /// docs](self). Every entry is checked before any is written; a rejected entry is
    /// reported with its reason ([`ImportReport::rejected`]) and skipped. A trusted
    /// manifest already in an entry's place is kept unless `replace`.
    ///
    /// Errors: a folder or file of the cache cannot be created or written
    /// ([`ForgeError::Io`], [`ForgeError::RefusedPath`]), or its lock cannot be taken;
    /// the entries written before it stay written, each whole.
    pub fn import_into(
        &self,
        cache: &ManifestCache,
        kernels: &[&dyn Kernel],
        replace: bool,
    ) -> Result<ImportReport> {
        let mut report = ImportReport::default();
        let mut accepted = Vec::new();
        let mut places = HashSet::new();
        for entry in &self.entries {
            match check(entry, kernels) {
                Ok(a) => {
                    let place = (
                        a.key.topology.clone(),
                        manifest_stem(&a.key.kernel, &a.key.kernel_hash, &a.key.backend),
                    );
                    if places.insert(place) {
                        accepted.push(a);
                    } else {
                        report.rejected.push((
                            entry.label(),
                            "the bundle holds another entry for this kernel, topology and backend before it"
                                .into(),
                        ));
                    }
                }
                Err(why) => report.rejected.push((entry.label(), why)),
            }
        }
        for a in accepted {
            let label = a.entry.label();
            let path = cache.key_path(&a.key);
            let written = cache.with_lock(&a.key, || {
                let trusted_there = read_file(&path)
                    .ok()
                    .is_some_and(|old| a.key.mismatch(&old).is_none());
                if trusted_there && !replace {
                    return Ok(false);
                }
                cache.write_file(a.manifest, a.entry.text.as_bytes())?;
                Ok::<bool, ForgeError>(true)
            })??;
            if written {
                report.imported.push((label, path));
            } else {
                report.kept.push((label, path));
            }
        }
        Ok(report)
    }

    /// The manifest for `kernel` under `key` (this runtime's topology, backend and crate
    /// version), if the bundle holds one that can be trusted on an adapter with these
    /// `limits`: the same checks as [`ManifestCache::load`], with a warning for each entry
    /// of this kernel and topology that fails them.
    pub fn load(
        &self,
        key: &ManifestKey,
        kernel: &dyn Kernel,
        limits: &wgpu::Limits,
    ) -> Option<TuningManifest> {
        self.entries
            .iter()
            .filter(|e| e.topology == key.topology && e.kernel == key.kernel)
            .find_map(|e| {
                let origin = format!("manifest bundle entry {}", e.label());
                match &e.parsed {
                    Ok(m) => trust(key, kernel, limits, m.clone(), &origin),
                    Err(why) => {
                        tracing::warn!(path = %origin, kernel = kernel.name(), "ignoring the tuning manifest: {why}");
                        None
                    }
                }
            })
    }
}

/// The entry for the cache file at `path`, in the topology folder `topology`, or why it
/// is left out of an export.
fn exported_entry(path: &Path, topology: &str) -> std::result::Result<BundleEntry, String> {
    let bytes = crate::files::read_bounded(path, MAX_MANIFEST_BYTES).map_err(|e| e.to_string())?;
    let text = String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    // Parsed from the bytes read, not from an earlier listing: the file may have changed.
    let m = parse(text.as_bytes()).map_err(|e| e.to_string())?;
    if m.topology != topology {
        return Err(format!(
            "it sits in the folder of topology {} but was tuned on {}",
            short(topology),
            short(&m.topology)
        ));
    }
    let stem = manifest_stem(&m.kernel, &m.kernel_hash, &m.backend);
    if path.file_stem().and_then(|s| s.to_str()) != Some(stem.as_str()) {
        return Err(format!(
            "its name does not match the kernel it holds (`{stem}.json`)"
        ));
    }
    Ok(BundleEntry::new(topology, m.kernel.clone(), text))
}

/// Whether `entry` can be imported by a program that knows `kernels`: the checks of the
/// [module docs](self), or the reason it cannot.
fn check<'a>(
    entry: &'a BundleEntry,
    kernels: &[&dyn Kernel],
) -> std::result::Result<Accepted<'a>, String> {
    let m = entry
        .parsed
        .as_ref()
        .map_err(|why| format!("it is not a usable manifest: {why}"))?;
    if !is_topology_hash(&entry.topology) {
        return Err(format!(
            "it is filed under `{}`, which is not a topology hash (64 hex digits)",
            shown(&entry.topology)
        ));
    }
    if m.topology != entry.topology {
        return Err(format!(
            "it is filed under topology {} but was tuned on {}",
            short(&entry.topology),
            short(&m.topology)
        ));
    }
    if m.kernel != entry.kernel {
        return Err(format!(
            "it is filed as kernel `{}` but holds kernel `{}`",
            shown(&entry.kernel),
            shown(&m.kernel)
        ));
    }
    let backend = Backend::parse(&m.backend)
        .map_err(|e| format!("its emission backend cannot be used: {e}"))?;
    let named: Vec<&dyn Kernel> = kernels
        .iter()
        .copied()
        .filter(|k| k.name() == m.kernel)
        .collect();
    let Some(&first) = named.first() else {
        return Err(format!(
            "unknown kernel `{}`: this program registers no kernel of that name, so its source hash cannot be checked",
            shown(&m.kernel)
        ));
    };
    // Of several kernels of one name, the one whose source it was tuned for; else the
    // first, whose key then says that the source changed.
    let kernel = named
        .iter()
        .copied()
        .find(|k| k.id().hash() == m.kernel_hash)
        .unwrap_or(first);
    let key = ManifestKey::new(kernel.id(), entry.topology.clone(), backend);
    if let Some(why) = key.mismatch(m) {
        return Err(why);
    }
    if let Some((bucket, schedule, why)) = untrusted_winners(kernel, None, m).into_iter().next() {
        return Err(format!(
            "the winner {schedule} of bucket {bucket} cannot be trusted: {why}"
        ));
    }
    Ok(Accepted {
        entry,
        manifest: m,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kernel: &str) -> BundleEntry {
        BundleEntry::new(
            "ab".repeat(32),
            kernel,
            format!("{{\"kernel\": \"{kernel}\"}}\n"),
        )
    }

    #[test]
    fn bytes_round_trip_and_checksum_covers_every_field() {
        let mut b = ManifestBundle::new();
        b.push(entry("k"));
        b.push(entry("j"));
        let bytes = b.to_bytes().unwrap();
        let back = ManifestBundle::from_bytes(&bytes).unwrap();
        assert_eq!(back.entries().len(), 2);
        assert_eq!(back.entries()[1].text(), b.entries()[1].text());
        assert_eq!(back.checksum(), b.checksum());
        // Moving a byte from one field to the next changes the checksum.
        let mut moved = ManifestBundle::new();
        moved.push(BundleEntry::new("ab".repeat(32), "kx", "y"));
        let mut other = ManifestBundle::new();
        other.push(BundleEntry::new("ab".repeat(32), "k", "xy"));
        assert_ne!(moved.checksum(), other.checksum());
    }

    #[test]
    fn bad_bytes_are_named_errors() {
        let mut b = ManifestBundle::new();
        b.push(entry("k"));
        let good = String::from_utf8(b.to_bytes().unwrap()).unwrap();
        let cases: [(&str, String); 6] = [
            ("truncated", good[..good.len() / 2].to_string()),
            ("not JSON", "garbage".into()),
            ("format tag", "{\"entries\": []}".into()),
            ("newer", good.replace("\"version\": 1", "\"version\": 9")),
            ("checksum", good.replace("\\\"k\\\"", "\\\"q\\\"")),
            (
                "not a valid",
                good.replace("\"entries\": [", "\"entries\": 3, \"x\": ["),
            ),
        ];
        for (needle, text) in cases {
            match ManifestBundle::from_bytes(text.as_bytes()) {
                Err(e @ ForgeError::BadBundle { .. }) => {
                    assert!(e.to_string().contains(needle), "{needle}: {e}")
                }
                other => panic!("{needle}: {other:?}"),
            }
        }
    }
}
