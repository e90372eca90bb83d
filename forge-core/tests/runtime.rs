//! The runtime on a real adapter (lavapipe in CI): values, caching, submissions and
//! readbacks, tensors, and every bad input as a named error.

mod common;

use common::*;
use forge_core::kernel::Kernel;
use forge_core::Backend;
use forge_core::{ForgeError, ForgeRuntime, HardwareProfile, HostArg, Schedule};

const MB: u64 = 1 << 20;

/// More than 65535 workgroups of 64, and odd: the dispatch must fold into y.
const FOLDED_N: usize = 65535 * 64 + 4099;

#[test]
fn affine_matches_cpu_past_the_fold() {
    let mut rt = runtime(512 * MB);
    let schedule = Affine.default_schedule();
    let dims = rt
        .workgroups(&Affine, &schedule, FOLDED_N as u64)
        .expect("foldable");
    assert!(
        dims[1] > 1,
        "{FOLDED_N} threads should fold into y, got {dims:?}"
    );

    let a = random_f32(FOLDED_N, 1);
    let y = run_affine(&mut rt, &schedule, &a, 0.75).expect("runs");
    assert_eq!(y, affine_cpu(&a, 0.75));
}

#[test]
fn other_schedules_give_the_same_result_on_an_odd_length() {
    let mut rt = runtime(256 * MB);
    let n = 1_000_003;
    let a = random_f32(n, 2);
    let want = affine_cpu(&a, -3.5);
    // Workgroups of 8 need 125001 groups: folded. Items > 1 walk the ITEMS loop.
    for schedule in [
        Schedule::with_workgroup(8),
        Schedule::new(32, 4, 1),
        Schedule::new(256, 3, 1),
    ] {
        let y = run_affine(&mut rt, &schedule, &a, -3.5).expect("runs");
        assert_eq!(y, want, "schedule {schedule}");
    }
    assert_eq!(rt.stats().pipelines_compiled, 3);
}

#[test]
fn tiny_inputs_work() {
    let mut rt = runtime(16 * MB);
    for n in [1usize, 2, 3, 63, 64, 65] {
        let a = random_f32(n, n as u64);
        let y = run_affine(&mut rt, &Affine.default_schedule(), &a, 1.0).expect("runs");
        assert_eq!(y, affine_cpu(&a, 1.0), "n = {n}");
    }
}

#[test]
fn second_call_compiles_nothing_and_reuses_buffers() {
    let mut rt = runtime(64 * MB);
    let schedule = Affine.default_schedule();
    let a = random_f32(10_007, 3);
    let b = random_f32(10_007, 4);

    let s0 = rt.stats();
    let y = run_affine(&mut rt, &schedule, &a, 2.0).expect("first call");
    assert_eq!(y, affine_cpu(&a, 2.0));
    let s1 = rt.stats();
    assert_eq!(s1.pipelines_compiled - s0.pipelines_compiled, 1);
    assert_eq!(
        s1.submissions - s0.submissions,
        1,
        "one submission per call"
    );
    assert_eq!(s1.readbacks - s0.readbacks, 1, "one readback per call");
    assert_eq!(s1.dispatches - s0.dispatches, 1);

    // Fresh data through the same pooled buffers: the output must not be stale.
    let y = run_affine(&mut rt, &schedule, &b, -1.0).expect("second call");
    assert_eq!(y, affine_cpu(&b, -1.0));
    let s2 = rt.stats();
    assert_eq!(
        s2.pipelines_compiled, s1.pipelines_compiled,
        "no new pipeline"
    );
    assert_eq!(s2.submissions - s1.submissions, 1);
    assert_eq!(s2.readbacks - s1.readbacks, 1);
    assert_eq!(
        s2.buffers_created, s1.buffers_created,
        "every buffer came from the pool"
    );
    assert!(
        s2.buffers_reused >= s1.buffers_reused + 4,
        "input, output, uniform and staging reused"
    );
}

