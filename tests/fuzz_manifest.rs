//! Fuzzing manifest and bundle parsing (issue 35): whatever a manifest file or a bundle
//! holds, reading it never panics, what is refused is refused with a message that is short
//! and escaped, and what is accepted is what a trusted manifest must be. See
//! `tests/fuzz/mod.rs` for the campaigns' settings (`FORGE_FUZZ_CASES`,
//! `FORGE_FUZZ_SECONDS`) and their persisted failures
//! (`tests/fuzz_manifest.proptest-regressions`).
//!
//! Inputs are valid manifests of built-in kernels (every candidate of a few tuning
//! spaces, certified and timed) with random edits to their JSON: a value replaced by
//! random JSON (strings with control characters, 100 kB strings, extreme numbers, deep
//! nesting), a field removed or added, a value duplicated or wrapped; and the bundles
//! that hold them, with a right checksum (so that the entries are read) or with random
//! byte edits.
//!
//! Checked, for each input:
//! - `TuningManifest` parses or not without a panic; one that parses serializes back to
//!   itself, and its winner lookups do not panic;
//! - the cache (`ManifestCache::load` of the file, `list`) never panics, every warning it
//!   logs is short and escaped, and a manifest it loads matches its key and has only
//!   trusted winners;
//! - a bundle of it decodes, or is refused with a short escaped message; import never
//!   panics, writes each accepted entry byte for byte, names each rejected one with a
//!   short escaped reason, and keeps what it wrote on a second import; a runtime's lookup
//!   in the bundle (`ManifestBundle::load`) trusts only what matches.

mod fuzz;

use fuzz::{bounded_message, campaign, logged, no_panic, Tally};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::OnceLock;
use wgsl_forge::manifest::bundle::{BundleEntry, ManifestBundle};
use wgsl_forge::manifest::{
    untrusted_winners, BucketTuning, CandidateResult, ManifestCache, ManifestKey, TuningManifest,
};
use wgsl_forge::timing::{Timer, Timing};
use wgsl_forge::{Backend, Kernel};

/// The topology every base manifest was "tuned" on.
const TOPOLOGY: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";

/// A valid manifest of a built-in kernel: its key, and its JSON.
struct Base {
    kernel: &'static dyn Kernel,
    key: ManifestKey,
    json: Value,
}

/// Manifests of kernels with 1-D, 2-D and knob schedules, each with two buckets whose
/// candidates are the first of the kernel's tuning space, all certified and timed.
fn bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let all = wgsl_forge::kernels::registry::builtin();
        let mut picked: Vec<&'static dyn Kernel> = Vec::new();
        // The first kernel, the first 2-D one, the first with knobs.
        picked.extend(all.first().copied());
        picked.extend(
            all.iter()
                .copied()
                .find(|k| k.default_schedule().workgroup_y.is_some()),
        );
        picked.extend(
            all.iter()
                .copied()
                .find(|k| k.default_schedule().knobs().count() > 0),
        );
        picked
            .into_iter()
            .map(|kernel| {
                let key = ManifestKey::new(kernel.id(), TOPOLOGY, Backend::Wgsl);
                let mut m = key.manifest("fuzz adapter", kernel.default_schedule());
                let scalars = kernel.cert_cases().into_iter().next().unwrap_or_default();
                for (b, slow) in [(10u32, 1.0), (20, 3.0)] {
                    let candidates: Vec<CandidateResult> = kernel
                        .tune_space()
                        .candidates()
                        .into_iter()
                        .take(4)
                        .enumerate()
                        .map(|(i, schedule)| CandidateResult {
                            schedule,
                            verdict: Some(wgsl_forge::certify::Verdict::Pass),
                            cases: 3,
                            max_abs_err: 1e-7,
                            max_rel_err: 1e-6,
                            timing: Timing::from_pass_ns(
                                &[4000.0 * slow * (i + 1) as f64],
                                4,
                                Timer::Timestamp,
                            ),
                            note: None,
                        })
                        .collect();
                    m.insert(BucketTuning {
                        bucket: b,
                        threads: 1 << b,
                        scalars: scalars.clone(),
                        problem: format!("n={}", 1u64 << b),
                        winner: candidates.first().map(|c| c.schedule),
                        candidates,
                        tuned_at: 1_700_000_000,
                    });
                }
                let json = serde_json::to_value(&m).expect("a manifest serializes");
                Base { kernel, key, json }
            })
            .collect()
    })
}

