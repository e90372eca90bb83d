//! Check, a stage (layer 3): every rule a kernel must satisfy beyond parsing and typing. Each rule is
//! one function that reports at the narrowest span with a hint. The emitters assume a model
//! that passed these checks.

use crate::ctxt::Ctxt;
use crate::model::*;
use crate::names::wgsl_struct_name;
use crate::types::{struct_decl, ty_text, wgsl_align};
use proc_macro2::Span;

/// wgpu's default (portable) `max_storage_buffers_per_shader_stage`.
pub const PORTABLE_STORAGE_BUFFERS: usize = 8;
/// wgpu's default (portable) `max_compute_workgroup_storage_size`.
pub const PORTABLE_WORKGROUP_BYTES: u64 = 16384;
/// wgpu's default (portable) `max_compute_invocations_per_workgroup`.
pub const PORTABLE_WORKGROUP_SIZE: u32 = 256;
/// The largest `max_compute_invocations_per_workgroup` of any adapter (Vulkan, Metal and
/// D3D12 devices stop at 1024).
pub const MAX_WORKGROUP_SIZE: u32 = 1024;

/// What the checks found that the emitters need.
pub struct Checked {
    /// A cooperative-matrix operation stands under a subgroup's vote: uniform over its
    /// subgroup, as SPIR-V and CUDA ask, though not over the workgroup, as naga asks.
    pub coop_under_vote: bool,
}

pub fn check(cx: &Ctxt, k: &Kernel<'_>) -> Checked {
    read_only_not_written(cx, k);
    outputs_written(cx, k);
    storage_binding_limit(cx, k);
    workgroup_size(cx, k);
    tune_keep_valid(cx, k);
    coop_memory_is_shared_or_bound(cx, k);
    grid_shapes(cx, k);
    workgroup_memory_limit(cx, k);
    private_array_limit(cx, k);
    workgroup_memory_zeroed(cx, k);
    has_threads(cx, k);
    writes_something(cx, k);
    len_sched_names(cx, k);
    inputs_valid(cx, k);
    indirect_valid(cx, k);
    cases_valid(cx, k);
    array_values_only_in_let(cx, k);
    atomic_store_is_a_statement(cx, k);
    atomic_arrays_only_atomically(cx, k);
    async_copies_into_workgroup_memory(cx, k);
    float_atomics_arithmetic(cx, k);
    f64_math_on_gpus(cx, k);
    subgroup_ops_not_short_circuited(cx, k);
    subgroup_broadcast_lane_constant(cx, k);
    prints(cx, k);
    coop_not_shared(cx, k);
    hvec8_whole_values(cx, k);
    Checked {
        coop_under_vote: uniformity::barriers_uniform(cx, k),
    }
}

/// A cooperative matrix is a subgroup's value, held in its registers: it has no place in
/// workgroup memory (stage it there as `f16` elements and load it with `load_row_major`).
fn coop_not_shared(cx: &Ctxt, k: &Kernel<'_>) {
    for l in k.locals.iter().filter(|l| l.shared && l.ty.is_coop()) {
        cx.error(
            l.span,
            format!("`{}` puts cooperative matrices in workgroup memory, which cannot hold them: they live in the subgroup's registers; keep the elements in a `#[shared]` array of `f16` or `f32` and use `load_row_major`/`store_row_major`", l.name),
        );
    }
}

/// `HVec8` is eight halves moved 16 bytes at a time: WGSL has no eight-component vector
/// (two `vec4<f16>` there), so it is loaded, stored, copied (`async_copy`), passed,
/// chosen by `if`, loaded by a cooperative matrix and made by `HVec8::ZERO`, and its
/// halves are reached through two `HVec4`s (`v.lo()`, `v.hi()`, `HVec8::join(lo, hi)`),
/// never by arithmetic, components or casts on it.
fn hvec8_whole_values(cx: &Ctxt, k: &Kernel<'_>) {
    const HINT: &str = "an `HVec8` holds eight halves for 16-byte loads, stores and copies, and has no arithmetic, components, casts or comparisons: take its halves as two `HVec4`s with `v.lo()` and `v.hi()`, and make one with `HVec8::join(lo, hi)` or `HVec8::ZERO`";
    let is8 = |t: &Ty| matches!(t, Ty::Vector(Scalar::F16, 8));
    let mut bodies: Vec<&Block> = vec![&k.body];
    for h in k.used_helpers() {
        bodies.push(&k.helpers[h].body);
    }
    for body in bodies {
        walk_exprs(body, &mut |x| {
            let bad = match &x.kind {
                ExprKind::Unary(_, a) | ExprKind::Cast(a) | ExprKind::Swizzle(a, _) => {
                    is8(&x.ty) || is8(&a.ty)
                }
                ExprKind::Binary(_, a, b) => is8(&x.ty) || is8(&a.ty) || is8(&b.ty),
                ExprKind::Math(MathFn::OctetHalf { .. } | MathFn::OctetJoin, _) => false,
                ExprKind::Math(_, args) | ExprKind::Subgroup { args, .. } => {
                    is8(&x.ty) || args.iter().any(|a| is8(&a.ty))
                }
                // `HVec8::ZERO` is the only vector constructor it has.
                ExprKind::VecNew(args) => {
                    is8(&x.ty)
                        && !matches!(args.as_slice(), [a] if matches!(a.kind, ExprKind::FloatLit(v) if v == 0.0))
                }
                _ => false,
            };
            if bad {
                cx.error_range(x.span, x.end, HINT);
            }
        });
        walk_stmts(body, &mut |s| {
            if let Stmt::Assign {
                op: Some(_),
                value,
                span,
                ..
            } = s
            {
                if is8(&value.ty) {
                    cx.error(*span, HINT);
                }
            }
        });
    }
}

/// The rules of one schedule, on the kernel unrolled for it: constant operations and
/// indices, which unrolling makes constant. `reported` keeps the errors given for other
/// schedules, so that each shows once.
pub fn schedule(
    cx: &Ctxt,
    k: &Kernel<'_>,
    s: &SchedPoint,
    x: &Expanded,
    reported: &mut std::collections::HashSet<String>,
) {
    constants::constant_operations(cx, k, s, x, reported);
}

fn assigned_bindings(k: &Kernel<'_>) -> Vec<(usize, Span)> {
    let mut out = Vec::new();
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Eval { expr } = s {
            if let ExprKind::Coop {
                op: CoopOp::Store { .. },
                target: Some(AtomicTarget::Binding(b)),
                ..
            } = expr.kind
            {
                out.push((b, expr.span));
            }
        }
        if let Stmt::Assign { place, span, .. } = s {
            if let Place::Binding(b, _) = place.root() {
                out.push((*b, *span));
            }
        }
    });
    out
}

/// A `#[forge_struct]`'s host layout (`#[repr(C)]`, every component 4 bytes, so no padding)
/// must be naga's layout of its WGSL: every field at the same offset, and the same size,
/// so that a binding's elements and a host slice's agree. A mismatch names the field and
/// the padding field to add.
pub fn struct_layout(cx: &Ctxt, st: &syn::ItemStruct, def: &StructDef) {
    let source = struct_decl(def);
    let name = wgsl_struct_name(def);
    let (offsets, size) = match crate::validate::struct_layout(&source, &name) {
        Ok(l) => l,
        Err(report) => {
            cx.error(
                st.ident.span(),
                format!(
                    "naga rejected the WGSL of `{}`; this is a bug in forge_kernel:\n{report}",
                    def.name
                ),
            );
            return;
        }
    };
    let idents: Vec<&syn::Ident> = st.fields.iter().filter_map(|f| f.ident.as_ref()).collect();
    let pad = |words: u32| {
        let taken = |n: &str| def.fields.iter().any(|f| f.name == n);
        let name = (0..)
            .map(|i| format!("_pad{i}"))
            .find(|n| !taken(n))
            .unwrap_or_default();
        if words == 1 {
            format!("`pub {name}: u32,`")
        } else {
            format!("`pub {name}: [u32; {words}],`")
        }
    };
    for (i, f) in def.fields.iter().enumerate() {
        let (host, wgsl) = (f.offset, offsets.get(i).copied().unwrap_or(f.offset));
        let next_host = def.fields.get(i + 1).map(|n| n.offset).unwrap_or(def.size);
        let next_wgsl = offsets.get(i + 1).copied().unwrap_or(size);
        let ty = ty_text(&f.ty, &[]);
        if wgsl != host {
            cx.error(
                idents.get(i).map(|i| i.span()).unwrap_or_else(|| st.ident.span()),
                format!(
                    "`{}` is at byte {host} of the host struct but at byte {wgsl} in WGSL, which aligns a `{ty}` to {} bytes; add {} before `{}`",
                    f.name,
                    wgsl_align(&f.ty),
                    pad((wgsl - host) / 4),
                    f.name
                ),
            );
            return;
        }
        // An array of `vec3`s: WGSL's stride is 16 bytes, the host's 12.
        if let (Ty::Array(e, _), Some(_)) = (&f.ty, def.fields.get(i + 1)) {
            if next_wgsl - wgsl != next_host - host && matches!(**e, Ty::Vector(_, 3)) {
                cx.error(
                    idents.get(i).map(|i| i.span()).unwrap_or_else(|| st.ident.span()),
                    format!("`{}`'s elements are 16 bytes apart in WGSL but 12 on the host; use 4-component vectors, `[{}; N]`", f.name, ty_text(&Ty::Vector(e.component().unwrap_or(Scalar::F32), 4), &[])),
                );
                return;
            }
        }
    }
    if size != def.size {
        let last = def.fields.last().map(|f| f.name.as_str()).unwrap_or("");
        let stride = matches!(def.fields.last().map(|f| &f.ty), Some(Ty::Array(e, _)) if matches!(**e, Ty::Vector(_, 3)));
        if stride {
            cx.error(
                idents.last().map(|i| i.span()).unwrap_or_else(|| st.ident.span()),
                format!("`{last}`'s elements are 16 bytes apart in WGSL but 12 on the host; use 4-component vectors"),
            );
            return;
        }
        let align = def
            .fields
            .iter()
            .map(|f| wgsl_align(&f.ty))
            .max()
            .unwrap_or(4);
        cx.error(
            st.ident.span(),
            format!(
                "`{}` is {} bytes on the host but {size} in WGSL, which rounds a struct's size up to a multiple of its alignment ({align} bytes); add {} after `{last}`",
                def.name,
                def.size,
                pad((size - def.size) / 4)
            ),
        );
    }
}

