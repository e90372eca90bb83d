//! WGSL's builtins by one rule (the language's third edition): each free function under
//! its WGSL name means what WGSL defines, the methods keep Rust's meaning, and the vector
//! forms mean, component by component, what the scalar ones do. Each builtin is checked
//! against a reference written here from WGSL's definition, in the oracle (exactly) and on
//! the adapter (lavapipe in CI; exactly where WGSL's accuracy is exact, within it where it
//! is not).

mod common;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;

/// Slots per element of `float_builtins`' output.
const FS: usize = 17;

#[forge_kernel(threads = n, ext = false)]
pub fn float_builtins(
    x: &[f32; n],
    y: &[f32; n],
    z: &[f32; n],
    e: &[i32; n],
    #[out] o: &mut [f32; n * 17],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let (a, b, c) = (x[i], y[i], z[i]);
        let k = i * 17;
        o[k] = clamp(a, b, c);
        o[k + 1] = fract(a);
        o[k + 2] = sign(a);
        o[k + 3] = inverse_sqrt(abs(a));
        o[k + 4] = saturate(a);
        o[k + 5] = step(b, a);
        o[k + 6] = mix(a, b, c);
        o[k + 7] = smoothstep(b, c, a);
        o[k + 8] = ldexp(a, e[i]);
        o[k + 9] = quantize_to_f16(a);
        o[k + 10] = round(a);
        let (fr, ex) = frexp(a);
        o[k + 11] = fr;
        o[k + 12] = ex as f32;
        let (part, whole) = modf(a);
        o[k + 13] = part;
        o[k + 14] = whole;
        // The method spellings of builtins Rust has no method for.
        o[k + 15] = a.abs().inverse_sqrt();
        o[k + 16] = a.saturate();
    }
}

/// Slots per element of `int_builtins`' output.
const IS: usize = 13;

#[forge_kernel(threads = n, ext = false)]
pub fn int_builtins(
    u: &[u32; n],
    s: &[i32; n],
    off: &[u32; n],
    cnt: &[u32; n],
    #[out] o: &mut [u32; n * 13],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let (a, b, p, q) = (u[i], s[i], off[i], cnt[i]);
        let k = i * 13;
        o[k] = first_leading_bit(a);
        o[k + 1] = first_leading_bit(b) as u32;
        o[k + 2] = first_trailing_bit(a);
        o[k + 3] = first_trailing_bit(b) as u32;
        o[k + 4] = extract_bits(a, p, q);
        o[k + 5] = extract_bits(b, p, q) as u32;
        o[k + 6] = insert_bits(a, b as u32, p, q);
        o[k + 7] = insert_bits(b, a as i32, p, q) as u32;
        o[k + 8] = count_one_bits(a);
        o[k + 9] = count_leading_zeros(b) as u32;
        o[k + 10] = count_trailing_zeros(a);
        o[k + 11] = a.first_leading_bit();
        o[k + 12] = clamp(b, -5, 7) as u32;
    }
}

#[forge_kernel(threads = n, ext = false)]
pub fn packing(
    f: &[Vec4; n],
    iv: &[IVec4; n],
    uv: &[UVec4; n],
    #[out] p: &mut [u32; n * 9],
    #[out] fu: &mut [Vec4; n * 4],
    #[out] iu: &mut [IVec4; n],
    #[out] uu: &mut [UVec4; n],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let v = f[i];
        let k = i * 9;
        p[k] = pack4x8snorm(v);
        p[k + 1] = pack4x8unorm(v);
        p[k + 2] = pack2x16snorm(v.xy());
        p[k + 3] = pack2x16unorm(v.zw());
        p[k + 4] = pack2x16float(v.xy());
        p[k + 5] = pack4x_i8(iv[i]);
        p[k + 6] = pack4x_u8(uv[i]);
        p[k + 7] = pack4x_i8_clamp(iv[i]);
        p[k + 8] = pack4x_u8_clamp(uv[i]);
        let w = uv[i].x;
        fu[i * 4] = unpack4x8snorm(w);
        fu[i * 4 + 1] = unpack4x8unorm(w);
        fu[i * 4 + 2] = Vec4::new(
            unpack2x16snorm(w).x,
            unpack2x16snorm(w).y,
            unpack2x16unorm(w).x,
            unpack2x16unorm(w).y,
        );
        fu[i * 4 + 3] = Vec4::new(
            unpack2x16float(w & 0x7bff7bff).x,
            unpack2x16float(w & 0x7bff7bff).y,
            0.0,
            0.0,
        );
        iu[i] = unpack4x_i8(w);
        uu[i] = unpack4x_u8(w);
    }
}

