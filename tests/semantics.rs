//! What the runtime promises about a kernel's outputs and schedules, on the real adapter
//! (lavapipe in CI):
//! - `#[out]` bindings start zeroed only where the runtime allocates them: `run` zeroes
//!   every call's outputs, `launch` binds the tensor as it is, so an accumulating kernel
//!   launched twice counts twice unless the tensor is cleared;
//! - a kernel must cover `ITEMS` items per invocation: one that ignores `ITEMS` computes
//!   part of its output at `ITEMS > 1`, and certification fails it there.

use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

/// `bins[v % 16] += 1` for every value: an accumulator.
#[forge_kernel(threads = n, ext = false)]
pub fn count16(values: &[u32; n], #[out] bins: &mut [Atomic<u32>; 16], n: u32) {
    let i = global_index();
    if i < n {
        bins[values[i] % 16].fetch_add(1);
    }
}

/// `y = x + 1`, one element per invocation whatever `ITEMS` is: wrong for `ITEMS > 1`.
#[forge_kernel(workgroup = 64, threads = n, tune(items = [1, 2]), ext = false)]
pub fn ignores_items(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + 1.0f32;
    }
}

/// The same, covering `ITEMS` items per invocation.
#[forge_kernel(workgroup = 64, threads = n, tune(items = [1, 2]), ext = false)]
pub fn covers_items(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let base = workgroup_index() * WG * ITEMS + local_index();
    for k in 0..ITEMS {
        let i = base + k * WG;
        if i < n {
            y[i] = x[i] + 1.0f32;
        }
    }
}

fn runtime() -> ForgeRuntime {
    ForgeRuntime::new(64 << 20, None).unwrap_or_else(|e| {
        panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}")
    })
}

/// The counts a sequential loop gives.
fn counts(values: &[u32]) -> Vec<u32> {
    let mut bins = vec![0u32; 16];
    for v in values {
        bins[(v % 16) as usize] += 1;
    }
    bins
}

#[test]
fn run_zeroes_outputs_and_launch_binds_them_as_they_are() {
    let mut rt = runtime();
    let values: Vec<u32> = (0..5000u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    let want = counts(&values);

    // `run`: every call starts from zeros, even on pooled buffers the last call filled.
    for _ in 0..3 {
        assert_eq!(count16::run(&mut rt, &values, 5000).unwrap(), want);
    }

    // `launch`: the tensor is bound as it is. Two launches count twice ...
    let input = rt.upload(&values).unwrap();
    let bins = rt.zeros::<u32>(16).unwrap();
    count16::launch(&mut rt, &input, &bins, 5000).unwrap();
    count16::launch(&mut rt, &input, &bins, 5000).unwrap();
    let twice: Vec<u32> = want.iter().map(|c| 2 * c).collect();
    assert_eq!(rt.download(&bins).unwrap(), twice);
    // ... a clear in between makes each launch count once ...
    rt.clear(&bins).unwrap();
    count16::launch(&mut rt, &input, &bins, 5000).unwrap();
    assert_eq!(rt.download(&bins).unwrap(), want);
    // ... and a tensor that holds data is added to, not overwritten.
    rt.write(&bins, &[100; 16]).unwrap();
    count16::launch(&mut rt, &input, &bins, 5000).unwrap();
    let plus: Vec<u32> = want.iter().map(|c| c + 100).collect();
    assert_eq!(rt.download(&bins).unwrap(), plus);
}

#[test]
fn a_kernel_must_cover_items_per_invocation() {
    let mut rt = runtime();
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let want: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    let two = Schedule::new(64, 2, 1);
    // Ignoring ITEMS: at ITEMS = 2 half the invocations run, so half the output is left
    // as the runtime allocated it (zeros), and certification names an unwritten element.
    let y = ignores_items::run_with(&mut rt, &two, &x, n).unwrap();
    let written = y.iter().zip(&want).filter(|(g, w)| g == w).count();
    assert_eq!(written, 512, "8 workgroups of 64 invocations");
    let report = certify(
        &mut rt,
        &ignores_items::Kernel,
        &two,
        &CertOptions::default(),
    )
    .unwrap();
    assert!(!report.passed());
    assert!(
        report.failures.iter().any(|f| f.contains("never written")),
        "{:?}",
        report.failures
    );
    let one = Schedule::with_workgroup(64);
    assert!(certify(
        &mut rt,
        &ignores_items::Kernel,
        &one,
        &CertOptions::default()
    )
    .unwrap()
    .passed());

    // Covering ITEMS: the same result at every schedule, and certified at each.
    for s in covers_items::Kernel.tune_space().candidates() {
        assert_eq!(
            covers_items::run_with(&mut rt, &s, &x, n).unwrap(),
            want,
            "{s}"
        );
        let report = certify(&mut rt, &covers_items::Kernel, &s, &CertOptions::default()).unwrap();
        assert!(report.passed(), "{s}: {:?}", report.failures);
    }
}
