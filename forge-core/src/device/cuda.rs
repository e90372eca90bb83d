//! The CUDA device: one NVIDIA GPU driven through the CUDA driver API, the backend seam's
//! second implementation beside wgpu ([`super::Gpu`]). Layer 4 (the devices), behind the
//! `cuda` feature: it implements [`crate::backend::Device`] (layer 3).
//!
//! This module owns [`CudaGpu`]:
//! - **the device:** the primary context of one device ordinal ([`CudaGpu::open`]), its
//!   name, compute capability and driver version, and the same limits and features the
//!   layers above read from a wgpu adapter, filled from CUDA's device attributes, so that
//!   the launch plan, the schedule checks and the topology hash work unchanged;
//! - **memory:** device allocations ([`DeviceMem`], freed when dropped) counted against the
//!   same [`MemoryBudget`] as wgpu buffers, and copies in, out and on the device; a lease
//!   is an allocation of its own (there is no pool), freed when it is given back;
//! - **kernels:** a kernel's CUDA C++ ([`Kernel::cuda`]) compiled by NVRTC to a cubin for
//!   this device's `sm_XY` (machine code, which a driver older than the NVRTC still loads),
//!   loaded with `cuModuleLoadData` and cached per (kernel id, schedule), as wgpu pipelines
//!   are;
//! - **launches** on the legacy default stream, with the bindings' device pointers and the
//!   `fg_Params` struct passed by value, and the synchronisations that report a failed
//!   launch with the names of the kernels in flight;
//! - **events**, which time launches on the GPU ([`Event`]): the seam's timestamps.
//!
//! The seam's commands are enqueued as they come: there is no pending work to submit, and
//! a readback (or a wait) is a synchronisation.
//!
//! Everything runs on the legacy default stream: each operation is ordered after the ones
//! before it, as one wgpu queue orders its submissions, and a plain (synchronous) copy to
//! the host waits for the launches ahead of it. libcuda and libnvrtc are loaded at run time
//! by `cudarc`, which panics when one is missing, so [`CudaGpu::open`] looks for both first
//! and returns [`ForgeError::MissingLibrary`] with a hint instead.

use crate::backend::{
    foreign, Command, Compiled, Device, Identity, Launch, Memory, MemoryBudget, Prepared,
    RawMemory, Reservation, RuntimeStats, Stamps, Wait, What,
};
use crate::error::{ForgeError, Result};
use crate::kernel::{Kernel, KernelId, CUDA_ENTRY_POINT};
use crate::schedule::Schedule;
use crate::target::Backend;
use crate::topology::HardwareProfile;
use cudarc::driver::{result, sys, CudaContext, DriverError};
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where to get libcuda, for the error when it cannot be loaded.
const CUDA_HINT: &str = "the CUDA backend needs the NVIDIA driver's libcuda.so: put the folder that holds it on LD_LIBRARY_PATH (`ldconfig -p | grep libcuda` or `find / -name 'libcuda.so*'` finds it); without an NVIDIA GPU, run on wgpu (leave FORGE_BACKEND unset)";

/// The legacy default stream: every operation of the runtime goes on it, in order.
const STREAM: sys::CUstream = std::ptr::null_mut();

/// A driver error met during `context`, as a [`ForgeError::Gpu`].
fn driver_error(context: &'static str, what: &str, e: DriverError) -> ForgeError {
    ForgeError::Gpu {
        context,
        message: if what.is_empty() {
            format!("CUDA: {e}")
        } else {
            format!("{what}: CUDA: {e}")
        },
    }
}

/// Whether libcuda can be loaded, checked before `cudarc` is asked for it (which panics
/// where it is missing).
pub fn driver_present() -> bool {
    // SAFETY: loading a library by name runs its initialisers; libcuda's are NVIDIA's.
    unsafe { sys::is_culib_present() }
}

/// The number of CUDA devices, or [`ForgeError::MissingLibrary`] without libcuda.
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(ForgeError::MissingLibrary {
            library: "libcuda",
            hint: CUDA_HINT,
        });
    }
    result::init().map_err(|e| driver_error("initialising CUDA", "", e))?;
    let n =
        result::device::get_count().map_err(|e| driver_error("counting CUDA devices", "", e))?;
    Ok(n.max(0) as usize)
}

/// CUDA device `ordinal` (its primary context) as the runtime's device, with a memory
/// budget of `capacity` bytes; see [`CudaGpu::open`].
pub fn open(ordinal: usize, capacity: u64) -> Result<Box<dyn Device>> {
    Ok(Box::new(CudaGpu::open(ordinal, capacity)?))
}

/// Device memory: `bytes` bytes at `ptr`, freed when dropped (after binding the context,
/// which it keeps alive: a tensor may outlive its runtime).
#[derive(Debug)]
pub struct DeviceMem {
    ptr: sys::CUdeviceptr,
    bytes: u64,
    ctx: Arc<CudaContext>,
    _reservation: Option<Reservation>,
    /// Set when a wait of its device timed out: `cuMemFree` would wait for the kernels
    /// given up on, so the memory is left to the context instead.
    abandoned: Arc<AtomicBool>,
}

