//! Where the time of the multi-pass built-ins goes, on the adapter at hand: each phase of
//! the global top-k's radix select timed alone, the block top-k with `k = 1` and `k = 8`
//! (on three kinds of data, `forge bench`'s among them),
//! and FFT passes of growing radix, all with `ForgeRuntime::time_calls` (the timing of
//! `forge bench`). A diagnostic for `docs/PERFORMANCE.md`'s "what limits it" rows.
//!
//! `cargo run --release -p forge-cli --example topk_fft_phases [--quick]`

use wgsl_forge::kernels::fft::fft_pass;
use wgsl_forge::kernels::topk::{
    topk_radix_collect, topk_radix_hist, topk_radix_mark, topk_radix_refine, topk_radix_select,
    topk_radix_sort, topk_rows_record,
};
use wgsl_forge::prelude::*;
use wgsl_forge::timing::TimingOptions;

fn main() -> Result<(), ForgeError> {
    let quick = std::env::args().any(|a| a == "--quick");
    let mut rt = ForgeRuntime::new(60000 << 20, None)?;
    let opts = TimingOptions::default();

    // Top-k over `n` values, twice: a low-discrepancy sequence (every block alike) and
    // normal values (as the peers' `randn`).
    let n: u32 = if quick { 1 << 16 } else { 1 << 26 };
    for what in ["spread", "normal", "bench"] {
        let x = match what {
            "spread" => spread(n as usize),
            "normal" => normals(n as usize),
            // The data `forge bench` times.
            _ => forge_cli::bench::calls::random("topk", n as usize, true),
        };
        topk_phases(&mut rt, &opts, &x, what)?;
    }

    // FFT passes of radix m over 2^24 complex values (one pass each, n = m).
    let len: u32 = if quick { 1 << 14 } else { 1 << 24 };
    let complex: Vec<[f32; 2]> = spread(2 * len as usize)
        .chunks_exact(2)
        .map(|c| [c[0], c[1]])
        .collect();
    let data = rt.upload(&complex)?;
    let out = rt.zeros::<[f32; 2]>(len as usize)?;
    for m in [1u32, 4, 16, 64, 256, 1024, 2048, 4096] {
        let t = rt.time_calls("fft_pass", &opts, |rt| {
            fft_pass::launch(rt, &data, &out, len, m, m, 1, 0, 1.0)
        })?;
        let gbps = 2.0 * len as f64 * 8.0 / t.median_ns;
        println!("fft_pass len={len} m={m}: {:.1} us, {gbps:.0} GB/s", us(t));
    }
    // The three passes of 2^20 = 128·128·64.
    let big = len.min(1 << 20);
    for (m, ns) in [(128u32, 1u32), (128, 128), (big / 16384, 16384)] {
        let n = big;
        let t = rt.time_calls("fft_pass", &opts, |rt| {
            fft_pass::launch(rt, &data, &out, len, m, n, ns, 0, 1.0)
        })?;
        let gbps = 2.0 * len as f64 * 8.0 / t.median_ns;
        println!(
            "fft_pass len={len} n={n} m={m} ns={ns}: {:.1} us, {gbps:.0} GB/s",
            us(t)
        );
    }
    Ok(())
}

fn us(t: wgsl_forge::Timing) -> f64 {
    t.median_ns / 1e3
}

/// `len` values in [-1, 1): a Weyl sequence, evenly spread and alike in every block.
fn spread(len: usize) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(2654435761) >> 8) as f32 / (1 << 24) as f32) * 2.0 - 1.0)
        .collect()
}

/// `len` standard normal values: xorshift uniforms through Box–Muller.
fn normals(len: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    };
    (0..len)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
        })
        .collect()
}

