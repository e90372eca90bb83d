//! The wgpu device: one adapter, device and queue, and everything that talks to them.
//! Layer 4 (the devices): it implements the backend seam ([`crate::backend::Device`],
//! layer 3) on wgpu, and imports values (layer 1) and the emitters (layer 2), never the
//! runtime.
//!
//! This module owns [`Gpu`]:
//! - **the device:** opened on an adapter ([`Gpu::open`]) or handed over by the
//!   application ([`Gpu::from_wgpu`]), with its limits, features and identity
//!   ([`Gpu::id`]);
//! - **errors:** every operation runs inside error scopes ([`ErrorScope`]), so validation
//!   and out-of-memory errors come back as [`ForgeError`] values instead of wgpu's default
//!   panic; a device-lost callback (on devices the runtime opened) turns every later call
//!   into [`ForgeError::DeviceLost`];
//! - **memory:** the buffer pool ([`buffers`]) against the seam's memory budget;
//! - **submission and readback:** a pending encoder that recorded work accumulates in, one
//!   submission for it ([`Gpu::submit`]), one mapped readback;
//! - **pipelines:** the cache of compiled pipelines, the one bind-group builder and the cache
//!   of bind groups on pooled buffers ([`pipeline`]), and the driver's pipeline cache
//!   persisted on disk ([`disk_cache`]);
//! - **the loop guard** ([`guard`]), on an adapter whose driver cuts long loops short: a
//!   cut loop is an error at the next readback, never a wrong result;
//! - **the trace**, where the runtime keeps one: compiles as host events, launches timed
//!   by the GPU's timestamps inside the submissions they travel in ([`trace`]);
//! - **the seam** ([`seam`]): `Gpu`'s implementation of [`crate::backend::Device`], the
//!   commands, launches, readbacks and timestamps the runtime drives it with.
//!
//! CUDA is the seam's other implementation ([`cuda`]: with the `cuda` feature the real
//! one; without it, entry points that say how to get it). [`nccl`] is NCCL's engine of
//! collectives between CUDA devices, the same way behind the `nccl` feature.

pub mod adapter;
pub mod buffers;
#[cfg_attr(not(feature = "cuda"), path = "cuda_absent.rs")]
pub mod cuda;
pub mod disk_cache;
pub mod guard;
mod indirect;
#[cfg_attr(not(feature = "nccl"), path = "nccl_absent.rs")]
pub mod nccl;
pub mod pipeline;
pub mod seam;
pub mod trace;

pub use crate::backend::RuntimeStats;
use crate::backend::{Device, Identity, MemoryBudget, Reservation};
use crate::error::{ForgeError, Result};
use crate::target::Backend;
use buffers::{BufferPool, Lease};
use disk_cache::DiskPipelineCache;
use guard::LoopGuard;
use pipeline::{BindGroupCache, PipelineCache};
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

/// Validation, out-of-memory and internal error scopes, pushed on the device: what an
/// operation's wgpu calls between [`ErrorScope::open`] and [`ErrorScope::close`] do wrong
/// comes back from `close` instead of reaching wgpu's default handler (a panic). The scopes
/// do not borrow the device, so the operation may use the `Gpu` mutably meanwhile. Never
/// held across an `.await`: a scope belongs to the thread that pushed it.
///
/// In a browser the scopes' answers arrive later, through the event loop: there an error
/// is kept and reported by the next readback (`Gpu::read_async`), so a failed dispatch
/// still fails the call whose results it would have produced.
#[must_use = "an error scope reports nothing until it is closed"]
pub struct ErrorScope {
    internal: wgpu::ErrorScopeGuard,
    oom: wgpu::ErrorScopeGuard,
    validation: wgpu::ErrorScopeGuard,
}

impl ErrorScope {
    /// Pushes the scopes on `device`.
    pub fn open(device: &wgpu::Device) -> ErrorScope {
        ErrorScope {
            internal: device.push_error_scope(wgpu::ErrorFilter::Internal),
            oom: device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
            validation: device.push_error_scope(wgpu::ErrorFilter::Validation),
        }
    }

    /// Pops the scopes; the first error any of them caught.
    pub fn close(self) -> Option<wgpu::Error> {
        // Scopes pop in reverse order of pushing; each pop takes effect at once, and its
        // future only carries the answer.
        let pops = [self.validation.pop(), self.oom.pop(), self.internal.pop()];
        #[cfg(not(target_arch = "wasm32"))]
        {
            let [v, o, i] = pops.map(pollster::block_on);
            v.or(o).or(i)
        }
        #[cfg(target_arch = "wasm32")]
        {
            deferred::keep(pops);
            None
        }
    }
}

