//! The runtime: [`ForgeRuntime`], what it is built from, and the schedule it runs each
//! kernel with. Layer 5: it is written once over the backend seam
//! ([`crate::backend::Device`], layer 3), and imports the devices (layer 4) only where its
//! builder opens one; the procedures (timing, certification, tuning, layer 6) build on it.
//!
//! This module owns [`ForgeRuntime`] (its fields are private: the submodules that add
//! methods to it reach the device through the seam, a `Box<dyn Device>`, and never ask
//! which backend it is) and the `FORGE_*` environment variables. Its submodules:
//! - [`builder`]: [`RuntimeBuilder`], which opens a backend's device;
//! - [`launch`]: a kernel on host slices ([`ForgeRuntime::launch_host`], one submission and
//!   one readback), on device tensors ([`ForgeRuntime::launch_tensors`], recorded, submitted
//!   together), and type-erased ([`ForgeRuntime::run_dyn`]); every one goes through one
//!   [`crate::plan::LaunchPlan`] and one [`crate::backend::Command::Launch`];
//! - [`call`]: the typed call's host helpers, which generated code calls;
//! - [`tensors`]: data in and out of device tensors, and tensors over the application's
//!   own buffers ([`ForgeRuntime::tensor_from_buffer`]);
//! - [`prints`]: the print buffers of kernels that call `debug_print!`, and their lines
//!   ([`ForgeRuntime::take_prints`]).
//!
//! # Which schedule a call runs with
//! The typed methods (`rt.gemv(..)`, `gemv::run`, `gemv::launch`) use
//! [`ForgeRuntime::schedule_for_threads`]: the winner of the nearest tuned problem-size
//! bucket in the manifest cache, where a trustworthy one is stored for this hardware and
//! this kernel (its [`crate::kernel::KernelId`]: two kernels of one name never share a winner), else
//! in the manifest bundle the runtime was built with ([`RuntimeBuilder::manifest_bundle`]),
//! else the declared schedule.

pub mod builder;
pub mod call;
mod indirect;
pub mod launch;
pub mod prints;
pub mod tensors;

use crate::backend::Device;
pub use crate::backend::{RuntimeStats, WgpuParts};
use crate::error::Result;
use crate::kernel::{Feature, Kernel};
use crate::manifest::{ManifestBundle, ManifestCache, ManifestKey, ManifestMemo, TuningManifest};
use crate::schedule::Schedule;
pub use crate::target::Backend;
use crate::topology::HardwareProfile;
#[cfg(not(target_arch = "wasm32"))]
pub(crate) use builder::open_nccl;
pub use builder::{
    cuda_device_count, enumerate_adapters, group_adapters, nccl_version, RuntimeBuilder,
};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment variable: a case-insensitive substring of the adapter's name.
pub const ENV_ADAPTER: &str = "FORGE_ADAPTER";
/// Environment variable: the backend, `wgsl`, `spirv`, `glsl`, `hlsl` or `cuda` (a build
/// with the `cuda` feature).
pub const ENV_BACKEND: &str = "FORGE_BACKEND";
/// Environment variable: the CUDA device ordinal `FORGE_BACKEND=cuda` opens (0 if unset).
pub const ENV_CUDA_DEVICE: &str = "FORGE_CUDA_DEVICE";
/// Environment variable: the manifest cache directory.
pub const ENV_CACHE_DIR: &str = "FORGE_CACHE_DIR";
/// Environment variable: the file a Chrome / Perfetto trace is written to
/// ([`RuntimeBuilder::trace`]).
pub const ENV_TRACE: &str = "FORGE_TRACE";
/// Environment variable: the bound of every blocking wait for the device, in seconds
/// ([`RuntimeBuilder::timeout`]; `0` or `off` for none, the default).
pub const ENV_TIMEOUT: &str = "FORGE_TIMEOUT";

/// The memory budget a [`RuntimeBuilder`] uses when none is given: 1 GiB.
pub const DEFAULT_CAPACITY: u64 = 1 << 30;