// SAFETY: a device pointer is an address in the context's memory, valid from any thread
// that binds the context (every use here does); nothing in it is thread-local.
unsafe impl Send for DeviceMem {}
// SAFETY: shared use only reads the address; the copies that use it bind the context.
unsafe impl Sync for DeviceMem {}

impl DeviceMem {
    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// The allocation's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl RawMemory for DeviceMem {
    fn same_memory(&self, other: &dyn RawMemory) -> bool {
        other
            .as_any()
            .downcast_ref::<DeviceMem>()
            .is_some_and(|o| o.ptr == self.ptr)
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        if self.abandoned.load(Ordering::Relaxed) {
            return;
        }
        // cuMemFree waits for the work that uses the memory; an error here (a context
        // already broken by a failed launch) has nobody to go to but the log.
        let freed = self
            .ctx
            .bind_to_thread()
            .and_then(|()| unsafe { result::free_sync(self.ptr) });
        if let Err(e) = freed {
            tracing::warn!(error = %e, bytes = self.bytes, "freeing CUDA memory failed");
        }
    }
}

/// A compiled kernel: its module and the `fg_main` function in it.
#[derive(Debug)]
pub struct CudaKernel {
    name: &'static str,
    module: sys::CUmodule,
    func: sys::CUfunction,
    ctx: Arc<CudaContext>,
    /// The cubin's size, for the trace of what was compiled.
    pub cubin_bytes: usize,
    /// The dynamic shared memory each launch gives a block: the workgroup memory of a
    /// schedule past CUDA's 48 KiB of static shared memory, 0 below it.
    dynamic_shared_bytes: u32,
    /// Set when a wait of its device timed out: unloading the module would wait for the
    /// kernels given up on, so it is left to the context.
    abandoned: Arc<AtomicBool>,
}

// SAFETY: a module and its function are context objects, usable from any thread that binds
// the context; the launches that use them do.
unsafe impl Send for CudaKernel {}
// SAFETY: launching reads the handle only.
unsafe impl Sync for CudaKernel {}

