//! Launches: a kernel on host slices, on device-resident tensors, or on type-erased host
//! data. Part of the runtime (layer 5), written once over the backend seam.
//!
//! This module owns the three ways to launch a kernel, and one path under them:
//! - [`ForgeRuntime::launch_host`] takes host slices: it uploads them, runs the kernel and
//!   returns the writable bindings, in one submission and one readback;
//! - [`ForgeRuntime::launch_tensors`] binds device-resident tensors and only records the
//!   dispatch. Launches accumulate in the device's pending work until
//!   [`ForgeRuntime::flush`] or a download submits them, all in one submission;
//! - [`ForgeRuntime::run_dyn`] runs any kernel on [`DynArgs`], through `launch_host`: how
//!   the certifier and the tuner run kernels they know only as `&dyn Kernel`.
//!
//! Each builds one [`LaunchPlan`] (every check that can fail on bad input, before the GPU
//! is touched) and launches through one [`Command::Launch`], which each backend binds and
//! records its own way; timing does the same with launches bound ahead
//! ([`crate::backend::Device::prepare`]).
//!
//! # What `#[out]` bindings start as
//! One rule: **the runtime gives an `#[out]` binding zeros only where it allocates it.**
//! - `run`, `rt.name(..)`, [`ForgeRuntime::launch_host`] and [`ForgeRuntime::run_dyn`]
//!   allocate every `#[out]` binding for the call, and it starts zeroed.
//! - `launch` and [`ForgeRuntime::launch_tensors`] bind the tensor they are given, as it
//!   is: a kernel that writes every element of its output (what certification checks)
//!   computes the same either way, but one that accumulates (an atomic histogram) adds to
//!   what the tensor holds. Start such a tensor from [`ForgeRuntime::zeros`] or
//!   [`ForgeRuntime::clear`] it between launches; two launches without a clear accumulate
//!   twice.

use crate::backend::{Command, IndirectSource, Launch, Memory};
use crate::error::{ForgeError, Result};
use crate::kernel::{check_arity, Access, Binding, DynArgs, HostBuffer, Kernel};
use crate::plan::LaunchPlan;
use crate::runtime::ForgeRuntime;
use crate::schedule::{Schedule, Threads};
use crate::tensor::RawTensor;
use crate::trace::launch_args;

/// One binding's host data for [`ForgeRuntime::launch_host`].
pub enum HostArg<'a> {
    /// Read-only: uploaded.
    In(&'a [u8]),
    /// Read-write: uploaded, then written back into the slice.
    InOut(&'a mut [u8]),
    /// Output: this many zeroed bytes are allocated and returned.
    Out(u64),
}

impl HostArg<'_> {
    /// The binding's size in bytes, before padding.
    pub fn len(&self) -> u64 {
        match self {
            HostArg::In(s) => s.len() as u64,
            HostArg::InOut(s) => s.len() as u64,
            HostArg::Out(n) => *n,
        }
    }

    /// Whether the binding has no bytes (an error at launch).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> &'static str {
        match self {
            HostArg::In(_) => "HostArg::In",
            HostArg::InOut(_) => "HostArg::InOut",
            HostArg::Out(_) => "HostArg::Out",
        }
    }
}

/// The `Params` uniform's bytes for type-erased scalars: each value's 32 bits,
/// little-endian, in declaration order, as the generated `Params` struct lays them out.
pub fn params_bytes(args: &DynArgs) -> Vec<u8> {
    args.scalars
        .iter()
        .flat_map(|s| s.bits().to_le_bytes())
        .collect()
}

impl ForgeRuntime {
    /// Runs a kernel on host data, in one submission and one readback.
    ///
    /// `args` follow [`Kernel::layout`]: `HostArg::In` for `Access::Read`, `HostArg::InOut`
    /// for `Access::ReadWrite`, `HostArg::Out` for `Access::Out`. Bindings `0..n` are storage
    /// buffers; non-empty `params` become the uniform at binding `n`, padded to 16 bytes.
    /// Buffers are padded to whole words with zeros.
    ///
    /// Returns one [`HostBuffer`] per `HostArg::Out`, in order, each starting zeroed before
    /// the kernel runs; `HostArg::InOut` slices are overwritten with the kernel's results.
    /// Pending tensor launches, if any, go in the same submission, ahead of this one.
    ///
    /// Errors, all before the GPU is touched: a wrong argument count or kind
    /// ([`ForgeError::InvalidArgument`]), `threads == 0` or an empty binding
    /// ([`ForgeError::EmptyWork`]), a binding past the adapter's limit
    /// ([`ForgeError::BindingTooLarge`]), more bytes than the capacity
    /// ([`ForgeError::CapacityExceeded`]), too many workgroups
    /// ([`ForgeError::TooManyWorkgroups`]), a bad schedule ([`ForgeError::BadSchedule`]).
    pub fn launch_host(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: impl Into<Threads>,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        self.launch_host_blocking(kernel, schedule, params, threads.into(), args)
    }

