//! The contract's kernels (`tests/contract_kernels`: DESIGN.md's second-edition example, the
//! `sim` module, copied verbatim, and the contract's atomics, written from its lines alone):
//! they compile and certify at every schedule of their tuning spaces, and GPU == oracle == a
//! reference written from the definitions, on odd sizes and past 65535 workgroups in each
//! dimension of `blur`'s grid. The browser page certifies the same file.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;

#[macro_use]
mod common;
use common::rt;

mod contract_kernels;
use contract_kernels::sim::{self, *};
use contract_kernels::*;

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

/// Every schedule of a kernel's tuning space certifies: GPU == oracle (== the reference
/// where it names one), every output written, on the kernel's certification cases.
fn certifies(rt: &mut ForgeRuntime, kernel: &dyn Kernel) {
    for s in kernel.tune_space().candidates() {
        let opts = CertOptions {
            detect_races: true,
            ..CertOptions::default()
        };
        let report = certify(rt, kernel, &s, &opts).unwrap();
        assert!(
            report.passed(),
            "{} at {s}: {:?}",
            kernel.name(),
            report.failures
        );
        assert!(report.cases > 0, "{} at {s}: no case ran", kernel.name());
    }
}

#[test]
fn blur_copies_the_image_at_every_shape_and_odd_size() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut rt = rt();
    let space = sim::blur::Kernel.tune_space().candidates();
    assert_eq!(space.len(), 2);
    for (w, h) in [(1u32, 1u32), (17, 5), (33, 31), (200, 3), (3, 200)] {
        let src = random(&mut rng, (w * h) as usize);
        // The reference: `dst[y·w + x] = src[y·w + x]` for every pixel of the image.
        let want = src.clone();
        for s in &space {
            assert_eq!(
                sim::blur::cpu_with(s, &src, w, h).unwrap(),
                want,
                "oracle {w}x{h} {s}"
            );
            assert_eq!(
                sim::blur::run_with(&mut rt, s, &src, w, h).unwrap(),
                want,
                "GPU {w}x{h} {s}"
            );
        }
        assert_eq!(rt.blur(&src, w, h).unwrap(), want);
    }
}

#[test]
fn blur_past_65535_workgroups_in_x_and_in_y() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut rt = rt();
    // 65537 workgroups of 16 in x; then 65536 workgroups of 16 in y.
    for (w, h) in [(65536u32 * 16 + 3, 2u32), (5, 65535 * 16 + 7)] {
        let src = random(&mut rng, (w * h) as usize);
        let s = sim::blur::DEFAULT_SCHEDULE;
        let gpu = sim::blur::run_with(&mut rt, &s, &src, w, h).unwrap();
        assert!(
            gpu == src,
            "GPU {w}x{h}: the folded grid missed or moved pixels"
        );
        let cpu = sim::blur::cpu_with(&s, &src, w, h).unwrap();
        assert!(cpu == src, "oracle {w}x{h}");
    }
}

#[test]
fn row_sums_and_scale_from_the_contract() {
    let mut rng = ChaCha8Rng::seed_from_u64(14);
    let mut rt = rt();
    for n in [1u32, 77, 70001] {
        let a = random(&mut rng, n as usize * 8);
        let y_ref: Vec<f32> = a
            .chunks(8)
            .map(|r| r.iter().fold(0.0, |s, v| s + v))
            .collect();
        let (y, _) = rt.row_sums(&a, n).unwrap();
        assert_eq!(y, y_ref, "row sums, n = {n}");
        let x = random(&mut rng, n as usize);
        let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(sim::scale::run(&mut rt, &x, 2.0, n).unwrap(), want);
        assert_eq!(sim::scale::cpu(&x, 2.0, n).unwrap(), want);
        let xh: Vec<f16> = x.iter().map(|v| f16::from_f32(*v)).collect();
        let wh: Vec<f16> = xh.iter().map(|v| f16::from_f32(v.to_f32() * 2.0)).collect();
        assert_eq!(rt.scale(&xh, 2.0, n).unwrap(), wh, "scale<f16>, n = {n}");
    }
    // `Body` is the host type itself: Pod, 32 bytes, as WGSL lays it out.
    let b = sim::Body {
        pos: [1.0, 2.0, 3.0, 4.0],
        vel: [0.5; 4],
    };
    assert_eq!(wgsl_forge::__private::bytemuck::bytes_of(&b).len(), 32);
}

#[test]
fn contract_atomics_match_a_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut rt = rt();
    for n in [1u32, 33, 4099] {
        // Values on a grid of 2^-10: every order of additions gives the same sum.
        let x: Vec<f32> = (0..n)
            .map(|_| rng.gen_range(-1024i32..1024) as f32 / 1024.0)
            .collect();
        let mut sums = vec![0f32; 16];
        // The highest claimant of each slot, `i + 1`; 0 where no invocation maps to it.
        let mut owner = vec![0u32; 16];
        for (i, v) in x.iter().enumerate() {
            sums[i % 16] += v;
            owner[i % 16] = i as u32 + 1;
        }
        let (gs, go) = rt.bins(&x, n).unwrap();
        let (cs, co) = bins::cpu(&x, n).unwrap();
        assert_eq!(gs, sums, "GPU sums, n = {n}");
        assert_eq!(cs, sums, "oracle sums, n = {n}");
        assert_eq!(go, owner, "GPU owners, n = {n}");
        assert_eq!(co, owner, "oracle owners, n = {n}");
    }
}

#[test]
fn every_contract_kernel_certifies_at_every_schedule() {
    let mut rt = rt();
    certifies(&mut rt, &sim::blur::Kernel);
    certifies(&mut rt, &sim::row_sums::Kernel);
    certifies(&mut rt, sim::scale::kernel::<f32>());
    certifies(&mut rt, &bins::Kernel);
}
