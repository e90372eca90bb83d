//! The generated WGSL of representative kernels, snapshot-tested (as naga's `tests/in` →
//! `tests/out`) and parsed and validated by naga here too, so that a change to the emitter
//! shows up as a reviewable diff and never as WGSL that a driver would reject.
//!
//! Review a change with `INSTA_UPDATE=always cargo test --test snapshots` and `git diff
//! tests/snapshots/`; in CI a missing or different snapshot fails.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use wgsl_forge::prelude::*;

/// Parses and validates `source` with naga, failing with naga's report.
fn validate(name: &str, source: &str) {
    let module = match naga::front::wgsl::parse_str(source) {
        Ok(m) => m,
        Err(e) => panic!(
            "{name}: naga cannot parse the generated WGSL:\n{}",
            e.emit_to_string(source)
        ),
    };
    if let Err(e) = Validator::new(ValidationFlags::all(), Capabilities::all()).validate(&module) {
        panic!(
            "{name}: naga rejects the generated WGSL:\n{}",
            e.emit_to_string(source)
        );
    }
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.stage == naga::ShaderStage::Compute);
    assert!(
        entry.is_some(),
        "{name}: the generated WGSL has no compute entry point"
    );
}

// ---- a matrix-vector product: bindings, params, a loop over a scalar bound ------------

/// y = A·x for a row-major m×n matrix A.
#[forge_kernel(workgroup = 64, threads = m)]
pub fn snap_gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    let row = global_index();
    if row < m {
        let mut acc = 0.0f32;
        for j in 0..n {
            acc += a[row * n + j] * x[j];
        }
        y[row] = acc;
    }
}

#[test]
fn gemv_wgsl() {
    validate("snap_gemv", snap_gemv::WGSL);
    insta::assert_snapshot!("gemv", snap_gemv::WGSL);
}

// ---- a tree reduction in workgroup memory: barriers inside a uniform loop ------------

/// One partial sum per workgroup.
#[forge_kernel(workgroup = 128, threads = n)]
pub fn snap_block_sum(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(128)], n: u32) {
    #[shared]
    let mut tile = [0.0f32; WG];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    let mut stride = WG / 2;
    while stride > 0 {
        if lid < stride {
            tile[lid] += tile[lid + stride];
        }
        workgroup_barrier();
        stride /= 2;
    }
    if lid == 0 {
        sums[workgroup_index()] = tile[0];
    }
}

#[test]
fn shared_memory_reduction_wgsl() {
    validate("snap_block_sum", snap_block_sum::WGSL);
    insta::assert_snapshot!("block_sum", snap_block_sum::WGSL);
}

// ---- integers: wrapping arithmetic, WGSL division, shifts, bit functions, casts --------

/// A per-element integer hash and a handful of signed operations.
#[forge_kernel(workgroup = 256, threads = n)]
pub fn snap_int_mix(
    a: &[u32; n],
    b: &[i32; n],
    #[out] h: &mut [u32; n],
    #[out] s: &mut [i32; n],
    n: u32,
    seed: u32,
) {
    let i = global_index();
    if i >= n {
        return;
    }
    let mut x = a[i] ^ seed;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x = x.wrapping_mul(0x9e37_79b9) + x.count_ones() + x.leading_zeros() * 3;
    let k = x % 7 + 1;
    h[i] = (x / k) | (x.reverse_bits() & 0xff) | (x.trailing_zeros() << 24);
    let y = b[i];
    let q = y / (k as i32 - 4);
    s[i] = q.abs() * y.signum() + (y % 5) - (y >> 2) + (!y & 3) + i32::MIN.wrapping_add(q);
}

#[test]
fn integer_heavy_wgsl() {
    validate("snap_int_mix", snap_int_mix::WGSL);
    insta::assert_snapshot!("int_mix", snap_int_mix::WGSL);
}

// ---- float methods whose Rust meaning needs a WGSL helper: round, min, max, powf ------

/// Quantise, clamp and apply a gamma curve.
#[forge_kernel(threads = n)]
pub fn snap_float_helpers(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, gamma: f32, scale: f32) {
    let i = global_index();
    if i < n {
        let v = x[i];
        let q = (v * scale).round() / scale;
        let c = q.max(0.0).min(1.0);
        let g = c.powf(gamma);
        y[i] = g.clamp(0.0, 1.0) + (v.abs() + 1.0).ln().round_ties_even() * 0.0;
    }
}

#[test]
fn float_helpers_wgsl() {
    validate("snap_float_helpers", snap_float_helpers::WGSL);
    insta::assert_snapshot!("float_helpers", snap_float_helpers::WGSL);
}

// ---- a tunable kernel: the source for a non-default schedule -------------------------

