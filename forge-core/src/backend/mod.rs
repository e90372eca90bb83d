//! The backend seam: [`Device`], the one trait every GPU API implements, and the handles,
//! commands and waits that cross it. Layer 3: it imports values (layer 1) only. The
//! devices (layer 4: wgpu's [`crate::device::Gpu`], and CUDA's `CudaGpu` with the `cuda`
//! feature) implement it; the runtime (layer 5) is written once against it and never asks
//! which backend it runs on.
//!
//! The models are wgpu-hal's `Device`/`Queue`/`CommandEncoder` traits and CubeCL's
//! `ComputeServer`: the layer above is written once, against a trait. A device owns:
//! - **its identity, features and limits**, in wgpu's terms (the common vocabulary of the
//!   launch plan, the schedule checks and the topology hash), and its [`RuntimeStats`];
//! - **memory** ([`Memory`]): allocations that live until dropped ([`Device::create`], a
//!   tensor's) and leases for one call ([`Device::lease`], pooled where the backend pools),
//!   all counted against one [`MemoryBudget`];
//! - **kernels**: compiling a kernel for a schedule, cached ([`Device::compile`],
//!   [`Device::warm_up`]), and binding launches ahead of time ([`Device::prepare`]);
//! - **work**: [`Command`]s recorded in order ([`Device::record`]), submitted
//!   ([`Device::flush`]), waited for ([`Device::wait`]) and read back ([`Device::read`]);
//!   a failed step is a [`crate::ForgeError`] that says what failed, and what the device
//!   knows about why ([`Device::failure`]);
//! - **timestamps** of timed passes ([`Stamps`], [`Device::read_stamps`]);
//! - what only some backends have, each with a default that says so: the wgpu objects
//!   ([`Device::wgpu`]), a buffer of the application's ([`Device::import_wgpu_buffer`]),
//!   the GPU track of a trace, the driver's pipeline cache on disk.
//!
//! Beside the trait, [`collective`]: the reductions collectives apply ([`ReduceOp`]) and
//! the trait of an engine that runs collectives between devices itself ([`Collectives`]).
//!
//! Waits return a [`Wait`], the one future type a trait object can hand out: ready at once
//! on native targets, awaited in a browser.

pub mod budget;
pub mod collective;
pub mod command;
pub mod handles;
pub mod wait;

pub use budget::{MemoryBudget, Reservation, RuntimeStats};
pub use collective::{Collectives, ReduceOp};
pub use command::{Command, IndirectSource, Launch};
pub use handles::{
    foreign, Compiled, Handle, Memory, Object, Prepared, RawMemory, Stamps, WgpuParts,
};
pub use wait::Wait;

use crate::error::{ForgeError, Result};
use crate::kernel::Kernel;
use crate::schedule::Schedule;
use crate::target::Backend;
use crate::topology::HardwareProfile;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// What names an allocation in the errors it may meet (past the budget, a driver's
/// refusal), called only when there is one.
pub type What<'a> = &'a dyn Fn() -> String;

/// Who a device is and what it can do, in wgpu's terms: the seam's common vocabulary,
/// which the launch plan, the schedule checks and the topology hash read the same way on
/// every backend ([`Device::identity`]).
#[derive(Clone, Debug)]
pub struct Identity {
    /// A number that no other device of this process has.
    pub id: u64,
    /// The shader form the device compiles kernels from.
    pub emission: Backend,
    /// The device's description.
    pub info: wgpu::AdapterInfo,
    /// The limits launches are planned against.
    pub limits: wgpu::Limits,
    /// The features kernels may use.
    pub features: wgpu::Features,
}

impl Identity {
    /// Refuses what the device cannot compile `kernel` at `schedule` for, naming why: a
    /// feature the kernel needs that the device lacks ([`ForgeError::MissingFeature`]: a
    /// compiler would report it from deep inside instead), or workgroup memory past the
    /// device's limit ([`crate::plan::check_workgroup_memory`]). Every backend checks this
    /// before it compiles.
    pub fn check(&self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<()> {
        if let Some(f) = kernel
            .features()
            .iter()
            .find(|f| !self.features.contains(f.wgpu()))
        {
            return Err(ForgeError::MissingFeature {
                kernel: kernel.name(),
                feature: f.wgpu_name(),
                used_for: f.used_for(),
                adapter: self.info.name.clone(),
            });
        }
        crate::plan::check_workgroup_memory(kernel, schedule, &self.limits)
    }
}

/// One device of one GPU API: what the runtime runs everything through. See the [module
/// docs](self).
///
/// Handles ([`Memory`], [`Compiled`], [`Prepared`], [`Stamps`]) go back to the device that
/// made them; a device refuses another's with an error ([`foreign`]), never a panic.
pub trait Device: fmt::Debug + wgpu::WasmNotSendSync {
    // ---- Identity, features and limits -----------------------------------------------