/// The runtime that runs kernels.
///
/// One runtime owns one device of one backend: a wgpu device, opened by the runtime
/// ([`ForgeRuntime::new`], [`ForgeRuntime::builder`]) or the application's
/// ([`ForgeRuntime::from_wgpu`]), or (the `cuda` feature) a CUDA device
/// ([`RuntimeBuilder::cuda`]), or any [`Device`] ([`RuntimeBuilder::build_with`]). Methods
/// take `&mut self`: the memory, the compiled kernels and the pending work are per runtime.
pub struct ForgeRuntime {
    /// The device, through the backend seam (the procedures reach it too).
    pub(crate) device: Box<dyn Device>,
    emission: Backend,
    cache_dir: Option<PathBuf>,
    profile: HardwareProfile,
    /// Tuning manifests read from the cache or the bundle (or just tuned), once per kernel.
    manifests: ManifestMemo,
    /// The manifests to fall back on where the cache has none
    /// ([`RuntimeBuilder::manifest_bundle`]).
    bundle: Option<Arc<ManifestBundle>>,
    /// `debug_print!` lines and print buffers ([`prints`]).
    prints: prints::Prints,
    /// The trace's recorder, where the runtime keeps one.
    recorder: Option<Arc<crate::trace::Recorder>>,
    /// The counts of indirect launches on tensors, checked at the next readback
    /// ([`indirect`]).
    indirect: indirect::IndirectLog,
}

