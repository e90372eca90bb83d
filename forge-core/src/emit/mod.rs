//! Emission to other backends: a kernel's WGSL translated by naga to SPIR-V, MSL, HLSL or
//! GLSL. Layer 2 (offline work: no device).
//!
//! WGSL is the source of truth. This module owns the one translation from it, which both
//! `forge emit` ([`emit`]) and the runtime's SPIR-V execution ([`to_spirv`]) go through:
//! 1. **parse and validate** the WGSL with naga, with the capabilities the consumer has:
//!    the device's features for the runtime ([`SpirvProfile`]), everything the kernel
//!    language can ask for when emitting files ([`EMIT_CAPABILITIES`]);
//! 2. **resolve pipeline overrides** for the compute entry point `main`
//!    (`naga::back::pipeline_constants::process_overrides`). A schedule reaches the WGSL as
//!    the constants `WG`, `ITEMS` and `VEC` ([`Schedule::wgsl_header`]), so the source is
//!    already specialised to it; the step leaves a module with no unresolved `override`
//!    (which every naga writer requires) or fails with the name of the one that has no
//!    value;
//! 3. **write** the target with options that keep WGSL's meaning: out-of-bounds indices
//!    are clamped (`Restrict`, as wgpu does on Vulkan), workgroup memory starts zeroed,
//!    and each binding keeps its WGSL number (group 0, binding `b`: set 0 binding `b` in
//!    SPIR-V and GLSL, buffer slot `b` in MSL, register `b` of space 0 in HLSL).
//!
//! The targets' versions: SPIR-V 1.0 for files (1.3 where the runtime's device has
//! subgroups), MSL 2.1, HLSL shader model 6.0 (6.2 when the kernel uses `f16`), GLSL 4.50
//! core.
//!
//! # What the host of an emitted file provides
//! Beyond the kernel's own buffers (and its `Params` uniform, at the binding after them):
//! - **MSL:** Metal buffers carry no length, so a buffer at the next free slot holds the
//!   byte size (`uint`) of each runtime-sized binding, in binding order
//!   (`_mslBufferSizes`), for `arrayLength` and the bounds checks.
//! - **HLSL:** HLSL has no `num_workgroups`; register `b<next>` holds the dispatch's
//!   workgroup counts x, y, z as three `uint`s (`_NagaConstants`), as wgpu's DX12
//!   backend passes them. Every generated kernel reads them to fold its grid.
//! - **SPIR-V files** zero workgroup memory by code (one invocation stores zeros, then a
//!   barrier), which any Vulkan runs. The runtime asks for the driver's own zeroing where
//!   the device has it (Vulkan 1.3): LLVM-based drivers such as lavapipe take minutes to
//!   compile the stores for a large workgroup array.

pub mod glslang;
pub mod loop_guard;

use crate::error::{ForgeError, Result};
use crate::kernel::ENTRY_POINT;
use crate::kernel::{Feature, Kernel};
use crate::schedule::Schedule;
pub use crate::target::Target;
use naga::back::{glsl, hlsl, msl, spv};
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
use naga::valid::{Capabilities, ModuleInfo, ValidationFlags, Validator};
use naga::{AddressSpace, Module, ResourceBinding, ShaderStage};
use std::path::Path;

#[cfg_attr(not(feature = "cuda"), path = "nvrtc_absent.rs")]
pub mod nvrtc;

/// A translated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Emitted {
    /// Source text: WGSL, MSL, HLSL or GLSL.
    Text(String),
    /// SPIR-V words.
    Spirv(Vec<u32>),
}

impl Emitted {
    /// The bytes of a file holding this: the text as UTF-8, or the SPIR-V words
    /// little-endian (the byte order `spirv-val`, `spirv-dis` and drivers read by default).
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Emitted::Text(text) => text.as_bytes().to_vec(),
            Emitted::Spirv(words) => words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }

    /// The text, or `None` for SPIR-V.
    pub fn text(&self) -> Option<&str> {
        match self {
            Emitted::Text(text) => Some(text),
            Emitted::Spirv(_) => None,
        }
    }

    /// Writes [`Emitted::to_bytes`] to `path`, atomically.
    pub fn write_to(&self, path: &Path) -> Result<()> {
        crate::files::write_atomically(path, &self.to_bytes())
    }
}

/// The capabilities a file emitted offline may use: what the kernel language can ask for
/// (`f16`, declared with `enable f16`). A device without one of them rejects the kernel
/// when it runs, with the device's own message.
/// `quantizeToF16` and `pack2x16float`, which are core WGSL, need naga's
/// `SHADER_FLOAT16_IN_FLOAT32`.
pub const EMIT_CAPABILITIES: Capabilities =
    Capabilities::SHADER_FLOAT16.union(Capabilities::SHADER_FLOAT16_IN_FLOAT32);

/// What a SPIR-V consumer supports, which decides how naga writes the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpirvProfile {
    /// What the module may use (validation fails otherwise). Subgroups raise the SPIR-V
    /// version to 1.3.
    pub capabilities: Capabilities,
    /// Whether the consumer zeroes workgroup memory itself (Vulkan 1.3, or
    /// `VK_KHR_zero_initialize_workgroup_memory` enabled): workgroup variables then carry a
    /// null initializer instead of zeroing code.
    pub native_workgroup_zeroing: bool,
}

