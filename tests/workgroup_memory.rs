//! Schedules past the portable 16 KiB of workgroup memory (`../shared/DESIGN.md`,
//! "Compile-time checks"): the declared schedule keeps to it, the tuning space may go past
//! it up to each adapter's own limit. On this adapter (lavapipe offers 32 KiB) a 24 KiB
//! schedule runs and certifies against the oracle, and a 48 KiB one is refused before
//! anything is compiled, naming the limit: by `check_schedule` (which the tuner and the
//! certifier skip on), and by a launch.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;
use wgsl_forge::runtime::workgroup_bytes;
use wgsl_forge::{DynArgs, ElemType, HostBuffer, ScalarType, ScalarValue};

mod common;
use common::rt;

/// Reverses each block of `T` elements through workgroup memory (`T` floats: 4, 24 and 48
/// KiB at `T` = 1024, 6144, 12288), a workgroup of 256 staging `T / 256` elements each.
#[forge_kernel(workgroup = 256, threads = blocks * 256, knobs(T = 1024),
    tune(T = [1024, 6144, 12288]),
    case(blocks = 1), case(blocks = 3))]
pub fn reverse_blocks(
    x: &[f32; blocks * 12288],
    #[out] y: &mut [f32; blocks * 12288],
    blocks: u32,
) {
    #[shared]
    let mut tile = [0.0f32; T];
    let base = workgroup_index() * 12288;
    // Each block of `T` of the row in turn: 12288 is a multiple of every `T`.
    for part in 0..12288 / T {
        let at = base + part * T;
        for j in 0..T / 256 {
            let i = local_index() + 256 * j;
            tile[i] = x[at + i];
        }
        workgroup_barrier();
        for j in 0..T / 256 {
            let i = local_index() + 256 * j;
            y[at + i] = tile[T - 1 - i];
        }
        workgroup_barrier();
    }
}

fn f32s(x: &[f32]) -> HostBuffer {
    HostBuffer::from_slice(ElemType::scalar(ScalarType::F32), x)
}

fn schedule(t: u32) -> Schedule {
    reverse_blocks::Kernel
        .default_schedule()
        .with_settings(&format!("T={t}"))
        .unwrap()
}

#[test]
fn the_bytes_of_each_schedule_are_its_arrays() {
    for t in [1024u32, 6144, 12288] {
        assert_eq!(
            workgroup_bytes(&reverse_blocks::Kernel, &schedule(t)).unwrap(),
            4 * t as u64
        );
    }
}

#[test]
fn a_schedule_within_the_adapters_limit_runs_and_certifies() {
    let mut rt = rt();
    let limit = rt.limits().max_compute_workgroup_storage_size;
    assert!(limit >= 24 * 1024, "this test needs an adapter with 24 KiB");
    let s = schedule(6144);
    rt.check_schedule(&reverse_blocks::Kernel, &s).unwrap();
    let report = certify(
        &mut rt,
        &reverse_blocks::Kernel,
        &s,
        &CertOptions::default(),
    )
    .unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    // And through a launch, against the definition.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let x: Vec<f32> = (0..2 * 12288).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let got = rt.run_dyn(
        &reverse_blocks::Kernel,
        &s,
        &DynArgs {
            scalars: vec![ScalarValue::U32(2)],
            buffers: vec![Some(f32s(&x)), None],
        },
    );
    let got: Vec<f32> = got.unwrap()[0]
        .words()
        .iter()
        .map(|w| f32::from_bits(*w))
        .collect();
    for (i, g) in got.iter().enumerate() {
        let (block, j) = (i / 6144, i % 6144);
        assert_eq!(*g, x[block * 6144 + 6143 - j], "element {i}");
    }
}

#[test]
fn a_schedule_past_the_adapters_limit_is_refused_by_name() {
    let mut rt = rt();
    let limit = rt.limits().max_compute_workgroup_storage_size;
    let s = schedule(12288);
    if 48 * 1024 <= limit {
        // An adapter that holds 48 KiB (NVIDIA's Vulkan driver) runs it.
        rt.check_schedule(&reverse_blocks::Kernel, &s).unwrap();
        return;
    }
    let e = rt.check_schedule(&reverse_blocks::Kernel, &s).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("49152 bytes") && text.contains("max_compute_workgroup_storage_size"),
        "{text}"
    );
    let e = rt
        .run_dyn(
            &reverse_blocks::Kernel,
            &s,
            &DynArgs {
                scalars: vec![ScalarValue::U32(1)],
                buffers: vec![Some(f32s(&[0.0; 12288])), None],
            },
        )
        .unwrap_err();
    assert!(matches!(e, ForgeError::BadSchedule { .. }), "{e}");
}
