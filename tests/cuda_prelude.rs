//! The CUDA prelude's semantics, without a GPU: the prelude that every kernel's CUDA C
//! starts with (`Kernel::cuda`) is compiled for the host by the system's C++ compiler
//! (`c++`, or `$CXX`), with the few CUDA intrinsics it uses written in portable C++, and
//! its scalar functions are run on random and edge inputs against the CPU oracle's
//! functions and Rust's own (which define the language).
//!
//! What this cannot check is the device: CUDA's own `sqrtf`, `powf`, shuffles and atomics
//! run only on the H200.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::Write;
use std::process::{Command, Stdio};
use wgsl_forge::oracle;
use wgsl_forge::prelude::*;

/// CUDA's intrinsics that the prelude's scalar functions use, for the host; the warp,
/// atomic and barrier ones are never called here.
const SHIMS: &str = r#"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <math.h>
#define __device__
#define __forceinline__ inline
static inline unsigned __float_as_uint(float x) { unsigned u; std::memcpy(&u, &x, 4); return u; }
static inline float __uint_as_float(unsigned u) { float x; std::memcpy(&x, &u, 4); return x; }
static inline float __int_as_float(int u) { float x; std::memcpy(&x, &u, 4); return x; }
static inline long long __double_as_longlong(double x) { long long u; std::memcpy(&u, &x, 8); return u; }
static inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, 8); return x; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned __brev(unsigned x) { unsigned r = 0; for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i); return r; }
template <class T> T __shfl_sync(unsigned, T, unsigned) { std::abort(); }
template <class T> T __shfl_up_sync(unsigned, T, unsigned) { std::abort(); }
template <class T> T __shfl_down_sync(unsigned, T, unsigned) { std::abort(); }
template <class T> T __shfl_xor_sync(unsigned, T, unsigned) { std::abort(); }
static inline unsigned atomicCAS(unsigned *, unsigned, unsigned) { std::abort(); }
static inline void __syncthreads() { std::abort(); }
"#;

/// The driver: reads `op a b` lines (operands as hex bits) and prints each result's bits.
const MAIN: &str = r#"
static float F(unsigned long long b) { return __uint_as_float((unsigned)b); }
static double D(unsigned long long b) { return __longlong_as_double((long long)b); }
static unsigned long long FB(float x) { return __float_as_uint(x); }
static unsigned long long DB(double x) { return (unsigned long long)__double_as_longlong(x); }
int main() {
    char op[32];
    unsigned long long a, b;
    while (std::scanf("%31s %llx %llx", op, &a, &b) == 3) {
        unsigned ua = (unsigned)a, ub = (unsigned)b;
        int ia = (int)ua, ib = (int)ub;
        unsigned long long r = 0;
        std::string o(op);
        if (o == "div_u32") r = fg_div(ua, ub);
        else if (o == "rem_u32") r = fg_rem(ua, ub);
        else if (o == "div_i32") r = (unsigned)fg_div(ia, ib);
        else if (o == "rem_i32") r = (unsigned)fg_rem(ia, ib);
        else if (o == "add_i32") r = (unsigned)fg_add(ia, ib);
        else if (o == "sub_i32") r = (unsigned)fg_sub(ia, ib);
        else if (o == "mul_i32") r = (unsigned)fg_mul(ia, ib);
        else if (o == "neg_i32") r = (unsigned)fg_neg(ia);
        else if (o == "abs_i32") r = (unsigned)fg_abs(ia);
        else if (o == "shl_u32") r = fg_shl(ua, ib);
        else if (o == "shr_u32") r = fg_shr(ua, ib);
        else if (o == "shl_i32") r = (unsigned)fg_shl(ia, ib);
        else if (o == "shr_i32") r = (unsigned)fg_shr(ia, ib);
        else if (o == "div_ceil_u32") r = fg_div_ceil(ua, ub);
        else if (o == "rem_euclid_i32") r = (unsigned)fg_rem_euclid(ia, ib);
        else if (o == "count_ones") r = fg_count_ones(ua);
        else if (o == "leading_zeros") r = fg_leading_zeros(ua);
        else if (o == "trailing_zeros") r = fg_trailing_zeros(ua);
        else if (o == "reverse_bits") r = fg_reverse_bits(ua);
        else if (o == "f32_to_i32") r = (unsigned)fg_f32_to_i32(F(a));
        else if (o == "f32_to_u32") r = fg_f32_to_u32(F(a));
        else if (o == "f64_to_i32") r = (unsigned)fg_f64_to_i32(D(a));
        else if (o == "f64_to_u32") r = fg_f64_to_u32(D(a));
        else if (o == "min_f32") r = FB(fg_min(F(a), F(b)));
        else if (o == "max_f32") r = FB(fg_max(F(a), F(b)));
        else if (o == "clamp01_f32") r = FB(fg_clamp(F(a), F(b), 1.0f));
        else if (o == "round_f32") r = FB(fg_round(F(a)));
        else if (o == "round_ties_even_f32") r = FB(fg_round_ties_even(F(a)));
        else if (o == "fract_f32") r = FB(fg_fract(F(a)));
        else if (o == "signum_f32") r = FB(fg_signum(F(a)));
        else if (o == "rem_f32") r = FB(fg_rem(F(a), F(b)));
        else if (o == "rem_euclid_f32") r = FB(fg_rem_euclid(F(a), F(b)));
        else if (o == "isnan_f32") r = fg_isnan(F(a));
        else if (o == "isfinite_f32") r = fg_isfinite(F(a));
        else if (o == "mul_add_f32") r = FB(fg_mul_add(F(a), F(b), 1.0f));
        else if (o == "min_f64") r = DB(fg_min(D(a), D(b)));
        else if (o == "signum_f64") r = DB(fg_signum(D(a)));
        else { std::fprintf(stderr, "unknown op %s\n", op); return 2; }
        std::printf("%llx\n", r);
    }
    return 0;
}
"#;