impl fmt::Debug for ForgeRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForgeRuntime")
            .field("adapter", &self.adapter_info().name)
            .field("backend", &self.profile.backend)
            .field("emission", &self.emission)
            .field("capacity", &self.capacity())
            .field("cache_dir", &self.cache_dir)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl ForgeRuntime {
    /// Creates a runtime on the best adapter (`FORGE_ADAPTER` filters by name,
    /// `FORGE_BACKEND` picks the emission backend) with a memory budget of `capacity_bytes`.
    /// `cache_dir` is where tuning manifests live; `None` falls back to `FORGE_CACHE_DIR`.
    ///
    /// ```
    /// let rt = forge_core::ForgeRuntime::new(256 << 20, None).unwrap();
    /// assert!(!rt.adapter_info().name.is_empty());
    /// ```
    pub fn new(capacity_bytes: u64, cache_dir: Option<PathBuf>) -> Result<Self> {
        let mut builder = Self::builder().capacity(capacity_bytes);
        if let Some(dir) = cache_dir {
            builder = builder.cache_dir(dir);
        }
        builder.build()
    }

    /// [`ForgeRuntime::new`], awaited: the form a browser can use (its adapter is
    /// WebGPU's; there the manifests come from bundles, since a page has no files).
    ///
    /// ```
    /// let rt = pollster::block_on(forge_core::ForgeRuntime::new_async(256 << 20)).unwrap();
    /// assert!(!rt.adapter_info().name.is_empty());
    /// ```
    pub async fn new_async(capacity_bytes: u64) -> Result<Self> {
        Self::builder().capacity(capacity_bytes).build_async().await
    }

    /// A runtime on the application's own wgpu device and queue, and the adapter they came
    /// from: kernels then run on the application's device, next to its own work, and
    /// [`ForgeRuntime::tensor_from_buffer`] lets them read and write its buffers in place.
    /// The pipeline cache, the tuner and the manifests work as on a runtime that opened its
    /// device itself; the adapter must be the device's (its profile keys the manifests).
    ///
    /// The emission backend, the capacity (for the buffers the runtime allocates itself)
    /// and the cache come from the `FORGE_*` variables and the defaults; use
    /// [`RuntimeBuilder::build_on`] to set them. The runtime uses the features and limits
    /// the device was created with: a kernel that needs a feature it lacks fails with
    /// [`crate::ForgeError::MissingFeature`]. It installs no callback on the device; see
    /// [`crate::device::Gpu::from_wgpu`]. [`ForgeRuntime::wgpu`] hands the objects back.
    ///
    /// ```
    /// # fn main() -> Result<(), forge_core::ForgeError> {
    /// let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    /// let adapter = pollster::block_on(instance.request_adapter(&Default::default())).expect("an adapter");
    /// let (device, queue) = pollster::block_on(adapter.request_device(&Default::default())).expect("a device");
    /// let mut rt = forge_core::ForgeRuntime::from_wgpu(adapter, device.clone(), queue)?;
    /// assert!(rt.wgpu().is_some_and(|w| w.device == &device));
    /// let t = rt.upload(&[1u32, 2, 3])?;
    /// assert_eq!(rt.download(&t)?, vec![1, 2, 3]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_wgpu(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<Self> {
        Self::builder().build_on(adapter, device, queue)
    }

    /// A builder to choose the adapter, wgpu backends, emission backend, capacity and cache.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Every adapter wgpu can see; see [`enumerate_adapters`].
    pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
        enumerate_adapters()
    }

    /// The runtime on `device`: see [`RuntimeBuilder::build_with`].
    fn on(
        mut device: Box<dyn Device>,
        cache_dir: Option<PathBuf>,
        bundle: Option<Arc<ManifestBundle>>,
        recorder: Option<Arc<crate::trace::Recorder>>,
        print_capacity: Option<u32>,
    ) -> Self {
        if let Some(recorder) = &recorder {
            device.attach_trace(Arc::clone(recorder));
        }
        let profile = device.profile();
        let emission = device.emission();
        let info = device.info();
        tracing::debug!(device = %info.name, backend = %profile.backend, %emission, "forge runtime ready");
        ForgeRuntime {
            device,
            emission,
            cache_dir,
            profile,
            manifests: ManifestMemo::default(),
            bundle,
            prints: prints::Prints::new(print_capacity),
            recorder,
            indirect: indirect::IndirectLog::default(),
        }
    }

    /// The wgpu objects the runtime runs on: the adapter, the device and the queue, to
    /// record the application's own work next to the kernels' (or `None` on a backend that
    /// is not wgpu, such as CUDA). This replaces `ForgeRuntime::device`, `queue` and
    /// `adapter`, which could not answer on CUDA.
    ///
    /// ```
    /// let rt = forge_core::ForgeRuntime::new(1 << 20, None)?;
    /// let wgpu = rt.wgpu().expect("the default runtime runs on wgpu");
    /// let buffer = wgpu.device.create_buffer(&forge_core::wgpu::BufferDescriptor {
    ///     label: None,
    ///     size: 16,
    ///     usage: forge_core::wgpu::BufferUsages::STORAGE,
    ///     mapped_at_creation: false,
    /// });
    /// assert_eq!(buffer.size(), 16);
    /// assert_eq!(wgpu.adapter.get_info().name, rt.adapter_info().name);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn wgpu(&self) -> Option<WgpuParts<'_>> {
        self.device.wgpu()
    }

    /// Whether the runtime runs on CUDA (`RuntimeBuilder::cuda`, `FORGE_BACKEND=cuda`)
    /// instead of wgpu: its emission is [`Backend::Cuda`].
    pub fn is_cuda(&self) -> bool {
        self.emission == Backend::Cuda
    }

    /// The CUDA device ordinal the runtime runs on, on CUDA; `None` on wgpu.
    pub fn cuda_ordinal(&self) -> Option<usize> {
        self.device.cuda_ordinal()
    }

    /// The adapter's description: name, vendor, backend, driver. On CUDA: the device's
    /// name, NVIDIA's vendor id, the compute capability as `device` (90 on an H200),
    /// driver `CUDA` and its version, and wgpu's `Noop` backend (the profile says `cuda`).
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        self.device.info()
    }

    /// The device's limits (on a device the runtime opened: the adapter's full limits; on
    /// CUDA: the device's block, shared-memory and memory limits in wgpu's terms).
    pub fn limits(&self) -> &wgpu::Limits {
        self.device.limits()
    }

    /// The features enabled on the device (on CUDA: what its CUDA emission can use).
    pub fn features(&self) -> wgpu::Features {
        self.device.features()
    }

    /// Whether the device has a feature that kernels may need; a kernel that uses one the
    /// device lacks fails with [`crate::ForgeError::MissingFeature`].
    pub fn supports(&self, feature: Feature) -> bool {
        self.features().contains(feature.wgpu())
    }

    /// Why this runtime cannot run `kernel` at all, or `None` when it can: the first of its
    /// features that the device lacks (on CUDA, cooperative matrices before sm_80); through
    /// GLSL or HLSL, `f16`, which naga's output for them
    /// cannot carry here. `forge certify` and `forge bench` skip such a kernel and
    /// print this.
    pub fn cannot_run(&self, kernel: &dyn Kernel) -> Option<String> {
        let features = kernel.features();
        // naga 30 writes no `f16` in GLSL, and glslang rejects the `f16` storage loads of
        // its HLSL (README, "Backends: what runs where").
        if features.contains(&Feature::F16) {
            match self.emission {
                Backend::Glsl => return Some("uses `f16` values, which naga's GLSL has no form for".into()),
                Backend::Hlsl => {
                    return Some(
                        "uses `f16` values, whose storage loads in naga's HLSL glslang does not compile"
                            .into(),
                    )
                }
                _ => {}
            }
        }
        let missing = features.iter().find(|f| !self.supports(**f))?;
        Some(format!(
            "needs {}, which the adapter lacks",
            missing.wgpu_name()
        ))
    }

    /// The memory budget in bytes.
    pub fn capacity(&self) -> u64 {
        self.device.budget().capacity()
    }

    /// The manifest cache directory, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The shader form the device compiles kernels from (on CUDA, [`Backend::Cuda`]).
    pub fn emission(&self) -> Backend {
        self.emission
    }

    /// A number that no other runtime of this process has. Every tensor carries the id of
    /// the runtime that made it ([`GpuTensor::runtime_id`](crate::GpuTensor::runtime_id)),
    /// and a runtime refuses another's tensors with [`crate::ForgeError::ForeignTensor`].
    ///
    /// The check is at run time: a compile-time brand (a lifetime that ties each tensor to
    /// its runtime, as `GhostCell` does) would make `ForgeRuntime` and `GpuTensor` generic
    /// over that lifetime and confine each runtime to a closure, which the contract's
    /// `ForgeRuntime::new(..) -> Result<ForgeRuntime>` and `GpuTensor<T>` rule out.
    ///
    /// ```
    /// # use forge_core::{ForgeError, ForgeRuntime};
    /// let mut a = ForgeRuntime::new(1 << 20, None)?;
    /// let mut b = ForgeRuntime::new(1 << 20, None)?;
    /// let t = a.upload(&[1u32, 2, 3])?;
    /// assert_eq!(t.runtime_id(), a.id());
    /// assert!(matches!(b.download(&t), Err(ForgeError::ForeignTensor { .. })));
    /// assert_eq!(a.download(&t)?, vec![1, 2, 3]);
    /// # Ok::<(), ForgeError>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.device.id()
    }

    /// What the runtime has done so far.
    pub fn stats(&self) -> RuntimeStats {
        self.device.stats()
    }

    /// The hardware profile whose hash keys the tuning manifests.
    pub fn profile(&self) -> &HardwareProfile {
        &self.profile
    }

    /// The hex sha256 of [`ForgeRuntime::profile`]: the manifest cache's directory name
    /// for this hardware.
    pub fn topology_hash(&self) -> String {
        self.profile.topology_hash()
    }

    /// The manifest bundle the runtime falls back on, if it was built with one
    /// ([`RuntimeBuilder::manifest_bundle`]).
    pub fn manifest_bundle(&self) -> Option<&ManifestBundle> {
        self.bundle.as_deref()
    }

    /// The manifest cache under [`ForgeRuntime::cache_dir`], if the runtime has one.
    pub fn manifest_cache(&self) -> Option<ManifestCache> {
        self.cache_dir.as_ref().map(ManifestCache::new)
    }

    /// What a manifest for `kernel` must match to be trusted on this runtime: the kernel's
    /// [`crate::kernel::KernelId`], this hardware's topology hash, the emission backend and the crate
    /// version.
    pub fn manifest_key(&self, kernel: &dyn Kernel) -> ManifestKey {
        ManifestKey::new(kernel.id(), self.topology_hash(), self.emission)
    }

    /// Checks a schedule against the adapter's workgroup limits; see
    /// [`crate::plan::check_schedule`].
    pub fn check_schedule(&self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<()> {
        crate::plan::check_schedule(kernel.name(), schedule, self.limits())?;
        crate::plan::check_dims(kernel, schedule)?;
        crate::plan::check_workgroup_memory(kernel, schedule, self.limits())
    }

    /// The folded workgroup counts for `threads` logical invocations (a `u64`, or a
    /// [`crate::Threads`] per dimension); see [`crate::plan::grid`].
    pub fn workgroups(
        &self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        threads: impl Into<crate::schedule::Threads>,
    ) -> Result<[u32; 3]> {
        Ok(crate::plan::grid(kernel.name(), schedule, threads, self.limits())?.dispatch)
    }

    /// Compiles, ahead of their first call, the pipelines `kernels` will launch with (each
    /// at [`ForgeRuntime::schedule_for`], the schedule a call without a size bucket uses),
    /// on a thread each where the platform has threads, so the first calls do not wait on
    /// the compiler. Returns how many pipelines were compiled; cached ones are skipped.
    /// With a persisted pipeline cache ([`RuntimeBuilder::pipeline_cache`]), the work is
    /// saved for the next process by [`ForgeRuntime::save_pipeline_cache`] or on drop.
    ///
    /// Errors: a kernel needs a feature the device lacks
    /// ([`crate::ForgeError::MissingFeature`]), a shader the driver rejects
    /// ([`crate::ForgeError::ShaderCompile`]); the others still compile.
    pub fn warm_up(&mut self, kernels: &[&dyn Kernel]) -> Result<usize> {
        let jobs: Vec<(&dyn Kernel, Schedule, bool)> = kernels
            .iter()
            .map(|&k| (k, self.schedule_for(k), !k.scalars().is_empty()))
            .collect();
        self.device.warm_up(&jobs)
    }

    /// The file the driver's compiled pipelines persist to, where this runtime keeps one
    /// (a cache directory, a device with `PIPELINE_CACHE`, and not turned off).
    pub fn pipeline_cache_path(&self) -> Option<&Path> {
        self.device.pipeline_cache().map(|(path, _)| path)
    }

    /// Bytes of compiled pipelines the persisted cache started from: 0 when the file was
    /// missing or not trusted; `None` without a persisted cache.
    pub fn pipeline_cache_loaded_bytes(&self) -> Option<usize> {
        self.device.pipeline_cache().map(|(_, bytes)| bytes)
    }

    /// Writes the driver's pipeline cache now, if pipelines were compiled since it was last
    /// written (dropping the runtime does the same, logging a failure instead of returning
    /// it). Returns whether it wrote. Errors: the file cannot be written
    /// ([`crate::ForgeError::Io`]) or is not ours to replace
    /// ([`crate::ForgeError::RefusedPath`]).
    pub fn save_pipeline_cache(&mut self) -> Result<bool> {
        self.device.save_pipeline_cache()
    }

    /// Writes the trace now, whole, after waiting for the GPU times of launches already
    /// submitted (dropping the runtime does the same, logging a failure instead of
    /// returning it). Returns whether the runtime traces ([`RuntimeBuilder::trace`]).
    /// Errors: the file cannot be written ([`crate::ForgeError::Io`]) or is not ours to
    /// replace ([`crate::ForgeError::RefusedPath`]).
    pub fn flush_trace(&mut self) -> Result<bool> {
        if self.device.finish_trace()? {
            return Ok(true);
        }
        match &self.recorder {
            Some(recorder) => recorder.write().map(|()| true),
            None => Ok(false),
        }
    }

    /// A host event of the trace that ends when it drops (one that records nothing without
    /// a trace): what the procedures time their steps with.
    pub(crate) fn trace_event(&self, cat: &'static str, name: &str) -> crate::trace::HostEvent {
        crate::trace::HostEvent::begin(self.recorder(), cat, name)
    }

    /// When a traced operation began: `None` without a trace.
    pub(crate) fn trace_start(&self) -> Option<web_time::Instant> {
        self.recorder().map(|_| web_time::Instant::now())
    }

    /// The trace's recorder, where the runtime keeps one (a CUDA runtime keeps none).
    pub(crate) fn recorder(&self) -> Option<&Arc<crate::trace::Recorder>> {
        self.recorder.as_ref()
    }

    /// The file the trace is written to, where the runtime keeps one.
    pub fn trace_path(&self) -> Option<&Path> {
        self.recorder().map(|r| r.path())
    }

    /// The schedule to run `kernel` with on this runtime: the tuned winner where the
    /// manifest cache holds a trustworthy one ([`ForgeRuntime::tuned_schedule`]), else the
    /// kernel's declared schedule.
    ///
    /// The cache is `<cache dir>/<topology hash>/<name>-<short hash>.json` (see
    /// [`crate::kernel::KernelId::file_stem`]); the cache directory comes from [`ForgeRuntime::new`],
    /// [`RuntimeBuilder::cache_dir`] or `FORGE_CACHE_DIR`. A runtime without one uses the
    /// declared schedule, unless it tuned the kernel itself.
    pub fn schedule_for(&self, kernel: &dyn Kernel) -> Schedule {
        self.tuned_schedule(kernel)
            .unwrap_or_else(|| kernel.default_schedule())
    }

    /// Like [`ForgeRuntime::schedule_for`], for a problem of `threads` logical invocations:
    /// the winner of the nearest tuned problem-size bucket.
    pub fn schedule_for_threads(&self, kernel: &dyn Kernel, threads: u64) -> Schedule {
        self.tuned_manifest(kernel)
            .and_then(|m| m.winner_for(threads))
            .unwrap_or_else(|| kernel.default_schedule())
    }

    /// The tuned schedule for `kernel`, if the manifest cache (or the manifest bundle, or a
    /// tuning done by this runtime) holds a certified winner that this adapter can run. A corrupt, foreign or
    /// stale manifest is ignored with a warning; see [`crate::manifest`].
    ///
    /// ```
    /// # use forge_core::*;
    /// # use forge_core::kernel::*;
    /// # struct K;
    /// # impl Kernel for K {
    /// #     fn name(&self) -> &'static str { "doc_k" }
    /// #     fn wgsl(&self, _: &Schedule) -> String { String::new() }
    /// #     fn layout(&self) -> &'static [Binding] { &[] }
    /// #     fn scalars(&self) -> &'static [ScalarParam] { &[] }
    /// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
    /// #     fn binding_lens_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
    /// #     fn grid_threads_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(1u64)) }
    /// #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
    /// # }
    /// // A fresh cache holds nothing: the declared schedule is used.
    /// let dir = std::env::temp_dir().join(format!("forge-doc-cache-{}", std::process::id()));
    /// let rt = ForgeRuntime::new(16 << 20, Some(dir))?;
    /// assert_eq!(rt.tuned_schedule(&K), None);
    /// assert_eq!(rt.schedule_for(&K), Schedule::with_workgroup(64));
    /// # Ok::<(), ForgeError>(())
    /// ```
    pub fn tuned_schedule(&self, kernel: &dyn Kernel) -> Option<Schedule> {
        self.tuned_manifest(kernel)?.winner()
    }

    /// The trusted manifest for `kernel`, looked up once per runtime and kernel: the
    /// cache's, else the manifest bundle's ([`RuntimeBuilder::manifest_bundle`]); or what
    /// this runtime's tuner wrote.
    pub fn tuned_manifest(&self, kernel: &dyn Kernel) -> Option<Arc<TuningManifest>> {
        let id = kernel.id();
        if self.cache_dir.is_none() && self.bundle.is_none() {
            return self.manifests.peek(&id).flatten();
        }
        self.manifests.get_or_load(&id, || {
            let key = self.manifest_key(kernel);
            self.manifest_cache()
                .and_then(|cache| cache.load(&key, kernel, self.limits()))
                .or_else(|| self.bundle.as_ref()?.load(&key, kernel, self.limits()))
        })
    }

    /// Forgets every manifest read or tuned so far; the next lookup reads the cache again.
    pub fn forget_tuning(&self) {
        self.manifests.clear();
    }

    /// Makes `manifest` the one this runtime uses for `kernel` (the tuner calls this).
    pub(crate) fn remember_tuning(&self, kernel: &dyn Kernel, manifest: TuningManifest) {
        self.manifests.set(&kernel.id(), Some(manifest));
    }
}