impl CudaKernel {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for CudaKernel {
    fn drop(&mut self) {
        if self.abandoned.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the module was loaded once and is unloaded once, after its last launch
        // was enqueued (the cache drops kernels only with the device).
        in_context(&self.ctx, || unsafe { result::module::unload(self.module) });
    }
}

/// Runs a context object's destruction with its context bound; an error has nobody to go
/// to from a `drop` (the context may be broken by a failed launch already).
fn in_context<E>(ctx: &CudaContext, destroy: impl FnOnce() -> std::result::Result<(), E>) {
    let _ = ctx.bind_to_thread();
    let _ = destroy();
}

/// A CUDA event on the default stream: two of them time the work between their records.
#[derive(Debug)]
pub struct Event {
    raw: sys::CUevent,
    ctx: Arc<CudaContext>,
    /// As a kernel's: after a timeout, nothing of the device is destroyed.
    abandoned: Arc<AtomicBool>,
}

// SAFETY: an event is a context object, usable from any thread that binds the context.
unsafe impl Send for Event {}
// SAFETY: shared use only reads the handle; recording and reading it bind the context.
unsafe impl Sync for Event {}

impl Drop for Event {
    fn drop(&mut self) {
        if self.abandoned.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: created by `cuEventCreate`, destroyed once.
        in_context(&self.ctx, || unsafe { result::event::destroy(self.raw) });
    }
}

/// One CUDA device and what runs on it: see the [module docs](self).
#[derive(Debug)]
pub struct CudaGpu {
    /// Its id, emission (`cuda`), description, limits and features.
    identity: Identity,
    ordinal: usize,
    ctx: Arc<CudaContext>,
    capability: (i32, i32),
    driver_version: i32,
    /// `sm_XY`: what the kernels are compiled for.
    arch: String,
    budget: MemoryBudget,
    kernels: HashMap<(KernelId, Schedule), Arc<CudaKernel>>,
    compiled: u64,
    launches: u64,
    readbacks: u64,
    syncs: u64,
    allocations: u64,
    /// Kernels launched since the last synchronisation: a launch fails asynchronously, and
    /// the error that the next synchronisation meets names these.
    in_flight: Vec<&'static str>,
    /// The bound of every synchronisation ([`Device::set_timeout`]).
    timeout: Option<std::time::Duration>,
    /// Set when a synchronisation outlived the timeout: every later call fails with it.
    timed_out: Option<super::TimedOut>,
    /// Shared with every allocation: set with `timed_out`, so that no free waits.
    abandoned: Arc<AtomicBool>,
}

impl CudaGpu {
    /// Opens device `ordinal` (its primary context) with a memory budget of `capacity`
    /// bytes. Errors: libcuda or libnvrtc missing ([`ForgeError::MissingLibrary`], with a
    /// hint), no such device ([`ForgeError::NoCudaDevice`]), a driver error.
    pub fn open(ordinal: usize, capacity: u64) -> Result<CudaGpu> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(ForgeError::NoCudaDevice {
                index: ordinal,
                detail: match count {
                    0 => "the driver sees no CUDA device".to_string(),
                    n => format!("the driver sees {n} (ordinals 0..{n})"),
                },
            });
        }
        // Kernels are compiled at their first launch; a missing NVRTC is said now.
        crate::emit::nvrtc::version()?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| driver_error("opening a CUDA device", &format!("device {ordinal}"), e))?;
        let open = |what: &'static str| move |e| driver_error("opening a CUDA device", what, e);
        let name = ctx.name().map_err(open("its name"))?;
        let capability = ctx
            .compute_capability()
            .map_err(open("its compute capability"))?;
        let total = ctx.total_mem().map_err(open("its memory"))? as u64;
        let mut driver_version = 0i32;
        // SAFETY: a valid out-pointer.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(open("the driver's version"))?;
        use sys::CUdevice_attribute as A;
        let attr = |a: A| -> Result<u32> {
            ctx.attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(|e| driver_error("opening a CUDA device", "an attribute", e))
        };
        let threads = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        let block = [
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ];
        // What a block may take once it opts in (227 KiB on Hopper): a schedule past the
        // 48 KiB of static shared memory runs with dynamic shared memory.
        let shared = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .ok()
            .filter(|b| *b > 0)
            .map_or_else(
                || attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
                Ok,
            )?;
        let warp = attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?;
        let bus = attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?;
        let mut info = wgpu::AdapterInfo::new(wgpu::DeviceType::DiscreteGpu, wgpu::Backend::Noop);
        info.name = name;
        info.vendor = 0x10de;
        info.device = (capability.0 * 10 + capability.1) as u32;
        info.device_pci_bus_id = format!("{bus:02x}");
        info.driver = "CUDA".into();
        info.driver_info = format!(
            "driver {}.{} (CUDA {driver_version}), sm_{}{}",
            driver_version / 1000,
            (driver_version % 1000) / 10,
            capability.0,
            capability.1
        );
        info.subgroup_min_size = warp;
        info.subgroup_max_size = warp;
        let limits = cuda_limits(threads, block, shared, total);
        // What the CUDA emission can use on this device: f16 from sm_53, cooperative
        // matrices (`mma.sync.m16n8k16` with f16 operands) from sm_80, f64 and warps
        // everywhere; TIMESTAMP_QUERY stands for CUDA events, which time every launch.
        let mut features =
            wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F64 | wgpu::Features::TIMESTAMP_QUERY;
        if capability >= (5, 3) {
            features |= wgpu::Features::SHADER_F16;
        }
        if capability >= (8, 0) {
            features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let arch = format!("sm_{}{}", capability.0, capability.1);
        tracing::debug!(device = %info.name, %arch, driver_version, "CUDA device open");
        Ok(CudaGpu {
            identity: Identity {
                id: super::next_id(),
                emission: Backend::Cuda,
                info,
                limits,
                features,
            },
            ordinal,
            ctx,
            capability,
            driver_version,
            arch,
            budget: MemoryBudget::new(capacity),
            kernels: HashMap::new(),
            compiled: 0,
            launches: 0,
            readbacks: 0,
            syncs: 0,
            allocations: 0,
            in_flight: Vec::new(),
            timeout: None,
            timed_out: None,
            abandoned: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The compute capability, `(9, 0)` on an H100 or H200.
    pub fn capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The driver's CUDA version, `13000` for CUDA 13.0.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// The architecture kernels are compiled for, `sm_90`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    fn bind(&self, context: &'static str) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error(context, "binding the context", e))
    }

    /// `bytes` (at least 4, rounded up to whole words) of device memory, counted against
    /// the budget, zeroed where `zero` says; `what` names it in the error.
    pub fn alloc(
        &mut self,
        bytes: u64,
        zero: bool,
        what: &dyn Fn() -> String,
    ) -> Result<DeviceMem> {
        let size = crate::plan::align_up(bytes.max(4), 4);
        let reservation = self.budget.reserve(size, what)?;
        self.bind("allocating CUDA memory")?;
        let len = usize::try_from(size).map_err(|_| ForgeError::CapacityExceeded {
            what: what(),
            requested: size,
            capacity: self.budget.capacity(),
            in_use: self.budget.in_use(),
        })?;
        // SAFETY: the context is bound; the pointer is freed by `DeviceMem`'s drop.
        let ptr = unsafe { result::malloc_sync(len) }
            .map_err(|e| driver_error("allocating CUDA memory", &what(), e))?;
        let mem = DeviceMem {
            ptr,
            bytes: size,
            ctx: Arc::clone(&self.ctx),
            _reservation: Some(reservation),
            abandoned: Arc::clone(&self.abandoned),
        };
        if zero {
            // SAFETY: `len` bytes at `ptr` were just allocated.
            unsafe { result::memset_d8_async(ptr, 0, len, STREAM) }
                .map_err(|e| driver_error("clearing CUDA memory", &what(), e))?;
        }
        self.allocations += 1;
        Ok(mem)
    }

    /// Copies `data` to the start of `mem`, zero-padded to whole words (as wgpu's writes
    /// are), after the work enqueued before.
    pub fn upload(&mut self, mem: &DeviceMem, data: &[u8]) -> Result<()> {
        let padded = crate::plan::align_up(data.len() as u64, 4);
        check_fits("uploading", mem, padded as usize)?;
        if data.is_empty() {
            return Ok(());
        }
        self.bind("uploading")?;
        // SAFETY: `data.len()` bytes fit in `mem`; a synchronous copy from pageable memory
        // returns once `data` has been read.
        unsafe { result::memcpy_htod_sync(mem.ptr, data) }
            .map_err(|e| self.failed("uploading", e))?;
        let tail = padded as usize - data.len();
        if tail > 0 {
            // SAFETY: the padding is inside `mem` (checked above).
            unsafe { result::memset_d8_async(mem.ptr + data.len() as u64, 0, tail, STREAM) }
                .map_err(|e| self.failed("uploading", e))?;
        }
        Ok(())
    }

    /// Zeroes the first `bytes` of `mem`, ordered after the work enqueued before.
    pub fn zero(&mut self, mem: &DeviceMem, bytes: u64) -> Result<()> {
        check_fits("clearing", mem, bytes as usize)?;
        self.bind("clearing")?;
        // SAFETY: `bytes` fit in `mem`.
        unsafe { result::memset_d8_async(mem.ptr, 0, bytes as usize, STREAM) }
            .map_err(|e| self.failed("clearing", e))
    }

    /// Copies the first `bytes` of `src` to `dst`, on the device, in order.
    pub fn copy(
        &mut self,
        (src, src_offset): (&DeviceMem, u64),
        (dst, dst_offset): (&DeviceMem, u64),
        bytes: u64,
    ) -> Result<()> {
        let end = |offset: u64| offset.checked_add(bytes).map_or(usize::MAX, |e| e as usize);
        check_fits("copying", src, end(src_offset))?;
        check_fits("copying", dst, end(dst_offset))?;
        self.bind("copying on the device")?;
        // SAFETY: both ranges are inside their allocations (checked above).
        unsafe {
            result::memcpy_dtod_async(
                dst.ptr + dst_offset,
                src.ptr + src_offset,
                bytes as usize,
                STREAM,
            )
        }
        .map_err(|e| self.failed("copying on the device", e))
    }

    /// Copies the start of `mem` into `out`, once the work enqueued before has finished
    /// (a synchronous copy on the default stream waits for it). Call [`CudaGpu::sync`]
    /// first to name a launch that failed.
    pub fn download(&mut self, mem: &DeviceMem, out: &mut [u8]) -> Result<()> {
        check_fits("downloading", mem, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: `out.len()` bytes fit in `mem`; the stream is idle.
        unsafe { result::memcpy_dtoh_sync(out, mem.ptr) }
            .map_err(|e| self.failed("reading results back", e))?;
        self.readbacks += 1;
        Ok(())
    }

    /// Waits until the device has finished everything enqueued. A launch that failed is
    /// the error, named.
    pub fn sync(&mut self, context: &'static str) -> Result<()> {
        if let Some(t) = &self.timed_out {
            return Err(t.error());
        }
        self.bind(context)?;
        let done = match self.timeout {
            // SAFETY: the default stream of the bound context.
            None => unsafe { result::stream::synchronize(STREAM) },
            Some(timeout) => match self.query_until(timeout) {
                Some(done) => done,
                None => return Err(self.give_up(timeout)),
            },
        };
        self.syncs += 1;
        match done {
            Ok(()) => {
                self.in_flight.clear();
                Ok(())
            }
            Err(e) => Err(self.failed(context, e)),
        }
    }

    /// Polls the stream until its work has finished (`Some` of the outcome) or `timeout`
    /// has passed (`None`), sleeping a little more between polls as the wait grows (at most
    /// a millisecond), so that a short kernel is not kept waiting.
    fn query_until(&self, timeout: std::time::Duration) -> Option<Result<(), DriverError>> {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_micros(1);
        loop {
            // SAFETY: the default stream of the bound context.
            match unsafe { sys::cuStreamQuery(STREAM) } {
                sys::cudaError_enum::CUDA_ERROR_NOT_READY => {}
                other => return Some(other.result()),
            }
            if start.elapsed() >= timeout {
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(1));
        }
    }

    /// After a synchronisation outlived `timeout`: the device refuses every later call
    /// with the error returned here, and frees no memory (a free would wait).
    fn give_up(&mut self, timeout: std::time::Duration) -> ForgeError {
        let mut kernels = std::mem::take(&mut self.in_flight);
        kernels.dedup();
        let t = super::TimedOut {
            kernels: super::guard::name_kernels(&kernels),
            after: format!("{} s", timeout.as_secs_f64()),
            device: crate::shown::shown(&self.identity.info.name),
        };
        tracing::error!(?kernels, ?timeout, "a wait for the CUDA device timed out");
        self.abandoned.store(true, Ordering::Relaxed);
        // The primary context stays retained for the life of the process: released last,
        // it would be destroyed, and destroying it waits for the kernel given up on (the
        // drop of a timed-out runtime hung so on an H200). Its modules, events and memory
        // are left to it likewise (`abandoned`).
        std::mem::forget(Arc::clone(&self.ctx));
        let e = t.error();
        self.timed_out = Some(t);
        e
    }

    /// The error for a driver error met during `context`, naming the kernels launched
    /// since the last synchronisation: an asynchronous failure is theirs.
    fn failed(&mut self, context: &'static str, e: DriverError) -> ForgeError {
        self.failure(context, format!("CUDA: {e}"))
    }

    /// The compiled kernel for `kernel` at `schedule`, compiled (NVRTC to a cubin for this
    /// device) and loaded on first use. Errors: a kernel without a CUDA form
    /// ([`ForgeError::CannotEmit`]: one that prints, say), NVRTC's log
    /// ([`ForgeError::ShaderCompile`]), a module the driver refuses.
    pub fn kernel(&mut self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<Arc<CudaKernel>> {
        let key = (kernel.id(), *schedule);
        if let Some(k) = self.kernels.get(&key) {
            return Ok(Arc::clone(k));
        }
        let name = kernel.name();
        self.identity.check(kernel, schedule)?;
        let source = kernel.cuda(schedule)?;
        let cubin = crate::emit::nvrtc::compile_cubin(name, &source, &self.arch)?;
        self.bind("loading a CUDA module")?;
        let load_error = |e: String| ForgeError::ShaderCompile {
            kernel: name,
            backend: format!("cuda ({})", self.arch),
            message: format!("the driver refused the cubin: {e}"),
        };
        // SAFETY: a whole cubin from NVRTC; the driver copies what it needs.
        let module = unsafe { result::module::load_data(cubin.as_ptr() as *const c_void) }
            .map_err(|e| load_error(e.to_string()))?;
        let entry = CString::new(CUDA_ENTRY_POINT).map_err(|e| load_error(e.to_string()))?;
        // SAFETY: the module was just loaded.
        let func = match unsafe { result::module::get_function(module, entry) } {
            Ok(f) => f,
            Err(e) => {
                // SAFETY: loaded above, unloaded once.
                let _ = unsafe { result::module::unload(module) };
                return Err(load_error(e.to_string()));
            }
        };
        let dynamic_shared_bytes = dynamic_shared_bytes(&source);
        if dynamic_shared_bytes > 0 {
            use sys::CUfunction_attribute_enum as F;
            // SAFETY: the function was just loaded. Past the device's opt-in limit the
            // driver refuses, which `Identity::check` above rules out.
            let opted = unsafe {
                result::function::set_function_attribute(
                    func,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_shared_bytes as i32,
                )
            };
            if let Err(e) = opted {
                // SAFETY: loaded above, unloaded once.
                let _ = unsafe { result::module::unload(module) };
                return Err(load_error(format!(
                    "opting in to {dynamic_shared_bytes} bytes of shared memory: {e}"
                )));
            }
        }
        let compiled = Arc::new(CudaKernel {
            name,
            module,
            func,
            ctx: Arc::clone(&self.ctx),
            cubin_bytes: cubin.len(),
            dynamic_shared_bytes,
            abandoned: Arc::clone(&self.abandoned),
        });
        self.compiled += 1;
        self.kernels.insert(key, Arc::clone(&compiled));
        Ok(compiled)
    }

    /// Enqueues `kernel` on a grid of `grid` blocks of `block` threads, with the device
    /// pointers `ptrs` (one per binding, in order) and `params` (the `fg_Params` struct's
    /// bytes, passed by value; `None` for a kernel without scalars).
    pub fn launch(
        &mut self,
        kernel: &CudaKernel,
        grid: [u32; 3],
        block: [u32; 3],
        ptrs: &[sys::CUdeviceptr],
        params: Option<&[u8]>,
    ) -> Result<()> {
        self.bind("launching a kernel")?;
        let mut ptrs: Vec<sys::CUdeviceptr> = ptrs.to_vec();
        let mut args: Vec<*mut c_void> = ptrs
            .iter_mut()
            .map(|p| p as *mut sys::CUdeviceptr as *mut c_void)
            .collect();
        if let Some(p) = params {
            // The driver reads `sizeof(fg_Params)` bytes here; the plan's bytes hold the
            // struct's fields in order and are padded past it.
            args.push(p.as_ptr() as *mut c_void);
        }
        // SAFETY: the function is loaded in the bound context; `args` points at one value
        // per kernel parameter (the pointers, then the struct), alive until the call
        // returns, which is when the driver has copied them.
        let launched = unsafe {
            result::launch_kernel(
                kernel.func,
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                kernel.dynamic_shared_bytes,
                STREAM,
                &mut args,
            )
        };
        self.in_flight.push(kernel.name);
        self.launches += 1;
        launched.map_err(|e| self.failed("launching a kernel", e))
    }

    /// A new event.
    pub fn event(&self) -> Result<Event> {
        self.bind("creating a CUDA event")?;
        let raw = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| driver_error("creating a CUDA event", "", e))?;
        Ok(Event {
            raw,
            ctx: Arc::clone(&self.ctx),
            abandoned: Arc::clone(&self.abandoned),
        })
    }

    /// Records `event` on the stream, after the work enqueued before.
    pub fn record_event(&mut self, event: &Event) -> Result<()> {
        self.bind("recording a CUDA event")?;
        // SAFETY: a live event of this context.
        unsafe { result::event::record(event.raw, STREAM) }
            .map_err(|e| self.failed("recording a CUDA event", e))
    }

    /// The GPU time between two recorded events that have completed, in nanoseconds, or
    /// `None` when it is not positive (CUDA's event timer has a resolution of about half a
    /// microsecond).
    pub fn elapsed_ns(&mut self, start: &Event, end: &Event) -> Result<Option<f64>> {
        // SAFETY: live events of this context, recorded on one stream, completed (the
        // caller synchronised).
        let ms = unsafe { result::event::elapsed(start.raw, end.raw) }
            .map_err(|e| self.failed("reading a CUDA event", e))?;
        let ns = ms as f64 * 1e6;
        Ok((ns.is_finite() && ns > 0.0).then_some(ns))
    }
}

