//! The kernel language end to end: kernels written from the design's contract run on the
//! real adapter (lavapipe in CI), and GPU == oracle == an independent reference written
//! directly in Rust, over random inputs and edge cases.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;

fn rt() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never skip.
    ForgeRuntime::new(1 << 30, None).expect("a GPU adapter (lavapipe in CI) is required")
}

fn close(a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ok = x == y || (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs()));
        assert!(ok, "element {i}: {x} vs {y}");
    }
}

// ---- integers: wrapping, WGSL division, shifts, casts, bit functions -------------------

#[forge_kernel(workgroup = 64, threads = n)]
pub fn int_ops(
    a: &[u32; n],
    b: &[u32; n],
    #[out] ou: &mut [u32; n * 8],
    #[out] oi: &mut [i32; n * 6],
    n: u32,
) {
    let i = global_index();
    if i >= n {
        return;
    }
    let x = a[i];
    let y = b[i];
    let base = i * 8;
    ou[base] = x * y + 7;
    ou[base + 1] = x / y;
    ou[base + 2] = x % y;
    ou[base + 3] = (x << y) ^ (x >> (y + 3));
    ou[base + 4] = x.count_ones() + x.leading_zeros() * 100 + x.trailing_zeros() * 10000;
    ou[base + 5] = x.reverse_bits() | (!y & 0xff);
    ou[base + 6] = x.wrapping_sub(y).max(y.min(12345)).clamp(10, 4000000000);
    ou[base + 7] = (x as f32 * 0.001) as u32;
    let sx = x as i32;
    let sy = y as i32 - 5;
    let o = i * 6;
    oi[o] = sx / sy;
    oi[o + 1] = sx % sy;
    oi[o + 2] = (-sx).abs() + sx.signum();
    oi[o + 3] = sx >> (y % 40);
    oi[o + 4] = (sx as f32 * 3.5) as i32;
    oi[o + 5] = sx.wrapping_mul(sy) - i32::MIN;
}

fn int_ops_reference(a: &[u32], b: &[u32]) -> (Vec<u32>, Vec<i32>) {
    // Written from WGSL's rules, not from the oracle's code.
    let mut ou = Vec::new();
    let mut oi = Vec::new();
    for (&x, &y) in a.iter().zip(b) {
        ou.push(((x as u64 * y as u64 + 7) % (1u64 << 32)) as u32);
        ou.push(if y == 0 { x } else { x / y });
        ou.push(if y == 0 { 0 } else { x % y });
        let sh = |v: u32, s: u32| ((v as u64) << (s % 32)) as u32;
        ou.push(sh(x, y) ^ (x >> ((y.wrapping_add(3)) % 32)));
        ou.push(x.count_ones() + x.leading_zeros() * 100 + x.trailing_zeros() * 10000);
        ou.push(x.reverse_bits() | (!y & 0xff));
        let d = ((x as i64 - y as i64).rem_euclid(1 << 32)) as u32;
        ou.push(d.max(y.min(12345)).max(10).min(4000000000));
        let f = (x as f64 as f32 * 0.001f32) as f64;
        ou.push(f.clamp(0.0, 4294967040.0) as u32);
        let sx = x as i32 as i64;
        let sy = (y as i32 as i64 - 5 + (1 << 31)).rem_euclid(1 << 32) - (1 << 31);
        let wrap = |v: i64| ((v + (1 << 31)).rem_euclid(1 << 32) - (1 << 31)) as i32;
        oi.push(if sy == 0 {
            sx as i32
        } else if sx == i32::MIN as i64 && sy == -1 {
            i32::MIN
        } else {
            wrap(sx / sy)
        });
        oi.push(if sy == 0 || (sx == i32::MIN as i64 && sy == -1) {
            0
        } else {
            wrap(sx % sy)
        });
        let neg = wrap(-sx) as i64;
        oi.push(wrap(neg.abs() + sx.signum()));
        oi.push(((sx as i32) >> (y % 40 % 32)) as i32);
        let g = (sx as i32 as f32 * 3.5f32) as f64;
        oi.push(g.clamp(-2147483648.0, 2147483520.0) as i32);
        oi.push(wrap(wrap(sx * sy) as i64 - i32::MIN as i64));
    }
    (ou, oi)
}

