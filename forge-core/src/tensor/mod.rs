//! Device-resident tensors: data that stays on the GPU between launches. Layer 3 (the
//! backend seam): a tensor is device memory ([`Memory`], of whichever backend) with its
//! element type and length.
//!
//! This module owns [`Element`] (the host types a binding can hold), [`RawTensor`] (type-
//! erased device memory with its element type and length) and [`GpuTensor`], its typed
//! wrapper. The runtime's methods make and move them: `upload`, `zeros`, `write`, `clear`,
//! `download`, and `tensor_from_buffer` over a buffer the application made (see
//! [`crate::runtime`]).
//!
//! A tensor the runtime allocates counts against its capacity for as long as it lives;
//! dropping it gives the bytes back. A tensor over the application's buffer counts nothing:
//! the application owns that memory.

use crate::backend::Memory;
use crate::kernel::{ElemType, ScalarType};
use std::marker::PhantomData;

/// A host element type that can live in a binding.
pub trait Element: bytemuck::Pod {
    /// The element's type as bindings describe it.
    const ELEM: ElemType;
}

/// `Element` for each scalar host type and its vectors (`[T; 2]`, `[T; 4]`).
macro_rules! elements {
    ($($t:ty => $scalar:ident),* $(,)?) => {$(
        impl Element for $t {
            const ELEM: ElemType = ElemType::scalar(ScalarType::$scalar);
        }
        impl Element for [$t; 2] {
            const ELEM: ElemType = ElemType::vector(ScalarType::$scalar, 2);
        }
        impl Element for [$t; 4] {
            const ELEM: ElemType = ElemType::vector(ScalarType::$scalar, 4);
        }
    )*};
}

elements!(f32 => F32, u32 => U32, i32 => I32, half::f16 => F16, f64 => F64);

/// `HVec8`: eight halves, 16 bytes, the one vector of more than four components.
impl Element for [half::f16; 8] {
    const ELEM: ElemType = ElemType::vector(ScalarType::F16, 8);
}

/// Device memory with its element type and length, as kernels bind it.
#[derive(Debug)]
pub struct RawTensor {
    memory: Memory,
    elem: ElemType,
    len: usize,
    bytes: u64,
}

impl RawTensor {
    /// A tensor of `len` elements of `elem` in `memory`. The caller has checked that the
    /// memory holds `len * elem.size()` bytes, padded to whole words. Memory the runtime
    /// allocated holds its share of the budget until the tensor drops.
    pub(crate) fn new(memory: Memory, elem: ElemType, len: usize) -> Self {
        RawTensor {
            memory,
            elem,
            len,
            bytes: len as u64 * elem.size() as u64,
        }
    }

    /// The [`crate::backend::Device::id`] of the device the memory lives on: the id of the
    /// runtime that made the tensor, which alone may use it.
    pub fn device_id(&self) -> u64 {
        self.memory.device_id()
    }

    /// The device memory, as launches bind it.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The wgpu buffer the data lives in (it holds at least [`RawTensor::bytes`] rounded
    /// up to whole words); `None` for a tensor of a backend that is not wgpu.
    pub fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        self.memory.wgpu_buffer()
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// Whether two tensors are the same memory (what aliasing checks compare).
    pub(crate) fn same_memory(&self, other: &RawTensor) -> bool {
        self.memory.same_memory(&other.memory)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a tensor has at least one element (the runtime refuses an empty one).
    pub fn is_empty(&self) -> bool {
        false
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

    /// The wgpu buffer the data lives in, to use it from the application's own passes;
    /// `None` on a runtime whose backend is not wgpu (CUDA).
    ///
    /// ```
    /// let mut rt = forge_core::ForgeRuntime::new(1 << 20, None)?;
    /// let t = rt.upload(&[1u32, 2, 3])?;
    /// let buffer = t.wgpu_buffer().expect("a wgpu runtime's tensor is a wgpu buffer");
    /// assert!(buffer.size() >= 12);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn wgpu_buffer(&self) -> Option<&wgpu::Buffer> {
        self.raw.wgpu_buffer()
    }

    /// Types a raw tensor; the caller has checked that it holds `T`.
    pub(crate) fn from_raw(raw: RawTensor) -> Self {
        GpuTensor {
            raw,
            _t: PhantomData,
        }
    }
}