// ---- random JSON ------------------------------------------------------------------------

const WORDS: &[&str] = &[
    "",
    "wgsl",
    "spirv",
    "glsl",
    "cuda",
    "WGSL",
    "axpy",
    "gemv",
    "scale<f32>",
    "0.1.0",
    "Pass",
    "Fail",
    "Timestamp",
    "U32",
    "F32",
    "TILE",
    "ROWS",
    "WG",
    "_",
    "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed",
    "../../etc",
    "a/b",
    "%2E",
    "\u{1b}[2J",
    "\u{1b}]0;owned\u{7}",
    "\u{202e}",
    "\0",
    "é",
    "\u{fffd}",
    "n=1024",
];

const KEYS: &[&str] = &[
    "format",
    "kernel",
    "kernel_hash",
    "topology",
    "adapter",
    "backend",
    "crate_version",
    "default_schedule",
    "buckets",
    "bucket",
    "threads",
    "scalars",
    "problem",
    "candidates",
    "winner",
    "tuned_at",
    "schedule",
    "verdict",
    "cases",
    "max_abs_err",
    "max_rel_err",
    "timing",
    "note",
    "median_ns",
    "samples",
    "repeats",
    "timer",
    "rejected",
    "workgroup",
    "workgroup_y",
    "workgroup_z",
    "items",
    "vector",
    "knobs",
    "U32",
    "I32",
    "F32",
    "TILE",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => select(WORDS).prop_map(String::from),
        3 => "[ -~]{0,24}",
        3 => "(?s).{0,16}",
        1 => (select(WORDS), 1usize..120_000).prop_map(|(w, n)| {
            let w = if w.is_empty() { "x" } else { w };
            w.repeat(n / w.len() + 1)
        }),
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (0u64..70).prop_map(Value::from),
        2 => select(&[
            0i64, -1, 1, 2, 3, 63, 64, 65, 256, 65535, 65536, 4_294_967_295, 4_294_967_296,
            i64::MAX, i64::MIN, i32::MIN as i64,
        ][..]).prop_map(Value::from),
        1 => select(&[u64::MAX, 1 << 63, 1 << 53][..]).prop_map(Value::from),
        2 => any::<i64>().prop_map(Value::from),
        2 => any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        1 => select(&[0.0f64, -0.0, 1e-300, 5e-324, 1e300, f64::MAX, -f64::MAX, 0.5][..])
            .prop_map(Value::from),
    ]
}

fn json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => number(),
        4 => text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            2 => prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            2 => prop::collection::vec((prop_oneof![3 => select(KEYS).prop_map(String::from), 1 => text()], inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

/// Nesting deeper than serde_json's recursion limit (128).
fn deep() -> impl Strategy<Value = String> {
    (100usize..3000, any::<bool>()).prop_map(|(d, arrays)| {
        if arrays {
            format!("{}{}", "[".repeat(d), "]".repeat(d))
        } else {
            format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d))
        }
    })
}

// ---- edits of a manifest's JSON ---------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Replace(Value),
    /// A child of the node (at an index modulo its children), or the node's value.
    Remove(usize),
    Insert(String, Value),
    Duplicate,
    Wrap,
    /// Raw JSON text in place of the value (for nesting past the parser's limit).
    Raw(String),
    /// A value of the same kind: a number for a number, a string for a string, a flipped
    /// bool, an array with one element dropped or repeated; such edits mostly still parse,
    /// and reach the checks past parsing (a winner not among the candidates, a workgroup of
    /// 0, a timing that is negative, a bucket past 63).
    Tweak(Value, String, usize),
}

