//! The pipeline cache: compiles each (kernel, schedule, emission backend) once, and the one
//! bind-group builder. Part of the wgpu device (layer 4).
//!
//! This module owns [`PipelineCache`], keyed by the kernel's [`KernelId`] (its name and the
//! hash of its source: two kernels of one name never share a pipeline), the compile step
//! behind it, and [`CompiledPipeline::bind_group`], which every launch path binds through:
//! - the bind group layout is built explicitly from [`Kernel::layout`] (read-only storage
//!   for `Access::Read`, read_write otherwise) plus, when the call has parameters, the
//!   `Params` uniform at the next binding number. wgpu's automatic layout is not used, so a
//!   binding the shader happens not to touch still matches the host's binding list;
//! - WGSL is handed to wgpu as source; SPIR-V is translated by [`crate::emit::to_spirv`]
//!   (the translation `forge emit` uses too), or compiled by glslang from naga's GLSL, and
//!   handed to wgpu through its passthrough API, on Vulkan only, with its bindings
//!   numbered by rank in the layout, as wgpu's Vulkan backend numbers the layout's
//!   descriptors ([`crate::emit::Numbering::WgpuVulkan`]: a layout may have gaps);
//! - creation runs inside error scopes, so a shader the driver rejects is a
//!   [`ForgeError::ShaderCompile`], never a panic;
//! - a bind group binds storage binding `i` at its layout's number with the plan's padded
//!   size, and the uniform at [`params_binding`], as the layout was built;
//! - a kernel that prints ([`Kernel::prints`]) has one more read_write storage binding, its
//!   print buffer, at [`crate::prints::PrintTable::binding`]; every launch binds one;
//! - on a device that guards loops ([`super::guard`]), a kernel with loops is compiled from
//!   its guarded WGSL ([`emit::loop_guard`]) and has one more read_write storage binding,
//!   the device's guard buffer, at the first number the kernel leaves free
//!   ([`emit::loop_guard::free_binding`]); every launch binds it.

use super::adapter::vulkan_zeroes_workgroup_memory;
use super::{error_scope, error_text, Gpu};
use crate::backend::Device;
use crate::emit;
use crate::emit::glslang::{self, GlslangError, Language, VulkanEnv};
use crate::error::{ForgeError, Result};
pub use crate::kernel::ENTRY_POINT;
use crate::kernel::{params_binding, Access, Binding, Kernel, KernelId};
use crate::plan::LaunchPlan;
use crate::schedule::Schedule;
use crate::target::Backend;
use naga::valid::Capabilities;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// What a compiled pipeline is cached by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    /// The kernel: its name and the hash of its source.
    pub kernel: KernelId,
    /// The schedule the source was generated for.
    pub schedule: Schedule,
    /// The shader form.
    pub backend: Backend,
    /// Whether the layout ends with the `Params` uniform.
    pub params: bool,
}

/// A compiled compute pipeline and the bind group layout it was created with.
#[derive(Debug)]
pub struct CompiledPipeline {
    /// The pipeline.
    pub pipeline: wgpu::ComputePipeline,
    /// Group 0's layout: the storage bindings, then the uniform if any.
    pub layout: wgpu::BindGroupLayout,
    /// Whether a dispatch hands the shader its workgroup counts as immediates (the `hlsl`
    /// backend: HLSL has no `num_workgroups` built-in; see [`emit::to_vulkan_hlsl`]).
    pub workgroup_counts_as_immediates: bool,
    /// Where the shader's loops are guarded: the binding of the device's guard buffer,
    /// which every launch binds.
    pub guard_binding: Option<u32>,
}

impl CompiledPipeline {
    /// Dispatches `[x, y, z]` workgroups of this pipeline in `pass`, first handing the
    /// counts over as immediates where the shader reads them there.
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, [x, y, z]: [u32; 3]) {
        if self.workgroup_counts_as_immediates {
            let mut bytes = [0u8; emit::HLSL_WORKGROUP_COUNTS_SIZE as usize];
            for (chunk, n) in bytes.chunks_exact_mut(4).zip([x, y, z]) {
                chunk.copy_from_slice(&n.to_le_bytes());
            }
            pass.set_immediates(0, &bytes);
        }
        pass.dispatch_workgroups(x, y, z);
    }
}

/// Compiled pipelines, created once per [`PipelineKey`].
#[derive(Debug, Default)]
pub struct PipelineCache {
    map: HashMap<PipelineKey, Arc<CompiledPipeline>>,
    compiled: u64,
}

impl PipelineCache {
    /// Pipelines created so far.
    pub fn compiled(&self) -> u64 {
        self.compiled
    }