/// The prelude of every kernel's CUDA, as a generated kernel gives it.
fn prelude() -> String {
    let k = &wgsl_forge::kernels::axpy::axpy::Kernel;
    let source = k.cuda(&k.default_schedule()).expect("axpy has CUDA");
    let (prelude, _) = source
        .split_once("// ---- end of the prelude ----\n")
        .expect("the prelude comes first");
    prelude.to_string()
}

/// Builds the driver with the host's C++ compiler.
fn build() -> std::path::PathBuf {
    build_driver(
        "prelude_test",
        &format!("{SHIMS}\n#include <string>\n{}\n{MAIN}", prelude()),
    )
}

/// Builds `source`, a driver, with the host's C++ compiler.
fn build_driver(name: &str, source: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("forge-cuda-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.cpp"));
    let exe = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let out = Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-ffp-contract=off", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("the host C++ compiler `{cxx}` (set CXX, or install g++): {e}"));
    assert!(
        out.status.success(),
        "the prelude does not compile as C++17 on the host:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs every `(op, a, b)` through the driver; the results' bits.
fn run(exe: &std::path::Path, cases: &[(&str, u64, u64)]) -> Vec<u64> {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (op, a, b) in cases {
        input.push_str(&format!("{op} {a:x} {b:x}\n"));
    }
    // Written from a thread: the driver's output would fill its pipe before it has read
    // all its input.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the driver failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let results: Vec<u64> = text
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(results.len(), cases.len());
    results
}

/// A float result agrees: the same bits, or both NaN.
fn same_f32(got: u64, want: f32) -> bool {
    let g = f32::from_bits(got as u32);
    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan())
}

