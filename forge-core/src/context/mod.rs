//! The runtime context: adapter selection, device and queue, limits and features, the
//! emission backend, error capture, and the statistics that tests use to prove caching.
//!
//! This module owns [`ForgeRuntime`] itself (its fields are shared with the buffers,
//! pipeline, dispatch and tensor modules, which add methods to it), [`RuntimeBuilder`],
//! [`Backend`] and [`RuntimeStats`].
//!
//! Everything wgpu can report goes through here:
//! - operations run inside error scopes ([`error_scope`]), so validation and out-of-memory
//!   errors come back as [`ForgeError`] values instead of wgpu's default panic;
//! - an uncaptured-error handler logs whatever escapes a scope;
//! - a device-lost callback turns every later call into [`ForgeError::DeviceLost`].

use crate::buffers::{BufferPool, MemoryBudget};
use crate::dispatch::Pending;
use crate::error::{ForgeError, Result};
use crate::kernel::Kernel;
use crate::pipeline::PipelineCache;
use crate::schedule::Schedule;
use crate::topology::HardwareProfile;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// Environment variable: a case-insensitive substring of the adapter's name.
pub const ENV_ADAPTER: &str = "FORGE_ADAPTER";
/// Environment variable: the emission backend, `wgsl` or `spirv`.
pub const ENV_BACKEND: &str = "FORGE_BACKEND";
/// Environment variable: the manifest cache directory.
pub const ENV_CACHE_DIR: &str = "FORGE_CACHE_DIR";

/// The memory budget a [`RuntimeBuilder`] uses when none is given: 1 GiB.
pub const DEFAULT_CAPACITY: u64 = 1 << 30;

/// Which shader form the runtime hands to wgpu.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// WGSL source (every wgpu backend).
    Wgsl,
    /// SPIR-V translated by naga, through passthrough (Vulkan only).
    Spirv,
}

impl Backend {
    /// The valid names, as error messages list them.
    pub const VALID: &'static str = "wgsl, spirv";

    /// Parses `wgsl` or `spirv` (case-insensitive, surrounding spaces ignored). A name that
    /// can only be emitted (`msl`, `hlsl`, `glsl`: see [`crate::emit`]) is
    /// [`ForgeError::BackendNotExecutable`]; anything else is [`ForgeError::UnknownBackend`].
    /// Both list the valid names; there is no silent fallback.
    ///
    /// ```
    /// use forge_core::context::Backend;
    /// assert_eq!(Backend::parse("SPIRV").unwrap(), Backend::Spirv);
    /// assert!(Backend::parse("metal").is_err());
    /// assert!(Backend::parse("msl").is_err());
    /// ```
    pub fn parse(name: &str) -> Result<Backend> {
        match name.trim().to_ascii_lowercase().as_str() {
            "wgsl" => Ok(Backend::Wgsl),
            "spirv" => Ok(Backend::Spirv),
            _ if crate::emit::Target::parse(name).is_ok() => {
                Err(ForgeError::BackendNotExecutable {
                    name: name.trim().to_ascii_lowercase(),
                    valid: Self::VALID,
                })
            }
            _ => Err(ForgeError::UnknownBackend {
                name: name.to_string(),
                valid: Self::VALID,
            }),
        }
    }

    /// The lower-case name: `wgsl` or `spirv`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Wgsl => "wgsl",
            Backend::Spirv => "spirv",
        }
    }
}

impl FromStr for Backend {
    type Err = ForgeError;

    fn from_str(s: &str) -> Result<Self> {
        Backend::parse(s)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Counters that show what the runtime did, for tests and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Compute pipelines created.
    pub pipelines_compiled: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Buffer readbacks (maps for reading).
    pub readbacks: u64,
    /// Buffers created: pool misses and tensors.
    pub buffers_created: u64,
    /// Buffers reused from the pool.
    pub buffers_reused: u64,
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Bytes of device buffers alive now (pooled, leased and tensors), against the capacity.
    pub bytes_in_use: u64,
}

/// Builder for [`ForgeRuntime`]. Settings made here override the `FORGE_*` environment
/// variables; what is left unset is taken from them.
///
/// ```
/// use forge_core::context::{Backend, ForgeRuntime};
/// let rt = ForgeRuntime::builder().capacity(64 << 20).emission(Backend::Wgsl).build().unwrap();
/// assert_eq!(rt.capacity(), 64 << 20);
/// ```
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    adapter: Option<String>,
    backends: Option<wgpu::Backends>,
    emission: Option<Backend>,
    capacity: Option<u64>,
    cache_dir: Option<PathBuf>,
    without: wgpu::Features,
}

