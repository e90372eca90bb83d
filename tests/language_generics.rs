//! Generic kernels: `fn k<T>` with `types(T = [..])` makes one instance per type, each with
//! its own WGSL, oracle and `Kernel` (named `k<f32>`), each certified; `k::run`, `k::cpu`,
//! `k::launch` and `rt.k(..)` are generic, so the instance follows from the argument types.
//! GPU == oracle == an independent reference, on odd sizes and past 65535 workgroups.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify_default, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

/// y = a·x, in the element type.
#[forge_kernel(threads = n, types(T = [f32, f16]))]
pub fn scale<T>(x: &[T; n], #[out] y: &mut [T; n], a: f32, n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * (a as T);
    }
}

/// Elementwise minimum, maximum and an order code, on integers and floats alike, with a
/// binding of a fixed type beside the generic ones.
#[forge_kernel(threads = n, types(T = [u32, i32, f32, f64]))]
pub fn pairwise<T>(
    a: &[T; n],
    b: &[T; n],
    #[out] lo: &mut [T; n],
    #[out] hi: &mut [T; n],
    #[out] order: &mut [u32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        lo[i] = a[i].min(b[i]);
        hi[i] = a[i].max(b[i]);
        order[i] = select(0u32, 1u32, a[i] < b[i]) + select(0u32, 2u32, a[i] == b[i]);
    }
}

fn halves(rng: &mut ChaCha8Rng, n: usize) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f32(rng.gen_range(-1024i32..1024) as f32 / 256.0))
        .collect()
}

#[test]
fn the_instance_follows_from_the_argument_types() {
    let mut rng = ChaCha8Rng::seed_from_u64(51);
    let mut rt = rt();
    assert_eq!(scale::NAME, "scale");
    assert_eq!(scale::kernel::<f32>().name(), "scale<f32>");
    assert_eq!(scale::kernel::<f16>().name(), "scale<f16>");
    assert_eq!(scale::kernel::<f16>().features(), [Feature::F16]);
    assert!(scale::kernel::<f32>().features().is_empty());
    assert!(scale::for_f16::WGSL.contains("enable f16;"));
    assert!(!scale::for_f32::WGSL.contains("f16"));
    for n in [1usize, 7, 1001, 70001] {
        // Values on grids where `2.5·x` is exact in both types.
        let xf: Vec<f32> = (0..n)
            .map(|_| rng.gen_range(-4096i32..4096) as f32 / 64.0)
            .collect();
        let xh = halves(&mut rng, n);
        let wf: Vec<f32> = xf.iter().map(|v| v * 2.5).collect();
        let wh: Vec<f16> = xh.iter().map(|v| f16::from_f32(v.to_f32() * 2.5)).collect();
        let ((gf, cf), (gh, ch)) = if n > 65535 {
            let s = common::one_per_group(scale::for_f32::DEFAULT_SCHEDULE);
            (
                (
                    scale::run_with(&mut rt, &s, &xf, 2.5, n as u32).unwrap(),
                    scale::cpu_with(&s, &xf, 2.5, n as u32).unwrap(),
                ),
                (
                    scale::run_with(&mut rt, &s, &xh, 2.5, n as u32).unwrap(),
                    scale::cpu_with(&s, &xh, 2.5, n as u32).unwrap(),
                ),
            )
        } else {
            (
                (
                    scale::run(&mut rt, &xf, 2.5, n as u32).unwrap(),
                    scale::cpu(&xf, 2.5, n as u32).unwrap(),
                ),
                (
                    rt.scale(&xh, 2.5, n as u32).unwrap(),
                    scale::cpu(&xh, 2.5, n as u32).unwrap(),
                ),
            )
        };
        assert_eq!((&cf, &gf), (&wf, &wf), "f32, n = {n}");
        assert_eq!((&ch, &gh), (&wh, &wh), "f16, n = {n}");
    }
}

