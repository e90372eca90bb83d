//! W2A8 ternary GEMV prototype: 2-bit weights (the built-in's packing, 16 codes a word,
//! 0 → 0, 1 → +1, 2 → −1, 3 → 0), int8 activations packed four to a word in the order
//! the decode wants, `dot4I8Packed` per 4 weights. y[r] = Σ_c v[r][c] · xq[c] (integer).
use std::borrow::Cow;
use std::fmt::Write;
use std::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct TCfg {
    pub rows: u32,
    pub wg: u32,
    pub shared_x: bool,
}

pub fn wgsl(c: &TCfg, k: u32) -> String {
    let words = k / 16;
    let mut s = String::new();
    let w = &mut s;
    writeln!(w, "@group(0) @binding(0) var<storage, read> pw: array<u32>;").unwrap();
    writeln!(w, "@group(0) @binding(1) var<storage, read> xv: array<vec4<u32>>;").unwrap();
    writeln!(w, "@group(0) @binding(2) var<storage, read_write> y: array<i32>;").unwrap();
    if c.shared_x {
        writeln!(w, "var<workgroup> sx: array<vec4<u32>, {words}>;").unwrap();
    }
    writeln!(w, "@compute @workgroup_size({})", c.wg).unwrap();
    writeln!(w, "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {{").unwrap();
    if c.shared_x {
        writeln!(w, "  for (var e = li; e < {words}u; e += {}u) {{ sx[e] = xv[e]; }}", c.wg).unwrap();
        writeln!(w, "  workgroupBarrier();").unwrap();
    }
    writeln!(w, "  let lane = li % 32u; let warp = li / 32u;").unwrap();
    writeln!(w, "  let row0 = (wid.x * {}u + warp) * {}u;", c.wg / 32, c.rows).unwrap();
    for r in 0..c.rows {
        writeln!(w, "  var a{r}: i32 = 0; var b{r}: i32 = 0; var c{r}: i32 = 0;").unwrap();
    }
    writeln!(w, "  for (var g = lane; g < {words}u; g += 32u) {{").unwrap();
    let xsrc = if c.shared_x { "sx" } else { "xv" };
    writeln!(w, "    let xs = {xsrc}[g];").unwrap();
    for r in 0..c.rows {
        writeln!(w, "    let w{r} = pw[(row0 + {r}u) * {words}u + g];").unwrap();
    }
    for r in 0..c.rows {
        // e = 1 + b0 - b1 per code, in place: bits (e1, e0) = (b0 & !b1, !(b0 ^ b1)).
        writeln!(w, "    let lo{r} = w{r} & 0x55555555u; let hi{r} = (w{r} >> 1u) & 0x55555555u;").unwrap();
        writeln!(w, "    let e{r} = ((lo{r} & ~hi{r}) << 1u) | (~(lo{r} ^ hi{r}) & 0x55555555u);").unwrap();
        writeln!(w, "    a{r} += dot4I8Packed(e{r} & 0x03030303u, xs.x) + dot4I8Packed((e{r} >> 6u) & 0x03030303u, xs.w);").unwrap();
        writeln!(w, "    b{r} += dot4I8Packed(e{r} & 0x0c0c0c0cu, xs.y);").unwrap();
        writeln!(w, "    c{r} += dot4I8Packed(e{r} & 0x30303030u, xs.z);").unwrap();
    }
    writeln!(w, "  }}").unwrap();
    for r in 0..c.rows {
        writeln!(w, "  let t{r} = subgroupAdd(a{r} + (b{r} >> 2u) + (c{r} >> 4u));").unwrap();
        writeln!(w, "  if (lane == 0u) {{ y[row0 + {r}u] = t{r}; }}").unwrap();
    }
    writeln!(w, "}}").unwrap();
    s
}

pub fn configs() -> Vec<TCfg> {
    let mut v = Vec::new();
    for &rows in &[1, 2, 4, 8] {
        for &wg in &[128, 256, 512] {
            for &shared_x in &[false, true] {
                v.push(TCfg { rows, wg, shared_x });
            }
        }
    }
    v
}

