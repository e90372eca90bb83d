//! Device-resident tensors: data that stays on the GPU between launches. Layer 3 (the
//! device): a tensor is a device buffer with its element type and length.
//!
//! This module owns [`Element`] (the host types a binding can hold), [`RawTensor`] (a
//! type-erased device buffer with its element type and length) and [`GpuTensor`], its typed
//! wrapper. The runtime's methods make and move them: `upload`, `zeros`, `write`, `clear`,
//! `download`, and `tensor_from_buffer` over a buffer the application made (see
//! [`crate::runtime`]).
//!
//! A tensor the runtime allocates counts against its capacity for as long as it lives;
//! dropping it gives the bytes back. A tensor over the application's buffer counts nothing:
//! the application owns that memory.

use crate::device::buffers::Reservation;
use crate::kernel::{ElemType, ScalarType};
use std::marker::PhantomData;

/// A host element type that can live in a binding.
pub trait Element: bytemuck::Pod {
    /// The element's type as bindings describe it.
    const ELEM: ElemType;
}

const fn vector(scalar: ScalarType, width: u8) -> ElemType {
    ElemType::vector(scalar, width)
}

impl Element for f32 {
    const ELEM: ElemType = ElemType::scalar(ScalarType::F32);
}
impl Element for u32 {
    const ELEM: ElemType = ElemType::scalar(ScalarType::U32);
}
impl Element for i32 {
    const ELEM: ElemType = ElemType::scalar(ScalarType::I32);
}
impl Element for half::f16 {
    const ELEM: ElemType = ElemType::scalar(ScalarType::F16);
}
impl Element for [half::f16; 2] {
    const ELEM: ElemType = vector(ScalarType::F16, 2);
}
impl Element for [half::f16; 4] {
    const ELEM: ElemType = vector(ScalarType::F16, 4);
}
impl Element for f64 {
    const ELEM: ElemType = ElemType::scalar(ScalarType::F64);
}
impl Element for [f64; 2] {
    const ELEM: ElemType = vector(ScalarType::F64, 2);
}
impl Element for [f64; 4] {
    const ELEM: ElemType = vector(ScalarType::F64, 4);
}
impl Element for [f32; 2] {
    const ELEM: ElemType = vector(ScalarType::F32, 2);
}
impl Element for [f32; 4] {
    const ELEM: ElemType = vector(ScalarType::F32, 4);
}
impl Element for [u32; 2] {
    const ELEM: ElemType = vector(ScalarType::U32, 2);
}
impl Element for [u32; 4] {
    const ELEM: ElemType = vector(ScalarType::U32, 4);
}
impl Element for [i32; 2] {
    const ELEM: ElemType = vector(ScalarType::I32, 2);
}
impl Element for [i32; 4] {
    const ELEM: ElemType = vector(ScalarType::I32, 4);
}

/// Where a tensor's bytes live: a wgpu buffer, or (the `cuda` feature) CUDA memory.
#[derive(Debug)]
pub(crate) enum Memory {
    Wgpu(wgpu::Buffer),
    #[cfg(feature = "cuda")]
    Cuda(crate::device::cuda::DeviceMem),
}

/// A device buffer with its element type and length, as kernels bind it.
#[derive(Debug)]
pub struct RawTensor {
    memory: Memory,
    elem: ElemType,
    len: usize,
    bytes: u64,
    device: u64,
    /// The budget the runtime's own tensors hold; `None` over the application's buffer.
    _reservation: Option<Reservation>,
}

impl RawTensor {
    /// A tensor of `len` elements of `elem` in `buffer`, on the device whose
    /// [`crate::device::Gpu::id`] is `device`. The caller has checked that the buffer holds
    /// `len * elem.size()` bytes, padded to whole words.
    pub(crate) fn new(
        buffer: wgpu::Buffer,
        elem: ElemType,
        len: usize,
        device: u64,
        reservation: Option<Reservation>,
    ) -> Self {
        Self::in_memory(Memory::Wgpu(buffer), elem, len, device, reservation)
    }