#[test]
fn generic_launches_stay_on_the_device() {
    let mut rt = rt();
    let x: Vec<f16> = (0..300).map(|i| f16::from_f32(i as f32 / 8.0)).collect();
    let xt = rt.upload(&x).unwrap();
    let yt = rt.zeros::<f16>(300).unwrap();
    scale::launch(&mut rt, &xt, &yt, 0.5, 300).unwrap();
    let y = rt.download(&yt).unwrap();
    let want: Vec<f16> = x.iter().map(|v| f16::from_f32(v.to_f32() * 0.5)).collect();
    assert_eq!(y, want);
}

fn pairwise_reference<T: Copy + PartialOrd>(a: &[T], b: &[T]) -> (Vec<T>, Vec<T>, Vec<u32>) {
    let lo = a
        .iter()
        .zip(b)
        .map(|(x, y)| if y < x { *y } else { *x })
        .collect();
    let hi = a
        .iter()
        .zip(b)
        .map(|(x, y)| if y > x { *y } else { *x })
        .collect();
    let order = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x < y) as u32 + 2 * (x == y) as u32)
        .collect();
    (lo, hi, order)
}

#[test]
fn integer_and_float_instances_of_one_kernel() {
    let mut rng = ChaCha8Rng::seed_from_u64(52);
    let mut rt = rt();
    let names: Vec<&str> = pairwise::KERNELS.iter().map(|k| k.name()).collect();
    assert_eq!(
        names,
        [
            "pairwise<u32>",
            "pairwise<i32>",
            "pairwise<f32>",
            "pairwise<f64>"
        ]
    );
    for n in [5usize, 2049, 70001] {
        macro_rules! check {
            ($t:ty, $gen:expr) => {{
                let a: Vec<$t> = (0..n).map(|_| $gen(&mut rng)).collect();
                let mut b: Vec<$t> = (0..n).map(|_| $gen(&mut rng)).collect();
                b[0] = a[0];
                let want = pairwise_reference(&a, &b);
                let (gpu, cpu) = gpu_and_cpu!(&mut rt, pairwise, n, (&a, &b, n as u32));
                assert_eq!(cpu, want, "oracle, {}, n = {n}", stringify!($t));
                assert_eq!(gpu, want, "GPU, {}, n = {n}", stringify!($t));
            }};
        }
        check!(u32, |r: &mut ChaCha8Rng| r.gen_range(0..100u32));
        check!(i32, |r: &mut ChaCha8Rng| r.gen_range(-50..50i32));
        check!(f32, |r: &mut ChaCha8Rng| r.gen_range(-8i32..8) as f32 * 0.5);
        check!(f64, |r: &mut ChaCha8Rng| r.gen_range(-1.0..1.0f64));
    }
    // `gpu_and_cpu!` reads the default schedule of one instance; they all share it.
    assert_eq!(
        pairwise::for_f64::DEFAULT_SCHEDULE,
        pairwise::for_u32::DEFAULT_SCHEDULE
    );
}

#[test]
fn every_instance_certifies() {
    let mut rt = rt();
    for kernel in scale::KERNELS.iter().chain(pairwise::KERNELS) {
        let report = certify_default(&mut rt, *kernel, &CertOptions::default()).unwrap();
        assert!(report.passed(), "{}: {:?}", kernel.name(), report.failures);
        assert!(report.cases >= 3, "{}", kernel.name());
    }
    // The f16 instance's default tolerance is half precision's, the f32's float's.
    assert_eq!(
        scale::kernel::<f16>().tolerance(),
        wgsl_forge::Tolerance::HALF
    );
    assert_eq!(
        scale::kernel::<f32>().tolerance(),
        wgsl_forge::Tolerance::FLOAT
    );
    assert_eq!(
        pairwise::kernel::<u32>().tolerance(),
        wgsl_forge::Tolerance::EXACT
    );
}

#[test]
fn a_device_without_f16_refuses_only_the_f16_instance() {
    let mut rt = ForgeRuntime::builder()
        .capacity(64 << 20)
        .without_feature(Feature::F16)
        .build()
        .unwrap();
    let err = rt.scale(&[f16::ONE; 4], 2.0, 4).unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::MissingFeature {
                feature: "SHADER_F16",
                kernel: "scale<f16>",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(rt.scale(&[1.5f32; 4], 2.0, 4).unwrap(), vec![3.0; 4]);
}
