//! Bring your own device: run a kernel on the wgpu device, queue and buffer an application
//! already has (a game engine, a plotting tool), in place, without a copy.
//!
//! ```text
//! cargo run --example own_device
//! ```
//!
//! It exits non-zero if the application's buffer does not hold what the CPU oracle
//! computes.

use wgsl_forge::prelude::*;
use wgsl_forge::wgpu;

/// `v = a·v + b`, in place: a kernel the application runs on its own buffer.
#[forge_kernel(threads = n)]
pub fn scale_shift(v: &mut [f32; n], a: f32, b: f32, n: u32) {
    let i = global_index();
    if i < n {
        v[i] = v[i].mul_add(a, b);
    }
}

pub fn main() -> Result<(), ForgeError> {
    // Step 1: the application's own wgpu setup. A renderer would have made these long ago;
    // the runtime uses the wgpu that `wgsl_forge::wgpu` names, so both agree on its version.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter =
        pollster::block_on(instance.request_adapter(&Default::default())).map_err(|e| {
            ForgeError::NoAdapter {
                detail: format!(": {e}"),
            }
        })?;
    let (device, queue) =
        pollster::block_on(adapter.request_device(&Default::default())).map_err(|e| {
            ForgeError::NoAdapter {
                detail: format!(": {e}"),
            }
        })?;

    // Step 2: the application's buffer, filled through its own queue.
    let n = 1000u32;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 100.0).collect();
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the application's data"),
        size: 4 * n as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    queue.write_buffer(&buffer, 0, bytemuck::cast_slice(&data));

    // Step 3: hand the device over (wgpu handles are shared: the application keeps its
    // own), and view the buffer as a tensor. The runtime checks the buffer's usage, size
    // and device, and names what is wrong.
    let mut rt = ForgeRuntime::from_wgpu(adapter, device.clone(), queue.clone())?;
    let v = rt.tensor_from_buffer::<f32>(buffer.clone(), n as usize)?;

    // Step 4: launch on it. The launch is recorded; `flush` submits it on the shared queue,
    // where it runs before anything the application submits after.
    scale_shift::launch(&mut rt, &v, 3.0, 1.0, n)?;
    rt.flush()?;

    // Step 5: the application reads its own buffer back, its own way.
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("the application's readback"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&buffer, 0, &staging, 0, buffer.size());
    queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("mapped"));
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| ForgeError::Gpu {
            context: "waiting for the readback",
            message: e.to_string(),
        })?;
    let gpu: Vec<f32> =
        bytemuck::cast_slice(&staging.get_mapped_range(..).expect("mapped")).to_vec();

    // Step 6: check it against the oracle, which runs the same kernel on the CPU.
    let mut want = data.clone();
    scale_shift::cpu(&mut want, 3.0, 1.0, n)?;
    assert_eq!(
        gpu, want,
        "the application's buffer holds the kernel's result"
    );
    println!(
        "scale_shift ran on the application's device ({}) and buffer: v[999] = {}",
        rt.adapter_info().name,
        gpu[999]
    );
    Ok(())
}
