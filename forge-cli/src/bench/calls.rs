//! The multi-pass built-ins in `forge bench`: FFT and top-k, timed as whole calls.
//!
//! One call of these records several launches (the passes of an FFT longer than 4096, the
//! levels of the global top-k's radix select), so a row here is the GPU time of every
//! launch of one call, between two timestamps ([`ForgeRuntime::time_calls`]), median of
//! the timed calls after a warm-up. The data are random, generated once per case on the
//! host and uploaded: 128 MiB or more per case at the full shapes, several times the L2.
//! Each variant (schedule) of a case is timed and the fastest reported, as for the
//! single-dispatch cases.
//!
//! Shapes are written as `key=value` pairs (`n=1024 batch=16384`), which
//! `scripts/perf_table.py` matches against the peers' figures.

use super::BenchResult;
use forge_core::certify::{case_rng, generate, Distribution};
use forge_core::roofline::{Cost, Roof};
use forge_core::timing::TimingOptions;
use forge_core::{ElemType, ForgeError, ForgeRuntime, GpuTensor, Kernel, ScalarType, Schedule};
use forge_kernels::fft::{fft_pass, fft_radices, fft_record_plan, FftPlan};
use forge_kernels::topk::{
    topk_global_record, topk_rows, topk_rows_record, topk_select, TopkGlobalScratch,
};

/// The row names, which `forge bench NAME` selects by prefix (`fft`, `topk`).
pub const CALL_KERNELS: [&str; 3] = ["fft", "topk_blocks", "topk_global"];

/// `len` random floats: uniform in `[-1, 1)`, or standard normal (as the peers' `randn`)
/// when `normal`: Box–Muller in `f64` on uniforms of 53 random bits, so that the tail is
/// as continuous as the peers' (uniforms of 24 bits would leave a few dozen distinct values
/// in the top hundred of 2^26).
pub fn random(name: &str, len: usize, normal: bool) -> Vec<f32> {
    let mut rng = case_rng(0xbe4c, name, 0, "input");
    if !normal {
        let b = generate(
            &mut rng,
            ElemType::scalar(ScalarType::F32),
            len,
            Distribution::Default,
        );
        return bytemuck::cast_slice(b.bytes()).to_vec();
    }
    let words = generate(
        &mut rng,
        ElemType::scalar(ScalarType::U32),
        4 * len.div_ceil(2),
        Distribution::Bits,
    );
    let words: &[u32] = bytemuck::cast_slice(words.bytes());
    // A uniform in (0, 1] from two words.
    let uniform = |w: &[u32]| {
        ((((w[0] >> 5) as u64) << 26 | (w[1] >> 6) as u64) + 1) as f64 / (1u64 << 53) as f64
    };
    words
        .chunks_exact(4)
        .flat_map(|w| {
            let r = (-2.0 * uniform(&w[..2]).ln()).sqrt();
            let a = 2.0 * std::f64::consts::PI * uniform(&w[2..]);
            [(r * a.cos()) as f32, (r * a.sin()) as f32]
        })
        .take(len)
        .collect()
}

/// Times each variant of a call (`record(rt, i)` records variant `i` of `labels`).
fn fastest(
    rt: &mut ForgeRuntime,
    label: &'static str,
    opts: &TimingOptions,
    labels: &[String],
    mut record: impl FnMut(&mut ForgeRuntime, usize) -> Result<(), ForgeError>,
) -> Result<Timed, ForgeError> {
    let mut best: Option<(String, f64)> = None;
    let mut first = f64::NAN;
    let mut all = Vec::new();
    for (i, name) in labels.iter().enumerate() {
        let t = match rt.time_calls(label, opts, |rt| record(rt, i)) {
            Ok(t) => t.median_ns,
            Err(e) => {
                tracing::warn!("{label} with {name}: {e}");
                continue;
            }
        };
        tracing::info!("{label} {name}: {:.1} us", t / 1e3);
        all.push((name.clone(), t / 1e3));
        if i == 0 {
            first = t;
        }
        if best.as_ref().is_none_or(|(_, b)| t < *b) {
            best = Some((name.clone(), t));
        }
    }
    let (name, ns) = best.ok_or_else(|| ForgeError::InvalidArgument {
        kernel: label,
        message: "no variant could be timed".into(),
    })?;
    Ok(Timed {
        best: name,
        ns,
        first_ns: first,
        all,
    })
}

/// What [`fastest`] measured.
struct Timed {
    /// The fastest variant.
    best: String,
    /// Its median, in nanoseconds.
    ns: f64,
    /// The first (default) variant's median, in nanoseconds.
    first_ns: f64,
    /// Every variant with its median in microseconds.
    all: Vec<(String, f64)>,
}

/// The schedules of a kernel's tuning space that the adapter runs, the declared one first;
/// only the declared one with `quick`.
fn schedules(
    rt: &ForgeRuntime,
    kernel: &dyn Kernel,
    quick: bool,
) -> Vec<(String, Option<Schedule>)> {
    let default = kernel.default_schedule();
    let mut all = vec![default];
    if !quick {
        all.extend(
            kernel
                .tune_space()
                .candidates()
                .into_iter()
                .filter(|s| *s != default),
        );
    }
    all.into_iter()
        .filter(|s| rt.check_schedule(kernel, s).is_ok())
        .map(|s| (s.to_string(), Some(s)))
        .collect()
}

