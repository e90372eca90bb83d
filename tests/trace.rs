//! Traces on the real adapter (lavapipe in CI, which has timestamp queries): the file a
//! traced runtime writes is valid Trace Event JSON, its launch events are the calls made
//! (count, names, order), GPU times are positive, in order and inside the host calls that
//! waited for them, transfers, compiles and spans are there, and tracing adds no
//! submission. Every result is checked against a reference, so a traced launch still
//! computes right.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tracing_subscriber::layer::SubscriberExt;
use wgsl_forge::kernels::axpy::axpy;
use wgsl_forge::prelude::*;
use wgsl_forge::trace::{gpu_track, SpanLayer};
use wgsl_forge::{Kernel, ScalarValue};

/// A fresh empty directory under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("forge-trace-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn random(rng: &mut ChaCha8Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// `rt.gemv` on random data, checked against an f64 loop.
fn checked_gemv(rt: &mut ForgeRuntime, rng: &mut ChaCha8Rng, m: usize, n: usize) {
    let (a, x) = (random(rng, m * n), random(rng, n));
    let y = rt.gemv(&a, &x, m, n).unwrap();
    for (r, got) in y.iter().enumerate() {
        let want: f64 = (0..n).map(|j| a[r * n + j] as f64 * x[j] as f64).sum();
        assert!(
            (*got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
            "y[{r}] = {got}, want {want}"
        );
    }
}

/// `axpy` on device tensors (upload, launch, download), checked against `a·x + y`.
fn checked_axpy(rt: &mut ForgeRuntime, rng: &mut ChaCha8Rng, n: usize) {
    let (x, y) = (random(rng, n), random(rng, n));
    let (tx, ty) = (rt.upload(&x).unwrap(), rt.upload(&y).unwrap());
    axpy::launch(rt, 2.5, &tx, &ty, n as u32).unwrap();
    let got = rt.download(&ty).unwrap();
    for i in 0..n {
        let want = 2.5 * x[i] + y[i];
        assert!(
            (got[i] - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "y[{i}] = {}, want {want}",
            got[i]
        );
    }
}

/// The trace file's complete events, after checking the file is Trace Event JSON: an
/// object with `traceEvents`, every event with a phase, a pid and a tid, every complete
/// event with a name, a category, a start and a duration that are finite and not negative,
/// and args.
fn events(path: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("valid JSON");
    let all = v["traceEvents"].as_array().expect("a traceEvents array");
    let pid = std::process::id() as u64;
    for e in all {
        assert!(e["ph"] == "X" || e["ph"] == "M", "{e}");
        assert_eq!(e["pid"].as_u64(), Some(pid), "{e}");
        assert!(e["tid"].is_u64(), "{e}");
    }
    let xs: Vec<Value> = all.iter().filter(|e| e["ph"] == "X").cloned().collect();
    for e in &xs {
        assert!(
            e["name"].is_string() && e["cat"].is_string() && e["args"].is_object(),
            "{e}"
        );
        for key in ["ts", "dur"] {
            let t = e[key].as_f64().unwrap_or(f64::NAN);
            assert!(t.is_finite() && t >= 0.0, "{key} of {e}");
        }
    }
    xs
}

fn of<'a>(xs: &'a [Value], cat: &str) -> Vec<&'a Value> {
    xs.iter().filter(|e| e["cat"] == cat).collect()
}