/// Runs `f` inside an [`ErrorScope`], and returns the first error any of its scopes caught.
pub fn error_scope<T>(device: &wgpu::Device, f: impl FnOnce() -> T) -> (T, Option<wgpu::Error>) {
    let scope = ErrorScope::open(device);
    let out = f();
    (out, scope.close())
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
    /// Boxed as the pool keeps them.
    #[allow(clippy::vec_box)]
    retained: Vec<Box<Lease>>,
}

impl Pending {
    fn new(device: &wgpu::Device) -> Pending {
        Pending {
            encoder: device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forge pending"),
            }),
            retained: Vec::new(),
        }
    }
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

/// What a timed-out wait left: the parts of the [`ForgeError::Timeout`] every later call
/// returns.
#[derive(Clone, Debug)]
struct TimedOut {
    kernels: String,
    after: String,
    device: String,
}

impl TimedOut {
    fn error(&self) -> ForgeError {
        ForgeError::Timeout {
            kernels: self.kernels.clone(),
            after: self.after.clone(),
            device: self.device.clone(),
        }
    }
}

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
    /// Its id, emission, description, limits and features.
    identity: Identity,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    /// Set by the device-lost callback (only on devices this runtime opened).
    lost: Arc<Mutex<Option<String>>>,
    pool: BufferPool,
    pipelines: PipelineCache,
    /// Bind groups of calls on pooled buffers.
    bind_groups: BindGroupCache,
    /// The driver's pipeline cache on disk, where the runtime attached one.
    disk_cache: Option<DiskPipelineCache>,
    /// Whether the driver cuts long loops short ([`adapter::limits_loops`]): kernels with
    /// loops are then compiled guarded.
    limits_loops: bool,
    /// The guard those kernels count in, made at the first launch of one (so that a
    /// runtime that runs no loop makes no buffer for it).
    loop_guard: Option<LoopGuard>,
    /// The pass that sizes indirect launches, made at the first one.
    indirect_prep: Option<indirect::IndirectPrep>,
    /// The bound of every blocking wait ([`crate::backend::Device::set_timeout`]).
    timeout: Option<std::time::Duration>,
    /// Kernels launched since the last wait that finished: what a timeout names.
    in_flight: Vec<&'static str>,
    /// Set when a wait outlived the timeout: every later call fails with it.
    timed_out: Option<TimedOut>,
    pending: Option<Pending>,
    submissions: u64,
    readbacks: u64,
    dispatches: u64,
    /// Buffers created outside the pool: tensors.
    tensors_created: u64,
}

impl Drop for Gpu {
    /// After a timeout, nothing waits for the work given up on: the trace is written
    /// without the timestamps still out, and the device and queue are never destroyed
    /// (destroying them waits for the GPU to go idle, which it may never do). They are
    /// leaked, with the memory they hold: the price of not hanging a second time.
    fn drop(&mut self) {
        if self.timed_out.is_some() {
            if let Some(t) = self.trace.as_mut() {
                t.abandon();
            }
            std::mem::forget(self.device.clone());
            std::mem::forget(self.queue.clone());
        }
    }
}

