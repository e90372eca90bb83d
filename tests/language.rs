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
        ou.push(x.checked_div(y).unwrap_or(x));
        ou.push(if y == 0 { 0 } else { x % y });
        let sh = |v: u32, s: u32| ((v as u64) << (s % 32)) as u32;
        ou.push(sh(x, y) ^ (x >> ((y.wrapping_add(3)) % 32)));
        ou.push(x.count_ones() + x.leading_zeros() * 100 + x.trailing_zeros() * 10000);
        ou.push(x.reverse_bits() | (!y & 0xff));
        let d = ((x as i64 - y as i64).rem_euclid(1 << 32)) as u32;
        ou.push(d.max(y.min(12345)).clamp(10, 4000000000));
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
        oi.push((sx as i32) >> (y % 40 % 32));
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
        // Rust's max and min ignore a NaN where clamp would return it: spelled out on purpose.
        #[allow(clippy::manual_clamp)]
        let clamped = v.max(0.25).min(3.0).clamp(-1.0, 2.0);
        assert_eq!(r[8], clamped);
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

// ---- data races: the oracle names the invocations -------------------------------------------

/// Racy on purpose, in the way chosen by `mode`: 0 writes `y[i / 2]` (two invocations of
/// one workgroup), 1 writes `y[workgroup_index() % 2]` from each workgroup's first
/// invocation (different workgroups), 2 reads a neighbour's workgroup-memory element with
/// no barrier, 3 writes an element after a neighbour read it, 4 does what 2 does, with the
/// barrier.
#[forge_kernel(workgroup = 64, threads = n, case(n = 256, mode = 4), case(n = 256, mode = 1))]
pub fn racy(x: &[u32; n], #[out] y: &mut [u32; n], n: u32, mode: u32) {
    #[shared]
    let mut tile = [0u32; 64];
    let i = global_index();
    let lid = local_index();
    if mode == 0 {
        if i < n {
            y[i / 2] = x[i];
        }
    }
    if mode == 1 {
        if lid == 0 {
            y[workgroup_index() % 2] = x[i % n];
        }
    }
    if mode == 2 || mode == 4 {
        tile[lid] = x[i % n];
        if mode == 4 {
            workgroup_barrier();
        }
        if i < n {
            y[i] = tile[(lid + 63) % 64];
        }
    }
    if mode == 3 {
        let v = tile[(lid + 1) % 64];
        tile[lid] = x[i % n] + v;
        if i < n {
            y[i] = v;
        }
    }
}

fn race_of(mode: u32) -> (String, u64, u64, u64, &'static str) {
    let x: Vec<u32> = (0..256).collect();
    let opts = OracleOptions::default().with_race_detection(true);
    match racy::cpu_with_options(&racy::Kernel.default_schedule(), &opts, &x, 256, mode) {
        Err(e @ ForgeError::DataRace { .. }) => {
            let text = e.to_string();
            let ForgeError::DataRace {
                binding,
                index,
                first,
                second,
                ..
            } = e
            else {
                unreachable!()
            };
            (text, index, first, second, binding)
        }
        other => panic!("mode {mode}: expected a data race, got {other:?}"),
    }
}

#[test]
fn oracle_detects_data_races_naming_the_invocations() {
    // Two invocations of one workgroup write y[0].
    let (text, index, first, second, binding) = race_of(0);
    assert_eq!((binding, index, first, second), ("y", 0, 0, 1), "{text}");
    assert!(
        text.contains("wrote it too with no `storage_barrier()` between them"),
        "{text}"
    );
    // Workgroups 0 and 2 both write y[0]: no barrier orders different workgroups.
    let (text, index, first, second, binding) = race_of(1);
    assert_eq!((binding, index, first, second), ("y", 0, 0, 128), "{text}");
    assert!(
        text.contains("invocation 128 (workgroup 2, local 0)")
            && text.contains("different workgroups"),
        "{text}"
    );
    // Invocation 0 reads tile[63], which invocation 63 wrote in the same barrier interval:
    // the statement with the (untaken) barrier splits the oracle's run, so every write runs
    // before every read, and the read is still a race.
    let (text, index, first, second, binding) = race_of(2);
    assert_eq!(
        (binding, index, first, second),
        ("tile", 63, 63, 0),
        "{text}"
    );
    assert!(
        text.contains("invocation 63 (workgroup 0, local 63) wrote it, then invocation 0 (workgroup 0, local 0) read it with no `workgroup_barrier()` between them"),
        "{text}"
    );
    // Invocation 1 writes tile[1] after invocation 0 read it in the same interval.
    let (text, index, first, second, binding) = race_of(3);
    assert_eq!((binding, index, first, second), ("tile", 1, 0, 1), "{text}");
    assert!(text.contains("read it, then invocation 1"), "{text}");

    // With the barrier, the same exchange is race-free and matches a reference.
    let x: Vec<u32> = (0..256).map(|v| v * 3 + 1).collect();
    let opts = OracleOptions::default().with_race_detection(true);
    let sched = racy::Kernel.default_schedule();
    let y = racy::cpu_with_options(&sched, &opts, &x, 256, 4).unwrap();
    let want: Vec<u32> = (0..256).map(|i| x[i / 64 * 64 + (i + 63) % 64]).collect();
    assert_eq!(y, want);
    // Detection is opt-in for `cpu`: the racy run completes without it.
    racy::cpu(&x, 256, 2).unwrap();
}

