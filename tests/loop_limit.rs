//! Issue 35, item 1: a loop that the driver cuts short is an error, never a wrong result.
//!
//! llvmpipe (lavapipe's Vulkan, the adapter of CI) gives each invocation 65,535 loop
//! iterations in all, every loop of the invocation together; past them each loop leaves as
//! if its condition had failed. A sum over 70,000 elements returned `Ok([65535.0])` there.
//! The device now guards every loop on such an adapter (`forge_core::emit::loop_guard`):
//! these tests run loops of 65,534 (complete: the oracle's result), 65,535 (cut at the
//! limit's last back edge: refused, see the module docs of the guard), 65,536 and 10^6
//! iterations, in `for`, `while` and `loop` forms, through every emission backend that
//! runs on lavapipe (WGSL, and SPIR-V, GLSL and HLSL through passthrough), and check that
//! the runtime keeps working after the error.
//!
//! On an adapter that does not limit loops the guard is not emitted and every size gives
//! the oracle's result: the same assertions hold with `cut` false.

use wgsl_forge::prelude::*;
use wgsl_forge::Backend;

/// Row sums, `for` form: `y[r] = Σ a[r·n + j]`, the kernel.
#[forge_kernel(workgroup = 64, threads = m, ext = false)]
pub fn sum_for(a: &[u32; m * n], #[out] y: &mut [u32; m], m: u32, n: u32) {
    let r = global_index();
    if r < m {
        let mut acc = 0u32;
        for j in 0..n {
            acc += a[r * n + j];
        }
        y[r] = acc;
    }
}

/// The same, `while` form.
#[forge_kernel(workgroup = 64, threads = m, ext = false)]
pub fn sum_while(a: &[u32; m * n], #[out] y: &mut [u32; m], m: u32, n: u32) {
    let r = global_index();
    if r < m {
        let mut acc = 0u32;
        let mut j = 0u32;
        while j < n {
            acc += a[r * n + j];
            j += 1;
        }
        y[r] = acc;
    }
}

/// The same, `loop` form, left by its `break`.
#[forge_kernel(workgroup = 64, threads = m, ext = false)]
pub fn sum_loop(a: &[u32; m * n], #[out] y: &mut [u32; m], m: u32, n: u32) {
    let r = global_index();
    if r < m {
        let mut acc = 0u32;
        let mut j = 0u32;
        loop {
            if j >= n {
                break;
            }
            acc += a[r * n + j];
            j += 1;
        }
        y[r] = acc;
    }
}

/// Two loops one after the other, each short: the driver's count is shared by both.
#[forge_kernel(workgroup = 64, threads = m, ext = false)]
pub fn two_loops(a: &[u32; m * n], #[out] y: &mut [u32; m], m: u32, n: u32) {
    let r = global_index();
    if r < m {
        let mut acc = 0u32;
        for j in 0..n {
            acc += a[r * n + j];
        }
        for j in 0..n {
            acc += a[r * n + j] * 2;
        }
        y[r] = acc;
    }
}

/// Nested loops of `n` by `n`: each short, together long; and a loop left by `return`,
/// which is not a cut.
#[forge_kernel(workgroup = 64, threads = m, ext = false)]
pub fn nested(a: &[u32; n], #[out] y: &mut [u32; m], m: u32, n: u32) {
    let r = global_index();
    if r < m {
        let mut acc = 0u32;
        for i in 0..n {
            for j in 0..n {
                acc += a[i] ^ a[j];
            }
        }
        y[r] = acc + r;
        let mut k = 0u32;
        loop {
            if k == r {
                return;
            }
            k += 1;
        }
    }
}

/// The forms, as (name, GPU call, oracle).
type Sum = fn(&mut ForgeRuntime, &[u32], u32, u32) -> Result<Vec<u32>, ForgeError>;
type Oracle = fn(&[u32], u32, u32) -> Result<Vec<u32>, ForgeError>;

fn forms() -> [(&'static str, Sum, Oracle); 3] {
    [
        ("for", sum_for::run, sum_for::cpu),
        ("while", sum_while::run, sum_while::cpu),
        ("loop", sum_loop::run, sum_loop::cpu),
    ]
}

fn runtime(backend: Backend) -> ForgeRuntime {
    ForgeRuntime::builder()
        .capacity(256 << 20)
        .emission(backend)
        .build()
        .unwrap_or_else(|e| panic!("a GPU adapter is required (lavapipe in CI): {e}"))
}

/// Whether this runtime's driver cuts loops (llvmpipe): then the guard is on.
fn limits_loops(rt: &ForgeRuntime) -> bool {
    rt.adapter_info()
        .name
        .to_ascii_lowercase()
        .contains("llvmpipe")
}

/// Values in 0..8, drawn from the index: not all ones, so a sum that stopped early or
/// read the wrong element shows.
fn data(len: usize) -> Vec<u32> {
    (0..len as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 29)
        .collect()
}

/// The backends that run here: WGSL everywhere; SPIR-V, GLSL and HLSL through passthrough
/// on Vulkan (GLSL and HLSL through glslang, which CI installs).
fn backends() -> Vec<Backend> {
    vec![Backend::Wgsl, Backend::Spirv, Backend::Glsl, Backend::Hlsl]
}

/// Whether the driver cuts the loop: yes, no, or either (exactly at the limit, where it
/// depends on how the shader form lays the loop out).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cut {
    Yes,
    No,
    Either,
}