#[test]
fn integer_semantics_match_wgsl_on_gpu_oracle_and_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    // Edge values first, then random ones; 1000 elements is more than one workgroup.
    let edges = [
        0u32,
        1,
        2,
        5,
        31,
        32,
        33,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        4,
        6,
    ];
    let n = 1000;
    let mut a: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    let mut b: Vec<u32> = (0..n).map(|_| rng.gen_range(0..64)).collect();
    for (i, e) in edges.iter().enumerate() {
        for (j, f) in edges.iter().enumerate() {
            let k = i * edges.len() + j;
            a[k] = *e;
            b[k] = *f;
        }
    }
    let mut rt = rt();
    let (gu, gi) = rt.int_ops(&a, &b, n as u32).unwrap();
    let (cu, ci) = int_ops::cpu(&a, &b, n as u32).unwrap();
    let (ru, ri) = int_ops_reference(&a, &b);
    for k in 0..n * 8 {
        assert_eq!(
            cu[k],
            ru[k],
            "oracle vs reference, u32 output {k} (a={}, b={})",
            a[k / 8],
            b[k / 8]
        );
        assert_eq!(
            gu[k],
            cu[k],
            "gpu vs oracle, u32 output {k} (a={}, b={})",
            a[k / 8],
            b[k / 8]
        );
    }
    for k in 0..n * 6 {
        assert_eq!(
            ci[k],
            ri[k],
            "oracle vs reference, i32 output {k} (a={}, b={})",
            a[k / 6],
            b[k / 6]
        );
        assert_eq!(
            gi[k],
            ci[k],
            "gpu vs oracle, i32 output {k} (a={}, b={})",
            a[k / 6],
            b[k / 6]
        );
    }
}

// ---- floats: Rust meanings of method names, including rounding ties --------------------

#[forge_kernel(threads = n)]
pub fn float_ops(x: &[f32; n], #[out] y: &mut [f32; n * 10], n: u32) {
    let i = global_index();
    if i < n {
        let v = x[i];
        let o = i * 10;
        y[o] = v.round();
        y[o + 1] = v.round_ties_even();
        y[o + 2] = v.floor() + v.ceil() * 2.0 + v.trunc() * 4.0;
        y[o + 3] = v.fract();
        y[o + 4] = v.abs().sqrt() + v.mul_add(2.0, -1.0);
        y[o + 5] = (v * 0.1).exp() + (v.abs() + 1.0).ln();
        y[o + 6] = v.sin() * v.cos();
        y[o + 7] = v.powf(2.0) + (-2.0f32).powf(3.0) + v.abs().powf(0.5);
        y[o + 8] = v.max(0.25).min(3.0).clamp(-1.0, 2.0);
        y[o + 9] = f32::from_bits(v.to_bits() ^ 0x8000_0000) + v.signum();
    }
}

#[test]
fn float_methods_keep_their_rust_meaning() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let ties = [
        0.5f32,
        1.5,
        2.5,
        -0.5,
        -1.5,
        -2.5,
        0.49999997,
        -0.49999997,
        1e7 + 0.5,
        0.0,
        -0.0,
        3.0,
    ];
    let mut x: Vec<f32> = (0..777).map(|_| rng.gen_range(-20.0..20.0)).collect();
    x[..ties.len()].copy_from_slice(&ties);
    let mut rt = rt();
    let gpu = rt.float_ops(&x, x.len() as u32).unwrap();
    let cpu = float_ops::cpu(&x, x.len() as u32).unwrap();
    // The reference: Rust's own methods, in f64 where that is exact enough.
    for (i, v) in x.iter().enumerate() {
        let r = &cpu[i * 10..i * 10 + 10];
        assert_eq!(r[0], v.round(), "round({v})");
        assert_eq!(r[1], v.round_ties_even(), "round_ties_even({v})");
        assert_eq!(r[3], v - v.trunc());
        assert_eq!(r[8], v.max(0.25).min(3.0).clamp(-1.0, 2.0));
        let e7 = (*v as f64).powi(2) - 8.0 + (v.abs() as f64).sqrt();
        assert!(
            (r[7] as f64 - e7).abs() <= 1e-4 * (1.0 + e7.abs()),
            "powf({v}): {} vs {e7}",
            r[7]
        );
    }
    // Rounding is exact on the GPU too: ties go away from zero for `round`.
    for i in 0..ties.len() {
        assert_eq!(gpu[i * 10], cpu[i * 10], "gpu round({})", x[i]);
        assert_eq!(
            gpu[i * 10 + 1],
            cpu[i * 10 + 1],
            "gpu round_ties_even({})",
            x[i]
        );
        assert_eq!(
            gpu[i * 10 + 2],
            cpu[i * 10 + 2],
            "gpu floor/ceil/trunc({})",
            x[i]
        );
    }
    close(&gpu, &cpu, 1e-5);
}

