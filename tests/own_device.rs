//! Bring your own device, on the real adapter (lavapipe in CI): the test makes its own wgpu
//! device as an application would, hands it to `ForgeRuntime::from_wgpu`, and runs kernels
//! on its own buffers in place; the pipeline cache, the tuner and the manifests work as on
//! a runtime that opened its device itself; a buffer of the wrong usage, size or device is
//! a named error.

use wgsl_forge::prelude::*;
use wgsl_forge::tune::{tune, TuneOptions};
use wgsl_forge::wgpu;
use wgsl_forge::{timing::TimingOptions, ScalarValue};

/// `y = x·x + v` and `v += 1`: a read, an in-place and an output binding.
#[forge_kernel(threads = n, tune(workgroup = [32, 64]))]
pub fn square_plus(x: &[f32; n], v: &mut [f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].mul_add(x[i], v[i]);
        v[i] = v[i] + 1.0f32;
    }
}

/// The application's device and queue, made without the runtime.
fn own_device() -> (wgpu::Adapter, wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))
        .expect("an adapter (lavapipe in CI)");
    let (device, queue) =
        pollster::block_on(adapter.request_device(&Default::default())).expect("a device");
    (adapter, device, queue)
}

fn buffer(device: &wgpu::Device, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the application's"),
        size: bytes,
        usage,
        mapped_at_creation: false,
    })
}

const APP: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_DST)
    .union(wgpu::BufferUsages::COPY_SRC);

