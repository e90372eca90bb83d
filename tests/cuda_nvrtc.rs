//! The CUDA emitter against NVRTC, without a GPU (the `cuda` feature's tests; CI runs them
//! with the `nvidia-cuda-nvrtc` wheel on `LD_LIBRARY_PATH`): every built-in at every
//! schedule of its tuning space, every example kernel, and kernels that use each
//! construct of the language compile to PTX; NVRTC's log reaches the error.
//!
//! `cargo test --features cuda --test cuda_nvrtc`. A missing libnvrtc fails the tests.

use wgsl_forge::emit::{emit_ptx, nvrtc, DEFAULT_PTX_ARCH};
use wgsl_forge::prelude::*;

macro_rules! example {
    ($name:ident, $path:literal) => {
        #[allow(dead_code)]
        #[path = $path]
        mod $name;
    };
}
example!(reduction, "../examples/reduction.rs");
example!(histogram, "../examples/histogram.rs");
example!(prefix_sum, "../examples/prefix_sum.rs");
example!(transpose, "../examples/transpose.rs");
example!(softmax, "../examples/softmax.rs");
example!(staged_gemv, "../examples/staged_gemv.rs");
example!(own_device, "../examples/own_device.rs");
example!(quickstart, "../examples/quickstart.rs");
mod coop_kernels;

/// Compiles `k` at its declared schedule and at every candidate of its tuning space, and
/// checks that the PTX holds the entry point with the schedule's block size.
fn compiles_everywhere(k: &dyn Kernel) {
    let mut schedules = vec![k.default_schedule()];
    schedules.extend(k.tune_space().candidates());
    for s in schedules {
        let source = k
            .cuda(&s)
            .unwrap_or_else(|e| panic!("{} at {s}: no CUDA: {e}", k.name()));
        assert!(
            source.contains(&s.cuda_header()),
            "{} at {s}: the schedule's constants are in the source",
            k.name()
        );
        let ptx = emit_ptx(k, &s, DEFAULT_PTX_ARCH)
            .unwrap_or_else(|e| panic!("{} at {s}: {e}", k.name()));
        assert!(
            ptx.contains(".entry fg_main"),
            "{} at {s}:\n{ptx}",
            k.name()
        );
        assert!(
            ptx.contains(&format!(".maxntid {}, 1, 1", s.invocations())),
            "{} at {s}: the block size is the workgroup's",
            k.name()
        );
    }
}

#[test]
fn every_builtin_compiles_at_every_schedule() {
    for k in wgsl_forge::kernels::registry::builtin() {
        compiles_everywhere(k);
    }
}

#[test]
fn every_example_kernel_compiles() {
    let kernels: [&dyn Kernel; 8] = [
        &reduction::block_sums::Kernel,
        &histogram::histogram64::Kernel,
        &prefix_sum::block_scan::Kernel,
        &transpose::transpose::Kernel,
        &softmax::softmax::Kernel,
        &staged_gemv::staged_gemv::Kernel,
        &own_device::scale_shift::Kernel,
        &quickstart::poly_hash::Kernel,
    ];
    for k in kernels {
        compiles_everywhere(k);
    }
}

// ---- one kernel per corner of the language -------------------------------------------

#[forge_module]
mod corners {
    use wgsl_forge::prelude::*;

    /// A struct with a `Vec3` that WGSL aligns to 16 and a scalar in its last four bytes.
    #[forge_struct]
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Particle {
        pub pos: Vec4,
        pub vel: Vec3,
        pub mass: f32,
        pub hits: [u32; 2],
        pub cell: IVec2,
    }

    const GRAVITY: f32 = -9.81;

    #[forge_fn]
    fn drift(p: Particle, dt: f32) -> Particle {
        let mut q = p;
        q.pos += Vec4::new(p.vel.x, p.vel.y, p.vel.z, 0.0) * dt;
        q.vel.y += GRAVITY * dt;
        q.hits[0] = p.hits[0] + 1;
        q
    }

    #[forge_fn]
    fn fold(t: &mut [f32; 64], lid: u32) {
        workgroup_barrier();
        if lid < 32 {
            t[lid] += t[lid + 32];
        }
        workgroup_barrier();
    }

