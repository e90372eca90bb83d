//! The runtime's operations on a CUDA device (the `cuda` feature): launches and tensors,
//! each the CUDA form of a wgpu operation of [`super::launch`] and [`super::tensors`], which
//! branch here at their start. Part of the runtime (layer 4); timing on CUDA is
//! `timing::cuda` (layer 5), built on these.
//!
//! The checks are the wgpu path's own (one [`LaunchPlan`], the same argument, owner,
//! element and aliasing checks), so a bad call fails with the same error on either
//! backend. What differs:
//! - a launch on host data allocates, uploads, launches and reads back (the download
//!   synchronises, and a failed launch is its error, with the kernel's name); `#[out]`
//!   bindings start zeroed, as every allocation does;
//! - a launch on tensors is enqueued on the default stream: the stream orders it, and
//!   the next download (or [`ForgeRuntime::time_calls`]) waits for it.

use super::launch::HostArg;
use super::{Device, ForgeRuntime};
use crate::device::cuda::{CudaGpu, CudaKernel, DeviceMem};
use crate::error::{ForgeError, Result};
use crate::kernel::{HostBuffer, Kernel};
use crate::plan::LaunchPlan;
use crate::schedule::{Schedule, Threads};
use crate::tensor::{Memory, RawTensor};

/// The CUDA device of a runtime the caller found to be on CUDA.
fn device(gpu: &mut Device) -> Result<&mut CudaGpu> {
    match gpu {
        Device::Cuda(g) => Ok(g),
        Device::Wgpu(_) => Err(ForgeError::InvalidArgument {
            kernel: "cuda",
            message: "the runtime runs on wgpu, not CUDA".into(),
        }),
    }
}

impl ForgeRuntime {
    pub(crate) fn cuda_dev(&mut self) -> Result<&mut CudaGpu> {
        device(&mut self.gpu)
    }

    /// Whether launches were enqueued on CUDA since the last synchronisation.
    pub(crate) fn cuda_has_pending(&self) -> bool {
        match &self.gpu {
            Device::Cuda(g) => g.has_pending(),
            Device::Wgpu(_) => false,
        }
    }

    /// [`ForgeRuntime::launch_host`] on CUDA.
    pub(crate) fn cuda_launch_host(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        let name = kernel.name();
        let layout = kernel.layout();
        let plan = self.host_plan(kernel, schedule, params, threads, args)?;
        let gpu = self.cuda_dev()?;
        plan.check_capacity(0, gpu.budget().capacity(), gpu.budget().in_use())?;
        let compiled = gpu.kernel(kernel, schedule)?;
        let mut mems = Vec::with_capacity(layout.len());
        for (b, &size) in layout.iter().zip(&plan.bindings) {
            mems.push(gpu.alloc(size, &|| format!("kernel `{name}`: argument `{}`", b.name))?);
        }
        for (a, mem) in args.iter().zip(&mems) {
            match a {
                HostArg::In(data) => gpu.upload(mem, data)?,
                HostArg::InOut(data) => gpu.upload(mem, data)?,
                HostArg::Out(_) => {}
            }
        }
        launch(
            gpu,
            &compiled,
            &plan,
            schedule,
            &mems.iter().collect::<Vec<_>>(),
        )?;
        let mut outputs = Vec::new();
        for ((b, a), mem) in layout.iter().zip(args.iter_mut()).zip(&mems) {
            match a {
                HostArg::InOut(slice) => gpu.download(mem, slice)?,
                HostArg::Out(n) => {
                    let mut data = vec![0u8; *n as usize];
                    gpu.download(mem, &mut data)?;
                    outputs.push(HostBuffer::from_slice::<u8>(b.elem, &data));
                }
                HostArg::In(_) => {}
            }
        }
        // A kernel with nothing to read back still reports its failure here.
        gpu.sync("running a kernel")?;
        Ok(outputs)
    }

    /// [`ForgeRuntime::launch_tensors`] on CUDA: enqueued, not waited for.
    pub(crate) fn cuda_launch_tensors(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        tensors: &[&RawTensor],
    ) -> Result<()> {
        let name = kernel.name();
        let plan = self.tensors_plan(kernel, schedule, params, threads, tensors)?;
        let mems = tensors
            .iter()
            .map(|t| t.cuda_memory())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ForgeError::InvalidArgument {
                kernel: name,
                message: "a tensor of this runtime is not in CUDA memory".into(),
            })?;
        let gpu = self.cuda_dev()?;
        let compiled = gpu.kernel(kernel, schedule)?;
        launch(gpu, &compiled, &plan, schedule, &mems)
    }

    /// A tensor of `len` elements in CUDA memory (`size` bytes, whole words), filled with
    /// `init` where given (the rest zeroed).
    pub(crate) fn cuda_tensor(
        &mut self,
        elem: crate::kernel::ElemType,
        len: usize,
        size: u64,
        init: Option<&[u8]>,
        what: &'static str,
    ) -> Result<RawTensor> {
        let id = self.id();
        let gpu = self.cuda_dev()?;
        let mem = gpu.alloc(size, &|| {
            format!("{what}: a tensor of {len} `{}`", elem.wgsl())
        })?;
        if let Some(data) = init {
            gpu.upload(&mem, data)?;
        }
        // The allocation holds its own reservation of the budget.
        Ok(RawTensor::in_memory(Memory::Cuda(mem), elem, len, id, None))
    }

    /// [`ForgeRuntime::write`] on CUDA: ordered after the launches enqueued before.
    pub(crate) fn cuda_write(&mut self, tensor: &RawTensor, bytes: &[u8]) -> Result<()> {
        let mem = cuda_mem("write", tensor)?;
        self.cuda_dev()?.upload(mem, bytes)
    }

    /// [`ForgeRuntime::clear`] on CUDA.
    pub(crate) fn cuda_clear(&mut self, tensor: &RawTensor, padded: u64) -> Result<()> {
        let mem = cuda_mem("clear", tensor)?;
        self.cuda_dev()?.zero(mem, padded)
    }

    /// [`ForgeRuntime::download_raw`] on CUDA: waits for the launches enqueued before.
    pub(crate) fn cuda_download<R>(
        &mut self,
        tensor: &RawTensor,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let mem = cuda_mem("download", tensor)?;
        let mut data = vec![0u8; tensor.bytes() as usize];
        self.cuda_dev()?.download(mem, &mut data)?;
        Ok(read(&data))
    }
}

/// The CUDA memory of a tensor of this runtime (checked by its owner id before).
fn cuda_mem<'t>(what: &'static str, tensor: &'t RawTensor) -> Result<&'t DeviceMem> {
    tensor
        .cuda_memory()
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel: what,
            message: "the tensor is not in CUDA memory".into(),
        })
}

/// Enqueues `plan`'s launch of `compiled` on `mems`, one per binding.
fn launch(
    gpu: &mut CudaGpu,
    compiled: &CudaKernel,
    plan: &LaunchPlan,
    schedule: &Schedule,
    mems: &[&DeviceMem],
) -> Result<()> {
    let ptrs: Vec<_> = mems.iter().map(|m| m.ptr()).collect();
    let params = plan.has_params().then_some(&plan.params[..]);
    gpu.launch(
        compiled,
        plan.grid.dispatch,
        schedule.workgroup_shape(),
        &ptrs,
        params,
    )
}
