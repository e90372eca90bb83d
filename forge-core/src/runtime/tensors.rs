//! Device tensors in and out: the runtime's methods that make [`GpuTensor`]s, move data
//! through them, and view the application's own buffers as tensors. Part of the runtime
//! (layer 5), written once over the backend seam.
//!
//! Writes are ordered after launches already recorded, and a download submits pending
//! launches together with its copy, in one submission. Every operation touches the
//! tensor's own bytes (padded to whole words) and nothing beyond, which matters for a view
//! over a larger buffer of the application's.

use crate::backend::Command;
use crate::error::{ForgeError, Result};
use crate::kernel::ElemType;
use crate::plan::{align_up, COPY_ALIGN};
use crate::runtime::ForgeRuntime;
use crate::tensor::{Element, GpuTensor, RawTensor};

/// The tensor's bytes padded to whole words: what its operations touch.
fn padded(tensor: &RawTensor) -> u64 {
    align_up(tensor.bytes(), COPY_ALIGN)
}

impl ForgeRuntime {
    /// Fails with [`ForgeError::ForeignTensor`] unless this runtime made `tensor`: each
    /// runtime has its own device objects (wgpu's ids of two instances collide) and orders
    /// its own pending work, so another runtime's tensor would read or write the wrong
    /// memory, or race with that runtime's launches.
    pub(crate) fn check_owner(
        &self,
        what: &'static str,
        arg: &dyn Fn() -> String,
        tensor: &RawTensor,
    ) -> Result<()> {
        if tensor.device_id() == self.id() {
            Ok(())
        } else {
            Err(ForgeError::ForeignTensor {
                what,
                arg: arg(),
                tensor_runtime: tensor.device_id(),
                runtime: self.id(),
            })
        }
    }

