//! Hand-written kernels for the runtime tests: the `Kernel` trait implemented by hand, the
//! way `#[forge_kernel]` would, so the runtime is tested without the macro.
#![allow(dead_code)]

use forge_core::kernel::{
    Access, Binding, DynArgs, ElemType, HostBuffer, Kernel, ScalarParam, ScalarType, ScalarValue,
};
use forge_core::{ForgeError, ForgeRuntime, HostArg, Result, Schedule, Threads, TuneSpace};

/// The linear, fold-aware workgroup index and the early return past the needed groups,
/// as generated kernels compute them.
const PRELUDE: &str = r#"
fn linear_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
}
"#;

const AFFINE_BODY: &str = r#"
struct Params { n: u32, b: f32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let group = linear_group(wid, nwg);
    let needed = (params.n + WG * ITEMS - 1u) / (WG * ITEMS);
    if group >= needed { return; }
    for (var k = 0u; k < ITEMS; k++) {
        let i = (group * ITEMS + k) * WG + lid;
        if i < params.n {
            y[i] = a[i] * 2.0 + params.b;
        }
    }
}
"#;

/// `y[i] = a[i] * 2 + b` over `n` elements.
pub struct Affine;

pub static AFFINE_LAYOUT: [Binding; 2] = [
    Binding {
        binding: 0,
        name: "a",
        elem: ElemType::scalar(ScalarType::F32),
        access: Access::Read,
        len: "n",
    },
    Binding {
        binding: 1,
        name: "y",
        elem: ElemType::scalar(ScalarType::F32),
        access: Access::Out,
        len: "n",
    },
];
static AFFINE_SCALARS: [ScalarParam; 2] = [
    ScalarParam {
        name: "n",
        ty: ScalarType::U32,
    },
    ScalarParam {
        name: "b",
        ty: ScalarType::F32,
    },
];

/// The `Params` uniform of [`Affine`], as the macro would lay it out.
pub fn affine_params(n: u32, b: f32) -> Vec<u8> {
    let mut p = Vec::with_capacity(8);
    p.extend_from_slice(&n.to_le_bytes());
    p.extend_from_slice(&b.to_le_bytes());
    p
}

/// The CPU reference of [`Affine`].
pub fn affine_cpu(a: &[f32], b: f32) -> Vec<f32> {
    a.iter().map(|x| x * 2.0 + b).collect()
}

/// Runs [`Affine`] on host data.
pub fn run_affine(
    rt: &mut ForgeRuntime,
    schedule: &Schedule,
    a: &[f32],
    b: f32,
) -> Result<Vec<f32>> {
    let n = u32::try_from(a.len()).map_err(|_| ForgeError::InvalidArgument {
        kernel: "affine",
        message: "too many elements".into(),
    })?;
    let params = affine_params(n, b);
    let mut args = [
        HostArg::In(bytemuck::cast_slice(a)),
        HostArg::Out(a.len() as u64 * 4),
    ];
    let mut out = rt.launch_host(&Affine, schedule, &params, a.len() as u64, &mut args)?;
    let y = out.pop().expect("one output");
    assert_eq!(y.len(), a.len());
    Ok(bytemuck::cast_slice::<u8, f32>(y.bytes()).to_vec())
}

fn scalars_of(args: &DynArgs) -> Result<(u32, f32)> {
    match args.scalars.as_slice() {
        [ScalarValue::U32(n), ScalarValue::F32(b)] => Ok((*n, *b)),
        _ => Err(ForgeError::InvalidArgument {
            kernel: "affine",
            message: "expected (n: u32, b: f32)".into(),
        }),
    }
}

/// The CUDA form of [`Affine`], as the CUDA emitter lays kernels out: the bindings' pointers,
/// then `fg_Params` by value; the linear workgroup index over the folded grid.
const AFFINE_CUDA: &str = r#"
struct fg_Params { unsigned n; float b; };
extern "C" __global__ void fg_main(const float *a, float *y, const fg_Params p) {
    const unsigned group = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
    if (group >= (p.n + WG * ITEMS - 1u) / (WG * ITEMS)) return;
    for (unsigned k = 0u; k < ITEMS; ++k) {
        const unsigned i = (group * ITEMS + k) * WG + threadIdx.x;
        if (i < p.n) y[i] = a[i] * 2.0f + p.b;
    }
}
"#;

