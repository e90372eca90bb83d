//! A pipeline written once: `y = A·x`, one row an invocation, with `x` streamed through
//! workgroup memory in tiles of `WG` elements, three tiles in a ring. `async_copy` starts
//! an element's copy and `async_wait(1)` waits until only the latest batch is in flight,
//! then is a workgroup barrier. On CUDA the copies run in the background (`cp.async`) while
//! the workgroup multiplies the tile before; in WGSL and in the CPU oracle a copy completes
//! at once and the wait is the barrier alone, so one source certifies everywhere.
//!
//! `cargo run --example staged_gemv`

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `y = A·x` for row-major `A` (`m×n`).
#[forge_kernel(workgroup = 64, threads = m, tune(workgroup = [64, 128]),
    reference = staged_gemv_reference, tolerance(abs = 1e-4, rel = 1e-4),
    case(m = 1, n = 1), case(m = 70, n = 300), case(m = 129, n = 64), case(m = 64, n = 1000))]
pub fn staged_gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
    // Tile `t` (elements `t·WG..`) lives in slot `t % 3`.
    #[shared]
    let mut ring = [0.0f32; 3 * WG];
    let row = global_index();
    let lid = local_index();
    let tiles = n.div_ceil(WG);
    // Each invocation copies one element of a tile; past `n`, a zero is stored instead.
    // Tiles 0 and 1 start before the loop, each a batch of its own: the first wait closes
    // tile 0's batch and returns at once, one batch being allowed in flight.
    if lid < n {
        async_copy(&mut ring[lid], &x[lid]);
    } else {
        ring[lid] = 0.0;
    }
    async_wait(1);
    if WG + lid < n {
        async_copy(&mut ring[WG + lid], &x[WG + lid]);
    } else {
        ring[WG + lid] = 0.0;
    }
    let mut acc = 0.0f32;
    for t in 0..tiles {
        // Closes tile `t + 1`'s batch and waits for tile `t`'s; the barrier also means
        // that every invocation is done with tile `t - 1`, whose slot is refilled below.
        async_wait(1);
        if row < m {
            let base = (t % 3) * WG;
            let len = WG.min(n - t * WG);
            for j in 0..len {
                acc = a[row * n + t * WG + j].mul_add(ring[base + j], acc);
            }
        }
        let next = (t + 2) * WG + lid;
        let slot = ((t + 2) % 3) * WG + lid;
        if next < n {
            async_copy(&mut ring[slot], &x[next]);
        } else {
            ring[slot] = 0.0;
        }
    }
    if row < m {
        y[row] = acc;
    }
}

/// The reference: each row's dot product in f64.
pub fn staged_gemv_reference(a: &[f32], x: &[f32], m: u32, n: u32) -> Result<Vec<f32>, ForgeError> {
    let n = n as usize;
    Ok((0..m as usize)
        .map(|r| {
            a[r * n..(r + 1) * n]
                .iter()
                .zip(x)
                .map(|(a, x)| *a as f64 * *x as f64)
                .sum::<f64>() as f32
        })
        .collect())
}

pub fn main() -> Result<(), ForgeError> {
    let (m, n) = (300u32, 1000u32);
    let a: Vec<f32> = (0..m * n).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
    let x: Vec<f32> = (0..n).map(|i| ((i % 5) as f32 - 2.0) / 4.0).collect();
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    let gpu = rt.staged_gemv(&a, &x, m, n)?;
    let reference = staged_gemv_reference(&a, &x, m, n)?;
    println!("y[..4] (gpu): {:?}", &gpu[..4]);
    for (g, r) in gpu.iter().zip(&reference) {
        assert!((g - r).abs() <= 1e-4 + 1e-4 * r.abs(), "{g} against {r}");
    }
    let report = certify(
        &mut rt,
        &staged_gemv::Kernel,
        &staged_gemv::DEFAULT_SCHEDULE,
        &CertOptions::new(4),
    )?;
    println!(
        "certification: {:?}, {} cases",
        report.verdict, report.cases
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
