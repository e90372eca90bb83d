//! Every built-in kernel, and a kernel with atomics, emitted for every backend:
//! - SPIR-V for every schedule it can run with passes `spirv-val` (Debian's `spirv-tools`),
//!   and declares the schedule's workgroup size, both as `forge emit` writes it (any
//!   Vulkan) and as the runtime writes it for a Vulkan 1.3 device with subgroups;
//! - GLSL for every schedule passes `glslangValidator` as a compute shader (`glslang-tools`);
//! - MSL and HLSL for the declared schedule are snapshot-tested (review a change with
//!   `INSTA_UPDATE=always cargo test --test backends` and `git diff tests/snapshots/`), and
//!   for every schedule they bind each buffer where the kernel's layout says;
//! - the SPIR-V path runs the atomic kernel on the GPU and certifies it.
//!
//! `forge emit` itself is tested with the CLI, in `forge-cli/tests/cli.rs`.
//!
//! The validators are required: a missing one fails the test with how to install it.
//! `bash .ci/setup` installs both.

use naga::valid::Capabilities;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::emit::{emit, to_spirv, Emitted, SpirvProfile, Target};
use wgsl_forge::prelude::*;
use wgsl_forge::Access;
use wgsl_forge::Backend;

mod example_kernels;

/// `bins[b]` += the number of values `v` with `v % 64 == b`: atomics in workgroup memory and
/// in a storage buffer, and a barrier between them. No built-in kernel uses atomics.
#[forge_kernel(workgroup = 128, threads = n, reference = histogram_reference,
    tune(workgroup = [128, 256]), case(n = 1), case(n = 127), case(n = 5000))]
pub fn backend_histogram(values: &[u32; n], bins: &mut [Atomic<u32>; 64], n: u32) {
    #[shared]
    let mut local = [0u32; 64];
    let i = global_index();
    if i < n {
        local[values[i] % 64].fetch_add(1);
    }
    workgroup_barrier();
    let lid = local_index();
    if lid < 64 {
        let c = local[lid].load();
        if c > 0 {
            bins[lid].fetch_add(c);
        }
    }
}

/// The reference: a sequential count.
pub fn histogram_reference(values: &[u32], bins: &mut [u32], _n: u32) -> Result<(), ForgeError> {
    for v in values {
        bins[(*v % 64) as usize] += 1;
    }
    Ok(())
}

/// The registered kernels and the atomic one, less the `f16` ones (`gemm_f16` and its
/// fallback): naga's GLSL writer has no `f16`, its HLSL of `f16` storage does not compile,
/// and cooperative matrices are SPIR-V only, for a device that enables them. They run
/// through WGSL: `tests/builtins_gemm_f16.rs`, `tests/language_coop.rs`, the H200 runs.
fn kernels() -> Vec<&'static dyn Kernel> {
    let mut all = wgsl_forge::kernels::registry::builtin();
    all.retain(|k| !k.features().contains(&Feature::F16));
    all.push(&backend_histogram::Kernel);
    all
}

/// The declared schedule and every point of the tuning space, without repeats.
fn schedules(kernel: &dyn Kernel) -> Vec<Schedule> {
    let mut out = vec![kernel.default_schedule()];
    for s in kernel.tune_space().candidates() {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A fresh directory for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("forge-backends-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Runs `tool args...`, failing with how to install it when it is missing.
fn run_tool(tool: &str, package: &str, args: &[&str]) -> Output {
    match Command::new(tool).args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "`{tool}` is not installed; it validates what `forge emit` writes. Install Debian's \
             `{package}` (`apt-get install {package}`, or run `bash .ci/setup`)"
        ),
        Err(e) => panic!("cannot run `{tool}`: {e}"),
    }
}

/// The emitted text, or a failure that names the kernel, schedule and target.
fn text(kernel: &dyn Kernel, schedule: &Schedule, target: Target) -> String {
    match emit(kernel, schedule, target) {
        Ok(Emitted::Text(text)) => text,
        Ok(Emitted::Spirv(_)) => panic!("{target} is text"),
        Err(e) => panic!("{} ({schedule}) to {target}: {e}", kernel.name()),
    }
}

/// The `LocalSize` execution mode of a SPIR-V module's entry point, read from its words:
/// instructions follow the 5-word header, each `(word count << 16) | opcode`.
fn spirv_local_size(words: &[u32]) -> Option<[u32; 3]> {
    const OP_EXECUTION_MODE: u32 = 16;
    const LOCAL_SIZE: u32 = 17;
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 {
            return None;
        }
        let op = &words[at..(at + count).min(words.len())];
        if words[at] & 0xffff == OP_EXECUTION_MODE && op.len() == 6 && op[2] == LOCAL_SIZE {
            return Some([op[3], op[4], op[5]]);
        }
        at += count;
    }
    None
}

