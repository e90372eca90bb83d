//! A per-row softmax: one workgroup per row; the row's maximum and the sum of exponentials
//! are reduced through workgroup memory, then every element is normalised.
//!
//! `cargo run --example softmax`

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `y[r][c] = exp(x[r][c] - max_r) / Σ_c exp(x[r][c] - max_r)`, rows of length `cols`.
#[forge_kernel(workgroup = 64, threads = rows * 64, reference = softmax_reference,
    tolerance(abs = 1e-6, rel = 1e-4), case(rows = 1, cols = 1), case(rows = 3, cols = 100), case(rows = 10, cols = 64))]
pub fn softmax(x: &[f32; rows * cols], #[out] y: &mut [f32; rows * cols], rows: u32, cols: u32) {
    #[shared]
    let mut red = [0.0f32; 64];
    let row = workgroup_index();
    let lid = local_index();
    let base = row * cols;
    // Each invocation strides over the row; then a tree reduction finds the maximum.
    let mut m = f32::NEG_INFINITY;
    let mut c = lid;
    while c < cols {
        m = m.max(x[base + c]);
        c += 64;
    }
    red[lid] = m;
    workgroup_barrier();
    let mut s = 32u32;
    while s > 0 {
        if lid < s {
            red[lid] = red[lid].max(red[lid + s]);
        }
        workgroup_barrier();
        s /= 2;
    }
    let row_max = red[0];
    workgroup_barrier();
    // The same for the sum of exponentials.
    let mut acc = 0.0f32;
    c = lid;
    while c < cols {
        acc += (x[base + c] - row_max).exp();
        c += 64;
    }
    red[lid] = acc;
    workgroup_barrier();
    s = 32;
    while s > 0 {
        if lid < s {
            red[lid] += red[lid + s];
        }
        workgroup_barrier();
        s /= 2;
    }
    let total = red[0];
    c = lid;
    while c < cols {
        y[base + c] = (x[base + c] - row_max).exp() / total;
        c += 64;
    }
}

/// The reference, in f64.
pub fn softmax_reference(x: &[f32], _rows: u32, cols: u32) -> Result<Vec<f32>, ForgeError> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(cols as usize) {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
        let sum: f64 = row.iter().map(|v| (*v as f64 - m).exp()).sum();
        out.extend(row.iter().map(|v| ((*v as f64 - m).exp() / sum) as f32));
    }
    Ok(out)
}

pub fn main() -> Result<(), ForgeError> {
    let (rows, cols) = (8u32, 300u32);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 13) % 29) as f32 * 0.3 - 4.0)
        .collect();
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    let gpu = rt.softmax(&x, rows, cols)?;
    let cpu = softmax::cpu(&x, rows, cols)?;
    let reference = softmax_reference(&x, rows, cols)?;
    println!("row 0 (gpu):    {:?}", &gpu[..4]);
    println!("row 0 (oracle): {:?}", &cpu[..4]);
    for ((g, c), r) in gpu.iter().zip(&cpu).zip(&reference) {
        assert!(
            (g - r).abs() <= 1e-5 && (c - r).abs() <= 1e-5,
            "{g} {c} {r}"
        );
    }
    let report = certify(
        &mut rt,
        &softmax::Kernel,
        &softmax::DEFAULT_SCHEDULE,
        &CertOptions::new(5),
    )?;
    println!(
        "certification: {:?}, {} cases",
        report.verdict, report.cases
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