#[test]
fn certification_fails_a_racy_kernel() {
    use wgsl_forge::certify::{certify_default, CertOptions, Verdict};
    let mut rt = rt();
    // The second case races across workgroups; the first is the race-free exchange.
    let report = certify_default(&mut rt, &racy::Kernel, &CertOptions::default()).unwrap();
    assert_eq!(report.verdict, Verdict::Fail);
    let all = report.failures.join("\n");
    assert!(all.contains("data race on `y[0]`"), "{all}");
    assert!(!all.contains("case 0"), "the race-free case passes:\n{all}");
    let blind = CertOptions {
        detect_races: false,
        ..CertOptions::default()
    };
    let report = certify_default(&mut rt, &racy::Kernel, &blind).unwrap();
    assert!(!report.failures.join("\n").contains("data race"));
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
    let s = Schedule::new(128, 1, 1);
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

// ---- subgroup operations ----------------------------------------------------------------

/// The GPU's subgroup size, as the kernels below observe it, and the size lavapipe reports.
fn gpu_subgroup_size(rt: &ForgeRuntime, observed: &[u32]) -> u32 {
    let size = observed[1];
    let info = rt.adapter_info();
    assert!(
        (info.subgroup_min_size..=info.subgroup_max_size).contains(&size),
        "subgroup_size() = {size}, outside the adapter's {}..={}",
        info.subgroup_min_size,
        info.subgroup_max_size
    );
    size
}

/// Every subgroup operation on `f32` values and `Vec2`s, one result per invocation. The
/// workgroup of 60 leaves a partial last subgroup for sizes 8, 16 and 32. Shuffles whose
/// source lane lies outside the subgroup are indeterminate in WGSL: they are masked.
#[forge_kernel(workgroup = 60, threads = n)]
pub fn sg_each_f32(
    x: &[f32; n],
    #[out] y: &mut [f32; n * 13],
    #[out] ids: &mut [u32; n * 4],
    n: u32,
) {
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    let lane = subgroup_invocation_id();
    let size = subgroup_size();
    // The lanes of this subgroup: fewer than `size` in a partial last subgroup.
    let active = size.min(WG - subgroup_id() * size);
    let add = subgroup_add(v);
    let mx = subgroup_max(v);
    let mn = subgroup_min(v);
    let ex = subgroup_exclusive_add(v);
    let inc = subgroup_inclusive_add(v);
    let bc = subgroup_broadcast(v, 1);
    let first = subgroup_broadcast_first(v * 2.0);
    let sh = subgroup_shuffle(v, (lane * 3 + 1) % active);
    let sx = subgroup_shuffle_xor(v, 1);
    let down = subgroup_shuffle_down(v, 1);
    let up = subgroup_shuffle_up(v, 2);
    let pair = subgroup_add(Vec2::new(v, subgroup_max(-v)));
    if i < n {
        let o = i * 13;
        y[o] = add;
        y[o + 1] = mx;
        y[o + 2] = mn;
        y[o + 3] = ex;
        y[o + 4] = inc;
        y[o + 5] = bc;
        y[o + 6] = first;
        y[o + 7] = sh;
        y[o + 8] = sx;
        y[o + 9] = select(0.0, down, lane + 1 < active);
        y[o + 10] = select(0.0, up, lane >= 2);
        y[o + 11] = pair.x;
        y[o + 12] = pair.y;
        ids[i * 4] = lane;
        ids[i * 4 + 1] = size;
        ids[i * 4 + 2] = subgroup_id();
        ids[i * 4 + 3] = num_subgroups();
    }
}

/// The integer subgroup operations: wrapping sums and products, bitwise reductions, votes
/// and ballots, on `i32`, `u32` and `IVec2`.
#[forge_kernel(workgroup = 60, threads = n)]
pub fn sg_each_int(
    a: &[i32; n],
    b: &[u32; n],
    #[out] yi: &mut [i32; n * 7],
    #[out] yu: &mut [u32; n * 11],
    n: u32,
) {
    let i = global_index();
    let mut s = 0i32;
    let mut u = 0u32;
    if i < n {
        s = a[i];
        u = b[i];
    }
    let vec = subgroup_add(IVec2::new(s, -s * 3));
    let all = subgroup_all(u < 990);
    let any = subgroup_any(u < 10);
    let ballot = subgroup_ballot(u % 3 == 0);
    let (add, min, max) = (subgroup_add(s), subgroup_min(s), subgroup_max(s));
    let ex_mul = subgroup_exclusive_mul(s | 1);
    let in_mul = subgroup_inclusive_mul(s);
    if i < n {
        let o = i * 7;
        yi[o] = add;
        yi[o + 1] = min;
        yi[o + 2] = max;
        yi[o + 3] = ex_mul;
        yi[o + 4] = in_mul;
        yi[o + 5] = vec.x;
        yi[o + 6] = vec.y;
    }
    // Operations in a branch that every invocation takes alike are allowed.
    if n > 0 {
        let o = i * 11;
        let sums = UVec2::new(subgroup_add(u), subgroup_exclusive_add(u));
        let bits = UVec4::new(subgroup_and(u | 1), subgroup_or(u), subgroup_xor(u), 0);
        let lo = subgroup_min(u);
        let hi = subgroup_max(u);
        if i < n {
            yu[o] = sums.x;
            yu[o + 1] = lo;
            yu[o + 2] = hi;
            yu[o + 3] = bits.x;
            yu[o + 4] = bits.y;
            yu[o + 5] = bits.z;
            yu[o + 6] = sums.y;
            yu[o + 7] = select(0, 1, all);
            yu[o + 8] = select(0, 1, any);
            yu[o + 9] = ballot.x;
            yu[o + 10] = ballot.y;
        }
    }
}

/// The subgroups of one workgroup of `wg` invocations with `size` lanes: ranges of local
/// indices, the last one partial.
fn subgroup_ranges(wg: usize, size: usize) -> Vec<std::ops::Range<usize>> {
    (0..wg)
        .step_by(size)
        .map(|s| s..(s + size).min(wg))
        .collect()
}

/// `sg_each_f32` written from WGSL's definitions, in f64, for subgroups of `size` lanes.
fn sg_each_f32_reference(x: &[f32], size: usize) -> (Vec<f64>, Vec<u32>) {
    let (n, wg) = (x.len(), 60);
    let padded: Vec<f64> = (0..n.div_ceil(wg) * wg)
        .map(|i| x.get(i).map_or(0.0, |v| *v as f64))
        .collect();
    let mut y = vec![0.0; n * 13];
    let mut ids = vec![0u32; n * 4];
    for w in 0..n.div_ceil(wg) {
        for (k, sg) in subgroup_ranges(wg, size).into_iter().enumerate() {
            let vals: Vec<f64> = sg.clone().map(|l| padded[w * wg + l]).collect();
            let active = vals.len();
            for (lane, l) in sg.clone().enumerate() {
                let i = w * wg + l;
                if i >= n {
                    continue;
                }
                let v = vals[lane];
                let r = &mut y[i * 13..i * 13 + 13];
                r[0] = vals.iter().sum();
                r[1] = vals.iter().cloned().fold(f64::MIN, f64::max);
                r[2] = vals.iter().cloned().fold(f64::MAX, f64::min);
                r[3] = vals[..lane].iter().sum();
                r[4] = vals[..=lane].iter().sum();
                r[5] = vals[1];
                r[6] = vals[0] * 2.0;
                r[7] = vals[(lane * 3 + 1) % active];
                r[8] = vals[lane ^ 1];
                r[9] = if lane + 1 < active {
                    vals[lane + 1]
                } else {
                    0.0
                };
                r[10] = if lane >= 2 { vals[lane - 2] } else { 0.0 };
                r[11] = r[0];
                r[12] = -vals.iter().cloned().fold(f64::MAX, f64::min) * active as f64;
                let _ = v;
                ids[i * 4..i * 4 + 4].copy_from_slice(&[
                    lane as u32,
                    size as u32,
                    k as u32,
                    wg.div_ceil(size) as u32,
                ]);
            }
        }
    }
    (y, ids)
}

/// `sg_each_int` from WGSL's definitions, for subgroups of `size` lanes.
fn sg_each_int_reference(a: &[i32], b: &[u32], size: usize) -> (Vec<i32>, Vec<u32>) {
    let (n, wg) = (a.len(), 60);
    let mut yi = vec![0i32; n * 7];
    let mut yu = vec![0u32; n * 11];
    for w in 0..n.div_ceil(wg) {
        for sg in subgroup_ranges(wg, size) {
            let s: Vec<i32> = sg
                .clone()
                .map(|l| *a.get(w * wg + l).unwrap_or(&0))
                .collect();
            let u: Vec<u32> = sg
                .clone()
                .map(|l| *b.get(w * wg + l).unwrap_or(&0))
                .collect();
            let wrap_sum = |v: &[i64]| v.iter().sum::<i64>().rem_euclid(1 << 32);
            let to_i32 = |v: i64| v.rem_euclid(1 << 32) as u32 as i32;
            let product = |v: &[i32]| {
                v.iter()
                    .fold(1i64, |p, x| (p * *x as i64).rem_euclid(1 << 32))
            };
            let mut ballot = [0u32; 2];
            for (lane, v) in u.iter().enumerate() {
                if v % 3 == 0 {
                    ballot[lane / 32] |= 1 << (lane % 32);
                }
            }
            for (lane, l) in sg.clone().enumerate() {
                let i = w * wg + l;
                if i >= n {
                    continue;
                }
                let s64: Vec<i64> = s.iter().map(|v| *v as i64).collect();
                let odd: Vec<i32> = s[..lane].iter().map(|v| v | 1).collect();
                let r = &mut yi[i * 7..i * 7 + 7];
                r[0] = to_i32(wrap_sum(&s64));
                r[1] = *s.iter().min().unwrap();
                r[2] = *s.iter().max().unwrap();
                r[3] = to_i32(product(&odd));
                r[4] = to_i32(product(&s[..=lane]));
                r[5] = r[0];
                r[6] = to_i32(-3 * wrap_sum(&s64));
                let u64s: Vec<i64> = u.iter().map(|v| *v as i64).collect();
                let r = &mut yu[i * 11..i * 11 + 11];
                r[0] = wrap_sum(&u64s) as u32;
                r[1] = *u.iter().min().unwrap();
                r[2] = *u.iter().max().unwrap();
                r[3] = u.iter().fold(!0, |x, v| x & (v | 1));
                r[4] = u.iter().fold(0, |x, v| x | v);
                r[5] = u.iter().fold(0, |x, v| x ^ v);
                r[6] = wrap_sum(&u64s[..lane]) as u32;
                r[7] = u.iter().all(|v| *v < 990) as u32;
                r[8] = u.iter().any(|v| *v < 10) as u32;
                r[9] = ballot[0];
                r[10] = ballot[1];
            }
        }
    }
    (yi, yu)
}

fn close_f64(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (*g as f64, *w);
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}: element {k} (invocation {}, result {}): {g} vs {w}",
            k / 13,
            k % 13
        );
    }
}