    /// Structs read and written whole and by field, a helper over them, casts back.
    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn integrate(ps: &mut [Particle; n], #[out] energy: &mut [f32; n], n: u32, dt: f32) {
        let i = global_index();
        if i < n {
            let mut p = drift(ps[i], dt);
            if p.pos.y < 0.0 {
                p.pos.y = -p.pos.y;
                p.hits[1] += 1;
            }
            p.cell = IVec2::new(p.pos.x.floor() as i32, p.pos.z.floor() as i32);
            ps[i] = p;
            energy[i] = 0.5 * p.mass * p.vel.dot(p.vel);
        }
    }

    /// A 2-D grid with a 2-D workgroup, tuned, and logical ids.
    #[forge_kernel(threads = (w, h), workgroup = (16, 16), tune(workgroup = [(16, 16), (32, 8)]))]
    pub fn blur(src: &[f32; w * h], #[out] dst: &mut [f32; w * h], w: u32, h: u32) {
        let id = global_id();
        if id.x < w && id.y < h {
            let l = if id.x > 0 {
                src[id.y * w + id.x - 1]
            } else {
                0.0
            };
            dst[id.y * w + id.x] = (src[id.y * w + id.x] + l) * 0.5 + num_workgroups().z as f32;
        }
    }

    /// Knobs, `#[unroll]`, register arrays, workgroup memory and a helper with barriers.
    #[forge_kernel(threads = n, workgroup = 64, knobs(CHUNK = 4), tune(CHUNK = [2, 4, 8]))]
    pub fn row_sums(a: &[f32; n * 8], #[out] y: &mut [f32; n], n: u32) {
        #[shared]
        let mut tile = [0.0f32; 64];
        let i = global_index();
        let mut s = 0.0f32;
        if i < n {
            let mut j = 0u32;
            while j < 8 {
                #[unroll]
                for u in 0..CHUNK {
                    s += a[i * 8 + j + u];
                }
                j += CHUNK;
            }
            let mut acc = [0.0f32; 8];
            #[unroll]
            for k in 0..8 {
                acc[k] = a[i * 8 + k];
            }
            s += acc[0] - acc[7];
        }
        tile[local_index()] = s;
        fold(&mut tile, local_index());
        if i < n {
            y[i] = tile[local_index()];
        }
    }

    /// Integer semantics: wrapping, WGSL division, shifts, bit functions, `match`, loops.
    #[forge_kernel(workgroup = 128, threads = n)]
    pub fn ints(
        a: &[u32; n],
        b: &[i32; n],
        #[out] h: &mut [u32; n],
        #[out] s: &mut [i32; n],
        n: u32,
    ) {
        let i = global_index();
        if i >= n {
            return;
        }
        let mut x = a[i];
        x ^= x << 13;
        x ^= x >> 17;
        x = x.wrapping_mul(0x9e37_79b9) + x.count_ones() + x.leading_zeros() * 3;
        let k = x % 7;
        let y = b[i];
        let q = y / (k as i32 - 4);
        let mut t = q.abs() * y.signum() + (y % 5) - (y >> 2) + (!y & 3) + i32::MIN.wrapping_add(q);
        for j in 0..=3u32 {
            match j {
                0 => t += 1,
                1 | 2 => {
                    if t > 100 {
                        break;
                    }
                    t -= 2
                }
                _ => t = t.rem_euclid(7),
            }
        }
        let mut l = 0u32;
        loop {
            l += 1;
            if l > k {
                break;
            }
        }
        h[i] = (x / k) | (x.reverse_bits() & 0xff) | (x.trailing_zeros() << 24) | l;
        s[i] = t + (a[i] as f32 * 0.5) as i32 + (-1.5f32) as u32 as i32;
    }

    /// Float functions with Rust's meaning, vectors and swizzles.
    #[forge_kernel(threads = n)]
    pub fn floats(
        x: &[f32; n],
        v: &[Vec4; n],
        #[out] y: &mut [f32; n],
        #[out] w: &mut [Vec4; n],
        n: u32,
        g: f32,
    ) {
        let i = global_index();
        if i < n {
            let a = x[i];
            let q = (a * 3.0).round().max(0.0).min(1.0).powf(g).clamp(0.0, 1.0);
            let r = a.sin()
                + a.exp2()
                + a.atan2(g)
                + a.hypot(g)
                + a.fract()
                + a.signum()
                + a.to_degrees();
            let z = if a.is_nan() || !a.is_finite() {
                0.0
            } else {
                a.mul_add(g, 1.0)
            };
            y[i] = q + r + z + f32::from_bits(a.to_bits() ^ 1) + a.rem_euclid(2.5) + a.powi(3);
            let u = v[i];
            let s = u.zyx();
            w[i] =
                Vec4::new(s.x, s.y, s.z, u.length()) * 2.0 + u.normalize().abs() + Vec4::splat(a);
        }
    }

