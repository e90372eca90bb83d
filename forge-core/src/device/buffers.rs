//! Buffers: the pool of wgpu buffers that calls reuse. Part of the device layer (layer 4).
//!
//! This module owns [`BufferPool`], which keeps buffers between calls, keyed by (size
//! class, usage), and its [`Lease`]s. A size class rounds a request up by at most a
//! quarter, so a repeated call of the same shape reuses the same buffers. Every buffer
//! counts against the device's [`MemoryBudget`] (the seam's, [`crate::backend::budget`]);
//! when an allocation would go past it, idle buffers are freed first, and only what is
//! still short is an error. A lease is boxed once, when its buffer is made: it crosses the
//! seam as [`crate::backend::Memory`] and comes back to the pool whole, so a call that
//! reuses it allocates nothing.
//!
//! Readback staging buffers (`MAP_READ`) live in host memory and are pooled but not
//! counted against the budget.
//!
//! The pool counts every buffer it lets go ([`BufferPool::frees`]): whatever caches objects
//! that hold pooled buffers (the bind groups of [`super::pipeline::BindGroupCache`]) drops
//! them when that count moves, so a freed buffer's memory is never kept alive behind the
//! budget's back.

use super::{error_scope, error_text};
use crate::backend::RawMemory;
pub use crate::backend::{MemoryBudget, Reservation};
use crate::error::{ForgeError, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::plan::{align_up, COPY_ALIGN};

/// The alignment the runtime uses between regions of one staging buffer.
pub const STAGING_ALIGN: u64 = 256;

/// The size class a request of `bytes` is served from: at least 256 bytes, then the next
/// of 1, 1.25, 1.5 or 1.75 times a power of two. A class is never more than 25% over the
/// request, which keeps pooling cheap against the memory budget.
pub fn size_class(bytes: u64) -> u64 {
    let bytes = align_up(bytes.max(1), COPY_ALIGN);
    if bytes <= 256 {
        return 256;
    }
    let pow = 63 - bytes.leading_zeros() as u64; // floor(log2(bytes)), at least 8 here
    let step = 1u64 << (pow - 2); // a quarter of the power of two
    align_up(bytes, step)
}

/// A buffer taken from the pool. Give it back with [`BufferPool::release`]; dropping it
/// instead frees the buffer (and its reservation), which is always safe. It is the wgpu
/// memory object behind a leased [`crate::backend::Memory`].
#[derive(Debug)]
pub struct Lease {
    buffer: wgpu::Buffer,
    usage: wgpu::BufferUsages,
    _reservation: Option<Reservation>,
    /// What [`Lease::write_tracked`] last wrote, for buffers written only through it.
    contents: Option<Vec<u8>>,
    /// The pool's count of freed buffers, moved when this one is.
    frees: Arc<AtomicU64>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.frees.fetch_add(1, Ordering::AcqRel);
    }
}

impl RawMemory for Lease {
    fn same_memory(&self, other: &dyn RawMemory) -> bool {
        other.wgpu_buffer() == Some(&self.buffer)
    }
    fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        Some(&self.buffer)
    }
}

impl Lease {
    /// Writes `data` at offset 0 (zero-padded to whole words), unless the last write
    /// through this method wrote the same bytes: a call that repeats its `Params` skips
    /// the upload. Only for buffers that nothing else writes (the uniform: shaders only
    /// read it).
    pub fn write_tracked(&mut self, queue: &wgpu::Queue, data: &[u8]) {
        if self.contents.as_deref() == Some(data) {
            return;
        }
        super::write_padded(queue, &self.buffer, data);
        self.contents = Some(data.to_vec());
    }

    /// The wgpu buffer. Its size is the size class, which may exceed what was asked for.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The buffer's full size.
    pub fn size(&self) -> u64 {
        self.buffer.size()
    }
}

/// Whether buffers of this usage count against the memory budget.
fn counts(usage: wgpu::BufferUsages) -> bool {
    !usage.contains(wgpu::BufferUsages::MAP_READ)
}

/// Idle buffers kept per (size, usage) key; more are freed on release.
const MAX_IDLE_PER_KEY: usize = 8;

/// A pool of wgpu buffers keyed by (size class, usage).
#[derive(Debug)]
pub struct BufferPool {
    budget: MemoryBudget,
    /// Boxed: a lease crosses the seam as the box inside a `Memory`, and comes back as it.
    #[allow(clippy::vec_box)]
    idle: HashMap<(u64, wgpu::BufferUsages), Vec<Box<Lease>>>,
    idle_bytes: u64,
    idle_staging_bytes: u64,
    created: u64,
    reused: u64,
    /// Buffers let go so far (each lease's drop counts itself).
    frees: Arc<AtomicU64>,
}

