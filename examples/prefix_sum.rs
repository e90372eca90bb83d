//! A workgroup prefix sum (inclusive scan) of each block of 256, Hillis–Steele style with
//! two workgroup buffers, so no invocation reads a slot another is writing in the same step.
//!
//! `cargo run --example prefix_sum`

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `y[i]` = the sum of `x` from the start of `i`'s block of 256 up to `i`, in `u32`
/// arithmetic that wraps (so the result is exact and order-independent).
#[forge_kernel(workgroup = 256, threads = n, reference = scan_reference,
    case(n = 1), case(n = 256), case(n = 1000))]
pub fn block_scan(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    #[shared]
    let mut a = [0u32; 256];
    #[shared]
    let mut b = [0u32; 256];
    let lid = local_index();
    let i = global_index();
    if i < n {
        a[lid] = x[i];
    }
    workgroup_barrier();
    let mut offset = 1u32;
    let mut from_a = true;
    while offset < 256 {
        // Read one buffer, write the other; swap roles each step.
        if from_a {
            let mut v = a[lid];
            if lid >= offset {
                v += a[lid - offset];
            }
            b[lid] = v;
        } else {
            let mut v = b[lid];
            if lid >= offset {
                v += b[lid - offset];
            }
            a[lid] = v;
        }
        workgroup_barrier();
        from_a = !from_a;
        offset *= 2;
    }
    // 8 steps: the last one wrote `a`.
    if i < n {
        y[i] = a[lid];
    }
}

/// The reference: a running sum restarted every 256 elements.
pub fn scan_reference(x: &[u32], _n: u32) -> Result<Vec<u32>, ForgeError> {
    let mut out = Vec::with_capacity(x.len());
    for block in x.chunks(256) {
        let mut s = 0u32;
        for v in block {
            s = s.wrapping_add(*v);
            out.push(s);
        }
    }
    Ok(out)
}

pub fn main() -> Result<(), ForgeError> {
    let x: Vec<u32> = (0..3000u32).map(|i| i % 17).collect();
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    let gpu = rt.block_scan(&x, x.len() as u32)?;
    let cpu = block_scan::cpu(&x, x.len() as u32)?;
    println!("scan (gpu):    {:?}", &gpu[..8]);
    println!("scan (oracle): {:?}", &cpu[..8]);
    assert_eq!(gpu, scan_reference(&x, 0)?);
    assert_eq!(cpu, gpu);
    let report = certify(
        &mut rt,
        &block_scan::Kernel,
        &block_scan::DEFAULT_SCHEDULE,
        &CertOptions::new(3),
    )?;
    println!(
        "certification: {:?}, {} cases",
        report.verdict, report.cases
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