#[test]
fn prelude_functions_keep_the_languages_semantics() {
    let exe = build();
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let int_edges: [u32; 10] = [
        0,
        1,
        2,
        31,
        32,
        33,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        0xffff_fffe,
    ];
    let float_edges: [f32; 16] = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        1e-45,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        2147483520.0,
        2147483648.0,
        4294967296.0,
    ];
    let mut ints: Vec<(u32, u32)> = Vec::new();
    for a in int_edges {
        for b in int_edges {
            ints.push((a, b));
        }
    }
    for _ in 0..2000 {
        ints.push((rng.gen(), rng.gen::<u32>() >> rng.gen_range(0..32)));
    }
    let mut floats: Vec<(f32, f32)> = Vec::new();
    for a in float_edges {
        for b in float_edges {
            floats.push((a, b));
        }
    }
    for _ in 0..2000 {
        let a = f32::from_bits(rng.gen());
        let b = rng.gen_range(-1e6f32..1e6);
        floats.push((a, b));
        floats.push((
            rng.gen_range(-100.0f32..100.0),
            rng.gen_range(-10.0f32..10.0),
        ));
    }

    type IntCheck = fn(u32, u32) -> u32;
    let int_ops: [(&str, IntCheck); 19] = [
        ("div_u32", oracle::div_u32),
        ("rem_u32", oracle::rem_u32),
        ("div_i32", |a, b| oracle::div_i32(a as i32, b as i32) as u32),
        ("rem_i32", |a, b| oracle::rem_i32(a as i32, b as i32) as u32),
        ("add_i32", |a, b| (a as i32).wrapping_add(b as i32) as u32),
        ("sub_i32", |a, b| (a as i32).wrapping_sub(b as i32) as u32),
        ("mul_i32", |a, b| (a as i32).wrapping_mul(b as i32) as u32),
        ("neg_i32", |a, _| (a as i32).wrapping_neg() as u32),
        ("abs_i32", |a, _| (a as i32).wrapping_abs() as u32),
        ("shl_u32", |a, b| a.wrapping_shl(b)),
        ("shr_u32", |a, b| a.wrapping_shr(b)),
        ("shl_i32", |a, b| (a as i32).wrapping_shl(b) as u32),
        ("shr_i32", |a, b| (a as i32).wrapping_shr(b) as u32),
        ("div_ceil_u32", oracle::div_ceil_u32),
        ("rem_euclid_i32", |a, b| {
            oracle::rem_euclid_i32(a as i32, b as i32) as u32
        }),
        ("count_ones", |a, _| a.count_ones()),
        ("leading_zeros", |a, _| a.leading_zeros()),
        ("trailing_zeros", |a, _| a.trailing_zeros()),
        ("reverse_bits", |a, _| a.reverse_bits()),
    ];
    let mut cases: Vec<(&str, u64, u64)> = Vec::new();
    for (op, _) in &int_ops {
        cases.extend(ints.iter().map(|(a, b)| (*op, *a as u64, *b as u64)));
    }
    let results = run(&exe, &cases);
    for (i, (op, a, b)) in cases.iter().enumerate() {
        let check = int_ops.iter().find(|(o, _)| o == op).unwrap().1;
        let want = check(*a as u32, *b as u32);
        assert_eq!(results[i] as u32, want, "{op}({a:#x}, {b:#x})");
    }

    type FloatCheck = fn(f32, f32) -> u64;
    let float_ops: [(&str, FloatCheck); 17] = [
        ("f32_to_i32", |a, _| oracle::f32_to_i32(a) as u32 as u64),
        ("f32_to_u32", |a, _| oracle::f32_to_u32(a) as u64),
        ("f64_to_i32", |a, _| {
            oracle::f64_to_i32(a as f64) as u32 as u64
        }),
        ("f64_to_u32", |a, _| oracle::f64_to_u32(a as f64) as u64),
        ("min_f32", |a, b| a.min(b).to_bits() as u64),
        ("max_f32", |a, b| a.max(b).to_bits() as u64),
        ("clamp01_f32", |a, b| {
            oracle::clamp_f32(a, b, 1.0).to_bits() as u64
        }),
        ("round_f32", |a, _| a.round().to_bits() as u64),
        ("round_ties_even_f32", |a, _| {
            a.round_ties_even().to_bits() as u64
        }),
        ("fract_f32", |a, _| a.fract().to_bits() as u64),
        ("signum_f32", |a, _| a.signum().to_bits() as u64),
        ("rem_f32", |a, b| (a % b).to_bits() as u64),
        ("rem_euclid_f32", |a, b| {
            oracle::rem_euclid_f32(a, b).to_bits() as u64
        }),
        ("isnan_f32", |a, _| a.is_nan() as u64),
        ("isfinite_f32", |a, _| a.is_finite() as u64),
        ("mul_add_f32", |a, b| a.mul_add(b, 1.0).to_bits() as u64),
        ("signum_f64", |a, _| (a as f64).signum().to_bits()),
    ];
    let mut cases: Vec<(&str, u64, u64)> = Vec::new();
    for (op, _) in &float_ops {
        for (a, b) in &floats {
            let (ea, eb) = if op.ends_with("f64") || op.starts_with("f64") {
                ((*a as f64).to_bits(), (*b as f64).to_bits())
            } else {
                (a.to_bits() as u64, b.to_bits() as u64)
            };
            cases.push((op, ea, eb));
        }
    }
    let results = run(&exe, &cases);
    for (i, (op, _, _)) in cases.iter().enumerate() {
        let (a, b) = floats[i % floats.len()];
        let check = float_ops.iter().find(|(o, _)| o == op).unwrap().1;
        let want = check(a, b);
        let ok = match *op {
            "signum_f64" => {
                let (g, w) = (f64::from_bits(results[i]), f64::from_bits(want));
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
            }
            // Rust leaves the sign of `min(0.0, -0.0)` open: either zero is right.
            "min_f32" | "max_f32" if f32::from_bits(want as u32) == 0.0 => {
                f32::from_bits(results[i] as u32) == 0.0
            }
            o if o.ends_with("_f32") && !o.starts_with("is") => {
                same_f32(results[i], f32::from_bits(want as u32))
            }
            _ => results[i] == want,
        };
        assert!(
            ok,
            "{op}({a:?}, {b:?}): CUDA prelude {:#x}, language {want:#x}",
            results[i]
        );
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}