    /// Who the device is and what it can do.
    fn identity(&self) -> &Identity;

    /// A number that no other device of this process has: what tells one runtime's
    /// memory from another's.
    fn id(&self) -> u64 {
        self.identity().id
    }

    /// The shader form the device compiles kernels from.
    fn emission(&self) -> Backend {
        self.identity().emission
    }

    /// The device's description: name, vendor, device, driver (on CUDA, in wgpu's terms:
    /// NVIDIA's vendor id, the compute capability as `device`, driver `CUDA`).
    fn info(&self) -> &wgpu::AdapterInfo {
        &self.identity().info
    }

    /// The limits launches are planned against.
    fn limits(&self) -> &wgpu::Limits {
        &self.identity().limits
    }

    /// The features kernels may use here.
    fn features(&self) -> wgpu::Features {
        self.identity().features
    }

    /// The hardware profile whose hash keys the tuning manifests.
    fn profile(&self) -> HardwareProfile;

    /// What the device has done so far.
    fn stats(&self) -> RuntimeStats;

    /// The wgpu objects behind the device; `None` on a backend that is not wgpu.
    fn wgpu(&self) -> Option<WgpuParts<'_>> {
        None
    }

    /// The CUDA device ordinal the device is, on CUDA (what NCCL's communicators are
    /// opened over); `None` on a backend that is not CUDA.
    fn cuda_ordinal(&self) -> Option<usize> {
        None
    }

    /// Fails with [`ForgeError::DeviceLost`] once the device is gone, and with
    /// [`ForgeError::Timeout`] once a wait has outlived the device's timeout.
    fn check_lost(&self) -> Result<()> {
        Ok(())
    }

    /// Bounds every blocking wait for the device (a readback, a wait for idle) by
    /// `timeout`; `None` waits as long as the work takes. Past it the wait returns
    /// [`ForgeError::Timeout`], naming the kernels in flight, and every later call returns
    /// the same error: the device may still be running them, and no call waits on it
    /// again. A device that cannot bound its waits refuses a timeout with
    /// [`ForgeError::InvalidArgument`] (the default).
    fn set_timeout(&mut self, timeout: Option<std::time::Duration>) -> Result<()> {
        match timeout {
            None => Ok(()),
            Some(_) => Err(ForgeError::InvalidArgument {
                kernel: "RuntimeBuilder::timeout",
                message: format!(
                    "this device ({}) cannot bound its waits",
                    crate::shown::shown(&self.info().name)
                ),
            }),
        }
    }