/// A read-only binding (`&[T; LEN]`) is written.
fn read_only_not_written(cx: &Ctxt, k: &Kernel<'_>) {
    for (b, span) in assigned_bindings(k) {
        let binding = &k.bindings[b];
        if binding.access == Access::Read {
            cx.error(
                span,
                format!(
                    "cannot write to `{}`, a read-only binding; declare it `&mut [{}; {}]` to update it in place, or `#[out]` for a pure output",
                    binding.name,
                    binding.elem_text,
                    binding.len_text
                ),
            );
        }
    }
}

/// An `#[out]` binding is never written: its result would be all zeros.
fn outputs_written(cx: &Ctxt, k: &Kernel<'_>) {
    let written = assigned_bindings(k);
    for (i, b) in k.bindings.iter().enumerate() {
        if b.access == Access::Out && !b.atomic && !written.iter().any(|(w, _)| *w == i) {
            cx.error(
                b.span,
                format!(
                    "`#[out]` binding `{}` is never written; write it with `{}[i] = ...`, or make it an input with `&[{}; {}]`",
                    b.name,
                    b.name,
                    b.elem_text,
                    b.len_text
                ),
            );
        }
    }
}

/// More storage bindings than every adapter supports.
fn storage_binding_limit(cx: &Ctxt, k: &Kernel<'_>) {
    if let Some(b) = k.bindings.get(PORTABLE_STORAGE_BUFFERS) {
        cx.error(
            b.span,
            format!(
                "this kernel has {} storage bindings, over the portable limit of {PORTABLE_STORAGE_BUFFERS} (`max_storage_buffers_per_shader_stage`); pack several arrays into one binding",
                k.bindings.len()
            ),
        );
    }
}

/// `debug_print!`: one value per placeholder, each a type the print buffer holds (a
/// 32-bit scalar or `bool`, or a vector of them printed with `{:?}`, as Rust prints
/// arrays), and room for the print buffer under the portable storage-binding limit.
fn prints(cx: &Ctxt, k: &Kernel<'_>) {
    let mut first = None;
    walk_stmts(&k.body, &mut |s| {
        let Stmt::Print { format, args, span } = s else {
            return;
        };
        first.get_or_insert(*span);
        let f = &k.prints[*format];
        if let Some(extra) = args.get(f.debug.len()) {
            cx.error_range(
                extra.span,
                extra.end,
                format!(
                    "this value has no placeholder: the format string has {} `{{}}`; add one, or remove the value",
                    f.debug.len()
                ),
            );
        } else if args.len() < f.debug.len() {
            cx.error(
                f.span,
                format!(
                    "this format string has {} placeholder(s) but {} value(s) follow it; give one value per `{{}}`",
                    f.debug.len(),
                    args.len()
                ),
            );
        }
        for (a, debug) in args.iter().zip(&f.debug) {
            let scalar_ok =
                |s: Scalar| matches!(s, Scalar::U32 | Scalar::I32 | Scalar::F32 | Scalar::Bool);
            match &a.ty {
                Ty::Scalar(s) if scalar_ok(*s) => {}
                Ty::Vector(s, _) if scalar_ok(*s) && *debug => {}
                Ty::Vector(s, _) if scalar_ok(*s) => cx.error_range(
                    a.span,
                    a.end,
                    "a vector prints with `{:?}`, as Rust prints arrays; write `{:?}` for it",
                ),
                t => cx.error_range(
                    a.span,
                    a.end,
                    format!(
                        "`debug_print!` prints `u32`, `i32`, `f32`, `bool` and vectors of them, but this value is `{}`; convert it (`x as f32`) or print its parts",
                        ty_text(t, &k.options.knobs)
                    ),
                ),
            }
        }
    });
    if let Some(span) = first {
        if k.bindings.len() >= PORTABLE_STORAGE_BUFFERS {
            cx.error(
                span,
                format!(
                    "`debug_print!` needs a storage binding of its own, and this kernel already has {} (the portable limit is {PORTABLE_STORAGE_BUFFERS}); remove the print or a binding",
                    k.bindings.len()
                ),
            );
        }
    }
}

/// The workgroup size, declared or tuned, is zero or larger than any adapter runs. One rule
/// for both: the adapter decides (`max_compute_invocations_per_workgroup`, at least 256 on
/// every adapter wgpu supports and at most 1024), so the runtime checks it when a schedule
/// runs, and the tuner skips candidates over it; at compile time only sizes that no adapter
/// can run are errors.
fn workgroup_size(cx: &Ctxt, k: &Kernel<'_>) {
    // A 2-D or 3-D shape is `grid_shapes`'s.
    if let [wg] = k.options.workgroup[..] {
        if wg == 0 || wg > MAX_WORKGROUP_SIZE {
            cx.error(
                k.options.workgroup_span,
                format!("`workgroup = {wg}` is out of range; use 1 to {MAX_WORKGROUP_SIZE} (the most any adapter runs; {PORTABLE_WORKGROUP_SIZE} or less runs on every adapter)"),
            );
        }
    }
    for (axis, v, span) in &k.options.tune_values {
        if *v == 0 {
            cx.error(
                *span,
                format!("`tune({axis} = ..)` contains 0; every value must be at least 1"),
            );
        } else if *axis == "workgroup" && *v > MAX_WORKGROUP_SIZE {
            cx.error(
                *span,
                format!("`tune(workgroup = ..)` contains {v}, over {MAX_WORKGROUP_SIZE}, the most any adapter runs; use 1 to {MAX_WORKGROUP_SIZE} (the tuner skips sizes over this adapter's own limit)"),
            );
        }
    }
}

/// `tune(keep = ..)`: it evaluates at every combination of the candidates, keeps at least
/// one, and keeps the declared schedule where that is a combination (dropping it would
/// leave the kernel's own schedule outside its space).
fn tune_keep_valid(cx: &Ctxt, k: &Kernel<'_>) {
    let Some(keep) = &k.options.tune_keep else {
        return;
    };
    let product = k.tune_product();
    for p in &product {
        if let Err(msg) = keep.expr.eval(p) {
            cx.error_spanned(
                &keep.syn,
                format!(
                    "`tune(keep = ..)` cannot be evaluated at {}: {msg}",
                    p.describe(&k.options.knobs)
                ),
            );
            return;
        }
    }
    if !product.iter().any(|p| k.keeps(p)) {
        cx.error_spanned(
            &keep.syn,
            format!("`tune(keep = {})` drops every combination of the tuning space; the kernel would have no schedule to tune", keep.text),
        );
        return;
    }
    let declared = k.default_schedule();
    if product.contains(&declared) && !k.keeps(&declared) {
        cx.error_spanned(
            &keep.syn,
            format!(
                "`tune(keep = {})` drops the declared schedule ({}); declare one that it keeps",
                keep.text,
                declared.describe(&k.options.knobs)
            ),
        );
    }
}

/// The largest `max_compute_workgroup_size_z` any adapter has (D3D12 and Metal stop at 64).
pub const MAX_WORKGROUP_Z: u32 = 64;

/// A 2-D or 3-D grid's workgroups: every workgroup, declared or tuned, has as many extents
/// as `threads` has dimensions; no shape is one that no adapter runs (over
/// [`MAX_WORKGROUP_SIZE`] invocations, or a z extent over [`MAX_WORKGROUP_Z`]); and
/// `ITEMS`, which spreads a 1-D grid, stays 1.
fn grid_shapes(cx: &Ctxt, k: &Kernel<'_>) {
    let dims = k.dims();
    let threads_form = [
        "`threads = n`",
        "`threads = (w, h)`",
        "`threads = (w, h, d)`",
    ][dims - 1];
    let o = &k.options;
    if o.threads.is_none() && o.workgroup.len() > 1 {
        cx.error(
            o.workgroup_span,
            format!("a {}-D `workgroup` needs a grid of as many dimensions; add {threads_form} to `#[forge_kernel(...)]`", o.workgroup.len()),
        );
        return;
    }
    // A shape with the kernel's dimensions and the same invocations, for the hint.
    let reshaped = |w: &[u32]| -> String {
        let mut out: Vec<u32> = w.iter().copied().take(dims).collect();
        while out.len() < dims {
            out.push(1);
        }
        let rest: u32 = w.iter().skip(dims).product();
        if let Some(last) = out.last_mut() {
            *last = last.saturating_mul(rest);
        }
        shape_text(&out)
    };
    let check_one = |w: &[u32], span: Span, declared: bool| {
        let what = if declared {
            format!("`workgroup = {}`", shape_text(w))
        } else {
            format!("the tuned workgroup `{}`", shape_text(w))
        };
        if w.len() != dims {
            let fix = if dims == 1 {
                format!("a single size, such as `{}`", reshaped(w))
            } else {
                format!("{dims} extents, such as `{}`", reshaped(w))
            };
            cx.error(
                span,
                format!(
                    "{what} is {}-D, but the grid ({threads_form}) is {dims}-D; give the workgroup {fix}",
                    w.len()
                ),
            );
            return;
        }
        if dims == 1 {
            return;
        }
        let product = w.iter().fold(1u64, |a, b| a * *b as u64);
        if w.contains(&0) {
            cx.error(
                span,
                format!(
                    "{what} `{}` has an extent of 0; every extent must be at least 1",
                    shape_text(w)
                ),
            );
        } else if product > MAX_WORKGROUP_SIZE as u64 {
            let mut fit = w.to_vec();
            while fit.iter().fold(1u64, |a, b| a * *b as u64) > MAX_WORKGROUP_SIZE as u64 {
                let big = (0..fit.len()).max_by_key(|i| fit[*i]).unwrap_or(0);
                fit[big] = fit[big].div_ceil(2);
            }
            cx.error(
                span,
                format!(
                    "{what} has {product} invocations, over {MAX_WORKGROUP_SIZE}, the most any adapter runs; use a shape of at most {MAX_WORKGROUP_SIZE}, such as `{}` ({PORTABLE_WORKGROUP_SIZE} or less runs on every adapter)",
                    shape_text(&fit)
                ),
            );
        } else if dims == 3 && w[2] > MAX_WORKGROUP_Z {
            cx.error(
                span,
                format!(
                    "{what} has a z extent of {}, over {MAX_WORKGROUP_Z}, the most any adapter runs in z; move the extent to x or y, such as `{}`",
                    w[2],
                    shape_text(&[w[0], w[1].saturating_mul(w[2].div_ceil(MAX_WORKGROUP_Z)), MAX_WORKGROUP_Z.min(w[2])])
                ),
            );
        }
    };
    if o.workgroup_given || dims > 1 {
        check_one(&o.workgroup, o.workgroup_span, true);
    }
    for (w, span) in &o.tune_workgroup {
        check_one(w, *span, false);
    }
    if dims > 1 {
        for (axis, v, span) in &o.tune_values {
            if *axis == "items" && *v != 1 {
                cx.error(
                    *span,
                    format!("`tune(items = ..)` contains {v}, but `ITEMS` spreads a 1-D grid only; a {dims}-D grid gives each invocation one item, so leave `items` out of `tune(..)`"),
                );
            }
        }
    }
}