impl SpirvProfile {
    /// What `forge emit` writes: SPIR-V 1.0 for any Vulkan device.
    pub const PORTABLE: SpirvProfile = SpirvProfile {
        capabilities: EMIT_CAPABILITIES,
        native_workgroup_zeroing: false,
    };

    /// The profile of an open device: its enabled features, and whether it zeroes
    /// workgroup memory natively.
    pub fn for_device(features: wgpu::Features, native_workgroup_zeroing: bool) -> SpirvProfile {
        SpirvProfile {
            capabilities: device_capabilities(features),
            native_workgroup_zeroing,
        }
    }
}

/// The device features that turn on naga capabilities.
const CAPABILITY_FEATURES: [(Capabilities, wgpu::Features); 6] = [
    (Capabilities::SHADER_FLOAT16, wgpu::Features::SHADER_F16),
    (Capabilities::SUBGROUP, wgpu::Features::SUBGROUP),
    (
        Capabilities::SUBGROUP_BARRIER,
        wgpu::Features::SUBGROUP_BARRIER,
    ),
    (Capabilities::FLOAT64, wgpu::Features::SHADER_F64),
    (Capabilities::SHADER_INT64, wgpu::Features::SHADER_INT64),
    (
        Capabilities::COOPERATIVE_MATRIX,
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
    ),
];

/// naga's capabilities for what a device has enabled.
pub fn device_capabilities(features: wgpu::Features) -> Capabilities {
    // Core WGSL (`quantizeToF16`, `pack2x16float`): wgpu checks the adapter's own
    // downlevel flag for it.
    let mut caps = Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    for (capability, feature) in CAPABILITY_FEATURES {
        caps.set(capability, features.contains(feature));
    }
    caps
}

/// Emits `kernel` at `schedule` for `target`.
///
/// The schedule must be the kernel's declared one or a point of its tuning space: those are
/// what `forge certify` and the tuner check, and a kernel may rely on them (a power-of-two
/// workgroup, a tile that the workgroup covers). Anything else is
/// [`ForgeError::BadSchedule`]; a translation failure is [`ForgeError::ShaderCompile`]
/// with naga's message.
///
/// ```
/// use forge_core::emit::{emit, Emitted, Target};
/// # use forge_core::*;
/// # struct K;
/// # impl Kernel for K {
/// #     fn name(&self) -> &'static str { "fill" }
/// #     fn wgsl(&self, s: &Schedule) -> String {
/// #         format!("{}@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
/// #                  @compute @workgroup_size(WG) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n\
/// #                  if g.x < arrayLength(&y) {{ y[g.x] = 1.0; }} }}", s.wgsl_header())
/// #     }
/// #     fn layout(&self) -> &'static [Binding] { &[] }
/// #     fn scalars(&self) -> &'static [ScalarParam] { &[] }
/// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
/// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64, 128], &[1], &[1]) }
/// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
/// #     fn binding_lens_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![]) }
/// #     fn grid_threads_at(&self, _: &Schedule, _: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(1u64)) }
/// #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
/// # }
/// let msl = emit(&K, &Schedule::with_workgroup(128), Target::Msl).unwrap();
/// assert!(msl.text().unwrap().contains("kernel void"));
/// let Emitted::Spirv(words) = emit(&K, &K.default_schedule(), Target::Spirv).unwrap() else {
///     unreachable!()
/// };
/// assert_eq!(words[0], 0x0723_0203, "the SPIR-V magic number");
/// assert!(emit(&K, &Schedule::with_workgroup(32), Target::Hlsl).is_err(), "not in the tuning space");
/// ```
pub fn emit(kernel: &dyn Kernel, schedule: &Schedule, target: Target) -> Result<Emitted> {
    emit_with(kernel, schedule, target, false)
}

/// [`emit`], with every loop guarded ([`loop_guard`]) as the runtime compiles the kernel on
/// an adapter whose driver cuts long loops short (llvmpipe, under lavapipe): what
/// `forge emit --guard-loops` writes. A kernel without loops comes out as [`emit`] writes
/// it. CUDA and PTX are written from the kernel's model, not from WGSL, and have no guard
/// ([`ForgeError::InvalidArgument`]).
pub fn emit_guarded(kernel: &dyn Kernel, schedule: &Schedule, target: Target) -> Result<Emitted> {
    emit_with(kernel, schedule, target, true)
}

