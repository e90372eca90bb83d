//! What wgpu's shader runtime checks cost `gemm`: every schedule of its tune space at `d×d×d`,
//! compiled as the runtime compiles it (checked: naga clamps every workgroup-array index,
//! bounds every loop and guards every integer division), then with each of those checks off
//! on its own, then with none (`ShaderRuntimeChecks::unchecked()`), each timed the same way;
//! every build must compute the same bits.
//!
//! ```text
//! cargo run --release -p forge-kernels --example gemm_checks -- [d ...] [checked]
//! ```
//!
//! Timing: GPU timestamps around one compute pass of `r` dispatches (`r` chosen so that a
//! pass lasts about 20 ms), the median of 5 passes after a warm-up. The `forge bench`
//! harness is not used, so this is also a second opinion on its gemm figures. Prints one
//! JSON line per (size, schedule) and a table.

use forge_kernels::gemm::gemm;
use std::borrow::Cow;
use wgpu::util::DeviceExt;
use wgsl_forge::prelude::*;
use wgsl_forge::WgpuParts;

/// A cheap deterministic stream of values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// One gemm pipeline and the bind group of its problem.
struct Rig {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: (u32, u32),
}

fn rig(
    device: &wgpu::Device,
    source: &str,
    checks: wgpu::ShaderRuntimeChecks,
    buffers: [&wgpu::Buffer; 4],
    groups: u64,
) -> Rig {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some("gemm"),
        source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(source)),
    };
    // SAFETY: the probe's buffers hold exactly the lengths the kernel's LEN expressions ask
    // for; gemm is certified against its oracle, which reports any out-of-bounds index; its
    // loops end, and it divides only by nonzero constants and by dimensions, which are ≥ 1.
    let module = unsafe { device.create_shader_module_trusted(desc, checks) };
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("gemm"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let layout = pipeline.get_bind_group_layout(0);
    let entries: Vec<wgpu::BindGroupEntry> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("gemm"),
        layout: &layout,
        entries: &entries,
    });
    // The runtime's folding: x up to 65535, the rest in y.
    let x = groups.min(65535) as u32;
    let y = groups.div_ceil(x as u64) as u32;
    Rig {
        pipeline,
        bind_group,
        groups: (x, y),
    }
}

/// Nanoseconds of one pass of `repeats` dispatches.
fn pass_ns(gpu: WgpuParts<'_>, r: &Rig, repeats: u32) -> f64 {
    let (device, queue) = (gpu.device, gpu.queue);
    let set = device.create_query_set(&wgpu::QuerySetDescriptor {
        label: None,
        ty: wgpu::QueryType::Timestamp,
        count: 2,
    });
    let resolve = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: None,
            timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                query_set: &set,
                beginning_of_pass_write_index: Some(0),
                end_of_pass_write_index: Some(1),
            }),
        });
        pass.set_pipeline(&r.pipeline);
        pass.set_bind_group(0, &r.bind_group, &[]);
        for _ in 0..repeats {
            pass.dispatch_workgroups(r.groups.0, r.groups.1, 1);
        }
    }
    enc.resolve_query_set(&set, 0..2, &resolve, 0);
    enc.copy_buffer_to_buffer(&resolve, 0, &read, 0, 16);
    queue.submit([enc.finish()]);
    read.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    let t: Vec<u64> =
        bytemuck::pod_collect_to_vec(&read.slice(..).get_mapped_range().expect("mapped"));
    t[1].saturating_sub(t[0]) as f64 * queue.get_timestamp_period() as f64
}

/// The median per-dispatch nanoseconds: passes of about 20 ms after a warm-up.
fn time(gpu: WgpuParts<'_>, r: &Rig) -> f64 {
    pass_ns(gpu, r, 2);
    let one = pass_ns(gpu, r, 1).max(1.0);
    let repeats = (20.0e6 / one).ceil().clamp(1.0, 512.0) as u32;
    let mut v: Vec<f64> = (0..5)
        .map(|_| pass_ns(gpu, r, repeats) / repeats as f64)
        .collect();
    v.sort_by(f64::total_cmp);
    v[2]
}

fn read_c(gpu: WgpuParts<'_>, c: &wgpu::Buffer, len: usize) -> Vec<f32> {
    let (device, queue) = (gpu.device, gpu.queue);
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (len * 4) as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(c, 0, &read, 0, (len * 4) as u64);
    queue.submit([enc.finish()]);
    read.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    bytemuck::pod_collect_to_vec(&read.slice(..).get_mapped_range().expect("mapped"))
}

