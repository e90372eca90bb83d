//! Issue 35, items 4 to 6, through the `forge` binary run as CI runs it: stderr and stdout
//! are pipes, so indicatif's progress bar is hidden.
//!
//! - Item 4: `forge auto-tune-all` says on stderr why a kernel could not be tuned (its
//!   errors went through `ProgressBar::println`, which prints nothing while the bar is
//!   hidden); `forge auto-tune-all` and `forge tune` skip a kernel the adapter cannot run
//!   (cooperative matrices on lavapipe: `gemm_f16`, `attention`) with its reason, and
//!   exit 0 when nothing else failed.
//! - Item 5: a `FORGE_*` variable whose value is not UTF-8 is an error that names it (exit
//!   status 2, as a bad value in UTF-8 is), never a silent fallback to the default.
//! - Item 6: what the user typed, set or wrote into a file comes back in a message escaped
//!   (no raw control character reaches the terminal) and cut: a message grows by at most
//!   a few hundred characters, however long the input.

#![cfg(unix)]

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use wgsl_forge::prelude::*;

/// How much longer a message may get for an input 100,000 characters long than for one
/// of a few characters: the shown part of the input (about 200 characters) and the note
/// of its length, twice (a bad `--schedule` is quoted whole, then the part that is bad),
/// with room to spare; a few hundred characters, far below the input's own length.
const MAX_GROWTH: usize = 600;

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "forge-cli-messages-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `forge args...` with `env` set (and no `FORGE_*` variable of the caller's), stdin
/// closed and both outputs piped: no terminal anywhere, as in CI.
fn forge_env(args: &[&OsStr], env: &[(&str, &OsStr)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_forge"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("FORGE_") {
            c.env_remove(&k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the forge binary")
}

fn forge(args: &[&str]) -> Output {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    forge_env(&args, &[])
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Neither output holds a control character other than a newline (or a tab a table may
/// hold), nor a panic.
fn clean(out: &Output, what: &str) {
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let raw = text
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t');
        assert!(raw.is_none(), "{what}: a raw {raw:?} on {name}:\n{text}");
        assert!(!text.contains("panicked"), "{what}: {text}");
    }
    assert_ne!(out.status.code(), Some(101), "{what}: {}", stderr(out));
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

fn kernel(name: &str) -> &'static dyn Kernel {
    wgsl_forge::kernels::registry::builtin()
        .into_iter()
        .find(|k| k.name() == name)
        .unwrap_or_else(|| panic!("no built-in `{name}`"))
}

/// Why this machine's adapter cannot run `name` (lavapipe: no cooperative matrices), as the
/// library says it.
fn cannot_run(name: &str) -> Option<String> {
    ForgeRuntime::new(64 << 20, None)
        .unwrap_or_else(|e| panic!("a GPU adapter is required (lavapipe in CI): {e}"))
        .cannot_run(kernel(name))
}

// ---- item 4: progress-bar messages, and kernels the adapter cannot run ---------------------

/// A kernel that fails to tune (no problem fits a runtime of 0 bytes) is named on stderr
/// with the reason, though stderr is a pipe and the progress bar is hidden.
#[test]
fn auto_tune_all_says_why_a_kernel_failed_when_the_bar_is_hidden() {
    let cache = temp_dir("fail");
    let out = forge(&[
        "--capacity-mib",
        "0",
        "--cache-dir",
        p(&cache),
        "auto-tune-all",
        "axpy",
    ]);
    clean(&out, "auto-tune-all at capacity 0");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error: tuning `axpy`:") && err.contains("the runtime's capacity is 0 bytes"),
        "{err}"
    );
    assert!(
        err.contains("1 of 1 kernels could not be tuned: axpy"),
        "{err}"
    );
    std::fs::remove_dir_all(&cache).ok();
}

/// Kernels the adapter cannot run are skipped with the library's reason, the others are
/// tuned, and the command succeeds.
#[test]
fn auto_tune_all_skips_kernels_the_adapter_cannot_run() {
    let skipped: Vec<(&str, String)> = ["gemm_f16", "attention"]
        .into_iter()
        .filter_map(|k| cannot_run(k).map(|why| (k, why)))
        .collect();
    if skipped.is_empty() {
        eprintln!("this adapter runs gemm_f16 and attention: nothing to skip here");
        return;
    }
    let cache = temp_dir("skip");
    let mut args = vec!["--cache-dir", p(&cache), "auto-tune-all", "axpy"];
    args.extend(skipped.iter().map(|(k, _)| *k));
    let out = forge(&args);
    clean(&out, "auto-tune-all with kernels it cannot run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for (k, why) in &skipped {
        assert!(text.contains(&format!("skip {k}: {why}")), "{text}");
        assert!(why.contains("EXPERIMENTAL_COOPERATIVE_MATRIX"), "{why}");
    }
    assert!(text.contains("tuned 1 kernels"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("axpy ")),
        "axpy is in the summary: {text}"
    );
    std::fs::remove_dir_all(&cache).ok();
}

/// `forge tune KERNEL` on a kernel the adapter cannot run: skipped with the reason (on
/// stderr under `--json`, whose stdout stays JSON), status 0, nothing written.
#[test]
fn tune_skips_a_kernel_the_adapter_cannot_run() {
    let Some(why) = cannot_run("gemm_f16") else {
        eprintln!("this adapter runs gemm_f16: nothing to skip here");
        return;
    };
    let cache = temp_dir("tune-skip");
    let out = forge(&["--cache-dir", p(&cache), "tune", "gemm_f16"]);
    clean(&out, "tune gemm_f16");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("skip gemm_f16: {why}\n"));
    let out = forge(&["--cache-dir", p(&cache), "tune", "gemm_f16", "--json"]);
    clean(&out, "tune gemm_f16 --json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("skip gemm_f16: {why}")),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(&cache).map_or(0, |d| d.count()),
        0,
        "nothing tuned, nothing written"
    );
    std::fs::remove_dir_all(&cache).ok();
}

/// `forge certify --json` keeps stdout JSON, and says on stderr which kernels it skipped
/// and why (it used to skip them without a word).
#[test]
fn certify_json_says_on_stderr_what_it_skipped() {
    let Some(why) = cannot_run("gemm_f16") else {
        eprintln!("this adapter runs gemm_f16: nothing to skip here");
        return;
    };
    let out = forge(&["certify", "--json", "axpy", "gemm_f16"]);
    clean(&out, "certify --json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(reports.as_array().map(Vec::len), Some(1), "{reports}");
    assert!(
        stderr(&out).contains(&format!("skip gemm_f16: {why}")),
        "{}",
        stderr(&out)
    );
}

// ---- item 5: values that are not UTF-8 ------------------------------------------------------

/// Each `FORGE_*` variable the runtime reads, set to a value that is not UTF-8: status 2,
/// nothing certified, and a message that names the variable and shows the value escaped.
#[test]
fn a_forge_variable_that_is_not_utf8_is_an_error_naming_it() {
    let value = OsStr::from_bytes(b"wg\xffsl\x1b[2J");
    for var in [
        "FORGE_BACKEND",
        "FORGE_ADAPTER",
        "FORGE_TRACE",
        "FORGE_CACHE_DIR",
        "FORGE_PRINT",
        "FORGE_PIPELINE_CACHE",
    ] {
        let out = forge_env(
            &[OsStr::new("certify"), OsStr::new("axpy")],
            &[(var, value)],
        );
        clean(&out, var);
        assert_eq!(out.status.code(), Some(2), "{var}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{var}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "the environment variable `{var}` is not valid UTF-8"
            )) && err.contains("wg\\xffsl\\u{1b}[2J"),
            "{var}: {err}"
        );
    }
    // The cache commands read FORGE_CACHE_DIR themselves.
    let out = forge_env(
        &[OsStr::new("cache"), OsStr::new("ls")],
        &[("FORGE_CACHE_DIR", value)],
    );
    clean(&out, "cache ls");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`FORGE_CACHE_DIR`"),
        "{}",
        stderr(&out)
    );
    // A word the variable does not take is refused by name too, not taken for the default.
    for (var, word) in [("FORGE_PRINT", "stdout"), ("FORGE_PIPELINE_CACHE", "maybe")] {
        let out = forge_env(
            &[OsStr::new("certify"), OsStr::new("axpy")],
            &[(var, OsStr::new(word))],
        );
        clean(&out, var);
        assert_eq!(out.status.code(), Some(2), "{var}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("`{var}` is `{word}`")),
            "{var}: {}",
            stderr(&out)
        );
    }
}

