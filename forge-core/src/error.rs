//! The one error type of WGSL Forge. Every failure a user can cause, or that the GPU can
//! report, becomes a variant here with a message that names the kernel and the argument.
//! Layer 1 (values).

use thiserror::Error;

/// Every error the runtime, the oracle, the certifier and the tuner return.
#[non_exhaustive]
#[derive(Debug, Error)]
pub enum ForgeError {
    /// No adapter could be found or none matched `FORGE_ADAPTER`.
    #[error("no GPU adapter found{detail}; install a Vulkan driver (on Debian: `apt-get install mesa-vulkan-drivers`, which provides lavapipe)")]
    NoAdapter {
        /// Extra context, for example the `FORGE_ADAPTER` filter and the adapters seen.
        detail: String,
    },

    /// A slice argument's length differs from what its LEN expression evaluates to.
    #[error("kernel `{kernel}`: argument `{arg}` has {actual} elements, but its length `{expr}` evaluates to {expected}")]
    LengthMismatch {
        /// Kernel name.
        kernel: &'static str,
        /// Argument name.
        arg: &'static str,
        /// The LEN expression, as written in the kernel.
        expr: &'static str,
        /// What the expression evaluates to for this call.
        expected: u64,
        /// The slice's actual length.
        actual: usize,
    },

