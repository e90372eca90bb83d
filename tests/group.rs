//! A group of devices on lavapipe: 2 and 4 logical devices on the one adapter
//! (`DeviceGroup::replicate`), standing in for a machine with several GPUs. Sharded calls
//! against the single-device call and the oracle, gathering, tensors on named devices,
//! collectives through host staging against a CPU reduction, tuning once per device type,
//! and a device that fails mid-batch. Small shapes: seconds on lavapipe.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::backend::ReduceOp;
use wgsl_forge::group::{DeviceGroup, Split};
use wgsl_forge::kernels::attention::{attention_f32, attention_reference_f16};
use wgsl_forge::kernels::gemm::{gemm, gemm_reference};
use wgsl_forge::kernels::gemm_f16::gemm_f16_reference;
use wgsl_forge::prelude::*;
use wgsl_forge::tune::TuneOptions;
use wgsl_forge::{Backend, RuntimeBuilder, ScalarValue};

/// The group sizes CI runs every test at.
const SIZES: [usize; 2] = [2, 4];

fn builder() -> RuntimeBuilder {
    ForgeRuntime::builder().capacity(64 << 20)
}

/// `n` logical devices on the one adapter; a missing adapter fails the test.
fn group(n: usize) -> DeviceGroup {
    DeviceGroup::replicate(builder(), n)
        .unwrap_or_else(|e| panic!("a GPU adapter is required (lavapipe in CI): {e}"))
}

fn floats(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

fn halves(len: usize, seed: u64) -> Vec<f16> {
    floats(len, seed).into_iter().map(f16::from_f32).collect()
}

fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {i}: {g} against {w}"
        );
    }
}

#[test]
fn the_group_opens_n_devices_of_one_type_on_one_adapter() {
    for n in SIZES {
        let group = group(n);
        assert_eq!(group.len(), n);
        let ids: std::collections::BTreeSet<u64> =
            group.runtimes().iter().map(|r| r.id()).collect();
        assert_eq!(ids.len(), n, "each device is a runtime of its own");
        let types = group.device_types();
        assert_eq!(types.len(), 1, "{types:?}");
        assert_eq!(types[0].devices, (0..n).collect::<Vec<_>>());
        assert_eq!(types[0].topology_hash, group.runtimes()[0].topology_hash());
        assert_eq!(group.collectives_engine(), "host staging");
    }
    // Every adapter: lavapipe alone here, where there is no GPU.
    let all = DeviceGroup::all(builder()).unwrap();
    assert_eq!(all.len(), wgsl_forge::runtime::group_adapters().len());
    let none = DeviceGroup::select(builder(), |_, _| false).unwrap_err();
    assert!(matches!(none, ForgeError::NoAdapter { .. }), "{none}");
    assert!(DeviceGroup::replicate(builder(), 0).is_err());
    assert!(DeviceGroup::from_runtimes(Vec::new()).is_err());
}

#[test]
fn shards_cover_the_batch_in_order() {
    let group = group(4);
    for total in [1usize, 3, 4, 7, 130] {
        let shards = group.shards(total);
        assert_eq!(shards.len(), total.min(4));
        assert_eq!(shards[0].range.start, 0);
        assert_eq!(shards.last().unwrap().range.end, total);
        for w in shards.windows(2) {
            assert_eq!(w[0].range.end, w[1].range.start);
            assert!(w[0].len() >= w[1].len() && w[0].len() - w[1].len() <= 1);
        }
    }
}

#[test]
fn gemm_sharded_is_the_single_device_result_and_the_oracles() {
    for n_dev in SIZES {
        let mut group = group(n_dev);
        // Rows fewer than, equal to, and past the devices; odd shapes.
        for (m, k, n) in [(3, 5, 7), (4, 16, 9), (37, 19, 23), (130, 17, 66)] {
            let (a, b) = (floats(m * k, 1), floats(k * n, 2));
            let sharded = group.gemm_sharded(&a, &b, m, k, n).unwrap();
            let single = group.runtime(0).unwrap().gemm(&a, &b, m, k, n).unwrap();
            assert_eq!(sharded, single, "{n_dev} devices, {m}×{k}×{n}: bit for bit");
            let oracle = gemm::cpu(&a, &b, m as u32, k as u32, n as u32).unwrap();
            assert_close(&sharded, &oracle, 1e-5, "the oracle");
            let reference = gemm_reference(&a, &b, m as u32, k as u32, n as u32).unwrap();
            assert_close(&sharded, &reference, 1e-5, "the f64 reference");
        }
    }
}

