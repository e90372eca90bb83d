//! `debug_print!` end to end on the real adapter (lavapipe in CI): a kernel that prints from
//! some invocations, inside a loop and an `if`, gives the same lines on the GPU and in the
//! oracle, and those equal lines computed here independently; a print buffer that fills
//! drops what is past it and says how many; a kernel that does not print has no print
//! buffer and the WGSL it always had.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgsl_forge::prelude::*;
use wgsl_forge::{Backend, DynArgs, ElemType, HostBuffer, ScalarType, ScalarValue};

fn rt() -> ForgeRuntime {
    // A missing adapter fails the test: GPU tests never skip.
    ForgeRuntime::new(256 << 20, None).expect("a GPU adapter (lavapipe in CI) is required")
}

/// Prints from every `every`-th invocation at each step of a loop, and from those whose
/// `k` is negative; `u32`, `i32`, `f32`, `bool` and vector values, `{}` and `{:?}`.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn chatty(x: &[f32; n], k: &[i32; n], #[out] y: &mut [f32; n], n: u32, every: u32) {
    let i = global_index();
    if i < n {
        let mut acc = 0.0f32;
        for j in 0..3u32 {
            acc += x[i] * (j as f32);
            if i % every == 0 {
                debug_print!("i={} j={} acc={} k={}", i, j, acc, k[i]);
            }
        }
        if k[i] < 0 {
            debug_print!(
                "negative k {} at {:?}, below -5: {}, {{v}} = {:?}",
                k[i],
                acc,
                k[i] < -5,
                Vec2::new(acc, x[i])
            );
        }
        y[i] = acc;
    }
}

/// The lines `chatty` prints, written from the format strings and Rust's formatting, not
/// from the oracle: by invocation, then in program order.
fn chatty_lines(x: &[f32], k: &[i32], every: u32) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..x.len() {
        let mut acc = 0.0f32;
        for j in 0..3u32 {
            acc += x[i] * j as f32;
            if i as u32 % every == 0 {
                out.push(format!("chatty[{i}]: i={i} j={j} acc={acc} k={}", k[i]));
            }
        }
        if k[i] < 0 {
            out.push(format!(
                "chatty[{i}]: negative k {} at {acc:?}, below -5: {}, {{v}} = {:?}",
                k[i],
                k[i] < -5,
                [acc, x[i]]
            ));
        }
    }
    out
}

/// Inputs whose sums are exact in `f32` (quarters of small integers), so that fused and
/// unfused arithmetic print the same digits.
fn inputs(n: usize, seed: u64) -> (Vec<f32>, Vec<i32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = (0..n)
        .map(|_| rng.gen_range(-400i32..400) as f32 * 0.25)
        .collect();
    let k = (0..n).map(|_| rng.gen_range(-12i32..30)).collect();
    (x, k)
}

#[test]
fn gpu_prints_equal_the_oracle_and_an_independent_formatting() {
    // WGSL, and SPIR-V by passthrough (naga's translation of the same module).
    for backend in [Backend::Wgsl, Backend::Spirv] {
        let mut rt = ForgeRuntime::builder()
            .emission(backend)
            .build()
            .expect("a GPU adapter (lavapipe in CI) is required");
        prints_match(&mut rt);
    }
}

fn prints_match(rt: &mut ForgeRuntime) {
    // Several workgroups, a partial last one, and a single invocation.
    for (n, every, seed) in [(200usize, 7u32, 1u64), (1, 1, 2), (130, 1, 3)] {
        let (x, k) = inputs(n, seed);
        let y = chatty::run(rt, &x, &k, n as u32, every).unwrap();
        let gpu = rt.take_prints();
        let (y_cpu, cpu) = chatty::cpu_prints(&x, &k, n as u32, every).unwrap();
        assert_eq!(y, y_cpu);
        let expected = chatty_lines(&x, &k, every);
        assert!(!expected.is_empty());
        assert_eq!(gpu, cpu, "n={n}: the GPU's lines and the oracle's differ");
        assert_eq!(gpu, expected, "n={n}: the lines differ from the formats");
        // Taken: the next take has nothing.
        assert!(rt.take_prints().is_empty());
    }
}

