//! Files the library writes and reads: the manifest cache, `forge emit -o` and `forge tune
//! --plot`. Layer 1 (values and plumbing: it needs only the error).
//!
//! Nothing the user owns is lost through these functions:
//! - [`write_atomically`] replaces only a regular file (or creates one where nothing is),
//!   keeping its permissions. It refuses, with [`ForgeError::RefusedPath`] and without
//!   touching anything, a symbolic link, a device, a FIFO, a socket or a directory, a
//!   read-only file and a file with other hard links (renaming over it would leave those
//!   names with the old contents). It writes a temporary file beside the destination
//!   (same directory, so the same file system), syncs it, and renames it over the
//!   destination: a reader sees the old file or the new one, never a part, and concurrent
//!   writers leave one whole file (the last rename wins).
//! - [`read_bounded`] reads only a regular file, never through a symbolic link, never
//!   blocking on a FIFO, and at most a given number of bytes.
//! - [`FileLock`] serialises read-modify-write cycles between processes (two tuners merging
//!   their buckets into one manifest) with an OS advisory lock (`flock` on Unix, through
//!   the `fs4` crate) on a lock file beside the manifest. The kernel releases it when the
//!   holder exits, however it exits, so no lock is ever stale, and the lock file is never
//!   removed (removing it would let a second holder lock a new file while a first still
//!   holds the old one).
//!
//! A check and the operation after it are two system calls: a path swapped between them
//! by another process of the same user is not guarded against, only everything the
//! library itself could do by mistake.

use crate::error::{ForgeError, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
#[cfg(not(target_arch = "wasm32"))]
use web_time::Instant;

/// Distinguishes the temporary files of one process's threads.
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn io_error(what: &str, p: &Path, source: std::io::Error) -> ForgeError {
    ForgeError::Io {
        context: format!("{what} `{}`", crate::shown::shown_path(p)),
        source,
    }
}

fn refused(path: &Path, reason: impl Into<String>) -> ForgeError {
    ForgeError::RefusedPath {
        path: crate::shown::shown_path(path),
        reason: reason.into(),
    }
}

/// What kind of thing a path names, without following a symbolic link.
fn kind(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_symlink() {
        return "a symbolic link";
    }
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Why `write_atomically` may not replace what is at a path, or `None` when it may.
fn replace_refusal(m: &std::fs::Metadata) -> Option<String> {
    if !m.file_type().is_file() {
        return Some(format!(
            "it is {}; only a regular file is replaced, so nothing was written (write to a \
             new path, or to the file a link points to by that file's own path)",
            kind(m)
        ));
    }
    if m.permissions().readonly() {
        return Some(
            "it is read-only; nothing was written (make it writable first to replace it)".into(),
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if m.nlink() > 1 {
            return Some(format!(
                "it has {} hard links, and replacing it would leave the other names with the \
                 old contents; nothing was written (remove the other links, or write to a new \
                 path)",
                m.nlink()
            ));
        }
    }
    None
}

/// Replaces `path` with `bytes`, atomically, or creates it; see the [module docs](self).
/// The parent directory must exist. A replaced file keeps its permissions.
///
/// Errors: [`ForgeError::RefusedPath`] for what is not a writable regular file of one link
/// (nothing is written then), [`ForgeError::Io`] naming the file and the step that failed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("forge-doc-files-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("out.txt");
/// forge_core::files::write_atomically(&path, b"one").unwrap();
/// forge_core::files::write_atomically(&path, b"two").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"two");
/// // A directory (or a link, a device, a FIFO) is refused and left as it is.
/// assert!(forge_core::files::write_atomically(&dir, b"x").is_err());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| refused(path, "the path names no file; nothing was written"))?;
    let existing = replaceable(path)?;
    // Hidden, and unique per process, thread and moment, so racing writers never share one.
    let tmp = path.with_file_name(temp_name(&name));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        if let Some(perms) = &existing {
            f.set_permissions(perms.clone())?;
        }
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error("writing", &tmp, e));
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error("renaming a temporary file to", path, e));
    }
    Ok(())
}