/// Launches prepared on CUDA: the kernel, its grid and block, the `fg_Params` bytes, and
/// one list of binding pointers per set of memory.
#[derive(Debug)]
struct Prelaunch {
    compiled: Compiled,
    grid: [u32; 3],
    block: [u32; 3],
    params: Vec<u8>,
    sets: Vec<Vec<sys::CUdeviceptr>>,
}

/// The events of a [`Stamps`]: one per slot.
#[derive(Debug)]
struct Events(Vec<Event>);

impl CudaGpu {
    /// The allocation behind memory this device made.
    fn mem<'m>(&self, memory: &'m Memory) -> Result<&'m DeviceMem> {
        match memory.raw::<DeviceMem>() {
            Some(m) if memory.device_id() == self.identity.id => Ok(m),
            _ => Err(foreign("CUDA memory")),
        }
    }

    /// The events of stamps this device made.
    fn events<'s>(&self, stamps: &'s Stamps) -> Result<&'s [Event]> {
        match stamps.raw::<Events>() {
            Some(e) if stamps.device_id() == self.identity.id => Ok(&e.0),
            _ => Err(foreign("CUDA events")),
        }
    }

    /// Enqueues one command.
    fn enqueue(&mut self, command: &Command<'_>) -> Result<()> {
        match *command {
            Command::Upload { to, data } | Command::Write { to, data } => {
                let to = self.mem(to)?;
                self.upload(to, data)
            }
            Command::Clear { to, bytes } => {
                let to = self.mem(to)?;
                self.zero(to, bytes)
            }
            Command::Copy {
                from,
                from_offset,
                to,
                to_offset,
                bytes,
            } => {
                let (from, to) = (self.mem(from)?, self.mem(to)?);
                self.copy((from, from_offset), (to, to_offset), bytes)
            }
            Command::Launch(ref launch) => self.enqueue_launch(launch),
            Command::Dispatch {
                prepared,
                set,
                count,
                timed,
            } => {
                let p = match prepared.raw::<Prelaunch>() {
                    Some(p) if prepared.device_id() == self.identity.id && !p.sets.is_empty() => p,
                    _ => return Err(foreign("prepared CUDA launches")),
                };
                let events = match timed {
                    Some((stamps, index)) => {
                        let events = self.events(stamps)?;
                        let at = |i: u32| {
                            events
                                .get(i as usize)
                                .ok_or_else(|| foreign("a timestamp slot"))
                        };
                        Some((at(index)?, at(index + 1)?))
                    }
                    None => None,
                };
                if let Some((start, _)) = events {
                    self.record_event(start)?;
                }
                let kernel = match p.compiled.raw::<CudaKernel>() {
                    Some(k) => k,
                    None => return Err(foreign("a CUDA kernel")),
                };
                let params = (!p.params.is_empty()).then_some(&p.params[..]);
                for k in 0..count as usize {
                    let ptrs = &p.sets[(set % p.sets.len() + k) % p.sets.len()];
                    self.launch(kernel, p.grid, p.block, ptrs, params)?;
                }
                match events {
                    Some((_, end)) => self.record_event(end),
                    None => Ok(()),
                }
            }
            Command::Stamp { stamps, index } => {
                let events = self.events(stamps)?;
                let event = events
                    .get(index as usize)
                    .ok_or_else(|| foreign("a timestamp slot"))?;
                self.record_event(event)
            }
        }
    }

    /// Enqueues one launch: the plan's grid of blocks of its schedule's shape, on the
    /// bindings' pointers, with the `fg_Params` struct by value.
    fn enqueue_launch(&mut self, launch: &Launch<'_>) -> Result<()> {
        let kernel = match launch.compiled.raw::<CudaKernel>() {
            Some(k) if launch.compiled.device_id() == self.identity.id => k,
            _ => return Err(foreign("a CUDA kernel")),
        };
        if launch.prints.is_some() {
            return Err(no_prints(launch.plan.kernel));
        }
        let plan = launch.plan;
        let ptrs = launch
            .bindings
            .iter()
            .map(|m| self.mem(m).map(DeviceMem::ptr))
            .collect::<Result<Vec<_>>>()?;
        let params = plan.has_params().then_some(&plan.params[..]);
        self.launch(
            kernel,
            plan.grid.dispatch,
            plan.schedule.workgroup_shape(),
            &ptrs,
            params,
        )
    }
}

