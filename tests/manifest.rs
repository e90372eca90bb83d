//! The tuner, timing and the manifest cache on the real adapter (lavapipe in CI).
//!
//! Every way a cache can be wrong (truncated, garbage, another machine's, stale, a winner
//! this adapter cannot run, unwritable, written by many tuners at once) must end in a
//! warning and the declared schedule or a fresh tune: never a crash, never a wrong result.
//!
//! Manifest bundles (issue 18, item 5), at the end: a tuned cache exported as one file and
//! imported into another, byte for byte; what import keeps, replaces and rejects, with its
//! reasons; a damaged bundle refused whole; and a runtime built with an embedded bundle
//! running the bundle's winner. The `forge cache export` and `import` commands are tested
//! in `forge-cli/tests/cli_files.rs`.

use std::path::{Path, PathBuf};
use wgsl_forge::certify::Verdict;
use wgsl_forge::manifest::bundle::{BundleEntry, ManifestBundle};
use wgsl_forge::manifest::{kernel_hash, CandidateResult, ManifestCache, TuningManifest};
use wgsl_forge::prelude::*;
use wgsl_forge::timing::{ticks_to_ns, Timer, Timing, TimingOptions};
use wgsl_forge::tune::{self, TuneOptions};
use wgsl_forge::{Backend, DynArgs, HostBuffer, ScalarValue};

/// `y = 2x + 1` computed the long way, except that the schedule with 128-wide workgroups
/// is deliberately wrong, and cheap: a fast wrong schedule that must never win.
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [32, 64, 128]),
    reference = affine_reference, case(n = 1000), case(n = 4099))]
pub fn affine(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        if WG == 128u32 {
            y[i] = x[i];
        } else {
            // Converges to 2x; the +1 comes last so that the result is exact enough.
            let mut acc = 0.0f32;
            for _k in 0..48u32 {
                acc = acc.mul_add(0.5f32, x[i]);
            }
            y[i] = acc + 1.0f32;
        }
    }
}

/// The independent reference, in f64.
pub fn affine_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    Ok(x.iter().map(|v| (2.0 * *v as f64 + 1.0) as f32).collect())
}

/// A fresh empty directory under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!(
        "forge-manifest-{tag}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn runtime(cache: Option<PathBuf>) -> ForgeRuntime {
    ForgeRuntime::new(256 << 20, cache).unwrap_or_else(|e| {
        panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}")
    })
}

/// Tuning options that keep each test to seconds on lavapipe.
fn quick() -> TuneOptions {
    TuneOptions {
        timing: TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 3,
            target_pass_ns: 2.0e5,
            max_repeats: 64,
            ..TimingOptions::default()
        },
        ..TuneOptions::default()
    }
}

fn manifest_path(rt: &ForgeRuntime, cache: &Path, kernel: &dyn Kernel) -> PathBuf {
    ManifestCache::new(cache).path(&rt.topology_hash(), &kernel.id())
}

/// The manifest's file name: the kernel's name, `-`, the first 12 hex digits of the sha256
/// of its WGSL.
fn manifest_file(kernel: &dyn Kernel) -> String {
    format!("{}-{}.json", kernel.name(), &kernel_hash(kernel)[..12])
}

fn read_manifest(path: &Path) -> TuningManifest {
    let text = std::fs::read_to_string(path).expect("manifest written");
    serde_json::from_str(&text).expect("manifest parses")
}

/// Inputs that are not zeros.
fn input(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// Runs `affine` the way users do (the runtime's schedule) and checks it against the
/// reference.
fn assert_affine_correct(rt: &mut ForgeRuntime) {
    for n in [1usize, 777, 5000] {
        let x = input(n, n as u32);
        let y = affine::run(rt, &x, n as u32).expect("affine runs");
        let want = affine_reference(&x, n as u32).unwrap();
        for (i, (g, w)) in y.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "n={n} y[{i}] = {g}, want {w}"
            );
        }
    }
}

/// Tunes `affine` into `cache` and returns the manifest's path and the winner.
fn tune_affine(cache: &Path) -> (PathBuf, Schedule) {
    let mut rt = runtime(Some(cache.to_path_buf()));
    let report = tune::tune(&mut rt, &affine::Kernel, &quick()).expect("tuning runs");
    let winner = report.winner().expect("a certified winner");
    let path = report.stored.clone().expect("manifest written");
    assert_eq!(path, manifest_path(&rt, cache, &affine::Kernel));
    assert_eq!(
        path.file_name().unwrap().to_string_lossy(),
        manifest_file(&affine::Kernel)
    );
    (path, winner)
}