fn emit_with(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    target: Target,
    guard: bool,
) -> Result<Emitted> {
    let space = kernel.tune_space();
    if *schedule != kernel.default_schedule() && !space.contains(schedule) {
        return Err(ForgeError::BadSchedule {
            kernel: kernel.name(),
            schedule: schedule.to_string(),
            reason: format!(
                "it is neither the declared schedule ({}) nor in the tuning space ({space}), which \
                 are what certification covers",
                kernel.default_schedule(),
            ),
        });
    }
    match target {
        Target::Cuda | Target::Ptx if guard => {
            return Err(ForgeError::InvalidArgument {
                kernel: kernel.name(),
                message: format!(
                    "the loop guard is for shader forms translated from WGSL, not `{target}`: \
                     CUDA has no loop limit to guard against"
                ),
            })
        }
        Target::Cuda => return kernel.cuda(schedule).map(Emitted::Text),
        Target::Ptx => return emit_ptx(kernel, schedule, DEFAULT_PTX_ARCH).map(Emitted::Text),
        _ => {}
    }
    let source = kernel.wgsl(schedule);
    // What the kernel declares it uses (subgroups, f64) on top of what any file may use:
    // a kernel with subgroups is emitted as SPIR-V 1.3, one without as 1.0.
    let features = kernel
        .features()
        .iter()
        .fold(wgpu::Features::empty(), |all, f| all | f.wgpu());
    let capabilities = EMIT_CAPABILITIES | device_capabilities(features);
    let compile_error = |message| ForgeError::ShaderCompile {
        kernel: kernel.name(),
        backend: target.to_string(),
        message,
    };
    let source = match guard {
        true => loop_guard::guard_wgsl(&source, capabilities)
            .map_err(compile_error)?
            .map_or(source, |(guarded, _)| guarded),
        false => source,
    };
    translate_with(&source, target, capabilities).map_err(compile_error)
}

/// `kernel`'s WGSL at `schedule` as a browser's WebGPU (Tint) takes it: [`emit`]'s WGSL,
/// validated by naga, with the `enable subgroups;` directive in front when the kernel uses
/// subgroups. WGSL requires that directive and Tint enforces it; naga 30 does not implement
/// it (it rejects the line), so the WGSL the native runtime runs goes without.
pub fn emit_for_browser(kernel: &dyn Kernel, schedule: &Schedule) -> Result<String> {
    let wgsl = emit(kernel, schedule, Target::Wgsl)?;
    let wgsl = wgsl.text().unwrap_or_default();
    Ok(for_browser(wgsl, kernel.features()))
}

/// [`emit_for_browser`] for WGSL of any origin: `source` with the `enable` directives Tint
/// requires for `features` and naga 30 does not implement.
///
/// ```
/// use forge_core::emit::for_browser;
/// use forge_core::Feature;
/// let src = "enable f16;\nfn f() {}\n";
/// assert_eq!(for_browser(src, &[Feature::Subgroups]), "enable subgroups;\nenable f16;\nfn f() {}\n");
/// assert_eq!(for_browser(src, &[Feature::F16]), src);
/// ```
pub fn for_browser(source: &str, features: &[Feature]) -> String {
    let declared = source
        .lines()
        .any(|l| l.trim_start().starts_with("enable") && l.contains("subgroups"));
    if features.contains(&Feature::Subgroups) && !declared {
        format!("enable subgroups;\n{source}")
    } else {
        source.to_string()
    }
}

/// The PTX architecture [`emit`] targets: Hopper's (`compute_90`).
pub const DEFAULT_PTX_ARCH: &str = "compute_90";

/// `kernel`'s CUDA C++ at `schedule` compiled by NVRTC to PTX for the virtual architecture
/// `arch` (`compute_90`, ...). Without the `cuda` feature, or without libnvrtc, an error
/// that says how to get it.
pub fn emit_ptx(kernel: &dyn Kernel, schedule: &Schedule, arch: &str) -> Result<String> {
    let source = kernel.cuda(schedule)?;
    nvrtc::compile_ptx(kernel.name(), &source, arch)
}

/// Translates WGSL `source` to `target`, as a file for any consumer of that language
/// ([`EMIT_CAPABILITIES`], [`SpirvProfile::PORTABLE`]). The error is naga's message, with
/// the WGSL lines it points at where it has them.
pub fn translate(source: &str, target: Target) -> std::result::Result<Emitted, String> {
    translate_with(source, target, EMIT_CAPABILITIES)
}

/// [`translate`] for a module that may use `capabilities` (subgroups raise SPIR-V to 1.3).
pub fn translate_with(
    source: &str,
    target: Target,
    capabilities: Capabilities,
) -> std::result::Result<Emitted, String> {
    let (module, info) = front(source, capabilities)?;
    let profile = SpirvProfile {
        capabilities,
        ..SpirvProfile::PORTABLE
    };
    match target {
        // The generated WGSL is what the runtime runs, comments and all; naga's WGSL
        // writer would only reformat it.
        Target::Wgsl => Ok(Emitted::Text(source.to_string())),
        Target::Spirv => write_spirv(&module, &info, &profile).map(Emitted::Spirv),
        Target::Msl => write_msl(&module, &info).map(Emitted::Text),
        Target::Hlsl => write_hlsl(&module, &info).map(Emitted::Text),
        Target::Glsl => write_glsl(&module, &info, false).map(Emitted::Text),
        Target::Cuda | Target::Ptx => Err(format!(
            "{target} is written from the kernel's model, not translated from WGSL: use `emit`"
        )),
    }
}