// ---- item 6: long and escaped input in messages ---------------------------------------------

/// Runs `make(input)` with a short input and a 100,000-character one; the long run's
/// messages may be at most [`MAX_GROWTH`] characters longer, and both runs are clean.
fn bounded(what: &str, make: impl Fn(&str) -> Output) {
    let short = make("q");
    let long = make(&"q".repeat(100_000));
    clean(&short, what);
    clean(&long, what);
    assert_eq!(
        short.status.code(),
        long.status.code(),
        "{what}: {}",
        stderr(&long)
    );
    for (name, s, l) in [
        ("stderr", &short.stderr, &long.stderr),
        ("stdout", &short.stdout, &long.stdout),
    ] {
        assert!(
            l.len() <= s.len() + MAX_GROWTH,
            "{what}: {name} grew from {} to {} bytes:\n{}",
            s.len(),
            l.len(),
            String::from_utf8_lossy(&l[..l.len().min(2000)])
        );
    }
}

#[test]
fn long_environment_values_are_cut_in_messages() {
    for var in [
        "FORGE_BACKEND",
        "FORGE_ADAPTER",
        "FORGE_PRINT",
        "FORGE_PIPELINE_CACHE",
    ] {
        bounded(var, |v| {
            forge_env(
                &[OsStr::new("certify"), OsStr::new("axpy")],
                &[(var, OsStr::new(v))],
            )
        });
    }
    // A path: a file that cannot be created under a folder that does not exist.
    let dir = temp_dir("long-env");
    bounded("FORGE_TRACE", |v| {
        let path = dir.join(v).join("trace.json");
        forge_env(
            &[OsStr::new("certify"), OsStr::new("axpy")],
            &[("FORGE_TRACE", path.as_os_str())],
        )
    });
    bounded("FORGE_CACHE_DIR", |v| {
        let path = dir.join(v);
        forge_env(
            &[OsStr::new("cache"), OsStr::new("ls")],
            &[("FORGE_CACHE_DIR", path.as_os_str())],
        )
    });
    std::fs::remove_dir_all(&dir).ok();
}

