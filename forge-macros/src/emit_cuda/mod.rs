//! Emit CUDA C++, a stage (layer 3): the checked model, unrolled for a schedule as the WGSL is,
//! becomes a CUDA kernel that NVRTC compiles, with the language's semantics (the CPU
//! oracle's) kept: the prelude (`prelude.cuh`) holds every operation whose C meaning
//! differs, `types`, `expr` and `stmt` write the kernel's parts, with the names of `crate::names`.
//!
//! A kernel's source is three parts, as its WGSL is: the prelude (with `cuda_fp16.h` and
//! the `f16` functions when the kernel uses `f16`), the schedule's constants, which the
//! runtime writes (`forge_core::Schedule::cuda_header`), and the body emitted here.
//!
//! The entry point is `extern "C" __global__ void fg_main(bindings..., fg_Params)`:
//! - each storage binding is a pointer, in declaration order (`const` when read-only;
//!   an atomic binding points to its plain scalar);
//! - the scalar parameters come last, as one struct passed by value, laid out as the
//!   host's `Params` (each field 4 bytes, in declaration order); there is none without
//!   scalars;
//! - it is launched with the workgroup as its block (`WG`, or `WG_X × WG_Y × WG_Z`) and
//!   the dispatch that `forge_core::plan` computes as its grid, folded past 65535 in y
//!   and z exactly as for WGSL: the prologue computes the same linear workgroup index,
//!   leaves past the grid, and unfolds the logical ids;
//! - workgroup memory is `__shared__`, zeroed at the start with a `__syncthreads()`, as
//!   WGSL's is;
//! - subgroups are warps (32 lanes); subgroup operations are shuffles and votes over the
//!   lanes the workgroup has.
//!
//! Indices are not clamped: an index out of bounds is a bug in the kernel, which the
//! oracle reports; on CUDA it is an illegal address.

mod align;
mod expr;
mod stmt;
mod types;

use crate::back::{self, Exprs, Function};
use crate::model::*;
use crate::names::{builtin_var, cuda_name, helper_name, Namer};
use std::fmt::Write;

/// The prelude every kernel starts with.
const PRELUDE: &str = include_str!("prelude.cuh");
/// The `f16` part, after `cuda_fp16.h`.
const PRELUDE_F16: &str = include_str!("prelude_f16.cuh");
/// Cooperative matrices on tensor cores, after the `f16` part.
const PRELUDE_COOP: &str = include_str!("prelude_coop.cuh");

/// The kernel's entry point (C++ forbids a kernel named `main`).
pub const ENTRY_POINT: &str = "fg_main";

/// WGSL's builtins under their own names, for the kernels that call one.
const PRELUDE_WGSL: &str = include_str!("prelude_wgsl.cuh");
/// Their `f16` forms, for the kernels that also use `f16`.
const PRELUDE_WGSL_F16: &str = include_str!("prelude_wgsl_f16.cuh");

/// The prelude of kernel `k`'s CUDA.
pub fn prelude(k: &Kernel<'_>) -> String {
    let mut s = if k.uses_coop() {
        format!("#include <cuda_fp16.h>\n{PRELUDE}{PRELUDE_F16}{PRELUDE_COOP}")
    } else if k.uses_f16() {
        format!("#include <cuda_fp16.h>\n{PRELUDE}{PRELUDE_F16}")
    } else if k.uses_wgsl_builtins() {
        // `quantize_to_f16` and `pack2x16float` round through `__half`.
        format!("#include <cuda_fp16.h>\n{PRELUDE}")
    } else {
        PRELUDE.to_string()
    };
    if k.uses_wgsl_builtins() {
        s.push_str(PRELUDE_WGSL);
        if k.uses_f16() {
            s.push_str(PRELUDE_WGSL_F16);
        }
    }
    s
}

/// A CUDA function being written: the kernel's entry point, or a helper. Beside it, what
/// the emitter proved of the entry point's indices for the schedule it is written for
/// (`align`): none in a helper, or for the schedules outside the tuning space.
pub(crate) type Emitter<'k> = Function<'k, Option<align::Align<'k>>>;