#[test]
fn lines_accumulate_in_launch_order_and_tensor_launches_print_at_take() {
    let mut rt = rt();
    let (x1, k1) = inputs(70, 11);
    let (x2, k2) = inputs(90, 12);
    chatty::run(&mut rt, &x1, &k1, 70, 5).unwrap();
    rt.chatty(&x2, &k2, 90, 9).unwrap();
    let mut expected = chatty_lines(&x1, &k1, 5);
    expected.extend(chatty_lines(&x2, &k2, 9));
    assert_eq!(rt.take_prints(), expected);

    // Device-resident tensors: the dispatch is only recorded, and its print buffer is read
    // back at the take.
    let (tx, tk) = (rt.upload(&x1).unwrap(), rt.upload(&k1).unwrap());
    let ty = rt.zeros::<f32>(70).unwrap();
    chatty::launch(&mut rt, &tx, &tk, &ty, 70, 3).unwrap();
    assert_eq!(rt.take_prints(), chatty_lines(&x1, &k1, 3));
    assert_eq!(
        rt.download(&ty).unwrap(),
        chatty::cpu(&x1, &k1, 70, 3).unwrap()
    );
}

#[test]
fn the_oracle_prints_through_the_dyn_interface_too() {
    let (x, k) = inputs(50, 21);
    let kernel: &dyn wgsl_forge::Kernel = &chatty::Kernel;
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(50), ScalarValue::U32(4)],
        buffers: vec![
            Some(HostBuffer::from_slice(
                ElemType::scalar(ScalarType::F32),
                &x,
            )),
            Some(HostBuffer::from_slice(
                ElemType::scalar(ScalarType::I32),
                &k,
            )),
            None,
        ],
    };
    let (out, lines) =
        wgsl_forge::oracle::prints::capture(|| kernel.cpu_dyn(&kernel.default_schedule(), &args));
    out.unwrap();
    assert_eq!(lines, chatty_lines(&x, &k, 4));
    // The CUDA emitter has no print buffer: it says so rather than drop the prints.
    let e = kernel.cuda(&kernel.default_schedule()).unwrap_err();
    assert!(e.to_string().contains("debug_print!"), "{e}");
    let table = kernel.prints().expect("chatty prints");
    // After `y` (binding 2) and `Params` (binding 3).
    assert_eq!((table.binding, table.formats.len()), (4, 2));
    assert_eq!(
        table.formats[1].text,
        "negative k {} at {:?}, below -5: {}, {{v}} = {:?}"
    );
}

/// Two prints per invocation, every invocation.
#[forge_kernel(workgroup = 32, threads = n, case(n = 100))]
pub fn flood(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        debug_print!("first {}", i);
        y[i] = i * 3;
        debug_print!("second {}", y[i]);
    }
}

#[test]
fn a_full_print_buffer_drops_the_rest_and_says_how_many() {
    let mut rt = ForgeRuntime::builder()
        .print_capacity(50)
        .build()
        .expect("a GPU adapter (lavapipe in CI) is required");
    let n = 100u32;
    let y = flood::run(&mut rt, n).unwrap();
    assert_eq!(y, (0..n).map(|i| i * 3).collect::<Vec<_>>());
    let lines = rt.take_prints();
    assert_eq!(lines.len(), 51);
    assert_eq!(
        lines[50],
        wgsl_forge::prints::dropped_line("flood", 150, 50)
    );
    // What was kept is real, and sorted: each invocation's first print before its second.
    let all: Vec<String> = (0..n)
        .flat_map(|i| {
            [
                format!("flood[{i}]: first {i}"),
                format!("flood[{i}]: second {}", i * 3),
            ]
        })
        .collect();
    let mut at = 0;
    for l in &lines[..50] {
        let found = all[at..].iter().position(|a| a == l);
        assert!(found.is_some(), "{l} is not a line of flood, in order");
        at += found.unwrap() + 1;
    }
    // The oracle has no buffer to fill: it prints every line.
    let (_, cpu) = flood::cpu_prints(n).unwrap();
    assert_eq!(cpu, all);
    // With room for every record, nothing is dropped.
    let mut rt = ForgeRuntime::builder().print_capacity(200).build().unwrap();
    flood::run(&mut rt, n).unwrap();
    assert_eq!(rt.take_prints(), all);
}

