//! Issue 19, cases 5 to 9 at the library's level: what `forge_core::files` and the manifest
//! cache do with what the user owns. The same cases through the `forge` binary are in
//! `forge-cli/tests/cli_files.rs`.
//!
//! - Case 5: `write_atomically` replaces only a writable regular file of one link, keeping
//!   its mode, and refuses (leaving it as it was) a device, a FIFO, a symbolic link, a
//!   directory, a read-only file and a hard-linked one.
//! - Case 6: the cache never follows a link inside itself, and `clear` removes only its
//!   own manifests and temporary files.
//! - Case 7: reads are of regular files only, capped ([`MAX_MANIFEST_BYTES`]): a link to
//!   `/dev/zero`, a FIFO and a huge file are unusable manifests, at once.
//! - Case 8: the merge lock is an OS advisory lock: 16 threads x 300 locked
//!   read-increment-writes lose nothing; a holder killed with SIGKILL releases it; a lock
//!   file with a future mtime or a dangling link in its place never blocks.
//! - Case 9: manifest paths are one-to-one in kernel names (non-ASCII, `<`, `>`, `,`).

#![cfg(unix)]

use forge_core::files::{read_bounded, write_atomically, FileLock, ReadRefusal};
use forge_core::kernel::KernelId;
use forge_core::manifest::{ManifestCache, ManifestKey, MAX_MANIFEST_BYTES};
use forge_core::{Backend, ForgeError, Schedule};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir =
        std::env::temp_dir().join(format!("forge-files-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils) runs")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

fn refused(r: forge_core::Result<()>, what: &str) -> String {
    match r {
        Err(ForgeError::RefusedPath { path, reason }) => {
            assert!(!path.is_empty() && !reason.is_empty());
            reason
        }
        other => panic!("{what}: {other:?}"),
    }
}

// ---- case 5: what write_atomically replaces ---------------------------------------------

#[test]
fn only_a_writable_regular_file_of_one_link_is_replaced_and_it_keeps_its_mode() {
    let dir = scratch("write");
    // A regular file of mode 600 is replaced and stays 600.
    let private = dir.join("private.wgsl");
    std::fs::write(&private, "old").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    write_atomically(&private, b"new").unwrap();
    assert_eq!(std::fs::read(&private).unwrap(), b"new");
    let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    // Where nothing is, a file is made.
    write_atomically(&dir.join("fresh"), b"x").unwrap();

    // A symbolic link: neither it nor its target changes.
    let target = dir.join("target");
    std::fs::write(&target, "target").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let why = refused(write_atomically(&link, b"x"), "a symlink");
    assert!(why.contains("symbolic link"), "{why}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"target");
    // A dangling link is refused too, and nothing is created at its target.
    let dangling = dir.join("dangling");
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    refused(write_atomically(&dangling, b"x"), "a dangling symlink");
    assert!(!dir.join("nowhere").exists());

    // A FIFO: refused without blocking, and still a FIFO.
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let why = refused(write_atomically(&fifo, b"x"), "a FIFO");
    assert!(why.contains("FIFO"), "{why}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    // A read-only file.
    let ro = dir.join("ro");
    std::fs::write(&ro, "keep").unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let why = refused(write_atomically(&ro, b"x"), "a read-only file");
    assert!(why.contains("read-only"), "{why}");
    assert_eq!(std::fs::read(&ro).unwrap(), b"keep");

    // A file with another hard link: both names keep the old contents.
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::write(&a, "shared").unwrap();
    std::fs::hard_link(&a, &b).unwrap();
    let why = refused(write_atomically(&a, b"x"), "a hard link");
    assert!(why.contains("hard links"), "{why}");
    assert_eq!(std::fs::read(&a).unwrap(), b"shared");
    assert_eq!(std::fs::metadata(&b).unwrap().nlink(), 2);

    // A directory, and a device (`/dev/null`, which as root a rename would replace).
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    refused(write_atomically(&sub, b"x"), "a directory");
    assert!(sub.is_dir());
    let why = refused(write_atomically(Path::new("/dev/null"), b"x"), "/dev/null");
    assert!(why.contains("device"), "{why}");
    let null = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(null.file_type().is_char_device());

    // No temporary file is left behind by any refusal.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o644)).ok();
    std::fs::remove_dir_all(&dir).ok();
}

// ---- case 7: bounded reads ----------------------------------------------------------------

#[test]
fn reads_are_of_regular_files_only_and_capped() {
    let dir = scratch("read");
    let start = Instant::now();
    // A link to /dev/zero was read until memory ran out.
    let zero = dir.join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    assert!(matches!(
        read_bounded(&zero, 1 << 20),
        Err(ReadRefusal::Refused(_))
    ));
    // /dev/zero itself, by its own path.
    assert!(matches!(
        read_bounded(Path::new("/dev/zero"), 1 << 20),
        Err(ReadRefusal::Refused(_))
    ));
    // A FIFO with no writer hung the reader forever.
    let fifo = dir.join("fifo.json");
    mkfifo(&fifo);
    assert!(matches!(
        read_bounded(&fifo, 1 << 20),
        Err(ReadRefusal::Refused(_))
    ));
    // A (sparse) file past the cap is not read.
    let big = dir.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_MANIFEST_BYTES + 1)
        .unwrap();
    match read_bounded(&big, MAX_MANIFEST_BYTES) {
        Err(ReadRefusal::Refused(why)) => assert!(why.contains("limit"), "{why}"),
        other => panic!("{other:?}"),
    }
    let small = dir.join("small.json");
    std::fs::write(&small, b"{}").unwrap();
    assert_eq!(read_bounded(&small, 2).unwrap(), b"{}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );

    // Through the cache: each is an unusable entry, listed at once.
    let cache = ManifestCache::new(&dir);
    let topo = dir.join("ab".repeat(32));
    std::fs::create_dir(&topo).unwrap();
    std::os::unix::fs::symlink("/dev/zero", topo.join("z-000000000000.json")).unwrap();
    mkfifo(&topo.join("f-000000000000.json"));
    let entries = cache.list().unwrap();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e.manifest.is_err()), "{entries:?}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    std::fs::remove_dir_all(&dir).ok();
}

// ---- case 6: links and strangers inside the cache ---------------------------------------

fn key(name: &'static str, topology: &str) -> ManifestKey {
    ManifestKey::new(KernelId::new(name, "source"), topology, Backend::Wgsl)
}

#[test]
fn the_cache_never_follows_a_link_and_clears_only_its_own_files() {
    let dir = scratch("cache");
    let elsewhere = scratch("elsewhere");
    std::fs::write(elsewhere.join("precious.json"), "{\"mine\": true}").unwrap();
    let cache = ManifestCache::new(&dir);

    // A topology directory that is a link to the user's directory.
    let linked_topo = "cd".repeat(32);
    std::os::unix::fs::symlink(&elsewhere, dir.join(&linked_topo)).unwrap();
    // `store` (what `forge tune` does) refuses to write through it.
    let m = key("k", &linked_topo).manifest("adapter", Schedule::with_workgroup(64));
    assert!(matches!(
        cache.store(&m),
        Err(ForgeError::RefusedPath { .. })
    ));
    // A real topology directory with one manifest, a stranger's JSON and a linked JSON.
    let topo = "ef".repeat(32);
    let stored = cache
        .store(&key("k", &topo).manifest("adapter", Schedule::with_workgroup(64)))
        .unwrap();
    let real = dir.join(&topo);
    std::fs::write(real.join("notes.json"), "[1, 2]").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("precious.json"), real.join("ln.json")).unwrap();
    // The listing sees the topology directory itself only.
    let listed: Vec<PathBuf> = cache.list().unwrap().into_iter().map(|e| e.path).collect();
    assert!(listed.iter().all(|p| p.starts_with(&real)), "{listed:?}");

    assert_eq!(cache.clear().unwrap(), 1);
    assert!(!stored.exists());
    // What is not the cache's own stays: the stranger, the link, and what it points to.
    assert_eq!(
        std::fs::read_to_string(real.join("notes.json")).unwrap(),
        "[1, 2]"
    );
    assert!(std::fs::symlink_metadata(real.join("ln.json")).is_ok());
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("precious.json")).unwrap(),
        "{\"mine\": true}"
    );
    assert!(std::fs::symlink_metadata(dir.join(&linked_topo))
        .unwrap()
        .file_type()
        .is_symlink());
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&elsewhere).ok();
}