#[test]
fn gemm_f16_sharded_is_the_single_device_result_and_the_references() {
    for n_dev in SIZES {
        let mut group = group(n_dev);
        for (m, k, n) in [(2, 3, 2), (9, 12, 5), (33, 20, 18)] {
            let (a, b) = (halves(m * k, 3), halves(k * n, 4));
            let sharded = group.gemm_f16_sharded(&a, &b, m, k, n).unwrap();
            let single = group.runtime(0).unwrap().gemm_f16(&a, &b, m, k, n).unwrap();
            assert_eq!(sharded, single, "{n_dev} devices, {m}×{k}×{n}");
            let reference = gemm_f16_reference(&a, &b, m as u32, k as u32, n as u32).unwrap();
            assert_close(&sharded, &reference, 1e-3, "the f64 reference");
        }
    }
}

#[test]
fn attention_sharded_splits_batch_times_heads() {
    for n_dev in SIZES {
        let mut group = group(n_dev);
        // The last shape's scale is its own (`with_scale`), not `1/√d`.
        for (b, h, s, d, causal, scale) in [
            (1, 2, 5, 16, false, None),
            (2, 3, 9, 16, true, None),
            (1, 5, 3, 32, false, None),
            (2, 2, 7, 16, true, Some(-0.7f32)),
        ] {
            let len = b * h * s * d;
            let (q, k, v) = (halves(len, 5), halves(len, 6), halves(len, 7));
            let mut shape = AttentionShape::new(b, h, s, d, causal);
            if let Some(x) = scale {
                shape = shape.with_scale(x);
            }
            let sharded = group.attention_sharded(&q, &k, &v, shape).unwrap();
            let single = group
                .runtime(0)
                .unwrap()
                .attention_with(&q, &k, &v, shape)
                .unwrap();
            assert_eq!(sharded, single, "{n_dev} devices, b·h = {b}·{h}");
            let scale = scale.unwrap_or(1.0 / (d as f32).sqrt());
            let (bh, s32, d32) = ((b * h) as u32, s as u32, d as u32);
            let want =
                attention_reference_f16(&q, &k, &v, bh, s32, d32, causal as u32, scale).unwrap();
            let f = |x: &[f16]| x.iter().map(|y| y.to_f32()).collect::<Vec<_>>();
            assert_close(&f(&sharded), &f(&want), 4e-3, "the f64 reference");
        }
    }
}

#[test]
fn fft_sharded_splits_the_batch() {
    for n_dev in SIZES {
        let mut group = group(n_dev);
        for (n, batch) in [(1, 3), (16, 5), (64, 2)] {
            let data = floats(2 * n * batch, 8);
            let sharded = group.fft_batched_sharded(&data, n, batch).unwrap();
            let single = group
                .runtime(0)
                .unwrap()
                .fft_batched(&data, n, batch)
                .unwrap();
            assert_eq!(
                sharded, single,
                "{n_dev} devices, {batch} transforms of {n}"
            );
            // Each transform against a direct DFT in f64.
            for (t, (x, got)) in data.chunks(2 * n).zip(sharded.chunks(2 * n)).enumerate() {
                for kk in 0..n {
                    let (mut re, mut im) = (0.0f64, 0.0f64);
                    for j in 0..n {
                        let a = -2.0 * std::f64::consts::PI * (j * kk) as f64 / n as f64;
                        let (xr, xi) = (x[2 * j] as f64, x[2 * j + 1] as f64);
                        re += xr * a.cos() - xi * a.sin();
                        im += xr * a.sin() + xi * a.cos();
                    }
                    let tol = 1e-5 * (n as f64).sqrt() * 8.0;
                    assert!(
                        (got[2 * kk] as f64 - re).abs() < tol
                            && (got[2 * kk + 1] as f64 - im).abs() < tol,
                        "transform {t}, bin {kk}: ({}, {}) against ({re}, {im})",
                        got[2 * kk],
                        got[2 * kk + 1]
                    );
                }
            }
        }
    }
}