/// The names of the cooperative-matrix operations, as `report` sees them.
const COOP_OPS: [&str; 5] = [
    "load_row_major",
    "load_col_major",
    "store_row_major",
    "store_col_major",
    "mul_add",
];

/// The most workgroup memory any adapter offers a workgroup: NVIDIA's opt-in 227 KiB
/// (Hopper), past Vulkan's 48 KiB there and WebGPU's portable 16 KiB.
pub const MAX_WORKGROUP_BYTES: u64 = 227 * 1024;

/// Workgroup memory over the limits: the declared schedule's over the portable limit (it
/// runs everywhere, the browser included), a schedule of the tuning space's over what any
/// adapter offers. Between the two, each adapter's own limit decides at run time: the tuner
/// and the certifier skip, with the reason, a schedule the adapter cannot hold
/// (`ForgeRuntime::check_schedule`).
fn workgroup_memory_limit(cx: &Ctxt, k: &Kernel<'_>) {
    let declared = k.default_schedule();
    for s in k.schedules() {
        let (limit, what) = if s == declared {
            (PORTABLE_WORKGROUP_BYTES, "the portable limit")
        } else {
            (MAX_WORKGROUP_BYTES, "the most any adapter offers")
        };
        // WGSL's row operations take theirs first (`Kernel::row_scratch_bytes`).
        let mut total = k.row_scratch_bytes(&s);
        for l in k.locals.iter().filter(|l| l.shared) {
            let Some(bytes) = l.ty.workgroup_bytes(&k.structs, &s) else {
                cx.error(
                    l.span,
                    format!("the length of this workgroup array overflows `u32` or divides by zero with {}", s.describe(&k.options.knobs)),
                );
                return;
            };
            total += bytes;
            if total > limit {
                let hint = if s == declared {
                    "; use smaller tiles in the declared schedule (schedules of `tune(..)` may go past it, up to each adapter's own limit)"
                } else {
                    "; use smaller tiles"
                };
                cx.error(
                    l.span,
                    format!(
                        "workgroup memory reaches {total} bytes with {}, over {what} of {limit} bytes (`max_compute_workgroup_storage_size`){hint}",
                        s.describe(&k.options.knobs)
                    ),
                );
                return;
            }
        }
    }
}

/// The most bytes one local (function-address-space) array may take per invocation. A
/// private array lives in every invocation's registers or scratch: past a few KiB a driver
/// spills it, and a 16 MiB one made lavapipe's pipeline creation take 6 GB and 300 s. This
/// is the portable workgroup-memory limit, as large as a tile a whole workgroup shares.
pub const MAX_PRIVATE_ARRAY_BYTES: u64 = 16384;

/// A local array over [`MAX_PRIVATE_ARRAY_BYTES`] for some schedule of the tuning space, in
/// the kernel or a helper it calls.
fn private_array_limit(cx: &Ctxt, k: &Kernel<'_>) {
    let helpers = k.used_helpers();
    let locals = k
        .locals
        .iter()
        .chain(helpers.iter().flat_map(|h| k.helpers[*h].locals.iter()));
    for l in locals.filter(|l| !l.shared && matches!(l.ty, Ty::Array(..))) {
        let worst = k
            .schedules()
            .iter()
            .map(|s| l.ty.workgroup_bytes(&k.structs, s).unwrap_or(u64::MAX))
            .max()
            .unwrap_or(0);
        if worst > MAX_PRIVATE_ARRAY_BYTES {
            cx.error(
                l.span,
                format!(
                    "this local array takes {} bytes per invocation, over the limit of {MAX_PRIVATE_ARRAY_BYTES} bytes for a private array; share it across the workgroup with `#[shared]`, or keep it in a storage binding",
                    if worst == u64::MAX { "more than 2^64".to_string() } else { worst.to_string() }
                ),
            );
        }
    }
}

/// Workgroup memory starts zeroed in WGSL; a non-zero initial value would be silently
/// ignored, so it is rejected.
fn workgroup_memory_zeroed(cx: &Ctxt, k: &Kernel<'_>) {
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Let {
            local,
            init: Some(e),
            ..
        } = s
        {
            if !k.locals[*local].shared {
                return;
            }
            let zero = match &e.kind {
                ExprKind::ArrayRepeat(v) => v.is_zero(),
                _ => false,
            };
            if !zero {
                cx.error(e.span, "workgroup memory starts zeroed; initialise it with zeros, such as `[0.0f32; WG]`, and write values in the kernel");
            }
        }
    });
}

/// The number of invocations must be known.
fn has_threads(cx: &Ctxt, k: &Kernel<'_>) {
    if k.threads_len().is_none() {
        cx.error(
            k.func.sig.ident.span(),
            "cannot tell how many invocations to launch; add `threads = EXPR` to `#[forge_kernel(...)]`",
        );
    }
}

/// A kernel without a writable binding computes nothing observable.
fn writes_something(cx: &Ctxt, k: &Kernel<'_>) {
    if !k.bindings.iter().any(|b| b.access != Access::Read) {
        cx.error(
            k.func.sig.ident.span(),
            "this kernel has no writable binding, so its work is lost; add an `#[out]` or `&mut` binding",
        );
    }
}

/// A `case(..)` must describe work the certifier can run: every LEN and `threads`
/// evaluates, and no binding is empty (the certifier would skip such a case). Its values
/// fit their parameters: `parse::resolve_cases` checked them.
fn cases_valid(cx: &Ctxt, k: &Kernel<'_>) {
    // A case is checked at the declared schedule (the certifier runs it at each).
    let declared = k.default_schedule();
    let sched = |name: &str| sched_const(k, name).map_or(0, |c| declared.get(c));
    for case in &k.options.cases {
        // `parse::resolve_cases` reported the values that do not fit.
        let Some(vals) = &case.resolved else {
            continue;
        };
        let given: Vec<String> = k
            .scalars
            .iter()
            .zip(vals)
            .map(|(s, v)| match v {
                CaseValue::U32(x) => format!("{} = {x}", s.name),
                CaseValue::I32(x) => format!("{} = {x}", s.name),
                CaseValue::F32(x) => format!("{} = {x:?}", s.name),
            })
            .collect();
        let given = given.join(", ");
        for b in &k.bindings {
            match eval_len(&b.len, vals, &sched) {
                Err(why) => cx.error(
                    case.span,
                    format!("with this case ({given}), the length `{}` of `{}` cannot be evaluated: {why}", b.len_text, b.name),
                ),
                Ok(v) if v <= 0 => cx.error(
                    case.span,
                    format!("with this case ({given}), the length `{}` of `{}` is {v}, so the certifier would skip it; give values that make every binding at least one element long", b.len_text, b.name),
                ),
                Ok(_) => {}
            }
        }
        for (t, text) in k.threads_dims() {
            let what = if k.dims() > 1 {
                format!("`{text}` of `threads = {}`", k.threads_text())
            } else {
                format!("`threads = {}`", k.threads_text())
            };
            match eval_threads(t, vals, &sched) {
                Err(why) => cx.error(
                    case.span,
                    format!("with this case ({given}), {what} cannot be evaluated: {why}"),
                ),
                Ok(0) => cx.error(
                    case.span,
                    format!("with this case ({given}), {what} is 0, so nothing would run; give values that make it at least 1"),
                ),
                Ok(_) => {}
            }
        }
    }
}