/// A new runtime on `cache` ignores whatever is wrong with the manifest: it uses the
/// declared schedule and computes the right result; a fresh tune then repairs the file.
fn assert_ignored_then_repaired(cache: &Path) {
    let mut rt = runtime(Some(cache.to_path_buf()));
    assert_eq!(rt.tuned_schedule(&affine::Kernel), None);
    assert_eq!(
        rt.schedule_for(&affine::Kernel),
        affine::Kernel.default_schedule()
    );
    assert_affine_correct(&mut rt);
    let report = tune::tune(&mut rt, &affine::Kernel, &quick()).expect("a fresh tune");
    let winner = report.winner().expect("winner");
    let fresh = runtime(Some(cache.to_path_buf()));
    assert_eq!(
        fresh.tuned_schedule(&affine::Kernel),
        Some(winner),
        "the fresh tune is cached"
    );
}

#[test]
fn tuning_certifies_first_and_a_fast_wrong_schedule_never_wins() {
    let cache = temp_dir("winner");
    let (path, winner) = tune_affine(&cache);
    assert_ne!(winner.workgroup, 128);
    let m = read_manifest(&path);
    assert_eq!(m.kernel, "affine");
    assert_eq!(m.kernel_hash, kernel_hash(&affine::Kernel));
    assert_eq!(m.crate_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(m.buckets.len(), 1);
    let bucket = &m.buckets[0];
    assert_eq!(
        bucket.threads, 4099,
        "the largest certification case is timed"
    );
    assert_eq!(bucket.bucket, 12);
    assert_eq!(bucket.candidates.len(), 3);
    let wrong = bucket
        .candidate(&Schedule::with_workgroup(128))
        .expect("recorded");
    assert_eq!(wrong.verdict, Some(Verdict::Fail));
    assert!(wrong.timing.is_none(), "a failing candidate is never timed");
    assert!(
        wrong.note.as_deref().unwrap_or("").contains("reference"),
        "{:?}",
        wrong.note
    );
    for c in bucket
        .candidates
        .iter()
        .filter(|c| c.schedule.workgroup != 128)
    {
        assert_eq!(c.verdict, Some(Verdict::Pass));
        let t = c.timing.as_ref().expect("timed");
        // Three interleaved rounds of three passes each.
        assert!(
            t.median_ns > 0.0 && t.samples.len() == 9 && t.repeats >= 1,
            "{t:?}"
        );
    }
    assert_eq!(bucket.winner, Some(winner));

    // Another runtime reads the winner and runs with it.
    let mut rt = runtime(Some(cache.clone()));
    assert_eq!(rt.tuned_schedule(&affine::Kernel), Some(winner));
    assert_eq!(rt.schedule_for(&affine::Kernel), winner);
    assert_affine_correct(&mut rt);
}

#[test]
fn truncated_manifest_is_ignored() {
    let cache = temp_dir("truncated");
    let (path, _) = tune_affine(&cache);
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    assert_ignored_then_repaired(&cache);
}

#[test]
fn garbage_manifest_is_ignored() {
    let cache = temp_dir("garbage");
    let (path, _) = tune_affine(&cache);
    std::fs::write(&path, b"{\"kernel\": 17, \xff\xfe not json at all").unwrap();
    assert_ignored_then_repaired(&cache);
    std::fs::write(&path, b"[]").unwrap();
    assert_ignored_then_repaired(&cache);
}

#[test]
fn another_topologys_manifest_is_ignored() {
    let cache = temp_dir("foreign");
    let (path, _) = tune_affine(&cache);
    let mut m = read_manifest(&path);
    m.topology = "0".repeat(64);
    m.adapter = "Some Other GPU".into();
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    assert_ignored_then_repaired(&cache);

    // A manifest in another topology's directory is simply never read.
    let other = ManifestCache::new(&cache);
    assert!(other.store(&m).is_ok());
    let rt = runtime(Some(cache.clone()));
    assert!(
        rt.tuned_schedule(&affine::Kernel).is_some(),
        "this topology's own manifest is used"
    );
}

#[test]
fn stale_kernel_hash_or_version_is_ignored() {
    let cache = temp_dir("stale");
    let (path, _) = tune_affine(&cache);
    let good = read_manifest(&path);
    let mut m = good.clone();
    m.kernel_hash = "f".repeat(64);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    assert_ignored_then_repaired(&cache);

    let mut m = good;
    m.crate_version = "0.0.1-old".into();
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    assert_ignored_then_repaired(&cache);
}

#[test]
fn cached_winner_the_adapter_cannot_run_is_ignored() {
    let cache = temp_dir("unrunnable");
    let (path, _) = tune_affine(&cache);
    let mut m = read_manifest(&path);
    let huge = Schedule::with_workgroup(4096);
    // A perfectly plausible record, except that no adapter here runs 4096 invocations.
    let mut forged: CandidateResult = m.buckets[0].winner_result().expect("winner").clone();
    forged.schedule = huge;
    m.buckets[0].candidates.push(forged);
    m.buckets[0].winner = Some(huge);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    assert_ignored_then_repaired(&cache);
}

#[test]
fn zero_or_negative_timings_are_rejected() {
    // Raw samples.
    let t = Timing::from_pass_ns(
        &[0.0, -3.0, f64::NAN, 800.0, 1200.0, f64::INFINITY],
        4,
        Timer::Timestamp,
    )
    .expect("two good samples");
    assert_eq!(t.samples, vec![200.0, 300.0]);
    assert_eq!(t.rejected, 4);
    assert_eq!(t.median_ns, 250.0);
    assert!(Timing::from_pass_ns(&[0.0, -1.0], 4, Timer::Timestamp).is_none());
    assert_eq!(
        ticks_to_ns(10, 10, 1.0),
        None,
        "a timer that did not advance"
    );
    assert_eq!(ticks_to_ns(10, 5, 1.0), None, "a timer that went backwards");

    // A cached winner whose timing is zero (or negative) is not trusted.
    let cache = temp_dir("zero-ns");
    let (path, _) = tune_affine(&cache);
    for bad in [0.0, -5.0] {
        let mut m = read_manifest(&path);
        let w = m.buckets[0].winner.unwrap();
        for c in &mut m.buckets[0].candidates {
            if c.schedule == w {
                let t = c.timing.as_mut().unwrap();
                t.median_ns = bad;
                t.samples = vec![bad];
            }
        }
        std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
        assert_ignored_then_repaired(&cache);
    }
}

/// Whether this process can write into a directory whose mode forbids it (root can).
fn writes_ignore_permissions(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("probe");
    std::fs::create_dir_all(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let wrote = std::fs::write(probe.join("x"), b"x").is_ok();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    wrote
}

#[test]
fn unwritable_cache_is_a_warning_not_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let base = temp_dir("readonly");
    let cache = if writes_ignore_permissions(&base) {
        // Root ignores the mode bits; a path under a regular file cannot be created by
        // anyone.
        let file = base.join("a-file");
        std::fs::write(&file, b"not a directory").unwrap();
        file.join("cache")
    } else {
        let dir = base.join("ro");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        dir
    };
    let mut rt = runtime(Some(cache.clone()));
    assert_eq!(rt.tuned_schedule(&affine::Kernel), None);
    let report = tune::tune(&mut rt, &affine::Kernel, &quick()).expect("tuning goes on");
    assert!(report.stored.is_none());
    assert!(report.store_error.is_some());
    // The result is used for this runtime's life, just not persisted.
    assert_eq!(rt.tuned_schedule(&affine::Kernel), report.winner());
    assert_affine_correct(&mut rt);
    assert_eq!(runtime(Some(cache)).tuned_schedule(&affine::Kernel), None);
}

#[test]
fn concurrent_tuners_leave_every_file_parseable() {
    let cache = temp_dir("concurrent");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let mut rt = runtime(Some(cache));
                let mut opts = quick();
                opts.timing.passes = 2;
                // Half tune another problem size, so buckets are merged concurrently too.
                if i % 2 == 1 {
                    opts.problem = Some(vec![ScalarValue::U32(1000)]);
                }
                tune::tune(&mut rt, &affine::Kernel, &opts).expect("tuning runs");
                opts.problem = None;
                tune::tune(&mut rt, &wgsl_forge::kernels::axpy::axpy::Kernel, &opts)
                    .expect("tuning runs");
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no tuner panicked");
    }
    let rt = runtime(Some(cache.clone()));
    let dir = cache.join(rt.topology_hash());
    // The driver's pipeline cache lives beside the manifests too; it is not a manifest.
    let pipelines = rt
        .pipeline_cache_path()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    // The merge locks' files stay beside the manifests (hidden): OS locks, never removed.
    let (names, locks): (Vec<String>, Vec<String>) = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| Some(n) != pipelines.as_ref())
        .partition(|n| !n.ends_with(".lock"));
    let mut sorted = names.clone();
    sorted.sort();
    let mut want = vec![
        manifest_file(&affine::Kernel),
        manifest_file(&wgsl_forge::kernels::axpy::axpy::Kernel),
    ];
    let mut want_locks: Vec<String> = want
        .iter()
        .map(|f| format!(".{}.lock", f.trim_end_matches(".json")))
        .collect();
    let mut locks = locks;
    locks.sort();
    want_locks.sort();
    assert_eq!(locks, want_locks);
    want.sort();
    assert_eq!(sorted, want, "no temporary file is left behind");
    for name in &names {
        let m = read_manifest(&dir.join(name));
        assert!(m.winner().is_some(), "{name}");
    }
    assert!(rt.tuned_schedule(&affine::Kernel).is_some());
    assert!(rt
        .tuned_schedule(&wgsl_forge::kernels::axpy::axpy::Kernel)
        .is_some());
    for entry in ManifestCache::new(&cache).list().unwrap() {
        assert!(entry.manifest.is_ok(), "{:?}", entry.path);
    }
}