/// Vector forms: WGSL's free functions and Rust's methods, with NaN among the operands.
#[forge_kernel(threads = n, ext = false)]
pub fn vector_forms(
    x: &[Vec4; n],
    y: &[Vec4; n],
    z: &[Vec4; n],
    #[out] o: &mut [Vec4; n * 10],
    n: u32,
) {
    let i = global_index();
    if i < n {
        let (a, b, c) = (x[i], y[i], z[i]);
        let k = i * 10;
        o[k] = clamp(a, b, c);
        o[k + 1] = a.min(b);
        o[k + 2] = a.max(b);
        o[k + 3] = sign(a);
        o[k + 4] = round(a);
        o[k + 5] = a.floor();
        o[k + 6] = fract(a);
        o[k + 7] = saturate(a);
        o[k + 8] = a.clamp(b.min(c), b.max(c));
        o[k + 9] = step(b, a);
    }
}

/// `x.clamp(lo, hi)` with Rust's meaning: unordered bounds are the kernel's bug.
#[forge_kernel(threads = n, ext = false)]
pub fn clamp_method(x: &[f32; n], lo: &[f32; n], hi: &[f32; n], #[out] o: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        o[i] = x[i].clamp(lo[i], hi[i]);
    }
}

// ---- references, from WGSL's definitions ----

/// WGSL's `min`/`max` as the language pins them: a NaN operand gives the other.
fn wmin(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a <= b {
        a
    } else {
        b
    }
}

fn wmax(a: f32, b: f32) -> f32 {
    -wmin(-a, -b)
}

fn wclamp(x: f32, lo: f32, hi: f32) -> f32 {
    wmin(wmax(x, lo), hi)
}

fn wsign(x: f32) -> f32 {
    match x {
        _ if x.is_nan() => x,
        _ if x > 0.0 => 1.0,
        _ if x < 0.0 => -1.0,
        _ => 0.0,
    }
}

/// `round`: to the nearest integer, ties to the even one.
fn wround(x: f32) -> f32 {
    let f = x.floor();
    let d = x - f;
    if d > 0.5 || (d == 0.5 && f % 2.0 != 0.0) {
        f + 1.0
    } else {
        f
    }
}