impl RuntimeBuilder {
    /// Picks the adapter whose name contains `name`, ignoring case (overrides
    /// `FORGE_ADAPTER`).
    pub fn adapter(mut self, name: impl Into<String>) -> Self {
        self.adapter = Some(name.into());
        self
    }

    /// Picks an adapter of one wgpu backend, e.g. `wgpu::Backend::Vulkan`. Shorthand for
    /// [`RuntimeBuilder::wgpu_backends`] with that one backend.
    pub fn backend(self, backend: wgpu::Backend) -> Self {
        self.wgpu_backends(wgpu::Backends::from(backend))
    }

    /// Restricts the wgpu backends searched for adapters (Vulkan, Metal, DX12, GL). The
    /// default is every backend wgpu was built with, or `WGPU_BACKEND` where set.
    pub fn wgpu_backends(mut self, backends: wgpu::Backends) -> Self {
        self.backends = Some(backends);
        self
    }

    /// The shader form handed to wgpu (overrides `FORGE_BACKEND`).
    pub fn emission(mut self, backend: Backend) -> Self {
        self.emission = Some(backend);
        self
    }

    /// The memory budget in bytes for buffers and tensors. Defaults to [`DEFAULT_CAPACITY`].
    pub fn capacity(mut self, bytes: u64) -> Self {
        self.capacity = Some(bytes);
        self
    }

    /// The manifest cache directory (overrides `FORGE_CACHE_DIR`).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Opens the device without this optional feature even where the adapter has it, to run
    /// or test what a program does on adapters that lack it. A kernel that needs it then
    /// fails with [`ForgeError::MissingFeature`].
    ///
    /// ```
    /// use forge_core::{Feature, ForgeRuntime};
    /// let rt = ForgeRuntime::builder().without_feature(Feature::Subgroups).build().unwrap();
    /// assert!(!rt.supports(Feature::Subgroups));
    /// ```
    pub fn without_feature(mut self, feature: crate::kernel::Feature) -> Self {
        self.without |= feature.wgpu();
        self
    }

    /// Finds the adapter, opens the device and builds the runtime.
    pub fn build(self) -> Result<ForgeRuntime> {
        let filter = match self.adapter {
            Some(name) => Some((name, "the builder")),
            None => env_nonempty(ENV_ADAPTER).map(|name| (name, ENV_ADAPTER)),
        };
        let emission = match self.emission {
            Some(b) => b,
            None => match env_nonempty(ENV_BACKEND) {
                Some(name) => Backend::parse(&name)?,
                None => Backend::Wgsl,
            },
        };
        let cache_dir = self
            .cache_dir
            .or_else(|| env_nonempty(ENV_CACHE_DIR).map(PathBuf::from));
        let capacity = self.capacity.unwrap_or(DEFAULT_CAPACITY);
        let adapters = match self.backends.or_else(wgpu::Backends::from_env) {
            Some(backends) => enumerate(backends),
            // Vulkan, Metal and DX12 first; GL only where none of them has an adapter, since
            // probing GL on a headless machine is slow and noisy.
            None => {
                let primary = enumerate(wgpu::Backends::PRIMARY);
                if primary.is_empty() {
                    enumerate(wgpu::Backends::all())
                } else {
                    primary
                }
            }
        };
        let adapter = select_adapter(
            adapters,
            filter.as_ref().map(|(n, src)| (n.as_str(), *src)),
            emission,
        )?;
        ForgeRuntime::open(adapter, emission, capacity, cache_dir, self.without)
    }
}

/// The value of an environment variable, or `None` when it is unset, empty or not UTF-8.
fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn make_instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    // Not the debug-build default: the Vulkan validation layers would slow every dispatch
    // many times over. WGPU_VALIDATION=1 and friends still turn them on.
    desc.flags = wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL.with_env();
    wgpu::Instance::new(desc)
}