fn cut_if(limited: bool, yes: bool) -> Cut {
    if limited && yes {
        Cut::Yes
    } else {
        Cut::No
    }
}

/// The oracle's result where the GPU completes; `LoopLimit`, naming the kernel, where the
/// driver cut it. Never a wrong `Ok`.
fn judge(what: &str, got: Result<Vec<u32>, ForgeError>, want: Vec<u32>, cut: Cut, kernel: &str) {
    match (got, cut) {
        (Ok(got), Cut::No | Cut::Either) => assert_eq!(got, want, "{what}"),
        (Err(ForgeError::LoopLimit { kernels, limit, .. }), Cut::Yes | Cut::Either) => {
            assert_eq!(kernels, format!("kernel `{kernel}`"), "{what}");
            assert_eq!(limit, 65_535, "{what}");
        }
        (got, cut) => panic!("{what}: cut {cut:?}, got {got:?} (the oracle says {want:?})"),
    }
}

#[test]
fn long_loops_are_refused_in_every_form_through_every_backend() {
    for backend in backends() {
        let mut rt = runtime(backend);
        let limited = limits_loops(&rt);
        for (form, run, cpu) in forms() {
            let kernel = format!("sum_{form}");
            for n in [65_534u32, 65_535, 65_536, 1_000_000] {
                let a = data(n as usize);
                let want = cpu(&a, 1, n).unwrap();
                let what = format!("{form} loop of {n} through {backend}");
                // At exactly 65,535 the loop is cut at its last back edge, before the test
                // that would have left it: refused here in every form (lavapipe with LLVM
                // 15), though a driver that lays the loop out otherwise may complete it.
                // Either way, never a wrong result.
                let cut = match n {
                    65_535 if limited => Cut::Either,
                    _ => cut_if(limited, n > 65_535),
                };
                judge(&what, run(&mut rt, &a, 1, n), want, cut, &kernel);
            }
            // The runtime goes on: a short loop after the error gives the oracle's result.
            let a = data(3 * 1000);
            let want = cpu(&a, 3, 1000).unwrap();
            assert_eq!(
                run(&mut rt, &a, 3, 1000).unwrap(),
                want,
                "{form} through {backend}"
            );
        }
    }
}

#[test]
fn loops_share_the_limit_and_a_return_is_not_a_cut() {
    let mut rt = runtime(Backend::Wgsl);
    let limited = limits_loops(&rt);
    // Two loops of 30,000 complete; of 40,000 each, the second is cut (80,000 in all).
    for n in [30_000u32, 40_000] {
        let a = data(2 * n as usize);
        let want = two_loops::cpu(&a, 2, n).unwrap();
        let got = two_loops::run(&mut rt, &a, 2, n);
        let cut = cut_if(limited, n == 40_000);
        judge(&format!("two loops of {n}"), got, want, cut, "two_loops");
    }
    // 200 × 200 nested iterations complete; 300 × 300 are cut in an inner loop. Each of
    // 200 invocations also leaves a loop by `return` after `r` passes.
    for n in [200u32, 300] {
        let a = data(n as usize);
        let want = nested::cpu(&a, 200, n).unwrap();
        let got = nested::run(&mut rt, &a, 200, n);
        judge(
            &format!("nested {n} × {n}"),
            got,
            want,
            cut_if(limited, n == 300),
            "nested",
        );
    }
}

#[test]
fn a_cut_in_launches_on_tensors_is_reported_at_the_download() {
    let mut rt = runtime(Backend::Wgsl);
    let limited = limits_loops(&rt);
    let n = 70_000u32;
    let a = data(n as usize);
    let x = rt.upload(&a).unwrap();
    let y = rt.zeros::<u32>(1).unwrap();
    sum_for::launch(&mut rt, &x, &y, 1, n).unwrap();
    // A short launch after it, in the same submission: the error names both.
    let short = rt.upload(&a[..10]).unwrap();
    let z = rt.zeros::<u32>(1).unwrap();
    sum_while::launch(&mut rt, &short, &z, 1, 10).unwrap();
    match rt.download(&z) {
        Err(ForgeError::LoopLimit { kernels, .. }) if limited => {
            assert_eq!(kernels, "one of the kernels `sum_for`, `sum_while`")
        }
        Ok(z) if !limited => assert_eq!(z, sum_while::cpu(&a[..10], 1, 10).unwrap()),
        other => panic!("limited {limited}: {other:?}"),
    }
    // Cleared: the next download of a complete launch is its result.
    sum_for::launch(&mut rt, &short, &z, 1, 10).unwrap();
    assert_eq!(
        rt.download(&z).unwrap(),
        sum_for::cpu(&a[..10], 1, 10).unwrap()
    );
    // The error says what to do.
    if limited {
        sum_for::launch(&mut rt, &x, &y, 1, n).unwrap();
        let e = rt.download(&y).unwrap_err().to_string();
        for needle in [
            "65535 loop iterations",
            "sum_for",
            "llvmpipe",
            "more invocations",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        assert!(e.len() < 600, "{e}");
    }
}