    /// A tensor in `memory`; see [`RawTensor::new`].
    pub(crate) fn in_memory(
        memory: Memory,
        elem: ElemType,
        len: usize,
        device: u64,
        reservation: Option<Reservation>,
    ) -> Self {
        RawTensor {
            memory,
            elem,
            len,
            bytes: len as u64 * elem.size() as u64,
            device,
            _reservation: reservation,
        }
    }

    /// The [`crate::device::Gpu::id`] of the device the buffer lives on: the id of the
    /// runtime that made the tensor, which alone may use it.
    pub fn device_id(&self) -> u64 {
        self.device
    }

    /// The wgpu buffer. It holds at least [`RawTensor::bytes`] rounded up to whole words.
    ///
    /// # Panics
    /// On a tensor of a CUDA runtime, whose data is CUDA memory
    /// ([`RawTensor::wgpu_buffer`] says which).
    pub fn buffer(&self) -> &wgpu::Buffer {
        match &self.memory {
            Memory::Wgpu(b) => b,
            #[cfg(feature = "cuda")]
            Memory::Cuda(_) => panic!("the tensor lives in CUDA memory, not in a wgpu buffer"),
        }
    }

    /// The wgpu buffer, or `None` for a tensor in CUDA memory.
    pub fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        match &self.memory {
            Memory::Wgpu(b) => Some(b),
            #[cfg(feature = "cuda")]
            Memory::Cuda(_) => None,
        }
    }

    /// The CUDA memory, or `None` for a tensor in a wgpu buffer.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_memory(&self) -> Option<&crate::device::cuda::DeviceMem> {
        match &self.memory {
            Memory::Cuda(m) => Some(m),
            Memory::Wgpu(_) => None,
        }
    }

    /// Whether two tensors are the same memory (what aliasing checks compare).
    pub(crate) fn same_memory(&self, other: &RawTensor) -> bool {
        match (&self.memory, &other.memory) {
            (Memory::Wgpu(a), Memory::Wgpu(b)) => a == b,
            #[cfg(feature = "cuda")]
            (Memory::Cuda(a), Memory::Cuda(b)) => a.ptr() == b.ptr(),
            #[cfg(feature = "cuda")]
            _ => false,
        }
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a tensor has at least one element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of data: `len * elem.size()`.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Typed data that stays on the device.
///
/// Made by the runtime (`upload`, `zeros`), or a view over a buffer the application made
/// (`ForgeRuntime::tensor_from_buffer`), which the kernels then read and write in place.
///
/// ```
/// let mut rt = forge_core::ForgeRuntime::new(1 << 20, None).unwrap();
/// let t = rt.upload(&[1.0f32, 2.0, 3.0]).unwrap();
/// assert_eq!(t.len(), 3);
/// assert_eq!(rt.download(&t).unwrap(), vec![1.0, 2.0, 3.0]);
/// ```
#[derive(Debug)]
pub struct GpuTensor<T: Element> {
    raw: RawTensor,
    _t: PhantomData<fn() -> T>,
}

impl<T: Element> GpuTensor<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.raw.len
    }

    /// Always false: a tensor has at least one element.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The id of the runtime the tensor belongs to ([`crate::ForgeRuntime::id`]): only that
    /// runtime binds, reads and writes it.
    pub fn runtime_id(&self) -> u64 {
        self.raw.device_id()
    }

    /// The type-erased tensor, as `ForgeRuntime::launch_tensors` takes it.
    pub fn raw(&self) -> &RawTensor {
        &self.raw
    }

    /// The wgpu buffer the data lives in, to use it from the application's own passes.
    ///
    /// # Panics
    /// On a tensor of a CUDA runtime ([`crate::ForgeRuntime::is_cuda`]), whose data is CUDA
    /// memory.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.raw.buffer()
    }

    /// Types a raw tensor; the caller has checked that it holds `T`.
    pub(crate) fn from_raw(raw: RawTensor) -> Self {
        GpuTensor {
            raw,
            _t: PhantomData,
        }
    }
}