#[test]
fn each_problem_size_bucket_has_its_winner() {
    let cache = temp_dir("buckets");
    let mut rt = runtime(Some(cache.clone()));
    let mut opts = quick();
    opts.problem = Some(vec![ScalarValue::U32(1000)]);
    let small = tune::tune(&mut rt, &affine::Kernel, &opts).unwrap();
    opts.problem = Some(vec![ScalarValue::U32(1 << 16)]);
    let large = tune::tune(&mut rt, &affine::Kernel, &opts).unwrap();
    assert_eq!((small.bucket.bucket, large.bucket.bucket), (9, 16));
    let m = read_manifest(large.stored.as_ref().unwrap());
    assert_eq!(
        m.buckets.iter().map(|b| b.bucket).collect::<Vec<_>>(),
        vec![9, 16]
    );
    let fresh = runtime(Some(cache));
    assert_eq!(
        fresh.schedule_for_threads(&affine::Kernel, 900),
        small.winner().unwrap()
    );
    assert_eq!(
        fresh.schedule_for_threads(&affine::Kernel, 1 << 17),
        large.winner().unwrap()
    );
    assert_eq!(
        fresh.schedule_for(&affine::Kernel),
        large.winner().unwrap(),
        "unsized: the largest bucket"
    );
}

#[test]
fn no_cache_dir_means_the_declared_schedule() {
    // Built without a cache directory (and FORGE_CACHE_DIR is not set by the test suite).
    if std::env::var_os("FORGE_CACHE_DIR").is_some() {
        return;
    }
    let rt = runtime(None);
    assert_eq!(rt.cache_dir(), None);
    assert_eq!(rt.tuned_schedule(&affine::Kernel), None);
    assert_eq!(
        rt.schedule_for(&affine::Kernel),
        affine::Kernel.default_schedule()
    );
}