/// The CUDA body of kernel `k` unrolled for a schedule (`x`): everything after the
/// schedule's constants. `sched` is the schedule `x` was made for, `None` for the rolled
/// body that serves the schedules outside the tuning space. An error says why the kernel
/// cannot be written in CUDA.
pub fn emit<'k>(
    k: &'k Kernel<'k>,
    x: &'k Expanded,
    sched: Option<&'k SchedPoint>,
) -> Result<String, String> {
    if !k.prints.is_empty() {
        return Err("it calls `debug_print!`, which has no CUDA form (the print buffer is a WGSL binding); remove the prints to emit CUDA, or run it through WGSL or SPIR-V".into());
    }
    let mut s = String::new();
    for def in k.used_structs() {
        s.push('\n');
        s.push_str(&types::struct_decl(&k.structs[def])?);
    }
    if !k.scalars.is_empty() {
        // The host's `Params`: 4-byte fields in declaration order (its tail padding, which
        // WGSL's uniform layout adds, is past what the kernel reads).
        s.push_str("\nstruct fg_Params {\n");
        for p in &k.scalars {
            let _ = writeln!(s, "    {} {};", types::scalar(p.ty), cuda_name(&p.name));
        }
        s.push_str("};\n");
    }
    // `#[forge_fn]` helpers, in declaration order: each calls only earlier ones.
    let mut helpers: Vec<&(usize, Func)> = x.helpers.iter().collect();
    helpers.sort_by_key(|(h, _)| *h);
    for (h, f) in helpers {
        let helper = &k.helpers[*h];
        let names = Namer::helper(k, cuda_name).locals(&f.locals);
        let mut e = Emitter::new(k, &f.locals, names, None);
        let params: Vec<String> = helper
            .params
            .iter()
            .map(|p| format!("{} {}", e.ty(&f.locals[*p].ty), e.names[*p]))
            .collect();
        let ret = helper
            .ret
            .as_ref()
            .map(|t| e.ty(t))
            .unwrap_or_else(|| "void".into());
        e.block(&f.body);
        let _ = write!(
            s,
            "\nFG_FN {ret} {}({}) {{\n{}}}\n",
            helper_name(helper),
            params.join(", "),
            e.w.out
        );
    }

    let names = Namer::kernel(k, cuda_name).locals(&x.main.locals);
    let facts = sched.map(|s| align::Align::new(&x.main, s));
    let mut e = Emitter::new(k, &x.main.locals, names, facts);
    let mut params: Vec<String> = k
        .bindings
        .iter()
        .map(|b| {
            let elem = types::binding_elem(b, &k.structs);
            let constness = if b.access == Access::Read {
                "const "
            } else {
                ""
            };
            format!("{constness}{elem} *{}", cuda_name(&b.name))
        })
        .collect();
    if !k.scalars.is_empty() {
        params.push("const fg_Params fg_params".into());
    }
    let _ = write!(
        s,
        "\nextern \"C\" __global__ void __launch_bounds__(WG) {ENTRY_POINT}({}) {{\n",
        params.join(", ")
    );
    for p in &k.scalars {
        let n = cuda_name(&p.name);
        let _ = writeln!(s, "    const {} {n} = fg_params.{n};", types::scalar(p.ty));
    }
    s.push_str(&grid_prologue(k));
    s.push_str(&subgroup_prologue(k));
    // Workgroup memory starts zeroed, as WGSL's: each invocation clears a stride of it.
    let shared: Vec<(&Local, &String)> = x
        .main
        .locals
        .iter()
        .zip(&e.names)
        .filter(|(l, _)| l.shared)
        .collect();
    // Aligned to 16 bytes: zeroed 16 bytes a store, and tensor-core loads (`ldmatrix`)
    // read rows that start on 16 bytes. Past 48 KiB (`STATIC_SHARED_BYTES`), the arrays
    // are carved from dynamic shared memory instead, which the runtime opts in to.
    match sched.and_then(|p| dynamic_layout(k, &shared, p)) {
        Some((total, offsets)) => {
            let decl = format!("static constexpr unsigned {DYNAMIC_SHARED_BYTES} = {total}u;\n");
            s.insert_str(0, &decl);
            s.push_str("    extern __shared__ __align__(16) unsigned char fg_smem[];\n");
            for ((l, name), (offset, bytes)) in shared.iter().zip(offsets) {
                let ty = e.ty(&l.ty);
                let _ = writeln!(s, "    static_assert(sizeof({ty}) <= {bytes}u, \"the macro's size of `{name}`\");");
                let _ = writeln!(
                    s,
                    "    {ty} &{name} = *reinterpret_cast<{ty} *>(fg_smem + {offset}u);"
                );
            }
        }
        None => {
            for (l, name) in &shared {
                let _ = writeln!(s, "    __shared__ __align__(16) {} {name};", e.ty(&l.ty));
            }
        }
    }
    if !shared.is_empty() {
        for (_, name) in &shared {
            let _ = writeln!(
                s,
                "    fg_zero_shared(&{name}, sizeof({name}), fg_lidx, WG);"
            );
        }
        s.push_str("    __syncthreads();\n");
    }
    e.block(&x.main.body);
    s.push_str(&e.w.out);
    s.push_str("}\n");
    Ok(s)
}

