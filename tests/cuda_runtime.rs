//! The CUDA runtime on a real NVIDIA GPU (the `cuda` feature): built-ins, the examples'
//! kernels (`tests/example_kernels`) and the contract's (`tests/contract_kernels`) through
//! their typed calls, launches on tensors and the certifier, against the CPU oracle and
//! f64 references on random data at odd sizes; the timers; and the errors a CUDA runtime
//! gives.
//!
//! **Not run by CI**, which has no GPU and no libcuda: it runs on the H200. Build it with
//! `cargo test --release --features cuda --test cuda_runtime --no-run`, carry the binary,
//! and run it with `LD_LIBRARY_PATH` naming the folders of libcuda (the driver's) and
//! libnvrtc (`/usr/local/cuda-13.0/targets/x86_64-linux/lib` there). Without a CUDA device
//! every test fails: none skips.

#![cfg(feature = "cuda")]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::kernels::{axpy::axpy, gemm::gemm};
use wgsl_forge::prelude::*;
use wgsl_forge::{Backend, DynArgs, ElemType, HostBuffer, ScalarType, ScalarValue};

mod contract_kernels;
mod coop_kernels;
mod example_kernels;
use contract_kernels::sim::{self, *};
use contract_kernels::*;

fn rt() -> ForgeRuntime {
    // A missing device fails the test: this file exists to run on one.
    ForgeRuntime::builder()
        .capacity(8 << 30)
        .cuda(0)
        .build()
        .expect("a CUDA device, libcuda and libnvrtc (this test runs on the H200)")
}

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

#[test]
fn the_runtime_is_cuda_and_its_topology_names_the_backend() {
    let rt = rt();
    assert!(rt.is_cuda());
    assert_eq!(rt.emission(), Backend::Cuda);
    assert_eq!(rt.profile().backend, "cuda");
    assert_eq!(rt.adapter_info().vendor, 0x10de);
    assert!(!rt.adapter_info().name.is_empty());
    assert_eq!(rt.limits().max_compute_invocations_per_workgroup, 1024);
    assert!(rt.supports(Feature::Subgroups) && rt.supports(Feature::F16));
    // Two runtimes on one device: one topology, so one manifest directory.
    let again = ForgeRuntime::builder().cuda(0).build().unwrap();
    assert_eq!(rt.topology_hash(), again.topology_hash());
    assert_ne!(rt.id(), again.id());
    println!(
        "{} ({}), topology {}",
        rt.adapter_info().name,
        rt.adapter_info().driver_info,
        rt.topology_hash()
    );
}

#[test]
fn gemm_and_gemv_match_f64_references_at_odd_shapes() {
    let mut rt = rt();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for (m, k, n) in [
        (1, 1, 1),
        (7, 13, 29),
        (67, 71, 73),
        (130, 37, 133),
        (3, 257, 1),
    ] {
        let a = random(&mut rng, m * k);
        let b = random(&mut rng, k * n);
        let got = rt.gemm(&a, &b, m, k, n).unwrap();
        for i in 0..m {
            for j in 0..n {
                let (mut want, mut mag) = (0f64, 0f64);
                for p in 0..k {
                    let t = a[i * k + p] as f64 * b[p * n + j] as f64;
                    want += t;
                    mag += t.abs();
                }
                let err = (got[i * n + j] as f64 - want).abs();
                let bound = 2.0 * k as f64 * f32::EPSILON as f64 * mag + 1e-30;
                assert!(
                    err <= bound,
                    "gemm {m}x{k}x{n} [{i},{j}]: {} vs {want}",
                    got[i * n + j]
                );
            }
        }
        // Every schedule against the oracle at that schedule.
        let (mu, ku, nu) = (m as u32, k as u32, n as u32);
        for s in gemm::Kernel.tune_space().candidates() {
            let gpu = gemm::run_with(&mut rt, &s, &a, &b, mu, ku, nu).unwrap();
            let cpu = gemm::cpu_with(&s, &a, &b, mu, ku, nu).unwrap();
            for (g, c) in gpu.iter().zip(&cpu) {
                assert!(
                    (g - c).abs() <= 1e-4 * (1.0 + c.abs()),
                    "gemm at {s}: {g} vs {c}"
                );
            }
        }
    }
    for (m, n) in [(1, 1), (5, 3), (33, 129), (1000, 77)] {
        let a = random(&mut rng, m * n);
        let x = random(&mut rng, n);
        let got = rt.gemv(&a, &x, m, n).unwrap();
        for i in 0..m {
            let want: f64 = (0..n).map(|j| a[i * n + j] as f64 * x[j] as f64).sum();
            let mag: f64 = (0..n)
                .map(|j| (a[i * n + j] as f64 * x[j] as f64).abs())
                .sum();
            let err = (got[i] as f64 - want).abs();
            assert!(
                err <= 2.0 * n as f64 * f32::EPSILON as f64 * mag + 1e-30,
                "gemv {m}x{n} row {i}: {} vs {want}",
                got[i]
            );
        }
    }
}