#[test]
fn sharded_calls_check_the_whole_call_first() {
    let mut group = group(2);
    let err = group
        .gemm_sharded(&[1.0; 6], &[1.0; 5], 2, 3, 2)
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::LengthMismatch { arg: "b", .. }),
        "{err}"
    );
    let err = group.gemm_sharded(&[], &[], 0, 3, 2).unwrap_err();
    assert!(matches!(err, ForgeError::EmptyWork { .. }), "{err}");
    let q = halves(2 * 8 * 2, 1);
    let err = group
        .attention_sharded(&q, &q, &q, AttentionShape::new(1, 2, 2, 8, false))
        .unwrap_err();
    assert!(matches!(err, ForgeError::InvalidArgument { .. }), "{err}");
    let err = group.fft_batched_sharded(&[0.0; 12], 3, 2).unwrap_err();
    assert!(matches!(err, ForgeError::InvalidArgument { .. }), "{err}");
}

#[test]
fn any_kernel_splits_along_a_named_dimension_and_the_split_is_certified() {
    for n_dev in SIZES {
        let mut group = group(n_dev);
        // gemm along its rows: `a` and `c` are cut, `b` goes whole to every device.
        let report = group
            .certify_split(&gemm::Kernel, &Split::along("m"), &Default::default())
            .unwrap();
        assert!(report.passed(), "{report:?}");
        assert_eq!(
            report.identical, report.cases,
            "one device type: bit for bit"
        );
        assert!(report.cases >= 4, "{report:?}");
        // The f32 attention along b·h.
        let report = group
            .certify_split(
                &attention_f32::Kernel,
                &Split::along("bh"),
                &Default::default(),
            )
            .unwrap();
        assert!(report.passed(), "{report:?}");
    }
    let mut group = group(2);
    // Along `k` the output does not grow: refused, naming the binding.
    let err = group
        .certify_split(&gemm::Kernel, &Split::along("k"), &Default::default())
        .unwrap_err();
    assert!(err.to_string().contains("`c`"), "{err}");
    // No such parameter, and no declared axis.
    for split in [Split::along("rows"), Split::declared()] {
        let err = group
            .certify_split(&gemm::Kernel, &split, &Default::default())
            .unwrap_err();
        assert!(matches!(err, ForgeError::InvalidArgument { .. }), "{err}");
    }
}

#[test]
fn run_sharded_gathers_every_output_in_order() {
    let mut group = group(4);
    let (m, k, n) = (11u32, 6u32, 5u32);
    let f32s = wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32);
    let (a, b) = (floats((m * k) as usize, 9), floats((k * n) as usize, 10));
    let args = wgsl_forge::DynArgs {
        scalars: vec![
            ScalarValue::U32(m),
            ScalarValue::U32(k),
            ScalarValue::U32(n),
        ],
        buffers: vec![
            Some(wgsl_forge::HostBuffer::from_slice(f32s, &a)),
            Some(wgsl_forge::HostBuffer::from_slice(f32s, &b)),
            None,
        ],
    };
    let out = group
        .run_sharded(&gemm::Kernel, &Split::along("m"), &args)
        .unwrap();
    assert_eq!(out.len(), 1);
    let c: Vec<f32> = bytemuck::pod_collect_to_vec(out[0].bytes());
    assert_close(&c, &gemm::cpu(&a, &b, m, k, n).unwrap(), 1e-5, "the oracle");
    // A short input is the whole call's error, before any device runs.
    let mut short = args.clone();
    short.buffers[0] = Some(wgsl_forge::HostBuffer::from_slice(f32s, &a[1..]));
    let err = group
        .run_sharded(&gemm::Kernel, &Split::along("m"), &short)
        .unwrap_err();
    assert!(matches!(err, ForgeError::LengthMismatch { .. }), "{err}");
}