impl Device for CudaGpu {
    /// The device as the layers above describe adapters: name, vendor (NVIDIA's PCI id),
    /// `device` = the compute capability as `10 * major + minor`, driver `CUDA` with its
    /// version and architecture in `driver_info`; its limits in wgpu's terms (see
    /// [`cuda_limits`]) and the features kernels may need that it has.
    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn cuda_ordinal(&self) -> Option<usize> {
        Some(self.ordinal)
    }

    /// The profile names the backend `cuda`, so that its manifests never meet a wgpu
    /// adapter's.
    fn profile(&self) -> HardwareProfile {
        let mut profile = HardwareProfile::from_parts(
            &self.identity.info,
            &self.identity.limits,
            self.identity.features,
        );
        profile.backend = Backend::Cuda.name().to_string();
        profile
    }

    /// Cubins compiled, synchronisations (as submissions), copies to the host,
    /// allocations, launches.
    fn stats(&self) -> RuntimeStats {
        RuntimeStats {
            pipelines_compiled: self.compiled,
            submissions: self.syncs,
            readbacks: self.readbacks,
            buffers_created: self.allocations,
            buffers_reused: 0,
            dispatches: self.launches,
            bytes_in_use: self.budget.in_use(),
            bind_groups_created: 0,
        }
    }