/// A repeated call binds the bind group its pooled buffers already have, and uploads its
/// `Params` only when they changed; both stay right when the data, the params or the
/// buffers change, and a group goes when the pool frees one of its buffers.
#[test]
fn repeated_calls_reuse_their_bind_group_and_write_only_changed_params() {
    let mut rt = runtime(3 * MB / 2);
    let schedule = Affine.default_schedule();
    let n = 100_000;
    let (a, b) = (random_f32(n, 11), random_f32(n, 12));
    let s0 = rt.stats();
    let call = |rt: &mut ForgeRuntime, x: &[f32], c: f32| {
        let y = run_affine(rt, &schedule, x, c).expect("runs");
        assert_eq!(y, affine_cpu(x, c), "{} elements, c = {c}", x.len());
    };
    call(&mut rt, &a, 2.0);
    // New data, same params; then new params; then the first call again.
    call(&mut rt, &b, 2.0);
    call(&mut rt, &b, -1.5);
    call(&mut rt, &a, 2.0);
    let s1 = rt.stats();
    assert_eq!(s1.bind_groups_created - s0.bind_groups_created, 1);
    let made = s1.buffers_created - s0.buffers_created;
    assert_eq!(made, 4, "in, out, uniform and staging, once");

    // 1.5 MB holds one call of 100 000 floats (in and out: 0.9 MB in size classes) or
    // one of 150 000 (1.3 MB), not both: each has the pool free the other's buffers, and
    // their group with them.
    let c = random_f32(150_000, 13);
    call(&mut rt, &c, 0.25);
    call(&mut rt, &a, 2.0);
    let s2 = rt.stats();
    assert_eq!(s2.bind_groups_created - s1.bind_groups_created, 2);
    call(&mut rt, &a, 3.0);
    assert_eq!(rt.stats().bind_groups_created, s2.bind_groups_created);
}

#[test]
fn outputs_from_pooled_buffers_start_zeroed() {
    // A kernel that writes nothing past n must leave zeros there, even in a reused buffer.
    let mut rt = runtime(16 * MB);
    let schedule = Affine.default_schedule();
    let a = random_f32(1000, 5);
    run_affine(&mut rt, &schedule, &a, 7.0).expect("fills the pooled output");
    let params = affine_params(10, 7.0);
    let mut args = [HostArg::In(bytemuck::cast_slice(&a)), HostArg::Out(4000)];
    let out = rt
        .launch_host(&Affine, &schedule, &params, 10, &mut args)
        .expect("runs");
    let y: &[f32] = bytemuck::cast_slice(out[0].bytes());
    assert_eq!(&y[..10], &affine_cpu(&a[..10], 7.0)[..]);
    assert!(y[10..].iter().all(|v| *v == 0.0), "stale data in an output");
}

#[test]
fn inout_is_written_back_in_place() {
    let mut rt = runtime(64 * MB);
    let n = 300_001usize;
    let x0 = random_u32(n, 6);
    let mut x = x0.clone();
    let params = (n as u32).to_le_bytes();
    let s0 = rt.stats();
    let out = rt
        .launch_host(
            &Bump,
            &Bump.default_schedule(),
            &params,
            n as u64,
            &mut [HostArg::InOut(bytemuck::cast_slice_mut(&mut x))],
        )
        .expect("runs");
    assert!(out.is_empty(), "InOut returns nothing, it writes back");
    let want: Vec<u32> = x0
        .iter()
        .map(|v| v.wrapping_mul(3).wrapping_add(1))
        .collect();
    assert_eq!(x, want);
    let s1 = rt.stats();
    assert_eq!(
        (s1.submissions - s0.submissions, s1.readbacks - s0.readbacks),
        (1, 1)
    );
}

