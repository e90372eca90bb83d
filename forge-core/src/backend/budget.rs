//! The memory budget (`capacity_bytes`) every device allocates against, and what it
//! counts. Part of the backend seam (layer 3).
//!
//! [`MemoryBudget`] counts the bytes of every live allocation a device made for the
//! runtime: pooled buffers, idle or leased, and the memory behind [`crate::GpuTensor`]s.
//! Each allocation holds a [`Reservation`] that gives its bytes back when it is dropped,
//! so the count never drifts, whatever path a call leaves by.

use crate::error::{ForgeError, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counters that show what the runtime did, for tests and diagnostics. Each device keeps
/// its own, in these terms ([`crate::backend::Device::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Compute pipelines (on CUDA: modules) created.
    pub pipelines_compiled: u64,
    /// Queue submissions (on CUDA: synchronisations).
    pub submissions: u64,
    /// Buffer readbacks (maps for reading; on CUDA: copies to the host).
    pub readbacks: u64,
    /// Buffers created: pool misses and tensors.
    pub buffers_created: u64,
    /// Buffers reused from the pool.
    pub buffers_reused: u64,
    /// Compute dispatches recorded (on CUDA: launches).
    pub dispatches: u64,
    /// Bytes of device buffers alive now (pooled, leased and tensors), against the capacity.
    pub bytes_in_use: u64,
    /// Bind groups created for calls on pooled buffers (the rest came from the cache).
    pub bind_groups_created: u64,
}

/// Bytes held by live device allocations, against the runtime's capacity.
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    capacity: u64,
    in_use: Arc<AtomicU64>,
}

impl MemoryBudget {
    /// A budget of `capacity` bytes, none in use.
    pub fn new(capacity: u64) -> Self {
        MemoryBudget {
            capacity,
            in_use: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes currently reserved.
    pub fn in_use(&self) -> u64 {
        self.in_use.load(Ordering::Acquire)
    }

    /// Reserves `bytes`, or says why not. `what` names the allocation in the error.
    pub fn reserve(&self, bytes: u64, what: impl FnOnce() -> String) -> Result<Reservation> {
        let mut current = self.in_use.load(Ordering::Acquire);
        loop {
            let next = match current.checked_add(bytes) {
                Some(n) if n <= self.capacity => n,
                _ => {
                    return Err(ForgeError::CapacityExceeded {
                        what: what(),
                        requested: bytes,
                        capacity: self.capacity,
                        in_use: current,
                    })
                }
            };
            match self.in_use.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Ok(Reservation {
                        bytes,
                        in_use: Arc::clone(&self.in_use),
                    })
                }
                Err(actual) => current = actual,
            }
        }
    }
}

/// Bytes held against a [`MemoryBudget`]; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    bytes: u64,
    in_use: Arc<AtomicU64>,
}

impl Reservation {
    /// The reserved bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.in_use.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_reserves_and_releases() {
        let budget = MemoryBudget::new(100);
        let a = budget.reserve(60, || "a".into()).expect("fits");
        assert_eq!(budget.in_use(), 60);
        let err = budget.reserve(50, || "b".into()).expect_err("over");
        match err {
            ForgeError::CapacityExceeded {
                what,
                requested,
                capacity,
                in_use,
            } => {
                assert_eq!(
                    (what.as_str(), requested, capacity, in_use),
                    ("b", 50, 100, 60)
                );
            }
            other => panic!("unexpected {other}"),
        }
        drop(a);
        assert_eq!(budget.in_use(), 0);
        assert!(budget.reserve(u64::MAX, || "huge".into()).is_err());
    }
}
