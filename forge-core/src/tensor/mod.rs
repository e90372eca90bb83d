//! Device-resident tensors: data that stays on the GPU between launches.
//!
//! This module owns [`Element`] (the host types a binding can hold), [`RawTensor`] (a
//! type-erased device buffer with its element type and length) and [`GpuTensor`], its typed
//! wrapper, plus the runtime methods that move data in and out: [`ForgeRuntime::upload`],
//! [`ForgeRuntime::zeros`], [`ForgeRuntime::write`] and [`ForgeRuntime::download`].
//!
//! A tensor's bytes count against the runtime's capacity for as long as it lives; dropping
//! it gives them back. Writes are ordered after launches already recorded, and a download
//! submits pending launches together with its copy, in one submission.

use crate::buffers::{align_up, Reservation, COPY_ALIGN};
use crate::context::{error_scope, error_text};
use crate::dispatch::{Pending, STAGING_USAGE};
use crate::error::{ForgeError, Result};
use crate::kernel::{ElemType, ScalarType};
use crate::ForgeRuntime;
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

const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// A device buffer with its element type and length, as kernels bind it.
#[derive(Debug)]
pub struct RawTensor {
    buffer: wgpu::Buffer,
    elem: ElemType,
    len: usize,
    bytes: u64,
    _reservation: Reservation,
}

impl RawTensor {
    /// The wgpu buffer. Its size is [`RawTensor::bytes`] rounded up to whole words.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
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

    /// The type-erased tensor, as [`ForgeRuntime::launch_tensors`] takes it.
    pub fn raw(&self) -> &RawTensor {
        &self.raw
    }
}

