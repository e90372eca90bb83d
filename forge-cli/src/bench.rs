//! `forge bench`: GPU time of the built-in kernels at the shapes of the performance targets,
//! with a device copy measured in the same run, so each figure is also a fraction of what
//! the memory system can move.
//!
//! Every figure is the median GPU time of one dispatch, each timed alone between its own
//! timestamps after a warm-up, with the read-only inputs rotated through copies that span
//! several times the L2 cache (see [`forge_core::timing`]), on random data generated once
//! per case. Each case tries every schedule of the kernel's tuning space that the adapter
//! can run and reports the fastest (and the declared one), since that is what the tuner
//! would pick.
//!
//! The multi-pass built-ins (FFT, top-k) are timed as whole calls by [`calls`].
//!
//! Two more measurements live here: the host overhead of a typed call on a tiny kernel
//! against the same shader driven by bare wgpu ([`overhead`]), and a comparison of timing
//! methods on the same kernels ([`compare_timers`]), which is how the figures of this
//! module were checked against an independent clock.

mod bare;
pub mod calls;
pub mod roofline;

pub use bare::Bare;
use forge_core::certify::{case_rng, generate, Distribution};
use forge_core::roofline::Roof;
use forge_core::timing::{median, TimingOptions};
use forge_core::{DynArgs, ForgeError, ForgeRuntime, Kernel, ScalarValue, Schedule};
use forge_macros::forge_kernel;
use serde::Serialize;
use std::time::Instant;

/// Whether `forge bench NAME` names the kernel `kernel`: a prefix of its name (`topk` names
/// `topk_rows` and `topk_select`), or, ending in `$`, its whole name (`attention$` names
/// `attention` and not `attention_rows`).
pub fn names_kernel(name: &str, kernel: &str) -> bool {
    match name.strip_suffix('$') {
        Some(whole) => kernel == whole,
        None => kernel.starts_with(name),
    }
}

/// A device copy of `n` vec4s: the bandwidth every memory-bound kernel is measured against.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n, ext = false,
    tune(workgroup = [64, 128, 256, 512]), cost(bytes = 32 * n))]
pub fn copy_vec4(src: &[Vec4; n], #[out] dst: &mut [Vec4; n], n: u32) {
    let i = global_index();
    if i < n {
        dst[i] = src[i];
    }
}

/// The compute roof: eight independent vec4 fused multiply-add chains per invocation, `iters`
/// steps long, four steps per loop trip so that the loop's own instructions are few. Each
/// step is 8 × 4 FMAs, 64 flops. The chains start from the invocation's index, so nothing
/// folds at compile time, and their sum is written, so nothing is dead. `iters` is a
/// multiple of 4.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n, ext = false,
    tune(workgroup = [128, 256, 512]), cost(bytes = 4 * n, flops = 256 * n * (iters / 4)))]
pub fn peak_fma(#[out] y: &mut [f32; n], n: u32, iters: u32) {
    let i = global_index();
    if i < n {
        let seed = (i % 1024) as f32 * 1e-3;
        // |a| < 1 and small b keep every chain bounded, whatever `iters` is.
        let a = Vec4::splat(0.999) - Vec4::splat(seed * 1e-3);
        let b = Vec4::splat(1e-3);
        let mut acc = [Vec4::ZERO; 8];
        #[unroll]
        for c in 0..8 {
            acc[c] = Vec4::splat(seed + c as f32);
        }
        for _trip in 0..iters / 4 {
            #[unroll]
            for _step in 0..4 {
                #[unroll]
                for c in 0..8 {
                    acc[c] = acc[c].mul_add(a, b);
                }
            }
        }
        let mut sum = Vec4::ZERO;
        #[unroll]
        for c in 0..8 {
            sum += acc[c];
        }
        y[i] = sum.x + sum.y + sum.z + sum.w;
    }
}

/// A probe for the GEMV design space: one workgroup per row, vec4 loads striding the row
/// so each step reads 4 KiB contiguously, then a workgroup tree reduction. `n` must be a
/// multiple of 4 (`n4 = n / 4`). Not a built-in: it measures how far codegen is from copy
/// speed with the simplest memory-bound shape.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 256, ext = false,
    cost(bytes = 4 * (m * n4 * 4 + n4 * 4 + m), flops = 8 * m * n4))]