/// The same body as `quiet_twin` below, with no print.
#[forge_kernel(workgroup = 64, threads = n)]
pub fn quiet(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + 1.0;
    }
}

#[forge_kernel(workgroup = 64, threads = n)]
pub fn loud(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i] + 1.0;
        debug_print!("{}", y[i]);
    }
}

#[test]
fn a_kernel_without_prints_has_no_print_buffer() {
    let kernel: &dyn wgsl_forge::Kernel = &quiet::Kernel;
    assert!(kernel.prints().is_none());
    assert!(!quiet::WGSL.contains("fg_prints"));
    // The printing twin: the same layout before it, and the buffer after `Params`.
    assert_eq!(quiet::LAYOUT, loud::LAYOUT);
    assert!(loud::WGSL.contains("@group(0) @binding(3) var<storage, read_write> fg_prints"));
    assert_eq!(loud::PRINTS.binding, 3);
    // The built-ins print nothing and bind nothing more.
    for k in wgsl_forge::kernels::registry::builtin() {
        assert!(k.prints().is_none(), "{} prints", k.name());
        assert!(!k.wgsl(&k.default_schedule()).contains("fg_prints"));
    }
    let mut rt = rt();
    let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
    assert_eq!(
        quiet::run(&mut rt, &x, 100).unwrap(),
        loud::run(&mut rt, &x, 100).unwrap()
    );
    assert_eq!(rt.take_prints().len(), 100);
}

#[test]
fn diff_prints_compares_a_case_line_by_line() {
    use wgsl_forge::certify::{diff_prints, CertOptions};
    let mut rt = rt();
    let opts = CertOptions::new(7);
    // Lines the runtime held before stay for the program.
    loud::run(&mut rt, &[1.0, 2.0], 2).unwrap();
    let diff = diff_prints(&mut rt, &chatty::Kernel, &chatty::DEFAULT_SCHEDULE, &opts).unwrap();
    assert_eq!(diff.first_difference(), None, "{diff:?}");
    assert!(!diff.gpu.is_empty());
    assert_eq!(rt.take_prints(), ["loud[0]: 2", "loud[1]: 3"]);

    // A buffer too small for the case: the GPU's lines end with the dropped count, which
    // the oracle has not, so they differ.
    let mut small = ForgeRuntime::builder().print_capacity(3).build().unwrap();
    let diff = diff_prints(&mut small, &flood::Kernel, &flood::DEFAULT_SCHEDULE, &opts).unwrap();
    let (at, gpu, oracle) = diff.first_difference().expect("they differ");
    assert!(at <= 3 && oracle.is_some(), "{diff:?}");
    assert!(gpu.is_some());
    assert!(diff.gpu.last().unwrap().contains("dropped"));

    // A kernel that does not print has nothing to compare.
    let e = diff_prints(&mut rt, &quiet::Kernel, &quiet::DEFAULT_SCHEDULE, &opts).unwrap_err();
    assert!(e.to_string().contains("has no `debug_print!`"), "{e}");
}