/// Rust's `powf` special cases (C's `pow`): signed zeros, infinities, NaN, negative bases
/// with integral and non-integral exponents.
#[forge_kernel(threads = n)]
pub fn powf_edges(x: &[f32; n], e: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i].powf(e[i]);
    }
}

#[test]
fn powf_special_cases_match_rust_on_gpu_and_oracle() {
    let bases = [
        -0.0f32,
        0.0,
        -1.0,
        1.0,
        -2.0,
        2.0,
        0.5,
        -0.5,
        -3.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
    ];
    let exps = [
        3.0f32,
        -3.0,
        1.0,
        -1.0,
        2.0,
        -2.0,
        0.5,
        -0.5,
        2.5,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e30,
        -1e30,
        16777217.0,
    ];
    let (mut x, mut e) = (Vec::new(), Vec::new());
    for b in bases {
        for p in exps {
            x.push(b);
            e.push(p);
        }
    }
    let n = x.len() as u32;
    let gpu = rt().powf_edges(&x, &e, n).unwrap();
    let cpu = powf_edges::cpu(&x, &e, n).unwrap();
    for i in 0..x.len() {
        let want = x[i].powf(e[i]);
        for (side, got) in [("oracle", cpu[i]), ("gpu", gpu[i])] {
            let ok = if want.is_nan() {
                got.is_nan()
            } else if want == 0.0 || want.is_infinite() {
                // Exact, sign included: -0.0 and -inf are the point of this test.
                got.to_bits() == want.to_bits()
            } else {
                (got - want).abs() <= 1e-5 * want.abs()
            };
            assert!(
                ok,
                "{side}: ({}).powf({}) = {got:?}, Rust gives {want:?}",
                x[i], e[i]
            );
        }
    }
}

// ---- in place, loops, local arrays, `if` values ------------------------------------------

/// A `&mut` binding is read and written in place; loops of every kind.
#[forge_kernel(workgroup = 32, threads = n)]
pub fn loops(y: &mut [f32; n], w: &[f32; 4], n: u32, reps: u32) {
    let i = global_index();
    if i >= n {
        return;
    }
    let mut acc = [0.0f32; 4];
    for k in 0..4u32 {
        acc[k] = w[k] * y[i];
    }
    let mut s = 0.0;
    let mut k = 0u32;
    while k < 4 {
        s += acc[k];
        k += 1;
    }
    let mut r = 0u32;
    loop {
        r += 1;
        if r % 2 == 0 {
            continue;
        }
        if r > reps {
            break;
        }
        s = s * 0.5 + 1.0;
    }
    // `a..=MAX` terminates.
    let mut count = 0u32;
    for _m in (u32::MAX - 2)..=u32::MAX {
        count += 1;
    }
    let sign = if s >= 0.0 { 1.0 } else { -1.0 };
    y[i] = s * sign + count as f32;
}

fn loops_reference(y: &mut [f32], w: &[f32], reps: u32) {
    for v in y.iter_mut() {
        let mut s: f64 = w.iter().map(|wk| *wk as f64 * *v as f64).sum();
        let mut r = 0;
        loop {
            r += 1;
            if r % 2 == 0 {
                continue;
            }
            if r > reps {
                break;
            }
            s = s * 0.5 + 1.0;
        }
        *v = (s.abs() + 3.0) as f32;
    }
}