/// One step down a JSON tree: the child at an index (modulo the children there), or the
/// field of a name.
#[derive(Clone, Debug)]
enum Step {
    At(usize),
    Key(&'static str),
}

#[derive(Clone, Debug)]
struct Edit {
    path: Vec<Step>,
    op: Op,
}

/// Paths into a manifest that its checks past parsing look at.
fn targeted_path() -> impl Strategy<Value = Vec<Step>> {
    use Step::{At, Key};
    let schedule_field = select(
        &[
            "workgroup",
            "workgroup_y",
            "workgroup_z",
            "items",
            "vector",
            "knobs",
        ][..],
    );
    let candidate_field = select(
        &[
            "schedule",
            "verdict",
            "timing",
            "cases",
            "max_abs_err",
            "note",
        ][..],
    );
    let timing_field = select(&["median_ns", "samples", "repeats", "timer", "rejected"][..]);
    let header = select(
        &[
            "kernel",
            "kernel_hash",
            "topology",
            "backend",
            "crate_version",
            "format",
            "adapter",
        ][..],
    );
    prop_oneof![
        3 => (any::<usize>()).prop_map(|i| vec![Key("buckets"), At(i), Key("winner")]),
        3 => (any::<usize>(), schedule_field.clone()).prop_map(|(i, f)| vec![
            Key("buckets"),
            At(i),
            Key("winner"),
            Key(f)
        ]),
        2 => (any::<usize>(), any::<usize>(), candidate_field).prop_map(|(i, j, f)| vec![
            Key("buckets"),
            At(i),
            Key("candidates"),
            At(j),
            Key(f)
        ]),
        2 => (any::<usize>(), any::<usize>(), timing_field).prop_map(|(i, j, f)| {
            vec![
                Key("buckets"),
                At(i),
                Key("candidates"),
                At(j),
                Key("timing"),
                Key(f),
            ]
        }),
        2 => (any::<usize>(), any::<usize>(), schedule_field.clone()).prop_map(|(i, j, f)| {
            vec![
                Key("buckets"),
                At(i),
                Key("candidates"),
                At(j),
                Key("schedule"),
                Key(f),
            ]
        }),
        2 => (
            any::<usize>(),
            select(&["bucket", "threads", "scalars", "candidates", "problem"][..])
        )
            .prop_map(|(i, f)| vec![Key("buckets"), At(i), Key(f)]),
        2 => schedule_field.prop_map(|f| vec![Key("default_schedule"), Key(f)]),
        1 => header.prop_map(|f| vec![Key(f)]),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    let op = prop_oneof![
        6 => json().prop_map(Op::Replace),
        3 => any::<usize>().prop_map(Op::Remove),
        2 => (prop_oneof![3 => select(KEYS).prop_map(String::from), 1 => text()], json())
            .prop_map(|(k, v)| Op::Insert(k, v)),
        1 => Just(Op::Duplicate),
        1 => Just(Op::Wrap),
        1 => deep().prop_map(Op::Raw),
        8 => (number(), text(), any::<usize>()).prop_map(|(n, t, i)| Op::Tweak(n, t, i)),
    ];
    let path = prop_oneof![
        1 => prop::collection::vec(any::<usize>().prop_map(Step::At), 0..7),
        3 => targeted_path(),
    ];
    (path, op).prop_map(|(path, op)| Edit { path, op })
}

/// The marker a raw edit leaves in the tree, replaced by its text once serialized.
const RAW: &str = "\u{0}raw\u{0}";

/// Applies `op` at the node `path` leads to (each step picks a child: at an index modulo
/// the children there, or of a name; the walk stops where a step cannot be taken).
fn apply(v: &mut Value, path: &[Step], op: &Op, raw: &mut Option<String>) {
    if let Some((step, rest)) = path.split_first() {
        let child = match (&mut *v, step) {
            (Value::Array(a), Step::At(i)) if !a.is_empty() => {
                let i = i % a.len();
                Some(&mut a[i])
            }
            (Value::Object(o), Step::At(i)) if !o.is_empty() => {
                let key = o.keys().nth(i % o.len()).cloned().unwrap_or_default();
                o.get_mut(&key)
            }
            (Value::Object(o), Step::Key(k)) => o.get_mut(*k),
            _ => None,
        };
        if let Some(c) = child {
            return apply(c, rest, op, raw);
        }
    }
    let target = v;
    match op {
        Op::Replace(new) => *target = new.clone(),
        Op::Remove(i) => match target {
            Value::Array(a) if !a.is_empty() => {
                let i = i % a.len();
                a.remove(i);
            }
            Value::Object(o) if !o.is_empty() => {
                let key = o.keys().nth(i % o.len()).cloned().unwrap_or_default();
                o.remove(&key);
            }
            other => *other = Value::Null,
        },
        Op::Insert(k, new) => match target {
            Value::Array(a) => a.push(new.clone()),
            Value::Object(o) => {
                o.insert(k.clone(), new.clone());
            }
            other => *other = new.clone(),
        },
        Op::Duplicate => match target {
            Value::Array(a) if !a.is_empty() => {
                let first = a[0].clone();
                a.push(first);
            }
            other => *other = Value::Array(vec![other.clone(), other.clone()]),
        },
        Op::Wrap => *target = Value::Array(vec![target.clone()]),
        Op::Raw(text) => {
            *target = Value::String(RAW.into());
            *raw = Some(text.clone());
        }
        Op::Tweak(n, t, i) => match target {
            Value::Number(_) => *target = n.clone(),
            Value::String(_) => *target = Value::String(t.clone()),
            Value::Bool(b) => *b = !*b,
            Value::Array(a) if !a.is_empty() => {
                let at = i % a.len();
                if i % 2 == 0 {
                    a.remove(at);
                } else {
                    let v = a[at].clone();
                    a.push(v);
                }
            }
            Value::Null => *target = n.clone(),
            _ => {}
        },
    }
}

/// A base manifest with `edits`, as file text.
fn edited(base: &Base, edits: &[Edit]) -> String {
    with_edits(base.json.clone(), edits)
}

/// `v` with `edits`, as JSON text (a raw edit's text in place of its marker).
fn with_edits(mut v: Value, edits: &[Edit]) -> String {
    let mut raw = None;
    for e in edits {
        apply(&mut v, &e.path, &e.op, &mut raw);
    }
    let text = serde_json::to_string_pretty(&v).expect("JSON serializes");
    match raw {
        Some(r) => text.replacen(&serde_json::to_string(RAW).unwrap(), &r, 1),
        None => text,
    }
}

#[derive(Clone, Debug)]
struct ManifestCase {
    base: usize,
    edits: Vec<Edit>,
    /// Bytes past the text: truncated to this fraction of it, when set.
    truncate: Option<u16>,
    threads: u64,
}

fn manifest_case() -> impl Strategy<Value = ManifestCase> {
    (
        0..bases().len(),
        prop::collection::vec(edit(), 0..3),
        prop::option::weighted(0.1, any::<u16>()),
        any::<u64>(),
    )
        .prop_map(|(base, edits, truncate, threads)| ManifestCase {
            base,
            edits,
            truncate,
            threads,
        })
}

fn case_text(c: &ManifestCase) -> String {
    let text = edited(&bases()[c.base], &c.edits);
    match c.truncate {
        Some(t) => {
            let mut at = text.len() * t as usize / u16::MAX as usize;
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text[..at].to_string()
        }
        None => text,
    }
}

fn temp_root(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "forge-fuzz-manifest-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn limits() -> wgsl_forge::wgpu::Limits {
    wgsl_forge::wgpu::Limits::default()
}

/// A manifest that can be trusted under `key` for `kernel`: it matches the key and has no
/// untrusted winner.
fn trusted(
    what: &str,
    key: &ManifestKey,
    kernel: &dyn Kernel,
    m: &TuningManifest,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        key.mismatch(m),
        None,
        "{}: a loaded manifest must match",
        what
    );
    let untrusted = untrusted_winners(kernel, Some(&limits()), m);
    prop_assert!(
        untrusted.is_empty(),
        "{}: untrusted winners kept: {:?}",
        what,
        untrusted
    );
    Ok(())
}

// ---- the campaigns ----------------------------------------------------------------------

/// A manifest file, parsed, and loaded through the cache.
#[test]
fn fuzz_manifest_files() {
    let root = temp_root("files");
    let cache = ManifestCache::new(&root);
    let tally = Tally::default();
    campaign("manifest files", file!(), manifest_case(), |c| {
        let base = &bases()[c.base];
        let text = case_text(&c);
        let parsed = no_panic("parsing", || serde_json::from_str::<TuningManifest>(&text))?;
        if let Ok(m) = &parsed {
            tally.hit("parsed");
            let again = serde_json::to_string(m).expect("a parsed manifest serializes");
            let back: TuningManifest = serde_json::from_str(&again)
                .map_err(|e| TestCaseError::fail(format!("re-reading what was written: {e}")))?;
            prop_assert_eq!(&back, m, "a manifest read back must serialize to itself");
            no_panic("winner lookups", || {
                let _ = (
                    m.winner(),
                    m.winner_for(c.threads),
                    m.bucket(c.threads as u32),
                );
                for b in &m.buckets {
                    let _ = (b.fastest(), b.winner_result());
                }
            })?;
            let reasons = no_panic("untrusted_winners", || {
                untrusted_winners(base.kernel, Some(&limits()), m)
            })?;
            for (_, _, why) in &reasons {
                bounded_message("an untrusted winner's reason", why)?;
            }
        }
        // Through the cache: the file at its key's place.
        let path = cache.key_path(&base.key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text.as_bytes()).unwrap();
        let (loaded, log) = logged(|| {
            no_panic("ManifestCache::load", || {
                cache.load(&base.key, base.kernel, &limits())
            })
        });
        let loaded = loaded?;
        bounded_message("the cache's warnings", &log)?;
        if log.contains("ignoring the cached winner") {
            tally.hit("a winner dropped");
        }
        if log.contains("ignoring the tuning manifest") {
            tally.hit("the manifest ignored");
        }
        if let Some(m) = &loaded {
            tally.hit("loaded");
            if m.winner().is_some() {
                tally.hit("loaded with a winner");
            }
            trusted("ManifestCache::load", &base.key, base.kernel, m)?;
        }
        let listed = no_panic("ManifestCache::list", || cache.list())?
            .map_err(|e| TestCaseError::fail(format!("listing the cache: {e}")))?;
        for e in &listed {
            if let Err(why) = &e.manifest {
                bounded_message("a listed file's reason", why)?;
            }
        }
        Ok(())
    });
    eprintln!("manifest files reached: {}", tally.summary());
    let _ = std::fs::remove_dir_all(&root);
}

#[derive(Clone, Debug)]
enum Filing {
    /// Under the topology and kernel it names.
    Right,
    /// Under another topology or kernel name.
    Wrong(String, String),
}

#[derive(Clone, Debug)]
enum ByteEdit {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
}

#[derive(Clone, Debug)]
struct BundleCase {
    entries: Vec<(ManifestCase, Filing)>,
    /// Edits of the bundle's own JSON (format, version, checksum, entries).
    wrapper: Vec<Edit>,
    bytes: Vec<ByteEdit>,
    replace: bool,
}

fn bundle_case() -> impl Strategy<Value = BundleCase> {
    let filing = prop_oneof![
        4 => Just(Filing::Right),
        1 => (text(), text()).prop_map(|(t, k)| Filing::Wrong(t, k)),
    ];
    let byte = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        any::<usize>().prop_map(ByteEdit::Truncate),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| ByteEdit::Insert(i, b)),
    ];
    (
        prop::collection::vec((manifest_case(), filing), 0..4),
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..3)],
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(byte, 1..4)],
        any::<bool>(),
    )
        .prop_map(|(entries, wrapper, bytes, replace)| BundleCase {
            entries,
            wrapper,
            bytes,
            replace,
        })
}