impl Kernel for Affine {
    fn name(&self) -> &'static str {
        "affine"
    }
    fn wgsl(&self, schedule: &Schedule) -> String {
        format!("{}{PRELUDE}{AFFINE_BODY}", schedule.wgsl_header())
    }
    fn cuda(&self, schedule: &Schedule) -> Result<String> {
        Ok(format!("{}{AFFINE_CUDA}", schedule.cuda_header()))
    }
    fn layout(&self) -> &'static [Binding] {
        &AFFINE_LAYOUT
    }
    fn scalars(&self) -> &'static [ScalarParam] {
        &AFFINE_SCALARS
    }
    fn default_schedule(&self) -> Schedule {
        Schedule::with_workgroup(64)
    }
    /// The schedules the runtime tests run it at (a kernel runs only at those it
    /// declares): folded workgroups of 8, and the ITEMS loop at 2, 3 and 4.
    fn tune_space(&self) -> TuneSpace {
        TuneSpace::new(&[64, 8, 32, 256], &[1, 2, 3, 4], &[1])
    }
    fn cert_cases(&self) -> Vec<Vec<ScalarValue>> {
        vec![vec![ScalarValue::U32(1000), ScalarValue::F32(0.5)]]
    }
    fn binding_lens_at(&self, _: &Schedule, scalars: &[ScalarValue]) -> Result<Vec<u64>> {
        let (n, _) = scalars_of(&DynArgs {
            scalars: scalars.to_vec(),
            buffers: vec![],
        })?;
        Ok(vec![n as u64, n as u64])
    }
    fn grid_threads_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<Threads> {
        Ok(Threads::from(self.binding_lens_at(schedule, scalars)?[0]))
    }
    fn cpu_dyn(&self, _schedule: &Schedule, args: &DynArgs) -> Result<Vec<HostBuffer>> {
        let (_, b) = scalars_of(args)?;
        let a = match args.buffers.first() {
            Some(Some(a)) => a,
            _ => {
                return Err(ForgeError::InvalidArgument {
                    kernel: "affine",
                    message: "missing `a`".into(),
                })
            }
        };
        let a: &[f32] = bytemuck::cast_slice(a.bytes());
        Ok(vec![HostBuffer::from_slice(
            AFFINE_LAYOUT[1].elem,
            &affine_cpu(a, b),
        )])
    }
}

const BUMP_BODY: &str = r#"
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read_write> x: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = linear_group(wid, nwg) * WG + lid;
    if i < params.n {
        x[i] = x[i] * 3u + 1u;
    }
}
"#;

/// `x[i] = x[i] * 3 + 1` in place, wrapping.
pub struct Bump;

pub static BUMP_LAYOUT: [Binding; 1] = [Binding {
    binding: 0,
    name: "x",
    elem: ElemType::scalar(ScalarType::U32),
    access: Access::ReadWrite,
    len: "n",
}];
static BUMP_SCALARS: [ScalarParam; 1] = [ScalarParam {
    name: "n",
    ty: ScalarType::U32,
}];

/// The CUDA form of [`Bump`]; unsigned arithmetic wraps, as WGSL's does.
const BUMP_CUDA: &str = r#"
struct fg_Params { unsigned n; };
extern "C" __global__ void fg_main(unsigned *x, const fg_Params p) {
    const unsigned group = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
    const unsigned i = group * WG + threadIdx.x;
    if (i < p.n) x[i] = x[i] * 3u + 1u;
}
"#;