    /// Number of cached pipelines.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The cached pipeline for a key.
    pub fn get(&self, key: &PipelineKey) -> Option<Arc<CompiledPipeline>> {
        self.map.get(key).cloned()
    }
}

/// A compute stage's buffer entry of a bind group layout.
fn buffer_entry(binding: u32, ty: wgpu::BufferBindingType) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// The bind group layout of a kernel: a storage buffer per binding (read-only for
/// `Access::Read`), then the `Params` uniform when `params` is set.
pub fn layout_entries(layout: &[Binding], params: bool) -> Vec<wgpu::BindGroupLayoutEntry> {
    let mut entries: Vec<wgpu::BindGroupLayoutEntry> = layout
        .iter()
        .map(|b| {
            buffer_entry(
                b.binding,
                wgpu::BufferBindingType::Storage {
                    read_only: b.access == Access::Read,
                },
            )
        })
        .collect();
    if params {
        entries.push(buffer_entry(
            params_binding(layout),
            wgpu::BufferBindingType::Uniform,
        ));
    }
    entries
}

/// The layout entry of a printing kernel's print buffer.
pub fn print_entry(table: &crate::prints::PrintTable) -> wgpu::BindGroupLayoutEntry {
    buffer_entry(
        table.binding,
        wgpu::BufferBindingType::Storage { read_only: false },
    )
}

fn binding_resource(buffer: &wgpu::Buffer, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset: 0,
        size: wgpu::BufferSize::new(size),
    })
}

impl CompiledPipeline {
    /// The bind group of one launch of `plan`: `storage[i]` at storage binding `i`, bound
    /// over the plan's padded size, and the uniform (when the plan has params) at the
    /// binding after them, and a printing kernel's print buffer at its binding. Call it
    /// inside an error scope: wgpu reports a buffer that is too small, or of another
    /// device, there.
    pub fn bind_group(
        &self,
        device: &wgpu::Device,
        plan: &LaunchPlan,
        bound: Bound<'_>,
    ) -> wgpu::BindGroup {
        let Bound {
            storage,
            uniform,
            prints,
            guard,
        } = bound;
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = plan
            .layout
            .iter()
            .zip(storage)
            .zip(&plan.bindings)
            .map(|((b, buffer), &size)| wgpu::BindGroupEntry {
                binding: b.binding,
                resource: binding_resource(buffer, size),
            })
            .collect();
        if let (Some(buffer), Some(size)) = (uniform, plan.uniform_size()) {
            entries.push(wgpu::BindGroupEntry {
                binding: plan.params_binding,
                resource: binding_resource(buffer, size),
            });
        }
        if let Some((binding, buffer)) = prints {
            entries.push(wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            });
        }
        if let (Some(binding), Some(buffer)) = (self.guard_binding, guard) {
            entries.push(wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            });
        }
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(plan.kernel),
            layout: &self.layout,
            entries: &entries,
        })
    }
}

/// The buffers of one launch, as [`CompiledPipeline::bind_group`] binds them.
#[derive(Clone, Copy, Debug)]
pub struct Bound<'a> {
    /// Storage binding `i`'s buffer.
    pub storage: &'a [&'a wgpu::Buffer],
    /// The `Params` uniform, when the plan has params.
    pub uniform: Option<&'a wgpu::Buffer>,
    /// The print buffer and its binding number, when the kernel prints.
    pub prints: Option<(u32, &'a wgpu::Buffer)>,
    /// The device's loop guard buffer, where it has one: bound when the pipeline is
    /// guarded.
    pub guard: Option<&'a wgpu::Buffer>,
}

/// What a cached bind group binds: the layout, then every buffer with the size bound.
/// wgpu's handles compare and hash by identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BindGroupKey {
    layout: wgpu::BindGroupLayout,
    buffers: Vec<(wgpu::Buffer, u64)>,
}

/// The bind groups of calls on pooled buffers. A repeated call gets the same buffers from
/// the pool, so it can bind the group the last one made instead of creating one (a
/// descriptor set and its validation, every call). A bind group keeps its buffers alive,
/// so the cache empties itself whenever the pool has freed a buffer since it last looked
/// ([`super::buffers::BufferPool::frees`]), and when it holds [`BindGroupCache::MAX`].
#[derive(Debug, Default)]
pub struct BindGroupCache {
    map: HashMap<BindGroupKey, wgpu::BindGroup>,
    /// The pool's free count when the cache was last emptied.
    frees_seen: u64,
    created: u64,
}

impl BindGroupCache {
    /// The most bind groups kept; past it the cache starts over.
    pub const MAX: usize = 256;