    /// A LEN or `threads` expression overflowed or divided by zero.
    #[error(
        "kernel `{kernel}`: the expression `{expr}` for `{what}` cannot be evaluated: {reason}"
    )]
    BadExpression {
        /// Kernel name.
        kernel: &'static str,
        /// What was being evaluated (an argument name, or `threads`).
        what: &'static str,
        /// The expression as written.
        expr: &'static str,
        /// Why it failed (overflow, division by zero).
        reason: &'static str,
    },

    /// The call asks for no work at all, or a binding would be empty.
    #[error("kernel `{kernel}`: zero-sized work: {what}; every dimension must be at least 1")]
    EmptyWork {
        /// Kernel name.
        kernel: &'static str,
        /// What is empty.
        what: String,
    },

    /// A binding is larger than the adapter's per-binding limit.
    #[error("kernel `{kernel}`: argument `{arg}` needs {bytes} bytes, over the adapter's `{limit_name}` limit of {limit} bytes")]
    BindingTooLarge {
        /// Kernel name.
        kernel: &'static str,
        /// Argument name.
        arg: &'static str,
        /// Bytes the binding needs.
        bytes: u64,
        /// The wgpu limit's name, e.g. `max_storage_buffer_binding_size`.
        limit_name: &'static str,
        /// The limit's value.
        limit: u64,
    },

    /// An allocation would exceed the runtime's memory budget (`capacity_bytes`).
    #[error("{what} needs {requested} bytes, but the runtime's capacity is {capacity} bytes ({in_use} in use); raise `capacity_bytes` in `ForgeRuntime::new`")]
    CapacityExceeded {
        /// What was being allocated.
        what: String,
        /// Bytes requested.
        requested: u64,
        /// The runtime's capacity.
        capacity: u64,
        /// Bytes already held by live buffers.
        in_use: u64,
    },

    /// A dispatch needs more workgroups than the adapter can launch, even folded into y and z.
    #[error("kernel `{kernel}`: {groups} workgroups exceed the adapter's limit of {limit} per dimension folded over x, y and z")]
    TooManyWorkgroups {
        /// Kernel name.
        kernel: &'static str,
        /// Workgroups needed.
        groups: u64,
        /// Per-dimension limit.
        limit: u32,
    },

    /// A grid whose invocations cannot be numbered: an id or `global_index()` past `u32`.
    #[error("kernel `{kernel}`: the grid of {threads} invocations is too large: {reason}")]
    GridTooLarge {
        /// Kernel name.
        kernel: &'static str,
        /// The logical extent, `w`, `wxh` or `wxhxd`.
        threads: String,
        /// What overflows.
        reason: String,
    },

    /// The oracle found an out-of-bounds index: a bug in the kernel.
    #[error("kernel `{kernel}`: invocation {invocation} indexed `{binding}` at {index}, out of bounds for length {len}")]
    OutOfBounds {
        /// Kernel name.
        kernel: &'static str,
        /// The global invocation index.
        invocation: u64,
        /// The binding or local array.
        binding: &'static str,
        /// The offending index (signed, so negative i32 indices are shown as they are).
        index: i64,
        /// The length of what was indexed.
        len: usize,
    },

    /// The oracle, with race detection on, found two invocations touching one element with
    /// nothing ordering them, at least one of them writing: a bug in the kernel.
    #[error("kernel `{kernel}`: data race on `{binding}[{index}]`: {access}")]
    DataRace {
        /// Kernel name.
        kernel: &'static str,
        /// The binding or workgroup array.
        binding: &'static str,
        /// The element.
        index: u64,
        /// The global index of the invocation that touched it first.
        first: u64,
        /// The global index of the invocation whose access raced with it.
        second: u64,
        /// What each did, and why nothing ordered them.
        access: String,
    },

    /// The oracle found an operation whose operands Rust's meaning rejects (Rust panics
    /// there), such as `x.clamp(lo, hi)` with `lo > hi`: a bug in the kernel.
    #[error("kernel `{kernel}`: invocation {invocation} {what}")]
    KernelBug {
        /// Kernel name.
        kernel: &'static str,
        /// The global invocation index.
        invocation: u64,
        /// What it did, and how to fix it.
        what: String,
    },

    /// The oracle found control flow that must be workgroup-uniform but was not.
    #[error("kernel `{kernel}`: workgroup {workgroup}: {what} diverged between invocations, but it encloses a barrier or a subgroup operation and must be workgroup-uniform")]
    NonUniform {
        /// Kernel name.
        kernel: &'static str,
        /// The linear workgroup index.
        workgroup: u64,
        /// The construct that diverged.
        what: &'static str,
    },

    /// A schedule is invalid for the kernel or the adapter.
    #[error("kernel `{kernel}`: schedule {schedule} is not usable: {reason}")]
    BadSchedule {
        /// Kernel name.
        kernel: &'static str,
        /// The schedule, formatted.
        schedule: String,
        /// Why.
        reason: String,
    },

    /// An argument is invalid for a reason other than its length.
    #[error("{kernel}: {message}")]
    InvalidArgument {
        /// Kernel or method name.
        kernel: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },

    /// The kernel needs a device feature that the runtime's device does not have.
    #[error("kernel `{kernel}` uses {used_for}, which need the device feature `{feature}`; the device on `{adapter}` does not have it; run the kernel on an adapter that offers `{feature}`, or choose a variant without {used_for} where `ForgeRuntime::supports` says it is missing")]
    MissingFeature {
        /// Kernel name.
        kernel: &'static str,
        /// wgpu's name for the feature, e.g. `SUBGROUP`.
        feature: &'static str,
        /// What in the kernel needs it.
        used_for: &'static str,
        /// The adapter's name.
        adapter: String,
    },

    /// The generated shader failed to compile on this adapter.
    #[error("kernel `{kernel}`: shader failed to compile for {backend}: {message}")]
    ShaderCompile {
        /// Kernel name.
        kernel: &'static str,
        /// The emission backend (`wgsl`, `spirv`).
        backend: String,
        /// The compiler's message.
        message: String,
    },

    /// A kernel cannot be written in a target language: the emitter for that language
    /// does not handle one of its constructs.
    #[error("kernel `{kernel}` cannot be emitted as {target}: {reason}")]
    CannotEmit {
        /// Kernel name.
        kernel: &'static str,
        /// The target (`cuda`, `ptx`).
        target: &'static str,
        /// What the emitter does not handle, and what to do instead.
        reason: String,
    },

    /// A library that is loaded at run time (libnvrtc, libcuda) cannot be found.
    #[error("{library} cannot be loaded: {hint}")]
    MissingLibrary {
        /// The library, e.g. `libnvrtc`.
        library: &'static str,
        /// Where to get it and how to make it found.
        hint: &'static str,
    },

    /// The CUDA backend found no device of the ordinal asked for.
    #[error("no CUDA device {index}: {detail}; `FORGE_CUDA_DEVICE` or `RuntimeBuilder::cuda` picks the ordinal")]
    NoCudaDevice {
        /// The ordinal asked for.
        index: usize,
        /// What the driver sees.
        detail: String,
    },

    /// Something this build left out was asked for: the CUDA backend without the `cuda`
    /// cargo feature.
    #[error("{what} needs forge built with the `{feature}` cargo feature: rebuild with `--features {feature}` (for the CLI: `cargo build --release -p forge-cli --features {feature}`)")]
    NotBuilt {
        /// What was asked for.
        what: String,
        /// The cargo feature that provides it.
        feature: &'static str,
    },

    /// An external compiler that a backend runs through is not installed.
    #[error("{needed_for} runs `{tool}`, which is not installed (or not on PATH); install it with `apt install {package}` (Debian's `{package}`; `bash .ci/setup` does it)")]
    ToolMissing {
        /// The program looked for on `PATH`.
        tool: &'static str,
        /// The Debian package that provides it.
        package: &'static str,
        /// What needs it, e.g. "the `glsl` backend".
        needed_for: String,
    },

    /// An unknown backend name was given.
    #[error("unknown backend `{name}`; valid backends are: {valid}")]
    UnknownBackend {
        /// The name given.
        name: String,
        /// The valid names, comma separated.
        valid: &'static str,
    },

    /// A `FORGE_*` environment variable holds a value that cannot be used: one that is not
    /// UTF-8, or not one of the values the variable takes. Never a silent fallback to the
    /// default.
    #[error("the environment variable `{var}` {reason}")]
    BadEnvVar {
        /// The variable's name.
        var: &'static str,
        /// What is wrong with its value (shown escaped and cut, [`crate::shown`]), and
        /// what the variable takes.
        reason: String,
    },

    /// A backend that `forge emit` translates to, but that the runtime cannot execute.
    #[error("backend `{name}` can be emitted (`forge emit KERNEL --backend {name}`) but not executed; the runtime executes: {valid}")]
    BackendNotExecutable {
        /// The name given.
        name: String,
        /// The backends the runtime executes, comma separated.
        valid: &'static str,
    },

    /// A buffer handed to the runtime lacks a usage flag that what was asked of it needs.
    #[error("{what}: the buffer's usage is {have}, without `{missing}`; create it with `wgpu::BufferUsages::{missing}` among its usages")]
    BufferUsage {
        /// What the buffer was for.
        what: &'static str,
        /// The buffer's usage flags.
        have: String,
        /// The flag it lacks.
        missing: &'static str,
    },

    /// A buffer handed to the runtime is smaller than the tensor it should hold.
    #[error("{what}: the buffer holds {size} bytes, but {len} elements of `{elem}` need {needed}; pass a larger buffer or fewer elements")]
    BufferTooSmall {
        /// What the buffer was for.
        what: &'static str,
        /// The buffer's size in bytes.
        size: u64,
        /// Bytes the tensor needs, padded to whole words.
        needed: u64,
        /// The elements asked for.
        len: usize,
        /// Their type.
        elem: String,
    },

    /// A buffer handed to the runtime was created on another device than the runtime's.
    #[error("{what}: the buffer belongs to another device than the runtime's ({message}); create the runtime on the buffer's device with `ForgeRuntime::from_wgpu`")]
    ForeignBuffer {
        /// What the buffer was for.
        what: &'static str,
        /// wgpu's message.
        message: String,
    },

    /// A tensor handed to a runtime that did not make it. Each runtime orders its own
    /// launches, writes and downloads in its own encoder and queue, so a tensor is bound,
    /// read and written only through the runtime that made it (or, for
    /// `tensor_from_buffer`, the one that wrapped the application's buffer).
    #[error("{what}: {arg} belongs to runtime #{tensor_runtime}, not to this runtime (#{runtime}); a tensor is used only through the runtime that made it: download it there and upload it here")]
    ForeignTensor {
        /// The operation (`download`, `write`, `clear`, or the kernel's name).
        what: &'static str,
        /// Which tensor: `the tensor`, or the argument's name.
        arg: String,
        /// [`crate::ForgeRuntime::id`] of the runtime the tensor belongs to.
        tensor_runtime: u64,
        /// [`crate::ForgeRuntime::id`] of the runtime it was handed to.
        runtime: u64,
    },

    /// The CPU oracle would allocate more than its limit
    /// ([`crate::OracleOptions::max_bytes`]).
    #[error("kernel `{kernel}`: the oracle needs {requested} bytes for {what}, over its limit of {limit} bytes; raise `OracleOptions::max_bytes` (with `cpu_with_options`) for a problem this large")]
    OracleTooLarge {
        /// Kernel name.
        kernel: &'static str,
        /// What would be allocated (an output's name).
        what: String,
        /// Bytes it needs.
        requested: u64,
        /// The limit.
        limit: u64,
    },

    /// The CPU oracle stopped a kernel that ran past its loop budget
    /// ([`crate::OracleOptions::max_loop_iterations`]): a loop that never ends, or one far
    /// longer than the budget allows.
    #[error("kernel `{kernel}`: {whom} ran {iterations} loop iterations without finishing, the oracle's budget; a loop that never ends (a `loop` whose `break` is never reached, a `while` whose condition never turns false) is a bug in the kernel; raise `OracleOptions::max_loop_iterations` for a loop that is only long")]
    LoopBudgetExceeded {
        /// Kernel name.
        kernel: &'static str,
        /// `invocation N`, or `workgroup W` for a loop the whole workgroup runs together.
        whom: String,
        /// Iterations run.
        iterations: u64,
    },

    /// A loop was cut short by the driver: on llvmpipe (lavapipe), every invocation may run
    /// 65,535 loop iterations in all, its loops together, and past them each loop leaves
    /// as if its condition had failed. The device guards every loop there
    /// ([`crate::emit::loop_guard`]), so the results of a cut kernel are never returned.
    #[error("{kernels}: a loop was cut short by the driver of `{adapter}`, which allows each invocation {limit} loop iterations in all (every loop of the invocation together); the results would be wrong, so none are returned; give each invocation less work (more invocations, fewer iterations each), or run on another adapter (`FORGE_ADAPTER`)")]
    LoopLimit {
        /// The kernels launched since the last check, one of which was cut (`kernel `a``,
        /// or `one of the kernels `a`, `b``).
        kernels: String,
        /// The adapter's name.
        adapter: String,
        /// The iterations allowed per invocation.
        limit: u32,
    },

    /// A launch of a kernel with `#[forge_kernel(indirect = count[0])]` was given a count
    /// past its bound (`threads`). On host data this is found before anything runs; on
    /// tensors, where the count is on the device, the launch ran the bound and this is
    /// reported by the next readback, which returns no results.
    #[error("kernel `{kernel}` was launched with `{count_at}` = {count} invocations, past its bound `threads` = {bound}{ran}; the count comes from an earlier launch, which is where to look")]
    IndirectCount {
        /// The kernel.
        kernel: &'static str,
        /// Where the count was read: `count[0]`.
        count_at: String,
        /// The count.
        count: u32,
        /// The bound, the kernel's `threads` for the launch's scalars.
        bound: u64,
        /// What ran: empty before a run, or `: it ran ...` after one.
        ran: &'static str,
    },

    /// A wait for the device outlived the runtime's timeout (`RuntimeBuilder::timeout`,
    /// `FORGE_TIMEOUT`). The device may still be running the kernels, so the runtime
    /// refuses every later call with this same error, at once: create a new runtime.
    #[error("{kernels} did not finish within {after}, the runtime's timeout, on `{device}`; the device may still be running it, so this runtime refuses every call from now on: create a new runtime; a kernel that never ends is a bug (its oracle, `k::cpu`, stops it at its loop budget), and a kernel that is only long needs a longer timeout (`RuntimeBuilder::timeout`, `FORGE_TIMEOUT`)")]
    Timeout {
        /// The kernels in flight (`kernel `a``, or `one of the kernels `a`, `b``, or `the
        /// work in flight` when none was launched).
        kernels: String,
        /// The timeout, as `2.5 s`.
        after: String,
        /// The device's name.
        device: String,
    },

    /// A path that the library refuses to read or replace: a special file, a symbolic link,
    /// a directory, a file larger than the limit, or a file that is not the library's own.
    #[error("`{path}`: {reason}")]
    RefusedPath {
        /// The path.
        path: String,
        /// Why it was refused, and what was left as it was.
        reason: String,
    },

    /// A manifest bundle that cannot be used as a whole: not a bundle, of a newer format,
    /// truncated, or edited since it was written (its checksum does not match). Nothing
    /// was written or used from it.
    #[error("manifest bundle {origin}: {reason}")]
    BadBundle {
        /// Where the bundle came from: its file, or the program that embedded it.
        origin: String,
        /// What is wrong with it, and what to do.
        reason: String,
    },

    /// What a browser cannot do: files, blocking calls, SPIR-V passthrough, child
    /// processes. Built for `wasm32` only; on the web the call is refused, never faked.
    #[error("{what} is not available in the browser: {reason}")]
    NotOnTheWeb {
        /// What was asked.
        what: &'static str,
        /// Why the web cannot, and what to use instead.
        reason: &'static str,
    },

    /// One device of a [`crate::group::DeviceGroup`] failed its part of a call that spans
    /// the group (a shard of a sharded launch, its side of a collective). The call returned
    /// nothing: the other devices' parts were dropped, never handed back as a whole.
    #[error("device #{device} of the group ({adapter}) failed on {work}{}: {source}; the call returned nothing, the other devices' parts were dropped", others_failed(*.others))]
    DeviceFailed {
        /// The device's index in the group.
        device: usize,
        /// Its adapter's name and backend.
        adapter: String,
        /// Its part of the call, e.g. "`gemm`, rows 64..128 of 256".
        work: String,
        /// How many other devices of the group failed too (the first, by index, is named).
        others: usize,
        /// What the device's runtime returned.
        #[source]
        source: Box<ForgeError>,
    },

    /// The device was lost; the runtime must be recreated.
    #[error("the GPU device was lost: {0}; create a new `ForgeRuntime`")]
    DeviceLost(String),

    /// wgpu reported a validation or out-of-memory error.
    #[error("GPU error during {context}: {message}")]
    Gpu {
        /// What the runtime was doing.
        context: &'static str,
        /// wgpu's message.
        message: String,
    },

    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being read or written, with the path.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Certification found a mismatch.
    #[error("kernel `{kernel}` failed certification: {message}")]
    CertificationFailed {
        /// Kernel name.
        kernel: &'static str,
        /// Which check failed, with the case and the worst element.
        message: String,
    },

    /// Timing a kernel produced no usable measurement.
    #[error("kernel `{kernel}`: timing failed: {message}")]
    TimingFailed {
        /// Kernel name.
        kernel: &'static str,
        /// What went wrong: every sample rejected, a timer that never advances.
        message: String,
    },
}

/// `Result` with [`ForgeError`].
pub type Result<T, E = ForgeError> = std::result::Result<T, E>;

/// The clause of [`ForgeError::DeviceFailed`] that counts the other devices that failed.
fn others_failed(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " (and 1 other device failed too)".into(),
        n => format!(" (and {n} other devices failed too)"),
    }
}
