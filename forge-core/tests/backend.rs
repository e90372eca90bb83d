//! The same launch, tensor and timing tests on every backend this build has, each reached
//! through the backend seam ([`forge_core::backend::Device`]): wgpu on the adapter the
//! build finds (lavapipe in CI) always, and CUDA device 0 with the `cuda` feature.
//!
//! Every test body is written once, for a backend, and runs once per backend: `on_wgpu::*`
//! and `on_cuda::*`. The runtime's tests open a runtime on a device opened here
//! ([`forge_core::RuntimeBuilder::build_with`]); the device's tests drive the trait itself.
//! They compare against CPU references on random data at odd sizes, with the hand-written
//! kernels of `common` (which carry a CUDA form too).
//!
//! The CUDA half runs on the H200: `cargo test -p forge-core --features cuda --test backend`
//! with `LD_LIBRARY_PATH` naming the folders of libcuda and libnvrtc. Without a CUDA device
//! it fails, it never skips; `on_cuda::the_test_kernels_compile` needs NVRTC only.

mod common;

use common::*;
use forge_core::backend::{Command, Device, Launch, Memory};
use forge_core::blocking::block_on;
use forge_core::device::{adapter, Gpu};
use forge_core::kernel::{DynArgs, ElemType, HostBuffer, Kernel, ScalarType, ScalarValue};
use forge_core::plan::LaunchPlan;
use forge_core::timing::{Timer, TimingOptions};
use forge_core::{f16, wgpu, Backend, ForgeError, ForgeRuntime, HostArg, Schedule};

/// Each device's memory budget.
const CAPACITY: u64 = 256 << 20;

/// Every test body, once per backend the build has.
macro_rules! on_every_backend {
    ($($test:ident),* $(,)?) => {
        mod on_wgpu {
            $(#[test]
            fn $test() {
                super::$test(forge_core::Backend::Wgsl)
            })*
        }

        #[cfg(feature = "cuda")]
        mod on_cuda {
            $(#[test]
            fn $test() {
                super::$test(forge_core::Backend::Cuda)
            })*

            /// The test kernels' CUDA forms compile at every schedule they declare (NVRTC
            /// only: no device needed).
            #[test]
            fn the_test_kernels_compile() {
                use forge_core::kernel::Kernel;
                let kernels: [&dyn Kernel; 2] = [&super::Affine, &super::Bump];
                for kernel in kernels {
                    for s in kernel.tune_space().candidates() {
                        let source = kernel.cuda(&s).unwrap();
                        if let Err(e) = forge_core::emit::nvrtc::compile_ptx(kernel.name(), &source, "compute_90") {
                            panic!("{} at {s}: {e}\n{source}", kernel.name());
                        }
                    }
                }
            }
        }
    };
}

on_every_backend!(
    launches_on_host_data,
    launches_on_tensors,
    tensor_operations,
    errors_name_what_is_wrong,
    timing_a_kernel,
    timing_calls,
    memory_through_the_seam,
    a_launch_and_its_timestamps_through_the_seam,
    prepared_launches_rotate_over_their_sets,
    handles_of_another_device_are_refused,
);

/// A device of `backend`, through the seam. A missing one fails the test: it never skips.
fn device(backend: Backend) -> Box<dyn Device> {
    let opened = match backend {
        Backend::Cuda => forge_core::device::cuda::open(0, CAPACITY),
        _ => wgpu_device(),
    };
    match opened {
        Ok(device) => device,
        Err(e) => panic!("a `{backend}` device is required for these tests: {e}"),
    }
}

/// A wgpu device on the adapter the runtime would pick.
fn wgpu_device() -> forge_core::Result<Box<dyn Device>> {
    let mut adapters = adapter::enumerate(wgpu::Backends::PRIMARY);
    if adapters.is_empty() {
        adapters = adapter::enumerate(wgpu::Backends::all());
    }
    let adapter = adapter::select_adapter(adapters, None, Backend::Wgsl)?;
    Ok(Box::new(Gpu::open(
        adapter,
        CAPACITY,
        wgpu::Features::empty(),
    )?))
}

