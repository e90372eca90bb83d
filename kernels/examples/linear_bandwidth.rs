//! Measures the memory bandwidth that the memory-bound built-ins reach, for every schedule
//! of their tune spaces: `gemv` on an `m×n` matrix, `ternary_gemv` on an `m×n` packed
//! matrix, and `p64_project` over `m·n/16` records (as many bytes as the gemv matrix); and
//! the arithmetic rate of `gemm` on `d×d` matrices.
//!
//! ```text
//! cargo run -p forge-kernels --example linear_bandwidth -- [m] [n] [reps] [d]
//! ```
//!
//! Each schedule's launches are recorded on device-resident tensors and submitted in one
//! batch. The wall-clock time from submission to readback of a batch of `reps` launches,
//! minus that of `reps / 5`, divided by the difference in launches, cancels the fixed cost
//! of a submission and readback. Before timing, each gemv schedule's result is checked
//! against an f64 reference on a few rows.

use forge_kernels::{gemm::gemm, gemv::gemv, p64_project::p64_project, ternary_gemv::ternary_gemv};
use std::time::Instant;
use wgsl_forge::prelude::*;
use wgsl_forge::tensor::RawTensor;

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A cheap deterministic stream of values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Seconds per launch of `kernel` on device tensors: the slope between a short and a long
/// batch.
fn per_launch(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    s: &Schedule,
    params: &[u8],
    threads: u64,
    tensors: &[&RawTensor],
    reps: usize,
) -> Result<f64, ForgeError> {
    // Launches are only recorded until the download submits them, so the time from the end
    // of recording to the end of the download is the GPU's, plus a fixed submission and
    // readback.
    let sync = rt.zeros::<f32>(1)?;
    let batch = |rt: &mut ForgeRuntime, n: usize| -> Result<f64, ForgeError> {
        for _ in 0..n {
            rt.launch_tensors(kernel, s, params, threads, tensors)?;
        }
        let t = Instant::now();
        // Any download waits for every launch before it; a one-element one adds no transfer
        // time, and no transfer-time noise, to the measurement.
        rt.download(&sync)?;
        Ok(t.elapsed().as_secs_f64())
    };
    batch(rt, 3)?; // warm-up: pipeline compilation, clocks
    let short = (reps / 5).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let a = batch(rt, short)?;
        let b = batch(rt, reps)?;
        best = best.min((b - a) / (reps - short) as f64);
    }
    Ok(best)
}

fn report(what: &str, s: &Schedule, t: f64, bytes: f64) {
    println!("{what} {s}: {:.1} us, {:.0} GB/s", t * 1e6, bytes / t / 1e9);
}

fn main() -> Result<(), ForgeError> {
    let m = arg(1, 16384);
    let n = arg(2, 16384);
    let reps = arg(3, 50);
    let mut rt = ForgeRuntime::new(8 << 30, None)?;
    println!("adapter: {:?}", rt.adapter_info().name);

    // gemv: m·n·4 bytes of A per launch.
    let a = values(m * n, 1);
    let x = values(n, 2);
    let (ta, tx, ty) = (rt.upload(&a)?, rt.upload(&x)?, rt.zeros::<f32>(m)?);
    let params = gemv::Params {
        m: m as u32,
        n: n as u32,
    };
    let tensors = [ta.raw(), tx.raw(), ty.raw()];
    for s in gemv::Kernel.tune_space().candidates() {
        rt.launch_tensors(
            &gemv::Kernel,
            &s,
            bytemuck::bytes_of(&params),
            m as u64 * 64,
            &tensors,
        )?;
        let y = rt.download(&ty)?;
        for r in [0, m / 2, m - 1] {
            let want: f64 = (0..n).map(|j| a[r * n + j] as f64 * x[j] as f64).sum();
            assert!(
                (y[r] as f64 - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "gemv {s}: row {r} is {}, expected {want}",
                y[r]
            );
        }
        let t = per_launch(
            &mut rt,
            &gemv::Kernel,
            &s,
            bytemuck::bytes_of(&params),
            m as u64 * 64,
            &tensors,
            reps,
        )?;
        report(
            &format!("gemv {m}x{n}"),
            &s,
            t,
            (m * n + n + m) as f64 * 4.0,
        );
    }
    drop((ta, tx, ty));

    // ternary_gemv: m·n/16 words of codes per launch; x comes from cache.
    let words = m * n.div_ceil(16);
    // Random bits: codes 0 to 3 alike, which the kernel reads as 0, +1, −1 and 0.
    let packed: Vec<u32> = values(words, 3).iter().map(|v| v.to_bits()).collect();
    let scale = values(m, 4);
    let (tx, tw, ts, ty) = (
        rt.upload(&x)?,
        rt.upload(&packed)?,
        rt.upload(&scale)?,
        rt.zeros::<f32>(m)?,
    );
    let params = ternary_gemv::Params {
        m: m as u32,
        k: n as u32,
    };
    let tensors = [tx.raw(), tw.raw(), ts.raw(), ty.raw()];
    for s in ternary_gemv::Kernel.tune_space().candidates() {
        let t = per_launch(
            &mut rt,
            &ternary_gemv::Kernel,
            &s,
            bytemuck::bytes_of(&params),
            m as u64 * 64,
            &tensors,
            reps,
        )?;
        report(
            &format!("ternary_gemv {m}x{n}"),
            &s,
            t,
            (words + n + 2 * m) as f64 * 4.0,
        );
    }
    drop((tx, tw, ts, ty));

    // p64_project: 64 bytes a record.
    let records = (m * n / 16).max(1);
    let words: Vec<u32> = values(records * 16, 5)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let weights = values(16, 6);
    let (tr, tw, to) = (
        rt.upload(&words)?,
        rt.upload(&weights)?,
        rt.zeros::<f32>(records)?,
    );
    let params = p64_project::Params {
        record_count: records as u32,
    };
    let tensors = [tr.raw(), tw.raw(), to.raw()];
    for s in p64_project::Kernel.tune_space().candidates() {
        let t = per_launch(
            &mut rt,
            &p64_project::Kernel,
            &s,
            bytemuck::bytes_of(&params),
            records as u64,
            &tensors,
            reps,
        )?;
        report(
            &format!("p64_project {records} records"),
            &s,
            t,
            records as f64 * 68.0,
        );
    }
    drop((tr, tw, to));

    // gemm: 2·d³ flops; "GB/s" below reads as GFLOP/s.
    let d = arg(4, 4096);
    let (ga, gb) = (values(d * d, 7), values(d * d, 8));
    let (ta, tb, tc) = (rt.upload(&ga)?, rt.upload(&gb)?, rt.zeros::<f32>(d * d)?);
    let du = d as u32;
    let params = gemm::Params {
        m: du,
        k: du,
        n: du,
    };
    let tensors = [ta.raw(), tb.raw(), tc.raw()];
    let threads = (du.div_ceil(64) * du.div_ceil(64) * 256) as u64;
    for s in gemm::Kernel.tune_space().candidates() {
        let t = per_launch(
            &mut rt,
            &gemm::Kernel,
            &s,
            bytemuck::bytes_of(&params),
            threads,
            &tensors,
            10,
        )?;
        report(
            &format!("gemm {d}^3 (GFLOP/s)"),
            &s,
            t,
            2.0 * (d as f64).powi(3),
        );
    }
    Ok(())
}