impl ForgeRuntime {
    /// Reserves budget and creates a tensor buffer, optionally filled through a mapping.
    fn create_tensor(
        &mut self,
        elem: ElemType,
        len: usize,
        init: Option<&[u8]>,
        what: &'static str,
    ) -> Result<RawTensor> {
        if len == 0 {
            return Err(ForgeError::EmptyWork {
                kernel: what,
                what: "a tensor of length 0".into(),
            });
        }
        let bytes = (len as u64).saturating_mul(elem.size() as u64);
        let size = align_up(bytes, COPY_ALIGN);
        if size > self.limits.max_buffer_size {
            return Err(ForgeError::BindingTooLarge {
                kernel: what,
                arg: "tensor",
                bytes: size,
                limit_name: "max_buffer_size",
                limit: self.limits.max_buffer_size,
            });
        }
        self.check_lost()?;
        let reservation = self.pool.reserve_evicting(size, &|| {
            format!("{what}: a tensor of {len} `{}`", elem.wgsl())
        })?;
        let device = self.device.clone();
        let (buffer, err) = error_scope(&device, || {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forge tensor"),
                size,
                usage: TENSOR_USAGE,
                mapped_at_creation: init.is_some(),
            });
            if let Some(data) = init {
                match buffer.get_mapped_range_mut(..) {
                    Ok(mut view) => {
                        view.slice(..data.len()).copy_from_slice(data);
                        view.slice(data.len()..).fill(0);
                    }
                    Err(e) => tracing::error!(error = %e, "mapping a new tensor failed"),
                }
                buffer.unmap();
            }
            buffer
        });
        if let Some(e) = err {
            return Err(self.explain(ForgeError::Gpu {
                context: "creating a tensor",
                message: error_text(&e),
            }));
        }
        self.stats.buffers_created += 1;
        Ok(RawTensor {
            buffer,
            elem,
            len,
            bytes,
            _reservation: reservation,
        })
    }

    /// Copies `data` to a new device tensor.
    ///
    /// Errors: an empty slice ([`ForgeError::EmptyWork`]), more than the adapter's
    /// `max_buffer_size` ([`ForgeError::BindingTooLarge`]), more than the capacity left
    /// ([`ForgeError::CapacityExceeded`]).
    pub fn upload<T: Element>(&mut self, data: &[T]) -> Result<GpuTensor<T>> {
        let raw = self.create_tensor(
            T::ELEM,
            data.len(),
            Some(bytemuck::cast_slice(data)),
            "upload",
        )?;
        Ok(GpuTensor {
            raw,
            _t: PhantomData,
        })
    }

    /// A new device tensor of `len` zeroed elements.
    pub fn zeros<T: Element>(&mut self, len: usize) -> Result<GpuTensor<T>> {
        // wgpu zero-initialises new buffers.
        let raw = self.create_tensor(T::ELEM, len, None, "zeros")?;
        Ok(GpuTensor {
            raw,
            _t: PhantomData,
        })
    }

    /// Overwrites a tensor with `data`, which must have the tensor's length. The write
    /// lands after every launch already recorded and before any recorded later.
    pub fn write<T: Element>(&mut self, tensor: &GpuTensor<T>, data: &[T]) -> Result<()> {
        if data.len() != tensor.len() {
            return Err(ForgeError::InvalidArgument {
                kernel: "write",
                message: format!(
                    "the tensor has {} elements, but {} were given",
                    tensor.len(),
                    data.len()
                ),
            });
        }
        self.check_lost()?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let size = tensor.raw.buffer.size();
        let device = self.device.clone();
        let queue = &self.queue;
        let pending = &mut self.pending;
        let ((), err) = error_scope(&device, || match pending {
            // `queue.write_buffer` would run before the pending launches at submission, so
            // behind them the write travels as a copy in the same encoder.
            Some(p) => {
                let staging = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("forge write staging"),
                    size,
                    usage: wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: true,
                });
                if let Ok(mut view) = staging.get_mapped_range_mut(..) {
                    view.slice(..bytes.len()).copy_from_slice(bytes);
                }
                staging.unmap();
                p.encoder
                    .copy_buffer_to_buffer(&staging, 0, &tensor.raw.buffer, 0, size);
            }
            None => crate::dispatch::write_padded(queue, &tensor.raw.buffer, bytes, COPY_ALIGN),
        });
        match err {
            Some(e) => Err(self.explain(ForgeError::Gpu {
                context: "writing a tensor",
                message: error_text(&e),
            })),
            None => Ok(()),
        }
    }

    /// Records setting every byte of a tensor to zero, ordered after the launches already
    /// recorded and before those recorded later; it is submitted with them.
    ///
    /// ```
    /// let mut rt = forge_core::ForgeRuntime::new(1 << 20, None).unwrap();
    /// let t = rt.upload(&[1u32, 2, 3]).unwrap();
    /// rt.clear(&t).unwrap();
    /// assert_eq!(rt.download(&t).unwrap(), vec![0, 0, 0]);
    /// ```
    pub fn clear<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<()> {
        self.check_lost()?;
        let device = self.device.clone();
        let pending = self.pending.get_or_insert_with(|| Pending::new(&device));
        let ((), err) = error_scope(&device, || {
            pending.encoder.clear_buffer(&tensor.raw.buffer, 0, None);
        });
        match err {
            Some(e) => Err(self.explain(ForgeError::Gpu {
                context: "clearing a tensor",
                message: error_text(&e),
            })),
            None => Ok(()),
        }
    }

    /// Copies a tensor back to the host. Pending launches are submitted together with the
    /// copy: one submission and one readback.
    pub fn download<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<Vec<T>> {
        if tensor.raw.elem != T::ELEM {
            return Err(ForgeError::InvalidArgument {
                kernel: "download",
                message: format!(
                    "the tensor holds `{}`, not `{}`",
                    tensor.raw.elem.wgsl(),
                    T::ELEM.wgsl()
                ),
            });
        }
        let len = tensor.raw.bytes as usize;
        self.download_raw(&tensor.raw, |bytes| {
            bytemuck::pod_collect_to_vec::<u8, T>(&bytes[..len])
        })
    }

    /// Copies a type-erased tensor back to the host and hands its bytes (exactly
    /// [`RawTensor::bytes`] of them) to `read`.
    pub fn download_raw<R>(
        &mut self,
        tensor: &RawTensor,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.check_lost()?;
        let size = tensor.buffer.size();
        let bytes = tensor.bytes as usize;
        let max_buffer = self.limits.max_buffer_size;
        let staging = self
            .pool
            .acquire(&self.device, size, STAGING_USAGE, max_buffer, &|| {
                "download".to_string()
            })?;
        let device = self.device.clone();
        // The copy goes behind any pending launches, in their encoder: one submission.
        let pending = self.pending.get_or_insert_with(|| Pending::new(&device));
        let ((), err) = error_scope(&device, || {
            pending
                .encoder
                .copy_buffer_to_buffer(&tensor.buffer, 0, staging.buffer(), 0, size);
        });
        if let Some(e) = err {
            return Err(self.explain(ForgeError::Gpu {
                context: "downloading a tensor",
                message: error_text(&e),
            }));
        }
        self.flush()?;
        let out = self.read_staging(staging.buffer(), size, |data| read(&data[..bytes]))?;
        self.pool.release(staging);
        Ok(out)
    }
}