/// Reads `buffer` back through the application's own queue, without the runtime.
fn read(device: &wgpu::Device, queue: &wgpu::Queue, buffer: &wgpu::Buffer) -> Vec<f32> {
    let staging = buffer_read(device, buffer.size());
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
    queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("mapped"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("the GPU finishes");
    let out = bytemuck::cast_slice(&staging.get_mapped_range(..).expect("mapped")).to_vec();
    out
}

fn buffer_read(device: &wgpu::Device, bytes: u64) -> wgpu::Buffer {
    buffer(
        device,
        bytes,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    )
}

#[test]
fn kernels_run_on_the_applications_device_and_buffers() {
    let (adapter, device, queue) = own_device();
    let mut rt = ForgeRuntime::from_wgpu(adapter, device.clone(), queue.clone()).unwrap();
    let wgpu = rt.wgpu().expect("a runtime on a wgpu device");
    assert!(wgpu.device == &device && wgpu.queue == &queue);

    // Odd sizes, and a view over the front of a larger buffer whose tail must survive.
    for n in [1usize, 77, 5000] {
        let x: Vec<f32> = (0..n).map(|i| (i % 37) as f32 * 0.25 - 3.0).collect();
        let v0: Vec<f32> = (0..n).map(|i| (i % 11) as f32 - 5.0).collect();
        let (bx, bv, by) = (
            buffer(&device, 4 * n as u64, APP),
            buffer(&device, 4 * n as u64 + 64, APP),
            buffer(&device, 4 * n as u64, APP),
        );
        queue.write_buffer(&bx, 0, bytemuck::cast_slice(&x));
        let mut v_full = v0.clone();
        v_full.extend([42.0f32; 16]);
        queue.write_buffer(&bv, 0, bytemuck::cast_slice(&v_full));
        let tx = rt.tensor_from_buffer::<f32>(bx, n).unwrap();
        let tv = rt.tensor_from_buffer::<f32>(bv.clone(), n).unwrap();
        let ty = rt.tensor_from_buffer::<f32>(by.clone(), n).unwrap();
        square_plus::launch(&mut rt, &tx, &tv, &ty, n as u32).unwrap();
        rt.flush().unwrap();

        // The oracle on host copies, and the application's own readback.
        let mut v_want = v0.clone();
        let y_want = square_plus::cpu(&x, &mut v_want, n as u32).unwrap();
        assert_eq!(read(&device, &queue, &by), y_want, "n = {n}");
        let v_got = read(&device, &queue, &bv);
        assert_eq!(&v_got[..n], &v_want[..], "n = {n}");
        assert_eq!(
            &v_got[n..],
            &[42.0f32; 16],
            "the rest of the buffer is untouched"
        );
        // The runtime's own download and clear stay inside the view too.
        assert_eq!(rt.download(&ty).unwrap(), y_want);
        rt.clear(&tv).unwrap();
        rt.flush().unwrap();
        let v_got = read(&device, &queue, &bv);
        assert!(v_got[..n].iter().all(|v| *v == 0.0));
        assert_eq!(&v_got[n..], &[42.0f32; 16]);
    }
    // Host slices go through the same device; the views counted nothing against the budget.
    let y = square_plus::run(&mut rt, &[2.0], &mut [1.0], 1).unwrap();
    assert_eq!(y, vec![5.0]);
    assert_eq!(rt.stats().pipelines_compiled, 1, "one pipeline, cached");
}

#[test]
fn a_buffer_the_runtime_cannot_use_is_a_named_error() {
    let (adapter, device, queue) = own_device();
    let mut rt = ForgeRuntime::from_wgpu(adapter, device.clone(), queue).unwrap();

    let uniform = buffer(
        &device,
        64,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    match rt.tensor_from_buffer::<f32>(uniform, 16) {
        Err(ForgeError::BufferUsage { missing, .. }) => assert_eq!(missing, "STORAGE"),
        other => panic!("{other:?}"),
    }
    match rt.tensor_from_buffer::<f32>(buffer(&device, 64, APP), 17) {
        Err(ForgeError::BufferTooSmall { size, needed, .. }) => {
            assert_eq!((size, needed), (64, 68))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        rt.tensor_from_buffer::<f32>(buffer(&device, 64, APP), 0),
        Err(ForgeError::EmptyWork { .. })
    ));

    // A storage buffer without COPY_SRC binds, but cannot be downloaded.
    let storage_only = buffer(&device, 64, wgpu::BufferUsages::STORAGE);
    let t = rt.tensor_from_buffer::<u32>(storage_only, 16).unwrap();
    match rt.download(&t) {
        Err(ForgeError::BufferUsage { missing, .. }) => assert_eq!(missing, "COPY_SRC"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        rt.write(&t, &[1; 16]),
        Err(ForgeError::BufferUsage { .. })
    ));

    // A buffer of another device of the same adapter, and one of another wgpu instance.
    let adapter = rt.wgpu().expect("a runtime on a wgpu device").adapter;
    let (other, _) =
        pollster::block_on(adapter.request_device(&Default::default())).expect("a second device");
    let (_, elsewhere, _) = own_device();
    for foreign in [buffer(&other, 64, APP), buffer(&elsewhere, 64, APP)] {
        let err = rt.tensor_from_buffer::<f32>(foreign, 16).unwrap_err();
        assert!(matches!(err, ForgeError::ForeignBuffer { .. }), "{err}");
        assert!(err.to_string().contains("another device"), "{err}");
    }
    // The runtime still works after the refusals.
    assert_eq!(
        square_plus::run(&mut rt, &[3.0], &mut [1.0], 1).unwrap(),
        vec![10.0]
    );
}

#[test]
fn the_tuner_and_the_manifests_work_on_the_applications_device() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let cache =
        std::env::temp_dir().join(format!("forge-own-device-{}-{nanos}", std::process::id()));
    let (adapter, device, queue) = own_device();
    let mut rt = ForgeRuntime::builder()
        .cache_dir(&cache)
        .capacity(32 << 20)
        .build_on(adapter, device, queue)
        .unwrap();
    assert_eq!(rt.capacity(), 32 << 20);
    let opts = TuneOptions {
        problem: Some(vec![ScalarValue::U32(4096)]),
        timing: TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 2,
            target_pass_ns: 1.0e5,
            max_repeats: 16,
            ..TimingOptions::default()
        },
        rounds: 1,
        ..TuneOptions::default()
    };
    let report = tune(&mut rt, &square_plus::Kernel, &opts).unwrap();
    let winner = report.winner().expect("a certified winner");
    let path = report.stored.expect("stored");
    assert!(
        path.starts_with(cache.join(rt.topology_hash())),
        "{}",
        path.display()
    );

    // A second runtime on another device of the same adapter reads it back.
    let (adapter, device, queue) = own_device();
    let fresh = ForgeRuntime::builder()
        .cache_dir(&cache)
        .build_on(adapter, device, queue)
        .unwrap();
    assert_eq!(fresh.tuned_schedule(&square_plus::Kernel), Some(winner));
    let _ = std::fs::remove_dir_all(&cache);
}
