//! Writing files atomically: the manifest cache and `forge emit` both replace files that
//! other processes may be reading. Layer 1 (values and plumbing: it needs only the error).
//!
//! [`write_atomically`] writes a temporary file beside the destination (same directory, so
//! the same file system), syncs it, and renames it over the destination: a reader sees the
//! old file or the new one, never a part, and concurrent writers leave one whole file (the
//! last rename wins).
//!
//! [`FileLock`] serialises read-modify-write cycles between processes (two tuners merging
//! their buckets into one manifest): an atomic rename keeps each file whole, the lock keeps
//! one writer from replacing what another has just merged.

use crate::error::{ForgeError, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Distinguishes the temporary files of one process's threads.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes`, atomically. The parent directory must exist. Errors name
/// the file and the step that failed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("forge-doc-files-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("out.txt");
/// forge_core::files::write_atomically(&path, b"one").unwrap();
/// forge_core::files::write_atomically(&path, b"two").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"two");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |what: &str, p: &Path, source| ForgeError::Io {
        context: format!("{what} `{}`", p.display()),
        source,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| {
            io(
                "writing",
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"),
            )
        })?;
    // Hidden, and unique per process, thread and moment, so racing writers never share one.
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}.{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("writing", &tmp, e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io("renaming a temporary file to", path, e));
    }
    Ok(())
}

/// An exclusive lock between processes: a file created with `create_new` (atomic on every
/// local file system), removed when the lock is dropped.
///
/// A lock file older than [`FileLock::STALE`] is taken to be left by a process that died
/// holding it, and is broken.
#[derive(Debug)]
pub struct FileLock {
    path: PathBuf,
}

impl FileLock {
    /// How old a lock file must be before it counts as abandoned. Holders keep it for one
    /// read and one write of a small file.
    pub const STALE: Duration = Duration::from_secs(30);

    /// Takes the lock at `path`, waiting up to `wait` for another holder to release it.
    /// The parent directory must exist. Errors: the lock cannot be created, or it is still
    /// held after `wait`; both name the file.
    pub fn acquire(path: &Path, wait: Duration) -> Result<FileLock> {
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => {
                    return Ok(FileLock {
                        path: path.to_path_buf(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok());
                    if age.is_some_and(|a| a > Self::STALE) {
                        tracing::warn!(path = %path.display(), "breaking an abandoned lock");
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    if start.elapsed() >= wait {
                        return Err(ForgeError::Io {
                            context: format!(
                                "waiting for the lock `{}` (another process holds it; remove \
                                 the file if none is running)",
                                path.display()
                            ),
                            source: std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("still held after {:.1} s", wait.as_secs_f64()),
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    return Err(ForgeError::Io {
                        context: format!("creating the lock `{}`", path.display()),
                        source: e,
                    })
                }
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "forge-files-{tag}-{}-{}",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_lock_excludes_a_second_holder_until_dropped() {
        let dir = scratch("lock");
        let path = dir.join(".m.json.lock");
        let first = FileLock::acquire(&path, Duration::ZERO).unwrap();
        let err = FileLock::acquire(&path, Duration::from_millis(20)).unwrap_err();
        assert!(err.to_string().contains(".m.json.lock"), "{err}");
        drop(first);
        assert!(!path.exists());
        let _again = FileLock::acquire(&path, Duration::ZERO).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn threads_under_the_lock_never_interleave() {
        let dir = scratch("count");
        let (lock, counter) = (dir.join(".c.lock"), dir.join("c"));
        std::fs::write(&counter, "0").unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let _held = FileLock::acquire(&lock, Duration::from_secs(20)).unwrap();
                        let n: u32 = std::fs::read_to_string(&counter).unwrap().parse().unwrap();
                        write_atomically(&counter, (n + 1).to_string().as_bytes()).unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read_to_string(&counter).unwrap(), "200");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_abandoned_lock_is_broken() {
        let dir = scratch("stale");
        let path = dir.join(".s.lock");
        let f = std::fs::File::create(&path).unwrap();
        let old = std::time::SystemTime::now() - FileLock::STALE - Duration::from_secs(5);
        f.set_modified(old).unwrap();
        drop(f);
        let _held = FileLock::acquire(&path, Duration::ZERO).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