fn sg_inputs(n: usize, seed: u64) -> (Vec<f32>, Vec<i32>, Vec<u32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = (0..n).map(|_| rng.gen_range(-4.0..4.0)).collect();
    let a = (0..n).map(|_| rng.gen_range(-100_000..100_000)).collect();
    let b = (0..n).map(|_| rng.gen_range(0..1000)).collect();
    (x, a, b)
}

#[test]
fn every_subgroup_operation_matches_gpu_oracle_and_reference() {
    use wgsl_forge::oracle::subgroup::with_subgroup_size;
    // Three workgroups and a partial fourth; the last workgroup's lanes past n take part with 0.
    let n = 60 * 3 + 37;
    let (x, a, b) = sg_inputs(n, 8);
    let mut rt = rt();
    let (gy, gids) = rt.sg_each_f32(&x, n as u32).unwrap();
    let size = gpu_subgroup_size(&rt, &gids);
    for (i, id) in gids.chunks(4).enumerate() {
        // The mapping the oracle assumes: local index = subgroup_id * size + lane.
        let lid = (i % 60) as u32;
        assert_eq!(
            id,
            [lid % size, size, lid / size, 60u32.div_ceil(size)],
            "invocation {i}"
        );
    }
    // The oracle with the GPU's subgroup size computes what the GPU does.
    let (cy, cids) = with_subgroup_size(size, || sg_each_f32::cpu(&x, n as u32))
        .unwrap()
        .unwrap();
    assert_eq!(cids, gids);
    let (ry, rids) = sg_each_f32_reference(&x, size as usize);
    assert_eq!(cids, rids);
    close_f64(&cy, &ry, 1e-5, "oracle vs reference");
    let gy64: Vec<f64> = gy.iter().map(|v| *v as f64).collect();
    close_f64(&cy, &gy64, 1e-5, "oracle vs gpu");

    let (gi, gu) = rt.sg_each_int(&a, &b, n as u32).unwrap();
    let (ci, cu) = with_subgroup_size(size, || sg_each_int::cpu(&a, &b, n as u32))
        .unwrap()
        .unwrap();
    let (ri, ru) = sg_each_int_reference(&a, &b, size as usize);
    assert_eq!(ci, ri, "i32: oracle vs reference");
    assert_eq!(cu, ru, "u32: oracle vs reference");
    assert_eq!(gi, ci, "i32: gpu vs oracle");
    assert_eq!(gu, cu, "u32: gpu vs oracle");
}