/// Each phase of the global top-k, and the block top-k, on `x`.
fn topk_phases(
    rt: &mut ForgeRuntime,
    opts: &TimingOptions,
    x: &[f32],
    what: &str,
) -> Result<(), ForgeError> {
    let n = x.len() as u32;
    let vals = rt.upload::<[f32; 4]>(bytemuck::cast_slice(x))?;
    let n4 = n / 4;
    let groups = n.div_ceil(65536);
    let hist = rt.zeros::<u32>(8 * 2048)?;
    let state = rt.zeros::<u32>(8)?;
    let marks = rt.zeros::<[u32; 4]>(groups as usize * 512)?;
    let counts = rt.zeros::<u32>(groups as usize)?;
    let regions = rt.zeros::<u32>(groups as usize * 2048)?;
    let (ov, oi) = (rt.zeros::<f32>(100)?, rt.zeros::<u32>(100)?);
    let (k, cap) = (100, 256);
    let sample = (n4 >> 16).clamp(1, 256);
    let sample_grid = n4.div_ceil(sample).div_ceil(4).clamp(1, 1 << 16);
    let t = rt.time_calls("sample", opts, |rt| {
        rt.clear(&hist)?;
        rt.clear(&state)?;
        topk_radix_hist::launch(rt, &vals, &state, &hist, n, 0, sample_grid, sample, 6)?;
        topk_radix_select::launch(rt, &hist, &state, 0, 6, k, 1, cap)?;
        topk_radix_hist::launch(rt, &vals, &state, &hist, n, 1, sample_grid, sample, 7)?;
        topk_radix_select::launch(rt, &hist, &state, 1, 7, k, 1, cap)
    })?;
    println!(
        "topk_global {what} n={n}: clears and the sample's two levels: {:.1} us",
        us(t)
    );
    let t = rt.time_calls("mark", opts, |rt| {
        topk_radix_mark::launch(rt, &vals, &state, &hist, &marks, n)
    })?;
    println!(
        "topk_global {what} n={n}: full pass (level 0, bitmap): {:.1} us",
        us(t)
    );
    let grid = n.div_ceil(128).min(1 << 18);
    let t = rt.time_calls("levels", opts, |rt| {
        rt.clear(&hist)?;
        rt.clear(&state)?;
        topk_radix_hist::launch(rt, &vals, &state, &hist, n, 0, sample_grid, sample, 6)?;
        topk_radix_select::launch(rt, &hist, &state, 0, 6, k, 1, cap)?;
        topk_radix_hist::launch(rt, &vals, &state, &hist, n, 1, sample_grid, sample, 7)?;
        topk_radix_select::launch(rt, &hist, &state, 1, 7, k, 1, cap)?;
        topk_radix_mark::launch(rt, &vals, &state, &hist, &marks, n)?;
        topk_radix_select::launch(rt, &hist, &state, 0, 0, k, 0, cap)?;
        for level in 1..6 {
            let g = if level < 2 { grid } else { grid.min(1 << 12) };
            topk_radix_refine::launch(rt, &vals, &marks, &state, &hist, n, level, g)?;
            topk_radix_select::launch(rt, &hist, &state, level, level, k, 0, cap)?;
        }
        Ok(())
    })?;
    println!(
        "topk_global {what} n={n}: sample, full pass, six levels (histograms and selects): {:.1} us",
        us(t)
    );
    let st: Vec<u32> = rt.download(&state)?;
    println!("topk_global {what} n={n}: state after the levels {st:?}");
    let t = rt.time_calls("select", opts, |rt| {
        topk_radix_select::launch(rt, &hist, &state, 5, 5, k, 0, cap)
    })?;
    println!(
        "topk_global {what} n={n}: one select (skipped level): {:.1} us",
        us(t)
    );
    let t = rt.time_calls("collect", opts, |rt| {
        topk_radix_collect::launch(rt, &vals, &marks, &state, &counts, &regions, n)
    })?;
    println!("topk_global {what} n={n}: collect: {:.1} us", us(t));
    let t = rt.time_calls("sort", opts, |rt| {
        topk_radix_sort::launch(rt, &vals, &counts, &regions, &ov, &oi, n, k, groups, cap)
    })?;
    println!("topk_global {what} n={n}: sort: {:.1} us", us(t));
    let found: Vec<u32> = rt.download(&counts)?;
    println!(
        "topk_global {what} n={n}: candidates {}",
        found.iter().sum::<u32>()
    );
    for kk in [1u32, 8] {
        let outs = (n / 64 * kk) as usize;
        let (bv, bi) = (rt.zeros::<f32>(outs)?, rt.zeros::<u32>(outs)?);
        let t = rt.time_calls("rows", opts, |rt| {
            topk_rows_record(rt, &vals, n, 64, kk, true, &bv, &bi, None)
        })?;
        println!("topk_blocks {what} n={n} block=64 k={kk}: {:.1} us", us(t));
    }
    drop(vals);

    Ok(())
}