    /// Bind groups created so far (cache misses).
    pub fn created(&self) -> u64 {
        self.created
    }

    /// How many bind groups the cache holds.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the cache holds none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The bind group of `plan` on these pooled buffers (and the print buffer, where the
    /// kernel prints): the cached one, or one made by
    /// [`CompiledPipeline::bind_group`] inside an error scope. `frees` is the pool's count
    /// of freed buffers now.
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        frees: u64,
        compiled: &CompiledPipeline,
        plan: &LaunchPlan,
        bound: Bound<'_>,
    ) -> Result<wgpu::BindGroup> {
        let Bound {
            storage,
            uniform,
            prints,
            guard,
        } = bound;
        if frees != self.frees_seen || self.map.len() >= Self::MAX {
            self.map.clear();
            self.frees_seen = frees;
        }
        let mut buffers: Vec<(wgpu::Buffer, u64)> = storage
            .iter()
            .zip(&plan.bindings)
            .map(|(b, &size)| ((*b).clone(), size))
            .collect();
        if let (Some(u), Some(size)) = (uniform, plan.uniform_size()) {
            buffers.push((u.clone(), size));
        }
        if let Some((_, p)) = prints {
            buffers.push((p.clone(), p.size()));
        }
        if let (Some(_), Some(g)) = (compiled.guard_binding, guard) {
            buffers.push((g.clone(), g.size()));
        }
        let key = BindGroupKey {
            layout: compiled.layout.clone(),
            buffers,
        };
        if let Some(group) = self.map.get(&key) {
            return Ok(group.clone());
        }
        let (group, err) = error_scope(device, || compiled.bind_group(device, plan, bound));
        if let Some(e) = err {
            return Err(ForgeError::Gpu {
                context: "creating a bind group",
                message: format!("kernel `{}`: {}", plan.kernel, error_text(&e)),
            });
        }
        self.created += 1;
        self.map.insert(key, group.clone());
        Ok(group)
    }
}

impl Gpu {
    /// The SPIR-V that `backend` hands to passthrough for the WGSL `source`: naga's own
    /// translation for `spirv`; for `glsl` and `hlsl`, naga's GLSL or HLSL compiled by glslang ([`emit::glslang`]). Every form may use what the device has enabled.
    ///
    /// `layout` holds the binding numbers of the bind group layout the module runs in: the
    /// module's bindings are numbered by their rank there, as wgpu's Vulkan backend numbers
    /// the layout's descriptors ([`emit::Numbering::WgpuVulkan`]).
    fn spirv(
        &self,
        kernel: &'static str,
        source: &str,
        backend: Backend,
        layout: &[u32],
    ) -> Result<Vec<u32>> {
        let numbering = emit::Numbering::WgpuVulkan(layout);
        let compile_error = |message: String| ForgeError::ShaderCompile {
            kernel,
            backend: backend.to_string(),
            message,
        };
        let profile = emit::SpirvProfile::for_device(
            self.identity.features,
            vulkan_zeroes_workgroup_memory(&self.adapter),
        );
        let (language, text) = match backend {
            // Only the passthrough forms come here; said rather than assumed.
            Backend::Wgsl => {
                return Err(compile_error(
                    "WGSL is handed to wgpu as source, not through passthrough".into(),
                ))
            }
            // The builder never opens a wgpu device for CUDA.
            Backend::Cuda => {
                return Err(compile_error(
                    "the `cuda` backend runs through the CUDA driver, not wgpu".into(),
                ))
            }
            Backend::Spirv => {
                return emit::to_spirv_numbered(source, &profile, numbering).map_err(compile_error)
            }
            Backend::Glsl => (
                Language::Glsl,
                emit::to_vulkan_glsl_numbered(source, &profile, numbering)
                    .map_err(compile_error)?,
            ),
            Backend::Hlsl => (
                Language::Hlsl,
                emit::to_vulkan_hlsl_numbered(source, &profile, numbering)
                    .map_err(compile_error)?,
            ),
        };
        let env = if profile.capabilities.contains(Capabilities::SUBGROUP) {
            VulkanEnv::Vulkan1_1
        } else {
            VulkanEnv::Vulkan1_0
        };
        glslang::compile(&text, language, env).map_err(|e| match e {
            GlslangError::Missing => ForgeError::ToolMissing {
                tool: glslang::GLSLANG,
                package: glslang::GLSLANG_PACKAGE,
                needed_for: format!("the `{backend}` backend"),
            },
            GlslangError::Rejected(log) => compile_error(log),
            GlslangError::Io(message) => compile_error(format!("running glslang: {message}")),
        })
    }

