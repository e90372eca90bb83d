//! The browser example's native half: a kernel of our own, written once with
//! `#[forge_kernel]`, whose WGSL the page in this folder runs on the browser's WebGPU and
//! whose CPU oracle gives the result the page checks the GPU's against.
//!
//! ```text
//! cargo run --example web -- OUT_DIR   # writes OUT_DIR/kernel.json; see examples/web/README.md
//! ```

use wgsl_forge::prelude::*;

/// Scrambles every value with `rounds` rounds of Marsaglia's xorshift32: integer work, so
/// the browser's GPU and the oracle must agree bit for bit.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn xorshift_rounds(x: &[u32; n], #[out] y: &mut [u32; n], rounds: u32, n: u32) {
    let i = global_index();
    if i < n {
        let mut v = x[i];
        for _r in 0..rounds {
            v ^= v << 13;
            v ^= v >> 17;
            v ^= v << 5;
        }
        y[i] = v;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: cargo run --example web -- OUT_DIR")?;
    // Not a multiple of the workgroup: the last workgroup's guard is exercised too.
    let n: u32 = 100_003;
    let rounds: u32 = 7;
    let x: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761) | 1).collect();
    let expected = xorshift_rounds::cpu(&x, rounds, n)?;
    let params = xorshift_rounds::Params { rounds, n };
    let json = serde_json::json!({
        "kernel": "xorshift_rounds",
        "wgsl": xorshift_rounds::WGSL,
        "workgroup": 64,
        "n": n,
        "params": bytemuck::cast_slice::<u8, u32>(bytemuck::bytes_of(&params)),
        "x": x,
        "expected": expected,
    });
    let path = std::path::Path::new(&out).join("kernel.json");
    std::fs::write(&path, serde_json::to_vec(&json)?)?;
    println!(
        "wrote {} ({n} values, oracle result included)",
        path.display()
    );
    Ok(())
}