impl Kernel for Bump {
    fn name(&self) -> &'static str {
        "bump"
    }
    fn wgsl(&self, schedule: &Schedule) -> String {
        format!("{}{PRELUDE}{BUMP_BODY}", schedule.wgsl_header())
    }
    fn cuda(&self, schedule: &Schedule) -> Result<String> {
        Ok(format!("{}{BUMP_CUDA}", schedule.cuda_header()))
    }
    fn layout(&self) -> &'static [Binding] {
        &BUMP_LAYOUT
    }
    fn scalars(&self) -> &'static [ScalarParam] {
        &BUMP_SCALARS
    }
    fn default_schedule(&self) -> Schedule {
        Schedule::with_workgroup(128)
    }
    fn tune_space(&self) -> TuneSpace {
        TuneSpace::new(&[128], &[1], &[1])
    }
    fn cert_cases(&self) -> Vec<Vec<ScalarValue>> {
        vec![]
    }
    fn binding_lens_at(&self, _: &Schedule, scalars: &[ScalarValue]) -> Result<Vec<u64>> {
        match scalars {
            [ScalarValue::U32(n)] => Ok(vec![*n as u64]),
            _ => Err(ForgeError::InvalidArgument {
                kernel: "bump",
                message: "expected (n: u32)".into(),
            }),
        }
    }
    fn grid_threads_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<Threads> {
        Ok(Threads::from(self.binding_lens_at(schedule, scalars)?[0]))
    }
    fn cpu_dyn(&self, _schedule: &Schedule, args: &DynArgs) -> Result<Vec<HostBuffer>> {
        match args.buffers.first() {
            Some(Some(x)) => Ok(vec![HostBuffer::from_slice(
                BUMP_LAYOUT[0].elem,
                &bump_cpu(bytemuck::cast_slice(x.bytes())),
            )]),
            _ => Err(ForgeError::InvalidArgument {
                kernel: "bump",
                message: "missing `x`".into(),
            }),
        }
    }
}

/// The CPU reference of [`Bump`].
pub fn bump_cpu(x: &[u32]) -> Vec<u32> {
    x.iter()
        .map(|v| v.wrapping_mul(3).wrapping_add(1))
        .collect()
}

/// A kernel whose WGSL does not compile.
pub struct Broken;

static BROKEN_LAYOUT: [Binding; 1] = [Binding {
    binding: 0,
    name: "y",
    elem: ElemType::scalar(ScalarType::F32),
    access: Access::Out,
    len: "n",
}];

impl Kernel for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn wgsl(&self, schedule: &Schedule) -> String {
        format!(
            "{}@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n\
             @compute @workgroup_size(WG) fn main() {{ y[0] = undefined_name; }}\n",
            schedule.wgsl_header()
        )
    }
    fn layout(&self) -> &'static [Binding] {
        &BROKEN_LAYOUT
    }
    fn scalars(&self) -> &'static [ScalarParam] {
        &[]
    }
    fn default_schedule(&self) -> Schedule {
        Schedule::with_workgroup(64)
    }
    fn tune_space(&self) -> TuneSpace {
        TuneSpace::new(&[64], &[1], &[1])
    }
    fn cert_cases(&self) -> Vec<Vec<ScalarValue>> {
        vec![]
    }
    fn binding_lens_at(&self, _: &Schedule, _scalars: &[ScalarValue]) -> Result<Vec<u64>> {
        Ok(vec![1])
    }
    fn grid_threads_at(&self, _: &Schedule, _scalars: &[ScalarValue]) -> Result<Threads> {
        Ok(Threads::from(1u64))
    }
    fn cpu_dyn(&self, _schedule: &Schedule, _args: &DynArgs) -> Result<Vec<HostBuffer>> {
        Err(ForgeError::InvalidArgument {
            kernel: "broken",
            message: "not used".into(),
        })
    }
}

/// A runtime on the real adapter. A missing adapter fails the test: it never skips.
pub fn runtime(capacity: u64) -> ForgeRuntime {
    match ForgeRuntime::new(capacity, None) {
        Ok(rt) => rt,
        Err(e) => panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}"),
    }
}

/// Fresh random floats, not zeros, in [-100, 100).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-100.0f32..100.0)).collect()
}

/// Fresh random words.
pub fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen()).collect()
}