#[test]
fn topk_and_fft_match_references() {
    let mut rt = rt();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for (n, k) in [(64usize, 1usize), (1000, 5), (4116, 17)] {
        let x = random(&mut rng, n);
        let got = rt.topk(&x, k).unwrap();
        // Per block of 64: the k largest, descending.
        let mut want = Vec::new();
        for block in x.chunks(64) {
            let mut b = block.to_vec();
            b.sort_by(|p, q| q.partial_cmp(p).unwrap());
            b.resize(k, f32::NEG_INFINITY);
            want.extend(b);
        }
        assert_eq!(got, want, "topk n = {n}, k = {k}");
    }
    for n in [1usize, 2, 8, 1024, 1 << 14] {
        let x = random(&mut rng, 2 * n);
        let got = rt.fft(&x).unwrap();
        let mut max_err = 0f64;
        let step = (n / 64).max(1);
        for f in (0..n).step_by(step) {
            let (mut re, mut im) = (0f64, 0f64);
            for t in 0..n {
                let ang = -2.0 * std::f64::consts::PI * (f * t % n) as f64 / n as f64;
                let (s, c) = ang.sin_cos();
                re += x[2 * t] as f64 * c - x[2 * t + 1] as f64 * s;
                im += x[2 * t] as f64 * s + x[2 * t + 1] as f64 * c;
            }
            max_err = max_err
                .max((got[2 * f] as f64 - re).abs())
                .max((got[2 * f + 1] as f64 - im).abs());
        }
        let bound = 1e-5 * (n as f64).sqrt() * (n as f64).log2().max(1.0) * 4.0;
        assert!(
            max_err <= bound,
            "fft n = {n}: error {max_err} over {bound}"
        );
    }
}

#[test]
fn contract_kernels_through_typed_calls() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut rt = rt();
    for (w, h) in [(1u32, 1u32), (17, 5), (33, 31), (200, 3), (3, 200)] {
        let src = random(&mut rng, (w * h) as usize);
        for s in sim::blur::Kernel.tune_space().candidates() {
            assert_eq!(
                sim::blur::run_with(&mut rt, &s, &src, w, h).unwrap(),
                src,
                "blur {w}x{h} {s}"
            );
        }
        assert_eq!(rt.blur(&src, w, h).unwrap(), src);
    }
    // Past 65535 workgroups in x, then in y: the folded grid.
    for (w, h) in [(65536u32 * 16 + 3, 2u32), (5, 65535 * 16 + 7)] {
        let src = random(&mut rng, (w * h) as usize);
        let gpu = sim::blur::run_with(&mut rt, &sim::blur::DEFAULT_SCHEDULE, &src, w, h).unwrap();
        assert!(
            gpu == src,
            "blur {w}x{h}: the folded grid missed or moved pixels"
        );
    }
    for n in [1u32, 77, 70001] {
        let a = random(&mut rng, n as usize * 8);
        let want: Vec<f32> = a
            .chunks(8)
            .map(|r| r.iter().fold(0.0, |s, v| s + v))
            .collect();
        let (y, _) = rt.row_sums(&a, n).unwrap();
        assert_eq!(y, want, "row sums, n = {n}");
        let x = random(&mut rng, n as usize);
        let doubled: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(sim::scale::run(&mut rt, &x, 2.0, n).unwrap(), doubled);
        let xh: Vec<f16> = x.iter().map(|v| f16::from_f32(*v)).collect();
        let wh: Vec<f16> = xh.iter().map(|v| f16::from_f32(v.to_f32() * 2.0)).collect();
        assert_eq!(rt.scale(&xh, 2.0, n).unwrap(), wh, "scale<f16>, n = {n}");
    }
    for n in [1u32, 33, 4099] {
        let x: Vec<f32> = (0..n)
            .map(|_| rng.gen_range(-1024i32..1024) as f32 / 1024.0)
            .collect();
        let (mut sums, mut owner) = (vec![0f32; 16], vec![0u32; 16]);
        for (i, v) in x.iter().enumerate() {
            sums[i % 16] += v;
            owner[i % 16] = i as u32 + 1;
        }
        let (gs, go) = rt.bins(&x, n).unwrap();
        assert_eq!(gs, sums, "bins sums, n = {n}");
        assert_eq!(go, owner, "bins owners, n = {n}");
        assert_eq!(bins::cpu(&x, n).unwrap(), (sums, owner));
    }
}