#[test]
fn tensors_three_launches_one_submission() {
    let mut rt = runtime(64 * MB);
    let n = 70_001usize;
    let a = random_f32(n, 7);
    let b = 0.25f32;
    let schedule = Affine.default_schedule();
    let params = affine_params(n as u32, b);

    let t0 = rt.upload(&a).expect("upload");
    let t1 = rt.zeros::<f32>(n).expect("zeros");
    let t2 = rt.zeros::<f32>(n).expect("zeros");
    let t3 = rt.zeros::<f32>(n).expect("zeros");
    assert_eq!((t0.len(), t0.is_empty()), (n, false));

    let s0 = rt.stats();
    rt.launch_tensors(&Affine, &schedule, &params, n as u64, &[t0.raw(), t1.raw()])
        .expect("launch 1");
    rt.launch_tensors(&Affine, &schedule, &params, n as u64, &[t1.raw(), t2.raw()])
        .expect("launch 2");
    rt.launch_tensors(&Affine, &schedule, &params, n as u64, &[t2.raw(), t3.raw()])
        .expect("launch 3");
    let s1 = rt.stats();
    assert_eq!(s1.submissions, s0.submissions, "launches only record");
    assert_eq!(s1.readbacks, s0.readbacks);
    assert_eq!(s1.dispatches - s0.dispatches, 3);
    assert!(rt.has_pending());

    let y = rt.download(&t3).expect("download");
    let s2 = rt.stats();
    assert_eq!(
        s2.submissions - s1.submissions,
        1,
        "three launches and the copy in one submission"
    );
    assert_eq!(s2.readbacks - s1.readbacks, 1);
    assert!(!rt.has_pending());
    let want = affine_cpu(&affine_cpu(&affine_cpu(&a, b), b), b);
    assert_eq!(y, want);

    // The intermediate stayed on the device.
    assert_eq!(rt.download(&t1).expect("download"), affine_cpu(&a, b));
}

#[test]
fn writes_are_ordered_after_recorded_launches() {
    let mut rt = runtime(16 * MB);
    let n = 5_000usize;
    let a1 = random_f32(n, 8);
    let a2 = random_f32(n, 9);
    let schedule = Affine.default_schedule();
    let params = affine_params(n as u32, 1.5);
    let src = rt.upload(&a1).expect("upload");
    let y1 = rt.zeros::<f32>(n).expect("zeros");
    let y2 = rt.zeros::<f32>(n).expect("zeros");
    rt.launch_tensors(
        &Affine,
        &schedule,
        &params,
        n as u64,
        &[src.raw(), y1.raw()],
    )
    .expect("launch");
    rt.write(&src, &a2).expect("write behind the launch");
    rt.launch_tensors(
        &Affine,
        &schedule,
        &params,
        n as u64,
        &[src.raw(), y2.raw()],
    )
    .expect("launch");
    rt.flush().expect("flush");
    assert_eq!(rt.download(&y1).expect("download"), affine_cpu(&a1, 1.5));
    assert_eq!(rt.download(&y2).expect("download"), affine_cpu(&a2, 1.5));

    // With nothing pending, a write goes straight to the queue.
    rt.write(&src, &a1).expect("write");
    assert_eq!(rt.download(&src).expect("download"), a1);
}

#[test]
fn vector_tensors_round_trip() {
    let mut rt = runtime(16 * MB);
    let data: Vec<[f32; 4]> = random_f32(4 * 333, 10)
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let t = rt.upload(&data).expect("upload");
    assert_eq!(t.raw().bytes(), 333 * 16);
    assert_eq!(rt.download(&t).expect("download"), data);
    let pairs: Vec<[i32; 2]> = (0..101).map(|i| [i, -i]).collect();
    let t = rt.upload(&pairs).expect("upload");
    assert_eq!(rt.download(&t).expect("download"), pairs);
}

#[test]
fn tensors_count_against_capacity_until_dropped() {
    let mut rt = runtime(MB);
    let before = rt.stats().bytes_in_use;
    let t = rt.zeros::<f32>(200_000).expect("800 kB fits in 1 MiB");
    assert_eq!(rt.stats().bytes_in_use - before, 800_000);
    match rt.zeros::<f32>(100_000) {
        Err(ForgeError::CapacityExceeded {
            requested,
            capacity,
            ..
        }) => {
            assert_eq!((requested, capacity), (400_000, MB));
        }
        other => panic!("expected CapacityExceeded, got {other:?}"),
    }
    drop(t);
    assert_eq!(rt.stats().bytes_in_use, before);
    rt.zeros::<f32>(100_000)
        .expect("fits once the first tensor is gone");
}

#[test]
fn idle_pooled_buffers_make_room_for_new_allocations() {
    let mut rt = runtime(MB);
    let a = random_f32(100_000, 12);
    run_affine(&mut rt, &Affine.default_schedule(), &a, 1.0).expect("runs");
    let idle = rt.stats().bytes_in_use;
    assert!(idle >= 800_000, "the call's buffers stay pooled: {idle}");
    // Only fits once the idle buffers are freed.
    let t = rt
        .upload(&random_f32(150_000, 13))
        .expect("idle buffers are evicted");
    let in_use = rt.stats().bytes_in_use;
    assert!((600_000..=MB).contains(&in_use), "{in_use}");
    drop(t);
}