pub fn gemv_rows_vec4(
    a: &[Vec4; m * n4],
    x: &[Vec4; n4],
    #[out] y: &mut [f32; m],
    m: u32,
    n4: u32,
) {
    #[shared]
    let mut partial = [0.0f32; WG];
    let row = workgroup_index();
    let lid = local_index();
    let base = row * n4;
    // Four independent loads in flight per step: latency hiding without relying on unrolling.
    let mut acc0 = 0.0f32;
    let mut acc1 = 0.0f32;
    let mut acc2 = 0.0f32;
    let mut acc3 = 0.0f32;
    let mut j = lid;
    while j + 3 * WG < n4 {
        let v0 = a[base + j];
        let v1 = a[base + j + WG];
        let v2 = a[base + j + 2 * WG];
        let v3 = a[base + j + 3 * WG];
        acc0 += v0.dot(x[j]);
        acc1 += v1.dot(x[j + WG]);
        acc2 += v2.dot(x[j + 2 * WG]);
        acc3 += v3.dot(x[j + 3 * WG]);
        j += 4 * WG;
    }
    while j < n4 {
        acc0 += a[base + j].dot(x[j]);
        j += WG;
    }
    partial[lid] = (acc0 + acc1) + (acc2 + acc3);
    workgroup_barrier();
    let mut stride = WG / 2;
    while stride > 0 {
        if lid < stride {
            partial[lid] += partial[lid + stride];
        }
        workgroup_barrier();
        stride /= 2;
    }
    if lid == 0 {
        y[row] = partial[0];
    }
}

/// One kernel at one shape. Its work is the kernel's declared `cost(..)` at these scalars.
pub struct Case {
    /// The kernel.
    pub kernel: &'static dyn Kernel,
    /// The shape, for the table.
    pub shape: String,
    /// The scalar arguments.
    pub scalars: Vec<ScalarValue>,
    /// The peer figure this case is compared with in `docs/PERFORMANCE.md`.
    pub peer: &'static str,
}

/// The measurement of one case.
#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    /// Kernel name.
    pub kernel: String,
    /// Shape.
    pub shape: String,
    /// The fastest schedule.
    pub schedule: String,
    /// Median time of one dispatch with the fastest schedule, in microseconds.
    pub us: f64,
    /// Median time with the declared schedule, in microseconds.
    pub default_us: f64,
    /// GB/s for memory-bound kernels.
    pub gbps: Option<f64>,
    /// TFLOP/s for compute-bound kernels.
    pub tflops: Option<f64>,
    /// GB/s as a fraction of the device copy measured in the same run.
    pub frac_copy: Option<f64>,
    /// TFLOP/s as a fraction of the peak FMA rate measured in the same run.
    #[serde(default)]
    pub frac_peak: Option<f64>,
    /// Flops per byte, where the kernel declares both.
    #[serde(default)]
    pub intensity: Option<f64>,
    /// The peer to compare with.
    pub peer: String,
    /// The adapter.
    pub adapter: String,
    /// How many copies of the read-only inputs the timed dispatches rotated through.
    pub input_sets: u32,
    /// For a row measured against a peer in the same process (the overhead row): the
    /// peer's time in microseconds, so `us / peer_us` is the ratio.
    pub peer_us: Option<f64>,
    /// Every schedule timed, with its median in microseconds, in the order timed.
    pub schedules: Vec<(String, f64)>,
}

fn u(v: u32) -> ScalarValue {
    ScalarValue::U32(v)
}