/// What [`run`] needs to fill a row.
struct Row<'a> {
    kernel: &'static str,
    shape: String,
    /// The bytes a call cannot avoid moving.
    bytes: u64,
    peer: &'static str,
    roof: &'a Roof,
    adapter: &'a str,
}

impl Row<'_> {
    fn result(self, t: Timed) -> BenchResult {
        let (schedule, ns, first) = (t.best, t.ns, t.first_ns);
        let cost = Cost {
            bytes: Some(self.bytes),
            flops: None,
        };
        let a = cost.achieved(ns, self.roof);
        BenchResult {
            kernel: self.kernel.to_string(),
            shape: self.shape,
            schedule,
            us: ns / 1e3,
            default_us: first / 1e3,
            gbps: a.gbps,
            tflops: None,
            frac_copy: a.frac_copy,
            frac_peak: None,
            intensity: None,
            peer: self.peer.to_string(),
            adapter: self.adapter.to_string(),
            input_sets: 1,
            peer_us: None,
            schedules: t.all,
        }
    }
}

/// Runs the call cases whose name starts with one of `only` (all when empty).
pub fn run(
    rt: &mut ForgeRuntime,
    only: &[String],
    quick: bool,
    roof: &Roof,
    progress: &mut impl FnMut(&BenchResult),
) -> Result<Vec<BenchResult>, ForgeError> {
    let wanted = |name: &str| only.is_empty() || only.iter().any(|k| super::names_kernel(k, name));
    let opts = TimingOptions {
        passes: if quick { 3 } else { 9 },
        ..TimingOptions::default()
    };
    let adapter = rt.adapter_info().name.clone();
    let mut out = Vec::new();

    if wanted("fft") {
        // (n, batch, inverse): the targets of issue 16, then 65536×256, which
        // `torch_anchors.py` also times (its single 2^24 is past `FFT_MAX_LEN`), then one
        // inverse (cuFFT's inverse costs its forward, so the row is read against the
        // forward peer of its shape).
        let shapes: &[(usize, usize, bool)] = if quick {
            &[
                (1024, 8, false),
                (4096, 2, false),
                (1 << 13, 2, false),
                (1024, 8, true),
            ]
        } else {
            &[
                (1024, 16384, false),
                (4096, 4096, false),
                (1 << 20, 16, false),
                (1 << 16, 256, false),
                (1024, 16384, true),
            ]
        };
        for &(n, batch, inverse) in shapes {
            let data = random("fft", 2 * n * batch, false);
            let x = rt.upload::<[f32; 2]>(bytemuck::cast_slice(&data))?;
            drop(data);
            let y = rt.zeros::<[f32; 2]>(n * batch)?;
            let scratch = rt.zeros::<[f32; 2]>(n * batch)?;
            // The default plan first, then one with a pass more: one pass against two for
            // n ≤ 4096, 2^20 as 1024·1024 against 128·128·64.
            let log_n = n.trailing_zeros();
            let mut plans = vec![fft_radices(log_n)];
            if !quick && log_n >= 2 {
                let parts = plans[0].len() as u32 + 1;
                let more: Vec<u32> = (0..parts)
                    .map(|p| 1 << (log_n / parts + u32::from(p < log_n % parts)))
                    .collect();
                plans.push(more);
            }
            // The passes in registers (fft_pass16) with these plans and, past 4096, with
            // passes of 256 at most (runs of 16 columns or more); then every schedule of
            // fft_pass.
            let mut reg_plans = plans.clone();
            if !quick && log_n > 12 {
                let parts = log_n.div_ceil(8);
                let even: Vec<u32> = (0..parts)
                    .map(|p| 1 << (log_n / parts + u32::from(p < log_n % parts)))
                    .collect();
                if !reg_plans.contains(&even) {
                    reg_plans.push(even);
                }
            }
            let mut variants: Vec<(String, Option<Schedule>, FftPlan)> = Vec::new();
            for radices in &reg_plans {
                let plan = FftPlan {
                    radices: radices.clone(),
                    registers: true,
                };
                variants.push((format!("fft_pass16, radices {radices:?}"), None, plan));
            }
            for radices in &plans {
                for (s, sch) in schedules(rt, &fft_pass::Kernel, quick) {
                    let plan = FftPlan {
                        radices: radices.clone(),
                        registers: false,
                    };
                    variants.push((format!("{s}, radices {radices:?}"), sch, plan));
                }
            }
            let labels: Vec<String> = variants.iter().map(|v| v.0.clone()).collect();
            let best = fastest(rt, "fft", &opts, &labels, |rt, i| {
                let (_, sch, plan) = &variants[i];
                fft_record_plan(
                    rt,
                    plan,
                    &x,
                    Some(&scratch),
                    &y,
                    batch,
                    inverse,
                    sch.as_ref(),
                )
            })?;
            let r = Row {
                kernel: "fft",
                shape: if inverse {
                    format!("n={n} batch={batch} inverse=1")
                } else {
                    format!("n={n} batch={batch}")
                },
                // The floor: the data read once and written once.
                bytes: 2 * (n * batch) as u64 * 8,
                peer: "cuFFT c2c",
                roof,
                adapter: &adapter,
            }
            .result(best);
            progress(&r);
            out.push(r);
        }
    }

    let n: usize = if quick { 1 << 16 } else { 1 << 26 };
    let topk_blocks = wanted("topk_blocks");
    let topk_global = wanted("topk_global");
    if topk_blocks || topk_global {
        let data = random("topk", n, true);
        let x: GpuTensor<[f32; 4]> = rt.upload(bytemuck::cast_slice::<f32, [f32; 4]>(&data))?;
        // `topk_select` (k > 8) reads the values as `f32`.
        let x1: Option<GpuTensor<f32>> = if topk_blocks {
            Some(rt.upload(&data)?)
        } else {
            None
        };
        drop(data);
        if let Some(x1) = &x1 {
            // The shapes of `torch_anchors.py`: k ≤ 8 takes `topk_rows`, the rest
            // `topk_select`.
            for (block, k) in [(64usize, 8usize), (256, 16), (1024, 32)] {
                let outs = n.div_ceil(block) * k;
                let vals = rt.zeros::<f32>(outs)?;
                let ids = rt.zeros::<u32>(outs)?;
                let (n32, b, k32) = (n as u32, block as u32, k as u32);
                let best = if k <= 8 {
                    let variants = schedules(rt, &topk_rows::Kernel, quick);
                    let labels: Vec<String> = variants.iter().map(|v| v.0.clone()).collect();
                    fastest(rt, "topk_blocks", &opts, &labels, |rt, i| {
                        let s = variants[i].1.as_ref();
                        topk_rows_record(rt, &x, n32, b, k32, true, &vals, &ids, s)
                    })?
                } else {
                    let none = rt.upload(&[0u32])?;
                    let p = b.next_power_of_two();
                    let variants = schedules(rt, &topk_select::Kernel, quick);
                    let labels: Vec<String> = variants.iter().map(|v| v.0.clone()).collect();
                    fastest(rt, "topk_blocks", &opts, &labels, |rt, i| {
                        let (xv, o) = (&none, (&vals, &ids));
                        match variants[i].1.as_ref() {
                            Some(s) => topk_select::launch_with(
                                rt, s, x1, xv, o.0, o.1, n32, b, k32, p, 0, 1,
                            ),
                            None => topk_select::launch(rt, x1, xv, o.0, o.1, n32, b, k32, p, 0, 1),
                        }
                    })?
                };
                let r = Row {
                    kernel: "topk_blocks",
                    shape: format!("n={n} block={block} k={k}"),
                    // The floor: the input read once, values and indices written once.
                    bytes: n as u64 * 4 + outs as u64 * 8,
                    peer: "torch.topk on x.view(-1, block)",
                    roof,
                    adapter: &adapter,
                }
                .result(best);
                progress(&r);
                out.push(r);
            }
        }
        if topk_global {
            // The shapes of `torch_anchors.py`: 2^26 on the data above, the others on
            // their own (a kernel takes a tensor of exactly its length).
            let shapes: &[(usize, usize)] = if quick {
                &[(1 << 16, 100)]
            } else {
                &[(1 << 26, 100), (1 << 24, 16), (1 << 28, 64)]
            };
            for &(len, k) in shapes {
                let own = if len != n {
                    let data = random("topk", len, true);
                    Some(rt.upload::<[f32; 4]>(bytemuck::cast_slice(&data))?)
                } else {
                    None
                };
                let xs = own.as_ref().unwrap_or(&x);
                let mut scratch = TopkGlobalScratch::new(rt, len)?;
                let vals = rt.zeros::<f32>(k)?;
                let ids = rt.zeros::<u32>(k)?;
                // The level passes' grid: invocations striding over the candidates' bitmap.
                let grids: Vec<u32> = if quick {
                    vec![1 << 12]
                } else {
                    vec![1 << 18, 1 << 17, 1 << 16]
                };
                let labels: Vec<String> = grids
                    .iter()
                    .map(|g| format!("radix select, level grid {g}"))
                    .collect();
                let best = fastest(rt, "topk_global", &opts, &labels, |rt, i| {
                    scratch.set_grid(grids[i]);
                    topk_global_record(rt, xs, len as u32, k as u32, &scratch, &vals, &ids)
                })?;
                let r = Row {
                    kernel: "topk_global",
                    shape: format!("n={len} k={k}"),
                    // The floor: the input read once.
                    bytes: len as u64 * 4,
                    peer: "torch.topk",
                    roof,
                    adapter: &adapter,
                }
                .result(best);
                progress(&r);
                out.push(r);
            }
        }
    }
    Ok(out)
}