#[test]
fn a_host_launch_carries_pending_tensor_launches_in_its_submission() {
    let mut rt = runtime(16 * MB);
    let n = 4_097usize;
    let a = random_f32(n, 14);
    let schedule = Affine.default_schedule();
    let src = rt.upload(&a).expect("upload");
    let dst = rt.zeros::<f32>(n).expect("zeros");
    rt.launch_tensors(
        &Affine,
        &schedule,
        &affine_params(n as u32, 4.0),
        n as u64,
        &[src.raw(), dst.raw()],
    )
    .expect("launch");
    let s0 = rt.stats();
    let y = run_affine(&mut rt, &schedule, &a, -4.0).expect("host launch");
    assert_eq!(y, affine_cpu(&a, -4.0));
    let s1 = rt.stats();
    assert_eq!(
        (s1.submissions - s0.submissions, s1.readbacks - s0.readbacks),
        (1, 1)
    );
    assert!(
        !rt.has_pending(),
        "the pending launch went with the host launch"
    );
    assert_eq!(rt.download(&dst).expect("download"), affine_cpu(&a, 4.0));
}

#[test]
fn spirv_emission_matches_wgsl() {
    let mut wgsl = runtime(64 * MB);
    let mut spirv = match ForgeRuntime::builder()
        .capacity(64 * MB)
        .emission(Backend::Spirv)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("lavapipe runs SPIR-V passthrough; building failed: {e}"),
    };
    assert_eq!(spirv.emission(), Backend::Spirv);
    let a = random_f32(100_003, 11);
    let schedule = Schedule::new(32, 2, 1);
    let want = run_affine(&mut wgsl, &schedule, &a, 0.5).expect("wgsl");
    let got = run_affine(&mut spirv, &schedule, &a, 0.5).expect("spirv");
    assert_eq!(got, want);
    assert_eq!(got, affine_cpu(&a, 0.5));
}

#[test]
fn runtime_reports_its_adapter_and_profile() {
    let rt = runtime(MB);
    assert!(!rt.adapter_info().name.is_empty());
    assert!(
        rt.limits().max_storage_buffer_binding_size >= 128 << 20,
        "the adapter's full limits were requested"
    );
    assert_eq!(rt.capacity(), MB);
    assert_eq!(rt.emission(), Backend::Wgsl);
    assert_eq!(rt.schedule_for(&Affine), Affine.default_schedule());
    let again = HardwareProfile::from_adapter(rt.wgpu().expect("a wgpu runtime").adapter);
    assert_eq!(rt.profile(), &again);
    assert_eq!(rt.profile().topology_hash(), again.topology_hash());
    assert!(!ForgeRuntime::enumerate_adapters().is_empty());
    assert!(format!("{rt:?}").contains(&rt.adapter_info().name));
}

// ---- every bad input is a named error, and none panics ----

fn launch(
    rt: &mut ForgeRuntime,
    a: &[u8],
    out: u64,
    threads: u64,
) -> forge_core::Result<Vec<forge_core::HostBuffer>> {
    let params = affine_params(threads.min(u32::MAX as u64) as u32, 1.0);
    rt.launch_host(
        &Affine,
        &Affine.default_schedule(),
        &params,
        threads,
        &mut [HostArg::In(a), HostArg::Out(out)],
    )
}

#[test]
fn zero_threads_is_empty_work() {
    let mut rt = runtime(MB);
    let a = [0u8; 16];
    match launch(&mut rt, &a, 16, 0) {
        Err(ForgeError::EmptyWork {
            kernel: "affine",
            what,
        }) => assert!(what.contains("threads"), "{what}"),
        other => panic!("expected EmptyWork, got {other:?}"),
    }
    assert_eq!(rt.stats().submissions, 0, "nothing reached the GPU");
}