    // The launches' bodies take `Threads`, not `impl Into<Threads>`: a generic body would be
    // compiled again in every crate that calls it (every kernel's `run` does), where this
    // one is compiled once, here; the public forms only convert.
    fn launch_host_blocking(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        crate::blocking::block_on(
            "a blocking launch",
            self.launch_host_threads(kernel, schedule, params, threads, args),
        )
    }

    /// [`ForgeRuntime::launch_host`], awaited: the form a browser can use.
    pub async fn launch_host_async(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: impl Into<Threads>,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        self.launch_host_threads(kernel, schedule, params, threads.into(), args)
            .await
    }

    async fn launch_host_threads(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        args: &mut [HostArg<'_>],
    ) -> Result<Vec<HostBuffer>> {
        let traced = self.trace_start();
        let name = kernel.name();
        let layout = kernel.layout();
        let plan = self.host_plan(kernel, schedule, params, threads, args)?;
        self.check_indirect_host(kernel, &threads, args)?;
        // A kernel that prints binds its print buffer too, read back with the results.
        let prints = kernel
            .prints()
            .map(|t| (t, t.buffer_bytes(self.print_capacity())));
        let print_bytes = prints.map_or(0, |(_, b)| b);
        let budget = self.device.budget();
        plan.check_capacity(print_bytes, budget.capacity(), budget.in_use())?;
        self.device.check_lost()?;
        let compiled = self.device.compile(kernel, schedule, plan.has_params())?;

        // Memory: one lease per binding, and the print buffer. A repeated call gets the same
        // pooled memory back, in the same places, where the device pools.
        let mut leases = Vec::with_capacity(layout.len() + 1);
        for (b, &size) in layout.iter().zip(&plan.bindings) {
            let what = || format!("kernel `{name}`: argument `{}`", b.name);
            leases.push(self.device.lease(size, &what)?);
        }
        if let Some((_, bytes)) = prints {
            leases.push(
                self.device
                    .lease(bytes, &|| format!("kernel `{name}`: print buffer"))?,
            );
        }
        let ran = self.run_on(&compiled, &plan, prints, args, &leases).await;
        // Released last to first: a pool hands memory of one size out last in, first
        // out, so the next call of this shape gets each binding's memory back in its place
        // (and binds the same cached group).
        for lease in leases.into_iter().rev() {
            self.device.release(lease);
        }
        let (outputs, print_words) = ran?;
        self.trace_launch(traced, name, schedule, plan.grid.dispatch);
        if let Some(table) = kernel.prints() {
            self.prints.add(name, table, &print_words);
        }
        Ok(outputs)
    }

    /// A host launch's work on its leases (one per binding, then the print buffer of a
    /// kernel that prints): the uploads, the zeroed outputs, the launch, then one readback
    /// of every writable binding (and the print buffer's words).
    async fn run_on(
        &mut self,
        compiled: &crate::backend::Compiled,
        plan: &LaunchPlan,
        prints: Option<(&'static crate::prints::PrintTable, u64)>,
        args: &mut [HostArg<'_>],
        leases: &[Memory],
    ) -> Result<(Vec<HostBuffer>, Vec<u32>)> {
        let (bindings, print_lease) = leases.split_at(plan.layout.len());
        let print_lease = print_lease.first();
        {
            let storage: Vec<&Memory> = bindings.iter().collect();
            let mut commands = Vec::with_capacity(bindings.len() + 2);
            for ((a, lease), &size) in args.iter().zip(bindings).zip(&plan.bindings) {
                commands.push(match a {
                    HostArg::In(data) => Command::Upload { to: lease, data },
                    HostArg::InOut(data) => Command::Upload { to: lease, data },
                    // Pooled memory holds the last call's data: outputs start zeroed.
                    HostArg::Out(_) => Command::Clear {
                        to: lease,
                        bytes: size,
                    },
                });
            }
            if let Some(lease) = print_lease {
                // The cursor starts at zero.
                commands.push(Command::Clear {
                    to: lease,
                    bytes: lease.bytes(),
                });
            }
            commands.push(Command::Launch(Launch {
                compiled,
                plan,
                bindings: &storage,
                prints: prints.zip(print_lease).map(|((t, _), l)| (t.binding, l)),
                // The count is on the host and within the bound: the bound's grid, whose
                // surplus workgroups leave at once.
                indirect: None,
            }));
            self.device.record("recording a dispatch", &commands)?;
        }

        let mut outputs = Vec::new();
        for (b, a) in plan.layout.iter().zip(args.iter()) {
            if let HostArg::Out(n) = a {
                let len = *n as usize / b.elem.size().max(1);
                outputs.push(HostBuffer::zeroed(b.elem, len)?);
            }
        }
        let mut print_words = match prints {
            Some((_, bytes)) => vec![0u32; bytes.div_ceil(4) as usize],
            None => Vec::new(),
        };
        let mut from: Vec<&Memory> = Vec::with_capacity(leases.len());
        let mut into: Vec<&mut [u8]> = Vec::with_capacity(leases.len());
        let mut outs = outputs.iter_mut();
        for (a, lease) in args.iter_mut().zip(bindings) {
            match a {
                HostArg::InOut(slice) => {
                    from.push(lease);
                    into.push(&mut **slice);
                }
                HostArg::Out(_) => {
                    if let Some(out) = outs.next() {
                        from.push(lease);
                        into.push(out.bytes_mut());
                    }
                }
                HostArg::In(_) => {}
            }
        }
        if let (Some(_), Some(lease)) = (prints, print_lease) {
            from.push(lease);
            into.push(bytemuck::cast_slice_mut(&mut print_words));
        }
        self.read_checked(&from, &mut into).await?;
        drop(into);
        Ok((outputs, print_words))
    }

    /// Records a launch of `kernel` on device-resident tensors without submitting it.
    ///
    /// `tensors` follow [`Kernel::layout`]; each must have its binding's element type.
    /// Launches accumulate in one pending submission (on CUDA, on the stream);
    /// [`ForgeRuntime::flush`], a download, or a [`ForgeRuntime::launch_host`] submits them
    /// all in one submission, in order.
    ///
    /// The tensors are bound as they are: an `#[out]` tensor is not cleared first (see
    /// the [module docs](self) for the rule). Each must belong to this runtime
    /// ([`ForgeError::ForeignTensor`]).
    pub fn launch_tensors(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: impl Into<Threads>,
        tensors: &[&RawTensor],
    ) -> Result<()> {
        self.launch_tensors_threads(kernel, schedule, params, threads.into(), tensors)
    }

    fn launch_tensors_threads(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        tensors: &[&RawTensor],
    ) -> Result<()> {
        let traced = self.trace_start();
        let name = kernel.name();
        let plan = self.tensors_plan(kernel, schedule, params, threads, tensors)?;
        self.device.check_lost()?;
        let compiled = self.device.compile(kernel, schedule, plan.has_params())?;
        let prints = kernel
            .prints()
            .map(|t| (t, t.buffer_bytes(self.print_capacity())));
        // A kernel that prints binds a print buffer of its own, read back at the next
        // `take_prints` (see `runtime::prints`).
        let print_lease = match prints {
            Some((_, bytes)) => Some(
                self.device
                    .lease(bytes, &|| format!("kernel `{name}`: print buffer"))?,
            ),
            None => None,
        };
        let bindings: Vec<&Memory> = tensors.iter().map(|t| t.memory()).collect();
        // An indirect kernel's count goes to the log as the launch runs (`indirect`).
        let logged = match self.log_indirect(kernel, &threads, tensors) {
            Ok(logged) => logged,
            Err(e) => {
                if let Some(lease) = print_lease {
                    self.device.release(lease);
                }
                return Err(e);
            }
        };
        let was_logged = logged.is_some();
        let mut commands = Vec::with_capacity(3);
        if let Some(lease) = &print_lease {
            // The cursor starts at zero.
            commands.push(Command::Clear {
                to: lease,
                bytes: lease.bytes(),
            });
        }
        if let Some(copy) = logged {
            commands.push(self.indirect.copy(copy));
        }
        commands.push(Command::Launch(Launch {
            compiled: &compiled,
            plan: &plan,
            bindings: &bindings,
            prints: prints
                .zip(print_lease.as_ref())
                .map(|((t, _), l)| (t.binding, l)),
            indirect: kernel.declarations().indirect.and_then(|at| {
                Some(IndirectSource {
                    count: bindings.get(at.binding)?,
                    element: at.element,
                    bound: threads.indirect_bound(),
                })
            }),
        }));
        let recorded = self.device.record("recording a launch", &commands);
        drop(commands);
        if let Err(e) = recorded {
            if was_logged {
                self.unlog_indirect();
            }
            if let Some(lease) = print_lease {
                self.device.release(lease);
            }
            return Err(e);
        }
        self.trace_launch(traced, name, schedule, plan.grid.dispatch);
        if let (Some((table, bytes)), Some(lease)) = (prints, print_lease) {
            self.prints.keep(name, table, lease, bytes);
        }
        Ok(())
    }

    /// Runs `kernel` on type-erased host data, with the given schedule, through
    /// [`ForgeRuntime::launch_host`]: one submission, one readback. Returns the final
    /// contents of every writable binding, in layout order; `#[out]` bindings start zeroed.
    ///
    /// `args` holds the scalars in declaration order and one entry per binding: data of
    /// its LEN for every non-`#[out]` binding, `None` for `#[out]` ones.
    ///
    /// Errors: a wrong number of scalars or buffers, or a buffer of the wrong element type
    /// ([`ForgeError::InvalidArgument`]), a buffer of the wrong length
    /// ([`ForgeError::LengthMismatch`]), sizes that cannot be evaluated, and every error
    /// of [`ForgeRuntime::launch_host`].
    pub fn run_dyn(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<Vec<HostBuffer>> {
        crate::blocking::block_on("a blocking run", self.run_dyn_async(kernel, schedule, args))
    }

    /// [`ForgeRuntime::run_dyn`], awaited: the form a browser can use.
    pub async fn run_dyn_async(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<Vec<HostBuffer>> {
        let name = kernel.name();
        let layout = kernel.layout();
        // The oracle's checks first, in its order (`DynArgs::check`: the counts, the lengths,
        // the element types), so that both refuse the same arguments with the same error;
        // then the grid, which refuses zero-sized work. The lengths are computed once, for
        // the checks and the buffers.
        let lens = args.lens(kernel, schedule)?;
        args.check_data(kernel, &lens)?;
        let threads = kernel.grid_threads_at(schedule, &args.scalars)?;
        let mut data: Vec<Vec<u8>> = layout
            .iter()
            .zip(&args.buffers)
            .map(|(b, buf)| match (b.access, buf) {
                (Access::ReadWrite, Some(buf)) => buf.bytes().to_vec(),
                _ => Vec::new(),
            })
            .collect();
        let mut host: Vec<HostArg<'_>> = layout
            .iter()
            .zip(&args.buffers)
            .zip(data.iter_mut())
            .zip(&lens)
            .map(|(((b, buf), d), &len)| match (b.access, buf) {
                (Access::Read, Some(buf)) => HostArg::In(buf.bytes()),
                (Access::ReadWrite, _) => HostArg::InOut(d.as_mut_slice()),
                _ => HostArg::Out(len.saturating_mul(b.elem.size() as u64)),
            })
            .collect();
        let outs = self
            .launch_host_async(kernel, schedule, &params_bytes(args), threads, &mut host)
            .await?;
        drop(host);
        let mut outs = outs.into_iter();
        layout
            .iter()
            .zip(&data)
            .filter(|(b, _)| b.access.writable())
            .map(|(b, d)| match b.access {
                Access::ReadWrite => Ok(HostBuffer::from_slice::<u8>(b.elem, d)),
                _ => outs.next().ok_or_else(|| ForgeError::InvalidArgument {
                    kernel: name,
                    message: format!("no result came back for `{}`", b.name),
                }),
            })
            .collect()
    }

    /// Submits every pending launch in one submission. Does nothing when none is pending.
    /// Does not wait for the GPU; downloads do.
    pub fn flush(&mut self) -> Result<()> {
        self.device.flush()
    }

    /// Whether launches are recorded but not yet submitted (on CUDA: enqueued and not
    /// yet waited for).
    pub fn has_pending(&self) -> bool {
        self.device.has_pending()
    }

    /// Adds the host event of a launch of `kernel` that began at `start` (`None` without
    /// a trace).
    fn trace_launch(
        &self,
        start: Option<web_time::Instant>,
        kernel: &'static str,
        schedule: &Schedule,
        workgroups: [u32; 3],
    ) {
        if let (Some(rec), Some(start)) = (self.recorder(), start) {
            rec.host("launch", kernel, start, launch_args(schedule, workgroups));
        }
    }
}

/// The sizes of a type-erased call at `schedule`: every binding's length
/// ([`DynArgs::lens`], which checks the counts) and the threads, which may name the
/// schedule's constants.
pub(crate) fn dyn_sizes(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    args: &DynArgs,
) -> Result<(Vec<u64>, Threads)> {
    let lens = args.lens(kernel, schedule)?;
    let threads = kernel.grid_threads_at(schedule, &args.scalars)?;
    Ok((lens, threads))
}

impl ForgeRuntime {
    /// The checks of a launch on host data, on any device: one argument per binding, each of
    /// the binding's kind (`In`, `InOut`, `Out`); then the plan.
    pub(crate) fn host_plan(
        &self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        args: &[HostArg<'_>],
    ) -> Result<LaunchPlan> {
        let name = kernel.name();
        let layout = kernel.layout();
        check_arity(name, layout.len(), args.len(), "arguments")?;
        for (b, a) in layout.iter().zip(args) {
            check_kind(name, b, a)?;
        }
        let bytes: Vec<u64> = args.iter().map(HostArg::len).collect();
        LaunchPlan::new(kernel, schedule, params, threads, &bytes, self.limits())
    }

    /// The checks of a launch on tensors, on any device: one tensor per binding, each of
    /// this runtime and of the binding's element, no aliased writes; then the plan.
    pub(crate) fn tensors_plan(
        &self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: Threads,
        tensors: &[&RawTensor],
    ) -> Result<LaunchPlan> {
        let name = kernel.name();
        let layout = kernel.layout();
        check_arity(name, layout.len(), tensors.len(), "tensors")?;
        for (b, t) in layout.iter().zip(tensors) {
            self.check_owner(name, &|| format!("argument `{}`", b.name), t)?;
            check_elem(name, b, t)?;
        }
        check_aliasing(name, layout, tensors)?;
        let bytes: Vec<u64> = tensors.iter().map(|t| t.bytes()).collect();
        LaunchPlan::new(kernel, schedule, params, threads, &bytes, self.limits())
    }
}

pub(crate) fn check_kind(kernel: &'static str, b: &Binding, a: &HostArg<'_>) -> Result<()> {
    let fits = matches!(
        (b.access, a),
        (Access::Read, HostArg::In(_))
            | (Access::ReadWrite, HostArg::InOut(_))
            | (Access::Out, HostArg::Out(_))
    );
    if fits {
        return Ok(());
    }
    Err(ForgeError::InvalidArgument {
        kernel,
        message: format!(
            "argument `{}` is declared {:?} but was passed as {}; use {}",
            b.name,
            b.access,
            a.kind(),
            match b.access {
                Access::Read => "HostArg::In",
                Access::ReadWrite => "HostArg::InOut",
                Access::Out => "HostArg::Out",
            }
        ),
    })
}

pub(crate) fn check_elem(kernel: &'static str, b: &Binding, t: &RawTensor) -> Result<()> {
    // Atomic bindings are plain integers on the host.
    let (want, have) = (b.elem, t.elem());
    if want.scalar == have.scalar && want.width == have.width {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "argument `{}` holds `{}`, but the tensor holds `{}`",
                b.name,
                want.wgsl(),
                have.wgsl()
            ),
        })
    }
}

pub(crate) fn check_aliasing(
    kernel: &'static str,
    layout: &[Binding],
    tensors: &[&RawTensor],
) -> Result<()> {
    for i in 0..tensors.len() {
        for j in i + 1..tensors.len() {
            let writes = layout[i].access.writable() || layout[j].access.writable();
            if writes && tensors[i].same_memory(tensors[j]) {
                return Err(ForgeError::InvalidArgument {
                    kernel,
                    message: format!(
                        "arguments `{}` and `{}` are the same tensor, and one of them is written; \
                         pass a copy",
                        layout[i].name, layout[j].name
                    ),
                });
            }
        }
    }
    Ok(())
}