impl Gpu {
    /// Opens a device on `adapter` with every optional feature kernels may use that the
    /// adapter has, minus `without`, and the adapter's own limits (large buffers need
    /// them), with a memory budget of `capacity` bytes. It compiles WGSL until told
    /// otherwise ([`Gpu::emitting`]).
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
        let limits_loops = adapter::limits_loops(&adapter.get_info());
        Gpu {
            trace: None,
            identity: Identity {
                id: next_id(),
                emission: Backend::Wgsl,
                info: adapter.get_info(),
                limits: device.limits(),
                features: device.features(),
            },
            adapter,
            device,
            queue,
            lost: Arc::new(Mutex::new(None)),
            pool: BufferPool::new(MemoryBudget::new(capacity)),
            pipelines: PipelineCache::default(),
            bind_groups: BindGroupCache::default(),
            disk_cache: None,
            limits_loops,
            loop_guard: None,
            indirect_prep: None,
            timeout: None,
            in_flight: Vec::new(),
            timed_out: None,
            pending: None,
            submissions: 0,
            readbacks: 0,
            dispatches: 0,
            tensors_created: 0,
        }
    }

    /// The device, compiling kernels from `emission`'s shader form (WGSL, or SPIR-V,
    /// GLSL or HLSL through passthrough on Vulkan).
    pub fn emitting(mut self, emission: Backend) -> Gpu {
        self.identity.emission = emission;
        self
    }

    /// The adapter the device was opened on.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The wgpu device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The buffer pool and its budget.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// Persists the driver's pipeline cache in `dir` from now on (loading what an earlier
    /// process left there), where the device can have one; see [`disk_cache`]. Returns
    /// whether it is attached.
    pub fn attach_disk_cache(&mut self, dir: &std::path::Path) -> bool {
        if self.disk_cache.is_none() {
            self.disk_cache = DiskPipelineCache::open(&self.device, &self.identity.info, dir);
        }
        self.disk_cache.is_some()
    }

    /// The persisted pipeline cache, if one is attached.
    pub fn disk_cache(&self) -> Option<&DiskPipelineCache> {
        self.disk_cache.as_ref()
    }

    /// The recorder of the trace, for host events; `None` (one branch) without a trace.
    pub fn trace(&self) -> Option<&Arc<crate::trace::Recorder>> {
        self.trace.as_ref().map(DeviceTrace::recorder)
    }

    /// Now, where the device traces: the start of a host event (`None`, one branch,
    /// without a trace).
    pub fn trace_start(&self) -> Option<web_time::Instant> {
        self.trace.as_ref().map(|_| web_time::Instant::now())
    }

    /// Where a launch's compute pass writes its timestamps (see
    /// [`DeviceTrace::pass_queries`]); `None` without a trace or timestamps. `args` is
    /// only called when the launch is timed.
    fn pass_queries(
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

    /// A pooled buffer of at least `bytes` bytes with `usage`; see
    /// [`BufferPool::acquire`].
    fn acquire(
        &mut self,
        bytes: u64,
        usage: wgpu::BufferUsages,
        what: &dyn Fn() -> String,
    ) -> Result<Box<Lease>> {
        let max = self.identity.limits.max_buffer_size;
        self.pool.acquire(&self.device, bytes, usage, max, what)
    }

    /// Reserves `bytes` of the budget for a buffer outside the pool (a tensor), freeing idle
    /// pooled buffers while that helps.
    fn reserve(&mut self, bytes: u64, what: &dyn Fn() -> String) -> Result<Reservation> {
        self.pool.reserve_evicting(bytes, what)
    }

    /// Creates a buffer outside the pool (a tensor's), optionally filled with `init` (the
    /// rest zeroed), and counts it.
    fn create_buffer(
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
    /// the source of a write that must travel in an encoder, behind pending work. Call it
    /// inside an error scope.
    fn create_staging(&self, data: &[u8], size: u64) -> wgpu::Buffer {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
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

    /// The pending encoder, made on first use: what [`Gpu::submit`] submits next.
    fn pending(&mut self) -> &mut wgpu::CommandEncoder {
        let device = &self.device;
        &mut self
            .pending
            .get_or_insert_with(|| Pending::new(device))
            .encoder
    }

    /// Keeps `lease` alive until the pending work that reads it is submitted.
    fn retain(&mut self, lease: Box<Lease>) {
        match &mut self.pending {
            Some(p) => p.retained.push(lease),
            None => self.pool.release(lease),
        }
    }

    /// Submits the pending work in one submission, after `last` records the submission's
    /// last commands into it (inside the same error scopes). Does nothing when nothing is
    /// pending and there is no `last`. `context` names the step in the error.
    pub fn submit(
        &mut self,
        context: &'static str,
        last: Option<&mut dyn FnMut(&mut wgpu::CommandEncoder)>,
    ) -> Result<()> {
        if self.pending.is_none() && last.is_none() {
            return Ok(());
        }
        self.check_lost()?;
        let scope = ErrorScope::open(&self.device);
        let mut pending = match self.pending.take() {
            Some(p) => p,
            None => Pending::new(&self.device),
        };
        if let Some(last) = last {
            last(&mut pending.encoder);
        }
        if let Some(g) = self.loop_guard.as_mut() {
            g.before_submit(&mut pending.encoder);
        }
        // The trace's timestamps are copied out in this same submission.
        let mut submitted_us = 0.0;
        if let Some(t) = self.trace.as_mut() {
            t.before_submit(&mut pending.encoder);
            submitted_us = t.recorder().now_us();
        }
        self.queue.submit([pending.encoder.finish()]);
        let err = scope.close();
        if let Some(t) = &mut self.trace {
            t.after_submit(submitted_us, err.is_none());
        }
        self.submissions += 1;
        for lease in pending.retained {
            self.pool.release(lease);
        }
        match err {
            Some(e) => Err(self.gpu_error(context, &e)),
            None => Ok(()),
        }
    }

    /// Maps `buffer[0..size]` for reading, waits for the GPU, and hands the bytes to `read`.
    /// Counts one readback. On native it polls the device itself; in a browser the
    /// event loop does, and the errors that earlier calls' scopes caught since the last
    /// readback are reported here (see [`ErrorScope`]).
    async fn read_async<R>(
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
        let guard = self.map_guard();
        self.readbacks += 1;
        #[cfg(not(target_arch = "wasm32"))]
        self.wait_now()?;
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
        // Checked (and its copy unmapped) whatever happens to the read below; results that
        // a cut loop made are never handed out.
        let guarded = self.check_guard(guard).await;
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
        guarded.map(|()| out)
    }

    /// Starts mapping the loop guard's copy, where a submission made one since the last
    /// check: called before the wait that a readback makes anyway.
    fn map_guard(&self) -> Option<MapSignal> {
        let staging = self.loop_guard.as_ref()?.to_check()?;
        let mapped = MapSignal::default();
        let signal = mapped.clone();
        let ((), err) = error_scope(&self.device, || {
            staging.map_async(wgpu::MapMode::Read, .., move |result| signal.set(result));
        });
        // Unmappable (mapped already: a wait that failed half-way): the next wait looks.
        err.is_none().then_some(mapped)
    }

    /// After the wait: whether a guarded loop was cut ([`ForgeError::LoopLimit`]).
    async fn check_guard(&mut self, mapped: Option<MapSignal>) -> Result<()> {
        let Some(mapped) = mapped else {
            return Ok(());
        };
        #[cfg(not(target_arch = "wasm32"))]
        let result = mapped.take();
        #[cfg(target_arch = "wasm32")]
        let result = mapped.await;
        let Some(guard) = self.loop_guard.as_mut() else {
            return Ok(());
        };
        let word = match result {
            Some(Ok(())) => guard.read_mapped(),
            _ => None,
        };
        guard.check(&self.queue, word, &self.identity.info.name)
    }

    /// The error for a wgpu error met during `context`, unless the device turns out to be
    /// lost, which explains it better.
    pub fn gpu_error(&self, context: &'static str, e: &wgpu::Error) -> ForgeError {
        self.explain(ForgeError::Gpu {
            context,
            message: error_text(e),
        })
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

    /// Until the work submitted so far has finished. On native it polls the device; in a
    /// browser it awaits the queue's `onSubmittedWorkDone`, then reports the errors that
    /// earlier calls' scopes caught, as a readback does.
    async fn wait_async(&mut self) -> Result<()> {
        let guard = self.map_guard();
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.wait_now()?;
            self.check_guard(guard).await
        }
        #[cfg(target_arch = "wasm32")]
        {
            let done = Signal::<()>::default();
            let signal = done.clone();
            self.queue.on_submitted_work_done(move || signal.set(()));
            done.await;
            if let Some(e) = deferred::first_error().await {
                return Err(self.gpu_error("an earlier call (reported at a wait)", &e));
            }
            self.check_lost()?;
            self.check_guard(guard).await
        }
    }

    /// The loop guard, made on first use: before a guarded launch is bound.
    fn ensure_loop_guard(&mut self) {
        if self.loop_guard.is_none() {
            self.loop_guard = Some(LoopGuard::new(&self.device));
        }
    }

    /// Notes a launch of `kernel` in the work in flight, for a timeout to name.
    fn note_in_flight(&mut self, kernel: &'static str) {
        if !self.in_flight.contains(&kernel) {
            self.in_flight.push(kernel);
        }
    }

    /// Blocks until the queue is idle and map callbacks have run, or the timeout has
    /// passed ([`ForgeError::Timeout`], which every later call returns too).
    #[cfg(not(target_arch = "wasm32"))]
    fn wait_now(&mut self) -> Result<()> {
        self.check_lost()?;
        let timeout = self.timeout;
        // wgpu panics from `poll` when the device is lost mid-wait; that is a DeviceLost here.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.device.poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout,
            })
        }));
        match polled {
            Ok(Ok(_)) => {
                self.in_flight.clear();
                self.check_lost()
            }
            Ok(Err(wgpu::PollError::Timeout)) => {
                let after = timeout.unwrap_or_default();
                self.timed_out = Some(TimedOut {
                    kernels: guard::name_kernels(&self.in_flight),
                    after: format!("{} s", after.as_secs_f64()),
                    device: crate::shown::shown(&self.identity.info.name),
                });
                tracing::error!(kernels = ?self.in_flight, ?after, "a wait for the GPU timed out");
                self.check_lost()
            }
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