/// The cases: the target shapes, or small ones with `quick` (for lavapipe and CI).
pub fn cases(quick: bool) -> Vec<Case> {
    use forge_kernels::{
        attention::{attention, attention_f32, attention_rows},
        gemm::gemm,
        gemm_f16::{gemm_f16, gemm_f16_simt},
        gemv::gemv,
        p64_project::p64_project,
        ternary_gemv::ternary_gemv,
        ternary_w2a8::ternary_gemv_w2a8,
    };
    let mut v = Vec::new();
    let copy_n: u32 = if quick { 1 << 18 } else { 1 << 26 }; // vec4s: 4 MiB or 1 GiB
    v.push(Case {
        kernel: &copy_vec4::Kernel,
        shape: format!("{} MiB", (copy_n as u64 * 16) >> 20),
        scalars: vec![u(copy_n)],
        peer: "copy",
    });
    // Enough invocations to fill any GPU many times over, and enough steps that the FMAs
    // dwarf the launch: 2^20 × 64 × 2048 = 137 GFLOP (lavapipe: 2^14 × 64 × 64).
    let (peak_n, peak_iters): (u32, u32) = if quick {
        (1 << 14, 64)
    } else {
        (1 << 20, 2048)
    };
    v.push(Case {
        kernel: &peak_fma::Kernel,
        shape: format!("{peak_n}x{peak_iters} steps"),
        scalars: vec![u(peak_n), u(peak_iters)],
        peer: "fp32 peak",
    });
    let gemvs: &[(u32, u32)] = if quick {
        &[(512, 512)]
    } else {
        &[(16384, 16384), (8192, 32768), (4096, 4096)]
    };
    for &(m, n) in gemvs {
        v.push(Case {
            kernel: &gemv::Kernel,
            shape: format!("{m}x{n}"),
            scalars: vec![u(m), u(n)],
            peer: "sgemv",
        });
    }
    let probes: &[(u32, u32)] = if quick {
        &[(64, 512)]
    } else {
        &[(16384, 16384)]
    };
    for &(m, n) in probes {
        v.push(Case {
            kernel: &gemv_rows_vec4::Kernel,
            shape: format!("{m}x{n}"),
            scalars: vec![u(m), u(n / 4)],
            peer: "sgemv",
        });
    }
    let gemms: &[u32] = if quick {
        &[128]
    } else {
        &[1024, 2048, 4096, 8192]
    };
    for &n in gemms {
        v.push(Case {
            kernel: &gemm::Kernel,
            shape: format!("{n}^3"),
            scalars: vec![u(n), u(n), u(n)],
            peer: "sgemm_fp32",
        });
    }
    for &n in gemms {
        // The fallback, one product an invocation, only where it takes milliseconds.
        let simt = [&gemm_f16_simt::Kernel as &dyn Kernel]
            .into_iter()
            .filter(|_| n <= 2048);
        for kernel in std::iter::once(&gemm_f16::Kernel as &dyn Kernel).chain(simt) {
            v.push(Case {
                kernel,
                shape: format!("{n}^3"),
                scalars: vec![u(n), u(n), u(n)],
                peer: "hgemm_f16_f32acc",
            });
        }
    }
    // Attention at the peer's shapes (b, h, s, d), causal and not; quick: the fallback.
    let attentions: &[(u32, u32, u32, u32)] = if quick {
        &[(1, 2, 128, 64)]
    } else {
        &[(2, 16, 4096, 64), (2, 16, 4096, 128), (8, 16, 1024, 64)]
    };
    for &(b, h, sq, d) in attentions {
        // The tensor-core kernels: through workgroup memory, and on the accumulators' rows.
        let kernels: &[&dyn Kernel] = if quick {
            &[&attention_f32::Kernel]
        } else {
            &[&attention::Kernel, &attention_rows::Kernel]
        };
        for causal in [0u32, 1] {
            for &kernel in kernels {
                v.push(Case {
                    kernel,
                    shape: format!(
                        "b{b} h{h} s{sq} d{d}{}",
                        if causal == 1 { " causal" } else { "" }
                    ),
                    scalars: vec![
                        u(b * h),
                        u(sq),
                        u(d),
                        u(causal),
                        ScalarValue::F32(1.0 / (d as f32).sqrt()),
                    ],
                    peer: "attention_f16",
                });
            }
        }
    }
    let (tm, tk) = if quick { (512, 512) } else { (16384, 16384) };
    v.push(Case {
        kernel: &ternary_gemv::Kernel,
        shape: format!("{tm}x{tk}"),
        scalars: vec![u(tm), u(tk)],
        peer: "copy (packed weight bytes)",
    });
    // The same product on int8 activations.
    v.push(Case {
        kernel: &ternary_gemv_w2a8::Kernel,
        shape: format!("{tm}x{tk}"),
        scalars: vec![u(tm), u(tk), ScalarValue::F32(1.0 / 127.0)],
        peer: "copy (packed weight bytes)",
    });
    let records: u32 = if quick { 1 << 14 } else { 1 << 24 };
    v.push(Case {
        kernel: &p64_project::Kernel,
        shape: format!("{records} records"),
        scalars: vec![u(records)],
        peer: "copy",
    });
    v
}