/// A bundle's bytes, decoded and imported, and looked up as a runtime looks it up.
#[test]
fn fuzz_bundles() {
    let root = temp_root("bundles");
    let kernels = wgsl_forge::kernels::registry::builtin();
    let tally = Tally::default();
    campaign("manifest bundles", file!(), bundle_case(), |c| {
        let mut bundle = ManifestBundle::new();
        for (m, filing) in &c.entries {
            let base = &bases()[m.base];
            let (topology, kernel) = match filing {
                Filing::Right => (TOPOLOGY.to_string(), base.kernel.name().to_string()),
                Filing::Wrong(t, k) => (t.clone(), k.clone()),
            };
            bundle.push(BundleEntry::new(topology, kernel, case_text(m)));
        }
        let mut bytes = bundle.to_bytes().expect("a bundle serializes");
        if !c.wrapper.is_empty() {
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            bytes = with_edits(v, &c.wrapper).into_bytes();
        }
        for e in &c.bytes {
            let len = bytes.len().max(1);
            match e {
                ByteEdit::Flip(i, b) if !bytes.is_empty() => bytes[i % len] ^= b | 1,
                ByteEdit::Truncate(i) => bytes.truncate(i % len),
                ByteEdit::Insert(i, b) => {
                    let at = i % (bytes.len() + 1);
                    bytes.splice(at..at, b.iter().copied());
                }
                _ => {}
            }
        }
        let decoded = no_panic("ManifestBundle::from_bytes", || {
            ManifestBundle::from_bytes(&bytes)
        })?;
        let decoded = match decoded {
            Ok(b) => {
                tally.hit("decoded");
                b
            }
            Err(e) => {
                prop_assert!(
                    matches!(e, wgsl_forge::ForgeError::BadBundle { .. }),
                    "a bundle that cannot be read is BadBundle: {:?}",
                    e
                );
                return bounded_message("a refused bundle", &e.to_string());
            }
        };
        if c.wrapper.is_empty() && c.bytes.is_empty() {
            prop_assert_eq!(decoded.entries().len(), c.entries.len());
        }
        // Import into a fresh cache, twice.
        let cache = ManifestCache::new(root.join(format!("c{}", c.entries.len())));
        let _ = std::fs::remove_dir_all(cache.root());
        let (report, log) = logged(|| {
            no_panic("import_into", || {
                decoded.import_into(&cache, &kernels, c.replace)
            })
        });
        bounded_message("import's warnings", &log)?;
        let report = report?.map_err(|e| TestCaseError::fail(format!("import failed: {e}")))?;
        bounded_message("the import report", &report.to_string())?;
        for _ in &report.imported {
            tally.hit("entries imported");
        }
        for _ in &report.rejected {
            tally.hit("entries rejected");
        }
        for (label, _) in report.imported.iter().chain(&report.kept) {
            bounded_message("an entry's label", label)?;
        }
        for (label, path) in &report.imported {
            let written = std::fs::read(path).map_err(|e| {
                TestCaseError::fail(format!(
                    "{label}: imported to {}, unreadable: {e}",
                    path.display()
                ))
            })?;
            prop_assert!(
                decoded
                    .entries()
                    .iter()
                    .any(|e| e.text().as_bytes() == written),
                "{}: the file written is no entry's text, byte for byte",
                label
            );
        }
        let again = no_panic("a second import", || {
            decoded.import_into(&cache, &kernels, false)
        })?
        .map_err(|e| TestCaseError::fail(format!("a second import failed: {e}")))?;
        // What the first import wrote is trusted where it lies: kept, never written again.
        prop_assert!(
            again.imported.is_empty() && again.kept.len() == report.imported.len(),
            "a second import of the same bundle: {} after {}",
            again,
            report
        );
        // What a runtime looks up: each base's key, in the bundle.
        for base in bases() {
            let (found, log) = logged(|| {
                no_panic("ManifestBundle::load", || {
                    decoded.load(&base.key, base.kernel, &limits())
                })
            });
            bounded_message("the bundle lookup's warnings", &log)?;
            if let Some(m) = found? {
                tally.hit("looked up");
                trusted("ManifestBundle::load", &base.key, base.kernel, &m)?;
            }
        }
        let _ = std::fs::remove_dir_all(cache.root());
        Ok(())
    });
    eprintln!("manifest bundles reached: {}", tally.summary());
    let _ = std::fs::remove_dir_all(&root);
}

/// What the campaign found first: a manifest that holds one bucket number twice (the tuner
/// never writes one) kept the second copy's winner when the first copy's was dropped as
/// untrusted, and `winner()` (the last bucket first) could return it.
#[test]
fn a_bucket_held_twice_loses_its_untrusted_winner_in_both() {
    let base = &bases()[0];
    let mut v = base.json.clone();
    let buckets = v["buckets"].as_array_mut().unwrap();
    buckets[0]["candidates"][0]["verdict"] = "Fail".into();
    let copy = buckets[0].clone();
    buckets.push(copy);
    let root = temp_root("twice");
    let cache = ManifestCache::new(&root);
    let path = cache.key_path(&base.key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let m = cache
        .load(&base.key, base.kernel, &limits())
        .expect("the manifest loads, without the untrusted winners");
    assert!(untrusted_winners(base.kernel, Some(&limits()), &m).is_empty());
    assert!(m
        .buckets
        .iter()
        .filter(|b| b.bucket == 10)
        .all(|b| b.winner.is_none()));
    let _ = std::fs::remove_dir_all(&root);
}