/// Translates WGSL `source` to SPIR-V words for a consumer with `profile`: what the runtime
/// hands to wgpu's passthrough.
///
/// ```
/// use forge_core::emit::{to_spirv, SpirvProfile};
/// let ok = "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
///           @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
///           if g.x < arrayLength(&y) { y[g.x] = 1.0; } }";
/// assert_eq!(to_spirv(ok, &SpirvProfile::PORTABLE).unwrap()[0], 0x0723_0203);
/// assert!(to_spirv("fn main() { let x: u32 = 1.5; }", &SpirvProfile::PORTABLE).is_err());
/// ```
pub fn to_spirv(source: &str, profile: &SpirvProfile) -> std::result::Result<Vec<u32>, String> {
    to_spirv_numbered(source, profile, Numbering::AsWritten)
}

/// [`to_spirv`] with the bindings numbered by `numbering`.
pub fn to_spirv_numbered(
    source: &str,
    profile: &SpirvProfile,
    numbering: Numbering<'_>,
) -> std::result::Result<Vec<u32>, String> {
    let (module, info) = front_numbered(source, profile.capabilities, numbering)?;
    write_spirv(&module, &info, profile)
}

/// How the bindings of a translated module are numbered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbering<'a> {
    /// As the WGSL writes them (group 0, binding `b`): what the host of a file binds.
    AsWritten,
    /// By rank among the binding numbers of the wgpu bind group layout the module runs
    /// in. wgpu's Vulkan backend numbers a layout's descriptors 0, 1, 2... in binding order,
    /// and binds passthrough SPIR-V by the module's own numbers: a layout with a gap (a
    /// kernel without scalars has no `Params` uniform, yet its print buffer keeps the
    /// number after it) would otherwise leave every binding past the gap unbound, and
    /// writes to it lost without an error. A module binding that the layout lacks is an
    /// error.
    WgpuVulkan(&'a [u32]),
}

/// [`front`], then the module's bindings renumbered as `numbering` says.
fn front_numbered(
    source: &str,
    capabilities: Capabilities,
    numbering: Numbering<'_>,
) -> std::result::Result<(Module, ModuleInfo), String> {
    let (mut module, info) = front(source, capabilities)?;
    if let Numbering::WgpuVulkan(layout) = numbering {
        let mut ranked = layout.to_vec();
        ranked.sort_unstable();
        ranked.dedup();
        for (_, var) in module.global_variables.iter_mut() {
            if let Some(binding) = &mut var.binding {
                let rank = ranked
                    .binary_search(&binding.binding)
                    .map_err(|_| {
                        format!(
                            "the module binds group {} binding {}, which the pipeline layout (bindings {ranked:?}) lacks",
                            binding.group, binding.binding
                        )
                    })?;
                // Kernels bind everything in group 0: `rank` fits, as `layout` is that group's.
                binding.binding = rank as u32;
            }
        }
    }
    Ok((module, info))
}

/// Parses and validates `source`, then resolves its pipeline overrides for the compute
/// entry point.
fn front(
    source: &str,
    capabilities: Capabilities,
) -> std::result::Result<(Module, ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = Validator::new(ValidationFlags::all(), capabilities)
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    if !module
        .entry_points
        .iter()
        .any(|ep| ep.stage == ShaderStage::Compute && ep.name == ENTRY_POINT)
    {
        return Err(format!(
            "the WGSL has no compute entry point `{ENTRY_POINT}`"
        ));
    }
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((ShaderStage::Compute, ENTRY_POINT)),
        &naga::back::PipelineConstants::default(),
    )
    .map_err(|e| format!("resolving pipeline overrides: {e}"))?;
    Ok((module.into_owned(), info.into_owned()))
}

/// WGSL's out-of-bounds rule, kept in every target: indices are clamped into range.
const BOUNDS_CHECKS: BoundsCheckPolicies = BoundsCheckPolicies {
    index: BoundsCheckPolicy::Restrict,
    buffer: BoundsCheckPolicy::Restrict,
    image_load: BoundsCheckPolicy::Restrict,
    binding_array: BoundsCheckPolicy::Unchecked,
};

/// One resource of the module: its WGSL binding and whether the shader may write it.
struct Resource {
    binding: ResourceBinding,
    writable: bool,
}

/// The module's bound globals (storage buffers and the `Params` uniform), in declaration
/// order. Kernels bind everything in group 0.
fn resources(module: &Module) -> Vec<Resource> {
    module
        .global_variables
        .iter()
        .filter_map(|(_, var)| {
            let binding = var.binding?;
            let writable = match var.space {
                AddressSpace::Storage { access } => access.contains(naga::StorageAccess::STORE),
                _ => false,
            };
            Some(Resource { binding, writable })
        })
        .collect()
}