/// A runtime on a device of `backend`.
fn runtime(backend: Backend) -> ForgeRuntime {
    let rt = ForgeRuntime::builder()
        .build_with(device(backend))
        .expect("a runtime on the device");
    assert_eq!(rt.emission(), backend);
    assert_eq!(rt.capacity(), CAPACITY);
    rt
}

/// [`Bump`] on host data, in place.
fn bump(rt: &mut ForgeRuntime, x: &mut [u32]) -> forge_core::Result<()> {
    let n = x.len() as u32;
    let mut args = [HostArg::InOut(bytemuck::cast_slice_mut(x))];
    let schedule = Bump.default_schedule();
    let outs = rt.launch_host(&Bump, &schedule, &n.to_le_bytes(), n as u64, &mut args)?;
    assert!(outs.is_empty(), "an in-place kernel returns nothing");
    Ok(())
}

/// [`Bump`] recorded on a tensor.
fn bump_tensor(rt: &mut ForgeRuntime, x: &forge_core::GpuTensor<u32>) -> forge_core::Result<()> {
    let n = x.len() as u32;
    let schedule = Bump.default_schedule();
    rt.launch_tensors(&Bump, &schedule, &n.to_le_bytes(), n as u64, &[x.raw()])
}

fn launches_on_host_data(backend: Backend) {
    let mut rt = runtime(backend);
    // Every schedule Affine declares, at odd sizes.
    for n in [1usize, 77, 4099] {
        let a = random_f32(n, n as u64);
        for s in Affine.tune_space().candidates() {
            let got = run_affine(&mut rt, &s, &a, 0.5).unwrap();
            assert_eq!(got, affine_cpu(&a, 0.5), "affine, n = {n}, at {s}");
        }
    }
    // Past 65535 workgroups: the grid folds into y, which the kernel never sees.
    let n = 65536 * 8 + 3;
    let a = random_f32(n, 7);
    let got = run_affine(&mut rt, &Schedule::with_workgroup(8), &a, -1.25).unwrap();
    assert_eq!(got, affine_cpu(&a, -1.25), "the folded grid");
    // In place, written back into the slice; a repeated call compiles nothing more.
    let x0 = random_u32(1000, 3);
    let mut x = x0.clone();
    bump(&mut rt, &mut x).unwrap();
    assert_eq!(x, bump_cpu(&x0));
    let compiled = rt.stats().pipelines_compiled;
    bump(&mut rt, &mut x).unwrap();
    assert_eq!(x, bump_cpu(&bump_cpu(&x0)));
    assert_eq!(rt.stats().pipelines_compiled, compiled);
}

fn launches_on_tensors(backend: Backend) {
    let mut rt = runtime(backend);
    let n = 100_003;
    let x0 = random_u32(n, 11);
    let x = rt.upload(&x0).unwrap();
    // Three launches, no readback between them.
    for _ in 0..3 {
        bump_tensor(&mut rt, &x).unwrap();
    }
    assert!(rt.has_pending());
    // A host launch takes the pending launches with it, ahead of its own.
    let a = random_f32(5, 1);
    let got = run_affine(&mut rt, &Affine.default_schedule(), &a, 1.0).unwrap();
    assert_eq!(got, affine_cpu(&a, 1.0));
    assert_eq!(
        rt.download(&x).unwrap(),
        bump_cpu(&bump_cpu(&bump_cpu(&x0)))
    );
    assert!(!rt.has_pending());
    // An output tensor is bound as it is.
    let a = random_f32(n, 12);
    let (ta, ty) = (rt.upload(&a).unwrap(), rt.zeros::<f32>(n).unwrap());
    let params = affine_params(n as u32, 3.0);
    let schedule = Affine.default_schedule();
    rt.launch_tensors(&Affine, &schedule, &params, n as u64, &[ta.raw(), ty.raw()])
        .unwrap();
    assert_eq!(rt.download(&ty).unwrap(), affine_cpu(&a, 3.0));
    // What is a wgpu buffer says so; on another backend there is none, and no panic.
    assert_eq!(ty.wgpu_buffer().is_some(), backend != Backend::Cuda);
    assert_eq!(rt.wgpu().is_some(), backend != Backend::Cuda);
}