/// Every kernel's source holds the prelude once, and `cuda_fp16.h` only where it uses f16.
#[test]
fn kernels_name_the_prelude_once() {
    let k = &wgsl_forge::kernels::gemm::gemm::Kernel;
    let source = k.cuda(&k.default_schedule()).unwrap();
    assert_eq!(source.matches("// ---- end of the prelude ----").count(), 1);
    assert!(
        !source.contains("cuda_fp16.h"),
        "no f16 header for an f32 kernel"
    );
}

/// A kernel that calls WGSL's builtins, whose prelude holds their CUDA forms.
#[forge_kernel(threads = n, ext = false)]
pub fn calls_a_builtin(x: &[u32; n], #[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = first_leading_bit(x[i]);
    }
}

/// `cuda_fp16.h` and CUDA's correctly rounded float intrinsics, for the host: `_Float16`
/// converts with round-to-nearest-even, as `__float2half_rn` does.
const SHIMS_WGSL: &str = r#"
struct __half { unsigned short b; };
static inline __half __float2half_rn(float f) { _Float16 h = (_Float16)f; __half r; std::memcpy(&r.b, &h, 2); return r; }
static inline float __half2float(__half h) { _Float16 x; std::memcpy(&x, &h.b, 2); return (float)x; }
static inline unsigned short __half_as_ushort(__half h) { return h.b; }
static inline __half __ushort_as_half(unsigned short b) { return __half{b}; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
"#;

/// The driver of WGSL's builtins: `op a b c d` lines (operands as hex bits); for an
/// `unpack`, `d` picks the component.
const MAIN_WGSL: &str = r#"
static float F(unsigned long long b) { return __uint_as_float((unsigned)b); }
static unsigned long long FB(float x) { return __float_as_uint(x); }
int main() {
    char op[32];
    unsigned long long a, b, c, d;
    while (std::scanf("%31s %llx %llx %llx %llx", op, &a, &b, &c, &d) == 5) {
        unsigned ua = (unsigned)a, ub = (unsigned)b, uc = (unsigned)c, ud = (unsigned)d;
        int ia = (int)ua, ib = (int)ub, ic = (int)uc, id = (int)ud;
        unsigned long long r = 0;
        std::string o(op);
        if (o == "first_leading_bit_u32") r = fg_first_leading_bit(ua);
        else if (o == "first_leading_bit_i32") r = (unsigned)fg_first_leading_bit(ia);
        else if (o == "first_trailing_bit_u32") r = fg_first_trailing_bit(ua);
        else if (o == "first_trailing_bit_i32") r = (unsigned)fg_first_trailing_bit(ia);
        else if (o == "extract_bits_u32") r = fg_extract_bits(ua, ub, uc);
        else if (o == "extract_bits_i32") r = (unsigned)fg_extract_bits(ia, ub, uc);
        else if (o == "insert_bits_u32") r = fg_insert_bits(ua, ub, uc, ud);
        else if (o == "insert_bits_i32") r = (unsigned)fg_insert_bits(ia, ib, uc, ud);
        else if (o == "count_one_bits_i32") r = (unsigned)fg_count_one_bits(ia);
        else if (o == "count_leading_zeros_i32") r = (unsigned)fg_count_leading_zeros(ia);
        else if (o == "count_trailing_zeros_u32") r = fg_count_trailing_zeros(ua);
        else if (o == "clamp_min_max_i32") r = (unsigned)fg_clamp_min_max(ia, ib, ic);
        else if (o == "sign_i32") r = (unsigned)fg_sign(ia);
        else if (o == "clamp_min_max_f32") r = FB(fg_clamp_min_max(F(a), F(b), F(c)));
        else if (o == "fract_floor_f32") r = FB(fg_fract_floor(F(a)));
        else if (o == "sign_f32") r = FB(fg_sign(F(a)));
        else if (o == "inverse_sqrt_f32") r = FB(fg_inverse_sqrt(F(a)));
        else if (o == "saturate_f32") r = FB(fg_saturate(F(a)));
        else if (o == "step_f32") r = FB(fg_step(F(a), F(b)));
        else if (o == "mix_f32") r = FB(fg_mix(F(a), F(b), F(c)));
        else if (o == "smoothstep_f32") r = FB(fg_smoothstep(F(a), F(b), F(c)));
        else if (o == "ldexp_f32") r = FB(fg_ldexp(F(a), ib));
        else if (o == "quantize_to_f16") r = FB(fg_quantize_to_f16(F(a)));
        else if (o == "frexp_fract_f32") r = FB(fg_frexp_fract(F(a)));
        else if (o == "frexp_exp_f32") r = (unsigned)fg_frexp_exp(F(a));
        else if (o == "pack4x8snorm") r = fg_pack4x8snorm(fg_vec<float, 4>{{F(a), F(b), F(c), F(d)}});
        else if (o == "pack4x8unorm") r = fg_pack4x8unorm(fg_vec<float, 4>{{F(a), F(b), F(c), F(d)}});
        else if (o == "pack2x16snorm") r = fg_pack2x16snorm(fg_vec<float, 2>{{F(a), F(b)}});
        else if (o == "pack2x16unorm") r = fg_pack2x16unorm(fg_vec<float, 2>{{F(a), F(b)}});
        else if (o == "pack2x16float") r = fg_pack2x16float(fg_vec<float, 2>{{F(a), F(b)}});
        else if (o == "pack4x_i8") r = fg_pack4x_i8(fg_vec<int, 4>{{ia, ib, ic, id}});
        else if (o == "pack4x_u8") r = fg_pack4x_u8(fg_vec<unsigned, 4>{{ua, ub, uc, ud}});
        else if (o == "pack4x_i8_clamp") r = fg_pack4x_i8_clamp(fg_vec<int, 4>{{ia, ib, ic, id}});
        else if (o == "pack4x_u8_clamp") r = fg_pack4x_u8_clamp(fg_vec<unsigned, 4>{{ua, ub, uc, ud}});
        else if (o == "unpack4x8snorm") r = FB(fg_unpack4x8snorm(ua).v[ud]);
        else if (o == "unpack4x8unorm") r = FB(fg_unpack4x8unorm(ua).v[ud]);
        else if (o == "unpack2x16snorm") r = FB(fg_unpack2x16snorm(ua).v[ud % 2]);
        else if (o == "unpack2x16unorm") r = FB(fg_unpack2x16unorm(ua).v[ud % 2]);
        else if (o == "unpack2x16float") r = FB(fg_unpack2x16float(ua).v[ud % 2]);
        else if (o == "unpack4x_i8") r = (unsigned)fg_unpack4x_i8(ua).v[ud];
        else if (o == "unpack4x_u8") r = fg_unpack4x_u8(ua).v[ud];
        else { std::fprintf(stderr, "unknown op %s\n", op); return 2; }
        std::printf("%llx\n", r);
    }
    return 0;
}
"#;

/// Runs `op a b c d` lines through a driver; the results' bits.
fn run4(exe: &std::path::Path, cases: &[(&str, [u32; 4])]) -> Vec<u32> {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (op, [a, b, c, d]) in cases {
        input.push_str(&format!("{op} {a:x} {b:x} {c:x} {d:x}\n"));
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "the driver failed");
    let text = String::from_utf8(out.stdout).unwrap();
    let results: Vec<u32> = text
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap() as u32)
        .collect();
    assert_eq!(results.len(), cases.len());
    results
}