    /// f16 through cuda_fp16.h.
    #[forge_kernel(threads = n)]
    pub fn half(
        x: &[f16; n],
        y: &mut [f16; n],
        v: &[HVec4; n],
        #[out] s: &mut [f32; n],
        n: u32,
        alpha: f32,
    ) {
        let i = global_index();
        if i < n {
            let a = alpha as f16;
            let bias: f16 = 0.1;
            y[i] = (a * x[i] + y[i]).clamp(-1.0, 1.0).round() + bias;
            let w = v[i] * HVec4::splat(1.5f16);
            s[i] = w.dot(w) as f32 + x[i].max(0.0) as f32 + (x[i] as i32) as f32;
        }
    }

    /// Atomics on bindings and workgroup memory, `u32`, `i32` and `f32`, and
    /// `compare_exchange_weak`.
    #[forge_kernel(workgroup = 64, threads = n)]
    pub fn atomics(
        x: &[f32; n],
        bins: &mut [Atomic<u32>; 64],
        lo: &mut [Atomic<i32>; 1],
        total: &mut [Atomic<f32>; 2],
        n: u32,
    ) {
        #[shared]
        let mut local = [0u32; 64];
        #[shared]
        let mut fsum = [0.0f32; 1];
        let i = global_index();
        if i < n {
            local[(x[i].to_bits() >> 3) % 64].fetch_add(1);
            fsum[0].fetch_add(x[i]);
            lo[0].fetch_min(x[i] as i32);
            total[1].fetch_max(x[i]);
            let (old, done) = total[0].compare_exchange_weak(0.0, x[i]);
            if !done {
                total[0].fetch_sub(old * 0.0);
            }
            let (o2, _) = bins[0].compare_exchange_weak(0, 1);
            bins[1].fetch_or(o2);
        }
        workgroup_barrier();
        let lid = local_index();
        let c = local[lid].load();
        if c > 0 {
            bins[lid].fetch_add(c);
        }
        if lid == 0 {
            total[0].fetch_add(fsum[0].load());
        }
    }

    /// Subgroup operations: reductions, scans, shuffles, votes, ballots.
    #[forge_kernel(workgroup = 96, threads = n)]
    pub fn subgroups(
        x: &[f32; n],
        u: &[u32; n],
        #[out] y: &mut [f32; n],
        #[out] z: &mut [u32; n],
        n: u32,
    ) {
        let i = global_index();
        let mut v = 0.0f32;
        let mut k = 0u32;
        if i < n {
            v = x[i];
            k = u[i];
        }
        let a = subgroup_add(v)
            + subgroup_max(v)
            + subgroup_exclusive_mul(v)
            + subgroup_inclusive_add(v);
        let b = subgroup_shuffle_xor(v, 1) + subgroup_shuffle_down(v, 2) + subgroup_broadcast(v, 3);
        let m = subgroup_and(k) ^ subgroup_or(k) ^ subgroup_exclusive_add(k) ^ subgroup_min(k);
        let ballot = subgroup_ballot(v > 0.0);
        let all = subgroup_all(k > 3);
        let vec = subgroup_add(Vec2::new(v, 1.0));
        if i < n {
            y[i] = a + b + vec.y + subgroup_size() as f32;
            z[i] = m
                + ballot.x
                + select(0u32, 1u32, all)
                + subgroup_invocation_id()
                + num_subgroups() * subgroup_id();
        }
    }
}