#[test]
fn tensors_live_on_a_named_device_and_move_only_when_asked() {
    let mut group = group(4);
    let t = group.upload(2, &[1.5f32, -2.0, 3.25]).unwrap();
    assert_eq!(group.device_of(&t), Some(2));
    assert_eq!(group.download(&t).unwrap(), vec![1.5, -2.0, 3.25]);
    // Another device's runtime refuses it: nothing moves implicitly.
    let err = group.runtime(0).unwrap().download(&t).unwrap_err();
    assert!(matches!(err, ForgeError::ForeignTensor { .. }), "{err}");
    let copy = group.copy_to(&t, 0).unwrap();
    assert_eq!(
        (group.device_of(&copy), group.device_of(&t)),
        (Some(0), Some(2))
    );
    let moved = group.move_to(t, 3).unwrap();
    assert_eq!(group.device_of(&moved), Some(3));
    assert_eq!(group.download(&moved).unwrap(), vec![1.5, -2.0, 3.25]);
    assert!(group.upload(4, &[1u32]).is_err());
    // A tensor of a runtime outside the group.
    let mut outside = builder().build().unwrap();
    let stranger = outside.upload(&[1u32]).unwrap();
    assert_eq!(group.device_of(&stranger), None);
    assert!(matches!(
        group.download(&stranger),
        Err(ForgeError::ForeignTensor { .. })
    ));
}

/// Left fold in rank order: what host staging computes.
fn fold<T: Copy>(parts: &[Vec<T>], f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut acc = parts[0].clone();
    for p in &parts[1..] {
        for (a, b) in acc.iter_mut().zip(p) {
            *a = f(*a, *b);
        }
    }
    acc
}

#[test]
fn collectives_through_host_staging_match_a_cpu_reduction() {
    for n in SIZES {
        let mut group = group(n);
        let len = 4 * n * 3;
        // f32 sums, exactly the rank-order fold.
        let parts: Vec<Vec<f32>> = (0..n).map(|r| floats(len, 20 + r as u64)).collect();
        let tensors: Vec<_> = (0..n)
            .map(|r| group.upload(r, &parts[r]).unwrap())
            .collect();
        group.all_reduce(&tensors, ReduceOp::Sum).unwrap();
        let want = fold(&parts, |a, b| a + b);
        for t in &tensors {
            assert_eq!(group.download(t).unwrap(), want);
        }
        // i32 maxima and u32 wrapping sums.
        let ints: Vec<Vec<i32>> = (0..n)
            .map(|r| {
                (0..len)
                    .map(|i| (i as i32 * 7919 + r as i32 * 104_729) % 1000 - 500)
                    .collect()
            })
            .collect();
        let t: Vec<_> = (0..n).map(|r| group.upload(r, &ints[r]).unwrap()).collect();
        group.all_reduce(&t, ReduceOp::Max).unwrap();
        assert_eq!(group.download(&t[n - 1]).unwrap(), fold(&ints, i32::max));
        let big: Vec<Vec<u32>> = (0..n).map(|r| vec![u32::MAX - r as u32; len]).collect();
        let t: Vec<_> = (0..n).map(|r| group.upload(r, &big[r]).unwrap()).collect();
        group.all_reduce(&t, ReduceOp::Sum).unwrap();
        assert_eq!(
            group.download(&t[0]).unwrap(),
            fold(&big, u32::wrapping_add)
        );
        // f16, rounded at each step as the devices add halves.
        let hs: Vec<Vec<f16>> = (0..n).map(|r| halves(len, 40 + r as u64)).collect();
        let t: Vec<_> = (0..n).map(|r| group.upload(r, &hs[r]).unwrap()).collect();
        group.all_reduce(&t, ReduceOp::Sum).unwrap();
        assert_eq!(
            group.download(&t[1]).unwrap(),
            fold(&hs, |a, b| f16::from_f32(a.to_f32() + b.to_f32()))
        );

        // All-gather: every device gets the ranks' tensors in order.
        let gathered = group.all_gather(&tensors).unwrap();
        assert_eq!(gathered.len(), n);
        let want_gather: Vec<f32> = vec![want.clone(); n].concat();
        for (r, g) in gathered.iter().enumerate() {
            assert_eq!(group.device_of(g), Some(r));
            assert_eq!(group.download(g).unwrap(), want_gather);
        }

        // Reduce-scatter: device r gets block r of the reduction.
        let tensors: Vec<_> = (0..n)
            .map(|r| group.upload(r, &parts[r]).unwrap())
            .collect();
        let scattered = group.reduce_scatter(&tensors, ReduceOp::Min).unwrap();
        let mins = fold(&parts, f32::min);
        let block = len / n;
        for (r, s) in scattered.iter().enumerate() {
            assert_eq!(group.device_of(s), Some(r));
            assert_eq!(group.download(s).unwrap(), mins[r * block..(r + 1) * block]);
        }
        // Inputs of reduce-scatter are left as they were.
        assert_eq!(group.download(&tensors[0]).unwrap(), parts[0]);
    }
}