/// `inputs(b = ..)` names inputs: bindings the kernel reads, of `u32` or `i32`, each once,
/// structured after bindings that exist.
/// `indirect = count[0]` reads a `u32` the kernel only reads (an earlier launch wrote it),
/// and sizes a one-dimensional grid, which `threads` bounds.
fn indirect_valid(cx: &Ctxt, k: &Kernel<'_>) {
    let Some((name, _, span)) = &k.options.indirect else {
        return;
    };
    match k.bindings.iter().find(|b| b.name == *name) {
        None => {
            let names: Vec<String> = k.bindings.iter().map(|b| format!("`{}`", b.name)).collect();
            cx.error(*span, format!("`indirect` names `{name}`, which is no binding of this kernel; its bindings are {}", names.join(", ")));
        }
        Some(b) if b.access != Access::Read || b.atomic => cx.error(
            *span,
            format!("`{name}` is a binding the kernel writes: the count of invocations is read before any of them runs, so it comes from a read-only binding (`{name}: &[u32; LEN]`) that an earlier launch wrote"),
        ),
        Some(b) if b.width != 1 || b.strukt.is_some() || b.elem != Scalar::U32 => cx.error(
            *span,
            format!("`{name}` holds `{}`: the count of invocations is a `u32`", b.elem_text),
        ),
        Some(_) => {}
    }
    if k.dims() > 1 {
        cx.error(
            *span,
            "`indirect` sizes a one-dimensional grid (`threads = n`, its bound): a 2-D or 3-D grid's extents are known on the host",
        );
    }
}

fn inputs_valid(cx: &Ctxt, k: &Kernel<'_>) {
    let names: Vec<String> = k.bindings.iter().map(|b| format!("`{}`", b.name)).collect();
    for (i, (name, kind, span)) in k.options.inputs.iter().enumerate() {
        if k.options.inputs[..i].iter().any(|(n, _, _)| n == name) {
            cx.error(
                *span,
                format!("`{name}` is given an input structure twice; keep one"),
            );
        }
        match k.bindings.iter().find(|b| b.name == *name) {
            None => cx.error(*span, format!("`inputs` names `{name}`, which is no binding of this kernel; its bindings are {}", names.join(", "))),
            Some(b) if b.access == Access::Out => cx.error(*span, format!("`{name}` is an `#[out]` binding, which the kernel writes: its certification inputs are the ones it reads")),
            Some(b) if b.width != 1 || b.atomic || !matches!(b.elem, Scalar::U32 | Scalar::I32) => cx.error(
                *span,
                format!("`{name}` holds `{}`: structured inputs (permutations, offsets, indices) are `u32` or `i32`", b.elem_text),
            ),
            Some(_) => {}
        }
        let other = match kind {
            InputKind::OffsetsOf(o) | InputKind::IndicesOf(o) => Some(o),
            InputKind::Permutation => None,
        };
        if let Some(o) = other {
            if !k.bindings.iter().any(|b| b.name == *o) {
                cx.error(*span, format!("`{name}`'s inputs are sized after `{o}`, which is no binding of this kernel; its bindings are {}", names.join(", ")));
            }
        }
    }
    if k.options.inputs_fn.is_some() && !k.options.inputs.is_empty() {
        cx.error(k.options.inputs[0].2, "`inputs = path` gives every input, so it does not combine with `inputs(..)`; describe the structure in the function");
    }
}

/// The schedule constant a LEN names: `WG`, `ITEMS`, `VEC`, `WG_X`/`WG_Y`/`WG_Z` (in a
/// 2-D or 3-D grid), or a knob.
fn sched_const(k: &Kernel<'_>, name: &str) -> Option<SchedConst> {
    crate::names::sched_const(name, &k.options.knobs, k.dims() > 1)
}

/// Every schedule constant a LEN, `threads` or `cost` names exists.
fn len_sched_names(cx: &Ctxt, k: &Kernel<'_>) {
    fn names<'e>(e: &'e LenExpr, out: &mut Vec<&'e str>) {
        match e {
            LenExpr::Sched(n) => out.push(n),
            LenExpr::Binary(_, a, b) | LenExpr::Method(_, a, b) => {
                names(a, out);
                names(b, out);
            }
            LenExpr::Lit(_) | LenExpr::Param(_) => {}
        }
    }
    let knobs: Vec<String> = k
        .options
        .knobs
        .iter()
        .map(|kn| format!("`{}`", kn.name))
        .collect();
    let known = if knobs.is_empty() {
        "`WG`, `ITEMS` and `VEC` (and knobs, declared with `knobs(NAME = value)`)".to_string()
    } else {
        format!("`WG`, `ITEMS`, `VEC` and the knobs {}", knobs.join(", "))
    };
    let check = |e: &LenExpr, span: proc_macro2::Span, what: &str| {
        let mut found = Vec::new();
        names(e, &mut found);
        for n in found {
            if sched_const(k, n).is_none() {
                cx.error(span, format!("unknown constant `{n}` in {what}; a length expression names scalar parameters and the schedule's constants {known}"));
            }
        }
    };
    for b in &k.bindings {
        check(&b.len, b.span, &format!("the length of `{}`", b.name));
    }
    if let Some((dims, _, span)) = &k.options.threads {
        for (e, _) in dims {
            check(e, *span, "`threads`");
        }
    }
}

/// A LEN expression for a case, as the runtime evaluates it (`oracle::len`): in `i128`,
/// checked.
fn eval_len(
    e: &LenExpr,
    vals: &[CaseValue],
    sched: &dyn Fn(&str) -> u32,
) -> Result<i128, &'static str> {
    Ok(match e {
        LenExpr::Lit(v) => *v as i128,
        LenExpr::Sched(name) => sched(name) as i128,
        LenExpr::Param(i) => match vals[*i] {
            CaseValue::U32(v) => v as i128,
            CaseValue::I32(v) => v as i128,
            CaseValue::F32(_) => return Err("a float parameter"),
        },
        LenExpr::Binary(op, a, b) => {
            let (a, b) = (eval_len(a, vals, sched)?, eval_len(b, vals, sched)?);
            match op {
                LenOp::Add => a.checked_add(b).ok_or("overflow")?,
                LenOp::Sub => a.checked_sub(b).ok_or("overflow")?,
                LenOp::Mul => a.checked_mul(b).ok_or("overflow")?,
                LenOp::Div => a.checked_div(b).ok_or("division by zero")?,
                LenOp::Rem => a.checked_rem(b).ok_or("division by zero")?,
            }
        }
        LenExpr::Method(m, a, b) => {
            let (a, b) = (eval_len(a, vals, sched)?, eval_len(b, vals, sched)?);
            match m {
                LenMethod::DivCeil if b == 0 => return Err("division by zero"),
                LenMethod::DivCeil if a < 0 || b < 0 => return Err("div_ceil of a negative value"),
                LenMethod::DivCeil => a / b + i128::from(a % b != 0),
                LenMethod::Min => a.min(b),
                LenMethod::Max => a.max(b),
            }
        }
    })
}

/// `threads` for a case, as the runtime evaluates it (`oracle::threads`): every step in
/// `u32`, an `i32` parameter taken as its bits.
fn eval_threads(
    e: &LenExpr,
    vals: &[CaseValue],
    sched: &dyn Fn(&str) -> u32,
) -> Result<u32, &'static str> {
    const OVER: &str = "a step overflows u32, the type the GPU evaluates it in";
    Ok(match e {
        LenExpr::Lit(v) => u32::try_from(*v).map_err(|_| OVER)?,
        LenExpr::Sched(name) => sched(name),
        LenExpr::Param(i) => match vals[*i] {
            CaseValue::U32(v) => v,
            CaseValue::I32(v) => v as u32,
            CaseValue::F32(_) => return Err("a float parameter"),
        },
        LenExpr::Binary(op, a, b) => {
            let (a, b) = (eval_threads(a, vals, sched)?, eval_threads(b, vals, sched)?);
            match op {
                LenOp::Add => a.checked_add(b).ok_or(OVER)?,
                LenOp::Sub => a.checked_sub(b).ok_or("a step is negative")?,
                LenOp::Mul => a.checked_mul(b).ok_or(OVER)?,
                LenOp::Div => a.checked_div(b).ok_or("division by zero")?,
                LenOp::Rem => a.checked_rem(b).ok_or("division by zero")?,
            }
        }
        LenExpr::Method(m, a, b) => {
            let (a, b) = (eval_threads(a, vals, sched)?, eval_threads(b, vals, sched)?);
            match m {
                LenMethod::DivCeil if b == 0 => return Err("division by zero"),
                LenMethod::DivCeil => a / b + u32::from(a % b != 0),
                LenMethod::Min => a.min(b),
                LenMethod::Max => a.max(b),
            }
        }
    })
}

/// Array values (`[x; N]`, `[a, b]`) only initialise locals: WGSL has no array repeat
/// expression, so the emitters expand them at the `let`.
fn array_values_only_in_let(cx: &Ctxt, k: &Kernel<'_>) {
    let check_expr = |e: &Expr, top_ok: bool| {
        let mut first = true;
        walk_expr(e, &mut |x| {
            let top = std::mem::take(&mut first);
            if matches!(x.kind, ExprKind::ArrayRepeat(_) | ExprKind::ArrayList(_))
                && !(top && top_ok)
            {
                cx.error(
                    x.span,
                    "array values can only initialise a `let`; declare the array first",
                );
            }
        });
    };
    // A `let`'s array value may nest (`[[0.0f32; 33]; 32]`): its elements are array
    // values too, down to the first that is not.
    fn let_value(e: &Expr, check_expr: &dyn Fn(&Expr, bool)) {
        match &e.kind {
            ExprKind::ArrayRepeat(inner) => let_value(inner, check_expr),
            ExprKind::ArrayList(items) => items.iter().for_each(|x| let_value(x, check_expr)),
            _ => check_expr(e, false),
        }
    }
    walk_stmts(&k.body, &mut |s| match s {
        Stmt::Let { init: Some(e), .. } => let_value(e, &check_expr),
        _ => stmt_exprs(s, &mut |e| check_expr(e, false)),
    });
}