/// Whether an entry point reads the `num_workgroups` built-in, as an argument or a member
/// of an argument's struct.
fn uses_num_workgroups(module: &Module) -> bool {
    let is_it = |b: &Option<naga::Binding>| {
        matches!(
            b,
            Some(naga::Binding::BuiltIn(naga::BuiltIn::NumWorkGroups))
        )
    };
    module
        .entry_points
        .iter()
        .flat_map(|ep| &ep.function.arguments)
        .any(|arg| {
            is_it(&arg.binding)
                || match &module.types[arg.ty].inner {
                    naga::TypeInner::Struct { members, .. } => {
                        members.iter().any(|m| is_it(&m.binding))
                    }
                    _ => false,
                }
        })
}

fn write_spirv(
    module: &Module,
    info: &ModuleInfo,
    profile: &SpirvProfile,
) -> std::result::Result<Vec<u32>, String> {
    let options = spv::Options {
        // 1.3 carries the subgroup operations; every Vulkan 1.1 driver takes it. Without
        // them, 1.0 runs on any Vulkan.
        lang_version: if profile.capabilities.contains(Capabilities::SUBGROUP) {
            (1, 3)
        } else {
            (1, 0)
        },
        // Names for every id, so a disassembled module reads like the kernel.
        flags: spv::WriterFlags::DEBUG,
        // Bindings keep their WGSL numbers: set 0, binding b.
        fake_missing_bindings: true,
        bounds_check_policies: BOUNDS_CHECKS,
        zero_initialize_workgroup_memory: if profile.native_workgroup_zeroing {
            spv::ZeroInitializeWorkgroupMemoryMode::Native
        } else {
            spv::ZeroInitializeWorkgroupMemoryMode::Polyfill
        },
        ..spv::Options::default()
    };
    let pipeline = spv::PipelineOptions {
        shader_stage: ShaderStage::Compute,
        entry_point: ENTRY_POINT.to_string(),
    };
    spv::write_vec(module, info, &options, Some(&pipeline)).map_err(|e| format!("SPIR-V: {e}"))
}

fn write_msl(module: &Module, info: &ModuleInfo) -> std::result::Result<String, String> {
    let mut resources_map = msl::BindingMap::default();
    let mut next_slot = 0u32;
    for r in resources(module) {
        let slot = msl::Slot::try_from(r.binding.binding)
            .map_err(|_| format!("MSL: binding {} has no buffer slot", r.binding.binding))?;
        resources_map.insert(
            r.binding,
            msl::BindTarget {
                buffer: Some(slot),
                mutable: r.writable,
                ..Default::default()
            },
        );
        next_slot = next_slot.max(r.binding.binding + 1);
    }
    // Metal buffers carry no length: the lengths of runtime-sized arrays (for `arrayLength`
    // and the bounds checks) arrive in one more buffer, after the kernel's own.
    let sizes_buffer = Some(
        msl::Slot::try_from(next_slot)
            .map_err(|_| "MSL: no buffer slot left for the sizes buffer".to_string())?,
    );
    let options = msl::Options {
        lang_version: (2, 1),
        per_entry_point_map: [(
            ENTRY_POINT.to_string(),
            msl::EntryPointResources {
                resources: resources_map,
                sizes_buffer,
                ..Default::default()
            },
        )]
        .into_iter()
        .collect(),
        fake_missing_bindings: false,
        bounds_check_policies: BOUNDS_CHECKS,
        zero_initialize_workgroup_memory: true,
        ..msl::Options::default()
    };
    let pipeline = msl::PipelineOptions {
        entry_point: Some((ShaderStage::Compute, ENTRY_POINT.to_string())),
        ..msl::PipelineOptions::default()
    };
    msl::write_string(module, info, &options, &pipeline)
        .map(|(text, _)| text)
        .map_err(|e| format!("MSL: {e}"))
}

fn write_hlsl(module: &Module, info: &ModuleInfo) -> std::result::Result<String, String> {
    let mut binding_map = hlsl::BindingMap::default();
    let mut next_register = 0u32;
    for r in resources(module) {
        let target = hlsl::BindTarget {
            space: r.binding.group as u8,
            register: r.binding.binding,
            ..Default::default()
        };
        binding_map.insert(r.binding, target);
        next_register = next_register.max(r.binding.binding + 1);
    }
    // HLSL has no built-in for `num_workgroups`; without a constant buffer to read it
    // from, naga would write `SV_GroupID` in its place (the workgroup's own id), and every
    // generated kernel folds its grid with it. The host puts the dispatch's workgroup
    // counts (x, y, z as u32) in register b<next>, as wgpu's DX12 backend does.
    let special_constants_binding = uses_num_workgroups(module).then_some(hlsl::BindTarget {
        space: 0,
        register: next_register,
        ..Default::default()
    });
    let uses_f16 = module.types.iter().any(|(_, ty)| {
        ty.inner
            .scalar()
            .is_some_and(|s| s.kind == naga::ScalarKind::Float && s.width == 2)
    });
    let options = hlsl::Options {
        // 6.0 brings the wave intrinsics; 16-bit types need 6.2.
        shader_model: if uses_f16 {
            hlsl::ShaderModel::V6_2
        } else {
            hlsl::ShaderModel::V6_0
        },
        binding_map,
        fake_missing_bindings: false,
        special_constants_binding,
        zero_initialize_workgroup_memory: true,
        restrict_indexing: true,
        ..hlsl::Options::default()
    };
    let pipeline = hlsl::PipelineOptions {
        entry_point: Some((ShaderStage::Compute, ENTRY_POINT.to_string())),
    };
    let mut text = String::new();
    hlsl::Writer::new(&mut text, &options, &pipeline)
        .write(module, info, None)
        .map_err(|e| format!("HLSL: {e}"))?;
    Ok(text)
}

