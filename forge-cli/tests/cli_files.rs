//! Issue 19, cases 5 to 7 and 10, through the `forge` binary run as a user runs it (on the
//! real adapter, lavapipe in CI). The library-level cases, the lock's stress test and the
//! names are in `forge-core/tests/files.rs`.
//!
//! - Case 5: `forge emit -o` and `forge tune --plot` replace only a regular file, keep its
//!   mode, and refuse `/dev/null`, a FIFO, a symbolic link, a read-only file and a hard
//!   link with a named error, leaving each as it was; `-o -` is stdout.
//! - Case 6: `forge cache clear` and `forge tune` never follow a link inside the cache,
//!   and `clear` removes only the cache's own manifests.
//! - Case 7: a manifest that is a link to `/dev/zero`, or a FIFO, is passed over at once by
//!   `forge certify`, `forge tune` and `forge cache ls`.
//! - Case 10: a reader that closes the pipe early ends the command quietly (status 0, no
//!   panic), `/dev/full` is an error, manifest strings are printed escaped and cut, a
//!   problem too large is refused before anything is allocated, bad `--schedule` and
//!   `--problem` values exit 2.
//! - Issue 18, item 5: `forge cache export` and `forge cache import [--replace]` move a
//!   tuned cache as one bundle, byte for byte; a damaged bundle is refused and writes
//!   nothing; stale and unknown manifests are named with their reasons and skipped. The
//!   library-level cases are in `tests/manifest.rs`.

#![cfg(unix)]

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use wgsl_forge::prelude::*;

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "forge-cli-files-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn forge_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_forge"));
    c.env_remove("FORGE_BACKEND").env_remove("FORGE_CACHE_DIR");
    c
}

/// Runs `forge args...` with stdin closed, failing if it takes longer than `limit` (a hang
/// is what some of these inputs once caused).
fn forge_within(limit: Duration, args: &[&str]) -> Output {
    let mut child = forge_cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("forge starts");
    // Read both pipes on threads so a full pipe never stalls the child.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("`forge {}` ran past {limit:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

fn forge(args: &[&str]) -> Output {
    forge_within(Duration::from_secs(300), args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// No panic, no abort: the process exited with a status of its own.
fn no_panic(out: &Output, what: &str) {
    let err = stderr(out);
    assert!(
        !err.contains("panicked") && out.status.code().is_some_and(|c| c != 101),
        "{what}: {:?}\n{err}",
        out.status
    );
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils) runs")
        .success();
    assert!(ok);
}

/// Tunes `axpy` on a small problem into `cache` through the binary, which must succeed:
/// a manifest (and the driver's pipeline cache) to work on.
fn tune_axpy(cache: &Path) {
    let out = forge(&[
        "--cache-dir",
        p(cache),
        "tune",
        "axpy",
        "--problem",
        "a=0.5,n=1000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn topology_hash() -> String {
    ForgeRuntime::new(64 << 20, None)
        .unwrap_or_else(|e| panic!("a GPU adapter is required (lavapipe in CI): {e}"))
        .topology_hash()
}

fn axpy_manifest_name() -> String {
    let axpy: &dyn Kernel = &wgsl_forge::kernels::axpy::axpy::Kernel;
    format!(
        "axpy-{}.json",
        &wgsl_forge::manifest::kernel_hash(axpy)[..12]
    )
}

// ---- case 5: forge emit -o and forge tune --plot -----------------------------------------

/// `forge emit gemv --backend wgsl -o PATH`, which must be refused with status 1 and a
/// message naming the path and why.
fn emit_refused(path: &Path, why: &str) {
    let out = forge(&["emit", "gemv", "--backend", "wgsl", "-o", p(path)]);
    no_panic(&out, "emit");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(p(path)) && err.contains(why), "{err}");
}

#[test]
fn emit_replaces_only_regular_files_and_keeps_their_mode() {
    let dir = temp_dir("emit");
    let gemv: &dyn Kernel = &wgsl_forge::kernels::gemv::gemv::Kernel;
    let wgsl = match wgsl_forge::emit::emit(
        gemv,
        &gemv.default_schedule(),
        wgsl_forge::emit::Target::Wgsl,
    ) {
        Ok(wgsl_forge::emit::Emitted::Text(t)) => t,
        other => panic!("{other:?}"),
    };

    // A regular file of mode 600: replaced, still 600.
    let file = dir.join("gemv.wgsl");
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = forge(&["emit", "gemv", "--backend", "wgsl", "-o", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), wgsl);
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o7777, 0o600);

    // `-o -` is stdout.
    let out = forge(&["emit", "gemv", "--backend", "wgsl", "-o", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), wgsl);
    assert!(!Path::new("-").exists());

    // /dev/null: as root a rename would have made it a regular file.
    emit_refused(Path::new("/dev/null"), "device");
    assert!(std::fs::symlink_metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());

    // A FIFO (refused without blocking on it).
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    emit_refused(&fifo, "FIFO");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // A symbolic link: neither it nor its target changes.
    let target = dir.join("target.wgsl");
    std::fs::write(&target, "target").unwrap();
    let link = dir.join("link.wgsl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    emit_refused(&link, "symbolic link");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "target");

    // A read-only file.
    let ro = dir.join("ro.wgsl");
    std::fs::write(&ro, "keep").unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    emit_refused(&ro, "read-only");
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "keep");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o644)).unwrap();

    // A hard link: both names keep their contents.
    let (a, b) = (dir.join("a.wgsl"), dir.join("b.wgsl"));
    std::fs::write(&a, "shared").unwrap();
    std::fs::hard_link(&a, &b).unwrap();
    emit_refused(&a, "hard links");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "shared");
    assert_eq!(std::fs::metadata(&a).unwrap().nlink(), 2);

    // No temporary file was left by any refusal.
    let tmp: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn tune_plot_refuses_a_link_before_tuning() {
    let dir = temp_dir("plot");
    let target = dir.join("mine.svg");
    std::fs::write(&target, "mine").unwrap();
    let link = dir.join("plot.svg");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = forge(&[
        "--cache-dir",
        p(&dir.join("cache")),
        "tune",
        "axpy",
        "--problem",
        "a=0.5,n=1000",
        "--plot",
        p(&link),
    ]);
    no_panic(&out, "tune --plot");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    // Refused before tuning: nothing was cached either.
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    std::fs::remove_dir_all(&dir).ok();
}