fn main() -> Result<(), ForgeError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `checked` among the arguments: only the build the runtime uses.
    let only_checked = args.iter().any(|a| a == "checked");
    let sizes: Vec<u32> = args.iter().filter_map(|s| s.parse().ok()).collect();
    let sizes = if sizes.is_empty() {
        vec![1024, 2048, 4096, 8192]
    } else {
        sizes
    };
    let rt = ForgeRuntime::builder().capacity(3 << 30).build()?;
    if !rt.has_timestamps() {
        return Err(ForgeError::InvalidArgument {
            kernel: gemm::NAME,
            message: format!("{} has no timestamp queries", rt.adapter_info().name),
        });
    }
    // The checks are wgpu's: the runtime must run on it.
    let gpu = rt.wgpu().ok_or_else(|| ForgeError::InvalidArgument {
        kernel: gemm::NAME,
        message: format!("the runtime runs on `{}`, not wgpu", rt.emission()),
    })?;
    let device = gpu.device;
    // Each check of wgpu's on its own, then none: which one costs what.
    let checked = wgpu::ShaderRuntimeChecks::checked();
    let arms = [
        ("checked", checked),
        (
            "no_bounds",
            wgpu::ShaderRuntimeChecks {
                bounds_checks: false,
                ..checked
            },
        ),
        (
            "no_loop_bound",
            wgpu::ShaderRuntimeChecks {
                force_loop_bounding: false,
                ..checked
            },
        ),
        (
            "no_div_checks",
            wgpu::ShaderRuntimeChecks {
                int_div_checks: false,
                ..checked
            },
        ),
        ("unchecked", wgpu::ShaderRuntimeChecks::unchecked()),
    ];
    let mut table = format!("{:<7} {:<21}", "size", "schedule");
    for (name, _) in &arms {
        table.push_str(&format!(" {name:>13}"));
    }
    table.push_str("  (TFLOP/s)\n");
    for d in sizes {
        let len = d as usize * d as usize;
        let (a, b) = (values(len, 1), values(len, 2));
        let storage = |data: &[f32], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: bytemuck::cast_slice(data),
                usage,
            })
        };
        let ab = storage(&a, wgpu::BufferUsages::STORAGE);
        let bb = storage(&b, wgpu::BufferUsages::STORAGE);
        let cb = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: (len * 4) as u64,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let params = gemm::Params { m: d, k: d, n: d };
        let pb = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let threads = (d as u64).div_ceil(64).pow(2) * 256;
        // Spot checks against f64 dot products: a few elements spread over C.
        let spots: Vec<(usize, usize)> = (0..16)
            .map(|i| ((i * 977) % d as usize, (i * 131 + 7) % d as usize))
            .collect();
        for s in gemm::Kernel.tune_space().candidates() {
            let source = gemm::wgsl(&s);
            let groups = s.groups_for(threads);
            let mut figures = Vec::new();
            let mut results = Vec::new();
            for (name, checks) in arms.into_iter().take(if only_checked { 1 } else { 5 }) {
                let r = rig(device, &source, checks, [&ab, &bb, &cb, &pb], groups);
                let ns = time(gpu, &r);
                let c = read_c(gpu, &cb, len);
                for &(i, j) in &spots {
                    let want: f64 = (0..d as usize)
                        .map(|p| a[i * d as usize + p] as f64 * b[p * d as usize + j] as f64)
                        .sum();
                    let got = c[i * d as usize + j] as f64;
                    assert!(
                        (got - want).abs() <= 1e-4 * (d as f64).sqrt(),
                        "{d}^3 {s} {name}: C[{i}][{j}] = {got}, expected {want}"
                    );
                }
                let tflops = 2.0 * (d as f64).powi(3) / ns / 1e3;
                let same = results.first().is_none_or(|first: &Vec<f32>| *first == c);
                println!(
                    "{}",
                    serde_json::json!({"what": "gemm_checks", "n": d, "schedule": s.to_string(),
                        "checks": name, "tflops": tflops, "same_bits_as_checked": same})
                );
                assert!(same, "{d}^3 {s}: {name} computed other bits than checked");
                figures.push(tflops);
                results.push(c);
            }
            table.push_str(&format!("{:<7} {:<21}", format!("{d}^3"), s.to_string()));
            for f in figures {
                table.push_str(&format!(" {f:>13.2}"));
            }
            table.push('\n');
        }
    }
    print!("{table}");
    Ok(())
}