#[test]
fn empty_binding_is_empty_work_naming_the_argument() {
    let mut rt = runtime(MB);
    match launch(&mut rt, &[], 16, 4) {
        Err(ForgeError::EmptyWork {
            kernel: "affine",
            what,
        }) => assert!(what.contains("`a`"), "{what}"),
        other => panic!("expected EmptyWork, got {other:?}"),
    }
    match launch(&mut rt, &[0u8; 16], 0, 4) {
        Err(ForgeError::EmptyWork { what, .. }) => assert!(what.contains("`y`"), "{what}"),
        other => panic!("expected EmptyWork, got {other:?}"),
    }
    assert!(matches!(
        rt.upload::<f32>(&[]),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        rt.zeros::<u32>(0),
        Err(ForgeError::EmptyWork { .. })
    ));
}

#[test]
fn binding_past_the_adapter_limit_names_the_limit() {
    let mut rt = runtime(u64::MAX);
    let limit = rt
        .limits()
        .max_storage_buffer_binding_size
        .min(rt.limits().max_buffer_size);
    let err = launch(&mut rt, &[0u8; 16], limit + 4, 4).expect_err("too large");
    match &err {
        ForgeError::BindingTooLarge {
            kernel: "affine",
            arg: "y",
            bytes,
            limit_name,
            limit: l,
        } => {
            assert_eq!((*bytes, *l), (limit + 4, limit));
            assert!(limit_name.starts_with("max_"), "{limit_name}");
            assert!(err.to_string().contains(limit_name), "{err}");
        }
        other => panic!("expected BindingTooLarge, got {other:?}"),
    }
    assert_eq!(rt.stats().submissions, 0);
}

#[test]
fn bindings_past_the_capacity_are_capacity_exceeded() {
    let mut rt = runtime(1024);
    let a = vec![0u8; 4096];
    match launch(&mut rt, &a, 4096, 1024) {
        Err(ForgeError::CapacityExceeded {
            requested,
            capacity,
            ..
        }) => {
            assert_eq!(capacity, 1024);
            assert!(requested >= 8192, "{requested}");
        }
        other => panic!("expected CapacityExceeded, got {other:?}"),
    }
    assert!(matches!(
        rt.upload(&vec![1.0f32; 1024]),
        Err(ForgeError::CapacityExceeded { .. })
    ));
    // Small enough calls still run in the same runtime.
    let y = run_affine(&mut rt, &Affine.default_schedule(), &[1.0, 2.0], 0.0).expect("fits");
    assert_eq!(y, vec![2.0, 4.0]);
}