// ---- case 8: the lock -------------------------------------------------------------------

/// 16 threads x 300 rounds, each round a locked read, increment and atomic write of one
/// counter through the cache's merge lock: every increment survives.
#[test]
fn sixteen_threads_merging_under_the_lock_lose_nothing() {
    let dir = scratch("lock");
    let cache = ManifestCache::new(&dir);
    let topo = "12".repeat(32);
    let k = key("counter", &topo);
    let counter = dir.join(&topo).join("counter");
    std::fs::create_dir_all(counter.parent().unwrap()).unwrap();
    std::fs::write(&counter, "0").unwrap();
    let (threads, rounds) = (16, 300);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..rounds {
                    cache
                        .with_lock(&k, || {
                            let n: u32 =
                                std::fs::read_to_string(&counter).unwrap().parse().unwrap();
                            write_atomically(&counter, (n + 1).to_string().as_bytes()).unwrap();
                        })
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap(),
        (threads * rounds).to_string()
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_lock_is_released_by_the_kernel_and_never_goes_stale() {
    let dir = scratch("stale");
    let path = dir.join(".k.lock");
    // Another process holds it (util-linux's `flock`, the same flock(2) lock): a short
    // wait fails naming the file.
    // `--no-fork`: the holder is the process killed below, not a child that inherits it.
    let mut holder = std::process::Command::new("flock")
        .arg("--no-fork")
        .arg(&path)
        .args(["sleep", "60"])
        .spawn()
        .expect("flock (util-linux) runs");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match FileLock::acquire(&path, Duration::from_millis(50)) {
            Err(e) => {
                assert!(e.to_string().contains(".k.lock"), "{e}");
                break;
            }
            // `flock` has not taken it yet.
            Ok(l) => drop(l),
        }
        assert!(Instant::now() < deadline, "flock never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Killed while holding it: the kernel releases it at once.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let start = Instant::now();
    let held = FileLock::acquire(&path, Duration::from_secs(5)).unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
    // A second holder in this process waits too: the lock excludes threads as well.
    assert!(FileLock::acquire(&path, Duration::from_millis(20)).is_err());
    drop(held);
    // Dropping never removes the file (a second holder could lock a new file while a
    // first still held the old one).
    assert!(path.exists());

    // A lock file with a future mtime does not block.
    let future = dir.join(".future.lock");
    let f = std::fs::File::create(&future).unwrap();
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(3600 * 24 * 365))
        .unwrap();
    drop(f);
    let _l = FileLock::acquire(&future, Duration::ZERO).unwrap();
    // Nor does a dangling link where the lock file belongs; its target is not created.
    let dangling = dir.join(".dangling.lock");
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    let _l = FileLock::acquire(&dangling, Duration::ZERO).unwrap();
    assert!(!dir.join("nowhere").exists());
    std::fs::remove_dir_all(&dir).ok();
}

// ---- case 9: names ------------------------------------------------------------------------

#[test]
fn manifest_paths_are_one_to_one_in_kernel_names() {
    let cache = ManifestCache::new("/cache");
    let names = [
        "κ",
        "λ",
        "_",
        "%",
        "%CE%BA",
        "scale<f32>",
        "scale<f16>",
        "pair<f32,u32>",
        "pair<f32, u32>",
        "a-b",
        "a_b",
        "a%2Db",
        "a/b",
        "..",
        "",
    ];
    let paths: Vec<PathBuf> = names
        .iter()
        .map(|n| cache.path(&"ab".repeat(32), &KernelId::new(n, "one source")))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        // One component under the topology directory, and never a hidden file.
        assert_eq!(
            p.parent().unwrap(),
            Path::new("/cache").join("ab".repeat(32))
        );
        let file = p.file_name().unwrap().to_str().unwrap();
        assert!(!file.starts_with('.'), "{file}");
        assert!(file.is_ascii(), "{file}");
        for (j, q) in paths.iter().enumerate().skip(i + 1) {
            assert_ne!(p, q, "`{}` and `{}` share a manifest", names[i], names[j]);
        }
    }
}