fn tensor_operations(backend: Backend) {
    let mut rt = runtime(backend);
    let v = random_f32(1001, 5);
    let t = rt.upload(&v).unwrap();
    assert_eq!(rt.download(&t).unwrap(), v);
    let quads: Vec<[f32; 4]> = v
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    let tq = rt.upload(&quads).unwrap();
    assert_eq!(rt.download(&tq).unwrap(), quads);
    // Three halves are six bytes: the device pads them to whole words.
    let halves: Vec<f16> = v[..3].iter().map(|x| f16::from_f32(*x)).collect();
    let th = rt.upload(&halves).unwrap();
    assert_eq!(rt.download(&th).unwrap(), halves);
    // A write lands after the launches recorded before it, and before those after it.
    let (x0, x1) = (random_u32(513, 9), random_u32(513, 10));
    let x = rt.upload(&x0).unwrap();
    bump_tensor(&mut rt, &x).unwrap();
    rt.write(&x, &x1).unwrap();
    bump_tensor(&mut rt, &x).unwrap();
    assert_eq!(rt.download(&x).unwrap(), bump_cpu(&x1));
    rt.clear(&x).unwrap();
    assert_eq!(rt.download(&x).unwrap(), vec![0; 513]);
    let z = rt.zeros::<u32>(17).unwrap();
    assert_eq!(rt.download(&z).unwrap(), vec![0; 17]);
    // Every tensor holds its bytes of the budget until it drops.
    let held = rt.stats().bytes_in_use;
    let bytes: u64 = [t.raw(), tq.raw(), th.raw(), x.raw(), z.raw()]
        .iter()
        .map(|r| r.bytes().next_multiple_of(4))
        .sum();
    drop((t, tq, th, x, z));
    assert_eq!(held - rt.stats().bytes_in_use, bytes);
}

fn errors_name_what_is_wrong(backend: Backend) {
    let mut rt = runtime(backend);
    let a = random_f32(10, 2);
    // A schedule the kernel does not declare.
    assert!(matches!(
        run_affine(&mut rt, &Schedule::with_workgroup(16), &a, 0.0),
        Err(ForgeError::BadSchedule { .. })
    ));
    // No work.
    assert!(matches!(
        run_affine(&mut rt, &Affine.default_schedule(), &[], 0.0),
        Err(ForgeError::EmptyWork { .. })
    ));
    // The wrong arguments.
    let mut args = [HostArg::Out(40)];
    assert!(matches!(
        rt.launch_host(
            &Affine,
            &Affine.default_schedule(),
            &affine_params(10, 0.0),
            10u64,
            &mut args
        ),
        Err(ForgeError::InvalidArgument { .. })
    ));
    // More than the budget, refused before anything is allocated.
    assert!(matches!(
        rt.zeros::<u32>((CAPACITY / 4) as usize + 1),
        Err(ForgeError::CapacityExceeded { .. } | ForgeError::BindingTooLarge { .. })
    ));
    // Another runtime's tensor, and one tensor both read and written.
    let mut other = runtime(backend);
    let foreign = other.upload(&[1u32; 8]).unwrap();
    assert!(matches!(
        bump_tensor(&mut rt, &foreign),
        Err(ForgeError::ForeignTensor { .. })
    ));
    let (ta, ty) = (rt.upload(&a).unwrap(), rt.zeros::<f32>(10).unwrap());
    let schedule = Affine.default_schedule();
    let params = affine_params(10, 0.0);
    assert!(matches!(
        rt.launch_tensors(&Affine, &schedule, &params, 10u64, &[ty.raw(), ty.raw()]),
        Err(ForgeError::InvalidArgument { .. })
    ));
    // And the runtime still works after all of them.
    rt.launch_tensors(&Affine, &schedule, &params, 10u64, &[ta.raw(), ty.raw()])
        .unwrap();
    assert_eq!(rt.download(&ty).unwrap(), affine_cpu(&a, 0.0));
}