impl BufferPool {
    /// An empty pool that allocates against `budget`.
    pub fn new(budget: MemoryBudget) -> Self {
        BufferPool {
            budget,
            idle: HashMap::new(),
            idle_bytes: 0,
            idle_staging_bytes: 0,
            created: 0,
            reused: 0,
            frees: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many of the pool's buffers have been freed so far: idle ones evicted or
    /// cleared, and leases dropped instead of released.
    pub fn frees(&self) -> u64 {
        self.frees.load(Ordering::Acquire)
    }

    /// The budget the pool allocates against.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Buffers created so far (pool misses).
    pub fn created(&self) -> u64 {
        self.created
    }

    /// Buffers served from the pool so far.
    pub fn reused(&self) -> u64 {
        self.reused
    }

    /// Bytes held by idle pooled buffers that count against the budget.
    pub fn idle_bytes(&self) -> u64 {
        self.idle_bytes
    }

    /// A buffer of at least `bytes` bytes with `usage`. Contents are unspecified: callers
    /// overwrite or clear what they bind. `what` names the allocation in errors.
    pub fn acquire(
        &mut self,
        device: &wgpu::Device,
        bytes: u64,
        usage: wgpu::BufferUsages,
        max_buffer_size: u64,
        what: &dyn Fn() -> String,
    ) -> Result<Box<Lease>> {
        let exact = align_up(bytes.max(1), COPY_ALIGN);
        let class = size_class(exact).min(max_buffer_size.max(exact));
        for size in [class, exact] {
            if let Some(lease) = self.idle.get_mut(&(size, usage)).and_then(Vec::pop) {
                if counts(usage) {
                    self.idle_bytes -= size;
                } else {
                    self.idle_staging_bytes -= size;
                }
                self.reused += 1;
                return Ok(lease);
            }
        }
        // A class buffer if the budget allows; failing that an exact one, so rounding
        // never turns a fitting request into an error.
        let reservation = if counts(usage) {
            match self.reserve_evicting(class, what) {
                Ok(r) => Some((class, r)),
                Err(_) if exact < class => Some((exact, self.reserve_evicting(exact, what)?)),
                Err(e) => return Err(e),
            }
        } else {
            None
        };
        let size = reservation.as_ref().map_or(class, |(s, _)| *s);
        let (buffer, err) = error_scope(device, || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forge pooled buffer"),
                size,
                usage,
                mapped_at_creation: false,
            })
        });
        if let Some(e) = err {
            return Err(ForgeError::Gpu {
                context: "allocating a buffer",
                message: format!("{}: {}", what(), error_text(&e)),
            });
        }
        self.created += 1;
        Ok(Box::new(Lease {
            buffer,
            usage,
            _reservation: reservation.map(|(_, r)| r),
            contents: None,
            frees: Arc::clone(&self.frees),
        }))
    }

    /// Returns a buffer to the pool for later calls.
    pub fn release(&mut self, lease: Box<Lease>) {
        let size = lease.size();
        let counted = counts(lease.usage);
        // Staging buffers are outside the budget; still, never keep more of them idle than
        // the budget's worth.
        if !counted && self.idle_staging_bytes.saturating_add(size) > self.budget.capacity() {
            return;
        }
        let list = self.idle.entry((size, lease.usage)).or_default();
        if list.len() >= MAX_IDLE_PER_KEY {
            return; // dropped: freed, reservation returned
        }
        if counted {
            self.idle_bytes += size;
        } else {
            self.idle_staging_bytes += size;
        }
        list.push(lease);
    }

    /// Frees every idle buffer.
    pub fn clear(&mut self) {
        self.idle.clear();
        self.idle_bytes = 0;
        self.idle_staging_bytes = 0;
    }

    /// Reserves `bytes`, freeing idle buffers while that would help.
    pub fn reserve_evicting(
        &mut self,
        bytes: u64,
        what: &dyn Fn() -> String,
    ) -> Result<Reservation> {
        loop {
            match self.budget.reserve(bytes, what) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    if !self.evict_one() {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Frees the largest idle counted buffer. Returns false when there is none.
    fn evict_one(&mut self) -> bool {
        let key = self
            .idle
            .iter()
            .filter(|((_, usage), list)| counts(*usage) && !list.is_empty())
            .map(|(key, _)| *key)
            .max_by_key(|(size, _)| *size);
        let Some(key) = key else { return false };
        if let Some(lease) = self.idle.get_mut(&key).and_then(Vec::pop) {
            self.idle_bytes -= lease.size();
            drop(lease);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_close_and_monotonic() {
        assert_eq!(size_class(0), 256);
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(256), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1024), 1024);
        assert_eq!(size_class(1025), 1280);
        assert_eq!(size_class(4_000_012), 4_194_304);
        let mut last = 0;
        for bytes in (1..200_000u64).step_by(97) {
            let c = size_class(bytes);
            assert!(c >= bytes && c % 4 == 0, "{bytes} -> {c}");
            assert!(
                c <= 256 || c * 4 <= bytes * 5 + 16,
                "{bytes} -> {c} is over 25%"
            );
            assert!(c >= last);
            last = c;
        }
    }
}
