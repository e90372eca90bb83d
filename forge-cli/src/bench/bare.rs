//! A kernel's WGSL run with plain wgpu calls: buffers, layout, pipeline and bind group made
//! here, once, and none of the runtime's pool, pipeline cache, dispatch or timing code.
//!
//! `forge bench` uses it twice: as the independent check of the runtime's timer (many
//! dispatches in one submission, timed by the host clock from submission to idle) and as
//! the floor of a call's host overhead (a submit and a readback, as an application using
//! wgpu directly would write them, against the generated typed method).

use forge_core::device::{error_scope, error_text};
use forge_core::{DynArgs, ForgeError, ForgeRuntime, Kernel, Schedule};
use std::borrow::Cow;
use std::sync::mpsc;
use std::time::Instant;

/// One kernel at one schedule on its own wgpu objects.
pub struct Bare {
    name: &'static str,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    /// One buffer per binding, in layout order.
    buffers: Vec<wgpu::Buffer>,
    /// (binding, bytes) for every writable binding, and its offset in `staging`.
    readback: Vec<(usize, u64, u64)>,
    staging: wgpu::Buffer,
    dims: [u32; 3],
}

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// The runtime's wgpu objects; a runtime on another backend (CUDA) has none to race.
fn parts(rt: &ForgeRuntime) -> Result<forge_core::WgpuParts<'_>, ForgeError> {
    rt.wgpu().ok_or_else(|| ForgeError::InvalidArgument {
        kernel: "bare wgpu",
        message: format!(
            "the runtime runs on `{}`, not wgpu: there is no wgpu device to compare with",
            rt.emission()
        ),
    })
}

fn gpu_error(name: &'static str, context: &'static str, e: &wgpu::Error) -> ForgeError {
    ForgeError::Gpu {
        context,
        message: format!("kernel `{name}` on bare wgpu: {}", error_text(e)),
    }
}