#[test]
fn collectives_refuse_misplaced_or_mismatched_tensors() {
    let mut group = group(2);
    let a = group.upload(0, &[1.0f32, 2.0]).unwrap();
    let b = group.upload(0, &[1.0f32, 2.0]).unwrap();
    let err = group.all_reduce(&[a, b], ReduceOp::Sum).unwrap_err();
    assert!(
        err.to_string().contains("tensor #1 is on device #0"),
        "{err}"
    );
    let a = group.upload(0, &[1.0f32, 2.0]).unwrap();
    let b = group.upload(1, &[1.0f32, 2.0, 3.0]).unwrap();
    let err = group.all_gather(&[a, b]).unwrap_err();
    assert!(
        err.to_string().contains("tensor #1 has 3 elements"),
        "{err}"
    );
    let a = group.upload(0, &[1.0f32, 2.0, 3.0]).unwrap();
    let b = group.upload(1, &[1.0f32, 2.0, 3.0]).unwrap();
    let err = group.reduce_scatter(&[a, b], ReduceOp::Sum).unwrap_err();
    assert!(err.to_string().contains("multiple of 2"), "{err}");
    let one = [group.upload(0, &[1u32]).unwrap()];
    assert!(group.all_reduce(&one, ReduceOp::Sum).is_err());
}

#[test]
fn nccl_is_asked_for_and_refused_here() {
    let mut group = group(2);
    let err = group.use_nccl().unwrap_err();
    // Without the `nccl` feature, the build says how to get it; with it, the missing
    // libnccl (no NVIDIA stack here) comes before the devices' backend.
    assert!(
        matches!(
            err,
            ForgeError::NotBuilt {
                feature: "nccl",
                ..
            }
        ) || matches!(
            err,
            ForgeError::MissingLibrary {
                library: "libnccl",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(group.collectives_engine(), "host staging");
}

/// A kernel with a tuning space of its own, small enough to tune in a moment.
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [32, 64, 128]))]
pub fn group_axpy(x: &[f32; n], y: &[f32; n], #[out] z: &mut [f32; n], a: f32, n: u32) {
    let i = global_index();
    if i < n {
        z[i] = a.mul_add(x[i], y[i]);
    }
}

fn quick_tuning() -> TuneOptions {
    TuneOptions {
        timing: wgsl_forge::timing::TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 3,
            target_pass_ns: 2.0e5,
            max_repeats: 16,
            ..Default::default()
        },
        rounds: 1,
        store: false,
        ..TuneOptions::default()
    }
}