/// `FORGE_PRINT=stderr` writes each line to stderr as it is formatted, the GPU's and the
/// oracle's. The test runs itself again with the variable set, so that no other test sees
/// it, and reads what that run wrote.
#[test]
fn forge_print_stderr_echoes_every_line() {
    if std::env::var_os("FORGE_PRINTS_TEST_CHILD").is_some() {
        let mut rt = rt();
        loud::run(&mut rt, &[1.0, 2.0], 2).unwrap();
        let (_, lines) = loud::cpu_prints(&[5.0], 1).unwrap();
        assert_eq!(lines, ["loud[0]: 6"]);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "forge_print_stderr_echoes_every_line",
            "--nocapture",
        ])
        .env("FORGE_PRINTS_TEST_CHILD", "1")
        .env("FORGE_PRINT", "stderr")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("loud[0]: 2\nloud[1]: 3\nloud[0]: 6\n"),
        "{stderr}"
    );
}

/// A generic kernel prints through each instance, with the instance's name.
#[forge_kernel(threads = n, types(T = [f32, u32]))]
pub fn echo<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
        debug_print!("{} -> {:?}", i, x[i]);
    }
}

#[test]
fn generic_instances_print_their_own_types() {
    let mut rt = rt();
    echo::run(&mut rt, &[1.5f32, -2.0], 2).unwrap();
    echo::run(&mut rt, &[7u32, 4_000_000_000], 2).unwrap();
    assert_eq!(
        rt.take_prints(),
        [
            "echo<f32>[0]: 0 -> 1.5",
            "echo<f32>[1]: 1 -> -2.0",
            "echo<u32>[0]: 0 -> 7",
            "echo<u32>[1]: 1 -> 4000000000",
        ]
    );
    let (_, lines) = echo::for_u32::cpu_prints(&[9u32], 1).unwrap();
    assert_eq!(lines, ["echo<u32>[0]: 0 -> 9"]);
}

/// A print in an `#[unroll]` loop: one copy of the print per value of the loop variable.
#[forge_kernel(threads = n)]
pub fn unrolled(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    if i < n {
        #[unroll]
        for u in 0..3 {
            debug_print!("u+i={}", u + i);
        }
        y[i] = i;
    }
}

#[test]
fn prints_in_unrolled_loops_keep_their_order() {
    let mut rt = rt();
    unrolled::run(&mut rt, 3).unwrap();
    let expected: Vec<String> = (0..3u32)
        .flat_map(|i| (0..3u32).map(move |u| format!("unrolled[{i}]: u+i={}", u + i)))
        .collect();
    assert_eq!(rt.take_prints(), expected);
    assert_eq!(unrolled::cpu_prints(3).unwrap().1, expected);
}

/// A kernel with no scalar parameter at all (its lengths are literals), so it has no params
/// uniform: its print buffer keeps the binding number after the uniform's, leaving a gap.
#[forge_kernel(workgroup = 32, threads = 40)]
pub fn fixed_len(x: &[f32; 40], #[out] y: &mut [f32; 40]) {
    let i = global_index();
    if i < 40 {
        y[i] = x[i] * 2.0;
        if i % 9 == 0 {
            debug_print!("fixed {} {}", i, y[i]);
        }
    }
}

#[test]
fn a_kernel_without_scalars_prints_through_every_emission() {
    let x: Vec<f32> = (0..40).map(|i| i as f32 * 0.5 - 3.0).collect();
    let want_y: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    let want: Vec<String> = (0..40)
        .filter(|i| i % 9 == 0)
        .map(|i| format!("fixed_len[{i}]: fixed {i} {}", x[i] * 2.0))
        .collect();
    for backend in [Backend::Wgsl, Backend::Spirv, Backend::Glsl, Backend::Hlsl] {
        // SPIR-V, GLSL and HLSL go through passthrough, bound as wgpu's Vulkan backend
        // numbers the layout: by rank, so the gap before the print buffer must not matter.
        let mut rt = ForgeRuntime::builder()
            .emission(backend)
            .build()
            .unwrap_or_else(|e| panic!("{backend:?}: a GPU adapter (lavapipe in CI): {e}"));
        let y = fixed_len::run(&mut rt, &x).unwrap();
        assert_eq!(y, want_y, "{backend:?}: the output");
        assert_eq!(rt.take_prints(), want, "{backend:?}: the lines");
    }
}