/// The command line of a case, for a given input.
type ArgsOf = Box<dyn Fn(&str) -> Vec<String>>;

#[test]
fn long_arguments_are_cut_in_messages() {
    let cases: Vec<(&str, ArgsOf)> = vec![
        (
            "kernel name",
            Box::new(|v| vec!["emit".into(), v.into(), "--backend".into(), "wgsl".into()]),
        ),
        (
            "--backend",
            Box::new(|v| vec!["emit".into(), "gemv".into(), "--backend".into(), v.into()]),
        ),
        (
            "--schedule",
            Box::new(|v| {
                vec![
                    "emit".into(),
                    "gemv".into(),
                    "--backend".into(),
                    "wgsl".into(),
                    "--schedule".into(),
                    format!("wg={v}"),
                ]
            }),
        ),
        (
            "--schedule key",
            Box::new(|v| {
                vec![
                    "emit".into(),
                    "gemv".into(),
                    "--backend".into(),
                    "wgsl".into(),
                    "--schedule".into(),
                    format!("{v}=1"),
                ]
            }),
        ),
        (
            "--problem",
            Box::new(|v| {
                vec![
                    "tune".into(),
                    "axpy".into(),
                    "--problem".into(),
                    format!("a=1,n={v}"),
                ]
            }),
        ),
        (
            "--problem name",
            Box::new(|v| {
                vec![
                    "run".into(),
                    "axpy".into(),
                    "--problem".into(),
                    format!("{v}=1"),
                ]
            }),
        ),
        (
            "--adapter",
            Box::new(|v| {
                vec![
                    "--adapter".into(),
                    v.into(),
                    "certify".into(),
                    "axpy".into(),
                ]
            }),
        ),
        (
            "--seed (clap)",
            Box::new(|v| vec!["certify".into(), "--seed".into(), v.into()]),
        ),
        ("a subcommand (clap)", Box::new(|v| vec![v.into()])),
        (
            "--arch",
            Box::new(|v| {
                vec![
                    "emit".into(),
                    "gemv".into(),
                    "--backend".into(),
                    "ptx".into(),
                    "--arch".into(),
                    v.into(),
                ]
            }),
        ),
        (
            "cache import FILE",
            Box::new(|v| {
                vec![
                    "--cache-dir".into(),
                    "/nonexistent-forge-cache".into(),
                    "cache".into(),
                    "import".into(),
                    format!("/nonexistent/{v}"),
                ]
            }),
        ),
        (
            "emit -o",
            Box::new(|v| {
                vec![
                    "emit".into(),
                    "gemv".into(),
                    "--backend".into(),
                    "wgsl".into(),
                    "-o".into(),
                    format!("/nonexistent/{v}.wgsl"),
                ]
            }),
        ),
    ];
    for (what, args) in &cases {
        bounded(what, |v| {
            let a: Vec<OsString> = args(v).into_iter().map(OsString::from).collect();
            let a: Vec<&OsStr> = a.iter().map(OsString::as_os_str).collect();
            forge_env(&a, &[])
        });
    }
}

