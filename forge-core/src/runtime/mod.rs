//! The runtime: [`ForgeRuntime`], what it is built from, and the schedule it runs each
//! kernel with. Layer 4: it imports the device (layer 3) and everything below; the
//! procedures (timing, certification, tuning, layer 5) build on it.
//!
//! This module owns [`ForgeRuntime`] (its fields are private: the submodules that add
//! methods to it reach the device through [`crate::device::Gpu`]), [`RuntimeBuilder`] and
//! the `FORGE_*` environment variables. Its submodules add the launches:
//! - [`launch`]: a kernel on host slices ([`ForgeRuntime::launch_host`], one submission and
//!   one readback), on device tensors ([`ForgeRuntime::launch_tensors`], recorded, submitted
//!   together), and type-erased ([`ForgeRuntime::run_dyn`]); every one goes through one
//!   [`crate::plan::LaunchPlan`] and one bind-group builder;
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

#[cfg(feature = "cuda")]
pub(crate) mod cuda;
pub mod launch;
pub mod prints;
pub mod tensors;

pub use crate::device::RuntimeStats;
use crate::device::{adapter, Gpu};
use crate::error::{ForgeError, Result};
use crate::kernel::{Feature, Kernel};
use crate::manifest::{ManifestBundle, ManifestCache, ManifestKey, ManifestMemo, TuningManifest};
use crate::schedule::Schedule;
pub use crate::target::Backend;
use crate::topology::HardwareProfile;
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

/// The memory budget a [`RuntimeBuilder`] uses when none is given: 1 GiB.
pub const DEFAULT_CAPACITY: u64 = 1 << 30;

/// Builder for [`ForgeRuntime`]. Settings made here override the `FORGE_*` environment
/// variables; what is left unset is taken from them.
///
/// ```
/// use forge_core::{Backend, ForgeRuntime};
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
    /// `Some(false)` keeps the driver's pipeline cache off disk; `None` follows
    /// `FORGE_PIPELINE_CACHE`.
    pipeline_cache: Option<bool>,
    /// A manifest bundle's bytes, decoded (and checked) by `build`.
    bundle: Option<BundleBytes>,
    /// The trace file; `None` follows `FORGE_TRACE`.
    trace: Option<PathBuf>,
    /// Records a print buffer holds; `None` for [`crate::prints::DEFAULT_CAPACITY`].
    print_capacity: Option<u32>,
    /// The CUDA device ordinal `RuntimeBuilder::cuda` chose.
    cuda: Option<usize>,
}