/// WGSL's builtins under their own names (`prelude_wgsl.cuh`), on `f32`, `f16`, integers
/// and vectors.
#[forge_kernel(threads = n)]
pub fn wgsl_builtins(
    x: &[f32; n],
    h: &[f16; n],
    u: &[u32; n],
    v: &[Vec4; n],
    #[out] o: &mut [f32; n],
    #[out] p: &mut [u32; n],
    #[out] q: &mut [Vec4; n],
    #[out] r: &mut [f16; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let a = x[i];
        let (fr, ex) = frexp(a);
        let (part, whole) = modf(a);
        o[i] = clamp(a, -1.0, 1.0)
            + fract(a)
            + sign(a)
            + inverse_sqrt(abs(a))
            + saturate(a)
            + step(0.5, a)
            + mix(a, 2.0, 0.25)
            + smoothstep(0.0, 1.0, a)
            + ldexp(a, 3)
            + quantize_to_f16(a)
            + round(a)
            + fr
            + ex as f32
            + part
            + whole
            + a.saturate();
        let b = u[i];
        let s = b as i32;
        p[i] = first_leading_bit(b)
            + first_trailing_bit(s) as u32
            + extract_bits(b, 3, 5)
            + extract_bits(s, 4, 9) as u32
            + insert_bits(b, 7, 2, 3)
            + count_one_bits(s) as u32
            + count_leading_zeros(b)
            + count_trailing_zeros(s) as u32
            + clamp(s, -3, 9) as u32
            + sign(s) as u32
            + pack4x8snorm(v[i])
            + pack4x8unorm(v[i])
            + pack2x16snorm(v[i].xy())
            + pack2x16unorm(v[i].zw())
            + pack2x16float(v[i].xy())
            + pack4x_i8(unpack4x_i8(b))
            + pack4x_u8(unpack4x_u8(b))
            + pack4x_i8_clamp(IVec4::splat(s))
            + pack4x_u8_clamp(UVec4::splat(b))
            + first_leading_bit(UVec2::splat(b)).x;
        let w = v[i];
        q[i] = clamp(w, Vec4::ZERO, Vec4::ONE)
            + sign(w)
            + fract(w)
            + saturate(w)
            + round(w)
            + step(Vec4::splat(0.5), w)
            + mix(w, Vec4::ONE, Vec4::splat(0.5))
            + smoothstep(Vec4::ZERO, Vec4::ONE, w)
            + ldexp(w, IVec4::splat(2))
            + w.min(w.zyxw())
            + face_forward(w, w, w)
            + reflect(w, Vec4::ONE)
            + refract(w, Vec4::ONE, 0.5)
            + unpack4x8snorm(b)
            + unpack4x8unorm(b)
            + inverse_sqrt(w.abs());
        let c = h[i];
        let (hf, he) = frexp(c);
        r[i] = clamp(c, 0.0, 1.0)
            + fract(c)
            + sign(c)
            + saturate(c)
            + step(c, 0.5)
            + mix(c, c, c)
            + smoothstep(c, 1.0, 0.5)
            + ldexp(c, 2)
            + hf
            + he as f16
            + inverse_sqrt(c);
    }
}

/// The third edition's forms: arrays of arrays (workgroup, local and register), strided
/// and reversed loops, `if` values inside expressions.
#[forge_kernel(threads = (cols, rows.div_ceil(32) * 8), workgroup = (32, 8))]
pub fn third_edition(
    a: &[f32; rows * cols],
    #[out] t: &mut [f32; rows * cols],
    rows: u32,
    cols: u32,
) {
    #[shared]
    let mut tile = [[0.0f32; 33]; 32];
    let l = local_id();
    let g = global_id();
    let row0 = workgroup_id().y * 32;
    for k in (0..4u32).rev() {
        let r = row0 + l.y + k * 8;
        if g.x < cols && r < rows {
            tile[l.y + k * 8][l.x] = a[r * cols + g.x];
        }
    }
    workgroup_barrier();
    let first = workgroup_uniform_load(&tile[0][0]);
    let mut regs = [[0.0f32; 2]; 2];
    #[unroll]
    for k in 0..2u32 {
        regs[k][1] = k as f32;
    }
    let mut pair = [[0.0f32; 2]; 4];
    for k in (0..4u32).step_by(1) {
        let c = workgroup_id().x * 32 + l.y + k * 8;
        let r = row0 + l.x;
        pair[k][0] =
            tile[l.x][l.y + k * 8] * if r % 2 == 0 { 1.0 } else { 1.0 + regs[1][0] } + first * 0.0;
        if c < cols && r < rows {
            t[c * rows + r] = pair[k][0];
        }
    }
}

/// Helpers that take bindings, `threads` that names `WG`, a LEN that names a knob.
#[forge_module]
pub mod staged {
    use wgsl_forge::prelude::*;

    #[forge_fn]
    fn stage(dst: &mut [Vec4; 512], src: &[Vec4; 4096], base: u32) {
        for k in (local_index()..512u32).step_by(64) {
            dst[k] = src[base + k];
        }
    }

    #[forge_fn]
    fn put(out: &mut [Vec4; 64], k: u32, v: Vec4) {
        out[k] = v;
    }