fn wsmoothstep(lo: f32, hi: f32, x: f32) -> f32 {
    let t = wclamp((x - lo) / (hi - lo), 0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// `frexp` by repeated halving and doubling (exact in binary).
fn wfrexp(x: f32) -> (f32, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (mut m, mut e) = (f64::from(x), 0);
    while m.abs() >= 1.0 {
        m /= 2.0;
        e += 1;
    }
    while m.abs() < 0.5 {
        m *= 2.0;
        e -= 1;
    }
    (m as f32, e)
}

fn float_reference(a: f32, b: f32, c: f32, e: i32) -> [f32; FS] {
    let (fr, ex) = wfrexp(a);
    [
        wclamp(a, b, c),
        a - a.floor(),
        wsign(a),
        1.0 / a.abs().sqrt(),
        wclamp(a, 0.0, 1.0),
        if b <= a { 1.0 } else { 0.0 },
        a * (1.0 - c) + b * c,
        wsmoothstep(b, c, a),
        (f64::from(a) * 2f64.powi(e)) as f32,
        f16::from_f32(a).to_f32(),
        wround(a),
        fr,
        ex as f32,
        a - a.trunc(),
        a.trunc(),
        1.0 / a.abs().sqrt(),
        wclamp(a, 0.0, 1.0),
    ]
}

/// `first_leading_bit` by scanning from the top for the first bit unlike the sign (for
/// `u32`, unlike 0).
fn wfirst_leading(bits: u32, signed: bool) -> u32 {
    let background = if signed { bits >> 31 } else { 0 };
    (0..32)
        .rev()
        .find(|&k| (bits >> k) & 1 != background)
        .unwrap_or(u32::MAX)
}

/// `extract_bits` bit by bit.
fn wextract(x: u32, off: u32, cnt: u32, signed: bool) -> u32 {
    let o = off.min(32);
    let c = cnt.min(32 - o);
    let mut r = 0u32;
    for k in 0..c {
        r |= ((x >> (o + k)) & 1) << k;
    }
    if signed && c > 0 && (r >> (c - 1)) & 1 == 1 {
        for k in c..32 {
            r |= 1 << k;
        }
    }
    r
}

/// `insert_bits` bit by bit.
fn winsert(x: u32, y: u32, off: u32, cnt: u32) -> u32 {
    let o = off.min(32);
    let c = cnt.min(32 - o);
    let mut r = x;
    for k in 0..c {
        r = (r & !(1 << (o + k))) | (((y >> k) & 1) << (o + k));
    }
    r
}

fn int_reference(a: u32, b: i32, p: u32, q: u32) -> [u32; IS] {
    let bu = b as u32;
    [
        wfirst_leading(a, false),
        wfirst_leading(bu, true),
        if a == 0 { u32::MAX } else { a.trailing_zeros() },
        if b == 0 {
            u32::MAX
        } else {
            bu.trailing_zeros()
        },
        wextract(a, p, q, false),
        wextract(bu, p, q, true),
        winsert(a, bu, p, q),
        winsert(bu, a, p, q),
        a.count_ones(),
        bu.leading_zeros(),
        a.trailing_zeros(),
        wfirst_leading(a, false),
        b.clamp(-5, 7) as u32,
    ]
}

/// `floor(0.5 + scale·clamp(x, lo, 1))`, as WGSL's packing defines each field.
fn wnorm(x: f32, lo: f32, scale: f32) -> i64 {
    (0.5 + scale * wclamp(x, lo, 1.0)).floor() as i64
}

fn fields(v: &[i64], bits: u32) -> u32 {
    v.iter().enumerate().fold(0u32, |r, (k, &x)| {
        r | (((x as u32) & (u32::MAX >> (32 - bits))) << (bits * k as u32))
    })
}

// ---- comparisons ----

fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Within `ulps` units in the last place of `want` (the GPU's accuracy where WGSL's is
/// not exact).
fn close(got: f32, want: f32, ulps: f32) -> bool {
    same(got, want) || (got - want).abs() <= ulps * want.abs() * f32::EPSILON
}

/// Inputs: ordinary values, halves (ties of `round`), zeros of both signs and, in x, NaN
/// and infinities.
fn float_inputs(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<i32>) {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let special = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        1.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        -f32::INFINITY,
        65519.0,
        1e-3,
    ];
    let x = (0..n)
        .map(|i| {
            if i % 5 == 0 {
                special[(i / 5) % special.len()]
            } else {
                r.gen_range(-8.0..8.0)
            }
        })
        .collect();
    let y = (0..n).map(|_| r.gen_range(-2.0..2.0)).collect();
    let z = (0..n).map(|_| r.gen_range(-2.0..2.0)).collect();
    let e = (0..n).map(|_| r.gen_range(-20..20)).collect();
    (x, y, z, e)
}

#[test]
fn float_builtins_mean_what_wgsl_defines() {
    let n = 1001usize;
    let (x, y, z, e) = float_inputs(n, 1);
    let cpu = float_builtins::cpu(&x, &y, &z, &e, n as u32).unwrap();
    let mut rt = common::rt();
    let gpu = float_builtins::run(&mut rt, &x, &y, &z, &e, n as u32).unwrap();
    for i in 0..n {
        let want = float_reference(x[i], y[i], z[i], e[i]);
        for s in 0..FS {
            let (c, g, w) = (cpu[i * FS + s], gpu[i * FS + s], want[s]);
            let what = format!(
                "slot {s} of x = {}, y = {}, z = {}, e = {}",
                x[i], y[i], z[i], e[i]
            );
            assert!(same(c, w), "oracle: {what}: {c} but WGSL's is {w}");
            // What WGSL leaves open: frexp, ldexp and quantize of infinities and NaN, and
            // f16 past its range.
            let open = !x[i].is_finite() && matches!(s, 8 | 9 | 11 | 12 | 13)
                || (s == 9 && x[i].abs() > 65504.0);
            if open {
                continue;
            }
            // inverse_sqrt is within 2 ulp in WGSL; mix and smoothstep may be contracted.
            let ok = match s {
                3 | 15 => close(g, w, 2.0),
                6 => same(g, w) || (g - w).abs() <= 4.0 * f32::EPSILON * (x[i].abs() + y[i].abs()),
                7 => (g - w).abs() <= 1e-5,
                _ => same(g, w),
            };
            assert!(ok, "GPU: {what}: {g} but WGSL's is {w}");
        }
    }
}

#[test]
fn integer_builtins_mean_what_wgsl_defines() {
    let n = 2003usize;
    let mut r = ChaCha8Rng::seed_from_u64(2);
    let edge = [0u32, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff, 0xf0];
    let u: Vec<u32> = (0..n)
        .map(|i| {
            if i % 4 == 0 {
                edge[(i / 4) % edge.len()]
            } else {
                r.gen()
            }
        })
        .collect();
    let s: Vec<i32> = (0..n)
        .map(|i| {
            if i % 3 == 0 {
                edge[(i / 3) % edge.len()] as i32
            } else {
                r.gen()
            }
        })
        .collect();
    // Offsets and counts past 32 too, which WGSL clamps.
    let off: Vec<u32> = (0..n).map(|_| r.gen_range(0..40)).collect();
    let cnt: Vec<u32> = (0..n).map(|_| r.gen_range(0..40)).collect();
    let cpu = int_builtins::cpu(&u, &s, &off, &cnt, n as u32).unwrap();
    let mut rt = common::rt();
    let gpu = int_builtins::run(&mut rt, &u, &s, &off, &cnt, n as u32).unwrap();
    for i in 0..n {
        let want = int_reference(u[i], s[i], off[i], cnt[i]);
        let what = format!(
            "u = {:#x}, s = {:#x}, offset {}, count {}",
            u[i], s[i], off[i], cnt[i]
        );
        assert_eq!(&cpu[i * IS..(i + 1) * IS], &want, "oracle: {what}");
        assert_eq!(&gpu[i * IS..(i + 1) * IS], &want, "GPU: {what}");
    }
}

#[test]
fn packing_means_what_wgsl_defines() {
    let n = 777usize;
    let mut r = ChaCha8Rng::seed_from_u64(3);
    let f: Vec<[f32; 4]> = (0..n)
        .map(|_| {
            [
                r.gen_range(-1.5..1.5),
                r.gen_range(-1.5..1.5),
                r.gen_range(-0.5..1.5),
                r.gen_range(-1000.0..1000.0),
            ]
        })
        .collect();
    let iv: Vec<[i32; 4]> = (0..n)
        .map(|_| {
            [
                r.gen_range(-300..300),
                r.gen(),
                r.gen_range(-128..128),
                r.gen_range(-1000..1000),
            ]
        })
        .collect();
    let uv: Vec<[u32; 4]> = (0..n)
        .map(|_| [r.gen(), r.gen_range(0..300), r.gen_range(0..256), r.gen()])
        .collect();
    let (cp, cf, ci, cu) = packing::cpu(&f, &iv, &uv, n as u32).unwrap();
    let mut rt = common::rt();
    let (gp, gf, gi, gu) = packing::run(&mut rt, &f, &iv, &uv, n as u32).unwrap();
    for i in 0..n {
        let v = f[i];
        let (a, b) = (iv[i], uv[i]);
        let want = [
            fields(&v.map(|x| wnorm(x, -1.0, 127.0)), 8),
            fields(&v.map(|x| wnorm(x, 0.0, 255.0)), 8),
            fields(
                &[wnorm(v[0], -1.0, 32767.0), wnorm(v[1], -1.0, 32767.0)],
                16,
            ),
            fields(&[wnorm(v[2], 0.0, 65535.0), wnorm(v[3], 0.0, 65535.0)], 16),
            fields(
                &[0, 1].map(|k| i64::from(f16::from_f32(v[k]).to_bits())),
                16,
            ),
            fields(&a.map(i64::from), 8),
            fields(&b.map(i64::from), 8),
            fields(&a.map(|x| i64::from(x.clamp(-128, 127))), 8),
            fields(&b.map(|x| i64::from(x.min(255))), 8),
        ];
        assert_eq!(
            &cp[i * 9..i * 9 + 9],
            &want,
            "oracle packs {v:?}, {a:?}, {b:?}"
        );
        assert_eq!(
            &gp[i * 9..i * 9 + 9],
            &want,
            "GPU packs {v:?}, {a:?}, {b:?}"
        );
        let w = b[0];
        let byte = |k: u32| (w >> (8 * k)) & 0xff;
        let half16 = |k: u32| (w >> (16 * k)) & 0xffff;
        let unpacked = [
            [0, 1, 2, 3].map(|k| wmax(f32::from(byte(k) as u8 as i8) / 127.0, -1.0)),
            [0, 1, 2, 3].map(|k| byte(k) as f32 / 255.0),
            [
                wmax(f32::from(half16(0) as u16 as i16) / 32767.0, -1.0),
                wmax(f32::from(half16(1) as u16 as i16) / 32767.0, -1.0),
                half16(0) as f32 / 65535.0,
                half16(1) as f32 / 65535.0,
            ],
            [
                f16::from_bits((half16(0) & 0x7bff) as u16).to_f32(),
                f16::from_bits((half16(1) & 0x7bff) as u16).to_f32(),
                0.0,
                0.0,
            ],
        ];
        for (k, want) in unpacked.iter().enumerate() {
            let (c, g) = (cf[i * 4 + k], gf[i * 4 + k]);
            assert_eq!(&c, want, "oracle unpacks {w:#x} ({k})");
            // WGSL's division is within 2.5 ulp.
            for (gc, wc) in g.iter().zip(want) {
                assert!(
                    close(*gc, *wc, 3.0),
                    "GPU unpacks {w:#x} ({k}): {g:?}, not {want:?}"
                );
            }
        }
        let ints = [0, 1, 2, 3].map(|k| i32::from(byte(k) as u8 as i8));
        let uints = [0, 1, 2, 3].map(byte);
        assert_eq!((ci[i], cu[i]), (ints, uints), "oracle unpacks {w:#x}");
        assert_eq!((gi[i], gu[i]), (ints, uints), "GPU unpacks {w:#x}");
    }
}

#[test]
fn vector_forms_mean_the_scalar_forms_component_by_component() {
    let n = 513usize;
    let mut r = ChaCha8Rng::seed_from_u64(4);
    let draw = |r: &mut ChaCha8Rng| -> [f32; 4] {
        let mut v = [0f32; 4];
        for c in &mut v {
            *c = match r.gen_range(0..10) {
                0 => f32::NAN,
                1 => 0.5 * r.gen_range(-6..6) as f32,
                _ => r.gen_range(-3.0..3.0),
            };
        }
        v
    };
    let x: Vec<[f32; 4]> = (0..n).map(|_| draw(&mut r)).collect();
    let y: Vec<[f32; 4]> = (0..n).map(|_| draw(&mut r)).collect();
    let z: Vec<[f32; 4]> = (0..n).map(|_| draw(&mut r)).collect();
    // The method's bounds must be ordered: no NaN in them.
    let y: Vec<[f32; 4]> = y
        .iter()
        .map(|v| v.map(|c| if c.is_nan() { 0.25 } else { c }))
        .collect();
    let z: Vec<[f32; 4]> = z
        .iter()
        .map(|v| v.map(|c| if c.is_nan() { -0.75 } else { c }))
        .collect();
    let cpu = vector_forms::cpu(&x, &y, &z, n as u32).unwrap();
    let mut rt = common::rt();
    let gpu = vector_forms::run(&mut rt, &x, &y, &z, n as u32).unwrap();
    for i in 0..n {
        for c in 0..4 {
            let (a, b, d) = (x[i][c], y[i][c], z[i][c]);
            let want = [
                wclamp(a, b, d),
                a.min(b),
                a.max(b),
                wsign(a),
                wround(a),
                a.floor(),
                a - a.floor(),
                wclamp(a, 0.0, 1.0),
                a.clamp(b.min(d), b.max(d)),
                if b <= a { 1.0 } else { 0.0 },
            ];
            for (s, w) in want.iter().enumerate() {
                let (cv, gv) = (cpu[i * 10 + s][c], gpu[i * 10 + s][c]);
                let what = format!("slot {s}, component {c} of {a}, {b}, {d}");
                assert!(same(cv, *w), "oracle: {what}: {cv}, not {w}");
                assert!(same(gv, *w), "GPU: {what}: {gv}, not {w}");
            }
        }
    }
}

#[test]
fn the_clamp_method_reports_unordered_bounds_as_rust_panics_on_them() {
    let x = [5.0f32, 0.5, 2.0];
    let ordered = clamp_method::cpu(&x, &[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0], 3).unwrap();
    assert_eq!(ordered, [1.0, 0.5, 1.0]);
    for (lo, hi) in [(3.0, 1.0), (f32::NAN, 1.0), (0.0, f32::NAN)] {
        let e = clamp_method::cpu(&x, &[0.0, lo, 0.0], &[1.0, hi, 1.0], 3).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("kernel `clamp_method`: invocation 1") && text.contains("not lo <= hi"),
            "{text}"
        );
    }
}
