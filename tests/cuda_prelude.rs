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
    let dir = std::env::temp_dir().join(format!("forge-cuda-prelude-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("prelude_test.cpp");
    let exe = dir.join("prelude_test");
    std::fs::write(
        &src,
        format!("{SHIMS}\n#include <string>\n{}\n{MAIN}", prelude()),
    )
    .unwrap();
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