/// Checks, without writing anything, that [`write_atomically`] may write `path`: nothing is
/// there, or a writable regular file of one link. A command that writes its output last
/// (`forge tune --plot`) calls this first, so a refused path fails before the work.
pub fn check_replaceable(path: &Path) -> Result<()> {
    if path.file_name().is_none() {
        return Err(refused(path, "the path names no file; nothing was written"));
    }
    replaceable(path).map(drop)
}

/// The permissions of the regular file at `path` that may be replaced, `None` when nothing
/// is there, or the refusal.
fn replaceable(path: &Path) -> Result<Option<std::fs::Permissions>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => match replace_refusal(&m) {
            Some(why) => Err(refused(path, why)),
            None => Ok(Some(m.permissions())),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("inspecting", path, e)),
    }
}

/// The name of a temporary file for `name`: `.{name}.{pid}.{counter}.{nanos}.tmp`.
fn temp_name(name: &str) -> String {
    format!(
        ".{name}.{}.{}.{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed),
        web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    )
}

/// Whether `file_name` is a temporary file that [`write_atomically`] made for a file whose
/// name ends with `suffix` (a crash between the write and the rename leaves one behind).
pub fn is_temp_for(file_name: &str, suffix: &str) -> bool {
    let Some(inner) = file_name
        .strip_prefix('.')
        .and_then(|n| n.strip_suffix(".tmp"))
    else {
        return false;
    };
    // `{name}.{pid}.{counter}.{nanos}`: three numbers after the name.
    let mut parts = inner.rsplitn(4, '.');
    let numbers = (0..3).all(|_| {
        parts
            .next()
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    });
    numbers && parts.next().is_some_and(|n| n.ends_with(suffix))
}

/// Why a file could not be read by [`read_bounded`].
#[derive(Debug)]
pub enum ReadRefusal {
    /// Nothing is at the path.
    Missing,
    /// Something is there that is not read: not a regular file, or too large.
    Refused(String),
    /// Reading failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ReadRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadRefusal::Missing => f.write_str("no such file"),
            ReadRefusal::Refused(why) => f.write_str(why),
            ReadRefusal::Io(e) => write!(f, "cannot read it: {e}"),
        }
    }
}

/// Opens `path` for reading without following a final symbolic link or blocking on a FIFO.
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(path)
}

/// The contents of `path`, which must be a regular file of at most `limit` bytes, read
/// without following a symbolic link or blocking on a FIFO.
///
/// ```
/// use forge_core::files::{read_bounded, ReadRefusal};
/// let dir = std::env::temp_dir().join(format!("forge-doc-read-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("m.json"), b"{}").unwrap();
/// assert_eq!(read_bounded(&dir.join("m.json"), 16).unwrap(), b"{}");
/// assert!(matches!(read_bounded(&dir.join("m.json"), 1), Err(ReadRefusal::Refused(_))));
/// assert!(matches!(read_bounded(&dir.join("none"), 16), Err(ReadRefusal::Missing)));
/// assert!(matches!(read_bounded(&dir, 16), Err(ReadRefusal::Refused(_))));
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn read_bounded(path: &Path, limit: u64) -> std::result::Result<Vec<u8>, ReadRefusal> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadRefusal::Missing),
        Err(e) => return Err(ReadRefusal::Io(e)),
    };
    let check = |m: &std::fs::Metadata| {
        if !m.file_type().is_file() {
            return Err(ReadRefusal::Refused(format!(
                "it is {}, not a regular file; it was not read",
                kind(m)
            )));
        }
        if m.len() > limit {
            return Err(ReadRefusal::Refused(format!(
                "it has {} bytes, more than the limit of {limit}; it was not read",
                m.len()
            )));
        }
        Ok(())
    };
    check(&meta)?;
    let file = open_no_follow(path).map_err(ReadRefusal::Io)?;
    // What was opened may have replaced what was inspected: check it again.
    check(&file.metadata().map_err(ReadRefusal::Io)?)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadRefusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadRefusal::Refused(format!(
            "it grew past the limit of {limit} bytes while it was read"
        )));
    }
    Ok(bytes)
}