/// The most static shared memory a CUDA block may declare; past it, the memory must be
/// dynamic, and the launch opts in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
const STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// The constant of a body whose workgroup memory is dynamic: its bytes, which the runtime
/// reads from the source to launch it (`forge_core::device::cuda`).
pub const DYNAMIC_SHARED_BYTES: &str = "fg_dynamic_shared_bytes";

/// Where each workgroup array sits in dynamic shared memory for schedule `p`, and the
/// total, when the arrays take more than `STATIC_SHARED_BYTES`; `None` when they fit as
/// static arrays. Each starts on 16 bytes and takes its WGSL size, which its CUDA type
/// never exceeds (the emitted `static_assert` holds the macro to it): (offset, bytes).
fn dynamic_layout(
    k: &Kernel<'_>,
    shared: &[(&Local, &String)],
    p: &SchedPoint,
) -> Option<(u64, Vec<(u64, u64)>)> {
    let mut offsets = Vec::with_capacity(shared.len());
    let mut total = 0u64;
    for (l, _) in shared {
        let bytes = l.ty.workgroup_bytes(&k.structs, p)?;
        offsets.push((total, bytes));
        total = total.checked_add(bytes)?.checked_next_multiple_of(16)?;
    }
    (total > STATIC_SHARED_BYTES).then_some((total, offsets))
}

/// The start of the kernel: the physical ids as WGSL names them, the linear workgroup
/// index, a return for the workgroups that folding launched past the grid, and the
/// logical ids, computed exactly as the WGSL computes them.
fn grid_prologue(k: &Kernel<'_>) -> String {
    let mut s = String::new();
    s.push_str(
        "    const fg_vec<unsigned, 3> fg_lid = {{threadIdx.x, threadIdx.y, threadIdx.z}};\n",
    );
    s.push_str(
        "    const unsigned fg_lidx = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n",
    );
    s.push_str("    // Workgroups are folded into y and z past 65535; this is the linear index.\n");
    s.push_str(
        "    const unsigned fg_wg_index = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;\n",
    );
    let dims = k.threads_dims();
    let len = |e: &LenExpr| len_cuda(e, k);
    if k.dims() == 1 {
        let threads = dims
            .first()
            .map(|(t, _)| len(t))
            .unwrap_or_else(|| "1u".into());
        match k.indirect() {
            // The count an earlier launch wrote, at most `threads` (the runtime reports a
            // count past it).
            Some((b, element)) => {
                let count = cuda_name(&k.bindings[b].name);
                let _ = writeln!(s, "    const unsigned fg_count = {count}[{element}u];");
                let _ = writeln!(s, "    const unsigned fg_bound = {threads};");
                s.push_str(
                    "    const unsigned fg_threads = fg_count < fg_bound ? fg_count : fg_bound;\n",
                );
            }
            None => {
                let _ = writeln!(s, "    const unsigned fg_threads = {threads};");
            }
        }
        s.push_str("    const unsigned fg_per_group = WG * ITEMS;\n");
        s.push_str(
            "    // Folding may launch a few workgroups more than needed: they leave at once.\n",
        );
        s.push_str("    if (fg_wg_index >= fg_div_ceil(fg_threads, fg_per_group)) return;\n");
        s.push_str("    const unsigned fg_global_index = fg_wg_index * WG + fg_lidx;\n");
        let groups = "fg_div_ceil(fg_threads, fg_per_group)";
        for (name, [x, y, z]) in back::logical_ids_1d(k, groups) {
            let _ = writeln!(
                s,
                "    const fg_vec<unsigned, 3> {name} = {{{{{x}, {y}, {z}}}}};"
            );
        }
        return s;
    }
    let mut t: Vec<String> = dims.iter().map(|(e, _)| len(e)).collect();
    t.resize(3, "1u".into());
    let _ = writeln!(
        s,
        "    const fg_vec<unsigned, 3> fg_threads = {{{{{}, {}, {}}}}};",
        t[0], t[1], t[2]
    );
    s.push_str("    const fg_vec<unsigned, 3> fg_groups = {{fg_div_ceil(fg_threads.v[0], WG_X), fg_div_ceil(fg_threads.v[1], WG_Y), fg_div_ceil(fg_threads.v[2], WG_Z)}};\n");
    s.push_str(
        "    // Folding may launch a few workgroups more than needed: they leave at once.\n",
    );
    s.push_str(
        "    if (fg_wg_index >= fg_groups.v[0] * fg_groups.v[1] * fg_groups.v[2]) return;\n",
    );
    s.push_str("    // The logical grid: the linear index unfolded over its workgroups.\n");
    s.push_str("    const fg_vec<unsigned, 3> fg_lwid = {{fg_wg_index % fg_groups.v[0], (fg_wg_index / fg_groups.v[0]) % fg_groups.v[1], fg_wg_index / (fg_groups.v[0] * fg_groups.v[1])}};\n");
    s.push_str("    const fg_vec<unsigned, 3> fg_lgid = {{fg_lwid.v[0] * WG_X + fg_lid.v[0], fg_lwid.v[1] * WG_Y + fg_lid.v[1], fg_lwid.v[2] * WG_Z + fg_lid.v[2]}};\n");
    s.push_str("    const unsigned fg_global_index = fg_lgid.v[0] + fg_threads.v[0] * (fg_lgid.v[1] + fg_threads.v[1] * fg_lgid.v[2]);\n");
    s
}