#[test]
fn wrong_arguments_are_invalid_argument() {
    let mut rt = runtime(MB);
    let schedule = Affine.default_schedule();
    let params = affine_params(4, 1.0);
    let a = [0u8; 16];
    let r = rt.launch_host(&Affine, &schedule, &params, 4, &mut [HostArg::In(&a)]);
    assert!(
        matches!(
            r,
            Err(ForgeError::InvalidArgument {
                kernel: "affine",
                ..
            })
        ),
        "{r:?}"
    );
    let r = rt.launch_host(
        &Affine,
        &schedule,
        &params,
        4,
        &mut [HostArg::In(&a), HostArg::In(&a)],
    );
    match r {
        Err(ForgeError::InvalidArgument { message, .. }) => {
            assert!(message.contains("`y`"), "{message}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }

    // Tensors: wrong element type, and a written tensor bound twice.
    let f = rt.upload(&[1.0f32; 4]).expect("upload");
    let u = rt.upload(&[1u32; 4]).expect("upload");
    let r = rt.launch_tensors(&Affine, &schedule, &params, 4, &[f.raw(), u.raw()]);
    assert!(
        matches!(r, Err(ForgeError::InvalidArgument { .. })),
        "{r:?}"
    );
    let r = rt.launch_tensors(&Affine, &schedule, &params, 4, &[f.raw(), f.raw()]);
    assert!(
        matches!(r, Err(ForgeError::InvalidArgument { .. })),
        "{r:?}"
    );
    let r = rt.write(&f, &[1.0; 3]);
    assert!(
        matches!(r, Err(ForgeError::InvalidArgument { .. })),
        "{r:?}"
    );
    assert!(!rt.has_pending(), "failed launches record nothing");
}

#[test]
fn bad_schedules_and_impossible_dispatches_are_named() {
    let mut rt = runtime(MB);
    let a = [0u8; 16];
    let params = affine_params(4, 1.0);
    for schedule in [
        Schedule::with_workgroup(0),
        Schedule::with_workgroup(1 << 20),
        Schedule::new(64, 0, 1),
    ] {
        let r = rt.launch_host(
            &Affine,
            &schedule,
            &params,
            4,
            &mut [HostArg::In(&a), HostArg::Out(16)],
        );
        assert!(
            matches!(
                r,
                Err(ForgeError::BadSchedule {
                    kernel: "affine",
                    ..
                })
            ),
            "{schedule}: {r:?}"
        );
    }
    match launch(&mut rt, &a, 16, u64::MAX) {
        Err(ForgeError::TooManyWorkgroups {
            kernel: "affine",
            limit,
            ..
        }) => assert_eq!(limit, 65535),
        other => panic!("expected TooManyWorkgroups, got {other:?}"),
    }
}

#[test]
fn a_shader_that_does_not_compile_is_shader_compile() {
    let mut rt = runtime(MB);
    let r = rt.launch_host(
        &Broken,
        &Broken.default_schedule(),
        &[],
        1,
        &mut [HostArg::Out(4)],
    );
    match r {
        Err(ForgeError::ShaderCompile {
            kernel: "broken",
            backend,
            message,
        }) => {
            assert_eq!(backend, "wgsl");
            assert!(message.contains("undefined_name"), "{message}");
        }
        other => panic!("expected ShaderCompile, got {other:?}"),
    }
    // The runtime is still usable.
    let y = run_affine(&mut rt, &Affine.default_schedule(), &[3.0], 1.0).expect("runs");
    assert_eq!(y, vec![7.0]);
}

#[test]
fn a_lost_device_is_device_lost() {
    let mut rt = runtime(MB);
    rt.wgpu().expect("a wgpu runtime").device.destroy();
    match run_affine(&mut rt, &Affine.default_schedule(), &[1.0], 0.0) {
        Err(ForgeError::DeviceLost(_)) => {}
        other => panic!("expected DeviceLost, got {other:?}"),
    }
    assert!(matches!(
        rt.upload(&[1.0f32]),
        Err(ForgeError::DeviceLost(_))
    ));
}

#[test]
fn unknown_backend_names_are_errors() {
    for name in ["metal", "", "wgsl2", "spir-v"] {
        match Backend::parse(name) {
            Err(ForgeError::UnknownBackend { name: n, valid }) => {
                assert_eq!(n, name);
                assert_eq!(valid, "wgsl, spirv, glsl, hlsl, cuda");
            }
            other => panic!("expected UnknownBackend for {name:?}, got {other:?}"),
        }
    }
    // Languages `forge emit` writes but the runtime cannot run say so.
    assert_eq!(
        Backend::parse("HLSL").unwrap(),
        Backend::Hlsl,
        "HLSL runs through glslang"
    );
    for name in ["msl", "MSL", " Msl "] {
        match Backend::parse(name) {
            Err(ForgeError::BackendNotExecutable { name: n, valid }) => {
                assert_eq!(n, name.trim().to_ascii_lowercase());
                assert_eq!(valid, "wgsl, spirv, glsl, hlsl, cuda");
            }
            other => panic!("expected BackendNotExecutable for {name:?}, got {other:?}"),
        }
    }
    assert_eq!(" WGSL ".parse::<Backend>().expect("parses"), Backend::Wgsl);
    assert_eq!(Backend::Spirv.to_string(), "spirv");
}

#[test]
fn runtime_and_tensors_can_move_between_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<ForgeRuntime>();
    sync::<ForgeRuntime>();
    send::<forge_core::GpuTensor<f32>>();
    sync::<forge_core::GpuTensor<f32>>();
}

/// Without the `cuda` feature the CUDA backend is a clear error that says how to build it
/// (`FORGE_BACKEND=cuda` is checked in `env.rs`, which owns the environment).
#[cfg(not(feature = "cuda"))]
#[test]
fn the_cuda_backend_without_the_feature_says_how_to_build_it() {
    assert_eq!(Backend::parse(" CUDA ").unwrap(), Backend::Cuda);
    let err = ForgeRuntime::builder()
        .emission(Backend::Cuda)
        .build()
        .expect_err("no CUDA in this build");
    match &err {
        ForgeError::NotBuilt { feature, .. } => assert_eq!(*feature, "cuda"),
        other => panic!("expected NotBuilt, got {other:?}"),
    }
    assert!(err.to_string().contains("--features cuda"), "{err}");
}