/// Timing runs an in-place kernel many times; the reset before every timed dispatch keeps
/// its data from drifting. With timestamps, what the last timed dispatch leaves is one
/// application to the pristine inputs, not the warm-up's, the calibration's and every
/// batch's piled up; with the wall clock, whose batch runs without resets between its
/// dispatches, it is exactly the batch's R applications, and no more.
#[test]
fn timing_an_in_place_kernel_resets_it() {
    use wgsl_forge::kernels::axpy::axpy;
    let mut rt = runtime(None);
    let n = 3000usize;
    let x = input(n, 1);
    let y = input(n, 2);
    let f32s = wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32);
    let args = DynArgs {
        scalars: vec![ScalarValue::F32(1.5), ScalarValue::U32(n as u32)],
        buffers: vec![
            Some(HostBuffer::from_slice(f32s, &x)),
            Some(HostBuffer::from_slice(f32s, &y)),
        ],
    };
    let mut want = y.clone();
    axpy::cpu(1.5, &x, &mut want, n as u32).unwrap();
    let once = want.clone();
    for _ in 1..8 {
        axpy::cpu(1.5, &x, &mut want, n as u32).unwrap();
    }
    for wall_clock in [false, true] {
        let opts = TimingOptions {
            passes: 4,
            warmup_ns: 0.0,
            repeats: Some(8),
            read_back: true,
            wall_clock,
            ..TimingOptions::default()
        };
        let run = rt
            .time_kernel_with(
                &axpy::Kernel,
                &axpy::Kernel.default_schedule(),
                &args,
                &opts,
            )
            .expect("timed");
        let t = &run.timing;
        assert_eq!(
            t.timer,
            if wall_clock {
                Timer::WallClock
            } else {
                Timer::Timestamp
            }
        );
        assert!(t.median_ns > 0.0 && t.samples.len() == 4, "{t:?}");
        assert_eq!(t.repeats, 8, "eight dispatches a batch");
        let expected = if wall_clock { &want } else { &once };
        let outputs = run.outputs.expect("read back");
        assert_eq!(outputs.len(), 1);
        let got = outputs[0].to_f64();
        assert_eq!(got.len(), n);
        for (i, (g, w)) in got.iter().zip(expected).enumerate() {
            let w = *w as f64;
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "y[{i}] = {g}, want {w} (wall clock: {wall_clock})"
            );
        }
    }
    // The caller's arguments are untouched and the runtime still computes correctly.
    let mut y2 = y.clone();
    axpy::run(&mut rt, 1.5, &x, &mut y2, n as u32).unwrap();
    for (i, (g, w)) in y2.iter().zip(&once).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * w.abs().max(1.0),
            "y[{i}] = {g}, want {w}"
        );
    }
}