/// What the oracle gives for one op (`oracle::wgsl`), as bits.
fn wgsl_oracle(op: &str, [a, b, c, d]: [u32; 4]) -> u32 {
    use wgsl_forge::oracle::wgsl as w;
    let f = f32::from_bits;
    let (ia, ib, ic, id) = (a as i32, b as i32, c as i32, d as i32);
    match op {
        "first_leading_bit_u32" => w::first_leading_bit(a),
        "first_leading_bit_i32" => w::first_leading_bit(ia) as u32,
        "first_trailing_bit_u32" => w::first_trailing_bit(a),
        "first_trailing_bit_i32" => w::first_trailing_bit(ia) as u32,
        "extract_bits_u32" => w::extract_bits(a, b, c),
        "extract_bits_i32" => w::extract_bits(ia, b, c) as u32,
        "insert_bits_u32" => w::insert_bits(a, b, c, d),
        "insert_bits_i32" => w::insert_bits(ia, ib, c, d) as u32,
        "count_one_bits_i32" => w::count_one_bits(ia) as u32,
        "count_leading_zeros_i32" => w::count_leading_zeros(ia) as u32,
        "count_trailing_zeros_u32" => w::count_trailing_zeros(a),
        "clamp_min_max_i32" => w::clamp_min_max_int(ia, ib, ic) as u32,
        "sign_i32" => w::sign_i32(ia) as u32,
        "clamp_min_max_f32" => w::clamp_min_max_f32(f(a), f(b), f(c)).to_bits(),
        "fract_floor_f32" => w::fract_floor_f32(f(a)).to_bits(),
        "sign_f32" => w::sign_f32(f(a)).to_bits(),
        "inverse_sqrt_f32" => w::inverse_sqrt_f32(f(a)).to_bits(),
        "saturate_f32" => w::saturate_f32(f(a)).to_bits(),
        "step_f32" => w::step_f32(f(a), f(b)).to_bits(),
        "mix_f32" => w::mix_f32(f(a), f(b), f(c)).to_bits(),
        "smoothstep_f32" => w::smoothstep_f32(f(a), f(b), f(c)).to_bits(),
        "ldexp_f32" => w::ldexp_f32(f(a), ib).to_bits(),
        "quantize_to_f16" => w::quantize_to_f16(f(a)).to_bits(),
        "frexp_fract_f32" => w::frexp_fract_f32(f(a)).to_bits(),
        "frexp_exp_f32" => w::frexp_exp_f32(f(a)) as u32,
        "pack4x8snorm" => w::pack4x8snorm([a, b, c, d].map(f)),
        "pack4x8unorm" => w::pack4x8unorm([a, b, c, d].map(f)),
        "pack2x16snorm" => w::pack2x16snorm([f(a), f(b)]),
        "pack2x16unorm" => w::pack2x16unorm([f(a), f(b)]),
        "pack2x16float" => w::pack2x16float([f(a), f(b)]),
        "pack4x_i8" => w::pack4x_i8([ia, ib, ic, id]),
        "pack4x_u8" => w::pack4x_u8([a, b, c, d]),
        "pack4x_i8_clamp" => w::pack4x_i8_clamp([ia, ib, ic, id]),
        "pack4x_u8_clamp" => w::pack4x_u8_clamp([a, b, c, d]),
        "unpack4x8snorm" => w::unpack4x8snorm(a)[d as usize].to_bits(),
        "unpack4x8unorm" => w::unpack4x8unorm(a)[d as usize].to_bits(),
        "unpack2x16snorm" => w::unpack2x16snorm(a)[d as usize % 2].to_bits(),
        "unpack2x16unorm" => w::unpack2x16unorm(a)[d as usize % 2].to_bits(),
        "unpack2x16float" => w::unpack2x16float(a)[d as usize % 2].to_bits(),
        "unpack4x_i8" => w::unpack4x_i8(a)[d as usize] as u32,
        "unpack4x_u8" => w::unpack4x_u8(a)[d as usize],
        other => panic!("no oracle for {other}"),
    }
}

