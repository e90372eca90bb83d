//! Writing files atomically: the manifest cache and `forge emit` both replace files that
//! other processes may be reading.
//!
//! [`write_atomically`] writes a temporary file beside the destination (same directory, so
//! the same file system), syncs it, and renames it over the destination: a reader sees the
//! old file or the new one, never a part, and concurrent writers leave one whole file (the
//! last rename wins).

use crate::error::{ForgeError, Result};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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
