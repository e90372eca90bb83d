//! `forge bench`: GPU time of the built-in kernels at the shapes of the performance targets,
//! with a device copy measured in the same run, so each figure is also a fraction of what
//! the memory system can move.
//!
//! Every figure is a median of timestamp-query passes after a warm-up (see
//! [`forge_core::timing`]), on random data generated once per case. Each case tries every
//! schedule of the kernel's tuning space that the adapter can run and reports the fastest
//! (and the declared one), since that is what the tuner would pick.

use forge_core::certify::{case_rng, generate, Distribution};
use forge_core::timing::TimingOptions;
use forge_core::{DynArgs, ForgeError, ForgeRuntime, Kernel, ScalarValue, Schedule};
use forge_macros::forge_kernel;
use serde::Serialize;

/// A device copy of `n` vec4s: the bandwidth every memory-bound kernel is measured against.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = n, ext = false,
    tune(workgroup = [64, 128, 256, 512]))]
pub fn copy_vec4(src: &[Vec4; n], #[out] dst: &mut [Vec4; n], n: u32) {
    let i = global_index();
    if i < n {
        dst[i] = src[i];
    }
}

/// A probe for the GEMV design space: one workgroup per row, vec4 loads striding the row
/// so each step reads 4 KiB contiguously, then a workgroup tree reduction. `n` must be a
/// multiple of 4 (`n4 = n / 4`). Not a built-in: it measures how far codegen is from copy
/// speed with the simplest memory-bound shape.
#[forge_kernel(crate = ::forge_core, workgroup = 256, threads = m * 256, ext = false)]
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

/// What a case's throughput is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Work {
    /// Bytes that must cross the memory bus (the floor of a memory-bound kernel).
    Bytes(u64),
    /// Floating-point operations (a compute-bound kernel).
    Flops(u64),
}

/// One kernel at one shape.
pub struct Case {
    /// The kernel.
    pub kernel: &'static dyn Kernel,
    /// The shape, for the table.
    pub shape: String,
    /// The scalar arguments.
    pub scalars: Vec<ScalarValue>,
    /// The work one dispatch does.
    pub work: Work,
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
    /// The peer to compare with.
    pub peer: String,
    /// The adapter.
    pub adapter: String,
}

fn u(v: u32) -> ScalarValue {
    ScalarValue::U32(v)
}

/// The cases: the target shapes, or small ones with `quick` (for lavapipe and CI).
pub fn cases(quick: bool) -> Vec<Case> {
    use forge_kernels::{
        gemm::gemm, gemv::gemv, p64_project::p64_project, ternary_gemv::ternary_gemv,
    };
    let mut v = Vec::new();
    let copy_n: u32 = if quick { 1 << 18 } else { 1 << 26 }; // vec4s: 4 MiB or 1 GiB
    v.push(Case {
        kernel: &copy_vec4::Kernel,
        shape: format!("{} MiB", copy_n as u64 * 16 >> 20),
        scalars: vec![u(copy_n)],
        work: Work::Bytes(2 * copy_n as u64 * 16),
        peer: "copy",
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
            work: Work::Bytes(4 * (m as u64 * n as u64 + m as u64 + n as u64)),
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
            work: Work::Bytes(4 * (m as u64 * n as u64 + m as u64 + n as u64)),
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
            work: Work::Flops(2 * (n as u64).pow(3)),
            peer: "sgemm_fp32",
        });
    }
    let (tm, tk) = if quick { (512, 512) } else { (16384, 16384) };
    v.push(Case {
        kernel: &ternary_gemv::Kernel,
        shape: format!("{tm}x{tk}"),
        scalars: vec![u(tm), u(tk)],
        // The floor is the packed weights: 2 bits per weight.
        work: Work::Bytes(tm as u64 * tk as u64 / 4),
        peer: "copy (packed weight bytes)",
    });
    let records: u32 = if quick { 1 << 14 } else { 1 << 24 };
    v.push(Case {
        kernel: &p64_project::Kernel,
        shape: format!("{records} records"),
        scalars: vec![u(records)],
        work: Work::Bytes(records as u64 * 68),
        peer: "copy",
    });
    v
}

/// Random arguments for a case, generated once.
fn arguments(kernel: &dyn Kernel, scalars: &[ScalarValue]) -> Result<DynArgs, ForgeError> {
    let lens = kernel.binding_lens(scalars)?;
    let buffers = kernel
        .layout()
        .iter()
        .zip(&lens)
        .map(|(b, len)| {
            (b.access != forge_core::Access::Out).then(|| {
                let mut rng = case_rng(0xbe4c, kernel.name(), 0, b.name);
                generate(&mut rng, b.elem, *len as usize, Distribution::Default)
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
        passes: if quick { 3 } else { 7 },
        ..TimingOptions::default()
    };
    let adapter = rt.adapter_info().name.clone();
    let mut copy_gbps: Option<f64> = None;
    let mut out = Vec::new();
    for case in cases(quick) {
        let is_copy = case.kernel.name() == copy_vec4::NAME;
        // Probes run with the kernel they probe (`gemv_rows_vec4` with `gemv`).
        if !only.is_empty()
            && !is_copy
            && !only
                .iter()
                .any(|k| case.kernel.name().starts_with(k.as_str()))
        {
            continue;
        }
        let args = arguments(case.kernel, &case.scalars)?;
        let default = case.kernel.default_schedule();
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
        for s in candidates {
            if rt.check_schedule(case.kernel, &s).is_err() {
                continue;
            }
            let t = match rt.time_kernel_with(case.kernel, &s, &args, &opts) {
                Ok(t) => t.timing.median_ns,
                Err(e) => {
                    tracing::warn!("{} {} with {s}: {e}", case.kernel.name(), case.shape);
                    continue;
                }
            };
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
        let (gbps, tflops) = match case.work {
            Work::Bytes(b) => (Some(b as f64 / ns), None),
            Work::Flops(f) => (None, Some(f as f64 / ns / 1e3)),
        };
        if is_copy {
            copy_gbps = gbps;
        }
        let r = BenchResult {
            kernel: case.kernel.name().to_string(),
            shape: case.shape.clone(),
            schedule: schedule.to_string(),
            us: ns / 1e3,
            default_us: default_ns / 1e3,
            gbps,
            tflops,
            frac_copy: gbps.zip(copy_gbps).map(|(g, c)| g / c),
            peer: case.peer.to_string(),
            adapter: adapter.clone(),
        };
        progress(&r);
        out.push(r);
    }
    Ok(out)
}

/// The results as an aligned table.
pub fn table(results: &[BenchResult]) -> String {
    let mut s = format!(
        "{:<14} {:<18} {:<24} {:>12} {:>12} {:>10} {:>10} {:>8}\n",
        "kernel", "shape", "schedule", "time (us)", "default (us)", "GB/s", "TFLOP/s", "of copy"
    );
    for r in results {
        let f =
            |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or_else(|| "-".into());
        s.push_str(&format!(
            "{:<14} {:<18} {:<24} {:>12.1} {:>12.1} {:>10} {:>10} {:>8}\n",
            r.kernel,
            r.shape,
            r.schedule,
            r.us,
            r.default_us,
            f(r.gbps, 1),
            f(r.tflops, 2),
            f(r.frac_copy, 2)
        ));
    }
    s
}
