//! The handles that cross the seam: memory ([`Memory`]), a compiled kernel ([`Compiled`]),
//! launches bound ahead of time ([`Prepared`]) and timestamp slots ([`Stamps`]). Part of
//! the backend seam (layer 3).
//!
//! Each holds one backend's own object behind a trait object, with the id of the device
//! that made it. The runtime passes handles back to that device and never looks inside;
//! the device takes its object back out ([`Memory::raw`], [`Handle::raw`]) and refuses a
//! handle of another device or backend with an error ([`foreign`]), never a panic. A pooled
//! allocation goes back to its pool whole ([`Memory::into_raw`]), so leasing it again
//! allocates nothing.

use crate::error::ForgeError;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A backend's object behind a handle: any `'static` value with `Debug` (and `Send +
/// Sync`, except in a browser, where wgpu's objects are neither).
///
/// A `Box` or an `Arc` of one is an `Object` too: call [`Object::as_any`] on the object
/// itself (`(*boxed).as_any()`), not on its box, or the box is what downcasts.
pub trait Object: Any + fmt::Debug + wgpu::WasmNotSendSync {
    /// The object, to downcast.
    fn as_any(&self) -> &dyn Any;
    /// The boxed object, to downcast by value.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

impl<T: Any + fmt::Debug + wgpu::WasmNotSendSync> Object for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A backend's memory object: what [`Memory`] holds.
pub trait RawMemory: Object {
    /// Whether `other` is the same memory (a tensor's aliasing check asks): two handles
    /// over one buffer are.
    fn same_memory(&self, other: &dyn RawMemory) -> bool;
    /// The wgpu buffer the memory is, on wgpu.
    fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        None
    }
}

/// The error for a handle that is not the device's own: made by another device, or by
/// another backend. The runtime checks a tensor's owner before it gets this far, so it
/// names a bug, not the user's input.
#[cold]
pub fn foreign(what: &'static str) -> ForgeError {
    ForgeError::InvalidArgument {
        kernel: what,
        message: "a handle made by another device reached this one".into(),
    }
}

/// Memory on a device: a buffer of one backend, and its size in bytes (at least what was
/// asked for, whole words). Dropping it frees it (a pooled one goes back to its device's
/// pool through [`crate::backend::Device::release`] instead).
#[derive(Debug)]
pub struct Memory {
    device: u64,
    bytes: u64,
    raw: Box<dyn RawMemory>,
}

impl Memory {
    /// `raw` as memory of `bytes` bytes on the device numbered `device`.
    pub fn new(device: u64, bytes: u64, raw: Box<dyn RawMemory>) -> Memory {
        Memory { device, bytes, raw }
    }

    /// The memory's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The id of the device that made the memory ([`crate::backend::Device::id`]).
    pub fn device_id(&self) -> u64 {
        self.device
    }

    /// Whether `other` is the same memory.
    pub fn same_memory(&self, other: &Memory) -> bool {
        self.device == other.device && self.raw.same_memory(&*other.raw)
    }

    /// The wgpu buffer the memory is, on wgpu.
    pub fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        self.raw.wgpu_buffer()
    }

    /// The backend's object, if it is a `T`.
    pub fn raw<T: Any>(&self) -> Option<&T> {
        (*self.raw).as_any().downcast_ref()
    }

    /// The backend's object, by value, if it is a `T` (as a pool takes its memory back);
    /// `None`, the memory freed, otherwise.
    pub fn into_raw<T: Any>(self) -> Option<Box<T>> {
        self.raw.into_any().downcast::<T>().ok()
    }
}

/// A device's object behind the seam, other than memory: a compiled kernel
/// ([`Compiled`]), launches bound ahead of time ([`Prepared`]) or timestamp slots
/// ([`Stamps`]). Cheap to clone: clones share the object.
#[derive(Clone, Debug)]
pub struct Handle {
    device: u64,
    raw: Arc<dyn Object>,
}

impl Handle {
    /// `raw` as an object of the device numbered `device`.
    pub fn new(device: u64, raw: Arc<dyn Object>) -> Handle {
        Handle { device, raw }
    }

    /// The id of the device that made the object.
    pub fn device_id(&self) -> u64 {
        self.device
    }

    /// The backend's object, if it is a `T`.
    pub fn raw<T: Any>(&self) -> Option<&T> {
        (*self.raw).as_any().downcast_ref()
    }
}

/// A kernel compiled for one schedule on one device ([`crate::backend::Device::compile`]),
/// the device's cached object.
pub type Compiled = Handle;

/// Launches of one kernel bound ahead of time to several sets of memory (timing's input
/// sets), for [`crate::backend::Command::Dispatch`]: binding once keeps the work between
/// timed dispatches to the dispatch itself. It refers to the memory it was prepared on,
/// which must outlive it; hand it back with [`crate::backend::Device::retire`].
pub type Prepared = Handle;

/// Timestamp slots on a device ([`crate::backend::Device::stamps`]): launches and markers
/// write them ([`crate::backend::Command::Dispatch`], [`crate::backend::Command::Stamp`]),
/// and [`crate::backend::Device::read_stamps`] reads them back as durations.
pub type Stamps = Handle;

/// The wgpu objects behind a runtime on wgpu ([`crate::ForgeRuntime::wgpu`]): to record the
/// application's own work on the runtime's device, next to the kernels'.
#[derive(Clone, Copy, Debug)]
pub struct WgpuParts<'a> {
    /// The adapter the device was opened on.
    pub adapter: &'a wgpu::Adapter,
    /// The device.
    pub device: &'a wgpu::Device,
    /// The device's queue.
    pub queue: &'a wgpu::Queue,
}