#[test]
fn in_place_binding_and_every_loop_form() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 1023;
    let y0: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let w = [0.5f32, -1.0, 2.0, 0.25];
    let mut rt = rt();
    let mut gpu = y0.clone();
    rt.loops(&mut gpu, &w, n as u32, 7).unwrap();
    let mut cpu = y0.clone();
    loops::cpu(&mut cpu, &w, n as u32, 7).unwrap();
    let mut reference = y0.clone();
    loops_reference(&mut reference, &w, 7);
    close(&cpu, &reference, 1e-5);
    close(&gpu, &cpu, 1e-5);
}

/// `if` values assigned to binding elements and local array elements, plainly and with
/// compound assignment, including `else if` chains and statements inside the branches.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn if_values(x: &[i32; n], #[out] y: &mut [i32; n], z: &mut [i32; n], n: u32) {
    let i = global_index();
    if i < n {
        let v = x[i];
        y[i] = if v > 10 {
            v * 2
        } else if v < -10 {
            let t = v + 1;
            t * 3
        } else {
            0
        };
        z[i] += if v % 2 == 0 { v } else { -1 };
        let mut parts = [0i32; 2];
        parts[i % 2] = if v >= 0 { 1 } else { 2 };
        let mut acc = parts[0] * 10 + parts[1];
        acc *= if v == 0 { 7 } else { 1 };
        z[i] ^= (if acc > 5 { acc } else { 100 });
    }
}

fn if_values_reference(x: &[i32], z: &mut [i32]) -> Vec<i32> {
    let mut y = vec![0; x.len()];
    for (i, &v) in x.iter().enumerate() {
        y[i] = if v > 10 {
            v * 2
        } else if v < -10 {
            (v + 1) * 3
        } else {
            0
        };
        z[i] = z[i].wrapping_add(if v % 2 == 0 { v } else { -1 });
        let mut parts = [0i32; 2];
        parts[i % 2] = if v >= 0 { 1 } else { 2 };
        let mut acc = parts[0] * 10 + parts[1];
        acc *= if v == 0 { 7 } else { 1 };
        z[i] ^= if acc > 5 { acc } else { 100 };
    }
    y
}

#[test]
fn if_values_assign_to_binding_and_array_elements() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let n = 1000;
    let mut x: Vec<i32> = (0..n).map(|_| rng.gen_range(-30..30)).collect();
    x[..5].copy_from_slice(&[0, 10, 11, -10, -11]);
    let z0: Vec<i32> = (0..n).map(|_| rng.gen_range(-1000..1000)).collect();
    let mut rt = rt();
    let mut z_gpu = z0.clone();
    let y_gpu = rt.if_values(&x, &mut z_gpu, n as u32).unwrap();
    let mut z_cpu = z0.clone();
    let y_cpu = if_values::cpu(&x, &mut z_cpu, n as u32).unwrap();
    let mut z_ref = z0.clone();
    let y_ref = if_values_reference(&x, &mut z_ref);
    assert_eq!(y_cpu, y_ref);
    assert_eq!(z_cpu, z_ref);
    assert_eq!(y_gpu, y_cpu);
    assert_eq!(z_gpu, z_cpu);
}

// ---- past 65535 workgroups --------------------------------------------------------------

#[forge_kernel(workgroup = 64, threads = n)]
pub fn index_map(#[out] y: &mut [u32; n], n: u32, salt: u32) {
    let i = global_index();
    if i < n {
        y[i] = (i * 2654435761) ^ salt;
    }
}

#[test]
fn dispatch_folds_past_65535_workgroups() {
    // 65535 * 64 + 100 invocations need 65537 workgroups: folded into y.
    let n = 65535 * 64 + 100;
    let mut rt = rt();
    let gpu = rt.index_map(n, 0xdead_beef).unwrap();
    let cpu = index_map::cpu(n, 0xdead_beef).unwrap();
    assert_eq!(gpu.len(), n as usize);
    for (i, g) in gpu.iter().enumerate() {
        let r = (i as u32).wrapping_mul(2654435761) ^ 0xdead_beef;
        assert_eq!(*g, r, "gpu element {i}");
    }
    assert_eq!(gpu, cpu);
}

// ---- workgroup memory and barriers inside loops -----------------------------------------