#[test]
fn contract_kernels_certify_at_every_schedule() {
    let mut rt = rt();
    let kernels: [&dyn Kernel; 4] = [
        &sim::blur::Kernel,
        &sim::row_sums::Kernel,
        sim::scale::kernel::<f32>(),
        &bins::Kernel,
    ];
    certify_every_schedule(&mut rt, &kernels);
}

/// Every schedule of each kernel's tuning space passes its certification, with cases run.
fn certify_every_schedule(rt: &mut ForgeRuntime, kernels: &[&dyn Kernel]) {
    for &kernel in kernels {
        for s in kernel.tune_space().candidates() {
            let report = certify(rt, kernel, &s, &CertOptions::default()).unwrap();
            assert!(
                report.passed(),
                "{} at {s}: {:?}",
                kernel.name(),
                report.failures
            );
            assert!(report.cases > 0, "{} at {s}: no case ran", kernel.name());
        }
    }
}

#[test]
fn example_kernels_certify_at_every_schedule() {
    let mut rt = rt();
    certify_every_schedule(&mut rt, &example_kernels::example_kernels());
}

/// Tensor cores through the CUDA emitter: every load, store and product layout
/// (`tests/coop_kernels`) against the oracle, and `gemm_f16` against an f64 reference at
/// shapes that are not multiples of its tiles.
#[test]
fn cooperative_matrices_run_on_tensor_cores() {
    let mut rt = rt();
    assert!(rt.supports(Feature::CooperativeMatrix), "an sm_80+ device");
    certify_every_schedule(
        &mut rt,
        &[
            &coop_kernels::coop_tile::Kernel,
            &coop_kernels::coop_layouts::Kernel,
            &coop_kernels::coop_vote::Kernel,
            &coop_kernels::coop_rows::Kernel,
        ],
    );
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    for (m, k, n) in [(16, 16, 16), (7, 13, 29), (130, 37, 133), (256, 512, 384)] {
        let h = |v: Vec<f32>| v.into_iter().map(f16::from_f32).collect::<Vec<_>>();
        let a = h(random(&mut rng, m * k));
        let b = h(random(&mut rng, k * n));
        let got = rt.gemm_f16(&a, &b, m, k, n).unwrap();
        let want =
            wgsl_forge::kernels::gemm_f16::gemm_f16_reference(&a, &b, m as u32, k as u32, n as u32)
                .unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-3 + 1e-3 * w.abs(),
                "gemm_f16 {m}x{k}x{n} [{i}]: {g} vs {w}"
            );
        }
    }
}

#[test]
fn every_builtin_certifies_at_its_declared_schedule() {
    let mut rt = rt();
    for kernel in wgsl_forge::kernels::registry::builtin() {
        // Every built-in has a CUDA form, cooperative matrices (sm_80 and up) included.
        assert_eq!(rt.cannot_run(kernel), None, "{}", kernel.name());
        let s = kernel.default_schedule();
        let report = certify(&mut rt, kernel, &s, &CertOptions::default()).unwrap();
        assert!(
            report.passed(),
            "{} at {s}: {:?}",
            kernel.name(),
            report.failures
        );
    }
}

#[test]
fn tensors_stay_on_the_device_between_launches() {
    let mut rt = rt();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let n = 100_003usize;
    let x = random(&mut rng, n);
    let y0 = random(&mut rng, n);
    let tx = rt.upload(&x).unwrap();
    assert_eq!(rt.download(&tx).unwrap(), x);
    let ty = rt.upload(&y0).unwrap();
    // Three launches on tensors, no readback between them: y += 0.5 x, three times.
    let mut want = y0.clone();
    for _ in 0..3 {
        axpy::launch(&mut rt, 0.5, &tx, &ty, n as u32).unwrap();
        for (w, v) in want.iter_mut().zip(&x) {
            *w = 0.5f32.mul_add(*v, *w);
        }
    }
    assert!(rt.has_pending());
    let got = rt.download(&ty).unwrap();
    assert!(!rt.has_pending());
    let cpu = {
        let mut y = y0.clone();
        for _ in 0..3 {
            axpy::cpu(0.5, &x, &mut y, n as u32).unwrap();
        }
        y
    };
    assert_eq!(got, cpu, "three launches on tensors against the oracle");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * (1.0 + w.abs()));
    }
    rt.write(&ty, &y0).unwrap();
    assert_eq!(rt.download(&ty).unwrap(), y0);
    rt.clear(&ty).unwrap();
    assert_eq!(rt.download(&ty).unwrap(), vec![0.0; n]);
    let z = rt.zeros::<u32>(17).unwrap();
    assert_eq!(rt.download(&z).unwrap(), vec![0; 17]);
    assert!(rt.stats().bytes_in_use >= (2 * n * 4) as u64);
    drop((tx, ty, z));
    assert_eq!(
        rt.stats().bytes_in_use,
        0,
        "every allocation gives its bytes back"
    );
}