    /// The error of a failed step (a submission, a wait, a copy): `message`, met during
    /// `context`, unless the device knows better (wgpu: the device was lost; CUDA: the
    /// kernels launched since the last synchronisation, whose failure it is).
    fn failure(&mut self, context: &'static str, message: String) -> ForgeError;

    // ---- Memory ------------------------------------------------------------------------

    /// The memory budget every allocation counts against.
    fn budget(&self) -> &MemoryBudget;

    /// Bytes of idle pooled memory the device frees to make room before an allocation
    /// fails (0 where it keeps none).
    fn idle_bytes(&self) -> u64 {
        0
    }

    /// New memory of `bytes` bytes (a multiple of 4) that lives until dropped, holding
    /// `init` at its start and zeros after. `what` names it in errors: past the budget is
    /// [`ForgeError::CapacityExceeded`].
    fn create(&mut self, bytes: u64, init: Option<&[u8]>, what: What<'_>) -> Result<Memory>;

    /// Memory of at least `bytes` bytes for one call, from the device's pool where it
    /// keeps one. Its contents are unspecified: a call uploads to or clears what it binds.
    /// Give it back with [`Device::release`] once no recorded work uses it.
    fn lease(&mut self, bytes: u64, what: What<'_>) -> Result<Memory>;

    /// Gives back memory from [`Device::lease`] (dropping it would free it instead).
    fn release(&mut self, memory: Memory);

    /// Memory over `bytes` bytes of a buffer the application made on this device's wgpu
    /// device (checked to be its). Errors: the device is not wgpu, or the buffer is of
    /// another device ([`ForgeError::ForeignBuffer`]).
    fn import_wgpu_buffer(&mut self, buffer: wgpu::Buffer, bytes: u64) -> Result<Memory> {
        let _ = (buffer, bytes);
        Err(ForgeError::ForeignBuffer {
            what: "tensor_from_buffer",
            message: format!(
                "the runtime runs on {} (`{}`), whose memory is not wgpu buffers",
                self.info().name,
                self.emission()
            ),
        })
    }

    // ---- Kernels -----------------------------------------------------------------------

    /// `kernel` compiled for `schedule`, on first use (then cached); `params` says whether
    /// its layout ends with the `Params` uniform. Errors: a feature the device lacks
    /// ([`ForgeError::MissingFeature`]), a kernel without this device's form
    /// ([`ForgeError::CannotEmit`]), a compiler's refusal ([`ForgeError::ShaderCompile`]).
    fn compile(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: bool,
    ) -> Result<Compiled>;

    /// Compiles, ahead of their first launch, every job (a kernel, its schedule, whether
    /// its layout ends with the uniform) not compiled yet; returns how many were. The
    /// first error is returned after every job has been tried; the rest stay compiled.
    fn warm_up(&mut self, jobs: &[(&dyn Kernel, Schedule, bool)]) -> Result<usize>;

    /// Launches like `launch`, bound ahead of time to its bindings (set 0) and to each
    /// further set of memory in `more` (one memory per storage binding each), with its
    /// print buffer: what [`Command::Dispatch`] dispatches.
    fn prepare(&mut self, launch: &Launch<'_>, more: &[&[&Memory]]) -> Result<Prepared>;

    /// Gives back what [`Device::prepare`] made, once no recorded work uses it.
    fn retire(&mut self, prepared: Prepared);

    // ---- Work --------------------------------------------------------------------------

    /// Records `commands`, in order, after the work recorded before; see [`Command`].
    /// `context` names the step in errors. Nothing runs before it is submitted
    /// ([`Device::flush`], [`Device::read`]) on a device that batches work (wgpu); on one
    /// that does not (CUDA's stream), it is enqueued at once.
    fn record(&mut self, context: &'static str, commands: &[Command<'_>]) -> Result<()>;

    /// Whether work is recorded but not yet submitted (on CUDA: enqueued and not yet
    /// waited for).
    fn has_pending(&self) -> bool;

    /// Whether recorded work starts at once (CUDA's stream), rather than at the next
    /// submission (wgpu's encoder): where a wall-clock timer starts its clock, so that it
    /// times the work from its start to idle either way.
    fn eager(&self) -> bool {
        false
    }

    /// Submits the recorded work, if any, in one submission. Does not wait for it.
    fn flush(&mut self) -> Result<()>;

    /// Until the work submitted so far has finished.
    fn wait(&mut self) -> Wait<'_, ()>;

    /// Submits the recorded work, then copies the first `into[i].len()` bytes of each
    /// `from[i]` into `into[i]`, all in one submission and one readback.
    fn read<'a, 'b: 'a>(
        &'a mut self,
        from: &'a [&'a Memory],
        into: &'a mut [&'b mut [u8]],
    ) -> Wait<'a, ()>;

    // ---- Timestamps --------------------------------------------------------------------

    /// The most timestamp slots one [`Stamps`] holds.
    fn max_stamps(&self) -> u32;

    /// `count` timestamp slots (rounded down to an even number, at least 2, at most
    /// [`Device::max_stamps`]); `label` names them in errors. Only on a device whose
    /// features have `TIMESTAMP_QUERY`.
    fn stamps(&mut self, label: &'static str, count: u32) -> Result<Stamps>;

    /// Submits the recorded work, waits for it, and reads back the first `pairs` pairs of
    /// timestamps (slots `2p`, `2p + 1`) as durations in nanoseconds: `None` for a pair
    /// whose timer did not advance, went backwards, or has no period.
    fn read_stamps<'a>(&'a mut self, stamps: &'a Stamps, pairs: u32) -> Wait<'a, Vec<Option<f64>>>;

    // ---- Traces and caches -------------------------------------------------------------

    /// Records the device's own events (compiles, launches timed on its GPU track) into
    /// `recorder` from now on, where the backend has them.
    fn attach_trace(&mut self, recorder: Arc<crate::trace::Recorder>) {
        let _ = recorder;
    }

    /// Waits for the GPU times of the trace still out and writes the trace; returns
    /// whether the device keeps one.
    fn finish_trace(&mut self) -> Result<bool> {
        Ok(false)
    }

    /// The file the driver's compiled pipelines persist to and how many bytes of them it
    /// started from, where the device keeps one.
    fn pipeline_cache(&self) -> Option<(&Path, usize)> {
        None
    }

    /// Writes the driver's pipeline cache now if pipelines were compiled since; returns
    /// whether it wrote.
    fn save_pipeline_cache(&mut self) -> Result<bool> {
        Ok(false)
    }
}