/// Whether `path` is a directory itself, not a symbolic link to one (nor anything else).
pub fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

/// Creates `dir` and its parents as `create_dir_all` does, then checks that `dir` itself is
/// a directory and not a symbolic link: the cache writes only inside its own directories.
pub fn create_real_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io_error("creating the directory", dir, e))?;
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => Ok(()),
        Ok(m) => Err(refused(
            dir,
            format!(
                "it is {}, not a directory of the cache's own; links inside the cache are never \
                 followed, so nothing was written there (remove it to let the cache recreate it)",
                kind(&m)
            ),
        )),
        Err(e) => Err(io_error("inspecting", dir, e)),
    }
}

/// An exclusive lock between processes and threads: an OS advisory lock on a lock file,
/// held until the `FileLock` is dropped, and released by the kernel if the process dies.
/// See the [module docs](self).
#[derive(Debug)]
pub struct FileLock {
    // Never made in a browser, where `acquire` refuses.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock at `path` (creating the lock file if needed), waiting up to `wait`
    /// for another holder to release it. The parent directory must exist. A symbolic link
    /// at `path` is removed (links in the cache are never followed) and replaced by a lock
    /// file. Errors: anything else that is not a regular file there
    /// ([`ForgeError::RefusedPath`]), the lock file cannot be opened, or the lock is still
    /// held after `wait`; all name the file.
    pub fn acquire(path: &Path, wait: Duration) -> Result<FileLock> {
        #[cfg(target_arch = "wasm32")]
        let locked = {
            let _ = (path, wait);
            Err(ForgeError::NotOnTheWeb {
                what: "a lock file",
                reason: "a page has no file system; keep manifests in memory or in a bundle",
            })
        };
        #[cfg(not(target_arch = "wasm32"))]
        let locked = Self::acquire_native(path, wait);
        locked
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn acquire_native(path: &Path, wait: Duration) -> Result<FileLock> {
        let file = Self::open(path)?;
        let start = Instant::now();
        loop {
            match fs4::FileExt::try_lock(&file) {
                Ok(()) => {
                    return Ok(FileLock {
                        file,
                        path: path.to_path_buf(),
                    })
                }
                Err(fs4::TryLockError::WouldBlock) => {
                    if start.elapsed() >= wait {
                        return Err(ForgeError::Io {
                            context: format!(
                                "waiting for the lock `{}` (another process holds it)",
                                crate::shown::shown_path(path)
                            ),
                            source: std::io::Error::new(
                                std::io::ErrorKind::TimedOut,
                                format!("still held after {:.1} s", wait.as_secs_f64()),
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(fs4::TryLockError::Error(e)) => return Err(io_error("locking", path, e)),
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn open(path: &Path) -> Result<std::fs::File> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                tracing::warn!(path = %crate::shown::shown_path(path), "removing a symbolic link where a lock file belongs");
                std::fs::remove_file(path).map_err(|e| io_error("removing the link", path, e))?;
            }
            Ok(m) if !m.file_type().is_file() => {
                return Err(refused(
                    path,
                    format!("it is {}, where a lock file belongs; remove it", kind(&m)),
                ))
            }
            _ => {}
        }
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        o.open(path)
            .map_err(|e| io_error("opening the lock", path, e))
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first says so.
        #[cfg(not(target_arch = "wasm32"))]
        let _ = fs4::FileExt::unlock(&self.file);
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
        let _again = FileLock::acquire(&path, Duration::ZERO).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn temp_names_are_recognised() {
        let name = temp_name("k-0123.json");
        assert!(is_temp_for(&name, ".json"), "{name}");
        assert!(!is_temp_for(".k.json.tmp", ".json"));
        assert!(!is_temp_for(".k.json.1.2.x.tmp", ".json"));
        assert!(!is_temp_for("k.json", ".json"));
    }
}