/// A tree reduction per workgroup: barriers inside a uniform `while`.
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [32, 64, 128]))]
pub fn block_sum(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(64)], n: u32) {
    #[shared]
    let mut tile = [0.0f32; 128];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    let mut stride = WG / 2;
    while stride > 0 {
        if lid < stride {
            tile[lid] += tile[lid + stride];
        }
        workgroup_barrier();
        stride /= 2;
    }
    if lid == 0 && workgroup_index() < n.div_ceil(64) {
        sums[workgroup_index()] = tile[0];
    }
}

#[test]
fn shared_memory_reduction_with_barriers_in_loops() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let n = 64 * 37 + 5;
    let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let mut rt = rt();
    let gpu = rt.block_sum(&x, n as u32).unwrap();
    let cpu = block_sum::cpu(&x, n as u32).unwrap();
    let reference: Vec<f32> = x
        .chunks(64)
        .map(|c| c.iter().map(|v| *v as f64).sum::<f64>() as f32)
        .collect();
    close(&cpu, &reference, 1e-5);
    close(&gpu, &cpu, 1e-5);
}

// ---- the oracle reports out-of-bounds indexing --------------------------------------------

#[forge_kernel(threads = n)]
pub fn off_by_one(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i + 1];
    }
}

#[test]
fn oracle_reports_out_of_bounds_with_every_detail() {
    let err = off_by_one::cpu(&[1.0, 2.0, 3.0], 3).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            ForgeError::OutOfBounds {
                index: 3,
                len: 3,
                invocation: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        msg.contains("off_by_one") && msg.contains("`x`") && msg.contains("invocation 2"),
        "{msg}"
    );
}

// ---- bad input is a named error ------------------------------------------------------------

#[test]
fn length_mismatch_names_argument_expression_and_lengths() {
    let mut rt = rt();
    let err = rt.int_ops(&[1, 2, 3], &[1, 2], 3).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`b`") && msg.contains("`n`") && msg.contains('3') && msg.contains('2'),
        "{msg}"
    );
    let err = int_ops::cpu(&[1, 2, 3], &[1, 2], 3).unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::LengthMismatch {
                arg: "b",
                expected: 3,
                actual: 2,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn zero_sized_work_is_an_error() {
    let mut rt = rt();
    assert!(matches!(
        rt.index_map(0, 1),
        Err(ForgeError::EmptyWork { .. })
    ));
    assert!(matches!(
        index_map::cpu(0, 1),
        Err(ForgeError::EmptyWork { .. })
    ));
}

// ---- Params matches naga's layout of the generated WGSL -------------------------------------

#[forge_kernel(threads = n)]
pub fn mixed_params(#[out] y: &mut [f32; n], a: f32, n: u32, k: i32, b: f32) {
    let i = global_index();
    if i < n {
        y[i] = a * i as f32 + (k as f32) * b;
    }
}

#[test]
fn params_layout_matches_naga() {
    let module = naga::front::wgsl::parse_str(mixed_params::WGSL).unwrap();
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (handle, ty) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some("Params"))
        .unwrap();
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("Params is not a struct")
    };
    assert_eq!(*span as usize, std::mem::size_of::<mixed_params::Params>());
    assert_eq!(
        layouter[handle].size as usize,
        std::mem::size_of::<mixed_params::Params>()
    );
    let offsets = [
        std::mem::offset_of!(mixed_params::Params, a),
        std::mem::offset_of!(mixed_params::Params, n),
        std::mem::offset_of!(mixed_params::Params, k),
        std::mem::offset_of!(mixed_params::Params, b),
    ];
    let names: Vec<_> = members.iter().map(|m| m.name.clone().unwrap()).collect();
    assert_eq!(names, ["a", "n", "k", "b"]);
    for (m, o) in members.iter().zip(offsets) {
        assert_eq!(m.offset as usize, o, "member {:?}", m.name);
    }
    // And the kernel runs with those parameters.
    let mut rt = rt();
    let y = rt.mixed_params(1.5, 5, -2, 0.25).unwrap();
    assert_eq!(y, mixed_params::cpu(1.5, 5, -2, 0.25).unwrap());
    assert_eq!(y[3], 1.5 * 3.0 - 0.5);
}