impl Bare {
    /// Builds everything for `kernel` at `schedule` and uploads `args` (as for
    /// [`ForgeRuntime::run_dyn`]; `#[out]` bindings start zeroed).
    pub fn new(
        rt: &ForgeRuntime,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        args: &DynArgs,
    ) -> Result<Bare, ForgeError> {
        let name = kernel.name();
        let layout = kernel.layout();
        let lens = kernel.binding_lens_at(schedule, &args.scalars)?;
        let dims = rt.workgroups(
            kernel,
            schedule,
            kernel.grid_threads_at(schedule, &args.scalars)?,
        )?;
        if args.buffers.len() != layout.len() {
            return Err(ForgeError::InvalidArgument {
                kernel: name,
                message: format!(
                    "{} buffers for {} bindings",
                    args.buffers.len(),
                    layout.len()
                ),
            });
        }
        let params: Vec<u8> = args
            .scalars
            .iter()
            .flat_map(|s| s.bits().to_le_bytes())
            .collect();
        let device = parts(rt)?.device;
        let ((pipeline, bind_group, buffers, readback, staging), err) = error_scope(device, || {
            let entries = forge_core::device::pipeline::layout_entries(layout, !params.is_empty());
            let bgl = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(name),
                entries: &entries,
            });
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(Cow::Owned(kernel.wgsl(schedule))),
            });
            let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(name),
                bind_group_layouts: &[Some(&bgl)],
                immediate_size: 0,
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pl),
                module: &module,
                entry_point: Some(forge_core::kernel::ENTRY_POINT),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            });
            let buffers: Vec<wgpu::Buffer> = layout
                .iter()
                .zip(&lens)
                .zip(&args.buffers)
                .map(|((b, &len), data)| {
                    let size = (len * b.elem.size() as u64).next_multiple_of(4).max(4);
                    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(b.name),
                        size,
                        usage: STORAGE,
                        mapped_at_creation: true,
                    });
                    if let Ok(mut view) = buffer.get_mapped_range_mut(..) {
                        let bytes = data.as_ref().map_or(&[][..], |h| h.bytes());
                        let n = bytes.len().min(view.len());
                        view.slice(..n).copy_from_slice(&bytes[..n]);
                        view.slice(n..).fill(0);
                    }
                    buffer.unmap();
                    buffer
                })
                .collect();
            let uniform = (!params.is_empty()).then(|| {
                let size = (params.len() as u64).next_multiple_of(16);
                let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("params"),
                    size,
                    usage: wgpu::BufferUsages::UNIFORM,
                    mapped_at_creation: true,
                });
                if let Ok(mut view) = buffer.get_mapped_range_mut(..) {
                    view.slice(..params.len()).copy_from_slice(&params);
                    view.slice(params.len()..).fill(0);
                }
                buffer.unmap();
                buffer
            });
            let mut group: Vec<wgpu::BindGroupEntry> = layout
                .iter()
                .zip(&buffers)
                .map(|(b, buffer)| wgpu::BindGroupEntry {
                    binding: b.binding,
                    resource: buffer.as_entire_binding(),
                })
                .collect();
            if let Some(u) = &uniform {
                group.push(wgpu::BindGroupEntry {
                    binding: layout.len() as u32,
                    resource: u.as_entire_binding(),
                });
            }
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(name),
                layout: &bgl,
                entries: &group,
            });
            let mut readback = Vec::new();
            let mut total = 0u64;
            for (i, (b, buffer)) in layout.iter().zip(&buffers).enumerate() {
                if b.access.writable() {
                    readback.push((i, buffer.size(), total));
                    total = (total + buffer.size()).next_multiple_of(256);
                }
            }
            let staging = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: total.max(4),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (pipeline, bind_group, buffers, readback, staging)
        });
        if let Some(e) = err {
            return Err(gpu_error(name, "building a bare pipeline", &e));
        }
        Ok(Bare {
            name,
            pipeline,
            bind_group,
            buffers,
            readback,
            staging,
            dims,
        })
    }

    fn record(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(self.name),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.dims;
        pass.dispatch_workgroups(x, y, z);
    }

    fn wait(rt: &ForgeRuntime) -> Result<(), ForgeError> {
        parts(rt)?
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| ForgeError::Gpu {
                context: "waiting for the GPU",
                message: e.to_string(),
            })
    }

    /// Nanoseconds per dispatch of `n` dispatches, each in its own compute pass, submitted
    /// together and timed by the host clock from submission until the GPU is idle.
    pub fn time_dispatches(&self, rt: &ForgeRuntime, n: u32) -> Result<f64, ForgeError> {
        let wgpu = parts(rt)?;
        let mut encoder = wgpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for _ in 0..n.max(1) {
            self.record(&mut encoder);
        }
        let commands = encoder.finish();
        Self::wait(rt)?;
        let start = Instant::now();
        wgpu.queue.submit([commands]);
        Self::wait(rt)?;
        Ok(start.elapsed().as_nanos() as f64 / n.max(1) as f64)
    }

    /// One call as an application using wgpu alone would make it: write the inputs
    /// (`inputs[i]` for binding `i`, `None` to leave it), dispatch, copy every writable
    /// binding to the staging buffer, submit, map, wait and read. Returns the writable
    /// bindings' bytes, in layout order.
    pub fn call(
        &self,
        rt: &ForgeRuntime,
        inputs: &[Option<&[u8]>],
    ) -> Result<Vec<Vec<u8>>, ForgeError> {
        let forge_core::WgpuParts { device, queue, .. } = parts(rt)?;
        for (buffer, data) in self.buffers.iter().zip(inputs) {
            if let Some(data) = data {
                queue.write_buffer(buffer, 0, data);
            }
        }
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        self.record(&mut encoder);
        for &(i, size, offset) in &self.readback {
            encoder.copy_buffer_to_buffer(&self.buffers[i], 0, &self.staging, offset, size);
        }
        queue.submit([encoder.finish()]);
        let (tx, rx) = mpsc::channel();
        let slice = self.staging.slice(..);
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        Self::wait(rt)?;
        match rx.try_recv() {
            Ok(Ok(())) => {}
            _ => {
                return Err(ForgeError::Gpu {
                    context: "reading back a bare call",
                    message: format!("kernel `{}`: the staging buffer was not mapped", self.name),
                })
            }
        }
        let out = match slice.get_mapped_range() {
            Ok(view) => Ok(self
                .readback
                .iter()
                .map(|&(_, size, offset)| view[offset as usize..(offset + size) as usize].to_vec())
                .collect()),
            Err(e) => Err(ForgeError::Gpu {
                context: "reading back a bare call",
                message: format!("kernel `{}`: {e}", self.name),
            }),
        };
        self.staging.unmap();
        out
    }
}