/// Writes `words` and runs `spirv-val` for `env` on them; the error is its report.
fn spirv_val(path: &Path, words: Vec<u32>, env: &str) -> Result<(), String> {
    Emitted::Spirv(words).write_to(path).expect("write SPIR-V");
    let out = run_tool(
        "spirv-val",
        "spirv-tools",
        &["--target-env", env, &path_arg(path)],
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn spirv_passes_spirv_val_for_every_schedule() {
    let dir = scratch("spirv");
    // What the runtime writes for a Vulkan 1.3 device with f16 and subgroups: SPIR-V 1.3,
    // workgroup memory zeroed by the driver.
    let device = SpirvProfile {
        capabilities: Capabilities::SHADER_FLOAT16
            | Capabilities::SUBGROUP
            | Capabilities::SUBGROUP_BARRIER,
        native_workgroup_zeroing: true,
    };
    let mut checked = 0;
    let mut failures = Vec::new();
    for kernel in kernels() {
        for schedule in schedules(kernel) {
            let file = dir.join(format!(
                "{}_wg{}_items{}_vec{}.spv",
                kernel.name(),
                schedule.workgroup,
                schedule.items,
                schedule.vector
            ));
            let words = match emit(kernel, &schedule, Target::Spirv) {
                Ok(Emitted::Spirv(words)) => words,
                other => panic!("{} ({schedule}) to SPIR-V: {other:?}", kernel.name()),
            };
            let runtime_words = to_spirv(&kernel.wgsl(&schedule), &device)
                .unwrap_or_else(|e| panic!("{} ({schedule}): {e}", kernel.name()));
            assert_ne!(words, runtime_words, "the profiles differ");
            // Subgroup operations need SPIR-V 1.3, so Vulkan 1.1.
            let portable = if kernel.features().contains(&Feature::Subgroups) {
                "vulkan1.1"
            } else {
                "vulkan1.0"
            };
            for (words, env) in [(words, portable), (runtime_words, "vulkan1.3")] {
                assert_eq!(
                    spirv_local_size(&words),
                    Some([schedule.workgroup, 1, 1]),
                    "{} ({schedule}): the module's workgroup size is the schedule's",
                    kernel.name()
                );
                if let Err(report) = spirv_val(&file, words, env) {
                    failures.push(format!("{} ({schedule}, {env}): {report}", kernel.name()));
                }
                checked += 1;
            }
        }
    }
    // The harness sees a rejection: a module cut short is invalid.
    let axpy: &dyn Kernel = &wgsl_forge::kernels::axpy::axpy::Kernel;
    let Ok(Emitted::Spirv(mut words)) = emit(axpy, &axpy.default_schedule(), Target::Spirv) else {
        panic!("axpy to SPIR-V")
    };
    words.truncate(words.len() - 3);
    assert!(spirv_val(&dir.join("cut.spv"), words, "vulkan1.0").is_err());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(checked >= 100, "only {checked} modules checked");
    assert!(
        failures.is_empty(),
        "spirv-val rejected:\n{}",
        failures.join("\n")
    );
}

#[test]
fn glsl_passes_glslang_for_every_schedule() {
    let dir = scratch("glsl");
    let mut failures = Vec::new();
    for kernel in kernels() {
        for schedule in schedules(kernel) {
            let glsl = text(kernel, &schedule, Target::Glsl);
            assert!(glsl.starts_with("#version 450 core"), "{}", kernel.name());
            let local_size = format!("layout(local_size_x = {}, ", schedule.workgroup);
            assert!(
                glsl.contains(&local_size),
                "{} ({schedule}): no `{local_size}`",
                kernel.name()
            );
            let path = dir.join(format!("{}.comp", kernel.name()));
            std::fs::write(&path, &glsl).expect("write GLSL");
            let out = run_tool(
                "glslangValidator",
                "glslang-tools",
                &["-S", "comp", &path.to_string_lossy()],
            );
            if !out.status.success() {
                failures.push(format!(
                    "{} ({schedule}): {}{}",
                    kernel.name(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    // The harness sees a rejection: an undeclared name is an error.
    let bad = dir.join("bad.comp");
    std::fs::write(
        &bad,
        "#version 450 core\nlayout(local_size_x = 1) in;\nvoid main() { x = 1; }\n",
    )
    .expect("write GLSL");
    let out = run_tool(
        "glslangValidator",
        "glslang-tools",
        &["-S", "comp", &path_arg(&bad)],
    );
    assert!(
        !out.status.success(),
        "glslangValidator accepted an undeclared name"
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "glslangValidator rejected:\n{}",
        failures.join("\n")
    );
}

/// Where MSL and HLSL put each binding: checked against the kernel's layout for every
/// schedule, so a wrong binding map fails here and not only as a snapshot diff.
fn check_bindings(kernel: &dyn Kernel, msl: &str, hlsl: &str) {
    let name = kernel.name();
    for b in kernel.layout() {
        let slot = format!("[[buffer({})]]", b.binding);
        let line = msl
            .lines()
            .find(|l| l.contains(&slot))
            .unwrap_or_else(|| panic!("{name}: MSL has no `{slot}` for `{}`", b.name));
        assert_eq!(
            line.contains(" const&"),
            b.access == Access::Read,
            "{name}: MSL binding `{}` is const exactly when read-only: {line}",
            b.name
        );
        let register = match b.access {
            Access::Read => format!(": register(t{})", b.binding),
            Access::ReadWrite | Access::Out => format!(": register(u{})", b.binding),
        };
        assert!(
            hlsl.contains(&register),
            "{name}: HLSL has no `{register}` for `{}`",
            b.name
        );
    }
    if !kernel.scalars().is_empty() {
        let params = kernel.layout().len();
        assert!(
            msl.contains(&format!("constant Params& fg_params [[buffer({params})]]")),
            "{name}: MSL params"
        );
        assert!(
            hlsl.contains(&format!("register(b{params})")),
            "{name}: HLSL params"
        );
    }
    // Every generated kernel folds its grid with `num_workgroups`, which HLSL lacks: it
    // must come from the constant buffer, never from the workgroup id.
    assert!(
        hlsl.contains("_NagaConstants.first_vertex"),
        "{name}: HLSL reads num_workgroups from the constants"
    );
    assert!(
        msl.contains("[[threadgroups_per_grid]]"),
        "{name}: MSL num_workgroups"
    );
}

#[test]
fn msl_and_hlsl_bind_every_buffer_for_every_schedule() {
    for kernel in kernels() {
        for schedule in schedules(kernel) {
            let msl = text(kernel, &schedule, Target::Msl);
            let hlsl = text(kernel, &schedule, Target::Hlsl);
            check_bindings(kernel, &msl, &hlsl);
            assert!(
                msl.contains(&format!(
                    "max_total_threads_per_threadgroup({})",
                    schedule.workgroup
                )),
                "{} ({schedule}): MSL workgroup size",
                kernel.name()
            );
            assert!(
                hlsl.contains(&format!("[numthreads({}, 1, 1)]", schedule.workgroup)),
                "{} ({schedule}): HLSL workgroup size",
                kernel.name()
            );
        }
    }
}

/// One snapshot per kernel and language, at the declared schedule: the other schedules
/// differ only in the constants that the binding test above checks.
#[test]
fn msl_and_hlsl_snapshots() {
    for kernel in kernels() {
        let schedule = kernel.default_schedule();
        let msl = text(kernel, &schedule, Target::Msl);
        let hlsl = text(kernel, &schedule, Target::Hlsl);
        assert!(msl.contains("kernel void main_("), "{}", kernel.name());
        insta::assert_snapshot!(format!("{}_msl", kernel.name()), msl);
        insta::assert_snapshot!(format!("{}_hlsl", kernel.name()), hlsl);
    }
}

/// A runtime on lavapipe whose kernels run through `backend`.
fn runtime_through(backend: Backend) -> ForgeRuntime {
    let rt = ForgeRuntime::builder()
        .capacity(64 << 20)
        .emission(backend)
        .build()
        .unwrap_or_else(|e| panic!("lavapipe runs SPIR-V passthrough; building failed: {e}"));
    assert_eq!(rt.emission(), backend);
    rt
}

/// Runs the histogram over `count` hashed values (each `>> shift`), with bins that start
/// at `first_bin..first_bin + 64`, and compares every bin with a count made here.
fn histogram_matches_a_count(rt: &mut ForgeRuntime, count: u32, shift: u32, first_bin: u32) {
    let values: Vec<u32> = (0..count)
        .map(|i| i.wrapping_mul(2_654_435_761) >> shift)
        .collect();
    let mut bins: Vec<u32> = (first_bin..first_bin + 64).collect();
    let mut want = bins.clone();
    for v in &values {
        want[(v % 64) as usize] += 1;
    }
    rt.backend_histogram(&values, &mut bins, values.len() as u32)
        .unwrap_or_else(|e| panic!("through {}: {e}", rt.emission()));
    assert_eq!(bins, want, "through {}", rt.emission());
}

/// Certifies every built-in and the atomic kernel at its declared schedule; the count.
fn every_kernel_certifies(rt: &mut ForgeRuntime, seed: u64) -> usize {
    let backend = rt.emission();
    let mut certified = 0;
    for kernel in kernels() {
        let name = kernel.name();
        let report = certify(
            rt,
            kernel,
            &kernel.default_schedule(),
            &CertOptions::new(seed),
        )
        .unwrap_or_else(|e| panic!("{name} through {backend}: {e}"));
        assert!(report.passed(), "{name} through {backend}: {report:?}");
        certified += 1;
    }
    certified
}

#[test]
fn atomics_certify_through_spirv() {
    let mut rt = runtime_through(Backend::Spirv);
    for schedule in schedules(&backend_histogram::Kernel) {
        let report = certify(
            &mut rt,
            &backend_histogram::Kernel,
            &schedule,
            &CertOptions::new(7),
        )
        .expect("certification runs");
        assert!(report.passed(), "{schedule}: {report:?}");
    }
    // And directly against a count made here, with every bin's starting value kept.
    histogram_matches_a_count(&mut rt, 20_000, 9, 0);
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn kernels_certify_through_glsl() {
    let mut rt = runtime_through(Backend::Glsl);
    // Every built-in and the atomic kernel: several read workgroup memory they did not
    // write (the histogram's counters), so the driver's zeroing is checked too.
    assert_eq!(every_kernel_certifies(&mut rt, 7), kernels().len());
    histogram_matches_a_count(&mut rt, 9_000, 7, 100);
}

#[test]
fn kernels_certify_through_hlsl() {
    let mut rt = runtime_through(Backend::Hlsl);
    // Every built-in through glslang's HLSL front end: the grid folding reads the
    // workgroup counts from immediates, and naga's zeroing of groupshared arrays (a loop
    // here) is checked by the kernels that read counters they did not write.
    assert_eq!(every_kernel_certifies(&mut rt, 11), kernels().len());
    // The atomic example kernel at an odd size.
    histogram_matches_a_count(&mut rt, 9_001, 5, 7);
}

/// The examples' kernels (`tests/example_kernels`, the very source `cargo run --example`
/// runs) at their declared schedules, through SPIR-V, GLSL and HLSL: what a user writes,
/// not only the built-ins, runs on every backend this machine executes.
#[test]
fn example_kernels_certify_through_spirv_glsl_and_hlsl() {
    for backend in [Backend::Spirv, Backend::Glsl, Backend::Hlsl] {
        let mut rt = runtime_through(backend);
        for kernel in example_kernels::example_kernels() {
            let name = kernel.name();
            assert_eq!(rt.cannot_run(kernel), None, "{name} through {backend}");
            let report = certify(
                &mut rt,
                kernel,
                &kernel.default_schedule(),
                &CertOptions::new(13),
            )
            .unwrap_or_else(|e| panic!("{name} through {backend}: {e}"));
            assert!(report.passed(), "{name} through {backend}: {report:?}");
            assert!(report.cases > 0, "{name} through {backend}: no case ran");
        }
    }
}