    /// Names the kernels launched since the last synchronisation: an asynchronous
    /// failure is theirs.
    fn failure(&mut self, context: &'static str, message: String) -> ForgeError {
        let mut kernels = std::mem::take(&mut self.in_flight);
        kernels.dedup();
        ForgeError::Gpu {
            context,
            message: match kernels.len() {
                0 => message,
                _ => format!(
                    "after launches of kernel `{}`: {message}",
                    kernels.join("`, `")
                ),
            },
        }
    }

    fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// Fails with [`ForgeError::Timeout`] once a synchronisation outlived the timeout.
    fn check_lost(&self) -> Result<()> {
        match &self.timed_out {
            Some(t) => Err(t.error()),
            None => Ok(()),
        }
    }

    /// Synchronisations poll the stream (`cuStreamQuery`) until the work is done or
    /// `timeout` has passed.
    fn set_timeout(&mut self, timeout: Option<std::time::Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    fn create(&mut self, bytes: u64, init: Option<&[u8]>, what: What<'_>) -> Result<Memory> {
        self.check_lost()?;
        let mem = self.alloc(bytes, true, what)?;
        if let Some(data) = init {
            self.upload(&mem, data)?;
        }
        // The allocation holds its own reservation of the budget.
        Ok(Memory::new(self.identity.id, mem.bytes(), Box::new(mem)))
    }

    /// An allocation of its own, not zeroed: a call uploads to or clears what it binds.
    fn lease(&mut self, bytes: u64, what: What<'_>) -> Result<Memory> {
        self.check_lost()?;
        let mem = self.alloc(bytes, false, what)?;
        Ok(Memory::new(self.identity.id, mem.bytes(), Box::new(mem)))
    }

    /// Frees the allocation (`cuMemFree` waits for the work that uses it).
    fn release(&mut self, memory: Memory) {
        drop(memory);
    }

    fn compile(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        _params: bool,
    ) -> Result<Compiled> {
        let compiled = self.kernel(kernel, schedule)?;
        Ok(Compiled::new(self.identity.id, compiled))
    }

    /// NVRTC, one kernel after another: the CUDA device is one context.
    fn warm_up(&mut self, jobs: &[(&dyn Kernel, Schedule, bool)]) -> Result<usize> {
        let mut compiled = 0;
        let mut first_error = None;
        for (kernel, schedule, _) in jobs {
            let before = self.compiled;
            match self.kernel(*kernel, schedule) {
                Ok(_) => compiled += (self.compiled - before) as usize,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(compiled),
        }
    }

    fn prepare(&mut self, launch: &Launch<'_>, more: &[&[&Memory]]) -> Result<Prepared> {
        let Launch { compiled, plan, .. } = *launch;
        if compiled.raw::<CudaKernel>().is_none() || compiled.device_id() != self.identity.id {
            return Err(foreign("a CUDA kernel"));
        }
        if launch.prints.is_some() {
            return Err(no_prints(plan.kernel));
        }
        let sets = std::iter::once(launch.bindings)
            .chain(more.iter().copied())
            .map(|set| {
                set.iter()
                    .map(|m| self.mem(m).map(DeviceMem::ptr))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let prelaunch = Prelaunch {
            compiled: compiled.clone(),
            grid: plan.grid.dispatch,
            block: plan.schedule.workgroup_shape(),
            params: if plan.has_params() {
                plan.params.clone()
            } else {
                Vec::new()
            },
            sets,
        };
        Ok(Prepared::new(self.identity.id, Arc::new(prelaunch)))
    }

    fn retire(&mut self, prepared: Prepared) {
        drop(prepared);
    }

    /// Each command is enqueued on the stream as it comes.
    fn record(&mut self, _context: &'static str, commands: &[Command<'_>]) -> Result<()> {
        // After a timeout nothing more is queued behind work that may never end (a copy
        // on the stream would wait for it).
        self.check_lost()?;
        commands.iter().try_for_each(|c| self.enqueue(c))
    }

    /// Whether launches were enqueued since the last synchronisation.
    fn has_pending(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// Each command runs as soon as the stream reaches it.
    fn eager(&self) -> bool {
        true
    }

    /// Every command is on the stream already: there is nothing to submit.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn wait(&mut self) -> Wait<'_, ()> {
        Wait::ready(self.sync("waiting for the device"))
    }

    /// One synchronisation (a launch that failed is its error, named), then the copies.
    fn read<'a, 'b: 'a>(
        &'a mut self,
        from: &'a [&'a Memory],
        into: &'a mut [&'b mut [u8]],
    ) -> Wait<'a, ()> {
        let read = (|| {
            if from.len() != into.len() {
                return Err(ForgeError::InvalidArgument {
                    kernel: "read",
                    message: format!("{} memories to read into {} slices", from.len(), into.len()),
                });
            }
            self.sync("reading results back")?;
            for (memory, out) in from.iter().zip(into.iter_mut()) {
                let mem = self.mem(memory)?;
                self.download(mem, out)?;
            }
            Ok(())
        })();
        Wait::ready(read)
    }

    /// Two events a timed pass, as the timer clamps its batches to (4096 passes).
    fn max_stamps(&self) -> u32 {
        8192
    }

    fn stamps(&mut self, _label: &'static str, count: u32) -> Result<Stamps> {
        let count = count.clamp(2, self.max_stamps()) & !1;
        let events = (0..count)
            .map(|_| self.event())
            .collect::<Result<Vec<_>>>()?;
        Ok(Stamps::new(self.identity.id, Arc::new(Events(events))))
    }

    /// CUDA's event timer has a resolution of about half a microsecond.
    fn read_stamps<'a>(&'a mut self, stamps: &'a Stamps, pairs: u32) -> Wait<'a, Vec<Option<f64>>> {
        let read = (|| {
            let events = self.events(stamps)?;
            self.sync("timing a kernel")?;
            events
                .chunks_exact(2)
                .take(pairs as usize)
                .map(|pair| self.elapsed_ns(&pair[0], &pair[1]))
                .collect()
        })();
        Wait::ready(read)
    }
}

