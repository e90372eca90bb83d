//! A histogram with atomics: each workgroup counts into atomic workgroup memory, then adds
//! its counts to the global bins with one atomic per bin, not one per element.
//!
//! `cargo run --example histogram`

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `bins[b]` += the number of values `v` with `v % 64 == b`.
#[forge_kernel(workgroup = 128, threads = n, reference = histogram_reference,
    case(n = 1), case(n = 127), case(n = 4096))]
pub fn histogram64(values: &[u32; n], bins: &mut [Atomic<u32>; 64], n: u32) {
    // Calling atomic methods on a workgroup array makes its elements atomics.
    #[shared]
    let mut local = [0u32; 64];
    let i = global_index();
    if i < n {
        local[values[i] % 64].fetch_add(1);
    }
    workgroup_barrier();
    let lid = local_index();
    if lid < 64 {
        let c = local[lid].load();
        if c > 0 {
            bins[lid].fetch_add(c);
        }
    }
}

/// The reference: a sequential count.
pub fn histogram_reference(values: &[u32], bins: &mut [u32], _n: u32) -> Result<(), ForgeError> {
    for v in values {
        bins[(*v % 64) as usize] += 1;
    }
    Ok(())
}

pub fn main() -> Result<(), ForgeError> {
    let values: Vec<u32> = (0..100_000u32)
        .map(|i| i.wrapping_mul(2654435761) >> 7)
        .collect();
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    // `bins` is `&mut`: the counts are added to what is there.
    let mut gpu = vec![0u32; 64];
    rt.histogram64(&values, &mut gpu, values.len() as u32)?;
    let mut cpu = vec![0u32; 64];
    histogram64::cpu(&values, &mut cpu, values.len() as u32)?;
    let mut reference = vec![0u32; 64];
    histogram_reference(&values, &mut reference, 0)?;
    println!("bins (gpu):    {:?}", &gpu[..8]);
    println!("bins (oracle): {:?}", &cpu[..8]);
    assert_eq!(gpu, reference);
    assert_eq!(cpu, reference);
    let report = certify(
        &mut rt,
        &histogram64::Kernel,
        &histogram64::DEFAULT_SCHEDULE,
        &CertOptions::new(2),
    )?;
    println!(
        "certification: {:?}, {} cases",
        report.verdict, report.cases
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
