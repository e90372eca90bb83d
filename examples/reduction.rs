//! A workgroup reduction: each workgroup of 256 sums its 256 elements through workgroup
//! memory, halving the active invocations each step, with a barrier inside the loop.
//!
//! `cargo run --example reduction`: runs on the GPU and the oracle, compares them with an
//! f64 reference, then certifies the kernel (GPU vs oracle vs reference on seeded vectors).

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `sums[g]` = the sum of `x[256g .. 256g + 256]` (missing elements count as 0).
#[forge_kernel(workgroup = 256, threads = n, reference = block_sums_reference,
    case(n = 1), case(n = 255), case(n = 256), case(n = 5000))]
pub fn block_sums(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(256)], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 256];
    let lid = local_index();
    let i = global_index();
    // Out-of-range invocations contribute 0 but still reach every barrier.
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    // `stride` depends only on literals: the loop is uniform, so barriers may sit in it.
    let mut stride = 128u32;
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

/// The reference: f64 sums of each block.
pub fn block_sums_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    Ok(x.chunks(256)
        .map(|c| c.iter().map(|v| *v as f64).sum::<f64>() as f32)
        .collect())
}

pub fn main() -> Result<(), ForgeError> {
    // 1. Data: 10 000 values, so the last block is partial.
    let x: Vec<f32> = (0..10_000)
        .map(|i| ((i * 37) % 101) as f32 / 101.0 - 0.5)
        .collect();
    // 2. The GPU, through the generated typed method.
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    let gpu = rt.block_sums(&x, x.len() as u32)?;
    // 3. The oracle runs the same kernel on the CPU with WGSL semantics.
    let cpu = block_sums::cpu(&x, x.len() as u32)?;
    let reference = block_sums_reference(&x, 0)?;
    println!("block sums (gpu):    {:?}", &gpu[..4]);
    println!("block sums (oracle): {:?}", &cpu[..4]);
    for ((g, c), r) in gpu.iter().zip(&cpu).zip(&reference) {
        assert!(
            (g - c).abs() <= 1e-4 && (c - r).abs() <= 1e-4,
            "{g} {c} {r}"
        );
    }
    // 4. Certification: seeded random cases, three checks each.
    let report = certify(
        &mut rt,
        &block_sums::Kernel,
        &block_sums::DEFAULT_SCHEDULE,
        &CertOptions::new(1),
    )?;
    println!(
        "certification: {:?}, {} cases, max error {:.2e}",
        report.verdict, report.cases, report.max_abs_err
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
