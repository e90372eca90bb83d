//! The driver's pipeline cache, persisted: compiled shader binaries kept on disk beside the
//! tuning manifests, so that a second process on the same machine creates its pipelines
//! from them instead of compiling again. Part of the device layer (layer 4).
//!
//! This module owns [`DiskPipelineCache`]: one `wgpu::PipelineCache` per device, loaded
//! from a file when the device opens and written back when new pipelines were created
//! (on [`crate::ForgeRuntime::save_pipeline_cache`], and when the runtime is dropped).
//!
//! - **Where.** `<cache dir>/<topology hash>/pipelines-<key>.bin`, where the key is
//!   wgpu's [`wgpu::util::pipeline_cache_key`] for the adapter (it names the driver and
//!   device the data is valid for). The runtime picks the directory; this module writes
//!   only that one file.
//! - **When.** Only where the device has `Features::PIPELINE_CACHE` (Vulkan) and wgpu has a
//!   key for the adapter; elsewhere nothing is read or written. `FORGE_PIPELINE_CACHE=0`
//!   turns it off.
//! - **Trust.** wgpu asks that the data handed to it came from `PipelineCache::get_data`.
//!   A file on disk may have been truncated or edited, so the file carries a format tag and
//!   a sha256 of the data: a file that fails either check is ignored with a warning (and
//!   replaced at the next save), never handed to the driver. wgpu and the driver check
//!   their own headers on top of this.
//! - **Writes** are atomic ([`crate::files::write_atomically`]) and refuse to replace what
//!   is not a regular file.

use crate::error::Result;
use crate::files::{self, ReadRefusal};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Whether `path` is a pipeline cache file this module wrote: a regular file (not a link)
/// named `pipelines-*.bin` that starts with the format tag. `forge cache clear` removes
/// these and nothing else of the kind.
pub fn is_ours(path: &Path) -> bool {
    use std::io::Read;
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pipelines-") && n.ends_with(".bin"));
    let regular = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file());
    if !named || !regular {
        return false;
    }
    let mut tag = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut tag))
        .is_ok_and(|()| &tag == MAGIC)
}

/// The environment variable that turns the persisted pipeline cache off (`0`, `off` or
/// `false`).
pub const ENV_PIPELINE_CACHE: &str = "FORGE_PIPELINE_CACHE";

/// The first bytes of a cache file: the format, then a version.
const MAGIC: &[u8; 16] = b"forge-pipecache1";
/// The largest file read back: a driver's cache of every built-in at every schedule is a
/// few MiB; anything far past that is not ours.
const MAX_FILE_BYTES: u64 = 512 << 20;

/// Whether `FORGE_PIPELINE_CACHE` leaves the persisted cache on (it is on by default):
/// `0`, `off`, `false` or `no` turn it off, `1`, `on`, `true` or `yes` keep it on, and
/// any other value is an error that names the variable ([`crate::env::switch`]).
pub fn enabled_by_env() -> crate::error::Result<bool> {
    Ok(crate::env::switch(ENV_PIPELINE_CACHE)?.unwrap_or(true))
}

/// A device's pipeline cache and the file it persists to: see the [module docs](self).
#[derive(Debug)]
pub struct DiskPipelineCache {
    path: PathBuf,
    cache: wgpu::PipelineCache,
    /// Bytes of driver data the cache started from (0 when it started empty).
    loaded: usize,
    /// Whether pipelines were created through the cache since it was last saved.
    dirty: bool,
}