/// What a launch with a print buffer meets here: the CUDA emitter has no print buffer
/// (such a kernel does not compile for CUDA, so this names a caller's mistake).
fn no_prints(kernel: &'static str) -> ForgeError {
    ForgeError::CannotEmit {
        kernel,
        target: "cuda",
        reason: "`debug_print!` has no CUDA form".into(),
    }
}

/// Fails unless `bytes` fit in `mem`: every copy's bounds are checked before the driver.
fn check_fits(what: &'static str, mem: &DeviceMem, bytes: usize) -> Result<()> {
    if bytes as u64 <= mem.bytes {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel: what,
            message: format!(
                "{bytes} bytes do not fit in a CUDA allocation of {}",
                mem.bytes
            ),
        })
    }
}

/// The dynamic shared memory a kernel's CUDA source declares (the emitter's
/// `fg_dynamic_shared_bytes`, written where its workgroup memory is past 48 KiB), or 0.
fn dynamic_shared_bytes(source: &str) -> u32 {
    const DECL: &str = "static constexpr unsigned fg_dynamic_shared_bytes = ";
    source
        .lines()
        .find_map(|line| line.strip_prefix(DECL))
        .and_then(|rest| rest.strip_suffix("u;"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A CUDA device's limits in wgpu's terms, which the launch plan checks against: the
/// block's threads and shape, shared memory (with the opt-in), and buffers up to the
/// device's memory. Workgroups per dimension stay at 65535, the grid's y and z limit, which the
/// emitted kernels fold over as the WGSL does (`forge_core::plan`).
pub fn cuda_limits(threads: u32, block: [u32; 3], shared: u32, total_mem: u64) -> wgpu::Limits {
    wgpu::Limits {
        max_compute_invocations_per_workgroup: threads,
        max_compute_workgroup_size_x: block[0],
        max_compute_workgroup_size_y: block[1],
        max_compute_workgroup_size_z: block[2],
        max_compute_workgroup_storage_size: shared,
        max_compute_workgroups_per_dimension: 65535,
        max_storage_buffer_binding_size: total_mem,
        max_buffer_size: total_mem,
        max_uniform_buffer_binding_size: 65536,
        max_storage_buffers_per_shader_stage: 64,
        max_bindings_per_bind_group: 64,
        ..wgpu::Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::dynamic_shared_bytes;

    /// The runtime reads the emitter's declaration of dynamic shared memory, and nothing
    /// else: a body without one launches with none.
    #[test]
    fn dynamic_shared_memory_is_read_from_the_source() {
        let with = "#include <x>\nstatic constexpr unsigned WG = 256u;\nstatic constexpr unsigned fg_dynamic_shared_bytes = 65024u;\nextern \"C\" __global__ void fg_main() {}\n";
        assert_eq!(dynamic_shared_bytes(with), 65024);
        let without = "static constexpr unsigned WG = 256u;\n__shared__ float t[4];\n";
        assert_eq!(dynamic_shared_bytes(without), 0);
        let garbled = "static constexpr unsigned fg_dynamic_shared_bytes = 12x;\n";
        assert_eq!(dynamic_shared_bytes(garbled), 0);
    }
}
