//! Opening a runtime: [`RuntimeBuilder`], which picks the backend and its device, and the
//! `FORGE_*` environment variables it falls back on. Part of the runtime (layer 5).
//!
//! This is the one place that names a backend's device type: the builder opens a wgpu
//! [`Gpu`] (on an adapter it finds, or on the application's device) or, with the `cuda`
//! feature, a CUDA device, and hands the runtime a [`Device`] it never asks about again.

use super::{
    ForgeRuntime, DEFAULT_CAPACITY, ENV_ADAPTER, ENV_BACKEND, ENV_CACHE_DIR, ENV_CUDA_DEVICE,
    ENV_TIMEOUT, ENV_TRACE,
};
use crate::backend::Device;
use crate::device::{adapter, Gpu};
use crate::error::{ForgeError, Result};
use crate::manifest::ManifestBundle;
use crate::target::Backend;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

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
    /// The adapter `RuntimeBuilder::on_adapter` chose, instead of a search.
    on_adapter: Option<wgpu::Adapter>,
    /// The bound of blocking waits; `None` follows `FORGE_TIMEOUT`.
    timeout: Option<std::time::Duration>,
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

    /// Opens the device on this adapter instead of searching for one (the name filter, the
    /// wgpu backends and `FORGE_ADAPTER` do not apply): what a
    /// [`crate::group::DeviceGroup`] opens each of its devices with, from
    /// [`group_adapters`]. Each [`RuntimeBuilder::build`] opens a new device on it, so
    /// that one adapter can carry several runtimes.
    ///
    /// ```
    /// use forge_core::runtime::{group_adapters, RuntimeBuilder};
    /// let adapter = group_adapters().into_iter().next().expect("an adapter");
    /// let builder = RuntimeBuilder::default().on_adapter(adapter);
    /// let (a, b) = (builder.clone().build()?, builder.build()?);
    /// assert_eq!(a.topology_hash(), b.topology_hash());
    /// assert_ne!(a.id(), b.id());
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn on_adapter(mut self, adapter: wgpu::Adapter) -> Self {
        self.on_adapter = Some(adapter);
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
    /// and the manifest bundle do. See `forge_core::device::cuda` (the `cuda` feature) and
    /// the README's CUDA section for what runs there.
    ///
    /// Errors at [`RuntimeBuilder::build`]: a build without the `cuda` feature
    /// ([`ForgeError::NotBuilt`], which says how to get it), libcuda or libnvrtc missing
    /// ([`ForgeError::MissingLibrary`], with a hint), no such device
    /// ([`ForgeError::NoCudaDevice`]).
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
            None => match crate::env::path(ENV_TRACE)? {
                Some(p) => p,
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

    /// Bounds every blocking wait for the device (overrides `FORGE_TIMEOUT`; none by
    /// default): a readback, a `sync`, a timing. A kernel that has not finished by then
    /// (one that never ends, or runs far longer than expected) makes the call return
    /// [`ForgeError::Timeout`], naming the kernels in flight; the device may still be
    /// running them, so the runtime refuses every later call with the same error, at once,
    /// and never waits on it again: create a new runtime. On lavapipe a loop never runs
    /// past 65,535 iterations ([`crate::emit::loop_guard`]), so a kernel ends there, though
    /// a large one may take long. See the book's Backends page for what a kernel that never
    /// ends does on each backend.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut rt = forge_core::ForgeRuntime::builder().timeout(Duration::from_secs(60)).build()?;
    /// let t = rt.upload(&[1u32, 2, 3])?;
    /// assert_eq!(rt.download(&t)?, vec![1, 2, 3]);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The timeout: this builder's, else `FORGE_TIMEOUT`'s, else none.
    fn wait_bound(&self) -> Result<Option<std::time::Duration>> {
        match self.timeout {
            Some(t) if t.is_zero() => Err(ForgeError::InvalidArgument {
                kernel: "RuntimeBuilder::timeout",
                message: "a timeout of zero would refuse every wait; leave it unset for none"
                    .into(),
            }),
            Some(t) => Ok(Some(t)),
            None => crate::env::seconds(ENV_TIMEOUT),
        }
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
        let timeout = self.wait_bound()?;
        if emission == Backend::Cuda {
            return self.build_cuda(cache_dir, capacity, bundle);
        }
        let trace = self.recorder()?;
        let persist_pipelines = self.persist_pipelines()?;
        if let Some(chosen) = self.on_adapter.clone() {
            // No filter: the adapter was chosen; SPIR-V emission still needs passthrough.
            let adapter = adapter::select_adapter(vec![chosen], None, emission)?;
            let mut gpu = Gpu::open_async(adapter, capacity, self.without).await?;
            gpu.set_timeout(timeout)?;
            return Ok(self.on_gpu(
                gpu.emitting(emission),
                cache_dir,
                persist_pipelines,
                bundle,
                trace,
            ));
        }
        let filter = match self.adapter.clone() {
            Some(name) => Some((name, "the builder")),
            None => crate::env::var(ENV_ADAPTER)?.map(|name| (name, ENV_ADAPTER)),
        };
        let adapters = searched_adapters(self.backends).await;
        let adapter = adapter::select_adapter(
            adapters,
            filter.as_ref().map(|(n, src)| (n.as_str(), *src)),
            emission,
        )?;
        let mut gpu = Gpu::open_async(adapter, capacity, self.without).await?;
        gpu.set_timeout(timeout)?;
        Ok(self.on_gpu(
            gpu.emitting(emission),
            cache_dir,
            persist_pipelines,
            bundle,
            trace,
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
        let mut gpu = Gpu::from_wgpu(adapter, device, queue, capacity).emitting(emission);
        gpu.set_timeout(self.wait_bound()?)?;
        let persist_pipelines = self.persist_pipelines()?;
        Ok(self.on_gpu(gpu, cache_dir, persist_pipelines, bundle, trace))
    }

    /// The runtime on `device`, any backend's (a custom one included): the emission is the
    /// device's; the cache, the manifest bundle, the trace and the print capacity are this
    /// builder's (the capacity is the device's own budget, and the adapter settings do not
    /// apply). What [`RuntimeBuilder::build`] does once it has opened a device.
    ///
    /// ```
    /// use forge_core::{device::Gpu, wgpu, ForgeRuntime};
    /// let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    /// let adapter = pollster::block_on(instance.request_adapter(&Default::default())).expect("an adapter");
    /// let gpu = Gpu::open(adapter, 16 << 20, Default::default())?;
    /// let mut rt = ForgeRuntime::builder().build_with(Box::new(gpu))?;
    /// let t = rt.upload(&[1u32, 2, 3])?;
    /// assert_eq!((rt.capacity(), rt.download(&t)?), (16 << 20, vec![1, 2, 3]));
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn build_with(self, mut device: Box<dyn Device>) -> Result<ForgeRuntime> {
        let (_, cache_dir, _) = self.settings()?;
        device.set_timeout(self.wait_bound()?)?;
        let bundle = self.decoded_bundle()?;
        let trace = self.recorder()?;
        Ok(ForgeRuntime::on(
            device,
            cache_dir,
            bundle,
            trace,
            self.print_capacity,
        ))
    }

    /// The runtime on a wgpu device, with the driver's pipeline cache on disk where asked.
    fn on_gpu(
        &self,
        mut gpu: Gpu,
        cache_dir: Option<PathBuf>,
        persist_pipelines: bool,
        bundle: Option<Arc<ManifestBundle>>,
        trace: Option<Arc<crate::trace::Recorder>>,
    ) -> ForgeRuntime {
        if let (true, Some(dir)) = (persist_pipelines, &cache_dir) {
            // Beside the manifests of this topology: the same hardware, the same driver.
            gpu.attach_disk_cache(&dir.join(gpu.profile().topology_hash()));
        }
        ForgeRuntime::on(Box::new(gpu), cache_dir, bundle, trace, self.print_capacity)
    }

    /// The runtime on a CUDA device: the ordinal `RuntimeBuilder::cuda` chose, else
    /// `FORGE_CUDA_DEVICE`'s, else 0. Without the `cuda` feature the device module says
    /// how to get one ([`ForgeError::NotBuilt`]).
    fn build_cuda(
        &self,
        cache_dir: Option<PathBuf>,
        capacity: u64,
        bundle: Option<Arc<ManifestBundle>>,
    ) -> Result<ForgeRuntime> {
        let index = match self.cuda {
            Some(i) => i,
            None => match crate::env::var(ENV_CUDA_DEVICE)? {
                Some(v) => v.trim().parse().map_err(|_| ForgeError::BadEnvVar {
                    var: ENV_CUDA_DEVICE,
                    reason: format!(
                        "is `{}`, which is not a device ordinal (0, 1, ...)",
                        crate::shown::shown(&v)
                    ),
                })?,
                None => 0,
            },
        };
        let mut device = crate::device::cuda::open(index, capacity)?;
        device.set_timeout(self.wait_bound()?)?;
        if self.trace.is_some() || crate::env::var(ENV_TRACE)?.is_some() {
            tracing::warn!("the CUDA backend writes no trace; FORGE_TRACE is ignored");
        }
        Ok(ForgeRuntime::on(
            device,
            cache_dir,
            bundle,
            None,
            self.print_capacity,
        ))
    }

    /// Whether the builder opens a CUDA device (its own choice, else `FORGE_BACKEND`'s).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn targets_cuda(&self) -> Result<bool> {
        Ok(self.settings()?.0 == Backend::Cuda)
    }

    /// Whether to persist the driver's pipeline cache: this builder's choice, else
    /// `FORGE_PIPELINE_CACHE`'s (an error when it holds no on or off word).
    fn persist_pipelines(&self) -> Result<bool> {
        match self.pipeline_cache {
            Some(on) => Ok(on),
            None => crate::device::disk_cache::enabled_by_env(),
        }
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
            None => match crate::env::var(ENV_BACKEND)? {
                Some(name) => Backend::parse(&name)?,
                None => Backend::Wgsl,
            },
        };
        let cache_dir = match &self.cache_dir {
            Some(dir) => Some(dir.clone()),
            None => crate::env::path(ENV_CACHE_DIR)?,
        };
        // Read when a launch prints; checked here, so that a bad value fails the build
        // rather than passing unnoticed.
        crate::prints::to_stderr()?;
        Ok((
            emission,
            cache_dir,
            self.capacity.unwrap_or(DEFAULT_CAPACITY),
        ))
    }
}

/// Every adapter wgpu can see on any backend (or on those `WGPU_BACKEND` names), for
/// `forge info`.
pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
    adapter::enumerate_adapters()
}