impl DiskPipelineCache {
    /// Opens the cache of `device` persisted in `dir`, or `None` where the device cannot
    /// have one (no `PIPELINE_CACHE` feature, or no key for the adapter).
    pub fn open(device: &wgpu::Device, info: &wgpu::AdapterInfo, dir: &Path) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let key = wgpu::util::pipeline_cache_key(info)?;
        let path = dir.join(format!("pipelines-{key}.bin"));
        let data = read_cache_file(&path);
        let loaded = data.as_ref().map_or(0, Vec::len);
        // SAFETY: `data` is what `get_data` returned for an adapter of this key, written by
        // `save` below: the file's tag and checksum were checked, so it is those bytes
        // unchanged. `fallback` makes wgpu start empty if the driver still refuses them.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("forge pipeline cache"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        tracing::debug!(path = %crate::shown::shown_path(&path), bytes = loaded, "pipeline cache opened");
        Some(DiskPipelineCache {
            path,
            cache,
            loaded,
            dirty: false,
        })
    }

    /// The cache to create pipelines through.
    pub fn cache(&self) -> &wgpu::PipelineCache {
        &self.cache
    }

    /// Notes that pipelines are being created through the cache: the next save writes.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The file the cache persists to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of driver data the cache was loaded with: 0 when there was no usable file.
    pub fn loaded_bytes(&self) -> usize {
        self.loaded
    }

    /// Writes the driver's data to the file if pipelines were created since the last save.
    /// Returns whether it wrote. Errors: the directory cannot be made, or the file cannot be
    /// written or is not ours to replace ([`crate::ForgeError::RefusedPath`]).
    pub fn save(&mut self) -> Result<bool> {
        if !self.dirty {
            return Ok(false);
        }
        let Some(data) = self.cache.get_data() else {
            return Ok(false);
        };
        if let Some(parent) = self.path.parent() {
            files::create_real_dir(parent)?;
        }
        let mut bytes = Vec::with_capacity(MAGIC.len() + 32 + data.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&Sha256::digest(&data));
        bytes.extend_from_slice(&data);
        files::write_atomically(&self.path, &bytes)?;
        self.dirty = false;
        tracing::debug!(path = %crate::shown::shown_path(&self.path), bytes = data.len(), "pipeline cache saved");
        Ok(true)
    }
}

impl Drop for DiskPipelineCache {
    fn drop(&mut self) {
        if let Err(e) = self.save() {
            tracing::warn!(path = %crate::shown::shown_path(&self.path), error = %e, "the pipeline cache was not saved");
        }
    }
}

/// The driver data in a cache file, or `None` (with a warning for anything but a missing
/// file) when there is none to trust.
fn read_cache_file(path: &Path) -> Option<Vec<u8>> {
    let bytes = match files::read_bounded(path, MAX_FILE_BYTES) {
        Ok(b) => b,
        Err(ReadRefusal::Missing) => return None,
        Err(ReadRefusal::Refused(why)) => {
            tracing::warn!(path = %crate::shown::shown_path(path), "pipeline cache ignored: {why}");
            return None;
        }
        Err(ReadRefusal::Io(e)) => {
            tracing::warn!(path = %crate::shown::shown_path(path), error = %e, "pipeline cache ignored: it could not be read");
            return None;
        }
    };
    match decode(&bytes) {
        Ok(data) => Some(data.to_vec()),
        Err(why) => {
            tracing::warn!(path = %crate::shown::shown_path(path), "pipeline cache ignored: {why}");
            None
        }
    }
}

/// The driver data of a cache file's bytes, after its tag and checksum are checked.
fn decode(bytes: &[u8]) -> std::result::Result<&[u8], &'static str> {
    let header = MAGIC.len() + 32;
    if bytes.len() < header || &bytes[..MAGIC.len()] != MAGIC {
        return Err("it is not a forge pipeline cache of this version");
    }
    let (sum, data) = bytes[MAGIC.len()..].split_at(32);
    if Sha256::digest(data).as_slice() != sum {
        return Err("its checksum does not match its data (truncated or edited)");
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(data: &[u8]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&Sha256::digest(data));
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn decode_accepts_only_intact_files() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let good = encode(&data);
        assert_eq!(decode(&good), Ok(data.as_slice()));
        // Truncated, a flipped data byte, a flipped checksum byte, another tag, too short.
        assert!(decode(&good[..good.len() - 1]).is_err());
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(decode(&flipped).is_err());
        let mut sum = good.clone();
        sum[MAGIC.len()] ^= 0x80;
        assert!(decode(&sum).is_err());
        let mut tag = good.clone();
        tag[0] = b'x';
        assert!(decode(&tag).is_err());
        assert!(decode(&good[..20]).is_err());
        assert_eq!(decode(&encode(&[])), Ok(&[][..]));
    }
}
