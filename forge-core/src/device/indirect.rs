//! The wgpu side of indirect launches (`#[forge_kernel(indirect = count[0])]`): a pass of
//! one invocation turns the count an earlier launch wrote into the workgroup counts of
//! `dispatch_workgroups_indirect`, so that the launch dispatches only the workgroups its
//! count needs, without a readback. Part of the wgpu device (layer 4).
//!
//! The kernel's own prologue takes `min(count, threads)` and leaves past it, as it does for
//! the workgroups that folding adds, so any dispatch that covers the count is correct: the
//! counts written here are the bound's dispatch (`plan.grid.dispatch`, checked on the host)
//! cut to the count's workgroups, `x` first, and fold the same way. A count past the bound
//! dispatches the bound's grid (the runtime reports it, see `runtime::indirect`).

/// The workgroup counts' buffer: written by the prep, read by the dispatch.
pub const ARGS_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::INDIRECT);

/// The prep's `Params`: the count's element, the bound, invocations per workgroup, and
/// the bound's dispatch.
pub const PREP_PARAMS_BYTES: u64 = 32;

/// The prep shader. `args` are the three workgroup counts `dispatch_workgroups_indirect`
/// reads.
const PREP_WGSL: &str = r#"
struct Prep {
    element: u32,
    bound: u32,
    per_group: u32,
    pad: u32,
    dispatch: vec4<u32>,
}

@group(0) @binding(0) var<storage, read> count: array<u32>;
@group(0) @binding(1) var<storage, read_write> args: array<u32, 4>;
@group(0) @binding(2) var<uniform> p: Prep;

fn div_ceil(a: u32, b: u32) -> u32 {
    return a / b + select(0u, 1u, a % b != 0u);
}

@compute @workgroup_size(1)
fn main() {
    let threads = min(count[p.element], p.bound);
    let groups = div_ceil(threads, p.per_group);
    if groups == 0u {
        args[0] = 0u;
        args[1] = 0u;
        args[2] = 0u;
        return;
    }
    // The bound's dispatch covers the bound's groups, so it covers these: x, then y, then z.
    let x = min(groups, p.dispatch.x);
    let rest = div_ceil(groups, x);
    let y = min(rest, p.dispatch.y);
    args[0] = x;
    args[1] = y;
    args[2] = min(div_ceil(rest, y), p.dispatch.z);
}
"#;

/// The prep pipeline, made at the first indirect launch.
#[derive(Debug)]
pub struct IndirectPrep {
    pub pipeline: wgpu::ComputePipeline,
}

impl IndirectPrep {
    pub fn new(device: &wgpu::Device) -> IndirectPrep {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("forge indirect prep"),
            source: wgpu::ShaderSource::Wgsl(PREP_WGSL.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("forge indirect prep"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        IndirectPrep { pipeline }
    }

    /// The prep's `Params` for a count at `element`, a bound of `bound` invocations in
    /// workgroups of `per_group`, and the bound's dispatch.
    pub fn params(element: u32, bound: u32, per_group: u32, dispatch: [u32; 3]) -> [u8; 32] {
        let words = [
            element,
            bound,
            per_group,
            0,
            dispatch[0],
            dispatch[1],
            dispatch[2],
            0,
        ];
        let mut bytes = [0u8; 32];
        for (chunk, w) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_prep_shader_is_valid_wgsl() {
        let module = naga::front::wgsl::parse_str(super::PREP_WGSL).expect("parses");
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .expect("validates");
    }
}