/// Small read-only inputs are rotated through several device copies, every one of which
/// holds the caller's data: the timed dispatches on each set compute the same result.
/// Each of the 8 dispatches of a batch takes the next set, so the last one read set
/// (8·passes + warm-up + calibration − 1) mod sets, and a wrong copy would show whichever
/// set it was.
#[test]
fn timing_rotates_small_inputs_through_identical_copies() {
    let mut rt = runtime(None);
    let n = 2000usize;
    let x = input(n, 3);
    let f32s = wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32);
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(n as u32)],
        buffers: vec![Some(HostBuffer::from_slice(f32s, &x)), None],
    };
    let want = affine::cpu(&x, n as u32).unwrap();
    for rotate_bytes in [0, 4 * n as u64 * 3, 1 << 20] {
        for repeats in [1, 3, 8] {
            let run = rt
                .time_kernel_with(
                    &affine::Kernel,
                    &affine::Kernel.default_schedule(),
                    &args,
                    &TimingOptions {
                        passes: 2,
                        warmup: 1,
                        warmup_ns: 0.0,
                        repeats: Some(repeats),
                        read_back: true,
                        rotate_bytes,
                        ..TimingOptions::default()
                    },
                )
                .expect("timed");
            let sets = match rotate_bytes {
                0 => 1,
                1048576 => wgsl_forge::timing::MAX_INPUT_SETS,
                _ => 3,
            };
            assert_eq!(run.input_sets, sets, "rotate {rotate_bytes}");
            let got = run.outputs.expect("read back")[0].to_f64();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(*g, *w as f64, "y[{i}] with {sets} sets, {repeats} a batch");
            }
        }
    }
}

#[test]
fn time_kernel_checks_its_arguments() {
    let mut rt = runtime(None);
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(10)],
        buffers: vec![
            Some(HostBuffer::from_slice(
                wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32),
                &[1.0f32; 9],
            )),
            None,
        ],
    };
    let err = rt
        .time_kernel(&affine::Kernel, &Schedule::with_workgroup(64), &args)
        .expect_err("wrong length");
    assert!(err.to_string().contains("`x`"), "{err}");
    let err = rt
        .time_kernel(&affine::Kernel, &Schedule::with_workgroup(4096), &args)
        .expect_err("unrunnable schedule");
    assert!(matches!(err, ForgeError::BadSchedule { .. }), "{err}");
}

/// `affine` with the fast wrong variant behind a knob: `FAST = 1` copies the input.
#[forge_kernel(workgroup = 64, threads = n, knobs(FAST = 0), tune(workgroup = [32, 64], FAST = [0, 1]),
    reference = affine_reference, case(n = 1000), case(n = 4099))]
pub fn affine_knob(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        if FAST == 1u32 {
            y[i] = x[i];
        } else {
            let mut acc = 0.0f32;
            for _k in 0..48u32 {
                acc = acc.mul_add(0.5f32, x[i]);
            }
            y[i] = acc + 1.0f32;
        }
    }
}

#[test]
fn knobs_are_certified_tuned_and_cached() {
    let cache = temp_dir("knob");
    let mut rt = runtime(Some(cache.clone()));
    let report = tune::tune(&mut rt, &affine_knob::Kernel, &quick()).expect("tuning runs");
    let winner = report.winner().expect("a certified winner");
    assert_eq!(
        winner.knob("FAST"),
        Some(0),
        "the fast wrong knob never wins"
    );
    let path = report.stored.clone().expect("manifest written");
    let m = read_manifest(&path);
    let bucket = &m.buckets[0];
    // Every combination of the workgroup sizes and the knob's values.
    assert_eq!(bucket.candidates.len(), 4);
    for c in &bucket.candidates {
        let want = if c.schedule.knob("FAST") == Some(1) {
            Verdict::Fail
        } else {
            Verdict::Pass
        };
        assert_eq!(c.verdict, Some(want), "{}", c.schedule);
    }
    // The knobs are stored by name, and read back as the kernel declares them.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""knobs": {"#) && text.contains(r#""FAST": 0"#),
        "{text}"
    );
    let mut fresh = runtime(Some(cache.clone()));
    assert_eq!(fresh.tuned_schedule(&affine_knob::Kernel), Some(winner));
    let x = input(777, 3);
    let y = affine_knob::run(&mut fresh, &x, 777).unwrap();
    assert_eq!(y, affine_knob::cpu_with(&winner, &x, 777).unwrap());
    // A winner with a knob the kernel does not declare is stale: ignored, with a warning.
    std::fs::write(&path, text.replace(r#""FAST""#, r#""SLOW""#)).unwrap();
    let stale = runtime(Some(cache.clone()));
    assert_eq!(stale.tuned_schedule(&affine_knob::Kernel), None);
    assert_eq!(
        stale.schedule_for(&affine_knob::Kernel),
        affine_knob::Kernel.default_schedule()
    );
}

// ---- manifest bundles -------------------------------------------------------------------

const K: &dyn Kernel = &affine::Kernel;

/// Every file under `dir`, by path relative to it, with its bytes; the cache's hidden lock
/// files left out.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if !path.to_string_lossy().ends_with(".lock") {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn export_then_import_gives_identical_files_that_load() {
    let (a, b) = (temp_dir("a"), temp_dir("b"));
    let path = tune_affine(&a).0;
    let export = ManifestBundle::from_cache(&ManifestCache::new(&a)).unwrap();
    assert!(export.skipped.is_empty(), "{:?}", export.skipped);
    // One entry: the driver's pipeline cache file beside the manifest is not one.
    assert_eq!(export.bundle.entries().len(), 1);
    let file = a.join("tuned.bundle");
    export.bundle.write(&file).unwrap();

    let report = ManifestBundle::read(&file)
        .unwrap()
        .import_into(&ManifestCache::new(&b), &[K], false)
        .unwrap();
    assert_eq!(
        report.to_string(),
        "imported 1, kept 0 existing, rejected 0"
    );
    let copied = report.imported[0].1.clone();
    assert_eq!(
        copied.strip_prefix(&b).unwrap(),
        path.strip_prefix(&a).unwrap()
    );
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&path).unwrap()
    );
    // Nothing but the manifest was written (no pipeline cache, no temporary file).
    assert_eq!(
        files(&b).len(),
        1,
        "{:?}",
        files(&b).iter().map(|f| &f.0).collect::<Vec<_>>()
    );

    // Both caches load the same manifest, and a runtime on the copy runs its winner.
    let rt = runtime(Some(b.clone()));
    let key = rt.manifest_key(K);
    let from_a = ManifestCache::new(&a)
        .load(&key, K, rt.limits())
        .expect("loads");
    let from_b = ManifestCache::new(&b)
        .load(&key, K, rt.limits())
        .expect("loads");
    assert_eq!(from_a, from_b);
    assert_eq!(rt.tuned_schedule(K), from_a.winner());
    let mut rt = rt;
    assert_affine_correct(&mut rt);
}