// ---- case 6: links inside the cache --------------------------------------------------------

#[test]
fn cache_clear_and_tune_never_follow_a_link_in_the_cache() {
    let cache = temp_dir("cache");
    let elsewhere = temp_dir("elsewhere");
    std::fs::write(elsewhere.join("precious.json"), "{\"mine\": 1}").unwrap();
    std::fs::write(elsewhere.join(axpy_manifest_name()), "not a manifest").unwrap();
    let topo = topology_hash();
    // This machine's topology directory is a link to the user's directory.
    std::os::unix::fs::symlink(&elsewhere, cache.join(&topo)).unwrap();

    // `forge tune` runs, and refuses to write through the link.
    let out = forge(&[
        "--cache-dir",
        p(&cache),
        "tune",
        "axpy",
        "--problem",
        "a=0.5,n=1000",
    ]);
    no_panic(&out, "tune");
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("manifest NOT written"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join(axpy_manifest_name())).unwrap(),
        "not a manifest"
    );

    // `forge cache clear` removes nothing through the link.
    let out = forge(&["--cache-dir", p(&cache), "cache", "clear"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0 manifests"));
    assert!(elsewhere.join("precious.json").exists());
    assert!(elsewhere.join(axpy_manifest_name()).exists());
    assert!(std::fs::symlink_metadata(cache.join(&topo))
        .unwrap()
        .file_type()
        .is_symlink());

    // With a real directory: tune writes its manifest, clear removes only that, not a
    // stranger's JSON nor a linked one.
    std::fs::remove_file(cache.join(&topo)).unwrap();
    tune_axpy(&cache);
    let real = cache.join(&topo);
    assert!(real.join(axpy_manifest_name()).is_file());
    std::fs::write(real.join("notes.json"), "[]").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("precious.json"), real.join("zz.json")).unwrap();
    let out = forge(&["--cache-dir", p(&cache), "cache", "clear"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 1 manifests"));
    assert!(!real.join(axpy_manifest_name()).exists());
    assert!(real.join("notes.json").exists());
    assert!(std::fs::symlink_metadata(real.join("zz.json")).is_ok());
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("precious.json")).unwrap(),
        "{\"mine\": 1}"
    );
    std::fs::remove_dir_all(&cache).ok();
    std::fs::remove_dir_all(&elsewhere).ok();
}