#[test]
fn wgsl_builtins_in_the_prelude_mean_what_the_oracle_does() {
    let k = &calls_a_builtin::Kernel;
    let source = k.cuda(&k.default_schedule()).expect("the kernel has CUDA");
    // The parts of the prelude a kernel asks for follow the common one; the schedule's
    // constants come next.
    let (prelude, _) = source
        .split_once("static constexpr unsigned WG")
        .expect("the prelude comes first");
    assert!(prelude.contains("fg_first_leading_bit") && prelude.contains("cuda_fp16.h"));
    let prelude = prelude.replace("#include <cuda_fp16.h>\n", "");
    let exe = build_driver(
        "prelude_wgsl",
        &format!("{SHIMS}{SHIMS_WGSL}\n#include <string>\n{prelude}\n{MAIN_WGSL}"),
    );
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let int_ops = [
        "first_leading_bit_u32",
        "first_leading_bit_i32",
        "first_trailing_bit_u32",
        "first_trailing_bit_i32",
        "extract_bits_u32",
        "extract_bits_i32",
        "insert_bits_u32",
        "insert_bits_i32",
        "count_one_bits_i32",
        "count_leading_zeros_i32",
        "count_trailing_zeros_u32",
        "clamp_min_max_i32",
        "sign_i32",
        "pack4x_i8",
        "pack4x_u8",
        "pack4x_i8_clamp",
        "pack4x_u8_clamp",
        "unpack4x8snorm",
        "unpack4x8unorm",
        "unpack2x16snorm",
        "unpack2x16unorm",
        "unpack2x16float",
        "unpack4x_i8",
        "unpack4x_u8",
    ];
    let float_ops = [
        "clamp_min_max_f32",
        "fract_floor_f32",
        "sign_f32",
        "inverse_sqrt_f32",
        "saturate_f32",
        "step_f32",
        "mix_f32",
        "smoothstep_f32",
        "ldexp_f32",
        "quantize_to_f16",
        "frexp_fract_f32",
        "frexp_exp_f32",
        "pack4x8snorm",
        "pack4x8unorm",
        "pack2x16snorm",
        "pack2x16unorm",
        "pack2x16float",
    ];
    let int_edges = [
        0u32,
        1,
        31,
        32,
        33,
        0x7fff_ffff,
        0x8000_0000,
        u32::MAX,
        0xf0,
        300,
    ];
    let float_edges = [
        0.0f32,
        -0.0,
        0.5,
        -0.5,
        2.5,
        1e-45,
        -1.0,
        1.0,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        65520.0,
    ];
    let mut cases: Vec<(&str, [u32; 4])> = Vec::new();
    for op in int_ops {
        for _ in 0..1500 {
            let mut v: [u32; 4] = std::array::from_fn(|_| {
                if rng.gen_range(0..4) == 0 {
                    int_edges[rng.gen_range(0..int_edges.len())]
                } else {
                    rng.gen()
                }
            });
            if op.starts_with("extract") || op.starts_with("insert") {
                // Offsets and counts past 32 too, which WGSL clamps.
                let k = if op.starts_with("extract") { 1 } else { 2 };
                v[k] %= 40;
                v[k + 1] %= 40;
            }
            if op.starts_with("unpack") {
                v[3] %= 4;
            }
            cases.push((op, v));
        }
    }
    for op in float_ops {
        for _ in 0..1500 {
            let v: [u32; 4] = std::array::from_fn(|_| match rng.gen_range(0..4) {
                0 => float_edges[rng.gen_range(0..float_edges.len())].to_bits(),
                1 => f32::from_bits(rng.gen()).to_bits(),
                _ => rng.gen_range(-3.0f32..3.0).to_bits(),
            });
            let v = if op == "ldexp_f32" {
                [v[0], rng.gen_range(-300i32..300) as u32, 0, 0]
            } else {
                v
            };
            cases.push((op, v));
        }
    }
    let results = run4(&exe, &cases);
    for ((op, v), got) in cases.iter().zip(results) {
        let want = wgsl_oracle(op, *v);
        let floats = float_ops.contains(op) && !op.starts_with("pack") && *op != "frexp_exp_f32"
            || op.starts_with("unpack") && !op.contains("x_");
        let ok = if floats {
            same_f32(u64::from(got), f32::from_bits(want))
        } else {
            got == want
        };
        assert!(ok, "{op}({v:x?}): CUDA prelude {got:#x}, oracle {want:#x}");
    }
    let _ = std::fs::remove_dir_all(exe.parent().unwrap());
}