#[test]
fn import_keeps_what_is_there_unless_replace() {
    let (a, b) = (temp_dir("keep-a"), temp_dir("keep-b"));
    let from_a = tune_affine(&a).0;
    let in_b = tune_affine(&b).0;
    // Two tunes differ at least in their timings and their time of tuning.
    let (bytes_a, bytes_b) = (
        std::fs::read(&from_a).unwrap(),
        std::fs::read(&in_b).unwrap(),
    );
    assert_ne!(bytes_a, bytes_b);
    let bundle = ManifestBundle::from_cache(&ManifestCache::new(&a))
        .unwrap()
        .bundle;
    let cache_b = ManifestCache::new(&b);

    let kept = bundle.import_into(&cache_b, &[K], false).unwrap();
    assert_eq!(kept.to_string(), "imported 0, kept 1 existing, rejected 0");
    assert_eq!(kept.kept[0].1, in_b);
    assert_eq!(std::fs::read(&in_b).unwrap(), bytes_b, "kept as it was");

    let replaced = bundle.import_into(&cache_b, &[K], true).unwrap();
    assert_eq!(
        replaced.to_string(),
        "imported 1, kept 0 existing, rejected 0"
    );
    assert_eq!(
        std::fs::read(&in_b).unwrap(),
        bytes_a,
        "replaced by the bundle's"
    );

    // A stale file in the entry's place (an older crate version) is replaced without
    // `replace`: the cache would not trust it.
    let mut old = read_manifest(&in_b);
    old.crate_version = "0.0.1-old".into();
    cache_b.store(&old).unwrap();
    let report = bundle.import_into(&cache_b, &[K], false).unwrap();
    assert_eq!(report.imported.len(), 1, "{report}");
    assert_eq!(std::fs::read(&in_b).unwrap(), bytes_a);
}

#[test]
fn a_damaged_bundle_is_refused_whole_and_writes_nothing() {
    let (a, b) = (temp_dir("damaged-a"), temp_dir("damaged-b"));
    tune_affine(&a);
    let bytes = ManifestBundle::from_cache(&ManifestCache::new(&a))
        .unwrap()
        .bundle
        .to_bytes()
        .unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    // A timing edited by hand (one digit of a median), a truncated copy, another file.
    let at = text.find("median_ns").expect("a timing") + "median_ns\\\": ".len();
    let digit = text[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let mut edited = bytes.clone();
    edited[digit] = if edited[digit] == b'9' {
        b'1'
    } else {
        edited[digit] + 1
    };
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("edited", edited, "checksum does not match"),
        (
            "truncated",
            bytes[..bytes.len() * 2 / 3].to_vec(),
            "truncated",
        ),
        (
            "a manifest",
            std::fs::read(
                files(&a)
                    .iter()
                    .map(|f| a.join(&f.0))
                    .find(|p| p.extension().is_some_and(|e| e == "json"))
                    .unwrap(),
            )
            .unwrap(),
            "not a manifest bundle",
        ),
    ];
    for (what, bytes, needle) in cases {
        let file = b.join(format!("{what}.bundle"));
        std::fs::write(&file, &bytes).unwrap();
        let err = ManifestBundle::read(&file).expect_err(what);
        assert!(matches!(err, ForgeError::BadBundle { .. }), "{what}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(needle) && message.contains(&file.display().to_string()),
            "{what}: {message}"
        );
        // Handed to the builder, the same bytes fail `build`.
        let err = ForgeRuntime::builder()
            .manifest_bundle(bytes)
            .build()
            .expect_err(what);
        assert!(err.to_string().contains(needle), "{what}: {err}");
    }
    // Only the damaged files themselves are in `b`: no cache was created.
    assert!(files(&b)
        .iter()
        .all(|f| f.0.to_string_lossy().ends_with(".bundle")));
}