    #[forge_kernel(workgroup = 64, threads = rows * WG, knobs(R = 2), tune(workgroup = [64], R = [1, 2]))]
    pub fn k(
        kv: &[Vec4; 4096],
        #[out] o: &mut [Vec4; 64],
        #[out] r: &mut [u32; rows * R],
        rows: u32,
    ) {
        #[shared]
        let mut t = [Vec4::ZERO; 512];
        let lid = local_index();
        let mut acc = Vec4::ZERO;
        for chunk in 0..8u32 {
            stage(&mut t, kv, chunk * 512);
            workgroup_barrier();
            acc += t[lid * 8];
            workgroup_barrier();
        }
        if workgroup_index() == 0 {
            put(&mut o, lid, acc);
        }
        if lid < R {
            r[workgroup_index() * R + lid] = lid;
        }
    }
}

/// A generic kernel: one instance per type.
#[forge_kernel(threads = n, types(T = [f32, u32]))]
pub fn scale<T>(x: &[T; n], #[out] y: &mut [T; n], a: f32, n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] * (a as T);
    }
}

/// An indirect launch: the count of invocations read in the grid's prologue.
#[forge_kernel(workgroup = 64, threads = n, indirect = count[0])]
pub fn square_head(count: &[u32; 1], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < count[0] {
        y[i] = y[i] * y[i];
    }
}

#[test]
fn every_construct_compiles() {
    let kernels: [&dyn Kernel; 14] = [
        &square_head::Kernel,
        &wgsl_builtins::Kernel,
        &staged::k::Kernel,
        &third_edition::Kernel,
        &corners::integrate::Kernel,
        &corners::blur::Kernel,
        &corners::row_sums::Kernel,
        &corners::ints::Kernel,
        &corners::floats::Kernel,
        &corners::half::Kernel,
        &corners::atomics::Kernel,
        &corners::subgroups::Kernel,
        scale::kernel::<f32>(),
        scale::kernel::<u32>(),
    ];
    for k in kernels {
        compiles_everywhere(k);
    }
}

#[test]
fn nvrtc_log_is_in_the_error() {
    let source = "extern \"C\" __global__ void fg_main(float *y) { y[0] = not_declared; }";
    let err = nvrtc::compile_ptx("broken", source, DEFAULT_PTX_ARCH).expect_err("undeclared");
    let text = err.to_string();
    assert!(text.contains("broken"), "{text}");
    assert!(
        text.contains("not_declared"),
        "NVRTC's log names the identifier: {text}"
    );
    let err = nvrtc::compile_ptx("broken", source, "sm_90").expect_err("not a PTX arch");
    assert!(err.to_string().contains("compute_90"), "{err}");
}

#[test]
fn a_cubin_is_machine_code_for_the_device() {
    let k = &wgsl_forge::kernels::axpy::axpy::Kernel;
    let source = k.cuda(&k.default_schedule()).unwrap();
    let cubin = nvrtc::compile_cubin(k.name(), &source, "sm_90").unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF image");
}

/// Cooperative matrices assemble for the tensor cores of sm_80 (A100) and sm_90 (H100,
/// H200): ptxas accepts the prelude's `ldmatrix` and `mma.sync`, at every schedule of
/// `gemm_f16` and in the test kernels that take every layout and every row operation.
#[test]
fn cooperative_matrices_assemble_for_tensor_cores() {
    let gemm = &wgsl_forge::kernels::gemm_f16::gemm_f16::Kernel;
    let mut sources = vec![(gemm.name(), gemm.cuda(&gemm.default_schedule()).unwrap())];
    for s in gemm.tune_space().candidates() {
        sources.push((gemm.name(), gemm.cuda(&s).unwrap()));
    }
    for k in [
        &coop_kernels::coop_tile::Kernel as &dyn Kernel,
        &coop_kernels::coop_layouts::Kernel,
        &coop_kernels::coop_rows::Kernel,
    ] {
        sources.push((k.name(), k.cuda(&k.default_schedule()).unwrap()));
    }
    for (name, source) in &sources {
        for arch in ["sm_80", "sm_90"] {
            let cubin = nvrtc::compile_cubin(name, source, arch)
                .unwrap_or_else(|e| panic!("{name} for {arch}: {e}"));
            assert_eq!(&cubin[..4], b"\x7fELF", "{name} for {arch}");
        }
    }
}

