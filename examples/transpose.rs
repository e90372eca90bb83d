//! A tiled transpose: each workgroup moves a 16×16 tile through workgroup memory, reading
//! rows and writing rows, so both global accesses are coalesced. The tile is padded to 17
//! columns so that reading a column hits 16 different banks.
//!
//! `cargo run --example transpose`

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `out` (cols×rows) = the transpose of `a` (rows×cols), both row-major.
#[forge_kernel(workgroup = 256, threads = rows.div_ceil(16) * cols.div_ceil(16) * 256,
    reference = transpose_reference, case(rows = 1, cols = 1), case(rows = 17, cols = 33), case(rows = 64, cols = 48))]
pub fn transpose(
    a: &[f32; rows * cols],
    #[out] out: &mut [f32; rows * cols],
    rows: u32,
    cols: u32,
) {
    #[shared]
    let mut tile = [0.0f32; 16 * 17];
    let tiles_x = cols.div_ceil(16);
    let t = workgroup_index();
    let ty = t / tiles_x;
    let tx = t % tiles_x;
    let lid = local_index();
    let ly = lid / 16;
    let lx = lid % 16;
    // Read a row of the tile from `a`.
    let r = ty * 16 + ly;
    let c = tx * 16 + lx;
    if r < rows && c < cols {
        tile[ly * 17 + lx] = a[r * cols + c];
    }
    workgroup_barrier();
    // Write a row of the transposed tile: element (lx, ly) of the tile.
    let orow = tx * 16 + ly;
    let ocol = ty * 16 + lx;
    if orow < cols && ocol < rows {
        out[orow * rows + ocol] = tile[lx * 17 + ly];
    }
}

/// The reference: index arithmetic.
pub fn transpose_reference(a: &[f32], rows: u32, cols: u32) -> Result<Vec<f32>, ForgeError> {
    let (rows, cols) = (rows as usize, cols as usize);
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = a[r * cols + c];
        }
    }
    Ok(out)
}

pub fn main() -> Result<(), ForgeError> {
    let (rows, cols) = (100u32, 37u32);
    let a: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
    let mut rt = ForgeRuntime::new(1 << 28, None)?;
    let gpu = rt.transpose(&a, rows, cols)?;
    let cpu = transpose::cpu(&a, rows, cols)?;
    println!("row 0 of the transpose (gpu): {:?}", &gpu[..6]);
    assert_eq!(gpu, transpose_reference(&a, rows, cols)?);
    assert_eq!(cpu, gpu);
    let report = certify(
        &mut rt,
        &transpose::Kernel,
        &transpose::DEFAULT_SCHEDULE,
        &CertOptions::new(4),
    )?;
    println!(
        "certification: {:?}, {} cases",
        report.verdict, report.cases
    );
    assert!(report.passed(), "{:?}", report.failures);
    Ok(())
}