/// The subgroup values, where the kernel uses subgroups: warps of 32 lanes numbered by
/// the linear local index, as WGSL's subgroups are on NVIDIA, and the mask of the lanes
/// the workgroup has (all 32, but for a last warp that the workgroup fills in part).
fn subgroup_prologue(k: &Kernel<'_>) -> String {
    if !k.uses_subgroups() {
        return String::new();
    }
    [
        Builtin::SubgroupInvocationId,
        Builtin::SubgroupSize,
        Builtin::SubgroupId,
        Builtin::NumSubgroups,
    ]
    .iter()
    .zip([
        "fg_lidx % 32u",
        "32u",
        "fg_lidx / 32u",
        "(WG + 31u) / 32u",
    ])
    .map(|(b, v)| format!("    const unsigned {} = {v};\n", builtin_var(*b)))
    .chain([
        "    const unsigned fg_sg_rest = WG - fg_sg_id * 32u;\n".to_string(),
        // A constant where `WG` is a multiple of 32, so that full-warp paths fold.
        "    const unsigned fg_sg_mask = (WG % 32u == 0u || fg_sg_rest >= 32u) ? 0xffffffffu : (1u << fg_sg_rest) - 1u;\n".to_string(),
    ])
    .collect()
}

/// A LEN expression in `u32` arithmetic over the scalar parameters (the host checked that
/// no step overflows or divides by zero).
fn len_cuda(e: &LenExpr, k: &Kernel<'_>) -> String {
    match e {
        LenExpr::Lit(v) => format!("{v}u"),
        LenExpr::Param(i) => format!("(unsigned)({})", cuda_name(&k.scalars[*i].name)),
        LenExpr::Sched(name) => name.clone(),
        LenExpr::Binary(op, a, b) => {
            let f = match op {
                LenOp::Add => "fg_add",
                LenOp::Sub => "fg_sub",
                LenOp::Mul => "fg_mul",
                LenOp::Div => "fg_div",
                LenOp::Rem => "fg_rem",
            };
            format!("{f}({}, {})", len_cuda(a, k), len_cuda(b, k))
        }
        LenExpr::Method(m, a, b) => {
            let f = match m {
                LenMethod::Min => "fg_min",
                LenMethod::Max => "fg_max",
                LenMethod::DivCeil => "fg_div_ceil",
            };
            format!("{f}({}, {})", len_cuda(a, k), len_cuda(b, k))
        }
    }
}