/// Asynchronous copies are `cp.async` from sm_80, with the batch closed and waited for at
/// `async_wait(n)` (`commit_group`, `wait_group n`); before sm_80 a copy is a plain load
/// and store, and the wait the barrier alone. ptxas assembles both.
#[test]
fn asynchronous_copies_are_cp_async_from_sm_80() {
    let k = &staged_gemv::staged_gemv::Kernel;
    let source = k.cuda(&k.default_schedule()).unwrap();
    assert!(source.contains("fg_async_copy(&ring["), "{source}");
    assert!(source.contains("fg_async_wait<1>();"), "{source}");
    let ptx = |arch| nvrtc::compile_ptx(k.name(), &source, arch).unwrap();
    let new = ptx("compute_80");
    assert!(new.contains("cp.async.ca.shared.global"), "{new}");
    assert!(new.contains("cp.async.commit_group"), "{new}");
    assert!(new.contains("cp.async.wait_group 1"), "{new}");
    let old = ptx("compute_75");
    assert!(!old.contains("cp.async"), "{old}");
    for arch in ["sm_75", "sm_80", "sm_90"] {
        let cubin =
            nvrtc::compile_cubin(k.name(), &source, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(&cubin[..4], b"\x7fELF", "{arch}");
    }
}

/// `gemm_f16` stages its tiles as `HVec8`s: every copy is one 16-byte `cp.async.cg` (L2
/// only), none the 8-byte `cp.async.ca` that `HVec4`s made, at every schedule.
#[test]
fn gemm_f16_copies_16_bytes_at_a_time() {
    let k = &wgsl_forge::kernels::gemm_f16::gemm_f16::Kernel;
    for s in std::iter::once(k.default_schedule()).chain(k.tune_space().candidates()) {
        let source = k.cuda(&s).unwrap();
        assert!(source.contains("fg_vec<__half, 8>"), "{s}");
        let ptx = nvrtc::compile_ptx(k.name(), &source, "compute_90").unwrap();
        assert!(ptx.contains("cp.async.cg.shared.global"), "{s}");
        assert!(!ptx.contains("cp.async.ca.shared.global"), "{s}");
    }
}

/// A schedule whose workgroup memory is past CUDA's 48 KiB of static shared memory carves
/// its arrays from dynamic shared memory, whose size the source declares for the runtime
/// to opt in to and launch with; the others keep static arrays. Both assemble.
#[test]
fn workgroup_memory_past_48_kib_is_dynamic_shared_memory() {
    let k = &wgsl_forge::kernels::gemm_f16::gemm_f16::Kernel;
    let (mut dynamic, mut fixed) = (0, 0);
    for s in k.tune_space().candidates() {
        let source = k.cuda(&s).unwrap();
        let bytes = wgsl_forge::runtime::workgroup_bytes(k, &s).unwrap();
        let declared = source.contains("static constexpr unsigned fg_dynamic_shared_bytes = ");
        assert_eq!(declared, bytes > 48 * 1024, "{s}: {bytes} bytes");
        assert_eq!(
            declared,
            source.contains("extern __shared__ __align__(16) unsigned char fg_smem[];"),
            "{s}"
        );
        if declared {
            dynamic += 1;
            let cubin = nvrtc::compile_cubin(k.name(), &source, "sm_90")
                .unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(&cubin[..4], b"\x7fELF", "{s}");
        } else {
            fixed += 1;
        }
    }
    assert!(
        dynamic > 0 && fixed > 0,
        "{dynamic} dynamic, {fixed} static"
    );
}

/// The CUDA runtime where libcuda cannot be loaded (CI: NVRTC from the wheel, no driver) is
/// a `MissingLibrary` error that names libcuda and says how to make it found, never
/// cudarc's panic. Where a driver is, the runtime opens (`tests/cuda_runtime.rs`, run on
/// the H200, covers what it runs).
#[test]
fn the_cuda_runtime_without_a_driver_is_a_missing_library_error() {
    let built = ForgeRuntime::builder().cuda(0).build();
    if forge_core::device::cuda::driver_present() {
        match built {
            Ok(rt) => assert!(rt.is_cuda() && rt.profile().backend == "cuda"),
            Err(ForgeError::NoCudaDevice { index: 0, .. }) => {}
            Err(e) => panic!("a driver is present, but: {e}"),
        }
        return;
    }
    match built {
        Err(ForgeError::MissingLibrary { library, hint }) => {
            assert_eq!(library, "libcuda");
            assert!(hint.contains("LD_LIBRARY_PATH"), "{hint}");
        }
        other => panic!("expected MissingLibrary for libcuda, got {other:?}"),
    }
    // `Backend::Cuda` through the builder's emission takes the same path.
    let err = ForgeRuntime::builder()
        .emission(wgsl_forge::Backend::Cuda)
        .build()
        .expect_err("no driver");
    assert!(
        err.to_string().contains("libcuda cannot be loaded"),
        "{err}"
    );
}