#[test]
fn the_oracle_follows_the_definitions_at_every_subgroup_size() {
    use wgsl_forge::oracle::subgroup::{with_subgroup_size, ORACLE_SUBGROUP_SIZE};
    let n = 60 * 2 + 11;
    let (x, a, b) = sg_inputs(n, 9);
    // 4 divides the workgroup; 8, 16 and 32 leave a partial subgroup; 64 is one partial one.
    for size in [4u32, 8, 16, 32, 64] {
        let (cy, cids) = with_subgroup_size(size, || sg_each_f32::cpu(&x, n as u32))
            .unwrap()
            .unwrap();
        let (ry, rids) = sg_each_f32_reference(&x, size as usize);
        assert_eq!(cids, rids, "size {size}");
        close_f64(&cy, &ry, 1e-5, &format!("f32 at size {size}"));
        let (ci, cu) = with_subgroup_size(size, || sg_each_int::cpu(&a, &b, n as u32))
            .unwrap()
            .unwrap();
        let (ri, ru) = sg_each_int_reference(&a, &b, size as usize);
        assert_eq!(ci, ri, "i32 at size {size}");
        assert_eq!(cu, ru, "u32 at size {size}");
    }
    // Without `with_subgroup_size`, the documented default.
    let (_, ids) = sg_each_f32::cpu(&x, n as u32).unwrap();
    assert_eq!(ids[1], ORACLE_SUBGROUP_SIZE);
}