/// Quick timing options: a short warm-up, small batches.
fn quick() -> TimingOptions {
    TimingOptions {
        passes: 3,
        warmup_ns: 1.0e7,
        target_pass_ns: 5.0e5,
        max_repeats: 16,
        ..TimingOptions::default()
    }
}

fn timing_a_kernel(backend: Backend) {
    let mut rt = runtime(backend);
    let f32s = ElemType::scalar(ScalarType::F32);
    let n = 1u32 << 16;
    let a = random_f32(n as usize, 21);
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(n), ScalarValue::F32(0.75)],
        buffers: vec![Some(HostBuffer::from_slice(f32s, &a)), None],
    };
    let opts = TimingOptions {
        read_back: true,
        ..quick()
    };
    let schedule = Affine.default_schedule();
    let run = rt
        .time_kernel_with(&Affine, &schedule, &args, &opts)
        .unwrap();
    let t = &run.timing;
    assert!(t.median_ns > 0.0 && t.samples.len() == 3 && (1..=16).contains(&t.repeats));
    assert_eq!(t.timer, Timer::Timestamp, "the device has timestamps");
    assert!(run.input_sets >= 1);
    let out = run.outputs.expect("read back");
    assert_eq!(
        bytemuck::cast_slice::<u8, f32>(out[0].bytes()),
        affine_cpu(&a, 0.75)
    );

    // In place: each timed dispatch starts from the pristine inputs, so what is read back
    // is one application, however many ran; the arguments are not changed.
    let x0 = random_u32(5000, 22);
    let u32s = ElemType::scalar(ScalarType::U32);
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(5000)],
        buffers: vec![Some(HostBuffer::from_slice(u32s, &x0))],
    };
    let run = rt
        .time_kernel_with(&Bump, &Bump.default_schedule(), &args, &opts)
        .unwrap();
    let out = run.outputs.expect("read back");
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(out[0].bytes()),
        bump_cpu(&x0)
    );
    assert_eq!(args.buffers[0].as_ref().unwrap().words(), &x0[..]);

    // The wall clock times whole batches.
    let wall = TimingOptions {
        wall_clock: true,
        ..quick()
    };
    let t = rt
        .time_kernel_with(&Bump, &Bump.default_schedule(), &args, &wall)
        .unwrap();
    assert_eq!(t.timing.timer, Timer::WallClock);
    assert!(t.timing.median_ns > 0.0);
    assert!(!rt.has_pending());
}

fn timing_calls(backend: Backend) {
    let mut rt = runtime(backend);
    let x = rt.upload(&random_u32(4096, 31)).unwrap();
    let opts = TimingOptions {
        passes: 5,
        ..quick()
    };
    let three_bumps = |rt: &mut ForgeRuntime| (0..3).try_for_each(|_| bump_tensor(rt, &x));
    let t = rt.time_calls("three bumps", &opts, three_bumps).unwrap();
    assert!(t.median_ns > 0.0 && t.samples.len() == 5 && t.repeats == 1);
    assert_eq!(t.timer, Timer::Timestamp);
    // The timer read its timestamps: nothing is left pending.
    assert!(!rt.has_pending());
    let wall = TimingOptions {
        wall_clock: true,
        repeats: Some(2),
        ..opts
    };
    let t = rt.time_calls("three bumps", &wall, three_bumps).unwrap();
    assert!(t.median_ns > 0.0 && t.timer == Timer::WallClock && t.repeats == 2);
}

