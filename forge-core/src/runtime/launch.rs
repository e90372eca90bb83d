//! Launches: a kernel on host slices, on device-resident tensors, or on type-erased host
//! data. Part of the runtime (layer 4).
//!
//! This module owns the three ways to launch a kernel, and one path under them:
//! - [`ForgeRuntime::launch_host`] takes host slices: it uploads them, runs the kernel and
//!   returns the writable bindings, in one submission and one readback;
//! - [`ForgeRuntime::launch_tensors`] binds device-resident tensors and only records the
//!   dispatch. Launches accumulate in a pending encoder until [`ForgeRuntime::flush`] or a
//!   download submits them, all in one submission;
//! - [`ForgeRuntime::run_dyn`] runs any kernel on [`DynArgs`], through `launch_host`: how
//!   the certifier and the tuner run kernels they know only as `&dyn Kernel`.
//!
//! Each builds one [`LaunchPlan`] (every check that can fail on bad input, before the GPU
//! is touched) and binds through [`CompiledPipeline::bind_group`]; timing does the same.
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

use crate::device::pipeline::CompiledPipeline;
use crate::device::trace::launch_args;
use crate::device::{buffers::STAGING_ALIGN, error_scope};
use crate::device::{write_padded, STAGING_USAGE, STORAGE_USAGE, UNIFORM_USAGE};
use crate::error::{ForgeError, Result};
use crate::kernel::{check_scalar_count, Access, Binding, DynArgs, HostBuffer, Kernel};
use crate::plan::{align_up, LaunchPlan};
use crate::runtime::ForgeRuntime;
use crate::schedule::{Schedule, Threads};
use crate::tensor::RawTensor;

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
        #[cfg(feature = "cuda")]
        if self.is_cuda() {
            return self.cuda_launch_host(kernel, schedule, params, threads, args);
        }
        let traced = self.gpu().trace_start();
        let name = kernel.name();
        let layout = kernel.layout();
        let plan = self.host_plan(kernel, schedule, params, threads, args)?;
        // A kernel that prints binds its print buffer too, read back with the results.
        let prints = kernel
            .prints()
            .map(|t| (t, t.buffer_bytes(self.print_capacity())));
        let gpu = self.gpu();
        let print_bytes = prints.map_or(0, |(_, b)| b);
        plan.check_capacity(print_bytes, gpu.capacity(), gpu.pool().budget().in_use())?;
        gpu.check_lost()?;
        let compiled = self.pipeline(kernel, schedule, plan.has_params())?;

        // Buffers: one per binding, the uniform, and one staging buffer for every writable
        // binding at 256-byte-aligned offsets, so the results come back in a single map.
        let gpu = self.gpu_mut();
        let mut leases = Vec::with_capacity(layout.len());
        for (b, &size) in layout.iter().zip(&plan.bindings) {
            let what = || format!("kernel `{name}`: argument `{}`", b.name);
            leases.push(gpu.acquire(size, STORAGE_USAGE, &what)?);
        }
        let mut uniform = match plan.uniform_size() {
            Some(size) => Some(gpu.acquire(size, UNIFORM_USAGE, &|| {
                format!("kernel `{name}`: `Params`")
            })?),
            None => None,
        };
        let print_lease = match prints {
            Some((_, bytes)) => Some(gpu.acquire(bytes, STORAGE_USAGE, &|| {
                format!("kernel `{name}`: print buffer")
            })?),
            None => None,
        };
        let mut staging_offsets = vec![None; layout.len()];
        let mut staging_size = 0u64;
        for (i, b) in layout.iter().enumerate() {
            if b.access.writable() {
                let offset = align_up(staging_size, STAGING_ALIGN);
                staging_offsets[i] = Some(offset);
                staging_size = offset + plan.bindings[i];
            }
        }
        let print_offset = align_up(staging_size, STAGING_ALIGN);
        if let Some((_, bytes)) = prints {
            staging_size = print_offset + bytes;
        }
        let staging = if staging_size > 0 {
            Some(gpu.acquire(staging_size, STAGING_USAGE, &|| {
                format!("kernel `{name}`: readback")
            })?)
        } else {
            None
        };

        // A repeated call gets the same pooled buffers, and binds the group made for them.
        let storage: Vec<&wgpu::Buffer> = leases.iter().map(|l| l.buffer()).collect();
        let print_binding = prints.zip(print_lease.as_ref());
        let bind_group = gpu.pooled_bind_group(
            &compiled,
            &plan,
            &storage,
            uniform.as_ref().map(|l| l.buffer()),
            print_binding.map(|((t, _), l)| (t.binding, l.buffer())),
        )?;
        let queries = gpu.pass_queries(name, || launch_args(schedule, plan.grid.dispatch));
        let (device, queue) = (gpu.device(), gpu.queue());
        let (encoder, err) = error_scope(device, || {
            for (a, lease) in args.iter().zip(&leases) {
                match a {
                    HostArg::In(data) => write_padded(queue, lease.buffer(), data),
                    HostArg::InOut(data) => write_padded(queue, lease.buffer(), data),
                    HostArg::Out(_) => {}
                }
            }
            // The uniform is written only when its `Params` changed since its last call.
            if let Some(lease) = &mut uniform {
                lease.write_tracked(queue, &plan.params);
            }
            let mut encoder = gpu.encoder(name);
            for ((b, lease), &size) in layout.iter().zip(&leases).zip(&plan.bindings) {
                if b.access == Access::Out {
                    // Pooled buffers hold the last call's data: outputs start zeroed.
                    encoder.clear_buffer(lease.buffer(), 0, Some(size));
                }
            }
            if let Some(lease) = &print_lease {
                // The cursor starts at zero.
                encoder.clear_buffer(lease.buffer(), 0, None);
            }
            record_pass(&mut encoder, &plan, &compiled, &bind_group, &queries);
            if let (Some(staging), Some(((_, bytes), lease))) = (&staging, print_binding) {
                encoder.copy_buffer_to_buffer(
                    lease.buffer(),
                    0,
                    staging.buffer(),
                    print_offset,
                    bytes,
                );
            }
            if let Some(staging) = &staging {
                for ((lease, &size), offset) in
                    leases.iter().zip(&plan.bindings).zip(&staging_offsets)
                {
                    if let Some(offset) = offset {
                        encoder.copy_buffer_to_buffer(
                            lease.buffer(),
                            0,
                            staging.buffer(),
                            *offset,
                            size,
                        );
                    }
                }
            }
            encoder
        });
        if let Some(e) = err {
            gpu.cancel_pass_queries(&queries);
            return Err(gpu.explain(ForgeError::Gpu {
                context: "recording a dispatch",
                message: format!("kernel `{name}`: {}", crate::device::error_text(&e)),
            }));
        }
        gpu.count_dispatch();
        gpu.submit(Some(encoder), "submitting work")?;

        let mut outputs = Vec::new();
        let mut print_words: Vec<u32> = Vec::new();
        if let Some(staging) = &staging {
            gpu.read_async(staging.buffer(), staging_size, |bytes| {
                if let Some((_, n)) = prints {
                    let at = print_offset as usize;
                    print_words = bytemuck::pod_collect_to_vec(&bytes[at..at + n as usize]);
                }
                for ((b, a), offset) in layout.iter().zip(args.iter_mut()).zip(&staging_offsets) {
                    let Some(offset) = *offset else { continue };
                    let start = offset as usize;
                    match a {
                        HostArg::InOut(slice) => {
                            let len = slice.len();
                            slice.copy_from_slice(&bytes[start..start + len]);
                        }
                        HostArg::Out(n) => {
                            let len = *n as usize;
                            outputs.push(HostBuffer::from_slice::<u8>(
                                b.elem,
                                &bytes[start..start + len],
                            ));
                        }
                        HostArg::In(_) => {}
                    }
                }
            })
            .await?;
        }
        // Released last to first: the pool hands buffers of one size out last in, first
        // out, so the next call of this shape gets each binding's buffer back in its place
        // (and binds the same cached group).
        for lease in leases
            .into_iter()
            .chain(uniform)
            .chain(print_lease)
            .chain(staging)
            .rev()
        {
            gpu.release(lease);
        }
        gpu.trace_launch(traced, name, schedule, plan.grid.dispatch);
        if let Some((table, _)) = prints {
            self.prints.add(name, table, &print_words);
        }
        Ok(outputs)
    }

    /// Records a launch of `kernel` on device-resident tensors without submitting it.
    ///
    /// `tensors` follow [`Kernel::layout`]; each must have its binding's element type.
    /// Launches accumulate in one pending encoder; [`ForgeRuntime::flush`], a download, or
    /// a [`ForgeRuntime::launch_host`] submits them all in one submission, in order.
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
        #[cfg(feature = "cuda")]
        if self.is_cuda() {
            return self.cuda_launch_tensors(kernel, schedule, params, threads, tensors);
        }
        let traced = self.gpu().trace_start();
        let name = kernel.name();
        let plan = self.tensors_plan(kernel, schedule, params, threads, tensors)?;
        self.gpu().check_lost()?;
        let compiled = self.pipeline(kernel, schedule, plan.has_params())?;

        let prints = kernel
            .prints()
            .map(|t| (t, t.buffer_bytes(self.print_capacity())));
        let gpu = self.gpu_mut();
        let uniform = match plan.uniform_size() {
            Some(size) => Some(gpu.acquire(size, UNIFORM_USAGE, &|| {
                format!("kernel `{name}`: `Params`")
            })?),
            None => None,
        };
        // A kernel that prints binds a print buffer of its own, read back at the next
        // `take_prints` (see `runtime::prints`).
        let print_lease = match prints {
            Some((_, bytes)) => Some(gpu.acquire(bytes, STORAGE_USAGE, &|| {
                format!("kernel `{name}`: print buffer")
            })?),
            None => None,
        };
        let (device, queue) = (gpu.device(), gpu.queue());
        let print_binding = prints.zip(print_lease.as_ref());
        let (bind_group, err) = error_scope(device, || {
            if let Some(lease) = &uniform {
                write_padded(queue, lease.buffer(), &plan.params);
            }
            let storage: Vec<&wgpu::Buffer> = tensors.iter().map(|t| t.buffer()).collect();
            compiled.bind_group(
                device,
                &plan,
                &storage,
                uniform.as_ref().map(|l| l.buffer()),
                print_binding.map(|((t, _), l)| (t.binding, l.buffer())),
            )
        });
        if let Some(e) = err {
            return Err(gpu.explain(ForgeError::Gpu {
                context: "binding tensors",
                message: format!("kernel `{name}`: {}", crate::device::error_text(&e)),
            }));
        }
        let queries = gpu.pass_queries(name, || launch_args(schedule, plan.grid.dispatch));
        let recorded = gpu.record("recording a launch", |encoder| {
            if let Some(lease) = &print_lease {
                encoder.clear_buffer(lease.buffer(), 0, None);
            }
            record_pass(encoder, &plan, &compiled, &bind_group, &queries)
        });
        if recorded.is_err() {
            gpu.cancel_pass_queries(&queries);
        }
        recorded?;
        if let Some(lease) = uniform {
            // Read at submission: it must not be reused before.
            gpu.retain(lease);
        }
        gpu.count_dispatch();
        gpu.trace_launch(traced, name, schedule, plan.grid.dispatch);
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
        let (lens, threads) = dyn_sizes(kernel, args)?;
        check_dyn_data(kernel, args, &lens)?;
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
        // On CUDA every launch is on the stream already: there is nothing to submit.
        if self.is_cuda() {
            return Ok(());
        }
        self.gpu_mut().flush()
    }

    /// Whether launches are recorded but not yet submitted (on CUDA: enqueued and not
    /// yet waited for).
    pub fn has_pending(&self) -> bool {
        #[cfg(feature = "cuda")]
        if self.is_cuda() {
            return self.cuda_has_pending();
        }
        self.gpu().has_pending()
    }
}