pub fn run(device: &wgpu::Device, queue: &wgpu::Queue, m: u32, k: u32) {
    use wgpu::util::DeviceExt;
    let words = (k / 16) as usize;
    let mut state = 0x9e3779b97f4a7c15u64;
    let mut rnd = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    // Codes 0..=3 uniformly (3 reads as 0).
    let pw: Vec<u32> = (0..m as usize * words).map(|_| rnd()).collect();
    let xq: Vec<i8> = (0..k).map(|_| ((rnd() % 255) as i32 - 127) as i8).collect();
    // Packed for the decode: word g's four u32s, s-th holds x[16g+s], x[16g+s+4], ...
    let mut xv = vec![0u32; words * 4];
    for g in 0..words {
        for s in 0..4 {
            let mut u = 0u32;
            for j in 0..4 {
                u |= (xq[16 * g + s + 4 * j] as u8 as u32) << (8 * j);
            }
            xv[4 * g + s] = u;
        }
    }
    let sum_x: i64 = xq.iter().map(|&v| v as i64).sum();
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let bw = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: bytemuck::cast_slice(&pw), usage });
    let bx = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: None, contents: bytemuck::cast_slice(&xv), usage });
    let ysize = m as u64 * 4;
    let by = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: ysize, usage, mapped_at_creation: false });
    let staging = device.create_buffer(&wgpu::BufferDescriptor { label: None, size: ysize, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
    // Reference: Σ (code → value) · x, exact.
    let reference: Vec<i64> = (0..m as usize)
        .map(|r| {
            (0..k as usize)
                .map(|c| {
                    let code = (pw[r * words + c / 16] >> (2 * (c % 16))) & 3;
                    let v = match code { 1 => 1, 2 => -1, _ => 0 };
                    v * xq[c] as i64
                })
                .sum()
        })
        .collect();
    let bytes = (m as usize * words * 4) as f64;
    let mut variants: Vec<(String, String, u32)> = Vec::new();
    for cfg in configs() {
        let rows_per_wg = cfg.wg / 32 * cfg.rows;
        if m % rows_per_wg != 0 || (cfg.shared_x && words * 16 > 32768) {
            continue;
        }
        variants.push((
            format!("\"v\":1,\"rows\":{},\"wg\":{},\"shared_x\":{}", cfg.rows, cfg.wg, cfg.shared_x),
            wgsl(&cfg, k),
            m / rows_per_wg,
        ));
    }
    for c in crate::tern2::configs() {
        if crate::tern2::fits(&c, m, k) {
            variants.push((
                format!("\"v\":2,\"ch\":{},\"nw\":{},\"rb\":{},\"ru\":{}", c.ch, c.nw, c.rb, c.ru),
                crate::tern2::wgsl(&c, k),
                m / c.rb,
            ));
        }
    }
    for (label, src, groups) in variants {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: None, source: wgpu::ShaderSource::Wgsl(Cow::Owned(src)) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: None, layout: None, module: &module, entry_point: Some("main"), compilation_options: Default::default(), cache: None });
        if let Some(e) = pollster::block_on(scope.pop()) {
            println!("{label}: error {e}");
            continue;
        }
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: bw.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: bx.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: by.as_entire_binding() },
            ],
        });
        let dispatch = |reps: u32| {
            let mut enc = device.create_command_encoder(&Default::default());
            for _ in 0..reps {
                let mut pass = enc.begin_compute_pass(&Default::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bg, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
            enc
        };
        let mut enc = dispatch(1);
        enc.copy_buffer_to_buffer(&by, 0, &staging, 0, ysize);
        enc.clear_buffer(&by, 0, None);
        queue.submit([enc.finish()]);
        staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        crate::wait(device);
        let bad = {
            let view = staging.slice(..).get_mapped_range().unwrap();
            let out: &[i32] = bytemuck::cast_slice(&view);
            out.iter().zip(&reference).filter(|(&g, &want)| g as i64 - sum_x != want).count()
        };
        staging.unmap();
        let reps = 200;
        queue.submit([dispatch(reps).finish()]);
        crate::wait(device);
        let mut times = Vec::new();
        for _ in 0..5 {
            let enc = dispatch(reps).finish();
            let t = Instant::now();
            queue.submit([enc]);
            crate::wait(device);
            times.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let t = times[2];
        println!(
            "{{\"tern\":\"w2a8\",\"m\":{m},\"k\":{k},{label},\"us\":{:.2},\"weight_GBps\":{:.0},\"bad_rows\":{bad}}}",
            t * 1e6, bytes / t / 1e9
        );
    }
}

/// The decode of the WGSL above, on the CPU, against the plain per-code sum.
pub fn check_math() {
    let mut state = 7u64;
    let mut rnd = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let dot = |a: u32, b: u32| -> i32 {
        (0..4).map(|j| ((a >> (8 * j)) as u8 as i8 as i32) * ((b >> (8 * j)) as u8 as i8 as i32)).sum()
    };
    for _ in 0..100000 {
        let w = rnd();
        let x: Vec<i32> = (0..16).map(|_| (rnd() % 255) as i32 - 127).collect();
        let xs: Vec<u32> = (0..4)
            .map(|s| (0..4).fold(0u32, |u, j| u | ((x[s + 4 * j] as i8 as u8 as u32) << (8 * j))))
            .collect();
        let lo = w & 0x55555555;
        let hi = (w >> 1) & 0x55555555;
        let e = ((lo & !hi) << 1) | (!(lo ^ hi) & 0x55555555);
        let a = dot(e & 0x03030303, xs[0]) + dot((e >> 6) & 0x03030303, xs[3]);
        let b = dot(e & 0x0c0c0c0c, xs[1]);
        let c = dot(e & 0x30303030, xs[2]);
        let got = a + (b >> 2) + (c >> 4) - x.iter().sum::<i32>();
        let want: i32 = (0..16)
            .map(|c| match (w >> (2 * c)) & 3 { 1 => x[c], 2 => -x[c], _ => 0 })
            .sum();
        assert_eq!(got, want, "w={w:#x}");
    }
    println!("tern math: ok");
}