/// Random arguments for a case, generated once: floats uniform in [-1, 1), `u32` words
/// with every bit random.
fn arguments(kernel: &dyn Kernel, scalars: &[ScalarValue]) -> Result<DynArgs, ForgeError> {
    let lens = kernel.binding_lens(scalars)?;
    let buffers = kernel
        .layout()
        .iter()
        .zip(&lens)
        .map(|(b, len)| {
            (b.access != forge_core::Access::Out).then(|| {
                let mut rng = case_rng(0xbe4c, kernel.name(), 0, b.name);
                // Words as real data has them (packed codes, record fields): every bit
                // random, not the certifier's small counts.
                let dist = if b.elem.scalar == forge_core::ScalarType::U32 {
                    Distribution::Bits
                } else {
                    Distribution::Default
                };
                generate(&mut rng, b.elem, *len as usize, dist)
            })
        })
        .collect();
    Ok(DynArgs {
        scalars: scalars.to_vec(),
        buffers,
    })
}

/// Runs the cases whose kernel name is in `only` (all when empty). `progress` is told about
/// each result as it comes.
pub fn run(
    rt: &mut ForgeRuntime,
    only: &[String],
    quick: bool,
    mut progress: impl FnMut(&BenchResult),
) -> Result<Vec<BenchResult>, ForgeError> {
    let opts = TimingOptions {
        passes: if quick { 3 } else { 9 },
        ..TimingOptions::default()
    };
    let adapter = rt.adapter_info().name.clone();
    // The copy and the FMA probe always run first: they are the roof every row is under.
    let mut roof = Roof::default();
    let mut out = Vec::new();
    for case in cases(quick) {
        let name = case.kernel.name();
        let is_roof = name == copy_vec4::NAME || name == peak_fma::NAME;
        // Probes run with the kernel they probe (`gemv_rows_vec4` with `gemv`).
        if !only.is_empty() && !is_roof && !only.iter().any(|k| names_kernel(k, case.kernel.name()))
        {
            continue;
        }
        if let Some(why) = rt.cannot_run(case.kernel) {
            tracing::warn!("{name}: skipped, {why}");
            continue;
        }
        let args = arguments(case.kernel, &case.scalars)?;
        let default = case.kernel.default_schedule();
        // The GPU idled while the host generated the data: a second of the declared
        // schedule first, so the first schedule timed meets the clocks the others do.
        if !quick && rt.check_schedule(case.kernel, &default).is_ok() {
            let warm = TimingOptions {
                warmup_ns: 1.0e9,
                passes: 1,
                ..opts.clone()
            };
            rt.time_kernel_with(case.kernel, &default, &args, &warm)?;
        }
        let mut candidates: Vec<Schedule> = if quick {
            vec![default]
        } else {
            case.kernel.tune_space().candidates()
        };
        if !candidates.contains(&default) {
            candidates.insert(0, default);
        }
        let mut best: Option<(Schedule, f64)> = None;
        let mut default_ns = f64::NAN;
        let mut input_sets = 1;
        let mut schedules = Vec::new();
        for s in candidates {
            if rt.check_schedule(case.kernel, &s).is_err() {
                continue;
            }
            let t = match rt.time_kernel_with(case.kernel, &s, &args, &opts) {
                Ok(t) => {
                    input_sets = t.input_sets;
                    t.timing.median_ns
                }
                Err(e) => {
                    tracing::warn!("{} {} with {s}: {e}", case.kernel.name(), case.shape);
                    continue;
                }
            };
            schedules.push((s.to_string(), t / 1e3));
            if s == default {
                default_ns = t;
            }
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((s, t));
            }
        }
        let Some((schedule, ns)) = best else {
            return Err(ForgeError::InvalidArgument {
                kernel: case.kernel.name(),
                message: format!("no schedule could be timed at {}", case.shape),
            });
        };
        let cost = case.kernel.cost(&case.scalars)?;
        let a = cost.achieved(ns, &roof);
        if name == copy_vec4::NAME {
            roof.copy_gbps = a.gbps;
        } else if name == peak_fma::NAME {
            roof.peak_tflops = a.tflops;
        }
        // The roof's own rows are their roof.
        let a = cost.achieved(ns, &roof);
        let r = BenchResult {
            kernel: case.kernel.name().to_string(),
            shape: case.shape.clone(),
            schedule: schedule.to_string(),
            us: ns / 1e3,
            default_us: default_ns / 1e3,
            gbps: a.gbps,
            tflops: a.tflops,
            frac_copy: a.frac_copy,
            frac_peak: a.frac_peak,
            intensity: a.intensity,
            peer: case.peer.to_string(),
            adapter: adapter.clone(),
            input_sets,
            peer_us: None,
            schedules,
        };
        progress(&r);
        out.push(r);
    }
    out.extend(calls::run(rt, only, quick, &roof, &mut progress)?);
    // The overhead row compares against bare wgpu, which a CUDA runtime has none of.
    if !rt.is_cuda() && (only.is_empty() || only.iter().any(|k| k == OVERHEAD)) {
        let r = overhead(rt, quick)?;
        progress(&r);
        out.push(r);
    }
    Ok(out)
}