#[test]
fn generated_items_describe_the_kernel() {
    assert_eq!(int_ops::NAME, "int_ops");
    assert_eq!(int_ops::LAYOUT.len(), 4);
    assert_eq!(int_ops::LAYOUT[2].name, "ou");
    assert_eq!(int_ops::LAYOUT[2].len, "n * 8");
    assert_eq!(int_ops::LAYOUT[2].access, wgsl_forge::Access::Out);
    assert_eq!(int_ops::WGSL, int_ops::wgsl(&int_ops::DEFAULT_SCHEDULE));
    let s = Schedule {
        workgroup: 128,
        items: 1,
        vector: 1,
    };
    assert!(block_sum::wgsl(&s).contains("const WG: u32 = 128u;"));
}

// ---- atomics: workgroup and storage ----------------------------------------------------------

/// A histogram: per-workgroup counts in atomic workgroup memory, merged into an atomic binding.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn histogram(
    x: &[u32; n],
    bins: &mut [Atomic<u32>; 16],
    #[out] maxes: &mut [Atomic<i32>; 1],
    n: u32,
) {
    #[shared]
    let mut local = [0u32; 16];
    let i = global_index();
    if i < n {
        local[x[i] % 16].fetch_add(1);
        maxes[0].fetch_max(x[i] as i32 - 500);
    }
    workgroup_barrier();
    let lid = local_index();
    if lid < 16 {
        let c = local[lid].load();
        bins[lid].fetch_add(c);
    }
}

#[test]
fn atomics_in_workgroup_memory_and_bindings() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let n = 64 * 20 + 3;
    let x: Vec<u32> = (0..n).map(|_| rng.gen_range(0..1000)).collect();
    let mut reference = vec![5u32; 16];
    for v in &x {
        reference[(*v % 16) as usize] += 1;
    }
    let ref_max = x.iter().map(|v| *v as i32 - 500).max().unwrap();
    let mut rt = rt();
    let mut gpu = vec![5u32; 16];
    let gmax = rt.histogram(&x, &mut gpu, n as u32).unwrap();
    let mut cpu = vec![5u32; 16];
    let cmax = histogram::cpu(&x, &mut cpu, n as u32).unwrap();
    assert_eq!(cpu, reference);
    assert_eq!(gpu, reference);
    // Outputs start zeroed, so the max includes 0.
    assert_eq!(cmax, vec![ref_max.max(0)]);
    assert_eq!(gmax, cmax);
}

// ---- vectors ------------------------------------------------------------------------------

/// Vector bindings, constructors, swizzles, arithmetic with scalars, dot/length/normalize.
#[forge_kernel(threads = n)]
pub fn vectors(
    a: &[Vec4; n],
    b: &[UVec2; n],
    #[out] o: &mut [Vec4; n],
    #[out] s: &mut [f32; n * 3],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let v = a[i];
        let w = Vec4::new(v.y, v.x, 1.0, v.w * 2.0);
        let u = b[i];
        let k = UVec2::splat(3) * u + UVec2::new(1, 2);
        let mixed = (v + w) * 0.5 - Vec4::ONE;
        o[i] = select(mixed.wzyx(), mixed.abs().max(w), v.x > 0.0);
        s[i * 3] = v.dot(w) + v.xyz().length();
        s[i * 3 + 1] = (k.x + k.y) as f32 + v.normalize().z;
        let same = if v == w { 1.0 } else { 0.0 };
        s[i * 3 + 2] = same + (-v).x;
    }
}