/// The size in bytes of the workgroup counts (x, y, z as u32) that the `hlsl` backend
/// hands a dispatch as immediates: HLSL has no `num_workgroups` built-in.
pub const HLSL_WORKGROUP_COUNTS_SIZE: u32 = 12;

/// Translates WGSL `source` to HLSL for glslang's HLSL front end to compile to SPIR-V for
/// a Vulkan device with `profile`: what the runtime's `hlsl` backend runs.
///
/// It is [`translate`]'s HLSL (registers `tN`/`uN`/`bN` numbered as the WGSL bindings,
/// workgroup memory zeroed by naga, since `groupshared` starts undefined), with one
/// change: naga reads `num_workgroups` from a constant buffer `_NagaConstants`, which
/// here becomes a `[[vk::push_constant]]` block, so the runtime sets the dispatch's
/// workgroup counts as immediates ([`HLSL_WORKGROUP_COUNTS_SIZE`] bytes) instead of
/// binding one more buffer per dispatch.
///
/// ```
/// use forge_core::emit::{to_vulkan_hlsl, SpirvProfile};
/// let src = "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
///            @compute @workgroup_size(64) fn main(@builtin(num_workgroups) n: vec3<u32>) {\n\
///                y[0] = n.y;\n\
///            }";
/// let hlsl = to_vulkan_hlsl(src, &SpirvProfile::PORTABLE).unwrap();
/// assert!(hlsl.contains("[[vk::push_constant]] ConstantBuffer<NagaConstants> _NagaConstants;"));
/// assert!(!hlsl.contains("register(b1)"));
/// ```
pub fn to_vulkan_hlsl(source: &str, profile: &SpirvProfile) -> std::result::Result<String, String> {
    to_vulkan_hlsl_numbered(source, profile, Numbering::AsWritten)
}