/// A workgroup sum written for any subgroup size: each subgroup adds its values, the
/// subgroup sums go to workgroup memory, and the subgroups add those again until one is
/// left. 80 invocations leave a partial subgroup of 16 lanes when subgroups have 32.
#[forge_kernel(workgroup = 80, threads = n, reference = sg_block_sum_reference)]
pub fn sg_block_sum(x: &[f32; n], #[out] sums: &mut [f32; n.div_ceil(80)], n: u32) {
    #[shared]
    let mut partial = [0.0f32; WG];
    let lid = local_index();
    let i = global_index();
    let mut v = 0.0f32;
    if i < n {
        v = x[i];
    }
    let mut s = subgroup_add(v);
    let mut count = num_subgroups();
    if subgroup_invocation_id() == 0 {
        partial[subgroup_id()] = s;
    }
    workgroup_barrier();
    while count > 1 {
        let mut p = 0.0f32;
        if lid < count {
            p = partial[lid];
        }
        workgroup_barrier();
        s = subgroup_add(p);
        if subgroup_invocation_id() == 0 {
            partial[subgroup_id()] = s;
        }
        count = count.div_ceil(subgroup_size());
        workgroup_barrier();
    }
    if lid == 0 {
        sums[workgroup_index()] = partial[0];
    }
}

fn sg_block_sum_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    Ok(x.chunks(80)
        .map(|c| c.iter().map(|v| *v as f64).sum::<f64>() as f32)
        .collect())
}

/// An inclusive prefix sum over each workgroup, for any subgroup size: scans inside
/// subgroups, plus the totals of the subgroups before.
#[forge_kernel(workgroup = 80, threads = n)]
pub fn sg_workgroup_scan(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    #[shared]
    let mut totals = [0u32; WG];
    let i = global_index();
    let mut v = 0u32;
    if i < n {
        v = x[i];
    }
    let inclusive = subgroup_inclusive_add(v);
    let total = subgroup_add(v);
    if subgroup_invocation_id() == 0 {
        totals[subgroup_id()] = total;
    }
    workgroup_barrier();
    let mut before = 0u32;
    for k in 0..subgroup_id() {
        before += totals[k];
    }
    if i < n {
        y[i] = before + inclusive;
    }
}