/// A launch of `compiled` per `plan` on `bindings`, without prints.
fn launch<'a>(
    compiled: &'a forge_core::backend::Compiled,
    plan: &'a LaunchPlan,
    bindings: &'a [&'a Memory],
) -> Launch<'a> {
    Launch {
        compiled,
        plan,
        bindings,
        prints: None,
        indirect: None,
    }
}

/// Reads `memory`'s first `bytes` bytes through the seam.
fn read(device: &mut dyn Device, memory: &Memory, bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; bytes];
    block_on("a test's readback", device.read(&[memory], &mut [&mut out])).unwrap();
    out
}

fn memory_through_the_seam(backend: Backend) {
    let mut dev = device(backend);
    let dev = &mut *dev;
    // An odd length: the device pads the upload to whole words, with zeros.
    let data: Vec<u8> = (1..=13u8).collect();
    let m = dev.lease(13, &|| "m".into()).unwrap();
    assert!(m.bytes() >= 16 && m.device_id() == dev.id());
    dev.record(
        "uploading",
        &[Command::Upload {
            to: &m,
            data: &data,
        }],
    )
    .unwrap();
    assert_eq!(read(dev, &m, 16), [&data[..], &[0, 0, 0]].concat());
    // Copies on the device (one between offsets) and a clear, then a write behind them.
    let c = dev.create(16, Some(&[7u8; 16]), &|| "c".into()).unwrap();
    let copy_then_clear = [
        Command::Copy {
            from: &m,
            from_offset: 0,
            to: &c,
            to_offset: 0,
            bytes: 8,
        },
        Command::Copy {
            from: &m,
            from_offset: 8,
            to: &c,
            to_offset: 12,
            bytes: 4,
        },
        Command::Clear { to: &m, bytes: 16 },
    ];
    dev.record("copying", &copy_then_clear).unwrap();
    assert_eq!(read(dev, &m, 16), vec![0; 16]);
    dev.record(
        "writing",
        &[Command::Write {
            to: &c,
            data: &[9, 9, 9, 9],
        }],
    )
    .unwrap();
    let mut want = [7u8; 16];
    want[..8].copy_from_slice(&data[..8]);
    want[12..].copy_from_slice(&data[8..12]);
    want[..4].copy_from_slice(&[9; 4]);
    assert_eq!(read(dev, &c, 16), want);
    // Created memory holds its bytes of the budget until it drops.
    let held = dev.budget().in_use();
    drop(c);
    assert_eq!(held - dev.budget().in_use(), 16);
    dev.release(m);
}

fn a_launch_and_its_timestamps_through_the_seam(backend: Backend) {
    let mut dev = device(backend);
    let dev = &mut *dev;
    let n = 1u32 << 20;
    let a = random_f32(n as usize, 41);
    let schedule = Affine.default_schedule();
    let params = affine_params(n, 2.5);
    let bytes = [4 * n as u64; 2];
    let plan =
        LaunchPlan::new(&Affine, &schedule, &params, n as u64, &bytes, dev.limits()).unwrap();
    let compiled = dev.compile(&Affine, &schedule, plan.has_params()).unwrap();
    let (ma, my) = (
        dev.lease(bytes[0], &|| "a".into()).unwrap(),
        dev.lease(bytes[1], &|| "y".into()).unwrap(),
    );
    assert!(dev.features().contains(wgpu::Features::TIMESTAMP_QUERY));
    let stamps = dev.stamps("affine", 2).unwrap();
    let dispatched = dev.stats().dispatches;
    let bindings = [&ma, &my];
    let commands = [
        Command::Upload {
            to: &ma,
            data: bytemuck::cast_slice(&a),
        },
        Command::Clear {
            to: &my,
            bytes: bytes[1],
        },
        Command::Stamp {
            stamps: &stamps,
            index: 0,
        },
        Command::Launch(launch(&compiled, &plan, &bindings)),
        Command::Stamp {
            stamps: &stamps,
            index: 1,
        },
    ];
    dev.record("an affine launch", &commands).unwrap();
    assert!(dev.has_pending());
    let ns = block_on("timestamps", dev.read_stamps(&stamps, 1)).unwrap();
    assert!(ns.len() == 1 && ns[0].is_some_and(|ns| ns > 0.0), "{ns:?}");
    let y = read(dev, &my, 4 * n as usize);
    assert_eq!(bytemuck::cast_slice::<u8, f32>(&y), affine_cpu(&a, 2.5));
    assert_eq!(dev.stats().dispatches, dispatched + 1);
    dev.release(ma);
    dev.release(my);
}