/// A cache folder with an escape sequence in its name: printed escaped, never raw.
#[test]
fn paths_are_escaped_where_they_are_printed() {
    let dir = temp_dir("escape");
    let cache = dir.join("cache\u{1b}[2J\u{7}");
    for args in [vec!["cache", "ls"], vec!["cache", "clear"]] {
        let a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let out = forge_env(&a, &[("FORGE_CACHE_DIR", cache.as_os_str())]);
        clean(&out, &args.join(" "));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stdout(&out).contains("cache\\u{1b}[2J\\u{7}"),
            "{}",
            stdout(&out)
        );
    }
    // And as `--cache-dir`, through a tune that writes there.
    let out = forge(&[
        "--cache-dir",
        p(&cache),
        "tune",
        "axpy",
        "--problem",
        "a=0.5,n=64",
    ]);
    clean(&out, "tune");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("manifest: ") && stdout(&out).contains("cache\\u{1b}[2J\\u{7}"),
        "{}",
        stdout(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A bundle whose entries hold long and escaped strings (its checksum right, so that it is
/// read): every rejected entry is named escaped and cut.
#[test]
fn bundle_contents_are_escaped_and_cut_in_messages() {
    use wgsl_forge::manifest::bundle::{BundleEntry, ManifestBundle};
    let dir = temp_dir("bundle");
    let long = format!("\u{1b}[2J{}\u{202e}", "k".repeat(100_000));
    let mut bundle = ManifestBundle::new();
    // Filed under a long folder name, for a long kernel, holding text that is no manifest.
    bundle.push(BundleEntry::new(long.clone(), long.clone(), long.clone()));
    // A manifest whose kernel is long, filed under a real topology.
    let manifest = serde_json::json!({
        "kernel": long, "kernel_hash": "ab".repeat(32), "topology": "cd".repeat(32),
        "adapter": long, "backend": long, "crate_version": long,
        "default_schedule": {"workgroup": 64, "items": 1, "vector": 1},
        "buckets": []
    });
    bundle.push(BundleEntry::new(
        "cd".repeat(32),
        long.clone(),
        manifest.to_string(),
    ));
    // A schedule whose knob name is no identifier.
    let knob = serde_json::json!({
        "kernel": "axpy", "kernel_hash": "ab".repeat(32), "topology": "cd".repeat(32),
        "adapter": "a", "backend": "wgsl", "crate_version": "0",
        "default_schedule": {"workgroup": 64, "items": 1, "vector": 1, "knobs": {"\u{1b}[2J": 1}},
        "buckets": []
    });
    bundle.push(BundleEntry::new("cd".repeat(32), "axpy", knob.to_string()));
    let file = dir.join("long.bundle");
    bundle.write(&file).expect("bundle written");
    let out = forge(&[
        "--cache-dir",
        p(&dir.join("cache")),
        "cache",
        "import",
        p(&file),
    ]);
    clean(&out, "cache import");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("rejected 3"), "{text}");
    assert!(
        text.lines().all(|l| l.chars().count() < 1000),
        "{}",
        &text[..text.len().min(3000)]
    );
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    assert!(text.contains("bytes in all]"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A manifest in the cache that is not to be trusted is passed over with a warning; its
/// strings (here a long crate version with an escape) come back in the warning cut.
#[test]
fn warnings_about_a_cached_manifest_are_cut() {
    let dir = temp_dir("warn");
    let axpy = kernel("axpy");
    let rt = ForgeRuntime::new(64 << 20, None).expect("an adapter (lavapipe in CI)");
    let key = wgsl_forge::manifest::ManifestKey::new(
        axpy.id(),
        rt.topology_hash(),
        wgsl_forge::Backend::Wgsl,
    );
    drop(rt);
    let cache = wgsl_forge::ManifestCache::new(&dir);
    let mut m = key.manifest("test", axpy.default_schedule());
    m.crate_version = format!("\u{1b}[2J{}", "9".repeat(100_000));
    cache.store(&m).expect("stored");
    let out = forge(&["--cache-dir", p(&dir), "certify", "axpy"]);
    clean(&out, "certify with a stale manifest");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("written by version"), "{err}");
    assert!(err.len() < 2000, "{} bytes: {}", err.len(), &err[..2000]);
    std::fs::remove_dir_all(&dir).ok();
}