/// `x[i].store(v)` gives no value, so it must stand alone as a statement.
fn atomic_store_is_a_statement(cx: &Ctxt, k: &Kernel<'_>) {
    walk_stmts(&k.body, &mut |s| {
        let top = match s {
            Stmt::Eval { expr, .. } => Some(expr as *const Expr),
            _ => None,
        };
        stmt_exprs(s, &mut |e| {
            walk_expr(e, &mut |x| {
                if let ExprKind::Atomic {
                    op: AtomicOp::Store,
                    ..
                } = x.kind
                {
                    if top != Some(x as *const Expr) {
                        cx.error(
                            x.span,
                            "`store` gives no value; write it as a statement: `a[i].store(v);`",
                        );
                    }
                }
            })
        });
    });
}

/// A workgroup array used atomically is made of atomics, as an atomic binding is: every
/// access must be atomic.
fn atomic_arrays_only_atomically(cx: &Ctxt, k: &Kernel<'_>) {
    let plain = |id: LocalId, span: Span| {
        let l = &k.locals[id];
        if l.atomic {
            cx.error(
                span,
                format!("`{}` is used atomically elsewhere, so every access must be atomic; read it with `{}[i].load()` and write it with `{}[i].store(v)`", l.name, l.name, l.name),
            );
        }
    };
    // The kernel's own plain accesses of an atomic binding are refused as it is lowered;
    // these come from a helper's array of atomics given the binding.
    let plain_binding = |b: usize, span: Span| {
        let name = &k.bindings[b].name;
        if k.bindings[b].atomic {
            cx.error(
                span,
                format!("`{name}` is atomic, so every access must be atomic; read it with `{name}[i].load()` and write it with `{name}[i].store(v)`"),
            );
        }
    };
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::Assign { place, span, .. } | Stmt::AsyncCopy { place, span, .. } = s {
            match place.root() {
                Place::LocalIndex(id, _) | Place::Local(id) => plain(*id, *span),
                Place::Binding(b, _) => plain_binding(*b, *span),
                _ => {}
            }
        }
        stmt_exprs(s, &mut |e| {
            walk_expr(e, &mut |x| match x.kind {
                ExprKind::Local(id) => plain(id, x.span),
                ExprKind::LoadBinding(b, _) => plain_binding(b, x.span),
                _ => {}
            })
        });
    });
}

/// An asynchronous copy reads a storage binding and writes workgroup memory. The kernel's
/// own copies are held to it as they are lowered; a helper's, written on its reference
/// parameters, once they are inlined with what the call gave them.
fn async_copies_into_workgroup_memory(cx: &Ctxt, k: &Kernel<'_>) {
    walk_stmts(&k.body, &mut |s| {
        if let Stmt::AsyncCopy { place, value, span } = s {
            if !matches!(value.kind, ExprKind::LoadBinding(..)) {
                cx.error_range(
                    value.span,
                    value.end,
                    format!("{ASYNC_COPY_FORM}: {ASYNC_COPY_FROM_STORAGE}"),
                );
            }
            let shared = match place {
                Place::LocalIndex(id, _) => k.locals[*id].shared,
                _ => false,
            };
            if !shared {
                cx.error(
                    *span,
                    format!("{ASYNC_COPY_FORM}: {ASYNC_COPY_INTO_SHARED}"),
                );
            }
        }
    });
}

/// A cooperative matrix loads from and stores to a binding or workgroup memory. The kernel's
/// own operations are held to it as they are lowered; a helper's, written on its reference
/// parameters, once they are inlined with what the call gave them.
fn coop_memory_is_shared_or_bound(cx: &Ctxt, k: &Kernel<'_>) {
    walk_exprs(&k.body, &mut |x| {
        if let ExprKind::Coop {
            op,
            target: Some(AtomicTarget::Shared(l)),
            ..
        } = &x.kind
        {
            if !k.locals[*l].shared {
                cx.error_range(
                    x.span,
                    x.end,
                    format!(
                        "`{}` is given `{}`, a local array; a cooperative matrix's `{}` works on a binding or a `#[shared]` array",
                        op.name(),
                        k.locals[*l].name,
                        op.name()
                    ),
                );
            }
        }
    });
}

/// `Atomic<f32>` has the arithmetic and ordering methods: WGSL's atomics hold integers, so a
/// float atomic is a `u32` updated by a compare-exchange loop, and a bitwise method would
/// act on its bits.
fn float_atomics_arithmetic(cx: &Ctxt, k: &Kernel<'_>) {
    walk_exprs(&k.body, &mut |x| {
        let ExprKind::Atomic { op, target, .. } = &x.kind else {
            return;
        };
        let elem = match target {
            AtomicTarget::Binding(b) => Some(k.bindings[*b].elem),
            AtomicTarget::Shared(l) => match &k.locals[*l].ty {
                Ty::Array(e, _) => e.scalar(),
                _ => None,
            },
        };
        if let Some(s) = elem.filter(|s| s.is_float() && !op.on_float()) {
            cx.error_range(
                        x.span,
                        x.end,
                        format!(
                            "`{}` is not defined for `Atomic<{}>`, whose value is a float; it has {}. For bit operations keep the bits in an `Atomic<u32>` and store `x.to_bits()`",
                            op.name(),
                            s.wgsl(),
                            AtomicOp::list_for(s)
                        ),
                    );
        }
    });
}

/// GPUs compute the transcendental functions on 16- and 32-bit floats only (SPIR-V's
/// GLSL.std.450 defines `Sin`, `Exp`, `Pow` and the others for no wider type).
fn f64_math_on_gpus(cx: &Ctxt, k: &Kernel<'_>) {
    let mut bodies: Vec<&Block> = vec![&k.body];
    for h in k.used_helpers() {
        bodies.push(&k.helpers[h].body);
    }
    for body in bodies {
        walk_exprs(body, &mut |x| {
            let ExprKind::Math(f, args) = &x.kind else {
                return;
            };
            if args.first().and_then(|a| a.ty.component()) == Some(Scalar::F64) && !f.on_f64() {
                let name = f.name();
                cx.error_range(
                            x.span,
                            x.end,
                            format!(
                                "`{name}` is not available on `f64`: GPUs compute it on 16- and 32-bit floats only (SPIR-V's GLSL.std.450 has no 64-bit form); compute it in `f32`, as in `(x as f32).{name}() as f64`"
                            ),
                        );
            }
        });
    }
}

/// `&&` and `||` skip their right side for some invocations: a subgroup operation there
/// would not be reached by the whole subgroup.
fn subgroup_ops_not_short_circuited(cx: &Ctxt, k: &Kernel<'_>) {
    walk_exprs(&k.body, &mut |x| {
        let ExprKind::Binary(op @ (BinOp::And | BinOp::Or), _, rhs) = &x.kind else {
            return;
        };
        walk_expr(rhs, &mut |y| {
            if let ExprKind::Subgroup { op: sg, .. } = y.kind {
                let name = sg.name();
                cx.error(
                            y.span,
                            format!(
                                "`{name}` on the right of `{}` does not run for every invocation, since `{}` skips its right side; call it first, `let s = {name}(..);`, and use `s` in the condition",
                                op.wgsl(),
                                op.wgsl()
                            ),
                        );
            }
        });
    });
}

/// WGSL's `subgroupBroadcast` takes a constant lane; a lane known only at run time is a
/// shuffle.
fn subgroup_broadcast_lane_constant(cx: &Ctxt, k: &Kernel<'_>) {
    fn constant(e: &Expr) -> bool {
        match &e.kind {
            ExprKind::IntLit(_) | ExprKind::Sched(_) => true,
            ExprKind::Binary(op, a, b) => {
                !op.is_comparison() && !op.is_logical() && constant(a) && constant(b)
            }
            ExprKind::Cast(a) => constant(a),
            _ => false,
        }
    }
    walk_exprs(&k.body, &mut |x| {
        if let ExprKind::Subgroup {
            op: SubgroupOp::Broadcast,
            args,
            ..
        } = &x.kind
        {
            if let Some(lane) = args.get(1).filter(|l| !constant(l)) {
                cx.error_range(
                            lane.span,
                            lane.end,
                            "the lane of `subgroup_broadcast` must be a constant, such as `0` or `WG - 1`; for a lane computed at run time use `subgroup_shuffle(value, lane)`",
                        );
            }
        }
    });
}

/// Uniformity: where barriers and subgroup operations may sit. The rules are WGSL's, restricted to our language.
pub mod uniformity {
    use super::*;