    /// The compiled pipeline for `kernel` at `schedule` in the `backend` shader form,
    /// compiling it on first use. `params` says whether the layout ends with the uniform.
    pub fn pipeline(
        &mut self,
        kernel: &dyn Kernel,
        schedule: &Schedule,
        backend: Backend,
        params: bool,
    ) -> Result<Arc<CompiledPipeline>> {
        let key = PipelineKey {
            kernel: kernel.id(),
            schedule: *schedule,
            backend,
            params,
        };
        if let Some(hit) = self.pipelines.get(&key) {
            return Ok(hit);
        }
        self.check_lost()?;
        self.identity.check(kernel, schedule)?;
        let compiled = self.compile_pipeline(kernel, &key)?;
        Ok(self.store(key, compiled))
    }

    /// Caches a pipeline just compiled, counts it, and notes that the driver's cache on
    /// disk (if any) now holds work to save.
    fn store(&mut self, key: PipelineKey, compiled: CompiledPipeline) -> Arc<CompiledPipeline> {
        let compiled = Arc::new(compiled);
        self.pipelines.map.insert(key, Arc::clone(&compiled));
        self.pipelines.compiled += 1;
        if let Some(disk) = &mut self.disk_cache {
            disk.mark_dirty();
        }
        compiled
    }

    /// Compiles, ahead of their first launch, the pipelines of `jobs` (a kernel, its
    /// schedule, and whether its layout ends with the uniform) that are not cached yet, on
    /// a thread each where the platform has threads. Returns how many were compiled. The
    /// first error (a missing feature, a shader the driver rejects) is returned after every
    /// job has finished; the pipelines that compiled are kept.
    pub fn compile_ahead(
        &mut self,
        jobs: &[(&dyn Kernel, Schedule, bool)],
        backend: Backend,
    ) -> Result<usize> {
        self.check_lost()?;
        let mut todo: Vec<(PipelineKey, &dyn Kernel)> = Vec::new();
        for &(kernel, schedule, params) in jobs {
            let key = PipelineKey {
                kernel: kernel.id(),
                schedule,
                backend,
                params,
            };
            if self.pipelines.get(&key).is_none() && !todo.iter().any(|(k, _)| *k == key) {
                self.identity.check(kernel, &schedule)?;
                todo.push((key, kernel));
            }
        }
        if todo.is_empty() {
            return Ok(0);
        }
        let results = self.compile_all(&todo);
        let mut first_error = None;
        let mut compiled = 0;
        for ((key, _), result) in todo.into_iter().zip(results) {
            match result {
                Ok(p) => {
                    self.store(key, p);
                    compiled += 1;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(compiled),
        }
    }

    /// Compiles every job, in parallel on native targets: shader translation and the
    /// driver's compile dominate a cold start, and wgpu's device may be shared by threads.
    #[cfg(not(target_arch = "wasm32"))]
    fn compile_all(&self, todo: &[(PipelineKey, &dyn Kernel)]) -> Vec<Result<CompiledPipeline>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunk = todo.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = todo
                .chunks(chunk)
                .map(|part| {
                    let handle = scope.spawn(move || {
                        part.iter()
                            .map(|(key, kernel)| self.compile_pipeline(*kernel, key))
                            .collect::<Vec<_>>()
                    });
                    (part, handle)
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|(part, h)| match h.join() {
                    Ok(results) => results,
                    // A panic inside wgpu or the driver: every job of the chunk reports it.
                    Err(_) => part
                        .iter()
                        .map(|(key, kernel)| {
                            Err(ForgeError::ShaderCompile {
                                kernel: kernel.name(),
                                backend: key.backend.to_string(),
                                message: "the thread compiling it panicked".into(),
                            })
                        })
                        .collect(),
                })
                .collect()
        })
    }

    /// Compiles every job in turn: the web has no threads to compile on.
    #[cfg(target_arch = "wasm32")]
    fn compile_all(&self, todo: &[(PipelineKey, &dyn Kernel)]) -> Vec<Result<CompiledPipeline>> {
        todo.iter()
            .map(|(key, kernel)| self.compile_pipeline(*kernel, key))
            .collect()
    }

    /// Compiles `kernel` for `key` (its schedule, shader form and layout), traced as a
    /// host event where the device traces.
    fn compile_pipeline(&self, kernel: &dyn Kernel, key: &PipelineKey) -> Result<CompiledPipeline> {
        let start = self.trace_start();
        let out = self.compile_untraced(kernel, key);
        if let (Some(rec), Some(start)) = (self.trace(), start) {
            let mut args = serde_json::Map::new();
            args.insert("schedule".into(), key.schedule.to_string().into());
            args.insert("backend".into(), key.backend.to_string().into());
            args.insert("ok".into(), out.is_ok().into());
            rec.host("compile", kernel.name(), start, args);
        }
        out
    }