    /// Creates a tensor's memory, counted against the budget, optionally filled.
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
        let limit = ("max_buffer_size", self.limits().max_buffer_size);
        let size = crate::plan::check_limit(what, "tensor", align_up(bytes, COPY_ALIGN), limit)?;
        let memory = self.device.create(size, init, &|| {
            format!("{what}: a tensor of {len} `{}`", elem.wgsl())
        })?;
        Ok(RawTensor::new(memory, elem, len))
    }

    /// Copies `data` to a new device tensor.
    ///
    /// Errors: an empty slice ([`ForgeError::EmptyWork`]), more than the adapter's
    /// `max_buffer_size` ([`ForgeError::BindingTooLarge`]), more than the capacity left
    /// ([`ForgeError::CapacityExceeded`]).
    pub fn upload<T: Element>(&mut self, data: &[T]) -> Result<GpuTensor<T>> {
        let traced = self.trace_start();
        let raw = self.create_tensor(
            T::ELEM,
            data.len(),
            Some(bytemuck::cast_slice(data)),
            "upload",
        )?;
        self.trace_transfer("upload", traced, &raw);
        Ok(GpuTensor::from_raw(raw))
    }

    /// A new device tensor of `len` zeroed elements.
    pub fn zeros<T: Element>(&mut self, len: usize) -> Result<GpuTensor<T>> {
        // Every backend's new memory starts zeroed.
        let raw = self.create_tensor(T::ELEM, len, None, "zeros")?;
        Ok(GpuTensor::from_raw(raw))
    }

    /// A tensor of `len` elements of `T` over the first bytes of `buffer`, a buffer the
    /// application made on this runtime's device (see [`ForgeRuntime::from_wgpu`]): kernels
    /// launched on it read and write the application's memory in place, with no copy. The
    /// application keeps its own handle (wgpu buffers are shared handles) and owns the
    /// memory: it does not count against the runtime's capacity.
    ///
    /// The buffer must have `STORAGE` usage, and at least `len * size_of::<T>()` bytes
    /// rounded up to whole words (the view covers whole words). Downloads need
    /// `COPY_SRC`, writes and clears `COPY_DST`, checked when they are asked for.
    ///
    /// Errors: `len == 0` ([`ForgeError::EmptyWork`]), no `STORAGE` usage
    /// ([`ForgeError::BufferUsage`]), too small a buffer ([`ForgeError::BufferTooSmall`]),
    /// a buffer of another device ([`ForgeError::ForeignBuffer`]).
    ///
    /// On a runtime whose backend is not wgpu (CUDA) this is [`ForgeError::ForeignBuffer`].
    ///
    /// ```
    /// let mut rt = forge_core::ForgeRuntime::new(1 << 20, None)?;
    /// let device = rt.wgpu().expect("a wgpu runtime").device.clone();
    /// let buffer = device.create_buffer(&wgpu::BufferDescriptor {
    ///     label: Some("the application's"),
    ///     size: 64,
    ///     usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    ///     mapped_at_creation: false,
    /// });
    /// let t = rt.tensor_from_buffer::<u32>(buffer.clone(), 16)?;
    /// rt.write(&t, &[7; 16])?;
    /// assert_eq!(rt.download(&t)?, vec![7; 16]);
    /// assert!(rt.tensor_from_buffer::<u32>(buffer, 17).is_err()); // 68 bytes do not fit in 64
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn tensor_from_buffer<T: Element>(
        &mut self,
        buffer: wgpu::Buffer,
        len: usize,
    ) -> Result<GpuTensor<T>> {
        const WHAT: &str = "tensor_from_buffer";
        if len == 0 {
            return Err(ForgeError::EmptyWork {
                kernel: WHAT,
                what: "a tensor of length 0".into(),
            });
        }
        if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(ForgeError::BufferUsage {
                what: WHAT,
                have: format!("{:?}", buffer.usage()),
                missing: "STORAGE",
            });
        }
        let needed = align_up(
            (len as u64).saturating_mul(T::ELEM.size() as u64),
            COPY_ALIGN,
        );
        if needed > buffer.size() {
            return Err(ForgeError::BufferTooSmall {
                what: WHAT,
                size: buffer.size(),
                needed,
                len,
                elem: T::ELEM.wgsl(),
            });
        }
        let memory = self.device.import_wgpu_buffer(buffer, needed)?;
        Ok(GpuTensor::from_raw(RawTensor::new(memory, T::ELEM, len)))
    }

    /// Overwrites a tensor with `data`, which must have the tensor's length. The write
    /// lands after every launch already recorded and before any recorded later.
    ///
    /// Errors: a tensor of another runtime ([`ForgeError::ForeignTensor`]), as for every
    /// operation on a tensor; a length other than the tensor's.
    pub fn write<T: Element>(&mut self, tensor: &GpuTensor<T>, data: &[T]) -> Result<()> {
        self.check_owner("write", &|| "the tensor".into(), tensor.raw())?;
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
        let data: &[u8] = bytemuck::cast_slice(data);
        self.device.check_lost()?;
        let to = tensor.raw().memory();
        self.device
            .record("writing a tensor", &[Command::Write { to, data }])
    }

    /// Records setting every element of a tensor to zero, ordered after the launches
    /// already recorded and before those recorded later; it is submitted with them.
    ///
    /// ```
    /// let mut rt = forge_core::ForgeRuntime::new(1 << 20, None).unwrap();
    /// let t = rt.upload(&[1u32, 2, 3]).unwrap();
    /// rt.clear(&t).unwrap();
    /// assert_eq!(rt.download(&t).unwrap(), vec![0, 0, 0]);
    /// ```
    pub fn clear<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<()> {
        self.check_owner("clear", &|| "the tensor".into(), tensor.raw())?;
        self.device.check_lost()?;
        let (to, bytes) = (tensor.raw().memory(), padded(tensor.raw()));
        self.device
            .record("clearing a tensor", &[Command::Clear { to, bytes }])
    }

    /// Copies a tensor back to the host. Pending launches are submitted together with the
    /// copy: one submission and one readback.
    pub fn download<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<Vec<T>> {
        crate::blocking::block_on("a blocking download", self.download_async(tensor))
    }

    /// [`ForgeRuntime::download`], awaited: the form a browser can use.
    pub async fn download_async<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<Vec<T>> {
        if tensor.raw().elem() != T::ELEM {
            return Err(ForgeError::InvalidArgument {
                kernel: "download",
                message: format!(
                    "the tensor holds `{}`, not `{}`",
                    tensor.raw().elem().wgsl(),
                    T::ELEM.wgsl()
                ),
            });
        }
        self.check_owner("download", &|| "the tensor".into(), tensor.raw())?;
        let traced = self.trace_start();
        let mut out = vec![<T as bytemuck::Zeroable>::zeroed(); tensor.len()];
        self.read_tensor(tensor.raw(), bytemuck::cast_slice_mut(&mut out))
            .await?;
        self.trace_transfer("download", traced, tensor.raw());
        Ok(out)
    }

    /// Copies a type-erased tensor back to the host and hands its bytes (exactly
    /// [`RawTensor::bytes`] of them) to `read`.
    pub fn download_raw<R>(
        &mut self,
        tensor: &RawTensor,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        crate::blocking::block_on("a blocking download", self.download_raw_async(tensor, read))
    }

    /// [`ForgeRuntime::download_raw`], awaited.
    pub async fn download_raw_async<R>(
        &mut self,
        tensor: &RawTensor,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        self.check_owner("download", &|| "the tensor".into(), tensor)?;
        let traced = self.trace_start();
        let mut bytes = vec![0u8; tensor.bytes() as usize];
        self.read_tensor(tensor, &mut bytes).await?;
        self.trace_transfer("download", traced, tensor);
        Ok(read(&bytes))
    }

    /// Reads a tensor's bytes into `into`: the copy goes behind any pending launches, in
    /// their submission, and one readback.
    async fn read_tensor(&mut self, tensor: &RawTensor, into: &mut [u8]) -> Result<()> {
        self.device.check_lost()?;
        self.read_checked(&[tensor.memory()], &mut [into]).await
    }

    /// Adds a host event for a transfer of `tensor` that began at `start` (`None`
    /// without a trace).
    fn trace_transfer(
        &self,
        what: &'static str,
        start: Option<web_time::Instant>,
        tensor: &RawTensor,
    ) {
        if let (Some(rec), Some(start)) = (self.recorder(), start) {
            let mut args = serde_json::Map::new();
            args.insert("bytes".into(), tensor.bytes().into());
            args.insert("elem".into(), tensor.elem().wgsl().into());
            rec.host(what, what, start, args);
        }
    }
}