/// The copy bandwidth at about `bytes` of traffic (what `forge tune` divides a kernel's
/// GB/s by): `copy_vec4` with `bytes / 32` vec4s, at least 512 KiB and at most what one
/// binding holds, at its declared schedule, timed as the bench times.
/// Returns the bytes the copy moved and its GB/s.
pub fn copy_gbps_at(rt: &mut ForgeRuntime, bytes: u64) -> Result<(u64, f64), ForgeError> {
    let limits = rt.limits();
    let max_binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let n = (bytes / 32).clamp(1 << 14, (max_binding / 16).max(1 << 14));
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let scalars = [u(n)];
    let args = arguments(&copy_vec4::Kernel, &scalars)?;
    let schedule = copy_vec4::Kernel.default_schedule();
    let t = rt.time_kernel_with(
        &copy_vec4::Kernel,
        &schedule,
        &args,
        &TimingOptions::default(),
    )?;
    let cost = copy_vec4::Kernel.cost(&scalars)?;
    let gbps = cost
        .achieved(t.timing.median_ns, &Roof::default())
        .gbps
        .ok_or_else(|| ForgeError::InvalidArgument {
            kernel: copy_vec4::NAME,
            message: "the copy could not be timed".into(),
        })?;
    Ok((cost.bytes.unwrap_or(0), gbps))
}

/// The name that selects the overhead row in `forge bench [KERNEL…]`.
pub const OVERHEAD: &str = "overhead";