fn prepared_launches_rotate_over_their_sets(backend: Backend) {
    let mut dev = device(backend);
    let dev = &mut *dev;
    let n = 300u32;
    let (x0, x1) = (random_u32(n as usize, 51), random_u32(n as usize, 52));
    let schedule = Bump.default_schedule();
    let plan = LaunchPlan::new(
        &Bump,
        &schedule,
        &n.to_le_bytes(),
        n as u64,
        &[4 * n as u64],
        dev.limits(),
    )
    .unwrap();
    let compiled = dev.compile(&Bump, &schedule, true).unwrap();
    let m0 = dev.lease(4 * n as u64, &|| "set 0".into()).unwrap();
    let m1 = dev.lease(4 * n as u64, &|| "set 1".into()).unwrap();
    for (to, x) in [(&m0, &x0), (&m1, &x1)] {
        let data = bytemuck::cast_slice(x);
        dev.record("uploading", &[Command::Upload { to, data }])
            .unwrap();
    }
    let set0 = [&m0];
    let launch = launch(&compiled, &plan, &set0);
    let prepared = dev.prepare(&launch, &[&[&m1]]).unwrap();
    // Three dispatches from set 0: sets 0, 1, 0.
    let dispatch = Command::Dispatch {
        prepared: &prepared,
        set: 0,
        count: 3,
        timed: None,
    };
    dev.record("dispatching", &[dispatch]).unwrap();
    let got0 = read(dev, &m0, 4 * n as usize);
    let got1 = read(dev, &m1, 4 * n as usize);
    assert_eq!(
        bytemuck::cast_slice::<u8, u32>(&got0),
        bump_cpu(&bump_cpu(&x0))
    );
    assert_eq!(bytemuck::cast_slice::<u8, u32>(&got1), bump_cpu(&x1));
    dev.retire(prepared);
    dev.release(m0);
    dev.release(m1);
}

fn handles_of_another_device_are_refused(backend: Backend) {
    let (mut a, mut b) = (device(backend), device(backend));
    assert_ne!(a.id(), b.id());
    let m = a.lease(16, &|| "a's".into()).unwrap();
    let err = b
        .record("clearing", &[Command::Clear { to: &m, bytes: 16 }])
        .unwrap_err();
    assert!(matches!(err, ForgeError::InvalidArgument { .. }), "{err}");
    let mut out = [0u8; 4];
    assert!(block_on("a readback", b.read(&[&m], &mut [&mut out])).is_err());
    let compiled = a.compile(&Bump, &Bump.default_schedule(), true).unwrap();
    let schedule = Bump.default_schedule();
    let plan = LaunchPlan::new(
        &Bump,
        &schedule,
        &4u32.to_le_bytes(),
        4u64,
        &[16],
        b.limits(),
    )
    .unwrap();
    let foreign = [&m];
    let launch = launch(&compiled, &plan, &foreign);
    assert!(b.record("launching", &[Command::Launch(launch)]).is_err());
    // Both still work.
    a.record("clearing", &[Command::Clear { to: &m, bytes: 16 }])
        .unwrap();
    assert_eq!(read(&mut *a, &m, 16), vec![0; 16]);
    let own = b.lease(4, &|| "b's".into()).unwrap();
    b.record(
        "uploading",
        &[Command::Upload {
            to: &own,
            data: &[5; 4],
        }],
    )
    .unwrap();
    assert_eq!(read(&mut *b, &own, 4), vec![5; 4]);
}