    /// What made control flow non-uniform, for the error at a barrier.
    #[derive(Clone, Copy)]
    enum Cause<'k> {
        /// An `if` or `while` condition that differs between invocations.
        Cond(&'k Expr, &'static str),
        /// A `for` loop bound that differs between invocations.
        Bound(&'k Expr),
        /// A `break` or `continue` that some invocations take and others don't.
        Exit(Span, &'static str),
        /// A `return` that some invocations take and others don't.
        Return(Span),
        /// An `if` condition that is the same within each subgroup but may differ between
        /// subgroups (a `subgroup_all`, `subgroup_any` or `subgroup_broadcast_first`
        /// result): enough for cooperative-matrix operations, which are collective over
        /// their subgroup only; not for barriers or subgroup operations.
        SubgroupCond(&'k Expr),
    }

    /// The control flow inside a construct whose own condition gives `inner`, under
    /// `outer`: the first cause that matters most. A cause that holds for whole subgroups
    /// gives way to one that splits them, wherever it stands.
    fn within<'k>(outer: Option<Cause<'k>>, inner: Option<Cause<'k>>) -> Option<Cause<'k>> {
        match (outer, inner) {
            (None | Some(Cause::SubgroupCond(_)), Some(i))
                if !matches!(i, Cause::SubgroupCond(_)) =>
            {
                Some(i)
            }
            (None, i) => i,
            (o, _) => o,
        }
    }

    struct State<'k> {
        k: &'k Kernel<'k>,
        nonuniform: Vec<bool>,
        /// For a non-uniform local, how it came to be ("is computed from `global_index()`").
        origin: Vec<Option<String>>,
        /// Loops whose iterations some invocations may leave early, and the exit that does.
        loop_divergent: Vec<Option<Cause<'k>>>,
        changed: bool,
        /// Set once a `return` under non-uniform control flow has run.
        returned_divergently: Option<Cause<'k>>,
        /// Errors at barriers and subgroup operations (`workgroup_barrier()`,
        /// `subgroup_add`), collected on the final pass.
        errors: Option<Vec<(Span, &'static str, Cause<'k>)>>,
        /// Locals that are the same within each subgroup: an immutable `let` of a
        /// subgroup-uniform value, in control flow uniform over subgroups at least.
        /// Recomputed on every pass.
        subgroup_uniform: Vec<bool>,
        /// Whether a cooperative-matrix operation stands under a subgroup's vote: set on
        /// the final pass, where the rule that allows it is applied.
        coop_under_vote: bool,
    }

    impl<'k> State<'k> {
        /// Marks a local as non-uniform; `how` completes "`v` ..." for messages.
        fn mark(&mut self, id: LocalId, how: impl FnOnce() -> String) {
            if !self.nonuniform[id] {
                self.nonuniform[id] = true;
                self.origin[id] = Some(how());
                self.changed = true;
            }
        }

        fn uni(&self, e: &Expr) -> bool {
            self.culprit(e).is_none()
        }

        /// The first value in `e` that differs between invocations, as a noun phrase, and
        /// why it differs.
        fn culprit(&self, e: &Expr) -> Option<(String, String)> {
            let mut found = None;
            walk_expr(e, &mut |x| {
                if found.is_some() {
                    return;
                }
                found = match &x.kind {
                    ExprKind::LoadBinding(b, _) => Some((
                        format!("the binding `{}`", self.k.bindings[*b].name),
                        "whose elements differ between invocations".to_string(),
                    )),
                    ExprKind::Atomic { .. } => Some((
                        "the result of an atomic operation".to_string(),
                        "which differs between invocations".to_string(),
                    )),
                    ExprKind::Subgroup { op, .. } => Some((
                        format!("the result of `{}`", op.name()),
                        "which differs between the subgroups of a workgroup".to_string(),
                    )),
                    // Reads of workgroup memory differ between invocations, as WGSL assumes.
                    ExprKind::Local(id) if self.k.locals[*id].shared => Some((
                        format!("the workgroup array `{}`", self.k.locals[*id].name),
                        "which invocations see differently".to_string(),
                    )),
                    ExprKind::Local(id) if self.nonuniform[*id] => Some((
                        quoted_local(&self.k.locals[*id]),
                        format!(
                            "which {}",
                            self.origin[*id]
                                .as_deref()
                                .unwrap_or("differs between invocations")
                        ),
                    )),
                    ExprKind::Builtin(b) if !b.uniform() => Some((
                        format!("`{}`", b.name()),
                        "which differs between invocations".to_string(),
                    )),
                    ExprKind::BuiltinComponent(b, c) if !b.uniform() => Some((
                        format!("`{}.{}`", b.name(), ["x", "y", "z"][*c as usize]),
                        "which differs between invocations".to_string(),
                    )),
                    _ => None,
                };
            });
            found
        }

        /// Why an expression differs between invocations, for an error.
        fn why_not_uniform(&self, e: &Expr) -> String {
            self.culprit(self.beyond_votes(e))
                .map(|(what, why)| format!("it reads {what}, {why}"))
                .unwrap_or_default()
        }

        /// The part of `e` to blame: where `e` is not even the same within each subgroup,
        /// an operand that is not, rather than a vote it also reads (`busy && i < 32`
        /// blames `i`, not `busy`).
        fn beyond_votes<'e>(&self, e: &'e Expr) -> &'e Expr {
            if self.subgroup_uni(e) {
                return e;
            }
            match &e.kind {
                ExprKind::Unary(_, x) => self.beyond_votes(x),
                ExprKind::Binary(_, a, b) if self.subgroup_uni(a) => self.beyond_votes(b),
                ExprKind::Binary(_, a, _) => self.beyond_votes(a),
                _ => e,
            }
        }

        /// "is computed from `global_index()`", for a local assigned `e`.
        fn computed_from(&self, e: &Expr) -> String {
            self.culprit(e)
                .map(|(what, _)| format!("is computed from {what}"))
                .unwrap_or_else(|| "differs between invocations".to_string())
        }