/// Each invocation handles ITEMS consecutive elements; the result never depends on the
/// schedule.
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [64, 128, 256], items = [1, 2, 4]))]
pub fn snap_axpy_items(x: &[f32; n], y: &mut [f32; n], n: u32, alpha: f32) {
    let base = global_index() * ITEMS;
    for k in 0..ITEMS {
        let i = base + k;
        if i < n {
            y[i] = alpha.mul_add(x[i], y[i]);
        }
    }
}

#[test]
fn tuned_schedule_wgsl() {
    let default = snap_axpy_items::WGSL;
    validate("snap_axpy_items (default)", default);
    let schedule = Schedule::new(256, 4, 1);
    let tuned = snap_axpy_items::wgsl(&schedule);
    validate("snap_axpy_items (workgroup 256, items 4)", &tuned);
    assert_ne!(
        default, tuned,
        "the schedule must reach the generated source"
    );
    insta::assert_snapshot!("axpy_items_wg256_items4", tuned);
}

// ---- subgroup operations: a reduction, a scan, a shuffle and the subgroup builtins -----

/// A workgroup sum through subgroup sums in workgroup memory, for any subgroup size, and
/// each element's inclusive prefix within its subgroup.
#[forge_kernel(workgroup = 128, threads = n)]
pub fn snap_subgroup_sum(
    x: &[f32; n],
    #[out] sums: &mut [f32; n.div_ceil(128)],
    #[out] prefix: &mut [f32; n],
    n: u32,
) {
    #[shared]
    let mut partial = [0.0f32; WG];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    let scan = subgroup_inclusive_add(v);
    let neighbour = subgroup_shuffle_xor(v, 1);
    let mut s = subgroup_add(v);
    let mut count = num_subgroups();
    if subgroup_invocation_id() == 0 {
        partial[subgroup_id()] = s;
    }
    workgroup_barrier();
    while count > 1 {
        let mut p = 0.0f32;
        if lid < count {
            p = partial[lid];
        }
        workgroup_barrier();
        s = subgroup_add(p);
        if subgroup_invocation_id() == 0 {
            partial[subgroup_id()] = s;
        }
        count = count.div_ceil(subgroup_size());
        workgroup_barrier();
    }
    let total = subgroup_broadcast(partial[0], 0);
    if i < n {
        prefix[i] = scan + neighbour * 0.0;
    }
    if lid == 0 {
        sums[workgroup_index()] = total;
    }
}

#[test]
fn subgroup_wgsl() {
    validate("snap_subgroup_sum", snap_subgroup_sum::WGSL);
    insta::assert_snapshot!("subgroup_sum", snap_subgroup_sum::WGSL);
}

// ---- f16: storage, literals, casts and the f32 helpers that give methods their meaning -

/// A half-precision axpy with a clamp and a rounding, and an f32 accumulation.
#[forge_kernel(threads = n)]
pub fn snap_half(
    x: &[f16; n],
    y: &mut [f16; n],
    v: &[HVec4; n],
    #[out] s: &mut [f32; n],
    n: u32,
    alpha: f32,
) {
    let i = global_index();
    if i < n {
        let a = alpha as f16;
        let bias: f16 = 0.1;
        y[i] = (a * x[i] + y[i]).clamp(-1.0, 1.0).round() + bias;
        let w = v[i] * HVec4::splat(1.5f16);
        s[i] = w.dot(w) as f32 + x[i].max(0.0) as f32;
    }
}

#[test]
fn half_wgsl() {
    validate("snap_half", snap_half::WGSL);
    assert!(snap_half::WGSL.starts_with("enable f16;\n"));
    insta::assert_snapshot!("half", snap_half::WGSL);
}

// ---- the second edition: a register block under `#[unroll]`, a knob, and a helper that
// ---- takes workgroup memory by reference, inlined

#[forge_module]
pub mod snap_blocks {
    use wgsl_forge::prelude::*;

    /// Adds a neighbour's partial to each element of a tile, after a barrier.
    #[forge_fn]
    fn fold(t: &mut [Vec4; 64], lid: u32) {
        workgroup_barrier();
        if lid < 32 {
            t[lid] += t[lid + 32];
        }
        workgroup_barrier();
    }

    /// Four `Vec4` accumulators per invocation, `ROWS` rows of a row-major matrix each.
    #[forge_kernel(workgroup = 64, threads = n, knobs(ROWS = 2), tune(ROWS = [1, 2, 4]))]
    pub fn snap_register_block(
        a: &[Vec4; n * 16],
        #[out] y: &mut [Vec4; n.div_ceil(64) * 4],
        n: u32,
    ) {
        #[shared]
        let mut tile = [Vec4::ZERO; 64];
        let i = global_index();
        let mut acc = [Vec4::ZERO; 4];
        if i < n {
            #[unroll]
            for r in 0..ROWS {
                #[unroll]
                for c in 0..4 {
                    acc[c] += a[i * 16 + r * 4 + c];
                }
            }
        }
        tile[local_index()] = acc[0] + acc[1] + acc[2] + acc[3];
        fold(&mut tile, local_index());
        if local_index() < 4 {
            y[workgroup_index() * 4 + local_index()] = tile[local_index()];
        }
    }
}