/// [`to_vulkan_hlsl`] with the bindings (registers) numbered by `numbering`.
pub fn to_vulkan_hlsl_numbered(
    source: &str,
    profile: &SpirvProfile,
    numbering: Numbering<'_>,
) -> std::result::Result<String, String> {
    let (module, info) = front_numbered(source, profile.capabilities, numbering)?;
    let text = write_hlsl(&module, &info)?;
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.lines() {
        if line.starts_with("ConstantBuffer<NagaConstants> _NagaConstants") {
            out.push_str("[[vk::push_constant]] ConstantBuffer<NagaConstants> _NagaConstants;");
        } else if let Some(zeroing) = zero_array_by_loop(line) {
            out.push_str(&zeroing);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Ok(out)
}

/// naga zeroes an array with one cast, `name = (T[N])0;` for a workgroup array and
/// `return (T[N])0;` in the function that makes a local array's zero value, which glslang's
/// HLSL front end rejects ("array constructor needs one argument per array element"); the
/// same zeroing as a loop over the elements, `name[i] = (T)0`, it accepts. `None` for
/// any other line (arrays of arrays keep naga's form, and glslang's error).
fn zero_array_by_loop(line: &str) -> Option<String> {
    let indent = &line[..line.len() - line.trim_start().len()];
    let trimmed = line.trim();
    let (name, rest) = match trimmed.strip_prefix("return (") {
        Some(rest) => ("", rest),
        None => trimmed.split_once(" = (")?,
    };
    let (element, rest) = rest.split_once('[')?;
    let (len, rest) = rest.split_once(']')?;
    let simple =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if rest != ")0;" || !simple(element) || len.parse::<u32>().is_err() {
        return None;
    }
    let zero = |name: &str| {
        format!("for (uint fg_z = 0u; fg_z < {len}u; fg_z++) {{ {name}[fg_z] = ({element})0; }}")
    };
    if name.is_empty() {
        // The zero value of a local array: a local zeroed by the loop, returned.
        return Some(format!(
            "{indent}{element} fg_zero[{len}]; {} return fg_zero;",
            zero("fg_zero")
        ));
    }
    simple(name).then(|| format!("{indent}{}", zero(name)))
}

/// Translates WGSL `source` to GLSL for glslang to compile to SPIR-V for a Vulkan device
/// with `profile`: what the runtime's `glsl` backend runs.
///
/// Where the device zeroes workgroup memory itself (`profile.native_workgroup_zeroing`),
/// workgroup variables are declared with a null initializer (`shared T x[N] = {};`,
/// `GL_EXT_null_initializer`), which glslang turns into the same `OpVariable` initializer
/// naga's SPIR-V uses. Without it, naga's GLSL zeroes each variable with an array
/// constructor of N literals run by invocation 0, which llvmpipe took minutes to compile
/// for the 2,048-element arrays of the top-k kernels.
///
/// ```
/// use forge_core::emit::{to_vulkan_glsl, SpirvProfile};
/// let src = "var<workgroup> t: array<u32, 256>;\n\
///            @group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
///            @compute @workgroup_size(64) fn main(@builtin(local_invocation_index) i: u32) {\n\
///                t[i] += 1u; workgroupBarrier(); y[i] = t[i];\n\
///            }";
/// let native = SpirvProfile { native_workgroup_zeroing: true, ..SpirvProfile::PORTABLE };
/// let glsl = to_vulkan_glsl(src, &native).unwrap();
/// assert!(glsl.contains("#extension GL_EXT_null_initializer : require"));
/// assert!(glsl.contains("[256] = {};"));
/// assert!(!glsl.contains("uint[256](0u"));
/// // Without native zeroing, naga's zeroing code stays.
/// assert!(to_vulkan_glsl(src, &SpirvProfile::PORTABLE).unwrap().contains("uint[256](0u"));
/// ```
pub fn to_vulkan_glsl(source: &str, profile: &SpirvProfile) -> std::result::Result<String, String> {
    to_vulkan_glsl_numbered(source, profile, Numbering::AsWritten)
}

/// [`to_vulkan_glsl`] with the bindings numbered by `numbering`.
pub fn to_vulkan_glsl_numbered(
    source: &str,
    profile: &SpirvProfile,
    numbering: Numbering<'_>,
) -> std::result::Result<String, String> {
    let (module, info) = front_numbered(source, profile.capabilities, numbering)?;
    write_glsl(&module, &info, profile.native_workgroup_zeroing)
}

/// Gives every `shared` declaration of naga's GLSL a null initializer, and enables the
/// extension that allows it. naga writes one declaration a line, `shared T name[N];`.
fn null_initialize_shared(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut any = false;
    for line in text.lines() {
        let t = line.trim_end();
        if t.starts_with("shared ") && t.ends_with(';') && !t.contains('=') {
            out.push_str(&t[..t.len() - 1]);
            out.push_str(" = {};");
            any = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if !any {
        return text.to_string();
    }
    // The extension goes right after `#version`, which must stay the first line.
    match out.split_once('\n') {
        Some((version, rest)) => {
            format!("{version}\n#extension GL_EXT_null_initializer : require\n{rest}")
        }
        None => out,
    }
}

fn write_glsl(
    module: &Module,
    info: &ModuleInfo,
    native_workgroup_zeroing: bool,
) -> std::result::Result<String, String> {
    let mut binding_map = glsl::BindingMap::default();
    for r in resources(module) {
        let slot = u8::try_from(r.binding.binding)
            .map_err(|_| format!("GLSL: binding {} is out of range", r.binding.binding))?;
        binding_map.insert(r.binding, slot);
    }
    let options = glsl::Options {
        version: glsl::Version::Desktop(450),
        // Compute only: nothing to adjust.
        writer_flags: glsl::WriterFlags::empty(),
        binding_map,
        zero_initialize_workgroup_memory: !native_workgroup_zeroing,
    };
    let pipeline = glsl::PipelineOptions {
        shader_stage: ShaderStage::Compute,
        entry_point: ENTRY_POINT.to_string(),
        multiview: None,
    };
    let mut text = String::new();
    glsl::Writer::new(&mut text, module, info, &options, &pipeline, BOUNDS_CHECKS)
        .and_then(|mut w| w.write())
        .map_err(|e| format!("GLSL: {e}"))?;
    Ok(if native_workgroup_zeroing {
        null_initialize_shared(&text)
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Backend;

    const NUM_WORKGROUPS: &str = "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
        @compute @workgroup_size(64) fn main(@builtin(num_workgroups) n: vec3<u32>) { y[0] = n.x; }";

    /// Bindings 0, 1 and 3 (a kernel without scalars that prints) in a layout of the same
    /// numbers: ranks 0, 1 and 2, in every passthrough form; a binding the layout lacks is
    /// an error that names it.
    #[test]
    fn wgpu_vulkan_numbering_ranks_the_layout() {
        let src = "@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
            @group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
            @group(0) @binding(3) var<storage, read_write> p: array<u32>;\n\
            @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
                y[g.x] = x[g.x]; p[g.x] = 1u;\n\
            }";
        let ranked = Numbering::WgpuVulkan(&[3, 0, 1]);
        let (module, _) = front_numbered(src, EMIT_CAPABILITIES, ranked).unwrap();
        let mut got: Vec<(String, u32)> = module
            .global_variables
            .iter()
            .filter_map(|(_, v)| Some((v.name.clone()?, v.binding?.binding)))
            .collect();
        got.sort();
        let want = [("p", 2), ("x", 0), ("y", 1)].map(|(n, b)| (n.to_string(), b));
        assert_eq!(got, want);
        let glsl = to_vulkan_glsl_numbered(src, &SpirvProfile::PORTABLE, ranked).unwrap();
        assert!(glsl.contains("binding = 2"), "{glsl}");
        assert!(!glsl.contains("binding = 3"), "{glsl}");
        let hlsl = to_vulkan_hlsl_numbered(src, &SpirvProfile::PORTABLE, ranked).unwrap();
        assert!(hlsl.contains("register(u2)"), "{hlsl}");
        // As written, for files: the WGSL numbers.
        let glsl = to_vulkan_glsl(src, &SpirvProfile::PORTABLE).unwrap();
        assert!(glsl.contains("binding = 3"), "{glsl}");
        let err = to_spirv_numbered(src, &SpirvProfile::PORTABLE, Numbering::WgpuVulkan(&[0, 1]))
            .unwrap_err();
        assert!(err.contains("binding 3"), "{err}");
    }

    #[test]
    fn overrides_are_resolved_or_named() {
        let with_default = "override SIZE: u32 = 7u;\n\
            @group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
            @compute @workgroup_size(64) fn main() { y[0] = SIZE; }";
        for target in Target::FROM_WGSL {
            let out = translate(with_default, target).unwrap_or_else(|e| panic!("{target}: {e}"));
            assert!(!out.to_bytes().is_empty(), "{target}");
        }
        let msl = translate(with_default, Target::Msl).unwrap();
        assert!(
            msl.text().unwrap().contains("7u"),
            "the override's value reaches the output"
        );
        let without = with_default.replace(" = 7u", "");
        let err = translate(&without, Target::Hlsl).expect_err("no value");
        assert!(err.contains("SIZE"), "{err}");
    }

    #[test]
    fn hlsl_reads_num_workgroups_from_a_constant_buffer() {
        // HLSL has no such built-in: naga would otherwise substitute the workgroup's id.
        let hlsl = translate(NUM_WORKGROUPS, Target::Hlsl).unwrap();
        let text = hlsl.text().unwrap();
        assert!(text.contains("register(b1)"), "{text}");
        assert!(text.contains("_NagaConstants.first_vertex"), "{text}");
        let plain = "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
            @compute @workgroup_size(64) fn main(@builtin(workgroup_id) w: vec3<u32>) { y[0] = w.x; }";
        let hlsl = translate(plain, Target::Hlsl).unwrap();
        assert!(!hlsl.text().unwrap().contains("NagaConstants"));
    }

    #[test]
    fn errors_are_naga_messages() {
        let err =
            to_spirv("fn main() { let x: u32 = 1.5; }", &SpirvProfile::PORTABLE).expect_err("bad");
        assert!(err.contains("1.5"), "{err}");
        let no_entry = "@compute @workgroup_size(1) fn other() {}";
        let err = translate(no_entry, Target::Glsl).expect_err("no main");
        assert!(err.contains("`main`"), "{err}");
        let f16 = "enable f16;\n@group(0) @binding(0) var<storage, read_write> y: array<f16>;\n\
            @compute @workgroup_size(1) fn main() { y[0] = 1.0h; }";
        assert!(
            to_spirv(
                f16,
                &SpirvProfile::for_device(wgpu::Features::empty(), false)
            )
            .is_err(),
            "a device without f16"
        );
        let hlsl = translate(f16, Target::Hlsl).unwrap();
        assert!(hlsl.text().unwrap().contains("1.0h"), "{hlsl:?}");
    }

    #[test]
    fn spirv_bytes_are_little_endian_words() {
        let words = to_spirv(NUM_WORKGROUPS, &SpirvProfile::PORTABLE).unwrap();
        let bytes = Emitted::Spirv(words.clone()).to_bytes();
        assert_eq!(bytes.len(), words.len() * 4);
        assert_eq!(&bytes[..4], &[0x03, 0x02, 0x23, 0x07]);
    }

    #[test]
    fn target_names_round_trip() {
        for t in Target::ALL {
            assert_eq!(Target::parse(&t.to_string().to_uppercase()).unwrap(), t);
        }
        match Target::parse("metal") {
            Err(ForgeError::UnknownBackend { name, valid }) => {
                assert_eq!(name, "metal");
                assert_eq!(valid, Target::VALID);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Target::from(Backend::Spirv), Target::Spirv);
    }

    /// naga's one-cast zeroing of an array, in a workgroup array's assignment and in a local
    /// array's zero-value function, becomes a loop glslang's HLSL front end accepts; any
    /// other line is left alone.
    #[test]
    fn hlsl_array_zeroing_becomes_a_loop() {
        assert_eq!(
            zero_array_by_loop("    t = (float[256])0;").unwrap(),
            "    for (uint fg_z = 0u; fg_z < 256u; fg_z++) { t[fg_z] = (float)0; }"
        );
        assert_eq!(
            zero_array_by_loop("    return (uint[128])0;").unwrap(),
            "    uint fg_zero[128]; for (uint fg_z = 0u; fg_z < 128u; fg_z++) { fg_zero[fg_z] = (uint)0; } return fg_zero;"
        );
        for line in [
            "    return (float2[4][4])0;",
            "    x = y;",
            "    return 0;",
            "    t = (float[n])0;",
        ] {
            assert_eq!(zero_array_by_loop(line), None, "{line}");
        }
    }
}