        fn cond_cause(&self, e: &'k Expr, what: &'static str) -> Option<Cause<'k>> {
            (!self.uni(e)).then_some(Cause::Cond(e, what))
        }

        /// Whether `e` is the same for every invocation of a subgroup: uniform, or a vote
        /// of the subgroup (`subgroup_all`, `subgroup_any`, `subgroup_broadcast_first`),
        /// or built from such values by operators and subgroup-uniform locals.
        fn subgroup_uni(&self, e: &Expr) -> bool {
            match &e.kind {
                ExprKind::Subgroup { op, .. } if op.is_vote() => true,
                ExprKind::Local(id) if self.subgroup_uniform[*id] => true,
                ExprKind::Unary(_, x) => self.subgroup_uni(x),
                ExprKind::Binary(_, a, b) => self.subgroup_uni(a) && self.subgroup_uni(b),
                _ => self.uni(e),
            }
        }

        /// An `if` condition's cause: none where it is uniform, [`Cause::SubgroupCond`]
        /// where it is uniform within subgroups only.
        fn if_cause(&self, e: &'k Expr) -> Option<Cause<'k>> {
            if self.uni(e) {
                None
            } else if self.subgroup_uni(e) {
                Some(Cause::SubgroupCond(e))
            } else {
                Some(Cause::Cond(e, "if"))
            }
        }

        fn block(&mut self, b: &'k Block, ctrl: Option<Cause<'k>>) {
            for s in b {
                self.stmt(s, ctrl);
            }
        }

        /// One pass over the kernel's body, from uniform control flow.
        fn pass(&mut self) {
            self.returned_divergently = None;
            self.subgroup_uniform.fill(false);
            self.block(&self.k.body, None);
        }

        /// `ctrl` is `None` in uniform control flow, or what made it non-uniform.
        fn stmt(&mut self, s: &'k Stmt, ctrl: Option<Cause<'k>>) {
            let ctrl = within(ctrl, self.returned_divergently);
            self.subgroup_ops_uniform(s, ctrl);
            match s {
                // A `workgroup_uniform_load` value: every invocation read the same element
                // between two barriers, so it is uniform where the index is.
                Stmt::Let {
                    local,
                    init: Some(load),
                } if self.k.locals[*local].hidden == Some(UNIFORM_LOAD) => {
                    // Every index down the chain (`t[a][b]`).
                    let mut at = load;
                    let mut varying = None;
                    while let ExprKind::LoadArray(base, i) = &at.kind {
                        if !self.uni(i) {
                            varying = Some(&**i);
                        }
                        at = base;
                    }
                    if let Some(i) = varying {
                        let how = self.computed_from(i);
                        self.mark(*local, || how);
                    } else if ctrl.is_some() {
                        self.mark(*local, || {
                            "is assigned under non-uniform control flow".into()
                        });
                    }
                }
                Stmt::Let { local, init, .. } => {
                    let l = &self.k.locals[*local];
                    if !l.assigned
                        && !l.shared
                        && matches!(ctrl, None | Some(Cause::SubgroupCond(_)))
                        && init.as_ref().is_some_and(|e| self.subgroup_uni(e))
                    {
                        self.subgroup_uniform[*local] = true;
                    }
                    if let Some(e) = init.as_ref().filter(|e| !self.uni(e)) {
                        let how = self.computed_from(e);
                        self.mark(*local, || how);
                    } else if ctrl.is_some() || self.k.locals[*local].shared {
                        self.mark(*local, || {
                            "is assigned under non-uniform control flow".into()
                        });
                    }
                }
                Stmt::Assign { place, value, .. } | Stmt::AsyncCopy { place, value, .. } => {
                    let idx_uniform = place.indices().iter().all(|i| self.uni(i));
                    let id = match place.root() {
                        Place::Local(id) | Place::LocalIndex(id, _) => Some((*id, idx_uniform)),
                        _ => None,
                    };
                    if let Some((id, idx_uniform)) = id {
                        if !self.uni(value) {
                            let how = self.computed_from(value);
                            self.mark(id, || how);
                        } else if !idx_uniform {
                            self.mark(id, || {
                                "is written at an index that differs between invocations".into()
                            });
                        } else if ctrl.is_some() {
                            self.mark(id, || "is assigned under non-uniform control flow".into());
                        }
                    }
                }
                Stmt::If {
                    cond, then, els, ..
                } => {
                    let inner = within(ctrl, self.if_cause(cond));
                    self.block(then, inner);
                    if let Some(e) = els {
                        self.block(e, inner);
                    }
                }
                Stmt::For(ForLoop {
                    var,
                    start,
                    end,
                    body,
                    id,
                    ..
                }) => {
                    let bound = if !self.uni(start) {
                        Some(Cause::Bound(start))
                    } else if !self.uni(end) {
                        Some(Cause::Bound(end))
                    } else {
                        None
                    };
                    if bound.is_some() {
                        self.mark(*var, || "counts a loop with non-uniform bounds".into());
                    } else if ctrl.is_some() {
                        if matches!(ctrl, Some(Cause::SubgroupCond(_))) {
                            self.subgroup_uniform[*var] = true;
                        }
                        self.mark(*var, || {
                            "counts a loop under non-uniform control flow".into()
                        });
                    }
                    let inner = within(within(ctrl, bound), self.loop_divergent[*id]);
                    self.block(body, inner);
                }
                Stmt::While { cond, body, id, .. } => {
                    // The condition is evaluated after the body too: iterate for its locals.
                    let inner = within(
                        within(ctrl, self.cond_cause(cond, "while")),
                        self.loop_divergent[*id],
                    );
                    self.block(body, inner);
                    let inner = within(inner, self.cond_cause(cond, "while"));
                    self.block(body, inner);
                }
                Stmt::Loop { body, id, .. } => {
                    let inner = within(ctrl, self.loop_divergent[*id]);
                    self.block(body, inner);
                }
                Stmt::Switch {
                    selector,
                    cases,
                    default,
                } => {
                    let inner = within(ctrl, self.cond_cause(selector, "match"));
                    for (_, b) in cases {
                        self.block(b, inner);
                    }
                    self.block(default, inner);
                }
                Stmt::CompareExchange { old, exchanged, .. } => {
                    for id in [*old, *exchanged] {
                        self.mark(id, || {
                            "is the result of an atomic operation, which differs between invocations".into()
                        });
                    }
                }
                Stmt::Break { target, span } | Stmt::Continue { target, span } => {
                    let what = if matches!(s, Stmt::Break { .. }) {
                        "break"
                    } else {
                        "continue"
                    };
                    if ctrl.is_some() && self.loop_divergent[*target].is_none() {
                        self.loop_divergent[*target] = Some(Cause::Exit(*span, what));
                        self.changed = true;
                    }
                }
                Stmt::Return { span } => {
                    if ctrl.is_some() && self.returned_divergently.is_none() {
                        self.returned_divergently = Some(Cause::Return(*span));
                    }
                }
                Stmt::Eval { .. } | Stmt::ReturnValue { .. } | Stmt::Print { .. } => {}
                Stmt::Block(b) => self.block(b, ctrl),
                Stmt::Barrier { kind, span } => {
                    let name = match kind {
                        Barrier::Workgroup => "workgroup_barrier()",
                        Barrier::Storage => "storage_barrier()",
                        Barrier::AsyncWait(_) => "async_wait(..)",
                    };
                    if let (Some(errors), Some(why)) = (&mut self.errors, ctrl) {
                        errors.push((*span, name, why));
                    }
                }
            }
        }

        /// Subgroup operations are collective, as barriers are: on the final pass, one in
        /// non-uniform control flow is an error. A `while` condition runs again after each
        /// iteration, under the control flow of the loop that its own result decides, and a
        /// subgroup operation's result differs between subgroups: there it is always one.
        fn subgroup_ops_uniform(&mut self, s: &'k Stmt, ctrl: Option<Cause<'k>>) {
            let Some(errors) = &mut self.errors else {
                return;
            };
            let why = match s {
                Stmt::While { cond, .. } => within(ctrl, Some(Cause::Cond(cond, "while"))),
                _ => ctrl,
            };
            let Some(why) = why else {
                return;
            };
            let mut under_vote = false;
            stmt_exprs(s, &mut |e| {
                walk_expr(e, &mut |x| {
                    match x.kind {
                        ExprKind::Subgroup { op, .. } => errors.push((x.span, op.name(), why)),
                        // A zero matrix is a constant; the loads, stores and products
                        // are the subgroup's collective operations, over their subgroup
                        // only: a condition the same within each subgroup keeps them whole.
                        // An accumulator's row operation goes through workgroup memory
                        // in WGSL, between barriers: it needs the whole workgroup.
                        ExprKind::Coop {
                            op: CoopOp::Rows(r),
                            ..
                        } if r.through_memory() => errors.push((x.span, r.name(), why)),
                        ExprKind::Coop { op, .. } if op != CoopOp::Zero => {
                            if matches!(why, Cause::SubgroupCond(_)) {
                                under_vote = true;
                            } else {
                                errors.push((x.span, op.name(), why))
                            }
                        }
                        _ => {}
                    }
                })
            });
            self.coop_under_vote |= under_vote;
        }

        /// The barrier's error, then a second one at its cause: stable proc macros cannot
        /// attach notes, and an error at each place reads like rustc's primary and note.
        fn report(&self, cx: &Ctxt, span: Span, name: &str, why: Cause<'k>) {
            let (what, hint) = match why {
                Cause::Cond(_, "while") | Cause::Bound(_) | Cause::Exit(..) => (
                    "the loop around it",
                    "runs a different number of times in different invocations",
                ),
                Cause::Cond(_, "match") => (
                    "an enclosing `match`",
                    "takes different arms in different invocations",
                ),
                Cause::Cond(..) => (
                    "an enclosing `if`",
                    "is taken by some invocations and not others",
                ),
                Cause::Return(_) => ("an earlier `return`", "leaves some invocations early"),
                Cause::SubgroupCond(_) => (
                    "an enclosing `if`",
                    "is the same within each subgroup but may differ between subgroups",
                ),
            };
            let collective = if name.starts_with("subgroup_") {
                " (a subgroup operation is collective, like a barrier)"
            } else if RowOp::ON_ACCUMULATOR.iter().any(|r| r.name() == name) {
                " (an accumulator's row operation is collective over the workgroup: WGSL takes it through workgroup memory, between barriers)"
            } else if COOP_OPS.contains(&name) {
                " (a cooperative-matrix operation is collective over the subgroup: a condition the same within each subgroup, such as a `subgroup_any(..)` result, would do)"
            } else {
                ""
            };
            cx.error(
                span,
                format!("`{name}` sits in non-uniform control flow: {what} {hint}, so not every invocation of the workgroup reaches it{collective}; the next error shows why"),
            );
            const UNIFORM: &str = "scalar parameters, literals, `WG`/`ITEMS`/`VEC`, `workgroup_index()` and locals assigned only from these";
            match why {
                Cause::Cond(e, kw) => cx.error_range(
                    e.span,
                    e.end,
                    format!(
                        "this `{kw}` {} differs between invocations: {}; base it on {UNIFORM}, or move `{name}` out of the `{kw}`",
                        if kw == "match" { "value" } else { "condition" },
                        self.why_not_uniform(e)
                    ),
                ),
                Cause::Bound(e) => cx.error_range(
                    e.span,
                    e.end,
                    format!(
                        "this loop bound differs between invocations: {}; base it on {UNIFORM}, or move `{name}` out of the loop",
                        self.why_not_uniform(e)
                    ),
                ),
                Cause::Exit(span, kw) => cx.error(
                    span,
                    format!("this `{kw}` is taken by some invocations only, as it sits under non-uniform control flow; make its condition uniform (based on {UNIFORM}), or move `{name}` out of the loop"),
                ),
                Cause::SubgroupCond(e) => cx.error_range(
                    e.span,
                    e.end,
                    format!(
                        "this `if` condition is a vote of each subgroup, which may differ between the subgroups of a workgroup: it suits cooperative-matrix operations, not `{name}`; move `{name}` out of the `if`"
                    ),
                ),
                Cause::Return(span) => cx.error(
                    span,
                    format!("this `return` is taken by some invocations only, as it sits under non-uniform control flow; instead of returning early, guard the work with an `if` and keep `{name}` outside it"),
                ),
            }
        }
    }

    fn fixpoint<'k>(k: &'k Kernel<'k>, nonuniform: Vec<bool>) -> State<'k> {
        let mut st = State {
            k,
            origin: vec![None; nonuniform.len()],
            nonuniform,
            loop_divergent: vec![None; k.loops],
            changed: true,
            returned_divergently: None,
            errors: None,
            subgroup_uniform: vec![false; k.locals.len()],
            coop_under_vote: false,
        };
        while st.changed {
            st.changed = false;
            st.pass();
        }
        st
    }

    /// A barrier in non-uniform control flow. Returns whether a cooperative-matrix
    /// operation stands under a subgroup's vote, which the rule allows.
    pub fn barriers_uniform(cx: &Ctxt, k: &Kernel<'_>) -> bool {
        let mut st = fixpoint(k, vec![false; k.locals.len()]);
        st.errors = Some(Vec::new());
        st.pass();
        // A `while` body is walked twice (its condition runs after it too): report once.
        let mut seen = std::collections::HashSet::new();
        for (span, name, why) in st.errors.take().unwrap_or_default() {
            if seen.insert((format!("{span:?}"), name)) {
                st.report(cx, span, name, why);
            }
        }
        st.coop_under_vote
    }

    /// A local's name for a message: in backticks, unless the local is one the compiler made,
    /// whose name is already a description, such as: the value of `f`.
    fn quoted_local(local: &Local) -> String {
        match local.hidden {
            Some(_) => local.name.clone(),
            None => format!("`{}`", local.name),
        }
    }
}

/// Constant operations that Rust rejects at compile time (`unconditional_panic`,
/// `arithmetic_overflow`) or that WGSL's constant evaluation rejects, caught here with a
/// Rust-like message at the expression instead of a naga report at the kernel:
/// - integer division or remainder by a constant zero (naga rejects it even when the
///   dividend varies);
/// - `i32::MIN / -1` and `i32::MIN % -1` on constants;
/// - a constant index out of the bounds of a fixed-size local or workgroup array;
/// - a shift by a constant amount that is negative or at least 32;
/// - a constant `<<` that drops set bits, and constant float arithmetic that gives an
///   infinity or NaN: Rust accepts both, but WGSL's constant evaluation rejects them.
///
/// Immutable locals with a constant initializer count as constants, as naga's `let`
/// bindings do, and every schedule of the tuning space is checked, since `WG`, `ITEMS`
/// and `VEC` are WGSL constants.
pub mod constants {
    use super::*;
    use std::collections::HashSet;

    use crate::consts::{self, Const as C};

    /// How a constant was made: `direct` when it is computed from literals without going
    /// through a local (naga folds float arithmetic only then), `sched` when it depends on
    /// `WG`, `ITEMS`, `VEC` or a knob.
    #[derive(Clone, Copy, Debug)]
    struct Made {
        direct: bool,
        sched: bool,
    }

    type Cv = consts::Value<Made>;