#[test]
fn tuning_runs_once_per_device_type_and_every_device_of_the_type_uses_it() {
    let kernel = &group_axpy::Kernel;
    for n in SIZES {
        let mut group = group(n);
        let before: Vec<u64> = group
            .runtimes()
            .iter()
            .map(|r| r.stats().dispatches)
            .collect();
        let reports = group.tune(kernel, &quick_tuning()).unwrap();
        assert_eq!(reports.len(), 1, "one device type");
        let winner = reports[0].1.winner().expect("a certified winner");
        for (i, rt) in group.runtimes().iter().enumerate() {
            assert_eq!(rt.tuned_schedule(kernel), Some(winner), "device {i}");
            if i > 0 {
                assert_eq!(
                    rt.stats().dispatches,
                    before[i],
                    "device {i} tuned nothing itself"
                );
            }
        }
        // And a certificate per type.
        let certs = group.certify(kernel, &Default::default()).unwrap();
        assert_eq!(certs.len(), 1);
        assert!(certs[0].1.passed(), "{:?}", certs[0].1);
    }
    // Two types: on one adapter, the WGSL and SPIR-V emissions keep manifests apart.
    let mut runtimes = DeviceGroup::replicate(builder(), 2)
        .unwrap()
        .into_runtimes();
    runtimes.push(builder().emission(Backend::Spirv).build().unwrap());
    let mut group = DeviceGroup::from_runtimes(runtimes).unwrap();
    let reports = group.tune(kernel, &quick_tuning()).unwrap();
    let devices: Vec<Vec<usize>> = reports.iter().map(|(t, _)| t.devices.clone()).collect();
    assert_eq!(devices, [vec![0, 1], vec![2]]);
    assert_ne!(reports[0].0.emission, reports[1].0.emission);
    for (t, report) in &reports {
        for &d in &t.devices {
            assert_eq!(group.runtimes()[d].tuned_schedule(kernel), report.winner());
        }
    }
    // The sharded call runs each shard with its device's winner, and the result is the
    // oracle's whatever the schedules.
    let (x, y) = (floats(301, 11), floats(301, 12));
    let parts = group
        .map_shards("`group_axpy` elements", x.len(), |rt, s| {
            let r = s.range.clone();
            rt.group_axpy(&x[r.clone()], &y[r], 0.5, s.len() as u32)
        })
        .unwrap();
    assert_close(
        &parts.concat(),
        &group_axpy::cpu(&x, &y, 0.5, 301).unwrap(),
        1e-6,
        "the oracle",
    );
}

#[test]
fn a_device_that_fails_mid_batch_fails_the_call_by_name_and_returns_nothing() {
    // Device 1's budget is too small for its shard of A: 32 rows × 64 × 4 bytes = 8 KiB.
    let small = builder().capacity(4 << 10).build().unwrap();
    let big = builder().build().unwrap();
    let mut uneven = DeviceGroup::from_runtimes(vec![big, small]).unwrap();
    let (m, k, n) = (64, 64, 64);
    let (a, b) = (floats(m * k, 1), floats(k * n, 2));
    let err = uneven.gemm_sharded(&a, &b, m, k, n).unwrap_err();
    match &err {
        ForgeError::DeviceFailed {
            device,
            work,
            others,
            source,
            ..
        } => {
            assert_eq!((*device, *others), (1, 0), "{err}");
            assert_eq!(work, "`gemm` rows 32..64 of 64");
            assert!(
                matches!(**source, ForgeError::CapacityExceeded { .. }),
                "{source}"
            );
        }
        other => panic!("expected DeviceFailed, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("device #1") && text.contains("returned nothing"),
        "{text}"
    );
    // The group still works where every shard fits: 2×8 times 8×8.
    let c = uneven.gemm_sharded(&a[..16], &b[..64], 2, 8, 8).unwrap();
    let oracle = gemm::cpu(&a[..16], &b[..64], 2, 8, 8).unwrap();
    assert_close(&c, &oracle, 1e-5, "the oracle");

    // A test hook: a part that panics on some devices mid-batch. The first by index is
    // named, the others counted, and no part comes back.
    for n_dev in SIZES {
        let mut group = group(n_dev);
        let err = group
            .map_shards("hook items", 2 * n_dev, |_rt, s| {
                if s.device % 2 == 1 {
                    panic!("injected failure on device {}", s.device);
                }
                Ok(s.range.clone().collect::<Vec<_>>())
            })
            .unwrap_err();
        match &err {
            ForgeError::DeviceFailed {
                device,
                work,
                others,
                source,
                ..
            } => {
                assert_eq!((*device, *others), (1, n_dev / 2 - 1), "{err}");
                assert_eq!(work, &format!("hook items 2..4 of {}", 2 * n_dev));
                assert!(
                    source.to_string().contains("injected failure on device 1"),
                    "{source}"
                );
            }
            other => panic!("expected DeviceFailed, got {other}"),
        }
    }
}