/// The sizes of a type-erased call: after checking the scalar count and that there is one
/// buffer per binding, every binding's length (its LEN evaluated) and the threads.
pub(crate) fn dyn_sizes(kernel: &dyn Kernel, args: &DynArgs) -> Result<(Vec<u64>, Threads)> {
    let name = kernel.name();
    check_scalar_count(name, kernel.scalars().len(), args.scalars.len())?;
    check_arity(name, kernel.layout().len(), args.buffers.len(), "buffers")?;
    let lens = kernel.binding_lens(&args.scalars)?;
    let threads = kernel.grid_threads(&args.scalars)?;
    Ok((lens, threads))
}

/// Checks that every non-`#[out]` binding of a type-erased call has data of its element
/// type and of its length in `lens`.
pub(crate) fn check_dyn_data(kernel: &dyn Kernel, args: &DynArgs, lens: &[u64]) -> Result<()> {
    let name = kernel.name();
    let layout = kernel.layout();
    for ((b, buf), &len) in layout.iter().zip(&args.buffers).zip(lens) {
        if b.access == Access::Out {
            continue;
        }
        let Some(buf) = buf else {
            return Err(ForgeError::InvalidArgument {
                kernel: name,
                message: format!(
                    "argument `{}` needs data; only `#[out]` bindings take `None`",
                    b.name
                ),
            });
        };
        if buf.elem().scalar != b.elem.scalar || buf.elem().width != b.elem.width {
            return Err(ForgeError::InvalidArgument {
                kernel: name,
                message: format!(
                    "argument `{}` holds `{}`, but the data given holds `{}`",
                    b.name,
                    b.elem.wgsl(),
                    buf.elem().wgsl()
                ),
            });
        }
        if buf.len() as u64 != len {
            return Err(ForgeError::LengthMismatch {
                kernel: name,
                arg: b.name,
                expr: b.len,
                expected: len,
                actual: buf.len(),
            });
        }
    }
    Ok(())
}

/// Records the plan's dispatch in a compute pass of its own, which writes its timestamps
/// to `queries` where the trace times it on the GPU.
fn record_pass(
    encoder: &mut wgpu::CommandEncoder,
    plan: &LaunchPlan,
    compiled: &CompiledPipeline,
    bind_group: &wgpu::BindGroup,
    queries: &Option<(wgpu::QuerySet, u32)>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(plan.kernel),
        timestamp_writes: queries
            .as_ref()
            .map(|(set, first)| wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(*first),
                end_of_pass_write_index: Some(*first + 1),
            }),
    });
    pass.set_pipeline(&compiled.pipeline);
    pass.set_bind_group(0, bind_group, &[]);
    compiled.dispatch(&mut pass, plan.grid.dispatch);
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

pub(crate) fn check_arity(
    kernel: &'static str,
    expected: usize,
    got: usize,
    what: &str,
) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "expected {expected} {what}, one per binding in layout order, got {got}"
            ),
        })
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