    struct Eval<'a> {
        cx: &'a Ctxt,
        locals: &'a [Local],
        consts: Vec<Option<Cv>>,
        sched: &'a SchedPoint,
        knobs: &'a [Knob],
        /// The spans of the errors already reported, so that each shows once
        /// over all schedules.
        reported: &'a mut HashSet<String>,
    }

    pub fn constant_operations(
        cx: &Ctxt,
        k: &Kernel<'_>,
        s: &SchedPoint,
        x: &Expanded,
        reported: &mut HashSet<String>,
    ) {
        let bodies = std::iter::once(&x.main).chain(x.helpers.iter().map(|(_, f)| f));
        for f in bodies {
            let mut ev = Eval {
                cx,
                locals: &f.locals,
                consts: vec![None; f.locals.len()],
                sched: s,
                knobs: &k.options.knobs,
                reported: &mut *reported,
            };
            ev.visit_block(&f.body);
        }
    }

    impl Eval<'_> {
        fn report(&mut self, e: &Expr, sched: bool, msg: String) {
            if self.reported.insert(format!("{:?}", e.span)) {
                let when = if sched {
                    format!(" (with {})", self.sched.describe(self.knobs))
                } else {
                    String::new()
                };
                self.cx.error_range(e.span, e.end, format!("{msg}{when}"));
            }
        }
    }

    /// Every statement is walked for its expressions; `let` and assignments also keep the
    /// locals' constant values and check a local array's constant indices.
    impl<'b> Visit<'b> for Eval<'_> {
        fn visit_stmt(&mut self, s: &'b Stmt) {
            match s {
                Stmt::Let { local, init } => {
                    let v = init.as_ref().and_then(|e| self.expr(e));
                    let l = &self.locals[*local];
                    if !l.mutable && !l.shared {
                        self.consts[*local] = v.map(|v| Cv {
                            tag: Made {
                                direct: false,
                                ..v.tag
                            },
                            ..v
                        });
                    }
                }
                Stmt::Assign {
                    place, op, value, ..
                } => {
                    let v = self.expr(value);
                    match place {
                        Place::LocalIndex(id, idx) => {
                            let mut ty = self.locals[*id].ty.clone();
                            for i in idx {
                                let iv = self.expr(i);
                                ty = self.bounds(&ty, i, iv);
                            }
                        }
                        other => {
                            for i in other.indices() {
                                self.expr(i);
                            }
                        }
                    }
                    if let Some(op) = op {
                        self.divisor_and_shift(*op, value, v);
                    }
                }
                s => walk_stmt(self, s),
            }
        }

        fn visit_expr(&mut self, e: &'b Expr) {
            self.expr(e);
        }
    }

    impl Eval<'_> {
        /// Checks a constant index against an array type; returns the element type.
        fn bounds(&mut self, ty: &Ty, idx: &Expr, v: Option<Cv>) -> Ty {
            if let Ty::Vector(s, n) = ty {
                let i = match v.map(|v| v.c) {
                    Some(C::U(i)) => Some(i as i64),
                    Some(C::I(i)) => Some(i as i64),
                    _ => None,
                };
                if let Some(i) = i.filter(|i| *i < 0 || *i >= *n as i64) {
                    let sched = v.is_some_and(|v| v.tag.sched);
                    self.report(
                        idx,
                        sched,
                        format!("index out of bounds: a `vec{n}` has {n} components but the index is {i}"),
                    );
                }
                return Ty::Scalar(*s);
            }
            let Ty::Array(elem, len) = ty else {
                return ty.clone();
            };
            let (n, len_sched) = match len {
                ConstLen::Lit(n) => (Some(*n as i64), false),
                ConstLen::Sched(c) => (c.eval(self.sched).map(|n| n as i64), true),
            };
            let i = match v.map(|v| v.c) {
                Some(C::U(i)) => Some(i as i64),
                Some(C::I(i)) => Some(i as i64),
                _ => None,
            };
            if let (Some(n), Some(i)) = (n, i) {
                if i < 0 || i >= n {
                    let sched = len_sched || v.is_some_and(|v| v.tag.sched);
                    self.report(
                        idx,
                        sched,
                        format!("index out of bounds: the length is {n} but the index is {i}; Rust and WGSL both reject a constant index past the end of an array"),
                    );
                }
            }
            (**elem).clone()
        }

        /// Division and remainder by a constant zero, and constant shift amounts.
        fn divisor_and_shift(&mut self, op: BinOp, rhs: &Expr, v: Option<Cv>) {
            let Some(v) = v else { return };
            let int = match v.c {
                C::U(x) => x as i64,
                C::I(x) => x as i64,
                _ => return,
            };
            match op {
                BinOp::Div | BinOp::Rem if int == 0 => {
                    let what = if op == BinOp::Div {
                        "attempt to divide by zero"
                    } else {
                        "attempt to calculate the remainder with a divisor of zero"
                    };
                    self.report(
                        rhs,
                        v.tag.sched,
                        format!("{what}: this divisor is the constant 0, which Rust and WGSL both reject"),
                    );
                }
                BinOp::Shl | BinOp::Shr if !(0..32).contains(&int) => {
                    let dir = if op == BinOp::Shl { "left" } else { "right" };
                    self.report(
                        rhs,
                        v.tag.sched,
                        format!("attempt to shift {dir} by {int}, which would overflow: shift amounts are 0 to 31, and Rust rejects a constant amount outside them"),
                    );
                }
                _ => {}
            }
        }

        /// Evaluates an expression where it is constant, checking every operation in it.
        fn expr(&mut self, e: &Expr) -> Option<Cv> {
            consts::eval(self, e)
        }

        /// A binary operation on two constants, with WGSL's constant-evaluation errors.
        fn fold_binary(
            &mut self,
            e: &Expr,
            op: BinOp,
            a: C,
            b: C,
            direct: bool,
            sched: bool,
        ) -> Option<C> {
            use BinOp::*;
            if let (C::I(i32::MIN), C::I(-1), Div | Rem) = (a, b, op) {
                let sym = op.wgsl();
                self.report(e, sched, format!("attempt to compute `i32::MIN {sym} -1`, which would overflow: Rust and WGSL's constant evaluation both reject it"));
                return None;
            }
            let v = C::binary(op, a, b)?;
            // The emitted amount is masked to 0..=31 (`check` rejected larger constants).
            if direct && op == Shl {
                let s = match b {
                    C::U(y) => y,
                    C::I(y) => y as u32,
                    _ => 0,
                } & 31;
                match (a, v) {
                    (C::U(x), C::U(v)) if x.checked_mul(1u32 << s).is_none() => {
                        self.report(e, sched, format!("this constant `<<` drops set bits of `{x:#x}`, which WGSL's constant evaluation rejects (Rust gives `{v:#x}`); write the value `{v:#x}` instead, or mask first: `({x:#x} & {:#x}) << {s}`", u32::MAX >> s));
                    }
                    (C::I(x), C::I(v)) if (if x < 0 { !x } else { x }).leading_zeros() <= s => {
                        self.report(e, sched, format!("this constant `<<` overflows `i32` (it drops bits or changes the sign of `{x}i32`), which WGSL's constant evaluation rejects (Rust gives {v}); write the value `{v}` instead"));
                    }
                    _ => {}
                }
            }
            if let (C::F(x), C::F(y), C::F(v)) = (a, b, v) {
                if direct && !v.is_finite() && x.is_finite() && y.is_finite() {
                    let (what, name) = if v.is_nan() {
                        ("NaN", "f32::NAN")
                    } else if v > 0.0 {
                        ("infinite", "f32::INFINITY")
                    } else {
                        ("infinite", "f32::NEG_INFINITY")
                    };
                    self.report(e, sched, format!("this constant float expression is {what}, which WGSL's constant evaluation rejects; write `{name}` if that value is meant"));
                    return None;
                }
            }
            Some(v)
        }
    }

    /// The checker's constants: every literal, the schedule's values and the immutable
    /// locals known so far; each operation is checked as it folds.
    impl consts::Env for Eval<'_> {
        type Tag = Made;

        fn literal_tag(&self) -> Made {
            Made {
                direct: true,
                sched: false,
            }
        }

        fn join(&self, a: Made, b: Made) -> Made {
            Made {
                direct: a.direct && b.direct,
                sched: a.sched || b.sched,
            }
        }

        fn local(&mut self, id: LocalId) -> Option<Cv> {
            self.consts[id]
        }

        fn sched(&mut self, c: SchedConst) -> Option<Cv> {
            Some(Cv {
                c: C::U(self.sched.get(c)),
                tag: Made {
                    direct: true,
                    sched: true,
                },
            })
        }

        fn binary(&mut self, e: &Expr, op: BinOp, a: Option<Cv>, b: Option<Cv>) -> Option<C> {
            let ExprKind::Binary(_, _, rhs) = &e.kind else {
                return None;
            };
            self.divisor_and_shift(op, rhs, b);
            let (a, b) = (a?, b?);
            let made = self.join(a.tag, b.tag);
            self.fold_binary(e, op, a.c, b.c, made.direct, made.sched)
        }

        fn math(&mut self, e: &Expr, f: MathFn, vals: &[Option<Cv>]) {
            let ExprKind::Math(_, args) = &e.kind else {
                return;
            };
            if f == MathFn::DivCeil {
                self.divisor_and_shift(BinOp::Div, &args[1], vals[1]);
            }
            if f == MathFn::RemEuclid && args[0].ty.scalar().is_some_and(Scalar::is_int) {
                self.divisor_and_shift(BinOp::Rem, &args[1], vals[1]);
            }
        }

        fn opaque(&mut self, e: &Expr) {
            match &e.kind {
                ExprKind::LoadArray(base, idx) => {
                    self.expr(base);
                    let v = self.expr(idx);
                    self.bounds(&base.ty, idx, v);
                }
                // Not constants themselves; their parts are checked.
                _ => e.each_child(|a| {
                    self.expr(a);
                }),
            }
        }
    }
}