/// The host overhead of a call: `axpy`'s generated typed method on a tiny problem (its
/// pipeline cached after a warm-up) against the same shader driven by bare wgpu ([`Bare`]:
/// buffers and bind group made once; each call writes the inputs, dispatches, copies the
/// result to a staging buffer, submits, maps and waits). Both are wall-clock medians over
/// the same number of calls, interleaved so that drift hits both alike; both must return
/// the same `y`. The row's `us` is the typed call, `peer_us` the bare one.
pub fn overhead(rt: &mut ForgeRuntime, quick: bool) -> Result<BenchResult, ForgeError> {
    use forge_kernels::axpy::axpy;
    let n: u32 = 1024;
    let calls = if quick { 50 } else { 400 };
    let mut rng = case_rng(0xbe4c, OVERHEAD, 0, "x");
    let elem = forge_core::ElemType::scalar(forge_core::ScalarType::F32);
    let x: Vec<f32> =
        bytemuck::cast_slice(generate(&mut rng, elem, n as usize, Distribution::Default).bytes())
            .to_vec();
    let y0: Vec<f32> =
        bytemuck::cast_slice(generate(&mut rng, elem, n as usize, Distribution::Default).bytes())
            .to_vec();
    let a = 1.5f32;
    let schedule = rt.schedule_for_threads(&axpy::Kernel, n as u64);
    let args = DynArgs {
        scalars: vec![ScalarValue::F32(a), ScalarValue::U32(n)],
        buffers: vec![
            Some(forge_core::HostBuffer::from_slice(elem, &x)),
            Some(forge_core::HostBuffer::from_slice(elem, &y0)),
        ],
    };
    let bare = Bare::new(rt, &axpy::Kernel, &schedule, &args)?;
    let inputs = [
        Some(bytemuck::cast_slice::<f32, u8>(&x)),
        Some(bytemuck::cast_slice::<f32, u8>(&y0)),
    ];
    let mut typed_ns = Vec::with_capacity(calls);
    let mut bare_ns = Vec::with_capacity(calls);
    let mut y = y0.clone();
    for i in 0..calls + calls / 10 {
        y.copy_from_slice(&y0);
        let t = Instant::now();
        axpy::run(rt, a, &x, &mut y, n)?;
        let typed = t.elapsed().as_nanos() as f64;
        let t = Instant::now();
        let out = bare.call(rt, &inputs)?;
        let bare_t = t.elapsed().as_nanos() as f64;
        if out.first().map(|b| &b[..n as usize * 4]) != Some(bytemuck::cast_slice::<f32, u8>(&y)) {
            return Err(ForgeError::InvalidArgument {
                kernel: "forge bench overhead",
                message: "the typed call and bare wgpu computed different results".into(),
            });
        }
        // The first tenth warms both paths up.
        if i >= calls / 10 {
            typed_ns.push(typed);
            bare_ns.push(bare_t);
        }
    }
    let typed = median(&typed_ns).unwrap_or(f64::NAN);
    let bare_med = median(&bare_ns).unwrap_or(f64::NAN);
    Ok(BenchResult {
        kernel: OVERHEAD.to_string(),
        shape: format!("axpy n={n}, typed call vs bare wgpu"),
        schedule: schedule.to_string(),
        us: typed / 1e3,
        default_us: typed / 1e3,
        gbps: None,
        tflops: None,
        frac_copy: None,
        frac_peak: None,
        intensity: None,
        peer: "bare wgpu submit + readback".to_string(),
        adapter: rt.adapter_info().name.clone(),
        input_sets: 1,
        peer_us: Some(bare_med / 1e3),
        schedules: Vec::new(),
    })
}

/// One case timed several ways, by [`compare_timers`].
#[derive(Clone, Debug, Serialize)]
pub struct TimerComparison {
    /// Kernel name.
    pub kernel: String,
    /// Shape.
    pub shape: String,
    /// The schedule timed (the kernel's declared one).
    pub schedule: String,
    /// µs: each dispatch alone between its own timestamps, inputs rotated (what `forge
    /// bench` reports).
    pub alone_us: f64,
    /// µs: the same with every dispatch on the same buffers.
    pub alone_same_buffers_us: f64,
    /// µs: `packed_dispatches` dispatches back to back between two timestamps, divided
    /// (how `forge bench` measured before 2026-11-30).
    pub packed_us: f64,
    /// Dispatches per timed pass for `packed_us`.
    pub packed_dispatches: u32,
    /// µs: the runtime's wall-clock fallback: one submission of many single-dispatch
    /// passes, from submission to idle, divided.
    pub wall_us: f64,
    /// µs: the same shader on bare wgpu objects ([`Bare::time_dispatches`]), host clock.
    pub bare_wall_us: f64,
    /// Dispatches per wall-clock submission.
    pub wall_dispatches: u32,
}