    fn compile_untraced(&self, kernel: &dyn Kernel, key: &PipelineKey) -> Result<CompiledPipeline> {
        let PipelineKey {
            schedule,
            backend,
            params,
            ..
        } = key;
        let (schedule, backend, params) = (schedule, *backend, *params);
        let name = kernel.name();
        let compile_error = |message: String| ForgeError::ShaderCompile {
            kernel: name,
            backend: backend.to_string(),
            message,
        };
        let mut source = kernel.wgsl(schedule);

        let mut entries = layout_entries(kernel.layout(), params);
        if let Some(table) = kernel.prints() {
            entries.push(print_entry(table));
        }
        // Where the driver cuts loops short, every loop reports whether it was cut.
        let mut guard_binding = None;
        if self.limits_loops {
            let capabilities = emit::device_capabilities(self.identity.features);
            if let Some((text, binding)) =
                emit::loop_guard::guard_wgsl(&source, capabilities).map_err(compile_error)?
            {
                source = text;
                guard_binding = Some(binding);
                entries.push(buffer_entry(
                    binding,
                    wgpu::BufferBindingType::Storage { read_only: false },
                ));
            }
        }

        // SPIR-V is made before touching the device: a naga or glslang error is clearer than
        // the driver's, and passthrough bypasses wgpu's own validation.
        let spirv = if backend.needs_passthrough() {
            if !self
                .identity
                .features
                .contains(wgpu::Features::PASSTHROUGH_SHADERS)
                || self.identity.info.backend != wgpu::Backend::Vulkan
            {
                return Err(compile_error(format!(
                    "the `{backend}` backend runs SPIR-V through wgpu's passthrough, which needs a Vulkan \
                     adapter with PASSTHROUGH_SHADERS; `{}` ({:?}) does not offer it; use the `wgsl` backend",
                    self.identity.info.name, self.identity.info.backend
                )));
            }
            if backend.workgroup_counts_as_immediates()
                && (!self.identity.features.contains(wgpu::Features::IMMEDIATES)
                    || self.identity.limits.max_immediate_size < emit::HLSL_WORKGROUP_COUNTS_SIZE)
            {
                return Err(compile_error(format!(
                    "the `hlsl` backend hands the workgroup counts as immediates (push constants), which \
                     needs the IMMEDIATES feature and {} bytes of them; `{}` does not offer it; use the `glsl` backend",
                    emit::HLSL_WORKGROUP_COUNTS_SIZE, self.identity.info.name
                )));
            }
            let layout: Vec<u32> = entries.iter().map(|e| e.binding).collect();
            Some(self.spirv(name, &source, backend, &layout)?)
        } else {
            None
        };

        let device = &self.device;
        let ((layout, module), err) = error_scope(device, || {
            let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(name),
                entries: &entries,
            });
            let module = match &spirv {
                None => device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(&source)),
                }),
                Some(words) => {
                    let desc = wgpu::ShaderModuleDescriptorPassthrough {
                        label: Some(name),
                        entry_points: Cow::Owned(vec![wgpu::PassthroughShaderEntryPoint {
                            name: Cow::Borrowed(ENTRY_POINT),
                            workgroup_size: (schedule.workgroup, 1, 1),
                        }]),
                        spirv: Some(Cow::Borrowed(words.as_slice())),
                        ..Default::default()
                    };
                    // SAFETY: the words are naga's output for a module naga validated, with
                    // bounds checks on; the layout below matches its bindings.
                    unsafe { device.create_shader_module_passthrough(desc) }
                }
            };
            (layout, module)
        });
        if let Some(e) = err {
            return Err(self.explain(compile_error(error_text(&e))));
        }

        let (pipeline, err) = error_scope(device, || {
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(name),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: if backend.workgroup_counts_as_immediates() {
                    emit::HLSL_WORKGROUP_COUNTS_SIZE
                } else {
                    0
                },
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(ENTRY_POINT),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: self.disk_cache.as_ref().map(|c| c.cache()),
            })
        });
        if let Some(e) = err {
            return Err(self.explain(compile_error(error_text(&e))));
        }
        self.check_lost()?;
        tracing::debug!(kernel = name, %schedule, %backend, "compiled pipeline");
        Ok(CompiledPipeline {
            pipeline,
            layout,
            workgroup_counts_as_immediates: backend.workgroup_counts_as_immediates(),
            guard_binding,
        })
    }
}