/// A bundle's bytes as the builder holds them until `build`: debug-printed as a length.
#[derive(Clone)]
struct BundleBytes(std::borrow::Cow<'static, [u8]>);

impl fmt::Debug for BundleBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes", self.0.len())
    }
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

    /// The shader form handed to wgpu (overrides `FORGE_BACKEND`); [`Backend::Cuda`] runs
    /// on CUDA device 0 instead of wgpu (or `FORGE_CUDA_DEVICE`'s), as
    /// `RuntimeBuilder::cuda` does, in a build with the `cuda` feature.
    pub fn emission(mut self, backend: Backend) -> Self {
        self.emission = Some(backend);
        self
    }

    /// Runs on CUDA device `device_index` through the CUDA driver instead of wgpu
    /// (overrides `FORGE_BACKEND`): kernels are compiled from their CUDA C++ by NVRTC for
    /// the device's architecture, tensors live in CUDA memory, and timing uses CUDA events.
    /// The adapter and wgpu settings of this builder do not apply; the capacity, the cache
    /// and the manifest bundle do. See [`crate::device::cuda`] and the README's CUDA
    /// section for what runs there.
    ///
    /// Errors at [`RuntimeBuilder::build`]: libcuda or libnvrtc missing
    /// ([`ForgeError::MissingLibrary`], with a hint), no such device
    /// ([`ForgeError::NoCudaDevice`]).
    #[cfg(feature = "cuda")]
    pub fn cuda(mut self, device_index: usize) -> Self {
        self.cuda = Some(device_index);
        self.emission = Some(Backend::Cuda);
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

    /// Whether the driver's compiled pipelines are kept on disk beside the manifests, so a
    /// later process starts without compiling again (overrides `FORGE_PIPELINE_CACHE`; on
    /// by default, and only where there is a cache directory and the device has
    /// `PIPELINE_CACHE`). See [`crate::device::disk_cache`].
    ///
    /// ```
    /// use forge_core::ForgeRuntime;
    /// let dir = std::env::temp_dir().join(format!("forge-doc-pipecache-{}", std::process::id()));
    /// let rt = ForgeRuntime::builder().cache_dir(&dir).pipeline_cache(false).build().unwrap();
    /// assert_eq!(rt.pipeline_cache_path(), None);
    /// ```
    pub fn pipeline_cache(mut self, on: bool) -> Self {
        self.pipeline_cache = Some(on);
        self
    }

    /// Tuned manifests to fall back on where the cache holds none for a kernel: a bundle
    /// that `forge cache export FILE` wrote, typically embedded in the program with
    /// `include_bytes!`, so that a program running where there is no cache directory (the
    /// web) or on a fresh machine still runs its kernels with the schedules tuned on this
    /// hardware. See [`crate::manifest::bundle`].
    ///
    /// The bundle is checked by [`RuntimeBuilder::build`]: bytes that are not a bundle, or
    /// whose checksum does not match, are a [`ForgeError::BadBundle`] from there. Its
    /// entries are checked when a kernel's schedule is looked up, as the cache's files are
    /// ([`crate::manifest::trust`]): only an entry for this hardware's topology, this
    /// kernel's source, this emission backend and crate version is used; a trusted
    /// manifest in the cache comes first.
    ///
    /// ```
    /// use forge_core::manifest::ManifestBundle;
    /// use forge_core::{ForgeError, ForgeRuntime};
    /// // In a program: `.manifest_bundle(include_bytes!("../tuned.bundle"))`.
    /// let bytes = ManifestBundle::new().to_bytes()?;
    /// let rt = ForgeRuntime::builder().manifest_bundle(bytes.clone()).build()?;
    /// assert_eq!(rt.manifest_bundle().map(|b| b.entries().len()), Some(0));
    /// // A bundle damaged on the way is an error at build time, not a silent fallback.
    /// let damaged = &bytes[..bytes.len() - 3];
    /// let err = ForgeRuntime::builder().manifest_bundle(damaged.to_vec()).build().unwrap_err();
    /// assert!(matches!(err, ForgeError::BadBundle { .. }), "{err}");
    /// # Ok::<(), ForgeError>(())
    /// ```
    pub fn manifest_bundle(mut self, bytes: impl Into<std::borrow::Cow<'static, [u8]>>) -> Self {
        self.bundle = Some(BundleBytes(bytes.into()));
        self
    }

    /// The bundle handed to [`RuntimeBuilder::manifest_bundle`], decoded and checked.
    fn decoded_bundle(&self) -> Result<Option<Arc<ManifestBundle>>> {
        self.bundle
            .as_ref()
            .map(|b| {
                ManifestBundle::decode(&b.0, "handed to `RuntimeBuilder::manifest_bundle`")
                    .map(Arc::new)
            })
            .transpose()
    }

    /// Writes a Chrome / Perfetto trace of the runtime to `path` (overrides
    /// `FORGE_TRACE`): every launch with its schedule and workgroups (on a GPU track, timed
    /// by the GPU's timestamps, where the adapter has `TIMESTAMP_QUERY`), uploads,
    /// downloads, pipeline compiles, certification cases and tuning candidates, and the
    /// host's `tracing` spans where `trace::SpanLayer` (feature `spans`) is installed. The file is
    /// written at once (a path that cannot be written fails [`RuntimeBuilder::build`]),
    /// again by [`ForgeRuntime::flush_trace`] and when the runtime drops, each time
    /// atomically. Runtimes that trace to one path share it; see [`crate::trace`].
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("forge-doc-trace-{}.json", std::process::id()));
    /// let mut rt = forge_core::ForgeRuntime::builder().trace(&path).build()?;
    /// let t = rt.upload(&[1u32, 2, 3])?;
    /// assert_eq!(rt.download(&t)?, vec![1, 2, 3]);
    /// rt.flush_trace()?;
    /// let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    /// let names: Vec<&str> = trace["traceEvents"].as_array().unwrap().iter()
    ///     .filter(|e| e["ph"] == "X").map(|e| e["name"].as_str().unwrap()).collect();
    /// assert_eq!(names, ["upload", "download"]);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// The trace's recorder, from this builder's path or `FORGE_TRACE`'s; it is created
    /// (and the file written) here, so a bad path is an error before the device opens.
    fn recorder(&self) -> Result<Option<Arc<crate::trace::Recorder>>> {
        let path = match &self.trace {
            Some(p) => p.clone(),
            None => match env_nonempty(ENV_TRACE) {
                Some(p) => PathBuf::from(p),
                None => return Ok(None),
            },
        };
        crate::trace::Recorder::shared(&path).map(Some)
    }

    /// How many `debug_print!` records the print buffer of one launch holds (default
    /// [`crate::prints::DEFAULT_CAPACITY`], at least 1). Prints past it are dropped, and
    /// [`ForgeRuntime::take_prints`] ends that launch's lines with how many were.
    ///
    /// ```
    /// let rt = forge_core::ForgeRuntime::builder().print_capacity(16).build().unwrap();
    /// assert_eq!(rt.print_capacity(), 16);
    /// ```
    pub fn print_capacity(mut self, records: u32) -> Self {
        self.print_capacity = Some(records);
        self
    }

    /// Finds the adapter, opens the device and builds the runtime.
    pub fn build(self) -> Result<ForgeRuntime> {
        crate::blocking::block_on("building a runtime", self.build_async())
    }

    /// [`RuntimeBuilder::build`], awaited: the form a browser can use, where the adapter
    /// is WebGPU's.
    pub async fn build_async(self) -> Result<ForgeRuntime> {
        let (emission, cache_dir, capacity) = self.settings()?;
        // Checked before an adapter is looked for: a bad bundle fails at once.
        let bundle = self.decoded_bundle()?;
        if emission == Backend::Cuda {
            return self.build_cuda(cache_dir, capacity, bundle);
        }
        let trace = self.recorder()?;
        let persist_pipelines = self.persist_pipelines();
        let filter = match self.adapter {
            Some(name) => Some((name, "the builder")),
            None => env_nonempty(ENV_ADAPTER).map(|name| (name, ENV_ADAPTER)),
        };
        let adapters = match self.backends.or_else(wgpu::Backends::from_env) {
            Some(backends) => adapter::enumerate_async(backends).await,
            // Vulkan, Metal and DX12 first; GL only where none of them has an adapter, since
            // probing GL on a headless machine is slow and noisy.
            None => {
                let primary = adapter::enumerate_async(wgpu::Backends::PRIMARY).await;
                if primary.is_empty() {
                    adapter::enumerate_async(wgpu::Backends::all()).await
                } else {
                    primary
                }
            }
        };
        let adapter = adapter::select_adapter(
            adapters,
            filter.as_ref().map(|(n, src)| (n.as_str(), *src)),
            emission,
        )?;
        let gpu = Gpu::open_async(adapter, capacity, self.without).await?;
        Ok(ForgeRuntime::on(
            gpu,
            emission,
            cache_dir,
            persist_pipelines,
            bundle,
            trace,
            self.print_capacity,
        ))
    }

    /// Builds the runtime on the application's own wgpu device and queue, and the adapter
    /// they came from, instead of opening one: see [`ForgeRuntime::from_wgpu`]. The
    /// adapter settings of this builder do not apply; the emission backend, the capacity
    /// and the cache do.
    pub fn build_on(
        self,
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> Result<ForgeRuntime> {
        let (emission, cache_dir, capacity) = self.settings()?;
        let bundle = self.decoded_bundle()?;
        if emission == Backend::Cuda {
            return Err(ForgeError::InvalidArgument {
                kernel: "RuntimeBuilder::build_on",
                message: "the `cuda` backend runs on a CUDA device, not on a wgpu device handed over; use `build`".into(),
            });
        }
        if emission.needs_passthrough()
            && !(adapter.get_info().backend == wgpu::Backend::Vulkan
                && device
                    .features()
                    .contains(wgpu::Features::PASSTHROUGH_SHADERS))
        {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    ": emission `{emission}` needs a Vulkan device with PASSTHROUGH_SHADERS, and the one handed over \
                     ({}) is not; use `wgsl`",
                    adapter::describe(&adapter.get_info())
                ),
            });
        }
        let trace = self.recorder()?;
        let gpu = Gpu::from_wgpu(adapter, device, queue, capacity);
        Ok(ForgeRuntime::on(
            gpu,
            emission,
            cache_dir,
            self.persist_pipelines(),
            bundle,
            trace,
            self.print_capacity,
        ))
    }

    /// The runtime on a CUDA device: the ordinal `RuntimeBuilder::cuda` chose, else
    /// `FORGE_CUDA_DEVICE`'s, else 0.
    #[cfg(feature = "cuda")]
    fn build_cuda(
        &self,
        cache_dir: Option<PathBuf>,
        capacity: u64,
        bundle: Option<Arc<ManifestBundle>>,
    ) -> Result<ForgeRuntime> {
        let index = match self.cuda {
            Some(i) => i,
            None => match env_nonempty(ENV_CUDA_DEVICE) {
                Some(v) => v.trim().parse().map_err(|_| ForgeError::InvalidArgument {
                    kernel: ENV_CUDA_DEVICE,
                    message: format!("`{v}` is not a device ordinal (0, 1, ...)"),
                })?,
                None => 0,
            },
        };
        if self.trace.is_some() || env_nonempty(ENV_TRACE).is_some() {
            tracing::warn!("the CUDA backend writes no trace; FORGE_TRACE is ignored");
        }
        let gpu = crate::device::cuda::CudaGpu::open(index, capacity)?;
        Ok(ForgeRuntime::on_cuda(
            gpu,
            cache_dir,
            bundle,
            self.print_capacity,
        ))
    }

    /// Without the `cuda` feature there is no CUDA backend: the error says how to get one.
    #[cfg(not(feature = "cuda"))]
    fn build_cuda(
        &self,
        _cache_dir: Option<PathBuf>,
        _capacity: u64,
        _bundle: Option<Arc<ManifestBundle>>,
    ) -> Result<ForgeRuntime> {
        Err(ForgeError::NotBuilt {
            what: "the `cuda` backend (FORGE_BACKEND=cuda, `Backend::Cuda`)".into(),
            feature: "cuda",
        })
    }

    /// Whether to persist the driver's pipeline cache: this builder's choice, else
    /// `FORGE_PIPELINE_CACHE`'s.
    fn persist_pipelines(&self) -> bool {
        self.pipeline_cache
            .unwrap_or_else(crate::device::disk_cache::enabled_by_env)
    }

    /// The emission backend, cache directory and capacity: this builder's, else the
    /// environment's, else the defaults.
    fn settings(&self) -> Result<(Backend, Option<PathBuf>, u64)> {
        if self.cuda.is_some() && self.emission != Some(Backend::Cuda) {
            return Err(ForgeError::InvalidArgument {
                kernel: "RuntimeBuilder",
                message:
                    "`cuda(..)` and `emission(..)` of a wgpu backend were both given; keep one"
                        .into(),
            });
        }
        let emission = match self.emission {
            Some(b) => b,
            None => match env_nonempty(ENV_BACKEND) {
                Some(name) => Backend::parse(&name)?,
                None => Backend::Wgsl,
            },
        };
        let cache_dir = self
            .cache_dir
            .clone()
            .or_else(|| env_nonempty(ENV_CACHE_DIR).map(PathBuf::from));
        Ok((
            emission,
            cache_dir,
            self.capacity.unwrap_or(DEFAULT_CAPACITY),
        ))
    }
}