#[test]
fn size_agnostic_subgroup_kernels_certify_on_a_gpu_of_another_subgroup_size() {
    use wgsl_forge::certify::{certify_default, CertOptions};
    use wgsl_forge::oracle::subgroup::with_subgroup_size;
    let mut rt = rt();
    // lavapipe's subgroups have 8 lanes, the oracle's 32: certification compares the two.
    let report = certify_default(&mut rt, &sg_block_sum::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    assert!(report.cases >= 3, "{report:?}");

    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let n = 80 * 9 + 51;
    let x: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let gpu = rt.sg_block_sum(&x, n as u32).unwrap();
    let reference = sg_block_sum_reference(&x, n as u32).unwrap();
    close(&gpu, &reference, 1e-5);
    // (Subgroups of one lane would never shrink `count`: GPUs have 4 and more.)
    for size in [2u32, 4, 8, 16, 32, 64, 128] {
        let cpu = with_subgroup_size(size, || sg_block_sum::cpu(&x, n as u32))
            .unwrap()
            .unwrap();
        close(&cpu, &reference, 1e-5);
    }

    let u: Vec<u32> = (0..n).map(|_| rng.gen_range(0..1 << 20)).collect();
    let gpu = rt.sg_workgroup_scan(&u, n as u32).unwrap();
    let mut reference = vec![0u32; n];
    for (c, r) in u.chunks(80).zip(reference.chunks_mut(80)) {
        let mut acc = 0;
        for (v, o) in c.iter().zip(r) {
            acc += v;
            *o = acc;
        }
    }
    assert_eq!(gpu, reference);
    for size in [1u32, 8, 32, 128] {
        let cpu = with_subgroup_size(size, || sg_workgroup_scan::cpu(&u, n as u32))
            .unwrap()
            .unwrap();
        assert_eq!(cpu, reference, "oracle at subgroup size {size}");
    }
}

#[test]
fn a_device_without_subgroups_refuses_subgroup_kernels_by_name() {
    let mut rt = ForgeRuntime::builder()
        .capacity(64 << 20)
        .without_feature(Feature::Subgroups)
        .build()
        .unwrap();
    assert!(!rt.supports(Feature::Subgroups));
    let err = rt.sg_block_sum(&[1.0; 100], 100).unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::MissingFeature {
                feature: "SUBGROUP",
                kernel: "sg_block_sum",
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("SUBGROUP") && msg.contains("subgroup operations"),
        "{msg}"
    );
    // Kernels without subgroup operations still run there.
    assert_eq!(rt.index_map(3, 0).unwrap(), index_map::cpu(3, 0).unwrap());
}

// ---- f16 ------------------------------------------------------------------------------

/// The f16 nearest to `v`, ties to even: the nearest of the candidates around `half`'s
/// conversion (whose f64 paths can round twice, or the wrong way).
fn h(v: f64) -> f16 {
    let guess = f16::from_f64(v);
    if !guess.is_finite() || v == 0.0 {
        return guess;
    }
    let bits = guess.to_bits();
    let candidates = [bits.wrapping_sub(1), bits, bits.wrapping_add(1)]
        .map(f16::from_bits)
        .into_iter()
        .filter(|c| c.is_finite() && (c.to_f64() - v).abs() <= (guess.to_f64() - v).abs());
    candidates
        .min_by(|a, b| {
            let (da, db) = ((a.to_f64() - v).abs(), (b.to_f64() - v).abs());
            da.total_cmp(&db)
                .then((a.to_bits() & 1).cmp(&(b.to_bits() & 1)))
        })
        .unwrap_or(guess)
}

/// f16 arithmetic, one rounding per operation, with literals, typed lets and casts.
#[forge_kernel(threads = n)]
pub fn half_ops(
    a: &[f16; n],
    b: &[f16; n],
    #[out] o: &mut [f16; n * 8],
    #[out] k: &mut [i32; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let x = a[i];
        let y = b[i];
        let quarter: f16 = 0.25;
        let r = i * 8;
        o[r] = x + y;
        o[r + 1] = x - y;
        o[r + 2] = x * y;
        o[r + 3] = x / y;
        o[r + 4] = x.abs().sqrt();
        o[r + 5] = x.max(y).min(2.0) + quarter;
        o[r + 6] = (x as f32 * 3.0) as f16 - 1.5f16;
        o[r + 7] = (-x).clamp(-0.5, 0.5).floor() + (i % 3) as f16;
        k[i] = (x * 100.0) as i32 + (y > x) as i32;
    }
}

fn half_ops_reference(a: &[f16], b: &[f16]) -> (Vec<f16>, Vec<i32>) {
    let mut o = Vec::new();
    let mut k = Vec::new();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (x, y) = (x.to_f64(), y.to_f64());
        o.push(h(x + y));
        o.push(h(x - y));
        o.push(h(x * y));
        o.push(h(x / y));
        o.push(h(x.abs().sqrt()));
        o.push(h(x.max(y).min(2.0) + 0.25));
        o.push(h(h((x as f32 * 3.0) as f64).to_f64() - 1.5));
        o.push(h((-x).clamp(-0.5, 0.5).floor() + (i % 3) as f64));
        // WGSL clamps to the f16 values that fit in i32: an infinity gives 65504.
        let scaled = h(x * 100.0).to_f64().clamp(-65504.0, 65504.0);
        k.push((scaled as i32) + (y > x) as i32);
    }
    (o, k)
}