fn enumerate(backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    pollster::block_on(make_instance(backends).enumerate_adapters(backends))
}

/// Every adapter wgpu can see on any backend (or on those `WGPU_BACKEND` names), for
/// `forge info`.
pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
    enumerate(wgpu::Backends::all().with_env())
        .iter()
        .map(wgpu::Adapter::get_info)
        .collect()
}

fn describe(info: &wgpu::AdapterInfo) -> String {
    format!(
        "`{}` [{:?}, {:?}]",
        info.name, info.backend, info.device_type
    )
}

/// Lower is better: real GPUs first, then virtual ones, then CPU rasterisers.
fn type_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn backend_rank(b: wgpu::Backend) -> u8 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::Gl => 1,
        _ => 2,
    }
}

fn select_adapter(
    adapters: Vec<wgpu::Adapter>,
    filter: Option<(&str, &str)>,
    emission: Backend,
) -> Result<wgpu::Adapter> {
    let seen: Vec<String> = adapters.iter().map(|a| describe(&a.get_info())).collect();
    let seen_list = if seen.is_empty() {
        "none".to_string()
    } else {
        seen.join(", ")
    };
    let mut candidates: Vec<wgpu::Adapter> = adapters;
    if let Some((name, source)) = filter {
        let needle = name.to_lowercase();
        candidates.retain(|a| a.get_info().name.to_lowercase().contains(&needle));
        if candidates.is_empty() {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    " whose name contains `{name}` (set by {source}); adapters seen: {seen_list}"
                ),
            });
        }
    }
    if emission == Backend::Spirv {
        candidates.retain(|a| {
            a.get_info().backend == wgpu::Backend::Vulkan
                && a.features().contains(wgpu::Features::PASSTHROUGH_SHADERS)
        });
        if candidates.is_empty() {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    " that runs SPIR-V (emission `spirv` needs a Vulkan adapter with PASSTHROUGH_SHADERS; use `wgsl` \
                     elsewhere); adapters seen: {seen_list}"
                ),
            });
        }
    }
    candidates.sort_by_key(|a| {
        let info = a.get_info();
        (type_rank(info.device_type), backend_rank(info.backend))
    });
    candidates
        .into_iter()
        .next()
        .ok_or_else(|| ForgeError::NoAdapter {
            detail: format!(" (wgpu saw no adapter; adapters seen: {seen_list})"),
        })
}

/// Whether a device opened on `adapter` zeroes workgroup memory itself: a Vulkan 1.3
/// device, where `shaderZeroInitializeWorkgroupMemory` is required and wgpu enables it.
/// SPIR-V for such a device gives workgroup variables a null initializer instead of
/// zeroing code ([`crate::emit::SpirvProfile`]).
#[cfg(not(any(target_arch = "wasm32", target_vendor = "apple")))]
pub(crate) fn vulkan_zeroes_workgroup_memory(adapter: &wgpu::Adapter) -> bool {
    /// `VK_MAKE_API_VERSION(0, 1, 3, 0)`.
    const VULKAN_1_3: u32 = (1 << 22) | (3 << 12);
    // SAFETY: reads the properties the adapter queried when it was enumerated; nothing is
    // created, destroyed or changed through the handle.
    let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() };
    hal.is_some_and(|a| a.physical_device_capabilities().properties().api_version >= VULKAN_1_3)
}

/// Without wgpu's Vulkan backend there is no SPIR-V execution to tune.
#[cfg(any(target_arch = "wasm32", target_vendor = "apple"))]
pub(crate) fn vulkan_zeroes_workgroup_memory(_adapter: &wgpu::Adapter) -> bool {
    false
}

/// The optional features the runtime asks for when the adapter has them.
fn wanted_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SHADER_F64
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SUBGROUP_BARRIER
        | wgpu::Features::PASSTHROUGH_SHADERS
}

/// Runs `f` inside validation, out-of-memory and internal error scopes, and returns the
/// first error any of them caught.
pub fn error_scope<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    // Scopes pop in reverse order of pushing.
    let v = pollster::block_on(validation.pop());
    let o = pollster::block_on(oom.pop());
    let i = pollster::block_on(internal.pop());
    (out, v.or(o).or(i))
}

