//! Adapters: finding one, ranking them, and what the runtime asks of the device it opens
//! on one. Part of the device layer (layer 4).

use crate::error::{ForgeError, Result};
use crate::target::Backend;

fn make_instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    // Not the debug-build default: the Vulkan validation layers would slow every dispatch
    // many times over. WGPU_VALIDATION=1 and friends still turn them on.
    desc.flags = wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL.with_env();
    wgpu::Instance::new(desc)
}

/// Every adapter of these wgpu backends (none in a browser, which cannot block: see
/// [`enumerate_async`]).
pub fn enumerate(backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    crate::blocking::block_on("enumerating adapters", async {
        Ok(enumerate_async(backends).await)
    })
    .unwrap_or_default()
}

/// Every adapter of these wgpu backends, awaited. A browser offers one: WebGPU's.
pub async fn enumerate_async(backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    make_instance(backends).enumerate_adapters(backends).await
}

/// Every adapter wgpu can see on any backend (or on those `WGPU_BACKEND` names), for
/// `forge info`.
pub fn enumerate_adapters() -> Vec<wgpu::AdapterInfo> {
    enumerate(wgpu::Backends::all().with_env())
        .iter()
        .map(wgpu::Adapter::get_info)
        .collect()
}

/// An adapter as errors name it: `` `name` [backend, type] ``.
pub fn describe(info: &wgpu::AdapterInfo) -> String {
    format!(
        "`{}` [{:?}, {:?}]",
        crate::shown::shown(&info.name),
        info.backend,
        info.device_type
    )
}

/// Whether the adapter's driver cuts long loops short without a word: llvmpipe (Mesa's
/// software rasteriser, under lavapipe's Vulkan and Mesa's OpenGL alike) gives each shader
/// invocation 65,535 loop iterations in all ([`crate::emit::loop_guard`]). The device
/// guards every loop on such an adapter, and on no other.
pub fn limits_loops(info: &wgpu::AdapterInfo) -> bool {
    let llvmpipe = |s: &str| s.to_ascii_lowercase().contains("llvmpipe");
    llvmpipe(&info.name) || llvmpipe(&info.driver)
}

/// The loop iterations llvmpipe allows one invocation, all loops together
/// (`LP_MAX_TGSI_LOOP_ITERATIONS` in Mesa's gallivm).
pub const LLVMPIPE_LOOP_LIMIT: u32 = 65_535;

/// Lower is better: real GPUs first, then virtual ones, then CPU rasterisers.
fn type_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn backend_rank(b: wgpu::Backend) -> u8 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::Gl => 1,
        _ => 2,
    }
}

/// The best of `adapters`: real GPUs first, then virtual ones, then CPU rasterisers;
/// Vulkan, Metal and DX12 before GL. `filter` is a name substring and where it was set;
/// SPIR-V emission needs Vulkan with passthrough. The error lists every adapter seen.
pub fn select_adapter(
    adapters: Vec<wgpu::Adapter>,
    filter: Option<(&str, &str)>,
    emission: Backend,
) -> Result<wgpu::Adapter> {
    let seen: Vec<String> = adapters.iter().map(|a| describe(&a.get_info())).collect();
    let seen_list = if seen.is_empty() {
        "none".to_string()
    } else {
        seen.join(", ")
    };
    let mut candidates: Vec<wgpu::Adapter> = adapters;
    if let Some((name, source)) = filter {
        let needle = name.to_lowercase();
        candidates.retain(|a| a.get_info().name.to_lowercase().contains(&needle));
        if candidates.is_empty() {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    " whose name contains `{}` (set by {source}); adapters seen: {seen_list}",
                    crate::shown::shown(name)
                ),
            });
        }
    }
    if emission.needs_passthrough() {
        candidates.retain(|a| {
            a.get_info().backend == wgpu::Backend::Vulkan
                && a.features().contains(wgpu::Features::PASSTHROUGH_SHADERS)
        });
        if candidates.is_empty() {
            return Err(ForgeError::NoAdapter {
                detail: format!(
                    " that runs SPIR-V (emission `{emission}` needs a Vulkan adapter with PASSTHROUGH_SHADERS; use \
                     `wgsl` elsewhere); adapters seen: {seen_list}"
                ),
            });
        }
    }
    candidates.sort_by_key(|a| {
        let info = a.get_info();
        (type_rank(info.device_type), backend_rank(info.backend))
    });
    candidates
        .into_iter()
        .next()
        .ok_or_else(|| ForgeError::NoAdapter {
            detail: format!(" (wgpu saw no adapter; adapters seen: {seen_list})"),
        })
}

/// Whether a device opened on `adapter` zeroes workgroup memory itself: a Vulkan 1.3
/// device, where `shaderZeroInitializeWorkgroupMemory` is required and wgpu enables it.
/// SPIR-V for such a device gives workgroup variables a null initializer instead of
/// zeroing code ([`crate::emit::SpirvProfile`]).
#[cfg(not(any(target_arch = "wasm32", target_vendor = "apple")))]
pub fn vulkan_zeroes_workgroup_memory(adapter: &wgpu::Adapter) -> bool {
    /// `VK_MAKE_API_VERSION(0, 1, 3, 0)`.
    const VULKAN_1_3: u32 = (1 << 22) | (3 << 12);
    // SAFETY: reads the properties the adapter queried when it was enumerated; nothing is
    // created, destroyed or changed through the handle.
    let hal = unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() };
    hal.is_some_and(|a| a.physical_device_capabilities().properties().api_version >= VULKAN_1_3)
}

/// Without wgpu's Vulkan backend there is no SPIR-V execution to tune.
#[cfg(any(target_arch = "wasm32", target_vendor = "apple"))]
pub fn vulkan_zeroes_workgroup_memory(_adapter: &wgpu::Adapter) -> bool {
    false
}

/// The optional features the runtime asks for when the adapter has them.
pub fn wanted_features() -> wgpu::Features {
    wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SHADER_F64
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SUBGROUP_BARRIER
        | wgpu::Features::PASSTHROUGH_SHADERS
        | wgpu::Features::IMMEDIATES
        | wgpu::Features::PIPELINE_CACHE
        | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
}