#[test]
fn vectors_match_a_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let n = 300;
    let mut a: Vec<[f32; 4]> = (0..n)
        .map(|_| [0; 4].map(|_: i32| rng.gen_range(-2.0..2.0)))
        .collect();
    a[0] = [1.0, 1.0, 1.0, 1.0]; // v == w for this one
    let b: Vec<[u32; 2]> = (0..n)
        .map(|_| [rng.gen_range(0..100), rng.gen_range(0..100)])
        .collect();
    let mut rt = rt();
    let (go, gs) = rt.vectors(&a, &b, n as u32).unwrap();
    let (co, cs) = vectors::cpu(&a, &b, n as u32).unwrap();
    for i in 0..n {
        let v = a[i].map(|x| x as f64);
        let w = [v[1], v[0], 1.0, v[3] * 2.0];
        let mixed: Vec<f64> = (0..4).map(|c| (v[c] + w[c]) * 0.5 - 1.0).collect();
        let expect: Vec<f64> = if v[0] > 0.0 {
            (0..4).map(|c| mixed[c].abs().max(w[c])).collect()
        } else {
            vec![mixed[3], mixed[2], mixed[1], mixed[0]]
        };
        for c in 0..4 {
            assert!((co[i][c] as f64 - expect[c]).abs() < 1e-5, "o[{i}][{c}]");
        }
        let dot: f64 = (0..4).map(|c| v[c] * w[c]).sum::<f64>()
            + (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        assert!((cs[i * 3] as f64 - dot).abs() < 1e-4, "s[{}]", i * 3);
        let len = (0..4).map(|c| v[c] * v[c]).sum::<f64>().sqrt();
        let k = (3 * b[i][0] + 1 + 3 * b[i][1] + 2) as f64 + v[2] / len;
        assert!((cs[i * 3 + 1] as f64 - k).abs() < 1e-4);
        let same = if v == w { 1.0 } else { 0.0 };
        assert_eq!(cs[i * 3 + 2] as f64, same - v[0]);
    }
    for i in 0..n {
        close(&go[i], &co[i], 1e-5);
    }
    close(&gs, &cs, 1e-5);
}

// ---- helper functions shared by the kernels of a module -------------------------------------

#[forge_module]
mod shading {
    /// Hermite smoothing between two edges.
    #[forge_fn]
    fn smoothstep(e0: f32, e1: f32, x: f32) -> f32 {
        let t = ((x - e0) / (e1 - e0)).clamp(0.0, 1.0);
        t * t * (3.0 - 2.0 * t)
    }

    /// A helper calling an earlier helper, with a loop, a local array and early returns.
    #[forge_fn]
    fn poly(x: f32, mut k: u32) -> f32 {
        if k == 0 {
            return 1.0;
        }
        let mut c = [1.0f32, 0.5, 0.25, 0.125];
        let mut acc = 0.0;
        while k > 0 {
            acc = acc * x + c[k % 4];
            c[0] += 1.0;
            k -= 1;
        }
        smoothstep(-4.0, 4.0, acc) + c[0]
    }

    #[forge_kernel(threads = n)]
    pub fn ramp(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = smoothstep(0.0, 1.0, x[i]);
        }
    }

    #[forge_kernel(threads = n)]
    pub fn polys(x: &[f32; n], #[out] y: &mut [f32; n], n: u32, k: u32) {
        let i = global_index();
        if i < n {
            y[i] = poly(x[i], k) + smoothstep(0.0, 2.0, x[i]);
        }
    }
}

#[test]
fn helper_functions_are_shared_by_the_kernels_of_a_module() {
    use shading::{PolysExt, RampExt};
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let x: Vec<f32> = (0..500).map(|_| rng.gen_range(-2.0..3.0)).collect();
    let smooth = |e0: f64, e1: f64, v: f64| {
        let t = ((v - e0) / (e1 - e0)).clamp(0.0, 1.0);
        t * t * (3.0 - 2.0 * t)
    };
    let mut rt = rt();
    let g = rt.ramp(&x, 500).unwrap();
    let c = shading::ramp::cpu(&x, 500).unwrap();
    let r: Vec<f32> = x
        .iter()
        .map(|v| smooth(0.0, 1.0, *v as f64) as f32)
        .collect();
    close(&c, &r, 1e-6);
    close(&g, &c, 1e-5);
    for k in [0u32, 1, 5] {
        let g = rt.polys(&x, 500, k).unwrap();
        let c = shading::polys::cpu(&x, 500, k).unwrap();
        let r: Vec<f32> = x
            .iter()
            .map(|v| {
                let v = *v as f64;
                let p = if k == 0 {
                    1.0
                } else {
                    let mut coef = [1.0f64, 0.5, 0.25, 0.125];
                    let (mut acc, mut kk) = (0.0, k);
                    while kk > 0 {
                        acc = acc * v + coef[(kk % 4) as usize];
                        coef[0] += 1.0;
                        kk -= 1;
                    }
                    smooth(-4.0, 4.0, acc) + coef[0]
                };
                (p + smooth(0.0, 2.0, v)) as f32
            })
            .collect();
        close(&c, &r, 1e-5);
        close(&g, &c, 1e-5);
    }
}