#[test]
fn timing_uses_cuda_events() {
    let mut rt = rt();
    let n = 1u32 << 24;
    let args = DynArgs {
        scalars: vec![ScalarValue::F32(2.0), ScalarValue::U32(n)],
        buffers: vec![
            Some(HostBuffer::from_slice(
                ElemType::scalar(ScalarType::F32),
                &vec![1.0f32; n as usize],
            )),
            Some(HostBuffer::from_slice(
                ElemType::scalar(ScalarType::F32),
                &vec![0.5f32; n as usize],
            )),
        ],
    };
    let opts = wgsl_forge::timing::TimingOptions {
        read_back: true,
        passes: 3,
        ..Default::default()
    };
    let t = rt
        .time_kernel_with(
            &axpy::Kernel,
            &axpy::Kernel.default_schedule(),
            &args,
            &opts,
        )
        .unwrap();
    // 3 · 4 bytes an element: at most some TB/s, at least some GB/s.
    let gbps = 12.0 * n as f64 / t.timing.median_ns;
    assert!(gbps > 50.0 && gbps < 10_000.0, "axpy at {gbps} GB/s");
    let out = t.outputs.expect("read back");
    assert_eq!(out.len(), 1);
    // Each timed dispatch starts from the pristine y: y = 2·1 + 0.5.
    assert!(out[0].words().iter().all(|w| f32::from_bits(*w) == 2.5));
    let tensor = rt.zeros::<f32>(1 << 20).unwrap();
    let calls = rt
        .time_calls("clear", &Default::default(), |rt| rt.clear(&tensor))
        .unwrap();
    assert!(calls.median_ns > 0.0 && calls.samples.len() == 7);
    println!(
        "axpy 2^24: {:.1} us ({gbps:.0} GB/s)",
        t.timing.median_ns / 1e3
    );
}

#[test]
fn cuda_errors_are_forge_errors() {
    let mut rt = rt();
    // A device ordinal past the last.
    match ForgeRuntime::builder().cuda(4096).build() {
        Err(ForgeError::NoCudaDevice { index: 4096, .. }) => {}
        other => panic!("expected NoCudaDevice, got {other:?}"),
    }
    // Another runtime's tensor.
    let mut other = ForgeRuntime::builder().cuda(0).build().unwrap();
    let foreign = other.upload(&[1.0f32; 8]).unwrap();
    let mine = rt.upload(&[1.0f32; 8]).unwrap();
    assert!(matches!(
        axpy::launch(&mut rt, 1.0, &foreign, &mine, 8),
        Err(ForgeError::ForeignTensor { .. })
    ));
    // The same tensor read and written.
    assert!(matches!(
        axpy::launch(&mut rt, 1.0, &mine, &mine, 8),
        Err(ForgeError::InvalidArgument { .. })
    ));
    // A wrong length, before anything reaches the device.
    assert!(matches!(
        rt.gemv(&[1.0; 5], &[1.0; 2], 2, 2),
        Err(ForgeError::LengthMismatch { .. } | ForgeError::InvalidArgument { .. })
    ));
    // More than the budget.
    let mut small = ForgeRuntime::builder()
        .capacity(1 << 10)
        .cuda(0)
        .build()
        .unwrap();
    assert!(matches!(
        small.upload(&vec![0u32; 1 << 10]),
        Err(ForgeError::CapacityExceeded { .. })
    ));
    // wgpu's objects do not exist here: the accessors say so, and nothing panics.
    assert!(rt.wgpu().is_none());
    assert!(mine.wgpu_buffer().is_none());
    // And the runtime still works after all of them.
    assert_eq!(rt.download(&mine).unwrap(), vec![1.0; 8]);
}