#[test]
fn f16_arithmetic_rounds_once_per_operation() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // Ties to even: 1 + 2^-11 stays 1, (1 + 2^-10) + 2^-11 goes up to 1 + 2^-9; the largest
    // finite f16; a subnormal.
    let mut a = vec![
        h(1.0),
        h(1.0 + 2f64.powi(-10)),
        h(65504.0),
        h(2f64.powi(-20)),
        h(-3.0),
    ];
    let mut b = vec![h(2f64.powi(-11)), h(2f64.powi(-11)), h(0.5), h(1.0), h(0.1)];
    while a.len() < 700 {
        a.push(h(rng.gen_range(-60.0..60.0)));
        b.push(h(
            rng.gen_range(0.05..8.0) * if rng.gen() { 1.0 } else { -1.0 }
        ));
    }
    let n = a.len() as u32;
    let (co, ck) = half_ops::cpu(&a, &b, n).unwrap();
    let (ro, rk) = half_ops_reference(&a, &b);
    assert_eq!(co[0], h(1.0));
    assert_eq!(co[8], h(1.0 + 2f64.powi(-9)));
    for (j, (c, r)) in co.iter().zip(&ro).enumerate() {
        assert_eq!(
            c.to_bits(),
            r.to_bits(),
            "oracle vs reference, result {} of {j}: {c} vs {r}",
            j % 8
        );
    }
    assert_eq!(ck, rk);
    // The GPU: `+ - *` and the exact functions round as the oracle; division and sqrt may
    // be a few units in the last place off (WGSL allows 2.5 ulp).
    let mut rt = rt();
    let (go, gk) = rt.half_ops(&a, &b, n).unwrap();
    for (j, (g, c)) in go.iter().zip(&co).enumerate() {
        let (g, c) = (g.to_f64(), c.to_f64());
        let exact = matches!(j % 8, 0 | 1 | 2 | 5 | 7);
        let ok = g == c
            || if exact {
                (g - c).abs() < 2f64.powi(-24) // a subnormal flushed to zero
            } else {
                (g - c).abs() <= 4.0 * 2f64.powi(-10) * c.abs().max(2f64.powi(-14))
            };
        assert!(
            ok,
            "gpu vs oracle, result {} of element {}: {g} vs {c}",
            j % 8,
            j / 8
        );
    }
    assert_eq!(gk, ck);
}

/// z = α·x + y in f16, and two dot products of rows of 8: one accumulated in f16, one in f32
/// from the same f16 products.
#[forge_kernel(threads = n, reference = half_axpy_dot_reference, tolerance(abs = 1e-2, rel = 1e-2))]
pub fn half_axpy_dot(
    x: &[f16; n * 8],
    y: &[f16; n * 8],
    #[out] z: &mut [f16; n * 8],
    #[out] dots: &mut [f16; n],
    #[out] dots32: &mut [f32; n],
    n: u32,
    alpha: f32,
) {
    let i = global_index();
    if i < n {
        let a = alpha as f16;
        let mut acc: f16 = 0.0;
        let mut wide = 0.0f32;
        for j in i * 8..i * 8 + 8 {
            z[j] = a * x[j] + y[j];
            let p = x[j] * y[j];
            acc += p;
            wide += x[j] as f32 * y[j] as f32;
        }
        dots[i] = acc;
        dots32[i] = wide;
    }
}

#[allow(clippy::type_complexity)]
fn half_axpy_dot_reference(
    x: &[f16],
    y: &[f16],
    n: u32,
    alpha: f32,
) -> Result<(Vec<f16>, Vec<f16>, Vec<f32>), ForgeError> {
    let a = h(alpha as f64).to_f64();
    let z = x
        .iter()
        .zip(y)
        .map(|(x, y)| h(a * x.to_f64() + y.to_f64()))
        .collect();
    let rows = |r: usize| (0..8).map(move |j| x[r * 8 + j].to_f64() * y[r * 8 + j].to_f64());
    let dots = (0..n as usize).map(|r| h(rows(r).sum())).collect();
    let dots32 = (0..n as usize)
        .map(|r| rows(r).sum::<f64>() as f32)
        .collect();
    Ok((z, dots, dots32))
}

/// Half-precision vectors: `HVec4` and `HVec2` bindings, swizzles, arithmetic, `dot`.
#[forge_kernel(threads = n)]
pub fn half_vectors(v: &[HVec4; n], #[out] o: &mut [HVec2; n], #[out] s: &mut [f16; n], n: u32) {
    let i = global_index();
    if i < n {
        let w = v[i];
        let p = w.xy() * w.zw() + HVec2::splat(0.5);
        o[i] = p.abs().max(HVec2::new(w.x, 0.125));
        s[i] = w.dot(w) - HVec4::ONE.dot(w);
    }
}

