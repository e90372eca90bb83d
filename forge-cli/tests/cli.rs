//! The `forge` binary, run as a user runs it, on the real adapter (lavapipe in CI):
//! - `forge emit` writes exactly what the library emits (to files, atomically, and to
//!   stdout), and rejects bad input with the right exit status and message;
//! - 8 `forge tune` processes at once on one cache leave one whole manifest;
//! - `forge tune --plot` writes a whole SVG atomically.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wgsl_forge::emit::{emit, Emitted, Target};
use wgsl_forge::manifest::TuningManifest;
use wgsl_forge::prelude::*;

/// A fresh empty directory under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("forge-cli-{tag}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn runtime(cache: Option<PathBuf>) -> ForgeRuntime {
    ForgeRuntime::new(256 << 20, cache).unwrap_or_else(|e| {
        panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}")
    })
}

fn read_manifest(path: &Path) -> TuningManifest {
    let text = std::fs::read_to_string(path).expect("manifest written");
    serde_json::from_str(&text).expect("manifest parses")
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

fn forge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(args)
        .env_remove("FORGE_BACKEND")
        .output()
        .expect("run the forge binary")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[test]
fn forge_emit_writes_files_and_stdout() {
    let dir = temp_dir("emit");
    let gemv: &dyn Kernel = &wgsl_forge::kernels::gemv::gemv::Kernel;

    // SPIR-V to a file: the library's words, little-endian, and valid.
    let spv = dir.join("gemv.spv");
    let out = forge(&["emit", "gemv", "--backend", "spirv", "-o", &path_arg(&spv)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "nothing on stdout with -o");
    let want = emit(gemv, &gemv.default_schedule(), Target::Spirv).expect("emit");
    assert_eq!(std::fs::read(&spv).expect("the file"), want.to_bytes());
    let val = run_tool("spirv-val", "spirv-tools", &[&path_arg(&spv)]);
    assert!(
        val.status.success(),
        "{}",
        String::from_utf8_lossy(&val.stderr)
    );

    // SPIR-V to stdout when stdout is not a terminal (here, a pipe).
    let out = forge(&["emit", "gemv", "--backend", "SPIRV"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, want.to_bytes());

    // Text to stdout, for a schedule given in part.
    let out = forge(&[
        "emit",
        "gemv",
        "--backend",
        "msl",
        "--schedule",
        "wg=64,items=2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let schedule = Schedule::new(64, 2, 1);
    assert_eq!(
        String::from_utf8(out.stdout).expect("UTF-8"),
        text(gemv, &schedule, Target::Msl)
    );

    // The schedule as `forge list` prints it, and HLSL and GLSL to files.
    for (backend, file) in [("hlsl", "gemv.hlsl"), ("glsl", "gemv.comp")] {
        let path = dir.join(file);
        let out = forge(&[
            "emit",
            "gemv",
            "--backend",
            backend,
            "--schedule",
            "wg=128 items=4 vec=1",
            "-o",
            &path_arg(&path),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let schedule = Schedule::new(128, 4, 1);
        let target = Target::parse(backend).expect("a target");
        assert_eq!(
            std::fs::read_to_string(&path).expect("the file"),
            text(gemv, &schedule, target)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn forge_emit_writes_cuda_and_ptx() {
    let gemv: &dyn Kernel = &wgsl_forge::kernels::gemv::gemv::Kernel;
    let schedule = Schedule::new(128, 2, 1);
    let out = forge(&[
        "emit",
        "gemv",
        "--backend",
        "cuda",
        "--schedule",
        "wg=128,items=2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cuda = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(cuda, gemv.cuda(&schedule).expect("gemv has CUDA"));
    assert!(
        cuda.contains("static constexpr unsigned WG = 128u;"),
        "{cuda}"
    );

    // `--arch` belongs to PTX.
    let out = forge(&["emit", "gemv", "--backend", "cuda", "--arch", "compute_80"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`--arch` is for `--backend ptx`"),
        "{}",
        stderr(&out)
    );

    let out = forge(&["emit", "gemv", "--backend", "ptx", "--arch", "compute_80"]);
    if cfg!(feature = "cuda") {
        // NVRTC's PTX for the architecture asked for (CI puts libnvrtc on the path).
        assert!(out.status.success(), "{}", stderr(&out));
        let ptx = String::from_utf8(out.stdout).expect("UTF-8");
        assert!(ptx.contains(".target sm_80"), "{ptx}");
        assert!(ptx.contains(".entry fg_main"), "{ptx}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains("`cuda` feature"), "{}", stderr(&out));
    }
}

#[test]
fn forge_emit_browser_adds_the_subgroups_directive_only_where_used() {
    // A kernel with subgroups: the browser's WGSL is the native one after the directive
    // Tint requires and naga 30 does not implement.
    let native = forge(&["emit", "ternary_gemv_w2a8", "--backend", "wgsl"]);
    let browser = forge(&[
        "emit",
        "ternary_gemv_w2a8",
        "--backend",
        "wgsl",
        "--browser",
    ]);
    assert!(
        native.status.success() && browser.status.success(),
        "{}",
        stderr(&browser)
    );
    let (native, browser) = (
        String::from_utf8(native.stdout).unwrap(),
        String::from_utf8(browser.stdout).unwrap(),
    );
    assert!(native.contains("subgroupAdd(") && !native.contains("enable subgroups;"));
    assert_eq!(browser, format!("enable subgroups;\n{native}"));

    // A kernel without: the same text.
    let native = forge(&["emit", "gemv", "--backend", "wgsl"]);
    let browser = forge(&["emit", "gemv", "--backend", "wgsl", "--browser"]);
    assert!(browser.status.success(), "{}", stderr(&browser));
    assert_eq!(native.stdout, browser.stdout);

    // `--browser` means WGSL: with another backend it is bad usage.
    let out = forge(&["emit", "gemv", "--backend", "spirv", "--browser"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`--browser` is for `--backend wgsl`, not `spirv`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn forge_emit_guard_loops_shows_what_lavapipe_runs() {
    // gemv loops over its row: guarded, each loop counted in a hidden atomic buffer at the
    // first free binding (gemv's a, x, y and `Params` take 0..3), in its workgroup's slot.
    let plain = forge(&["emit", "gemv", "--backend", "wgsl"]);
    let guarded = forge(&["emit", "gemv", "--backend", "wgsl", "--guard-loops"]);
    assert!(guarded.status.success(), "{}", stderr(&guarded));
    let (plain, guarded) = (
        String::from_utf8(plain.stdout).unwrap(),
        String::from_utf8(guarded.stdout).unwrap(),
    );
    assert!(!plain.contains("fg_loop_guard"));
    assert!(
        guarded.contains("@group(0) @binding(4) \nvar<storage, read_write> fg_loop_guard: array<atomic<u32>, 256>;"),
        "{guarded}"
    );
    let adds = guarded.matches("]), 1u);").count();
    let subs = guarded.matches("]), 4294967295u);").count();
    assert!(adds >= 1 && subs >= adds, "{guarded}");
    // Every translated form carries it (naga renames the buffer there, so its atomic
    // operations are what shows); SPIR-V is checked by spirv-val in tests/backends.rs.
    for (backend, atomic) in [
        ("glsl", "atomicAdd("),
        ("hlsl", "InterlockedAdd("),
        ("msl", "atomic_fetch_add_explicit("),
    ] {
        let plain = forge(&["emit", "gemv", "--backend", backend]);
        let out = forge(&["emit", "gemv", "--backend", backend, "--guard-loops"]);
        assert!(out.status.success(), "{backend}: {}", stderr(&out));
        let (plain, out) = (
            String::from_utf8_lossy(&plain.stdout),
            String::from_utf8_lossy(&out.stdout),
        );
        assert!(
            !plain.contains(atomic) && out.contains(atomic),
            "{backend}: {out}"
        );
    }
    // CUDA has no such limit: bad usage, said.
    let out = forge(&["emit", "gemv", "--backend", "cuda", "--guard-loops"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("not `cuda`"), "{}", stderr(&out));
    let out = forge(&[
        "emit",
        "gemv",
        "--backend",
        "wgsl",
        "--guard-loops",
        "--browser",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn forge_list_schedules_are_what_emit_takes() {
    let out = forge(&["list", "--schedules"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let mut want = Vec::new();
    for k in wgsl_forge::kernels::registry::builtin() {
        let declared = k.default_schedule();
        want.push((k.name().to_string(), declared));
        for s in k.tune_space().candidates() {
            if s != declared {
                want.push((k.name().to_string(), s));
            }
        }
    }
    let got: Vec<(String, Schedule)> = text
        .lines()
        .map(|line| {
            let (name, schedule) = line.split_once('\t').expect("name, tab, schedule");
            let k = wgsl_forge::kernels::registry::builtin()
                .into_iter()
                .find(|k| k.name() == name)
                .expect("a built-in");
            let s = k
                .default_schedule()
                .with_settings(schedule)
                .expect("parses");
            (name.to_string(), s)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn forge_emit_rejects_bad_input() {
    // An unknown backend: usage error, every valid name listed, nothing written.
    let dir = temp_dir("emit-bad");
    let path = dir.join("out");
    let out = forge(&["emit", "gemv", "--backend", "metal", "-o", &path_arg(&path)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "unknown backend `metal`; valid backends are: wgsl, spirv, msl, hlsl, glsl, cuda, ptx"
        ),
        "{}",
        stderr(&out)
    );
    assert!(!path.exists());

    // No backend at all.
    let out = forge(&["emit", "gemv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--backend"), "{}", stderr(&out));

    // A schedule outside the tuning space, and one that does not parse: bad usage.
    let out = forge(&["emit", "gemv", "--backend", "glsl", "--schedule", "wg=96"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tuning space"), "{}", stderr(&out));
    let out = forge(&[
        "emit",
        "gemv",
        "--backend",
        "glsl",
        "--schedule",
        "threads=4",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown setting `threads`"),
        "{}",
        stderr(&out)
    );

    // An unknown kernel.
    let out = forge(&["emit", "nope", "--backend", "glsl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown kernel `nope`"),
        "{}",
        stderr(&out)
    );

    // The runtime's backend: FORGE_BACKEND and --backend alike, before any adapter is
    // opened. A name that can only be emitted says so.
    let out = Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(["certify", "axpy"])
        .env("FORGE_BACKEND", "vulkan")
        .output()
        .expect("run forge");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown backend `vulkan`; valid backends are: wgsl, spirv"),
        "{}",
        stderr(&out)
    );
    let out = forge(&["--backend", "msl", "certify", "axpy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("backend `msl` can be emitted"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `forge certify --diff-prints` on kernels without `debug_print!` says so and compares
/// nothing (the line-by-line comparison of a printing kernel is tested in tests/prints.rs,
/// with kernels the CLI does not register).
#[test]
fn diff_prints_on_kernels_that_do_not_print() {
    let out = forge(&["certify", "--diff-prints", "axpy", "gemv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, "axpy has no debug_print!\ngemv has no debug_print!\n");
    // It replaces certification: `--json` and `--all-schedules` do not apply.
    let out = forge(&["certify", "--diff-prints", "--json", "axpy"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The same through the CLI: 8 `forge tune` processes at once on one cache, half of them
/// on another problem size, leave one whole manifest that this runtime trusts, with both
/// sizes' buckets.
#[test]
fn concurrent_processes_leave_every_file_parseable() {
    let cache = temp_dir("processes");
    let children: Vec<_> = (0..8)
        .map(|i| {
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_forge"));
            cmd.arg("--cache-dir").arg(&cache).args(["tune", "axpy"]);
            if i % 2 == 1 {
                cmd.args(["--problem", "a=0.5,n=70000"]);
            }
            cmd.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("forge starts")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("forge ran").success());
    }
    let rt = runtime(Some(cache.clone()));
    let dir = cache.join(rt.topology_hash());
    // The driver's pipeline cache lives beside the manifests too (each process replaced it
    // atomically); it is not a manifest.
    let pipelines = rt
        .pipeline_cache_path()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| Some(n) != pipelines.as_ref())
        .collect();
    let axpy: &dyn Kernel = &wgsl_forge::kernels::axpy::axpy::Kernel;
    let file = format!(
        "axpy-{}.json",
        &wgsl_forge::manifest::kernel_hash(axpy)[..12]
    );
    // The merge lock's file stays (an OS lock: removing it while held would let a second
    // tuner lock a new file), hidden beside the manifest.
    let lock = format!(".{}.lock", file.trim_end_matches(".json"));
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        vec![lock, file.clone()],
        "no temporary file is left behind"
    );
    let m = read_manifest(&dir.join(&file));
    assert!(m.winner().is_some());
    // Merges happen under the cache's lock: neither size's bucket is lost to the other.
    for threads in [1000, 70000] {
        let bucket = wgsl_forge::manifest::bucket_of(threads);
        assert!(
            m.bucket(bucket).is_some(),
            "the bucket of n = {threads} was dropped"
        );
    }
    assert_eq!(
        rt.tuned_schedule(&wgsl_forge::kernels::axpy::axpy::Kernel),
        Some(Schedule::with_workgroup(64))
    );
}

/// `forge tune --plot`: the SVG names every candidate of the tuning space (nine for gemv,
/// one for axpy, whose single row once went unlabelled), is replaced whole when it exists, and a destination that cannot be written is an error
/// that leaves nothing behind.
#[test]
fn tune_plot_writes_a_whole_svg_atomically() {
    let cache = temp_dir("plot");
    let plot = |kernel: &str, problem: &str, space: Vec<Schedule>| {
        let svg = cache.join(format!("{kernel}.svg"));
        std::fs::write(&svg, "an older plot").unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_forge"))
            .arg("--cache-dir")
            .arg(&cache)
            .args(["tune", kernel, "--problem", problem, "--plot"])
            .arg(&svg)
            .output()
            .expect("forge runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(
            text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
            "{text}"
        );
        for schedule in space {
            let label = format!("\n{schedule}\n");
            assert!(
                text.contains(&label),
                "{kernel}: {schedule} missing from the plot"
            );
        }
    };
    let gemv_space = wgsl_forge::kernels::gemv::gemv::Kernel
        .tune_space()
        .candidates();
    assert_eq!(gemv_space.len(), 9);
    plot("gemv", "m=40,n=70", gemv_space);
    plot("axpy", "a=0.5,n=1000", vec![Schedule::with_workgroup(64)]);
    let rt = runtime(Some(cache.clone()));
    let mut names: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.as_str() != rt.topology_hash())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["axpy.svg", "gemv.svg"],
        "no temporary file is left behind"
    );

    let missing = cache.join("no-such-dir").join("axpy.svg");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_forge"))
        .arg("--cache-dir")
        .arg(&cache)
        .args(["tune", "axpy", "--plot"])
        .arg(&missing)
        .output()
        .expect("forge runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-dir"), "{err}");
    assert!(!cache.join("no-such-dir").exists());
}

/// `forge first-call ARGS --json` with the pipeline cache as `pipeline_cache` says (unset:
/// the default), in `cache_dir` if given: its JSON lines, and its stderr. A failed run is a
/// test failure.
fn first_call_json(
    args: &[&str],
    pipeline_cache: Option<&str>,
    cache_dir: Option<&Path>,
) -> (Vec<serde_json::Value>, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_forge"));
    cmd.env_remove("FORGE_BACKEND");
    match pipeline_cache {
        Some(v) => cmd.env("FORGE_PIPELINE_CACHE", v),
        None => cmd.env_remove("FORGE_PIPELINE_CACHE"),
    };
    if let Some(dir) = cache_dir {
        cmd.arg("--cache-dir").arg(dir);
    }
    let out = cmd
        .arg("first-call")
        .args(args)
        .arg("--json")
        .output()
        .expect("forge runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stderr(&out))
}

/// `forge first-call`: two processes on one cache directory; the first leaves the driver's
/// pipeline cache there, the second starts from it. Each reports every kernel named, in
/// order, with positive times.
#[test]
fn first_call_times_each_kernel_and_the_second_process_loads_the_pipeline_cache() {
    let cache = temp_dir("first-call");
    let run = |extra: &[&str]| {
        let args: Vec<&str> = ["axpy", "gemv"].iter().chain(extra).copied().collect();
        let (lines, _) = first_call_json(&args, None, Some(&cache));
        assert_eq!(lines.len(), 3, "{lines:?}");
        for (line, name) in lines.iter().zip(["axpy", "gemv"]) {
            assert_eq!(line["kernel"], name);
            assert!(line["first_ms"].as_f64().unwrap() > 0.0);
            assert!(line["second_ms"].as_f64().unwrap() > 0.0);
        }
        lines[2].clone()
    };
    let first = run(&[]);
    assert_eq!(first["pipeline_cache_loaded_bytes"], 0);
    let path = PathBuf::from(first["pipeline_cache"].as_str().expect("a cache file"));
    assert!(
        path.starts_with(&cache) && path.is_file(),
        "{}",
        path.display()
    );
    let stored = std::fs::metadata(&path).unwrap().len();
    let second = run(&["--warm-up"]);
    assert_eq!(second["pipeline_cache_loaded_bytes"], stored - 48);
    // Warm-up compiled both pipelines, and the calls reused them.
    assert_eq!(first["pipelines_compiled"], 2);
    assert_eq!(second["pipelines_compiled"], 2);
    assert!(second["warm_up_ms"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(&cache).unwrap();
}

/// `forge first-call` of a kernel the adapter cannot run (cooperative matrices, which
/// lavapipe lacks) skips it and names the feature on stderr, and times the others.
#[test]
fn first_call_skips_a_kernel_the_adapter_cannot_run() {
    let (lines, err) = first_call_json(&["gemm_f16", "gemm_f16_simt"], Some("0"), None);
    let kernels: Vec<&str> = lines.iter().filter_map(|r| r["kernel"].as_str()).collect();
    let coop = ForgeRuntime::new(1 << 20, None)
        .expect("a GPU adapter (lavapipe in CI)")
        .supports(Feature::CooperativeMatrix);
    if coop {
        assert_eq!(kernels, ["gemm_f16", "gemm_f16_simt"]);
    } else {
        assert_eq!(kernels, ["gemm_f16_simt"]);
        assert!(
            err.contains("skip gemm_f16:") && err.contains("EXPERIMENTAL_COOPERATIVE_MATRIX"),
            "{err}"
        );
    }
}

/// `forge first-call --all-schedules`: one row for every schedule of the tuning space (each
/// compiles a pipeline of its own), in the tuner's order, and the slowest first call in the
/// summary.
#[test]
fn first_call_times_every_schedule_when_asked() {
    use forge_kernels::gemm::gemm;
    let (lines, _) = first_call_json(&["gemm", "--all-schedules"], Some("0"), None);
    let expected: Vec<String> = forge_core::tune::candidates(&gemm::Kernel)
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(expected.len() > 1, "{expected:?}");
    let (rows, summary) = lines.split_at(lines.len() - 1);
    let timed: Vec<&str> = rows
        .iter()
        .map(|r| r["schedule"].as_str().unwrap())
        .collect();
    assert_eq!(timed, expected);
    let slowest = rows
        .iter()
        .map(|r| r["first_ms"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(slowest > 0.0);
    assert_eq!(summary[0]["slowest_first_ms"].as_f64(), Some(slowest));
    assert_eq!(summary[0]["pipelines_compiled"], expected.len());
}

/// `forge info` says where each emitted language runs: MSL and PTX are emit-only here, CUDA
/// C runs through the CUDA driver (a `cuda` build), and the JSON form carries the same list.
#[test]
fn info_says_which_backends_only_emit() {
    let out = forge(&["info"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no `{name}` line in:\n{text}"))
            .to_string()
    };
    for name in ["msl", "ptx"] {
        assert!(line(name).contains("emit-only"), "{}", line(name));
    }
    for name in ["wgsl", "spirv", "glsl", "hlsl", "cuda"] {
        assert!(
            line(name).contains(&format!("FORGE_BACKEND={name}")),
            "{}",
            line(name)
        );
    }
    let out = forge(&["info", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["backends"]["msl"]
        .as_str()
        .unwrap()
        .starts_with("emit-only"));
    assert_eq!(json["backends"].as_object().unwrap().len(), 7);
}

/// `forge bench --quick --json --plot`: every row's GB/s and TFLOP/s are the kernel's
/// declared cost over its time (computed here from the kernels' definitions), fractions are
/// of the copy and FMA rows of the same run, and the SVG places the rows with both
/// measures on the roofline.
#[test]
fn bench_rates_come_from_the_declared_cost_and_plot_on_a_roofline() {
    let dir = temp_dir("roofline");
    let svg = dir.join("roofline.svg");
    let out = forge(&[
        "bench",
        "--quick",
        "--json",
        "gemv",
        "gemm",
        "--plot",
        &path_arg(&svg),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let row = |kernel: &str| {
        rows.iter()
            .find(|r| r["kernel"] == kernel)
            .unwrap_or_else(|| panic!("no {kernel} row in {rows:?}"))
    };
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    let close = |a: f64, b: f64, what: &str| {
        assert!(
            (a - b).abs() <= 1e-9 * b.abs().max(1.0),
            "{what}: {a} vs {b}"
        )
    };
    let (copy, peak) = (row("copy_vec4"), row("peak_fma"));
    // The copy reads and writes 2^18 vec4s; the probe runs 2^14 × 64 steps of 64 flops.
    close(
        f(copy, "gbps"),
        2.0 * 16.0 * (1u64 << 18) as f64 / (f(copy, "us") * 1e3),
        "copy",
    );
    let peak_tflops = 64.0 * (1u64 << 14) as f64 * 64.0 / (f(peak, "us") * 1e6);
    close(f(peak, "tflops"), peak_tflops, "peak");
    let (m, n) = (512.0, 512.0);
    let gemv = row("gemv");
    let gemv_gbps = 4.0 * (m * n + m + n) / (f(gemv, "us") * 1e3);
    close(f(gemv, "gbps"), gemv_gbps, "gemv GB/s");
    close(
        f(gemv, "frac_copy"),
        gemv_gbps / f(copy, "gbps"),
        "gemv of copy",
    );
    close(
        f(gemv, "tflops"),
        2.0 * m * n / (f(gemv, "us") * 1e6),
        "gemv TFLOP/s",
    );
    close(
        f(gemv, "intensity"),
        2.0 * m * n / (4.0 * (m * n + m + n)),
        "gemv intensity",
    );
    let gemm = row("gemm");
    let gemm_tflops = 2.0 * 128f64.powi(3) / (f(gemm, "us") * 1e6);
    close(f(gemm, "tflops"), gemm_tflops, "gemm TFLOP/s");
    close(
        f(gemm, "frac_peak"),
        gemm_tflops / peak_tflops,
        "gemm of peak",
    );
    let text = std::fs::read_to_string(&svg).expect("the plot is written");
    assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
    for label in ["gemv 512x512", "gemm 128^3", "roof: copy", "FMA peak"] {
        assert!(text.contains(label), "{label} missing from the roofline");
    }
    // The probe is the roof, not a point under it.
    assert!(
        !text.contains("peak_fma"),
        "the FMA probe is drawn as a point"
    );
}

/// `forge tune` prints each candidate's GB/s, its fraction of a copy timed in the same run,
/// and its FLOP/s, from the kernel's declared cost at the problem tuned.
#[test]
fn tune_prints_rates_from_the_declared_cost() {
    let cache = temp_dir("tune-rates");
    let out = forge(&[
        "--cache-dir",
        &path_arg(&cache),
        "tune",
        "axpy",
        "--problem",
        "a=0.5,n=1000",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text
        .lines()
        .find(|l| l.starts_with("schedule"))
        .expect("a table");
    for column in ["GB/s", "of copy", "FLOP/s"] {
        assert!(header.contains(column), "{column} missing: {header}");
    }
    // axpy reads x and y and writes y (12 bytes an element) and does one FMA.
    assert!(
        text.contains("cost at a=0.5, n=1000: 12000 bytes, 2000 flops; a device copy of"),
        "{text}"
    );
}

/// `FORGE_TRACE` traces a CLI command: the process writes the file as its runtime drops,
/// with the certification's cases and launches; a path that cannot be written is an
/// error message, not a panic.
#[test]
fn forge_trace_traces_a_command() {
    let dir = temp_dir("trace");
    let path = dir.join("certify.json");
    let out = Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(["certify", "axpy"])
        .env_remove("FORGE_BACKEND")
        .env("FORGE_TRACE", &path)
        .output()
        .expect("run forge");
    assert!(out.status.success(), "{}", stderr(&out));
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("the trace")).expect("JSON");
    let count = |cat: &str| {
        trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == cat && e["name"] == "axpy")
            .count()
    };
    let cases = wgsl_forge::kernels::axpy::axpy::Kernel.cert_cases().len();
    assert_eq!(count("certify"), cases);
    assert!(count("launch") >= cases && count("gpu") == count("launch"));
    // The CLI installs the span layer: the certification's span, with its fields.
    let spans: Vec<&serde_json::Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "span" && e["name"] == "certify")
        .collect();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0]["args"]["kernel"], "axpy");

    let out = Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(["certify", "axpy"])
        .env_remove("FORGE_BACKEND")
        .env("FORGE_TRACE", &dir)
        .output()
        .expect("run forge");
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.starts_with("error:") && !err.contains("panicked"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `FORGE_BACKEND=cuda` in a build without the `cuda` feature is an error that says how to
/// build one, before any adapter is opened: never a silent run on wgpu.
#[cfg(not(feature = "cuda"))]
#[test]
fn forge_backend_cuda_without_the_feature_says_how_to_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(["certify", "axpy"])
        .env("FORGE_BACKEND", "cuda")
        .output()
        .expect("run forge");
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "nothing certified");
    assert!(
        stderr(&out).contains("the `cuda` backend") && stderr(&out).contains("--features cuda"),
        "{}",
        stderr(&out)
    );
}

/// `forge tune KERNEL --backends a,b`: the kernel tuned on each backend's own runtime, each
/// winner stored under its own key, and the fastest named; a backend this build cannot
/// run fails before any tuning.
#[test]
fn tune_picks_between_the_backends_winners() {
    let dir = std::env::temp_dir().join(format!("forge-cli-tune-backends-{}", std::process::id()));
    let cache = path_arg(&dir);
    let out = forge(&[
        "--cache-dir",
        &cache,
        "tune",
        "axpy",
        "--backends",
        "wgsl,spirv",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = json["backends"].as_array().expect("backends");
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["wgsl", "spirv"]);
    let times: Vec<f64> = rows
        .iter()
        .map(|r| r["winner_us"].as_f64().expect("a timed winner"))
        .collect();
    assert!(times.iter().all(|t| *t > 0.0), "{times:?}");
    let fastest = json["fastest"].as_str().expect("a fastest backend");
    let best = if times[0] <= times[1] {
        "wgsl"
    } else {
        "spirv"
    };
    assert_eq!(fastest, best, "{times:?}");
    // Each backend's manifest is its own file.
    let manifests: Vec<&str> = rows
        .iter()
        .map(|r| r["manifest"].as_str().unwrap())
        .collect();
    assert_ne!(manifests[0], manifests[1]);
    assert!(
        manifests.iter().all(|m| Path::new(m).is_file()),
        "{manifests:?}"
    );
    // An unknown backend is bad usage.
    let out = forge(&[
        "--cache-dir",
        &cache,
        "tune",
        "axpy",
        "--backends",
        "wgsl,metal",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    #[cfg(not(feature = "cuda"))]
    {
        let out = forge(&[
            "--cache-dir",
            &cache,
            "tune",
            "axpy",
            "--backends",
            "wgsl,cuda",
        ]);
        assert!(!out.status.success());
        assert!(out.stdout.is_empty(), "nothing tuned before the error");
        assert!(stderr(&out).contains("--features cuda"), "{}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `FORGE_BACKEND=cuda` in a `cuda` build: where libcuda cannot be loaded (CI: NVRTC only)
/// the error names libcuda and how to make it found, with no panic; where a driver is,
/// `forge certify axpy` passes on CUDA.
#[cfg(feature = "cuda")]
#[test]
fn forge_backend_cuda_without_a_driver_names_libcuda() {
    let out = Command::new(env!("CARGO_BIN_EXE_forge"))
        .args(["certify", "axpy"])
        .env("FORGE_BACKEND", "cuda")
        .output()
        .expect("run forge");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    if forge_core::device::cuda::driver_present() {
        assert!(out.status.success(), "{err}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("emission cuda"));
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("libcuda cannot be loaded") && err.contains("LD_LIBRARY_PATH"),
        "{err}"
    );
}

/// `forge certify` of kernels this runtime cannot run says why for each and fails: nothing
/// certified is not a pass. Lavapipe has no cooperative matrices, which `gemm_f16` needs.
#[test]
fn forge_certify_of_only_skipped_kernels_fails() {
    let rt = runtime(None);
    assert!(
        !rt.supports(wgsl_forge::Feature::CooperativeMatrix),
        "this test needs an adapter without cooperative matrices (lavapipe)"
    );
    let out = forge(&["certify", "gemm_f16"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "stdout: {stdout}");
    assert!(
        stdout.contains(
            "skip gemm_f16: needs EXPERIMENTAL_COOPERATIVE_MATRIX, which the adapter lacks"
        ),
        "stdout: {stdout}"
    );
    assert!(
        stderr(&out).contains("no certification ran: this runtime can run none of gemm_f16"),
        "stderr: {}",
        stderr(&out)
    );
    // With a kernel it can run beside it, the run is the other kernel's verdict.
    let out = forge(&["certify", "gemm_f16", "gemm_f16_simt"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        stderr(&out)
    );
    assert!(
        stdout.contains("all 1 certifications passed"),
        "stdout: {stdout}"
    );
}

/// `forge bench NAME$` names one kernel by its whole name, where `NAME` is a prefix:
/// `gemm$` times `gemm` and none of `gemm_f16`'s kernels, `gemm` times `gemm_f16_simt` too.
#[test]
fn bench_takes_a_whole_name_with_a_dollar() {
    let kernels = |name: &str| {
        let out = forge(&["bench", "--quick", "--json", name]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).expect("one JSON object per line")
            })
            .map(|r| r["kernel"].as_str().unwrap_or_default().to_string())
            .filter(|k| k != "copy_vec4" && k != "peak_fma")
            .collect();
        names.sort();
        names.dedup();
        names
    };
    assert_eq!(kernels("gemm$"), ["gemm"]);
    let prefix = kernels("gemm");
    assert!(
        prefix.iter().any(|k| k == "gemm") && prefix.iter().any(|k| k == "gemm_f16_simt"),
        "{prefix:?}"
    );
    // A whole name that names no kernel is the unknown name's error, a family's name too.
    for name in ["gem$", "topk$"] {
        let out = forge(&["bench", "--quick", "--json", name]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("unknown kernel"),
            "{name}: {}",
            stderr(&out)
        );
    }
}