/// The adapters a search looks at: those of `backends`, else of `WGPU_BACKEND`'s, else of
/// Vulkan, Metal and DX12, and of GL only where none of them has one (probing GL on a
/// headless machine is slow and noisy).
async fn searched_adapters(backends: Option<wgpu::Backends>) -> Vec<wgpu::Adapter> {
    match backends.or_else(wgpu::Backends::from_env) {
        Some(backends) => adapter::enumerate_async(backends).await,
        None => {
            let primary = adapter::enumerate_async(wgpu::Backends::PRIMARY).await;
            if primary.is_empty() {
                adapter::enumerate_async(wgpu::Backends::all()).await
            } else {
                primary
            }
        }
    }
}

/// The adapters a [`crate::group::DeviceGroup`] spans when it takes every device: each GPU
/// once, in the order wgpu lists them. A machine shows one GPU on several wgpu backends
/// (DX12 and Vulkan on Windows), so they all come from one backend, the one that shows the
/// most; CPU rasterisers (lavapipe) only where there is no GPU. `WGPU_BACKEND` restricts
/// the backends, as for a search.
pub fn group_adapters() -> Vec<wgpu::Adapter> {
    let adapters = crate::blocking::block_on("enumerating adapters", async {
        Ok(searched_adapters(None).await)
    })
    .unwrap_or_default();
    let gpu = |a: &wgpu::Adapter| a.get_info().device_type != wgpu::DeviceType::Cpu;
    let any_gpu = adapters.iter().any(gpu);
    let kept: Vec<wgpu::Adapter> = adapters
        .into_iter()
        .filter(|a| !any_gpu || gpu(a))
        .collect();
    let mut backends: Vec<wgpu::Backend> = kept.iter().map(|a| a.get_info().backend).collect();
    backends.dedup();
    // The backend showing the most adapters; on a tie, the first wgpu listed.
    let Some(best) = backends
        .iter()
        .copied()
        .rev()
        .max_by_key(|b| kept.iter().filter(|a| a.get_info().backend == *b).count())
    else {
        return Vec::new();
    };
    kept.into_iter()
        .filter(|a| a.get_info().backend == best)
        .collect()
}

/// The number of CUDA devices the driver sees. Errors: a build without the `cuda` feature
/// ([`ForgeError::NotBuilt`]), libcuda missing ([`ForgeError::MissingLibrary`]).
pub fn cuda_device_count() -> Result<usize> {
    crate::device::cuda::device_count()
}

/// NCCL's version as `major·10000 + minor·100 + patch`: whether the group's collectives
/// can run on NCCL here. Errors: a build without the `nccl` feature
/// ([`ForgeError::NotBuilt`]), libnccl missing ([`ForgeError::MissingLibrary`]).
pub fn nccl_version() -> Result<i32> {
    crate::device::nccl::version()
}

/// NCCL's engine of collectives over the CUDA devices `ordinals`, in rank order: see
/// [`crate::device::nccl::open`]. Errors: a build without the `nccl` feature
/// ([`ForgeError::NotBuilt`]), libnccl missing ([`ForgeError::MissingLibrary`]).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn open_nccl(ordinals: &[usize]) -> Result<Box<dyn crate::backend::Collectives>> {
    crate::device::nccl::open(ordinals)
}