/// Times each case's declared schedule with every method above, so they can be compared
/// on one adapter in one run: the timestamps against two host clocks, one through the
/// runtime and one through bare wgpu.
pub fn compare_timers(
    rt: &mut ForgeRuntime,
    only: &[String],
    quick: bool,
    mut progress: impl FnMut(&TimerComparison),
) -> Result<Vec<TimerComparison>, ForgeError> {
    if rt.is_cuda() {
        return Err(ForgeError::InvalidArgument {
            kernel: "bench --compare-timers",
            message: "the comparison times bare wgpu too, which the CUDA backend has none of; run it on wgpu".into(),
        });
    }
    let mut out = Vec::new();
    for case in cases(quick) {
        if !only.is_empty() && !only.iter().any(|k| names_kernel(k, case.kernel.name())) {
            continue;
        }
        let args = arguments(case.kernel, &case.scalars)?;
        let s = case.kernel.default_schedule();
        let base = TimingOptions {
            passes: if quick { 3 } else { 7 },
            ..TimingOptions::default()
        };
        let time = |rt: &mut ForgeRuntime, o: TimingOptions| {
            rt.time_kernel_with(case.kernel, &s, &args, &o)
                .map(|t| t.timing.median_ns)
        };
        let alone = time(rt, base.clone())?;
        let same = time(
            rt,
            TimingOptions {
                rotate_bytes: 0,
                ..base.clone()
            },
        )?;
        // The old calibration: powers of two until a pass takes 2 ms.
        let packed_dispatches = ((base.target_pass_ns / alone).ceil() as u32)
            .next_power_of_two()
            .clamp(1, 1024);
        let packed = time(
            rt,
            TimingOptions {
                rotate_bytes: 0,
                dispatches_per_pass: packed_dispatches,
                repeats: Some(1),
                ..base.clone()
            },
        )?;
        // Enough dispatches that a submission's fixed cost (tens of µs) is under 1%.
        let wall_dispatches = ((20.0e6 / alone).ceil() as u32).clamp(8, 1024);
        let wall = time(
            rt,
            TimingOptions {
                wall_clock: true,
                repeats: Some(wall_dispatches),
                ..base.clone()
            },
        )?;
        let bare = Bare::new(rt, case.kernel, &s, &args)?;
        let warm = Instant::now();
        while (warm.elapsed().as_nanos() as f64) < base.warmup_ns {
            bare.time_dispatches(rt, wall_dispatches)?;
        }
        let bare_runs: Vec<f64> = (0..base.passes)
            .map(|_| bare.time_dispatches(rt, wall_dispatches))
            .collect::<Result<_, _>>()?;
        drop(bare);
        let c = TimerComparison {
            kernel: case.kernel.name().to_string(),
            shape: case.shape.clone(),
            schedule: s.to_string(),
            alone_us: alone / 1e3,
            alone_same_buffers_us: same / 1e3,
            packed_us: packed / 1e3,
            packed_dispatches,
            wall_us: wall / 1e3,
            bare_wall_us: median(&bare_runs).unwrap_or(f64::NAN) / 1e3,
            wall_dispatches,
        };
        progress(&c);
        out.push(c);
    }
    Ok(out)
}

/// [`compare_timers`]' results as an aligned table.
pub fn comparison_table(rows: &[TimerComparison]) -> String {
    let mut s = format!(
        "{:<14} {:<18} {:<22} {:>10} {:>10} {:>16} {:>10} {:>10}\n",
        "kernel", "shape", "schedule", "alone", "same bufs", "packed (n)", "wall", "bare wall"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<14} {:<18} {:<22} {:>10.1} {:>10.1} {:>10.1} ({:>4}) {:>10.1} {:>10.1}\n",
            r.kernel,
            r.shape,
            r.schedule,
            r.alone_us,
            r.alone_same_buffers_us,
            r.packed_us,
            r.packed_dispatches,
            r.wall_us,
            r.bare_wall_us
        ));
    }
    s
}

/// The results as an aligned table.
pub fn table(results: &[BenchResult]) -> String {
    let mut s = format!(
        "{:<18} {:<18} {:<30} {:>12} {:>12} {:>10} {:>8} {:>10} {:>8} {:>5}\n",
        "kernel",
        "shape",
        "schedule",
        "time (us)",
        "default (us)",
        "GB/s",
        "of copy",
        "TFLOP/s",
        "of peak",
        "sets"
    );
    for r in results {
        let f =
            |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into());
        if let Some(peer) = r.peer_us {
            s.push_str(&format!(
                "{:<18} {} ({}): {:.1} us against {:.1} us for {}, {:.2}x\n",
                r.kernel,
                r.shape,
                r.schedule,
                r.us,
                peer,
                r.peer,
                r.us / peer
            ));
            continue;
        }
        s.push_str(&format!(
            "{:<18} {:<18} {:<30} {:>12.1} {:>12.1} {:>10} {:>8} {:>10} {:>8} {:>5}\n",
            r.kernel,
            r.shape,
            r.schedule,
            r.us,
            r.default_us,
            f(r.gbps, 1),
            f(r.frac_copy, 2),
            f(r.tflops, 3),
            f(r.frac_peak, 2),
            r.input_sets
        ));
    }
    s
}