#[test]
fn foreign_stale_and_unknown_entries_are_rejected_with_a_reason() {
    let (a, b) = (temp_dir("reject-a"), temp_dir("reject-b"));
    let good = read_manifest(&tune_affine(&a).0);
    let cache_a = ManifestCache::new(&a);
    // Another machine's manifest (another topology folder) is what sharing is for.
    let mut other_machine = good.clone();
    other_machine.topology = "ef".repeat(32);
    cache_a.store(&other_machine).unwrap();
    // Each of these the cache would never trust; each sits in a place of its own.
    let mut stale_source = good.clone();
    stale_source.kernel_hash = "00".repeat(32);
    let mut stale_version = good.clone();
    stale_version.topology = "12".repeat(32);
    stale_version.crate_version = "0.0.1-old".into();
    let mut unknown = good.clone();
    unknown.kernel = "mystery".into();
    let mut wrong_winner = good.clone();
    wrong_winner.topology = "34".repeat(32);
    wrong_winner.buckets[0].winner = Some(Schedule::with_workgroup(128));
    for m in [&stale_source, &stale_version, &unknown, &wrong_winner] {
        cache_a.store(m).unwrap();
    }
    // A manifest moved into another machine's folder is left out of the export.
    let misfiled = a.join("56".repeat(32)).join(
        std::fs::read_dir(a.join(&good.topology))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .find(|n| n.to_string_lossy().ends_with(".json"))
            .unwrap(),
    );
    std::fs::create_dir_all(misfiled.parent().unwrap()).unwrap();
    std::fs::write(&misfiled, serde_json::to_vec(&good).unwrap()).unwrap();

    let export = ManifestBundle::from_cache(&cache_a).unwrap();
    assert_eq!(export.skipped.len(), 1, "{:?}", export.skipped);
    assert_eq!(export.skipped[0].0, misfiled);
    assert!(
        export.skipped[0]
            .1
            .contains("sits in the folder of topology"),
        "{:?}",
        export.skipped
    );
    let mut bundle = export.bundle;
    assert_eq!(bundle.entries().len(), 6);
    // One filed by hand under a topology it was not tuned on, and one that is no manifest.
    let text = bundle
        .entries()
        .iter()
        .find(|e| e.manifest() == Ok(&good))
        .unwrap()
        .text()
        .to_string();
    bundle.push(BundleEntry::new("78".repeat(32), "affine", text.clone()));
    // A second copy of the good entry: the first is imported, the copy rejected.
    bundle.push(BundleEntry::new(good.topology.clone(), "affine", text));
    bundle.push(BundleEntry::new(
        "9a".repeat(32),
        "affine",
        "{\"kernel\": 1}",
    ));
    // Through bytes, as a file would carry it.
    let bundle = ManifestBundle::from_bytes(&bundle.to_bytes().unwrap()).unwrap();

    let report = bundle
        .import_into(&ManifestCache::new(&b), &[K], false)
        .unwrap();
    assert!(
        report
            .to_string()
            .starts_with("imported 2, kept 0 existing, rejected 7"),
        "{report}"
    );
    assert!(
        report
            .rejected
            .iter()
            .any(|(_, why)| why.contains("another entry for this kernel, topology and backend")),
        "{report}"
    );
    let reason = |label_part: &str| -> String {
        let hits: Vec<&(String, String)> = report
            .rejected
            .iter()
            .filter(|(l, _)| l.contains(label_part))
            .collect();
        assert_eq!(hits.len(), 1, "{label_part}: {report}");
        hits[0].1.clone()
    };
    assert!(reason("@000000000000").contains("the kernel's source changed"));
    assert!(reason(&"12".repeat(6)).contains("written by version 0.0.1-old"));
    assert!(reason("mystery@").contains("unknown kernel `mystery`"));
    let why = reason(&"34".repeat(6));
    assert!(
        why.contains("wg=128") && why.contains("did not pass certification"),
        "{why}"
    );
    assert!(reason(&"78".repeat(6)).contains("filed under topology 787878787878"));
    assert!(reason(&"9a".repeat(6)).contains("not a usable manifest"));
    // What was imported: this machine's manifest and the other machine's, byte for byte.
    let mut imported: Vec<&Path> = report.imported.iter().map(|(_, p)| p.as_path()).collect();
    imported.sort();
    for p in imported {
        let rel = p.strip_prefix(&b).unwrap();
        assert_eq!(
            std::fs::read(p).unwrap(),
            std::fs::read(a.join(rel)).unwrap()
        );
    }
    assert_eq!(files(&b).len(), 2);
}