/// The text of a wgpu error, with its sources.
pub fn error_text(err: &wgpu::Error) -> String {
    let mut text = match err {
        wgpu::Error::OutOfMemory { .. } => "out of memory".to_string(),
        other => other.to_string(),
    };
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The wgpu runtime that runs kernels.
///
/// One runtime owns one device. Methods take `&mut self`: the buffer pool, pipeline cache
/// and pending command encoder are per runtime.
pub struct ForgeRuntime {
    pub(crate) adapter: wgpu::Adapter,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgpu::Limits,
    pub(crate) features: wgpu::Features,
    pub(crate) emission: Backend,
    pub(crate) cache_dir: Option<PathBuf>,
    pub(crate) profile: HardwareProfile,
    pub(crate) pool: BufferPool,
    pub(crate) pipelines: PipelineCache,
    pub(crate) pending: Option<Pending>,
    pub(crate) stats: RuntimeStats,
    /// Tuning manifests read from the cache (or just tuned), once per kernel.
    pub(crate) manifests: crate::manifest::ManifestMemo,
    lost: Arc<Mutex<Option<String>>>,
}

impl fmt::Debug for ForgeRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForgeRuntime")
            .field("adapter", &self.info.name)
            .field("backend", &self.info.backend)
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

    /// A builder to choose the adapter, wgpu backends, emission backend, capacity and cache.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Every adapter wgpu can see; see [`enumerate_adapters`].
    pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
        enumerate_adapters()
    }

    fn open(
        adapter: wgpu::Adapter,
        emission: Backend,
        capacity: u64,
        cache_dir: Option<PathBuf>,
        without: wgpu::Features,
    ) -> Result<Self> {
        let info = adapter.get_info();
        let required_features = adapter.features() & wanted_features() & !without;
        // The adapter's own limits, not wgpu's conservative defaults: large buffers need them.
        let required_limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("forge device"),
            required_features,
            required_limits,
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            ForgeError::NoAdapter {
                detail: format!(": {} refused to open a device: {e}", describe(&info)),
            }
        })?;

        let lost = Arc::new(Mutex::new(None));
        let lost_in_cb = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            tracing::warn!(?reason, %message, "GPU device lost");
            if let Ok(mut slot) = lost_in_cb.lock() {
                *slot = Some(format!("{reason:?}: {message}"));
            }
        });
        device.on_uncaptured_error(Arc::new(|err: wgpu::Error| {
            // Everything the runtime does runs inside error scopes; whatever lands here came
            // from direct use of `device()`. Log it instead of wgpu's default panic.
            tracing::error!(error = %error_text(&err), "uncaptured wgpu error");
        }));

        let limits = device.limits();
        let features = device.features();
        let profile = HardwareProfile::from_adapter(&adapter);
        tracing::debug!(adapter = %info.name, backend = ?info.backend, %emission, "forge runtime ready");
        Ok(ForgeRuntime {
            adapter,
            device,
            queue,
            info,
            limits,
            features,
            emission,
            cache_dir,
            profile,
            pool: BufferPool::new(MemoryBudget::new(capacity)),
            pipelines: PipelineCache::default(),
            pending: None,
            stats: RuntimeStats::default(),
            manifests: Default::default(),
            lost,
        })
    }

    /// The adapter's description: name, vendor, backend, driver.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The wgpu adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The device's limits (the adapter's full limits).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// The features enabled on the device.
    pub fn features(&self) -> wgpu::Features {
        self.features
    }

    /// Whether the device has a feature that kernels may need; a kernel that uses one the
    /// device lacks fails with [`ForgeError::MissingFeature`].
    pub fn supports(&self, feature: crate::kernel::Feature) -> bool {
        self.features.contains(feature.wgpu())
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The memory budget in bytes.
    pub fn capacity(&self) -> u64 {
        self.pool.budget().capacity()
    }

    /// The manifest cache directory, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The shader form handed to wgpu.
    pub fn emission(&self) -> Backend {
        self.emission
    }

    /// What the runtime has done so far.
    pub fn stats(&self) -> RuntimeStats {
        RuntimeStats {
            pipelines_compiled: self.pipelines.compiled(),
            buffers_created: self.pool.created() + self.stats.buffers_created,
            buffers_reused: self.pool.reused(),
            bytes_in_use: self.pool.budget().in_use(),
            ..self.stats
        }
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

    /// The manifest cache under [`ForgeRuntime::cache_dir`], if the runtime has one.
    pub fn manifest_cache(&self) -> Option<crate::manifest::ManifestCache> {
        self.cache_dir
            .as_ref()
            .map(crate::manifest::ManifestCache::new)
    }

    /// The schedule to run `kernel` with on this runtime: the tuned winner where the
    /// manifest cache holds a trustworthy one ([`ForgeRuntime::tuned_schedule`]), else the
    /// kernel's declared schedule.
    ///
    /// The cache is `<cache dir>/<topology hash>/<kernel>.json`; the cache directory comes
    /// from [`ForgeRuntime::new`], [`RuntimeBuilder::cache_dir`] or `FORGE_CACHE_DIR`. A
    /// runtime without one uses the declared schedule, unless it tuned the kernel itself.
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

    /// The tuned schedule for `kernel`, if the manifest cache (or a tuning done by this
    /// runtime) holds a certified winner that this adapter can run. A corrupt, foreign or
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
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace { workgroup: &[64], items: &[1], vector: &[1] } }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
    /// #     fn binding_lens(&self, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
    /// #     fn threads(&self, _: &[ScalarValue]) -> Result<u64> { Ok(1) }
    /// #     fn run_dyn(&self, _: &mut ForgeRuntime, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
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

    /// The trusted manifest for `kernel`: read from the cache once per runtime and kernel,
    /// or what this runtime's tuner wrote.
    pub fn tuned_manifest(
        &self,
        kernel: &dyn Kernel,
    ) -> Option<Arc<crate::manifest::TuningManifest>> {
        if self.cache_dir.is_none() {
            return self.manifests.peek(kernel).flatten();
        }
        self.manifests.get_or_load(kernel, || {
            self.manifest_cache()
                .and_then(|cache| cache.load(self, kernel))
        })
    }

    /// Forgets every manifest read or tuned so far; the next lookup reads the cache again.
    pub fn forget_tuning(&self) {
        self.manifests.clear();
    }

    /// Makes `manifest` the one this runtime uses for `kernel` (the tuner calls this).
    pub(crate) fn remember_tuning(
        &self,
        kernel: &dyn Kernel,
        manifest: crate::manifest::TuningManifest,
    ) {
        self.manifests.set(kernel, Some(manifest));
    }

    /// Fails with [`ForgeError::DeviceLost`] once the device is gone.
    pub(crate) fn check_lost(&self) -> Result<()> {
        match self.lost.lock() {
            Ok(slot) => match slot.as_ref() {
                Some(msg) => Err(ForgeError::DeviceLost(msg.clone())),
                None => Ok(()),
            },
            Err(_) => Err(ForgeError::DeviceLost(
                "the device-lost state was poisoned".into(),
            )),
        }
    }

    /// `err`, unless the device turns out to be lost, which explains it better. wgpu only
    /// reports a loss while polling, so this polls once, without blocking.
    pub(crate) fn explain(&self, err: ForgeError) -> ForgeError {
        let _ =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.device.poll(wgpu::PollType::Poll)));
        match self.check_lost() {
            Err(lost) => lost,
            Ok(()) => err,
        }
    }

    /// Blocks until the queue is idle and map callbacks have run.
    pub(crate) fn wait(&self) -> Result<()> {
        // wgpu panics from `poll` when the device is lost mid-wait; that is a DeviceLost here.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.device.poll(wgpu::PollType::wait_indefinitely())
        }));
        match polled {
            Ok(Ok(_)) => self.check_lost(),
            Ok(Err(e)) => {
                self.check_lost()?;
                Err(ForgeError::Gpu {
                    context: "waiting for the GPU",
                    message: e.to_string(),
                })
            }
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "wgpu panicked while waiting".to_string());
                if let Ok(mut slot) = self.lost.lock() {
                    slot.get_or_insert_with(|| msg.clone());
                }
                Err(ForgeError::DeviceLost(msg))
            }
        }
    }
}
