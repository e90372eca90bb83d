//! Quickstart: write a kernel once, run it on the GPU, check it against its CPU oracle.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Without a GPU this runs on lavapipe, Mesa's software Vulkan driver
//! (`apt-get install mesa-vulkan-drivers`). It exits non-zero if the GPU and the oracle
//! disagree.

use wgsl_forge::prelude::*;

// Step 1: the kernel. `#[forge_kernel]` turns this function into a module `poly_hash` with
// the WGSL source (validated by naga while this file compiles), a `Params` uniform for the
// scalars, the binding layout, the CPU oracle `poly_hash::cpu`, and the typed method
// `rt.poly_hash(...)` on `ForgeRuntime`.
//
// Each invocation handles one element. `threads = n` launches at least `n` invocations,
// rounded up to whole workgroups, so the kernel guards with `i < n`.

/// Evaluates `c0 + c1·x + c2·x² + c3·x³` at every `x` by Horner's rule (one fused
/// multiply-add per step), and mixes the bits of every `x` into a 32-bit hash.
#[forge_kernel(workgroup = 64, threads = n, reference = poly_hash_reference)]
pub fn poly_hash(
    x: &[f32; n],
    #[out] y: &mut [f32; n],
    #[out] h: &mut [u32; n],
    c0: f32,
    c1: f32,
    c2: f32,
    c3: f32,
    n: u32,
) {
    let i = global_index();
    if i < n {
        let v = x[i];
        y[i] = v.mul_add(v.mul_add(v.mul_add(c3, c2), c1), c0);
        // Integer arithmetic wraps on the GPU and in the oracle alike.
        let mut b = v.to_bits();
        b ^= b >> 16;
        b *= 0x045d_9f3b;
        b ^= b >> 16;
        h[i] = b;
    }
}

/// An independent reference for the certifier: the same maths written plainly, in f64.
fn poly_hash_reference(
    x: &[f32],
    c0: f32,
    c1: f32,
    c2: f32,
    c3: f32,
    _n: u32,
) -> Result<(Vec<f32>, Vec<u32>), ForgeError> {
    let (c0, c1, c2, c3) = (c0 as f64, c1 as f64, c2 as f64, c3 as f64);
    let y = x
        .iter()
        .map(|&v| {
            let v = v as f64;
            (c0 + c1 * v + c2 * v * v + c3 * v * v * v) as f32
        })
        .collect();
    let h = x
        .iter()
        .map(|v| {
            let b = v.to_bits() ^ (v.to_bits() >> 16);
            let b = b.wrapping_mul(0x045d_9f3b);
            b ^ (b >> 16)
        })
        .collect();
    Ok((y, h))
}

fn main() -> Result<(), ForgeError> {
    // Step 2: a runtime. It picks the best adapter (FORGE_ADAPTER filters by name) and gets
    // a memory budget for its buffers. Without any adapter this is an error, never a panic.
    let mut rt = ForgeRuntime::new(64 << 20, None)?;
    println!(
        "adapter: {} ({:?})",
        rt.adapter_info().name,
        rt.adapter_info().backend
    );

    // Step 3: inputs. 1000 points spread over [-1, 1), not a multiple of the workgroup size.
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32 * 2.0 - 1.0).collect();
    let (c0, c1, c2, c3) = (0.5, -1.0, 0.25, 2.0);

    // Step 4: run on the GPU through the typed method. Its arguments are the kernel's
    // non-`#[out]` parameters in declaration order; the two `#[out]` bindings come back as a
    // tuple. Slice lengths are checked against `n` before anything touches the GPU.
    let (y_gpu, h_gpu) = rt.poly_hash(&x, c0, c1, c2, c3, n)?;

    // Step 5: the CPU oracle runs the same kernel body, with WGSL's semantics.
    let (y_cpu, h_cpu) = poly_hash::cpu(&x, c0, c1, c2, c3, n)?;

    for i in [0, 1, 500, 999] {
        println!(
            "x[{i:>3}] = {:>9.6}   y: gpu {:>10.6} cpu {:>10.6}   h: gpu {:#010x} cpu {:#010x}",
            x[i], y_gpu[i], y_cpu[i], h_gpu[i], h_cpu[i]
        );
    }

    // Step 6: compare. Floats may differ by reassociation and fma, within the kernel's
    // tolerance; integers must match exactly.
    let tol = poly_hash::Kernel.tolerance();
    let mut bad = 0;
    for i in 0..n as usize {
        if !tol.accepts(y_gpu[i] as f64, y_cpu[i] as f64) || h_gpu[i] != h_cpu[i] {
            if bad < 5 {
                eprintln!(
                    "mismatch at {i}: y {} vs {}, h {:#x} vs {:#x}",
                    y_gpu[i], y_cpu[i], h_gpu[i], h_cpu[i]
                );
            }
            bad += 1;
        }
    }
    if bad > 0 {
        eprintln!("{bad} of {n} elements disagree between the GPU and the oracle");
        std::process::exit(1);
    }
    println!(
        "GPU and oracle agree on all {n} elements (tolerance abs {:e}, rel {:e})",
        tol.abs, tol.rel
    );

    // Step 7: certify, as `forge certify` does for the built-in kernels: seeded random
    // inputs, GPU vs oracle, oracle vs the reference, and every output element written.
    let report =
        wgsl_forge::certify::certify_default(&mut rt, &poly_hash::Kernel, &Default::default())?;
    println!(
        "certification: {} over {} cases, max abs error {:.2e}",
        report.verdict, report.cases, report.max_abs_err
    );
    if !report.passed() {
        eprintln!("{}", report.failures.join("\n"));
        std::process::exit(1);
    }
    Ok(())
}