/// `forge cache clear` also removes the driver's pipeline cache that a run left beside the
/// manifests (a file the runtime wrote, recognised by its format tag), but not a stranger's
/// file of the same name pattern.
#[test]
fn cache_clear_removes_our_pipeline_cache_and_only_ours() {
    let cache = temp_dir("clear-pipelines");
    tune_axpy(&cache);
    let topo = cache.join(topology_hash());
    let pipelines: Vec<_> = std::fs::read_dir(&topo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pipelines-")
        })
        .collect();
    assert_eq!(
        pipelines.len(),
        1,
        "lavapipe has PIPELINE_CACHE: the run saved one"
    );
    let stranger = topo.join("pipelines-not-ours.bin");
    std::fs::write(&stranger, b"some other program's data").unwrap();

    let out = forge(&["--cache-dir", p(&cache), "cache", "clear"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("removed 1 manifests and 1 pipeline caches"),
        "{text}"
    );
    assert!(!pipelines[0].exists());
    assert_eq!(
        std::fs::read(&stranger).unwrap(),
        b"some other program's data"
    );
    let out = forge(&["--cache-dir", p(&cache), "cache", "clear"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 0 manifests and 0"));
    assert!(stranger.exists());
    std::fs::remove_dir_all(&cache).ok();
}

// ---- case 7: reads without bounds ------------------------------------------------------------

#[test]
fn a_manifest_that_is_a_device_or_a_fifo_is_passed_over_at_once() {
    let cache = temp_dir("reads");
    let topo = cache.join(topology_hash());
    std::fs::create_dir_all(&topo).unwrap();
    let manifest = topo.join(axpy_manifest_name());
    let limit = Duration::from_secs(120);

    // A link to /dev/zero was read until memory ran out.
    std::os::unix::fs::symlink("/dev/zero", &manifest).unwrap();
    let out = forge_within(limit, &["--cache-dir", p(&cache), "certify", "axpy"]);
    no_panic(&out, "certify with /dev/zero");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = forge_within(limit, &["--cache-dir", p(&cache), "cache", "ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unreadable"));
    let out = forge_within(
        limit,
        &[
            "--cache-dir",
            p(&cache),
            "tune",
            "axpy",
            "--problem",
            "a=0.5,n=1000",
        ],
    );
    no_panic(&out, "tune with /dev/zero");
    assert!(out.status.success(), "{}", stderr(&out));
    // The link is not replaced (the cache never writes through one) and /dev/zero stays.
    assert!(std::fs::symlink_metadata(&manifest)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata("/dev/zero")
        .unwrap()
        .file_type()
        .is_char_device());

    // A FIFO hung `forge certify` forever.
    std::fs::remove_file(&manifest).unwrap();
    mkfifo(&manifest);
    let out = forge_within(limit, &["--cache-dir", p(&cache), "certify", "axpy"]);
    no_panic(&out, "certify with a FIFO");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = forge_within(limit, &["--cache-dir", p(&cache), "cache", "ls"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&manifest)
        .unwrap()
        .file_type()
        .is_fifo());
    std::fs::remove_dir_all(&cache).ok();
}

// ---- case 10: the CLI's output -------------------------------------------------------------

/// Runs `forge args...` with its stdout a pipe whose reader is already gone, as in
/// `forge list | head -c0`.
fn into_closed_pipe(args: &[&str]) -> Output {
    let mut child = forge_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("forge starts");
    drop(child.stdout.take());
    child.wait_with_output().expect("forge ran")
}

#[test]
fn a_closed_pipe_ends_quietly_and_a_full_disk_is_an_error() {
    let cache = temp_dir("pipe");
    // A manifest to list.
    tune_axpy(&cache);
    for args in [
        vec!["expand", "gemv"],
        vec!["list"],
        vec!["--cache-dir", p(&cache), "cache", "ls"],
        vec!["emit", "gemv", "--backend", "spirv"],
    ] {
        let out = into_closed_pipe(&args);
        no_panic(&out, &args.join(" "));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("stdout"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // `forge list > /dev/full`: an error that says so, not a panic.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = forge_cmd()
        .arg("list")
        .stdout(full)
        .output()
        .expect("forge ran");
    no_panic(&out, "list > /dev/full");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("stdout"), "{}", stderr(&out));
    std::fs::remove_dir_all(&cache).ok();
}

#[test]
fn cache_ls_prints_manifest_strings_escaped_and_cut() {
    let cache = temp_dir("ls");
    tune_axpy(&cache);
    let topo = cache.join(topology_hash());
    let path = topo.join(axpy_manifest_name());
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // A 70,000-character adapter panicked the formatter; escapes moved the terminal.
    m["adapter"] = format!("\u{1b}[2J\u{1b}]0;owned\u{7}{}", "x".repeat(70_000)).into();
    m["kernel"] = "ax\u{1b}[31mpy\u{202e}".into();
    std::fs::write(topo.join("other-000000000000.json"), m.to_string()).unwrap();
    let out = forge(&["--cache-dir", p(&cache), "cache", "ls"]);
    no_panic(&out, "cache ls");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
        "{text}"
    );
    assert!(text.contains("\\u{1b}[31m"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() < 1000), "{text}");
    std::fs::remove_dir_all(&cache).ok();
}

#[test]
fn a_problem_too_large_is_refused_before_it_is_allocated() {
    let start = Instant::now();
    // 70000 x 70000 floats are 19.6 GB: once allocated before any check, and aborted.
    let out = forge_within(
        Duration::from_secs(120),
        &["tune", "gemv", "--problem", "m=70000,n=70000"],
    );
    no_panic(&out, "tune 70000x70000");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("argument `a` needs"),
        "{}",
        stderr(&out)
    );
    assert!(start.elapsed() < Duration::from_secs(120));
}

#[test]
fn bad_schedules_and_problems_are_bad_usage() {
    for args in [
        vec!["emit", "gemv", "--backend", "glsl", "--schedule", "wg=96"],
        vec![
            "emit",
            "gemv",
            "--backend",
            "glsl",
            "--schedule",
            "threads=4",
        ],
        vec!["emit", "gemv", "--backend", "glsl", "--schedule", "wg=x"],
        vec!["tune", "gemv", "--problem", "m=4"],
        vec!["tune", "gemv", "--problem", "m=-1,n=4"],
        vec!["tune", "gemv", "--problem", "q=1"],
    ] {
        let out = forge(&args);
        no_panic(&out, &args.join(" "));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    }
}

// ---- issue 18, item 5: forge cache export and import --------------------------------------

/// `forge --cache-dir CACHE args...`, which must succeed; returns its stdout.
fn forge_ok(cache: &Path, args: &[&str]) -> String {
    let mut all = vec!["--cache-dir", p(cache)];
    all.extend_from_slice(args);
    let out = forge(&all);
    no_panic(&out, &args.join(" "));
    assert!(out.status.success(), "forge {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The manifests under `cache`'s topology folders, by path relative to it, with their
/// bytes (the driver's pipeline cache and the lock files are not manifests).
fn manifests(cache: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = f.path();
            let name = f.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && !name.starts_with('.') {
                let rel = path.strip_prefix(cache).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn cache_export_and_import_move_a_tuned_cache() {
    let dir = temp_dir("bundle");
    let (a, b) = (dir.join("a"), dir.join("b"));
    forge_ok(&a, &["tune", "axpy", "--problem", "a=0.5,n=1000"]);
    let topology = topology_hash();
    assert!(a.join(&topology).join(axpy_manifest_name()).is_file());
    let bundle = dir.join("tuned.bundle");
    let said = forge_ok(&a, &["cache", "export", p(&bundle)]);
    assert!(said.contains("exported 1 manifests"), "{said}");

    let said = forge_ok(&b, &["cache", "import", p(&bundle)]);
    assert!(
        said.contains("imported 1, kept 0 existing, rejected 0"),
        "{said}"
    );
    assert_eq!(
        manifests(&b),
        manifests(&a),
        "the same files, byte for byte"
    );
    // The pipeline cache beside the manifest in `a` is not part of the bundle.
    let in_b: Vec<String> = std::fs::read_dir(b.join(&topology))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(in_b, vec![axpy_manifest_name()]);
    let listed = forge_ok(&b, &["cache", "ls"]);
    assert!(listed.contains("axpy@"), "{listed}");

    // Again: kept; with --replace: written again (here, the same bytes).
    let said = forge_ok(&b, &["cache", "import", p(&bundle)]);
    assert!(
        said.contains("imported 0, kept 1 existing, rejected 0"),
        "{said}"
    );
    let said = forge_ok(&b, &["cache", "import", p(&bundle), "--replace"]);
    assert!(
        said.contains("imported 1, kept 0 existing, rejected 0"),
        "{said}"
    );
    assert_eq!(manifests(&b), manifests(&a));
}

#[test]
fn cache_import_refuses_a_damaged_bundle_and_names_rejected_entries() {
    let dir = temp_dir("bundle-bad");
    let a = dir.join("a");
    forge_ok(&a, &["tune", "axpy", "--problem", "a=0.5,n=1000"]);
    let topology = topology_hash();
    let text = std::fs::read_to_string(a.join(&topology).join(axpy_manifest_name())).unwrap();
    // A stale manifest (another crate version) filed for other hardware, and one for a
    // kernel the built-ins do not have.
    let mut stale: serde_json::Value = serde_json::from_str(&text).unwrap();
    stale["crate_version"] = "0.0.1-old".into();
    stale["topology"] = "ab".repeat(32).into();
    std::fs::create_dir_all(a.join("ab".repeat(32))).unwrap();
    std::fs::write(
        a.join("ab".repeat(32)).join(axpy_manifest_name()),
        serde_json::to_string_pretty(&stale).unwrap(),
    )
    .unwrap();
    let mut unknown: serde_json::Value = serde_json::from_str(&text).unwrap();
    unknown["kernel"] = "not_a_builtin".into();
    let stem = axpy_manifest_name().replacen("axpy", "not_a_builtin", 1);
    std::fs::write(
        a.join(&topology).join(stem),
        serde_json::to_string_pretty(&unknown).unwrap(),
    )
    .unwrap();
    let bundle = dir.join("tuned.bundle");
    let said = forge_ok(&a, &["cache", "export", p(&bundle)]);
    assert!(said.contains("exported 3 manifests"), "{said}");

    let b = dir.join("b");
    let said = forge_ok(&b, &["cache", "import", p(&bundle)]);
    assert!(
        said.contains("imported 1, kept 0 existing, rejected 2"),
        "{said}"
    );
    assert!(said.contains("written by version 0.0.1-old"), "{said}");
    assert!(said.contains("unknown kernel `not_a_builtin`"), "{said}");
    assert_eq!(manifests(&b).len(), 1);

    // One byte changed: refused whole, with status 1, and nothing is written.
    let mut bytes = std::fs::read(&bundle).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
    std::fs::write(&bundle, &bytes).unwrap();
    let c = dir.join("c");
    let out = forge(&["--cache-dir", p(&c), "cache", "import", p(&bundle)]);
    no_panic(&out, "import of a damaged bundle");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: manifest bundle") && err.contains(p(&bundle)),
        "{err}"
    );
    assert!(!c.exists(), "nothing was written");
    // Nor is a bundle written over what is not a regular file.
    let out = forge(&["--cache-dir", p(&a), "cache", "export", "/dev/null"]);
    no_panic(&out, "export to /dev/null");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}
