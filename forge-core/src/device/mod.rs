//! The device: one wgpu adapter, device and queue, and everything that talks to them.
//! Layer 3: it imports values (layer 1) and the emitters (layer 2), never the runtime.
//!
//! This module owns [`Gpu`], the seam between the runtime and a GPU API:
//! - **the device:** opened on an adapter ([`Gpu::open`]) or handed over by the
//!   application ([`Gpu::from_wgpu`]), with its limits, features and identity
//!   ([`Gpu::id`]);
//! - **errors:** every operation runs inside error scopes ([`error_scope`]), so validation
//!   and out-of-memory errors come back as [`ForgeError`] values instead of wgpu's default
//!   panic; a device-lost callback (on devices the runtime opened) turns every later call
//!   into [`ForgeError::DeviceLost`];
//! - **memory:** the buffer pool and the memory budget ([`buffers`]);
//! - **submission and readback:** a pending encoder that launches on device tensors
//!   accumulate in ([`Gpu::record`]), one submission for the pending work and a call's own
//!   ([`Gpu::submit`]), one mapped readback ([`Gpu::read`]);
//! - **pipelines:** the cache of compiled pipelines, the one bind-group builder and the cache
//!   of bind groups on pooled buffers
//!   ([`pipeline`]), and the driver's pipeline cache persisted on disk ([`disk_cache`]);
//! - **the trace**, where the runtime keeps one: compiles as host events, launches timed
//!   by the GPU's timestamps inside the submissions they travel in ([`trace`]).
//!
//! The runtime (layer 4) owns one `Gpu` and reaches the device only through it. A backend
//! that is not wgpu plugs in here: CUDA does (`cuda`, with the `cuda` feature), as a second
//! device type the runtime holds instead of a `Gpu`, with the same budget, limits,
//! features and identity, and its own memory, kernels, launches and events.

pub mod adapter;
pub mod buffers;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod disk_cache;
pub mod pipeline;
pub mod trace;

use crate::error::{ForgeError, Result};
use buffers::{BufferPool, Lease, MemoryBudget, Reservation};
use disk_cache::DiskPipelineCache;
use pipeline::{BindGroupCache, CompiledPipeline, PipelineCache};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use trace::DeviceTrace;

/// Storage bindings: bound, uploaded to, copied from.
pub const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);
/// The `Params` uniform.
pub const UNIFORM_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::UNIFORM.union(wgpu::BufferUsages::COPY_DST);
/// Readback staging.
pub const STAGING_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

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
    /// Bind groups created for calls on pooled buffers (the rest came from the cache).
    pub bind_groups_created: u64,
}

/// Runs `f` inside validation, out-of-memory and internal error scopes, and returns the
/// first error any of them caught.
///
/// In a browser the scopes' answers arrive later, through the event loop: there `f`'s
/// error (if any) is kept and reported by the next readback ([`Gpu::read_async`]), so a
/// failed dispatch still fails the call whose results it would have produced.
pub fn error_scope<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    // Scopes pop in reverse order of pushing; each pop takes effect at once, and its
    // future only carries the answer.
    let pops = [validation.pop(), oom.pop(), internal.pop()];
    #[cfg(not(target_arch = "wasm32"))]
    {
        let [v, o, i] = pops.map(pollster::block_on);
        (out, v.or(o).or(i))
    }
    #[cfg(target_arch = "wasm32")]
    {
        deferred::keep(pops);
        (out, None)
    }
}

/// The browser's error-scope answers not yet awaited: [`error_scope`] keeps them, the
/// next readback awaits them. One thread (the page's), so a thread-local.
#[cfg(target_arch = "wasm32")]
mod deferred {
    use std::cell::RefCell;
    use std::future::Future;
    use std::pin::Pin;

    type Pop = Pin<Box<dyn Future<Output = Option<wgpu::Error>>>>;