fn names(xs: &[&Value]) -> Vec<String> {
    xs.iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

fn ts(e: &Value) -> f64 {
    e["ts"].as_f64().unwrap()
}

fn end(e: &Value) -> f64 {
    ts(e) + e["dur"].as_f64().unwrap()
}

#[test]
fn a_trace_holds_every_launch_transfer_compile_and_span() {
    let dir = temp_dir("full");
    let path = dir.join("trace.json");
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let subscriber = tracing_subscriber::registry().with(SpanLayer::new());
    let gpu_id = tracing::subscriber::with_default(subscriber, || {
        let mut rt = ForgeRuntime::builder()
            .trace(&path)
            .build()
            .expect("an adapter");
        assert_eq!(
            rt.trace_path(),
            Some(std::path::absolute(&path).unwrap().as_path())
        );
        assert!(rt.has_timestamps(), "lavapipe has TIMESTAMP_QUERY");
        let span = tracing::info_span!("two_gemvs_and_an_axpy", seed = 18);
        let entered = span.enter();
        checked_gemv(&mut rt, &mut rng, 7, 13);
        checked_gemv(&mut rt, &mut rng, 300, 17);
        checked_axpy(&mut rt, &mut rng, 1000);
        drop(entered);
        rt.id()
        // The runtime drops here and writes the trace.
    });
    let xs = events(&path);

    // The host's view of each launch: the calls made, in order, with their schedule and
    // workgroups.
    let mut launches = of(&xs, "launch");
    launches.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    assert_eq!(names(&launches), ["gemv", "gemv", "axpy"]);
    for e in &launches {
        assert!(
            e["args"]["schedule"].as_str().unwrap().starts_with("wg="),
            "{e}"
        );
        let wg = e["args"]["workgroups"].as_array().unwrap();
        assert_eq!(wg.len(), 3, "{e}");
        assert!(wg.iter().all(|w| w.as_u64().unwrap() >= 1), "{e}");
    }
    // gemv runs a team of 64 per row: 300 rows at 256 a workgroup are 75 workgroups.
    assert_eq!(
        launches[1]["args"]["workgroups"],
        serde_json::json!([75, 1, 1])
    );

    // The GPU's view: the same launches on the device's own track, timed by its
    // timestamps: positive, one after another, and each inside the host call that waited
    // for it (gemv's calls read back; axpy's launch only records, its download waits).
    let gpu = of(&xs, "gpu");
    assert_eq!(names(&gpu), ["gemv", "gemv", "axpy"]);
    for (g, h) in gpu.iter().zip(&launches) {
        assert_eq!(g["tid"].as_u64(), Some(gpu_track(gpu_id)), "{g}");
        assert!(g["dur"].as_f64().unwrap() > 0.0, "{g}");
        assert_eq!(
            g["args"], h["args"],
            "the GPU event carries the launch's args"
        );
    }
    for pair in gpu.windows(2) {
        assert!(
            end(pair[0]) <= ts(pair[1]),
            "GPU events in order: {} then {}",
            pair[0],
            pair[1]
        );
    }
    const EPS: f64 = 1e-3;
    for (g, h) in gpu.iter().zip(&launches).take(2) {
        assert!(
            ts(g) + EPS >= ts(h) && end(g) <= end(h) + EPS,
            "{g} inside {h}"
        );
    }
    let downloads = of(&xs, "download");
    assert_eq!(downloads.len(), 1);
    assert!(ts(gpu[2]) + EPS >= ts(launches[2]) && end(gpu[2]) <= end(downloads[0]) + EPS);

    // Transfers, with their sizes.
    let uploads = of(&xs, "upload");
    assert_eq!(uploads.len(), 2);
    for e in uploads.iter().chain(&downloads) {
        assert_eq!(e["args"]["bytes"], 4000, "{e}");
        assert_eq!(e["args"]["elem"], "f32", "{e}");
    }
    // Each pipeline compiled once, before its first launch.
    let compiles = of(&xs, "compile");
    assert_eq!(names(&compiles), ["gemv", "axpy"]);
    assert!(compiles.iter().all(|e| e["args"]["ok"] == true));
    assert!(end(compiles[0]) <= end(launches[0]) && end(compiles[1]) <= end(launches[2]));
    // The span, around everything it covered, with its field.
    let spans: Vec<&Value> = of(&xs, "span")
        .into_iter()
        .filter(|e| e["name"] == "two_gemvs_and_an_axpy")
        .collect();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["args"]["seed"], 18);
    assert!(ts(spans[0]) <= ts(launches[0]) && end(spans[0]) >= end(downloads[0]));

    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file is left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Tracing changes neither what is submitted nor what is read back.
#[test]
fn tracing_adds_no_submission_or_readback() {
    let dir = temp_dir("stats");
    let run = |rt: &mut ForgeRuntime| {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        checked_gemv(rt, &mut rng, 64, 64);
        checked_axpy(rt, &mut rng, 65);
        checked_gemv(rt, &mut rng, 5, 1031);
        rt.stats()
    };
    let plain = run(&mut ForgeRuntime::builder().build().unwrap());
    let mut traced_rt = ForgeRuntime::builder()
        .trace(dir.join("t.json"))
        .build()
        .unwrap();
    let traced = run(&mut traced_rt);
    assert_eq!(plain.submissions, traced.submissions);
    assert_eq!(plain.readbacks, traced.readbacks);
    assert_eq!(plain.dispatches, traced.dispatches);
    assert_eq!(
        plain.submissions, 3,
        "a gemv call each, and the axpy launch with its download in one"
    );
    traced_rt.flush_trace().unwrap();
    assert_eq!(
        names(&of(&events(&dir.join("t.json")), "gpu")),
        ["gemv", "axpy", "gemv"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `flush_trace` writes what there is so far; a runtime without a trace has none; a path
/// that cannot be written fails the build with an error, not the drop with a panic.
#[test]
fn flush_writes_now_and_a_bad_path_is_an_error_at_build() {
    let dir = temp_dir("flush");
    let path = dir.join("t.json");
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut rt = ForgeRuntime::builder().trace(&path).build().unwrap();
    assert!(
        of(&events(&path), "launch").is_empty(),
        "an empty trace is written at build"
    );
    checked_gemv(&mut rt, &mut rng, 9, 1028);
    assert!(rt.flush_trace().unwrap());
    assert_eq!(of(&events(&path), "gpu").len(), 1);
    checked_gemv(&mut rt, &mut rng, 1, 1);
    rt.flush_trace().unwrap();
    assert_eq!(of(&events(&path), "gpu").len(), 2);
    drop(rt);

    let mut plain = ForgeRuntime::builder().build().unwrap();
    assert_eq!(plain.trace_path(), None);
    assert!(!plain.flush_trace().unwrap());

    for bad in [dir.clone(), dir.join("missing").join("t.json")] {
        match ForgeRuntime::builder().trace(&bad).build() {
            Err(e) => assert!(e.to_string().contains(&*dir.to_string_lossy()), "{e}"),
            Ok(_) => panic!("{} is not a trace file", bad.display()),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two runtimes on one path share its file: it holds both, each GPU on its own track,
/// whichever drops last.
#[test]
fn runtimes_on_one_path_share_the_file() {
    let dir = temp_dir("shared");
    let path = dir.join("t.json");
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut a = ForgeRuntime::builder().trace(&path).build().unwrap();
    let mut b = ForgeRuntime::builder().trace(&path).build().unwrap();
    checked_gemv(&mut a, &mut rng, 7, 13);
    checked_axpy(&mut b, &mut rng, 65);
    let (ia, ib) = (a.id(), b.id());
    drop(b);
    drop(a);
    let gpu = of(&events(&path), "gpu")
        .into_iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        gpu,
        [
            ("gemv".to_string(), gpu_track(ia)),
            ("axpy".to_string(), gpu_track(ib))
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Certification cases and tuning candidates are host events around the launches they
/// make, with their outcome.
#[test]
fn certification_cases_and_tuning_candidates_are_events() {
    use wgsl_forge::certify::{certify, CertOptions};
    use wgsl_forge::timing::TimingOptions;
    use wgsl_forge::tune::{tune, TuneOptions};
    let dir = temp_dir("procedures");
    let path = dir.join("t.json");
    let mut rt = ForgeRuntime::builder().trace(&path).build().unwrap();
    let schedule = rt.schedule_for(&axpy::Kernel);
    let report = certify(&mut rt, &axpy::Kernel, &schedule, &CertOptions::new(11)).unwrap();
    assert!(report.passed(), "{:?}", report.failures);
    rt.flush_trace().unwrap();
    let xs = events(&path);
    let cases = of(&xs, "certify");
    assert_eq!(cases.len(), report.cases);
    assert_eq!(report.cases, axpy::Kernel.cert_cases().len());
    let launches = of(&xs, "launch");
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(c["name"], "axpy");
        assert_eq!(c["args"]["case"], i);
        assert_eq!(c["args"]["passed"], true, "{c}");
        assert!(c["args"]["what"]
            .as_str()
            .unwrap()
            .contains(&format!("case {i}")));
        // Each case ran the kernel on the GPU at least once, inside the case.
        assert!(
            launches.iter().any(|l| ts(l) >= ts(c) && end(l) <= end(c)),
            "{c}"
        );
    }

    let quick = TuneOptions {
        problem: Some(vec![ScalarValue::F32(1.5), ScalarValue::U32(5000)]),
        timing: TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 2,
            target_pass_ns: 1.0e5,
            max_repeats: 16,
            ..TimingOptions::default()
        },
        rounds: 2,
        ..TuneOptions::default()
    };
    let tuned = tune(&mut rt, &axpy::Kernel, &quick).unwrap();
    rt.flush_trace().unwrap();
    let xs = events(&path);
    let timed: Vec<String> = tuned
        .bucket
        .candidates
        .iter()
        .filter(|c| c.median_ns().is_some())
        .map(|c| c.schedule.to_string())
        .collect();
    assert!(!timed.is_empty());
    let tunes = of(&xs, "tune");
    // Every timed candidate once per round, round by round.
    let want: Vec<(u64, String)> = (1..=2)
        .flat_map(|r| timed.iter().map(move |s| (r, s.clone())))
        .collect();
    let got: Vec<(u64, String)> = tunes
        .iter()
        .map(|e| {
            (
                e["args"]["round"].as_u64().unwrap(),
                e["args"]["schedule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got, want);
    for e in &tunes {
        assert_eq!(e["name"], "axpy");
        let problem =
            wgsl_forge::tune::describe_problem(&axpy::Kernel, quick.problem.as_ref().unwrap());
        assert_eq!(e["args"]["problem"], problem.as_str());
        assert!(e["args"]["median_ns"].as_f64().unwrap() > 0.0, "{e}");
    }
    // The tuner certified each candidate first: more certification cases than before.
    assert!(of(&xs, "certify").len() > report.cases);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One submission times at most `MAX_TIMED_LAUNCHES` launches on the GPU's track; the
/// launches past it keep their host event, and the next submission is timed again.
#[test]
fn launches_past_a_submissions_timestamp_slots_keep_their_host_event() {
    let dir = temp_dir("many");
    let path = dir.join("t.json");
    let mut rt = ForgeRuntime::builder().trace(&path).build().unwrap();
    let limit = forge_core::device::trace::MAX_TIMED_LAUNCHES as usize;
    let (n, launches) = (64usize, limit + 44);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (x, y) = (random(&mut rng, n), random(&mut rng, n));
    let (tx, ty) = (rt.upload(&x).unwrap(), rt.upload(&y).unwrap());
    // Every launch waits in the pending encoder; the download submits them all at once.
    for _ in 0..launches {
        axpy::launch(&mut rt, 0.5, &tx, &ty, n as u32).unwrap();
    }
    let got = rt.download(&ty).unwrap();
    let mut want = y.clone();
    for _ in 0..launches {
        for (w, xi) in want.iter_mut().zip(&x) {
            *w += 0.5 * xi;
        }
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "y[{i}] = {g}, want {w}"
        );
    }
    // A launch in a later submission is timed again.
    checked_axpy(&mut rt, &mut rng, 65);
    rt.flush_trace().unwrap();
    let all = events(&path);
    assert_eq!(of(&all, "launch").len(), launches + 1);
    assert_eq!(of(&all, "gpu").len(), limit + 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