#[test]
fn a_runtime_with_an_embedded_bundle_runs_the_bundles_winner() {
    let a = temp_dir("embed");
    let path = tune_affine(&a).0;
    // The bundle's winner is a certified candidate other than the declared schedule (and
    // perhaps not the fastest), so that the schedule chosen says where it came from.
    let mut m = read_manifest(&path);
    let chosen = Schedule::with_workgroup(32);
    assert_ne!(chosen, K.default_schedule());
    m.buckets[0].winner = Some(chosen);
    ManifestCache::new(&a).store(&m).unwrap();
    let bytes: &'static [u8] = ManifestBundle::from_cache(&ManifestCache::new(&a))
        .unwrap()
        .bundle
        .to_bytes()
        .unwrap()
        .leak();

    // No cache directory, as on the web (and an empty one, as on a fresh machine).
    let fresh = temp_dir("embed-fresh");
    for dir in [None, Some(fresh.as_path())] {
        let mut b = ForgeRuntime::builder()
            .capacity(256 << 20)
            .manifest_bundle(bytes);
        if let Some(d) = dir {
            b = b.cache_dir(d);
        }
        let mut rt = b.build().expect("builds");
        assert_eq!(rt.manifest_bundle().map(|b| b.entries().len()), Some(1));
        assert_eq!(rt.tuned_schedule(K), Some(chosen), "cache dir {dir:?}");
        assert_eq!(rt.schedule_for(K), chosen);
        assert_eq!(rt.schedule_for_threads(K, 1000), chosen);
        assert_affine_correct(&mut rt);
    }
    // The bundle is read, never written into the cache.
    assert!(files(&fresh)
        .iter()
        .all(|f| f.0.extension().is_none_or(|e| e != "json")));

    // A trusted manifest in the cache comes first.
    let cache = temp_dir("embed-cache");
    let mut own = m.clone();
    own.buckets[0].winner = Some(K.default_schedule());
    ManifestCache::new(&cache).store(&own).unwrap();
    let rt = ForgeRuntime::builder()
        .cache_dir(&cache)
        .manifest_bundle(bytes)
        .build()
        .unwrap();
    assert_eq!(rt.schedule_for(K), K.default_schedule());

    // An entry for other hardware, or an untrusted winner, is not used: the declared
    // schedule is.
    let mut elsewhere = m.clone();
    elsewhere.topology = "ef".repeat(32);
    let mut untrusted = m.clone();
    untrusted.buckets[0].winner = Some(Schedule::with_workgroup(128));
    for (what, entry) in [
        (
            "other hardware",
            BundleEntry::new(
                elsewhere.topology.clone(),
                "affine",
                serde_json::to_string(&elsewhere).unwrap(),
            ),
        ),
        (
            "a failed winner",
            BundleEntry::new(
                m.topology.clone(),
                "affine",
                serde_json::to_string(&untrusted).unwrap(),
            ),
        ),
    ] {
        let mut bundle = ManifestBundle::new();
        bundle.push(entry);
        let rt = ForgeRuntime::builder()
            .manifest_bundle(bundle.to_bytes().unwrap())
            .build()
            .unwrap();
        assert_eq!(rt.tuned_schedule(K), None, "{what}");
        assert_eq!(rt.schedule_for(K), K.default_schedule(), "{what}");
    }
}

/// One kernel tuned through the WGSL and the SPIR-V emission into one cache keeps both
/// manifests: each runtime finds its own winner afterwards, and neither tune overwrote the
/// other's file (before, both lived at one path, and the second tune's manifest was then
/// ignored by the first backend as written for another one).
#[test]
fn wgsl_and_spirv_tunes_of_one_kernel_keep_both_manifests() {
    let cache = temp_dir("backends");
    let open = |backend: Backend| {
        ForgeRuntime::builder()
            .capacity(256 << 20)
            .cache_dir(cache.clone())
            .emission(backend)
            .build()
            .expect("a GPU adapter (lavapipe in CI) with SPIR-V passthrough")
    };
    let mut winners = Vec::new();
    for backend in [Backend::Wgsl, Backend::Spirv] {
        let mut rt = open(backend);
        let report = tune::tune(&mut rt, &affine::Kernel, &quick()).expect("tuning runs");
        let winner = report.winner().expect("a certified winner");
        assert_ne!(winner.workgroup, 128, "the wrong schedule never wins");
        winners.push(winner);
    }
    let mut files: Vec<String> = std::fs::read_dir(cache.join(open(Backend::Wgsl).topology_hash()))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let wgsl = manifest_file(&affine::Kernel);
    let spirv = wgsl.replace(".json", ".spirv.json");
    assert_eq!(files, vec![wgsl, spirv]);
    for (backend, winner) in [Backend::Wgsl, Backend::Spirv].into_iter().zip(winners) {
        let mut rt = open(backend);
        assert_eq!(
            rt.tuned_schedule(&affine::Kernel),
            Some(winner),
            "{backend}"
        );
        assert_affine_correct(&mut rt);
    }
    let _ = std::fs::remove_dir_all(&cache);
}