    thread_local! {
        static PENDING: RefCell<Vec<Pop>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn keep(pops: [impl Future<Output = Option<wgpu::Error>> + 'static; 3]) {
        PENDING.with(|p| {
            p.borrow_mut()
                .extend(pops.into_iter().map(|f| Box::pin(f) as Pop))
        });
    }

    /// The first error among every scope kept so far (all are awaited and dropped).
    pub(super) async fn first_error() -> Option<wgpu::Error> {
        let pops = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        let mut first = None;
        for pop in pops {
            let e = pop.await;
            first = first.or(e);
        }
        first
    }
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

/// Writes `data` at offset 0 of `buffer`, zero-padded to whole words. The write lands
/// before the commands of the next submission.
pub fn write_padded(queue: &wgpu::Queue, buffer: &wgpu::Buffer, data: &[u8]) {
    let padded = buffers::align_up(data.len() as u64, buffers::COPY_ALIGN) as usize;
    if padded == data.len() {
        queue.write_buffer(buffer, 0, data);
    } else {
        let mut tmp = Vec::with_capacity(padded);
        tmp.extend_from_slice(data);
        tmp.resize(padded, 0);
        queue.write_buffer(buffer, 0, &tmp);
    }
}

/// Dispatches and copies recorded and not yet submitted, with the pooled buffers they read
/// (uniforms, staging), which must not be reused before the submission.
#[derive(Debug)]
struct Pending {
    encoder: wgpu::CommandEncoder,
    retained: Vec<Lease>,
}

/// A one-shot outcome set by a wgpu callback (a buffer map, the queue's work done): taken at
/// once after a native wait, or awaited in a browser, where the callback runs from the
/// event loop. Awaiting gives `None` only if the lock was poisoned.
struct Signal<T>(Arc<Mutex<SignalState<T>>>);

struct SignalState<T> {
    value: Option<T>,
    waker: Option<std::task::Waker>,
}

impl<T> Default for Signal<T> {
    fn default() -> Self {
        Signal(Arc::new(Mutex::new(SignalState {
            value: None,
            waker: None,
        })))
    }
}

impl<T> Clone for Signal<T> {
    fn clone(&self) -> Self {
        Signal(self.0.clone())
    }
}

impl<T> Signal<T> {
    fn set(&self, value: T) {
        if let Ok(mut state) = self.0.lock() {
            state.value = Some(value);
            if let Some(waker) = state.waker.take() {
                waker.wake();
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn take(&self) -> Option<T> {
        self.0.lock().ok()?.value.take()
    }
}

impl<T> std::future::Future for Signal<T> {
    type Output = Option<T>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let Ok(mut state) = self.0.lock() else {
            return std::task::Poll::Ready(None);
        };
        match state.value.take() {
            Some(v) => std::task::Poll::Ready(Some(v)),
            None => {
                state.waker = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        }
    }
}

/// A buffer map's outcome.
type MapSignal = Signal<std::result::Result<(), wgpu::BufferAsyncError>>;

/// Hands out [`Gpu::id`]s (and the CUDA device's: one counter, so no two devices share one).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A device id no other device of this process has.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// One device and what runs on it: see the [module docs](self).
#[derive(Debug)]
pub struct Gpu {
    /// The runtime's trace, if it keeps one; first, so that it is written (after waiting
    /// for the GPU's last timestamps) while the rest is still alive.
    trace: Option<DeviceTrace>,
    id: u64,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    features: wgpu::Features,
    /// Set by the device-lost callback (only on devices this runtime opened).
    lost: Arc<Mutex<Option<String>>>,
    pool: BufferPool,
    pipelines: PipelineCache,
    /// Bind groups of calls on pooled buffers.
    bind_groups: BindGroupCache,
    /// The driver's pipeline cache on disk, where the runtime attached one.
    disk_cache: Option<DiskPipelineCache>,
    pending: Option<Pending>,
    submissions: u64,
    readbacks: u64,
    dispatches: u64,
    /// Buffers created outside the pool: tensors.
    tensors_created: u64,
}

impl Gpu {
    /// Opens a device on `adapter` with every optional feature kernels may use that the
    /// adapter has, minus `without`, and the adapter's own limits (large buffers need
    /// them), with a memory budget of `capacity` bytes.
    pub fn open(adapter: wgpu::Adapter, capacity: u64, without: wgpu::Features) -> Result<Gpu> {
        crate::blocking::block_on(
            "opening a device",
            Self::open_async(adapter, capacity, without),
        )
    }

    /// [`Gpu::open`], awaited: the form a browser can use.
    pub async fn open_async(
        adapter: wgpu::Adapter,
        capacity: u64,
        without: wgpu::Features,
    ) -> Result<Gpu> {
        let info = adapter.get_info();
        let required_features = adapter.features() & adapter::wanted_features() & !without;
        let desc = wgpu::DeviceDescriptor {
            label: Some("forge device"),
            required_features,
            required_limits: adapter.limits(),
            // The one experimental feature requested is cooperative matrices, and only where
            // the adapter has them: wgpu refuses it without this token.
            experimental_features: if required_features
                .intersects(wgpu::Features::all_experimental_mask())
            {
                // SAFETY: wgpu asks its user to accept that experimental features may have
                // bugs; only kernels that use cooperative matrices reach that code, and
                // each is certified against the oracle on the device that runs it.
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) =
            adapter
                .request_device(&desc)
                .await
                .map_err(|e| ForgeError::NoAdapter {
                    detail: format!(
                        ": {} refused to open a device: {e}",
                        adapter::describe(&info)
                    ),
                })?;
        let gpu = Gpu::new(adapter, device, queue, capacity);
        let lost = Arc::clone(&gpu.lost);
        gpu.device.set_device_lost_callback(move |reason, message| {
            tracing::warn!(?reason, %message, "GPU device lost");
            if let Ok(mut slot) = lost.lock() {
                *slot = Some(format!("{reason:?}: {message}"));
            }
        });
        gpu.device.on_uncaptured_error(Arc::new(|err: wgpu::Error| {
            // Everything the runtime does runs inside error scopes; whatever lands here came
            // from direct use of the device. Log it instead of wgpu's default panic.
            tracing::error!(error = %error_text(&err), "uncaptured wgpu error");
        }));
        Ok(gpu)
    }

    /// The application's own device, queue and the adapter they came from, with a memory
    /// budget of `capacity` bytes for the buffers the runtime allocates.
    ///
    /// The device keeps the callbacks the application gave it: the runtime installs no
    /// device-lost callback and no uncaptured-error handler, which would replace the
    /// application's. Everything the runtime does still runs inside error scopes; a lost
    /// device shows up as the error of the operation that met it.
    pub fn from_wgpu(
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
        capacity: u64,
    ) -> Gpu {
        Gpu::new(adapter, device, queue, capacity)
    }

    fn new(adapter: wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue, capacity: u64) -> Gpu {
        Gpu {
            trace: None,
            id: next_id(),
            info: adapter.get_info(),
            limits: device.limits(),
            features: device.features(),
            adapter,
            device,
            queue,
            lost: Arc::new(Mutex::new(None)),
            pool: BufferPool::new(MemoryBudget::new(capacity)),
            pipelines: PipelineCache::default(),
            bind_groups: BindGroupCache::default(),
            disk_cache: None,
            pending: None,
            submissions: 0,
            readbacks: 0,
            dispatches: 0,
            tensors_created: 0,
        }
    }

    /// A number that no other `Gpu` of this process has: what tells one runtime's device
    /// objects from another's.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The adapter's description.
    pub fn info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The device's limits.
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// The features enabled on the device.
    pub fn features(&self) -> wgpu::Features {
        self.features
    }

    /// The buffer pool and its budget.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// The memory budget in bytes.
    pub fn capacity(&self) -> u64 {
        self.pool.budget().capacity()
    }

    /// What the device has done so far.
    pub fn stats(&self) -> RuntimeStats {
        RuntimeStats {
            pipelines_compiled: self.pipelines.compiled(),
            submissions: self.submissions,
            readbacks: self.readbacks,
            buffers_created: self.pool.created() + self.tensors_created,
            buffers_reused: self.pool.reused(),
            dispatches: self.dispatches,
            bytes_in_use: self.pool.budget().in_use(),
            bind_groups_created: self.bind_groups.created(),
        }
    }

    /// Persists the driver's pipeline cache in `dir` from now on (loading what an earlier
    /// process left there), where the device can have one; see [`disk_cache`]. Returns
    /// whether it is attached.
    pub fn attach_disk_cache(&mut self, dir: &std::path::Path) -> bool {
        if self.disk_cache.is_none() {
            self.disk_cache = DiskPipelineCache::open(&self.device, &self.info, dir);
        }
        self.disk_cache.is_some()
    }

    /// The persisted pipeline cache, if one is attached.
    pub fn disk_cache(&self) -> Option<&DiskPipelineCache> {
        self.disk_cache.as_ref()
    }

    /// Writes the persisted pipeline cache now if pipelines were created since it was last
    /// written; returns whether it wrote. Without an attached cache it does nothing.
    pub fn save_disk_cache(&mut self) -> Result<bool> {
        match &mut self.disk_cache {
            Some(c) => c.save(),
            None => Ok(false),
        }
    }

    /// Records this device's work into `recorder` from now on: compiles and, where the
    /// device has timestamps, launches on its GPU track ([`trace`]).
    pub fn attach_trace(&mut self, recorder: Arc<crate::trace::Recorder>) {
        self.trace = Some(DeviceTrace::new(
            recorder,
            &self.device,
            &self.queue,
            self.id,
            &self.info.name,
        ));
    }

    /// The recorder of the trace, for host events; `None` (one branch) without a trace.
    pub fn trace(&self) -> Option<&Arc<crate::trace::Recorder>> {
        self.trace.as_ref().map(DeviceTrace::recorder)
    }

    /// Now, where the runtime traces: the start of a host event (`None`, one branch,
    /// without a trace).
    pub fn trace_start(&self) -> Option<web_time::Instant> {
        self.trace.as_ref().map(|_| web_time::Instant::now())
    }

    /// Adds the host event of a launch of `kernel` that began at `start` (from
    /// [`Gpu::trace_start`]).
    pub fn trace_launch(
        &self,
        start: Option<web_time::Instant>,
        kernel: &'static str,
        schedule: &crate::schedule::Schedule,
        workgroups: [u32; 3],
    ) {
        if let (Some(rec), Some(start)) = (self.trace(), start) {
            rec.host(
                "launch",
                kernel,
                start,
                trace::launch_args(schedule, workgroups),
            );
        }
    }

    /// Where a launch's compute pass writes its timestamps (see
    /// [`DeviceTrace::pass_queries`]); `None` without a trace or timestamps. `args` is
    /// only called when the launch is timed.
    pub fn pass_queries(
        &mut self,
        kernel: &'static str,
        args: impl FnOnce() -> serde_json::Map<String, serde_json::Value>,
    ) -> Option<(wgpu::QuerySet, u32)> {
        let t = self.trace.as_mut()?;
        if !t.has_gpu_clock() {
            return None;
        }
        t.pass_queries(kernel, args())
    }

    /// Gives back the queries of a pass that was not recorded; see
    /// [`DeviceTrace::cancel_pass`].
    pub fn cancel_pass_queries(&mut self, queries: &Option<(wgpu::QuerySet, u32)>) {
        if let (Some(t), Some((_, first))) = (self.trace.as_mut(), queries) {
            t.cancel_pass(*first);
        }
    }

    /// Waits for the GPU times still out and writes the trace; returns whether there is a
    /// trace. The trace is written again, whole, when the device drops.
    pub fn flush_trace(&mut self) -> Result<bool> {
        match &mut self.trace {
            Some(t) => t.finish().map(|()| true),
            None => Ok(false),
        }
    }

    /// Counts one compute dispatch recorded.
    pub fn count_dispatch(&mut self) {
        self.dispatches += 1;
    }

    /// A pooled buffer of at least `bytes` bytes with `usage`; see
    /// [`BufferPool::acquire`].
    pub fn acquire(
        &mut self,
        bytes: u64,
        usage: wgpu::BufferUsages,
        what: &dyn Fn() -> String,
    ) -> Result<Lease> {
        let max = self.limits.max_buffer_size;
        self.pool.acquire(&self.device, bytes, usage, max, what)
    }

    /// Gives a pooled buffer back.
    pub fn release(&mut self, lease: Lease) {
        self.pool.release(lease);
    }

    /// The bind group of a launch of `plan` on pooled buffers, from the cache where an
    /// earlier call bound the same ones; see [`BindGroupCache`].
    pub fn pooled_bind_group(
        &mut self,
        compiled: &CompiledPipeline,
        plan: &crate::plan::LaunchPlan,
        storage: &[&wgpu::Buffer],
        uniform: Option<&wgpu::Buffer>,
        prints: Option<(u32, &wgpu::Buffer)>,
    ) -> Result<wgpu::BindGroup> {
        let frees = self.pool.frees();
        let bound = pipeline::Bound {
            storage,
            uniform,
            prints,
        };
        self.bind_groups
            .get(&self.device, frees, compiled, plan, bound)
    }

    /// Reserves `bytes` of the budget for a buffer outside the pool (a tensor), freeing idle
    /// pooled buffers while that helps.
    pub fn reserve(&mut self, bytes: u64, what: &dyn Fn() -> String) -> Result<Reservation> {
        self.pool.reserve_evicting(bytes, what)
    }

    /// Creates a buffer outside the pool (a tensor's), optionally filled with `init` (the
    /// rest zeroed), and counts it.
    pub fn create_buffer(
        &mut self,
        size: u64,
        usage: wgpu::BufferUsages,
        init: Option<&[u8]>,
    ) -> Result<wgpu::Buffer> {
        let device = &self.device;
        let (buffer, err) = error_scope(device, || {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forge tensor"),
                size,
                usage,
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
            return Err(self.gpu_error("creating a tensor", &e));
        }
        self.tensors_created += 1;
        Ok(buffer)
    }

    /// A `COPY_SRC` buffer of `size` bytes (a multiple of 4) holding `data`, zero-padded:
    /// the source of a write that must travel in an encoder, behind pending work.
    pub fn create_staging(&self, data: &[u8], size: u64) -> Result<wgpu::Buffer> {
        let device = &self.device;
        let (staging, err) = error_scope(device, || {
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("forge write staging"),
                size,
                usage: wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            });
            if let Ok(mut view) = staging.get_mapped_range_mut(..) {
                view.slice(..data.len()).copy_from_slice(data);
                view.slice(data.len()..).fill(0);
            }
            staging.unmap();
            staging
        });
        match err {
            Some(e) => Err(self.gpu_error("writing a tensor", &e)),
            None => Ok(staging),
        }
    }

    /// Whether `buffer` was made on this device, found by binding its first `size` bytes
    /// (a multiple of 4, within the buffer) as read-only storage: wgpu refuses a buffer of
    /// another device there. `Err` holds why.
    ///
    /// A buffer of another wgpu *instance* is looked up among this instance's objects by
    /// its id; wgpu panics when the id names none of them (caught here, and reported as
    /// the same error), but cannot notice when it happens to name one of this instance's
    /// own buffers. Hand over the device of the instance that made the buffers.
    pub fn owns(&self, buffer: &wgpu::Buffer, size: u64) -> std::result::Result<(), String> {
        let device = &self.device;
        let probe = || {
            error_scope(device, || {
                let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("forge buffer probe"),
                    entries: &[wgpu::BindGroupLayoutEntry {
                        binding: 0,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only: true },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    }],
                });
                let _probe = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("forge buffer probe"),
                    layout: &layout,
                    entries: &[wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer,
                            offset: 0,
                            size: wgpu::BufferSize::new(size),
                        }),
                    }],
                });
            })
        };
        // The error scopes pop as their guards drop, so an unwind leaves none behind.
        match std::panic::catch_unwind(AssertUnwindSafe(probe)) {
            Ok(((), None)) => Ok(()),
            Ok(((), Some(e))) => Err(error_text(&e)),
            Err(_) => {
                Err("wgpu does not know the buffer: it belongs to another wgpu instance".into())
            }
        }
    }

    /// A new command encoder.
    pub fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Runs `f` on the pending encoder (made on first use), inside error scopes: what it
    /// records is submitted with the next [`Gpu::submit`] or [`Gpu::flush`], after what was
    /// recorded before it. `context` names the step in the error.
    pub fn record<R>(
        &mut self,
        context: &'static str,
        f: impl FnOnce(&mut wgpu::CommandEncoder) -> R,
    ) -> Result<R> {
        let device = &self.device;
        let pending = self.pending.get_or_insert_with(|| Pending {
            encoder: device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forge pending"),
            }),
            retained: Vec::new(),
        });
        let (out, err) = error_scope(device, || f(&mut pending.encoder));
        match err {
            Some(e) => Err(self.gpu_error(context, &e)),
            None => Ok(out),
        }
    }

    /// Keeps `lease` alive until the pending work that reads it is submitted.
    pub fn retain(&mut self, lease: Lease) {
        match &mut self.pending {
            Some(p) => p.retained.push(lease),
            None => self.pool.release(lease),
        }
    }

    /// Whether work is recorded but not yet submitted.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Submits the pending work, then `encoder` (if any), in one submission. `context`
    /// names the step in the error.
    pub fn submit(
        &mut self,
        encoder: Option<wgpu::CommandEncoder>,
        context: &'static str,
    ) -> Result<()> {
        let pending = self.pending.take();
        if pending.is_none() && encoder.is_none() {
            return Ok(());
        }
        self.check_lost()?;
        let queue = &self.queue;
        let trace = &mut self.trace;
        let ((retained, submitted_us), err) = error_scope(&self.device, || {
            let mut encoders = Vec::with_capacity(2);
            let mut retained = Vec::new();
            if let Some(p) = pending {
                encoders.push(p.encoder);
                retained = p.retained;
            }
            encoders.extend(encoder);
            // The trace's timestamps are copied out in this same submission.
            let mut submitted_us = 0.0;
            if let (Some(t), Some(last)) = (trace.as_mut(), encoders.last_mut()) {
                t.before_submit(last);
                submitted_us = t.recorder().now_us();
            }
            queue.submit(encoders.into_iter().map(|e| e.finish()));
            (retained, submitted_us)
        });
        if let Some(t) = &mut self.trace {
            t.after_submit(submitted_us, err.is_none());
        }
        self.submissions += 1;
        for lease in retained {
            self.pool.release(lease);
        }
        match err {
            Some(e) => Err(self.gpu_error(context, &e)),
            None => Ok(()),
        }
    }

    /// Submits the pending work, if any. Does not wait for the GPU.
    pub fn flush(&mut self) -> Result<()> {
        self.submit(None, "submitting pending launches")
    }

    /// Maps `buffer[0..size]` for reading, waits for the GPU, and hands the bytes to `read`.
    /// Counts one readback.
    pub fn read<R>(
        &mut self,
        buffer: &wgpu::Buffer,
        size: u64,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        crate::blocking::block_on("a blocking readback", self.read_async(buffer, size, read))
    }

    /// [`Gpu::read`], awaited. On native it polls the device itself; in a browser the
    /// event loop does, and the errors that earlier calls' scopes caught since the last
    /// readback are reported here (see [`error_scope`]).
    pub async fn read_async<R>(
        &mut self,
        buffer: &wgpu::Buffer,
        size: u64,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let mapped = MapSignal::default();
        let signal = mapped.clone();
        let ((), err) = error_scope(&self.device, || {
            buffer.map_async(wgpu::MapMode::Read, 0..size, move |result| {
                signal.set(result)
            });
        });
        if let Some(e) = err {
            return Err(self.gpu_error("reading results back", &e));
        }
        self.readbacks += 1;
        #[cfg(not(target_arch = "wasm32"))]
        self.wait()?;
        #[cfg(not(target_arch = "wasm32"))]
        let result = mapped.take();
        #[cfg(target_arch = "wasm32")]
        let result = {
            let result = Some(mapped.await.unwrap_or(Err(wgpu::BufferAsyncError)));
            if let Some(e) = deferred::first_error().await {
                if result.as_ref().is_some_and(|r| r.is_ok()) {
                    buffer.unmap();
                }
                return Err(self.gpu_error("an earlier call (reported at the readback)", &e));
            }
            result
        };
        if let Some(t) = &mut self.trace {
            // The wait ran the map callbacks of the trace's timestamps too.
            t.collect();
        }
        match result {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                return Err(self.explain(ForgeError::Gpu {
                    context: "reading results back",
                    message: e.to_string(),
                }))
            }
            None => {
                self.check_lost()?;
                return Err(ForgeError::Gpu {
                    context: "reading results back",
                    message: "the buffer was not mapped after the GPU went idle".into(),
                });
            }
        }
        let out = {
            let view = buffer
                .get_mapped_range(0..size)
                .map_err(|e| ForgeError::Gpu {
                    context: "reading results back",
                    message: e.to_string(),
                })?;
            read(&view)
        };
        buffer.unmap();
        Ok(out)
    }

    /// The error for a wgpu error met during `context`, unless the device turns out to be
    /// lost, which explains it better.
    pub fn gpu_error(&self, context: &'static str, e: &wgpu::Error) -> ForgeError {
        self.explain(ForgeError::Gpu {
            context,
            message: error_text(e),
        })
    }

    /// Fails with [`ForgeError::DeviceLost`] once the device is gone.
    pub fn check_lost(&self) -> Result<()> {
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
    pub fn explain(&self, err: ForgeError) -> ForgeError {
        let _ =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.device.poll(wgpu::PollType::Poll)));
        match self.check_lost() {
            Err(lost) => lost,
            Ok(()) => err,
        }
    }

    /// [`Gpu::wait`], awaited: until the work submitted so far has finished. On native it
    /// polls the device; in a browser it awaits the queue's `onSubmittedWorkDone`, then
    /// reports the errors that earlier calls' scopes caught, as [`Gpu::read_async`] does.
    pub async fn wait_async(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        return self.wait();
        #[cfg(target_arch = "wasm32")]
        {
            let done = Signal::<()>::default();
            let signal = done.clone();
            self.queue.on_submitted_work_done(move || signal.set(()));
            done.await;
            if let Some(e) = deferred::first_error().await {
                return Err(self.gpu_error("an earlier call (reported at a wait)", &e));
            }
            self.check_lost()
        }
    }

    /// Blocks until the queue is idle and map callbacks have run.
    pub fn wait(&self) -> Result<()> {
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