#[test]
fn register_block_wgsl() {
    use snap_blocks::snap_register_block as k;
    for s in k::Kernel.tune_space().candidates() {
        validate(&format!("snap_register_block ({s})"), &k::wgsl(&s));
    }
    assert!(!k::WGSL.contains("array<vec4<f32>, 4>"));
    insta::assert_snapshot!("register_block", k::WGSL);
}

// ---- a register array costs what named locals cost: the same WGSL, text for text -------

/// Four `Vec4` accumulators as an array under `#[unroll]`.
#[forge_kernel(threads = n)]
pub fn regs_array(a: &[Vec4; n * 4], #[out] y: &mut [Vec4; n], n: u32, s: f32) {
    let i = global_index();
    if i < n {
        let mut acc = [Vec4::ZERO; 4];
        #[unroll]
        for k in 0..4 {
            acc[k] = a[i * 4 + k].mul_add(Vec4::splat(s), acc[k]);
        }
        y[i] = acc[0] + acc[1] + acc[2] + acc[3];
    }
}

/// The same, with four named locals written out by hand.
#[forge_kernel(threads = n)]
pub fn regs_named(a: &[Vec4; n * 4], #[out] y: &mut [Vec4; n], n: u32, s: f32) {
    let i = global_index();
    if i < n {
        let mut acc_0 = Vec4::ZERO;
        let mut acc_1 = Vec4::ZERO;
        let mut acc_2 = Vec4::ZERO;
        let mut acc_3 = Vec4::ZERO;
        acc_0 = a[i * 4].mul_add(Vec4::splat(s), acc_0);
        acc_1 = a[i * 4 + 1].mul_add(Vec4::splat(s), acc_1);
        acc_2 = a[i * 4 + 2].mul_add(Vec4::splat(s), acc_2);
        acc_3 = a[i * 4 + 3].mul_add(Vec4::splat(s), acc_3);
        y[i] = acc_0 + acc_1 + acc_2 + acc_3;
    }
}

#[test]
fn a_register_array_is_the_wgsl_of_named_locals() {
    validate("regs_array", regs_array::WGSL);
    // The driver gets the same shader either way, so the array costs what the locals do.
    assert_eq!(regs_array::WGSL, regs_named::WGSL);
}

// ---- the CUDA C of the same kernels (issue 15) ----------------------------------------

/// A kernel's CUDA C at its declared schedule, after the prelude (which every kernel
/// shares, and which `tests/cuda_nvrtc.rs` compiles with NVRTC).
fn cuda_after_prelude(k: &dyn Kernel) -> String {
    let source = k.cuda(&k.default_schedule()).expect("the kernel has CUDA");
    let (_, rest) = source
        .split_once("// ---- end of the prelude ----\n")
        .expect("the prelude comes first");
    rest.to_string()
}

#[test]
fn gemv_cuda() {
    let cuda = cuda_after_prelude(&snap_gemv::Kernel);
    assert!(cuda.contains("extern \"C\" __global__ void __launch_bounds__(WG) fg_main("));
    insta::assert_snapshot!("gemv_cuda", cuda);
}

#[test]
fn shared_memory_reduction_cuda() {
    // Workgroup memory is zeroed at the start, then a barrier, as WGSL's is.
    let cuda = cuda_after_prelude(&snap_block_sum::Kernel);
    let zeroing = cuda.find("fg_zero_shared(&").expect("zeroing");
    let first_barrier = cuda.find("__syncthreads();").expect("a barrier");
    assert!(zeroing < first_barrier, "{cuda}");
    insta::assert_snapshot!("block_sum_cuda", cuda);
}

#[test]
fn integer_heavy_cuda() {
    insta::assert_snapshot!("int_mix_cuda", cuda_after_prelude(&snap_int_mix::Kernel));
}

// ---- prints: the print buffer after `Params`, a record per print, values as u32 bits --

/// Prints a scalar of each kind and a vector from some invocations.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn snap_prints(x: &[f32; n], #[out] y: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        let v = x[i] as i32;
        y[i] = v;
        if v < 0 {
            debug_print!(
                "i={} v={} x={:?} neg={} p={:?}",
                i,
                v,
                x[i],
                v < -3,
                Vec2::new(x[i], 1.0)
            );
        }
    }
}

#[test]
fn prints_wgsl() {
    validate("snap_prints", snap_prints::WGSL);
    insta::assert_snapshot!("prints", snap_prints::WGSL);
}