#[test]
fn f16_kernels_certify_against_f64_references() {
    use wgsl_forge::certify::{certify_default, CertOptions};
    let mut rt = rt();
    assert!(rt.supports(Feature::F16), "lavapipe has SHADER_F16");
    assert_eq!(half_axpy_dot::Kernel.features(), [Feature::F16]);
    let report = certify_default(&mut rt, &half_axpy_dot::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    assert!(report.cases >= 3, "{report:?}");
    let report = certify_default(&mut rt, &half_vectors::Kernel, &CertOptions::default()).unwrap();
    assert!(report.passed(), "{:?}", report.failures);

    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let n = 333;
    let x: Vec<f16> = (0..n * 8).map(|_| h(rng.gen_range(-1.0..1.0))).collect();
    let y: Vec<f16> = (0..n * 8).map(|_| h(rng.gen_range(-1.0..1.0))).collect();
    let (gz, gd, gw) = rt.half_axpy_dot(&x, &y, n as u32, 0.75).unwrap();
    let (cz, cd, cw) = half_axpy_dot::cpu(&x, &y, n as u32, 0.75).unwrap();
    let (rz, rd, rw) = half_axpy_dot_reference(&x, &y, n as u32, 0.75).unwrap();
    let near = |a: f64, b: f64, ulps: f64| {
        (a - b).abs() <= ulps * 2f64.powi(-11) * a.abs().max(b.abs()).max(1.0)
    };
    for i in 0..n * 8 {
        // One multiply and one add in f16: within two roundings of the exact value.
        assert!(
            near(cz[i].to_f64(), rz[i].to_f64(), 2.0),
            "z[{i}]: {} vs {}",
            cz[i],
            rz[i]
        );
        assert!(
            near(gz[i].to_f64(), cz[i].to_f64(), 2.0),
            "gpu z[{i}]: {} vs {}",
            gz[i],
            cz[i]
        );
    }
    for i in 0..n {
        // Eight products and eight sums rounded to f16.
        assert!(
            near(cd[i].to_f64(), rd[i].to_f64(), 16.0),
            "dot[{i}]: {} vs {}",
            cd[i],
            rd[i]
        );
        assert!(
            near(gd[i].to_f64(), cd[i].to_f64(), 8.0),
            "gpu dot[{i}]: {} vs {}",
            gd[i],
            cd[i]
        );
        // f16 products are exact in f32: only the f32 sums round.
        assert!((cw[i] - rw[i]).abs() <= 1e-6, "dot32[{i}]");
        assert!((gw[i] - cw[i]).abs() <= 1e-6, "gpu dot32[{i}]");
    }

    let v: Vec<[f16; 4]> = (0..n)
        .map(|_| [0; 4].map(|_: i32| h(rng.gen_range(-2.0..2.0))))
        .collect();
    let (go, gs) = rt.half_vectors(&v, n as u32).unwrap();
    let (co, cs) = half_vectors::cpu(&v, n as u32).unwrap();
    for i in 0..n {
        let w = v[i].map(|c| c.to_f64());
        let p = [
            h(h(w[0] * w[2]).to_f64() + 0.5),
            h(h(w[1] * w[3]).to_f64() + 0.5),
        ];
        let o = [
            p[0].to_f64().abs().max(w[0]),
            p[1].to_f64().abs().max(0.125),
        ];
        for c in 0..2 {
            assert!(
                near(co[i][c].to_f64(), o[c], 2.0),
                "o[{i}][{c}]: {} vs {}",
                co[i][c],
                o[c]
            );
            assert!(
                near(go[i][c].to_f64(), co[i][c].to_f64(), 2.0),
                "gpu o[{i}][{c}]"
            );
        }
        let s = w.iter().map(|c| c * c).sum::<f64>() - w.iter().sum::<f64>();
        assert!(near(cs[i].to_f64(), s, 16.0), "s[{i}]: {} vs {s}", cs[i]);
        assert!(near(gs[i].to_f64(), cs[i].to_f64(), 16.0), "gpu s[{i}]");
    }
}

#[test]
fn a_device_without_f16_refuses_f16_kernels_by_name() {
    let mut rt = ForgeRuntime::builder()
        .capacity(64 << 20)
        .without_feature(Feature::F16)
        .build()
        .unwrap();
    let x = [h(1.0); 8];
    let err = rt.half_axpy_dot(&x, &x, 1, 1.0).unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::MissingFeature {
                feature: "SHADER_F16",
                kernel: "half_axpy_dot",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("`f16` values"), "{err}");
}