/// The value of an environment variable, or `None` when it is unset, empty or not UTF-8.
fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Every adapter wgpu can see on any backend (or on those `WGPU_BACKEND` names), for
/// `forge info`.
pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
    adapter::enumerate_adapters()
}

/// The wgpu runtime that runs kernels.
///
/// One runtime owns one device, opened by the runtime ([`ForgeRuntime::new`],
/// [`ForgeRuntime::builder`]) or the application's ([`ForgeRuntime::from_wgpu`]). Methods
/// take `&mut self`: the buffer pool, pipeline cache and pending command encoder are per
/// runtime.
pub struct ForgeRuntime {
    gpu: Device,
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
}

/// The device a runtime runs on: a wgpu device, or (the `cuda` feature) a CUDA one. The
/// launches, transfers and timers match on it once, at their start; everything below
/// that point is one backend's code. The wgpu device stays inline (no pointer more on the
/// path every wgpu call takes); the rarer CUDA one is boxed.
#[allow(clippy::large_enum_variant)]
enum Device {
    Wgpu(Gpu),
    #[cfg(feature = "cuda")]
    Cuda(Box<crate::device::cuda::CudaGpu>),
}

/// What an operation that exists only on wgpu says on a CUDA runtime.
#[cfg(feature = "cuda")]
#[cold]
#[track_caller]
fn wgpu_only() -> ! {
    panic!("this needs a wgpu device, and the runtime runs on CUDA (`ForgeRuntime::is_cuda`)")
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
    /// [`ForgeError::MissingFeature`]. It installs no callback on the device; see
    /// [`Gpu::from_wgpu`].
    ///
    /// ```
    /// # fn main() -> Result<(), forge_core::ForgeError> {
    /// let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    /// let adapter = pollster::block_on(instance.request_adapter(&Default::default())).expect("an adapter");
    /// let (device, queue) = pollster::block_on(adapter.request_device(&Default::default())).expect("a device");
    /// let mut rt = forge_core::ForgeRuntime::from_wgpu(adapter, device.clone(), queue)?;
    /// assert!(rt.device() == &device);
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

    fn on(
        mut gpu: Gpu,
        emission: Backend,
        cache_dir: Option<PathBuf>,
        persist_pipelines: bool,
        bundle: Option<Arc<ManifestBundle>>,
        trace: Option<Arc<crate::trace::Recorder>>,
        print_capacity: Option<u32>,
    ) -> Self {
        if let Some(recorder) = trace {
            gpu.attach_trace(recorder);
        }
        let profile = HardwareProfile::from_parts(
            gpu.info(),
            &gpu.adapter().limits(),
            gpu.adapter().features(),
        );
        if let (true, Some(dir)) = (persist_pipelines, &cache_dir) {
            // Beside the manifests of this topology: the same hardware, the same driver.
            gpu.attach_disk_cache(&dir.join(profile.topology_hash()));
        }
        tracing::debug!(adapter = %gpu.info().name, backend = ?gpu.info().backend, %emission, "forge runtime ready");
        ForgeRuntime {
            gpu: Device::Wgpu(gpu),
            emission,
            cache_dir,
            profile,
            manifests: ManifestMemo::default(),
            bundle,
            prints: prints::Prints::new(print_capacity),
        }
    }

    /// A runtime on a CUDA device (the `cuda` feature): the profile names the backend
    /// `cuda`, so that its manifests never meet a wgpu adapter's.
    #[cfg(feature = "cuda")]
    fn on_cuda(
        gpu: crate::device::cuda::CudaGpu,
        cache_dir: Option<PathBuf>,
        bundle: Option<Arc<ManifestBundle>>,
        print_capacity: Option<u32>,
    ) -> Self {
        let mut profile = HardwareProfile::from_parts(gpu.info(), gpu.limits(), gpu.features());
        profile.backend = Backend::Cuda.name().to_string();
        tracing::debug!(device = %gpu.info().name, arch = gpu.arch(), "forge runtime ready on CUDA");
        ForgeRuntime {
            gpu: Device::Cuda(Box::new(gpu)),
            emission: Backend::Cuda,
            cache_dir,
            profile,
            manifests: ManifestMemo::default(),
            bundle,
            prints: prints::Prints::new(print_capacity),
        }
    }

    /// The wgpu device layer: what the launches, the timing and the tests of this crate
    /// reach the device through. Only on wgpu: the operations that run on CUDA too
    /// branch off before they get here.
    #[inline]
    pub(crate) fn gpu(&self) -> &Gpu {
        match &self.gpu {
            Device::Wgpu(g) => g,
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => wgpu_only(),
        }
    }

    /// The device layer, to allocate, record and submit.
    #[inline]
    pub(crate) fn gpu_mut(&mut self) -> &mut Gpu {
        match &mut self.gpu {
            Device::Wgpu(g) => g,
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => wgpu_only(),
        }
    }

    /// The CUDA device, where the runtime runs on one.
    #[cfg(feature = "cuda")]
    #[inline]
    pub(crate) fn cuda_gpu(&mut self) -> Option<&mut crate::device::cuda::CudaGpu> {
        match &mut self.gpu {
            Device::Cuda(g) => Some(g),
            Device::Wgpu(_) => None,
        }
    }

    /// Whether the runtime runs on CUDA (`RuntimeBuilder::cuda`, `FORGE_BACKEND=cuda`)
    /// instead of wgpu. The methods that hand out wgpu objects ([`ForgeRuntime::device`],
    /// [`ForgeRuntime::queue`], [`ForgeRuntime::adapter`], [`crate::GpuTensor::buffer`])
    /// have none to hand out there.
    pub fn is_cuda(&self) -> bool {
        match &self.gpu {
            Device::Wgpu(_) => false,
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => true,
        }
    }

    /// The adapter's description: name, vendor, backend, driver. On CUDA: the device's
    /// name, NVIDIA's vendor id, the compute capability as `device` (90 on an H200),
    /// driver `CUDA` and its version, and wgpu's `Noop` backend (the profile says `cuda`).
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        match &self.gpu {
            Device::Wgpu(g) => g.info(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.info(),
        }
    }

    /// The wgpu adapter the device was opened on.
    ///
    /// # Panics
    /// On a CUDA runtime, which has no wgpu adapter ([`ForgeRuntime::is_cuda`]).
    pub fn adapter(&self) -> &wgpu::Adapter {
        self.gpu().adapter()
    }

    /// The device's limits (on a device the runtime opened: the adapter's full limits; on
    /// CUDA: the device's block, shared-memory and memory limits in wgpu's terms).
    pub fn limits(&self) -> &wgpu::Limits {
        match &self.gpu {
            Device::Wgpu(g) => g.limits(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.limits(),
        }
    }

    /// The features enabled on the device (on CUDA: what its CUDA emission can use).
    pub fn features(&self) -> wgpu::Features {
        match &self.gpu {
            Device::Wgpu(g) => g.features(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.features(),
        }
    }

    /// Whether the device has a feature that kernels may need; a kernel that uses one the
    /// device lacks fails with [`ForgeError::MissingFeature`].
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

    /// The wgpu device.
    ///
    /// # Panics
    /// On a CUDA runtime, which has no wgpu device ([`ForgeRuntime::is_cuda`]).
    pub fn device(&self) -> &wgpu::Device {
        self.gpu().device()
    }

    /// The wgpu queue.
    ///
    /// # Panics
    /// On a CUDA runtime, which has no wgpu queue ([`ForgeRuntime::is_cuda`]).
    pub fn queue(&self) -> &wgpu::Queue {
        self.gpu().queue()
    }

    /// The memory budget in bytes.
    pub fn capacity(&self) -> u64 {
        match &self.gpu {
            Device::Wgpu(g) => g.capacity(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.budget().capacity(),
        }
    }

    /// The manifest cache directory, if any.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The shader form handed to wgpu.
    pub fn emission(&self) -> Backend {
        self.emission
    }

    /// A number that no other runtime of this process has. Every tensor carries the id of
    /// the runtime that made it ([`GpuTensor::runtime_id`](crate::GpuTensor::runtime_id)),
    /// and a runtime refuses another's tensors with [`ForgeError::ForeignTensor`].
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
        match &self.gpu {
            Device::Wgpu(g) => g.id(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.id(),
        }
    }

    /// What the runtime has done so far.
    pub fn stats(&self) -> RuntimeStats {
        match &self.gpu {
            Device::Wgpu(g) => g.stats(),
            #[cfg(feature = "cuda")]
            Device::Cuda(g) => g.stats(),
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

    /// The compiled pipeline for `kernel` at `schedule` with the runtime's emission backend,
    /// compiling it on first use. `params` says whether the layout ends with the uniform.
    pub fn pipeline(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: bool,
    ) -> Result<Arc<crate::device::pipeline::CompiledPipeline>> {
        if self.is_cuda() {
            return Err(ForgeError::InvalidArgument {
                kernel: kernel.name(),
                message: "a CUDA runtime has no wgpu pipelines; its kernels compile at their first launch, or in `warm_up`".into(),
            });
        }
        let emission = self.emission;
        self.gpu_mut().pipeline(kernel, schedule, emission, params)
    }

    /// Compiles, ahead of their first call, the pipelines `kernels` will launch with (each
    /// at [`ForgeRuntime::schedule_for`], the schedule a call without a size bucket uses),
    /// on a thread each where the platform has threads, so the first calls do not wait on
    /// the compiler. Returns how many pipelines were compiled; cached ones are skipped.
    /// With a persisted pipeline cache ([`RuntimeBuilder::pipeline_cache`]), the work is
    /// saved for the next process by [`ForgeRuntime::save_pipeline_cache`] or on drop.
    ///
    /// Errors: a kernel needs a feature the device lacks ([`ForgeError::MissingFeature`]),
    /// a shader the driver rejects ([`ForgeError::ShaderCompile`]); the others still compile.
    pub fn warm_up(&mut self, kernels: &[&dyn Kernel]) -> Result<usize> {
        let jobs: Vec<(&dyn Kernel, Schedule, bool)> = kernels
            .iter()
            .map(|&k| (k, self.schedule_for(k), !k.scalars().is_empty()))
            .collect();
        let emission = self.emission;
        #[cfg(feature = "cuda")]
        if let Some(gpu) = self.cuda_gpu() {
            // NVRTC, one kernel after another: the CUDA device is one context.
            let mut compiled = 0;
            let mut first_error = None;
            for (k, s, _) in &jobs {
                let before = gpu.stats().pipelines_compiled;
                match gpu.kernel(*k, s) {
                    Ok(_) => compiled += (gpu.stats().pipelines_compiled - before) as usize,
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            return match first_error {
                Some(e) => Err(e),
                None => Ok(compiled),
            };
        }
        self.gpu_mut().warm_up(&jobs, emission)
    }

    /// The file the driver's compiled pipelines persist to, where this runtime keeps one
    /// (a cache directory, a device with `PIPELINE_CACHE`, and not turned off).
    pub fn pipeline_cache_path(&self) -> Option<&Path> {
        match &self.gpu {
            Device::Wgpu(g) => g.disk_cache().map(|c| c.path()),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => None,
        }
    }

    /// Bytes of compiled pipelines the persisted cache started from: 0 when the file was
    /// missing or not trusted; `None` without a persisted cache.
    pub fn pipeline_cache_loaded_bytes(&self) -> Option<usize> {
        match &self.gpu {
            Device::Wgpu(g) => g.disk_cache().map(|c| c.loaded_bytes()),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => None,
        }
    }

    /// Writes the driver's pipeline cache now, if pipelines were compiled since it was last
    /// written (dropping the runtime does the same, logging a failure instead of returning
    /// it). Returns whether it wrote. Errors: the file cannot be written
    /// ([`ForgeError::Io`]) or is not ours to replace ([`ForgeError::RefusedPath`]).
    pub fn save_pipeline_cache(&mut self) -> Result<bool> {
        match &mut self.gpu {
            Device::Wgpu(g) => g.save_disk_cache(),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => Ok(false),
        }
    }

    /// Writes the trace now, whole, after waiting for the GPU times of launches already
    /// submitted (dropping the runtime does the same, logging a failure instead of
    /// returning it). Returns whether the runtime traces ([`RuntimeBuilder::trace`]).
    /// Errors: the file cannot be written ([`ForgeError::Io`]) or is not ours to replace
    /// ([`ForgeError::RefusedPath`]).
    pub fn flush_trace(&mut self) -> Result<bool> {
        match &mut self.gpu {
            Device::Wgpu(g) => g.flush_trace(),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => Ok(false),
        }
    }

    /// A host event of the trace that ends when it drops (one that records nothing without
    /// a trace): what the procedures time their steps with.
    pub(crate) fn trace_event(&self, cat: &'static str, name: &str) -> crate::trace::HostEvent {
        crate::trace::HostEvent::begin(self.recorder(), cat, name)
    }

    /// When a traced operation began: `None` without a trace (always on CUDA).
    pub(crate) fn trace_start(&self) -> Option<web_time::Instant> {
        self.recorder().map(|_| web_time::Instant::now())
    }

    /// The trace's recorder, where the runtime keeps one (never on CUDA).
    pub(crate) fn recorder(&self) -> Option<&Arc<crate::trace::Recorder>> {
        match &self.gpu {
            Device::Wgpu(g) => g.trace(),
            #[cfg(feature = "cuda")]
            Device::Cuda(_) => None,
        }
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
    /// #     fn binding_lens(&self, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
    /// #     fn threads(&self, _: &[ScalarValue]) -> Result<u64> { Ok(1) }
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
