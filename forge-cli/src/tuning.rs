//! The tuning commands of `forge`: `auto-tune-all`, `tune KERNEL [--plot out.svg]`,
//! `cache ls`, `cache clear`, `cache export FILE` and `cache import FILE [--replace]`.

use forge_cli::bench::roofline::rate;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use wgsl_forge::certify::{CertOptions, Verdict};
use wgsl_forge::manifest::{BucketTuning, CandidateResult, ManifestBundle, ManifestCache};
use wgsl_forge::roofline::{Cost, Roof};
use wgsl_forge::tune::{self, TuneEvent, TuneOptions, TuneReport};
use wgsl_forge::{Backend, ForgeError, ForgeRuntime, Kernel};

use crate::out::{self, outln};
use crate::CliError;

/// `FORGE_CACHE_DIR` (an error when it is not UTF-8, as the library's builder has it), else
/// `~/.cache/wgsl-forge` (or under `$XDG_CACHE_HOME`): where the CLI keeps manifests when
/// `--cache-dir` names no directory.
pub fn default_cache_dir() -> Result<Option<PathBuf>, ForgeError> {
    if let Some(dir) = forge_core::env::path(wgsl_forge::runtime::ENV_CACHE_DIR)? {
        return Ok(Some(dir));
    }
    // Not ours: a home that is not UTF-8 is still a home.
    let nonempty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty());
    Ok(nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|d| d.join("wgsl-forge")))
}

fn options(seed: u64, problem: Option<Vec<wgsl_forge::ScalarValue>>) -> TuneOptions {
    TuneOptions {
        cert: CertOptions::new(seed),
        problem,
        ..TuneOptions::default()
    }
}

fn fmt_ns(ns: Option<f64>) -> String {
    match ns {
        None => "-".into(),
        Some(ns) if ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
        Some(ns) if ns >= 1e3 => format!("{:.1} us", ns / 1e3),
        Some(ns) => format!("{ns:.0} ns"),
    }
}

fn fmt_speedup(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.2}x"))
}

fn where_stored(rt: &ForgeRuntime, report: &TuneReport) -> Result<(), CliError> {
    match (&report.stored, &report.store_error, rt.cache_dir()) {
        (Some(path), _, _) => outln!("manifest: {}", out::path(path)),
        (None, Some(e), _) => {
            outln!(
                "manifest NOT written ({}); the result was used for this run only",
                out::shown(e)
            )
        }
        (None, None, None) => outln!("manifest not written: no cache directory"),
        (None, None, Some(_)) => {}
    }
    Ok(())
}

/// Writes `line` to stderr, above the progress bar where one is drawn. Not
/// `ProgressBar::println`: that prints nothing while the bar is hidden, which it is
/// whenever stderr is not a terminal (CI, logs, pipes), and the line would be lost.
fn say(bar: &ProgressBar, line: &str) {
    bar.suspend(|| {
        use std::io::Write;
        // stderr may be closed: what cannot be said is dropped, never a panic.
        let _ = writeln!(std::io::stderr(), "{line}");
    });
}

/// Whether `kernel` can run on `rt`: where it cannot (a feature the adapter lacks, such as
/// cooperative matrices on lavapipe), says so ([`out::skip`]), as `forge certify` does, and
/// returns `false`.
fn runnable(
    rt: &ForgeRuntime,
    kernel: &dyn Kernel,
    label: &str,
    json: bool,
) -> Result<bool, CliError> {
    match rt.cannot_run(kernel) {
        None => Ok(true),
        Some(why) => out::skip(label, &why, json).map(|()| false),
    }
}

/// `forge auto-tune-all`: tunes every built-in kernel, with a progress bar over all
/// candidates, then prints a summary. A kernel the adapter cannot run is skipped with its
/// reason; the command fails only when a kernel it ran failed.
pub fn auto_tune_all(
    rt: &mut ForgeRuntime,
    kernels: &[&'static dyn Kernel],
    seed: u64,
) -> Result<ExitCode, CliError> {
    let opts = options(seed, None);
    let mut runs = Vec::with_capacity(kernels.len());
    for &k in kernels {
        if runnable(rt, k, &forge_cli::select::label(k, kernels), false)? {
            runs.push(k);
        }
    }
    let total: usize = runs.iter().map(|k| tune::steps(*k, &opts)).sum();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:32} {pos}/{len} steps  {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let mut reports = Vec::with_capacity(runs.len());
    let mut errors = Vec::new();
    for &k in &runs {
        let base = bar.position();
        let result = tune::tune_with_progress(rt, k, &opts, &mut |event| match event {
            TuneEvent::Step {
                kernel,
                schedule,
                what,
                step,
                ..
            } => {
                bar.set_position(base + step as u64);
                bar.set_message(format!("{kernel} [{schedule}]: {what}"));
            }
        });
        // Candidates that failed certification skip their timing steps.
        bar.set_position(base + tune::steps(k, &opts) as u64);
        match result {
            Ok(mut r) => {
                r.kernel = forge_cli::select::label(k, kernels);
                reports.push(r);
            }
            Err(e @ ForgeError::DeviceLost(_)) => {
                bar.abandon();
                return Err(e.into());
            }
            Err(e) => {
                let label = forge_cli::select::label(k, kernels);
                say(
                    &bar,
                    &format!("error: tuning `{label}`: {}", out::escape(&e.to_string())),
                );
                errors.push(label);
            }
        }
    }
    bar.finish_and_clear();
    let elapsed = start.elapsed();

    outln!(
        "adapter: {} ({:?}), emission {}, seed {seed}",
        out::escape(&rt.adapter_info().name),
        rt.adapter_info().backend,
        rt.emission()
    );
    let rows: Vec<[String; 7]> = reports
        .iter()
        .map(|r| {
            let passed = r
                .bucket
                .candidates
                .iter()
                .filter(|c| c.verdict == Some(Verdict::Pass))
                .count();
            [
                r.kernel.clone(),
                out::cell(&r.bucket.problem, 40),
                format!("{passed}/{}", r.bucket.candidates.len()),
                r.winner()
                    .map_or_else(|| "none (default used)".into(), |w| w.to_string()),
                fmt_ns(r.winner_ns()),
                fmt_ns(r.default_ns()),
                fmt_speedup(r.speedup()),
            ]
        })
        .collect();
    out::table(
        &[
            "kernel",
            "problem",
            "certified",
            "winner",
            "time",
            "default",
            "speedup",
        ],
        &rows,
    )?;
    outln!();
    let stored = reports.iter().filter(|r| r.stored.is_some()).count();
    match rt.cache_dir() {
        Some(dir) if stored == reports.len() => {
            outln!(
                "{stored} manifests written under {}",
                out::path(&dir.join(rt.topology_hash()))
            )
        }
        Some(dir) => outln!(
            "{stored} of {} manifests written under {}; see the warnings above",
            reports.len(),
            out::path(dir)
        ),
        None => outln!("no cache directory: nothing was written"),
    }
    outln!(
        "tuned {} kernels in {:.1} s",
        reports.len(),
        elapsed.as_secs_f64()
    );
    for r in &reports {
        for c in r
            .bucket
            .candidates
            .iter()
            .filter(|c| c.verdict == Some(Verdict::Fail))
        {
            outln!(
                "FAIL {} [{}]: {}",
                r.kernel,
                c.schedule,
                c.note.as_deref().unwrap_or("")
            );
        }
    }
    if errors.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    // The per-kernel errors went to stderr as they came; the count and the names end it,
    // where a log's reader looks first.
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "error: {} of {} kernels could not be tuned: {}; their errors are above",
        errors.len(),
        runs.len(),
        errors.join(", ")
    );
    Ok(ExitCode::FAILURE)
}

/// One backend's tuning, as `forge tune --backends` reports it.
#[derive(serde::Serialize)]
struct BackendWinner {
    backend: &'static str,
    adapter: String,
    topology: String,
    problem: String,
    winner: Option<String>,
    winner_us: Option<f64>,
    default_us: Option<f64>,
    manifest: Option<String>,
}

/// `forge tune KERNEL --backends a,b,..`: tunes the kernel on each backend's own runtime
/// (`open` makes it), one after another, with the same seed and problem, then says which
/// backend's winner is fastest and by how much. Every backend's manifest is stored under
/// its own topology and emission, so each backend's calls keep using their own winner; the
/// comparison is what a program choosing its backend would read.
pub fn tune_backends(
    open: &mut dyn FnMut(Backend) -> Result<ForgeRuntime, ForgeError>,
    kernel: &'static dyn Kernel,
    seed: u64,
    problem: Option<Vec<wgsl_forge::ScalarValue>>,
    backends: &[Backend],
    json: bool,
) -> Result<ExitCode, CliError> {
    let opts = options(seed, problem);
    // Every runtime first: a backend that cannot open fails before any tuning.
    let runtimes = backends
        .iter()
        .map(|&b| open(b).map(|rt| (b, rt)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows: Vec<BackendWinner> = Vec::with_capacity(backends.len());
    let mut skipped = 0;
    for (b, mut rt) in runtimes {
        if !runnable(&rt, kernel, &format!("{} on {b}", kernel.name()), json)? {
            skipped += 1;
            continue;
        }
        let report = tune::tune(&mut rt, kernel, &opts)?;
        rows.push(BackendWinner {
            backend: b.name(),
            adapter: rt.adapter_info().name.clone(),
            topology: rt.topology_hash(),
            problem: report.bucket.problem.clone(),
            winner: report.winner().map(|s| s.to_string()),
            winner_us: report.winner_ns().map(|ns| ns / 1e3),
            default_us: report.default_ns().map(|ns| ns / 1e3),
            manifest: report.stored.as_ref().map(|p| p.display().to_string()),
        });
    }
    let fastest = rows
        .iter()
        .filter_map(|r| r.winner_us.map(|t| (r, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if json {
        let value = serde_json::json!({
            "kernel": kernel.name(),
            "backends": rows,
            "fastest": fastest.map(|(r, _)| r.backend),
        });
        let text = serde_json::to_string_pretty(&value).map_err(|e| ForgeError::Io {
            context: "writing JSON".into(),
            source: std::io::Error::other(e),
        })?;
        outln!("{text}");
    } else {
        let us = |t: Option<f64>| fmt_ns(t.map(|t| t * 1e3));
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.backend.to_string(),
                    out::cell(&r.adapter, 24),
                    r.winner.clone().unwrap_or_else(|| "none".into()),
                    us(r.winner_us),
                    us(r.default_us),
                    match (fastest, r.winner_us) {
                        (Some((_, best)), Some(t)) => format!("{:.2}x", t / best),
                        _ => "-".into(),
                    },
                ]
            })
            .collect();
        outln!(
            "kernel {} tuned on {} backends; problem {}",
            kernel.name(),
            rows.len(),
            rows.first().map_or("-", |r| r.problem.as_str())
        );
        out::table(
            &[
                "backend",
                "adapter",
                "winner",
                "time",
                "declared",
                "vs fastest",
            ],
            &table,
        )?;
        match fastest {
            Some((r, t)) => outln!(
                "fastest: {} at {} ({}); its manifest: {}",
                r.backend,
                r.winner.as_deref().unwrap_or("-"),
                us(Some(t)),
                r.manifest
                    .as_deref()
                    .map_or_else(|| "not written".into(), out::shown)
            ),
            None => outln!("no backend had a winner"),
        }
    }
    // Backends that cannot run the kernel were skipped, which is no failure; one that ran
    // and found no winner is.
    Ok(if fastest.is_some() || (rows.is_empty() && skipped > 0) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `forge tune KERNEL`: tunes one kernel and prints every candidate; `--plot` draws them.
pub fn tune_one(
    rt: &mut ForgeRuntime,
    kernel: &'static dyn Kernel,
    seed: u64,
    problem: Option<Vec<wgsl_forge::ScalarValue>>,
    plot: Option<&Path>,
    json: bool,
) -> Result<ExitCode, CliError> {
    // The plot is written last: a path it may not replace fails before the tuning.
    if let Some(path) = plot {
        forge_core::files::check_replaceable(path)?;
    }
    // A kernel the adapter cannot run is skipped, with its reason, as `forge certify` and
    // `forge auto-tune-all` skip it: nothing was tuned, and nothing failed.
    if !runnable(rt, kernel, kernel.name(), json)? {
        return Ok(ExitCode::SUCCESS);
    }
    let opts = options(seed, problem);
    let report = tune::tune(rt, kernel, &opts)?;
    if json {
        let text = serde_json::to_string_pretty(&report.manifest).map_err(|e| ForgeError::Io {
            context: "writing JSON".into(),
            source: std::io::Error::other(e),
        })?;
        outln!("{text}");
    } else {
        // The achieved rates, where the kernel declares its cost: bytes against a copy of
        // the same traffic timed now, on the same adapter.
        let cost = kernel.cost(&report.bucket.scalars)?;
        let copy = cost
            .bytes
            .map(|b| forge_cli::bench::copy_gbps_at(rt, b))
            .transpose()?;
        let roof = Roof {
            copy_gbps: copy.map(|(_, gbps)| gbps),
            peak_tflops: None,
        };
        print_candidates(rt, &report, &cost, &roof)?;
        if let (Some(b), Some((copied, gbps))) = (cost.bytes, copy) {
            outln!(
                "cost at {}: {b} bytes{}; a device copy of {copied} bytes: {gbps:.1} GB/s",
                report.bucket.problem,
                cost.flops
                    .map(|f| format!(", {f} flops"))
                    .unwrap_or_default()
            );
        }
        where_stored(rt, &report)?;
    }
    if let Some(path) = plot {
        plot_svg(
            &report.kernel,
            &report.bucket,
            report.default_schedule,
            path,
        )?;
        if !json {
            outln!("plot: {}", out::path(path));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_candidates(
    rt: &ForgeRuntime,
    r: &TuneReport,
    cost: &Cost,
    roof: &Roof,
) -> Result<(), CliError> {
    outln!(
        "kernel {} on {} ({:?}), emission {}; problem {} (bucket {}: 2^{} threads)",
        r.kernel,
        out::escape(&rt.adapter_info().name),
        rt.adapter_info().backend,
        rt.emission(),
        r.bucket.problem,
        r.bucket.bucket,
        r.bucket.bucket
    );
    let default_ns = r.default_ns();
    let rows: Vec<Vec<String>> = r
        .bucket
        .candidates
        .iter()
        .map(|c| {
            let mut mark = String::new();
            if Some(c.schedule) == r.winner() {
                mark.push_str(" *winner*");
            }
            if c.schedule == r.default_schedule {
                mark.push_str(" (default)");
            }
            let mut row = vec![
                format!("{}{mark}", c.schedule),
                c.verdict
                    .map_or_else(|| "skipped".into(), |v| v.to_string()),
                if c.verdict.is_some() {
                    format!("{:.1e}", c.max_abs_err)
                } else {
                    "-".into()
                },
                fmt_ns(c.median_ns()),
                c.timing.as_ref().map_or_else(
                    || "-".into(),
                    |t| format!("{}x{}", t.samples.len(), t.repeats),
                ),
                fmt_speedup(default_ns.zip(c.median_ns()).map(|(d, n)| d / n)),
            ];
            let a = c.median_ns().map(|ns| cost.achieved(ns, roof));
            let f = |v: Option<f64>, p: usize| v.map_or_else(|| "-".into(), |x| format!("{x:.p$}"));
            if cost.bytes.is_some() {
                row.push(f(a.and_then(|a| a.gbps), 1));
                row.push(f(a.and_then(|a| a.frac_copy), 2));
            }
            if cost.flops.is_some() {
                row.push(a.and_then(|a| a.tflops).map_or_else(|| "-".into(), rate));
            }
            row
        })
        .collect();
    let mut headers = vec![
        "schedule",
        "verdict",
        "max abs err",
        "median",
        "passes x repeats",
        "vs default",
    ];
    if cost.bytes.is_some() {
        headers.extend(["GB/s", "of copy"]);
    }
    if cost.flops.is_some() {
        headers.push("FLOP/s");
    }
    out::table(&headers, &rows)?;
    for c in &r.bucket.candidates {
        if let (Some(note), false) = (&c.note, c.eligible()) {
            outln!("  {}: {}", c.schedule, out::escape(note));
        }
    }
    Ok(())
}

/// An SVG bar chart of the candidates' median times, one horizontal bar per candidate with
/// min–max whiskers: the winner in green, the declared schedule in blue, others grey;
/// candidates that could not win get an empty row that says why.
pub fn plot_svg(
    kernel: &str,
    bucket: &BucketTuning,
    default: wgsl_forge::Schedule,
    path: &Path,
) -> Result<(), ForgeError> {
    let plot_error = |e: String| ForgeError::Io {
        context: format!("drawing `{}`", out::path(path)),
        source: std::io::Error::other(e),
    };
    // Drawn into memory, then written atomically: an interrupted or failed plot never leaves
    // a truncated SVG where an earlier one was.
    let mut svg = String::new();
    draw_bars(kernel, bucket, &default, &mut svg).map_err(plot_error)?;
    forge_core::files::write_atomically(path, svg.as_bytes())
}

/// The chart of [`plot_svg`], drawn into `svg`.
fn draw_bars(
    kernel: &str,
    bucket: &BucketTuning,
    default: &wgsl_forge::Schedule,
    svg: &mut String,
) -> Result<(), String> {
    use plotters::prelude::*;
    let cands: &[CandidateResult] = &bucket.candidates;
    let n = cands.len().max(1);
    // (median, min, max) in microseconds, for candidates that can win.
    let times_us: Vec<Option<(f64, f64, f64)>> = cands
        .iter()
        .map(|c| {
            let t = c.timing.as_ref().filter(|_| c.eligible())?;
            let max = t.samples.iter().copied().fold(0.0, f64::max);
            Some((t.median_ns / 1e3, t.min_ns() / 1e3, max / 1e3))
        })
        .collect();
    let right = times_us
        .iter()
        .flatten()
        .map(|t| t.2)
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.1;
    let height = 140 + 34 * n as u32;
    let root = SVGBackend::with_string(svg, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let caption = format!(
        "{kernel}: time per dispatch, {} (green: winner, blue: declared)",
        bucket.problem
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(170)
        .build_cartesian_2d(0.0..right, (0..n.max(2) - 1).into_segmented())
        .map_err(|e| e.to_string())?;
    // The first candidate on top.
    let row = |i: usize| n - 1 - i;
    // A single candidate gets an empty second row (a one-value axis draws no label).
    let label = |i: usize| -> String {
        (n - 1)
            .checked_sub(i)
            .and_then(|r| cands.get(r))
            .map(|c| c.schedule.to_string())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("median microseconds per dispatch (whiskers: fastest and slowest pass)")
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => label(*i),
            _ => String::new(),
        })
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(|e| e.to_string())?;
    let winner = bucket.winner;
    chart
        .draw_series(
            cands
                .iter()
                .zip(&times_us)
                .enumerate()
                .filter_map(|(i, (c, t))| {
                    let (median, _, _) = (*t)?;
                    let color = if Some(c.schedule) == winner {
                        RGBColor(40, 170, 70)
                    } else if c.schedule == *default {
                        RGBColor(70, 110, 220)
                    } else {
                        RGBColor(160, 160, 160)
                    };
                    let mut bar = Rectangle::new(
                        [
                            (0.0, SegmentValue::Exact(row(i))),
                            (median, SegmentValue::Exact(row(i) + 1)),
                        ],
                        color.filled(),
                    );
                    bar.set_margin(5, 5, 0, 0);
                    Some(bar)
                }),
        )
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(times_us.iter().enumerate().filter_map(|(i, t)| {
            let (median, lo, hi) = (*t)?;
            Some(ErrorBar::new_horizontal(
                SegmentValue::CenterOf(row(i)),
                lo,
                median,
                hi,
                BLACK.filled(),
                8,
            ))
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            cands
                .iter()
                .zip(&times_us)
                .enumerate()
                .filter(|(_, (_, t))| t.is_none())
                .map(|(i, (c, _))| {
                    let why = match c.verdict {
                        Some(Verdict::Fail) => "FAILED certification: never timed",
                        None => "skipped: over the adapter's limits",
                        Some(Verdict::Pass) => "timing failed",
                    };
                    Text::new(
                        why.to_string(),
                        (right * 0.01, SegmentValue::CenterOf(row(i))),
                        ("sans-serif", 13).into_font().color(&RED),
                    )
                }),
        )
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// `forge cache ls`: every manifest under the cache directory.
pub fn cache_ls(dir: &Path, current_topology: Option<&str>) -> Result<ExitCode, CliError> {
    let cache = ManifestCache::new(dir);
    let entries = cache.list()?;
    outln!("cache: {}", out::path(dir));
    if entries.is_empty() {
        outln!("(no manifests)");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            let here = if current_topology == Some(e.topology.as_str()) {
                "*"
            } else {
                ""
            };
            let topo = format!("{}{here}", out::cell(&e.topology, 12));
            let file = e
                .path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            match &e.manifest {
                // Every string of a manifest is the file's, not ours: escaped and cut.
                Ok(m) => [
                    topo,
                    // The kernel's identity, as the other commands take it.
                    format!(
                        "{}@{}",
                        out::cell(&m.kernel, out::MAX_CELL),
                        out::cell(&m.kernel_hash, 12)
                    ),
                    out::cell(&m.adapter, out::MAX_CELL),
                    out::cell(
                        &m.buckets
                            .iter()
                            .map(|b| b.bucket.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                        out::MAX_CELL,
                    ),
                    m.winner().map_or_else(|| "none".into(), |w| w.to_string()),
                    out::cell(
                        &format!("v{} {}", m.crate_version, m.backend),
                        out::MAX_CELL,
                    ),
                ],
                Err(why) => [
                    topo,
                    out::cell(&file, out::MAX_CELL),
                    out::cell(&format!("unreadable: {why}"), 2 * out::MAX_CELL),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ],
            }
        })
        .collect();
    out::table(
        &[
            "topology",
            "kernel",
            "adapter",
            "buckets",
            "winner",
            "written by",
        ],
        &rows,
    )?;
    if current_topology.is_some() {
        outln!("(* this machine's adapter)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `forge cache clear`: removes every manifest under the cache directory, and the driver's
/// pipeline caches kept beside them (files it wrote, checked by their format tag).
pub fn cache_clear(dir: &Path) -> Result<ExitCode, CliError> {
    let (removed, pipelines) =
        ManifestCache::new(dir).clear_with(&forge_core::device::disk_cache::is_ours)?;
    outln!(
        "removed {removed} manifests and {pipelines} pipeline caches from {}",
        out::path(dir)
    );
    Ok(ExitCode::SUCCESS)
}

/// `forge cache export FILE`: every manifest under the cache directory as one bundle file,
/// written atomically. Files the cache would never load are named and left out.
pub fn cache_export(dir: &Path, file: &Path) -> Result<ExitCode, CliError> {
    let export = ManifestBundle::from_cache(&ManifestCache::new(dir))?;
    export.bundle.write(file)?;
    for (path, why) in &export.skipped {
        outln!("skipped {}: {}", out::path(path), out::shown(why));
    }
    outln!(
        "exported {} manifests from {} to {}{}",
        export.bundle.entries().len(),
        out::path(dir),
        out::path(file),
        if export.skipped.is_empty() {
            String::new()
        } else {
            format!(" ({} files skipped)", export.skipped.len())
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `forge cache import FILE [--replace]`: the bundle's manifests into the cache directory,
/// each checked against the built-in kernels as loading checks it. A bundle that cannot
/// be used as a whole is an error and nothing is written; a rejected entry is named with
/// its reason, and the command still succeeds.
pub fn cache_import(dir: &Path, file: &Path, replace: bool) -> Result<ExitCode, CliError> {
    let bundle = ManifestBundle::read(file)?;
    let kernels = wgsl_forge::kernels::registry::builtin();
    let report = bundle.import_into(&ManifestCache::new(dir), &kernels, replace)?;
    for (label, path) in &report.imported {
        outln!("imported {} to {}", out::shown(label), out::path(path));
    }
    for (label, _) in &report.kept {
        outln!(
            "kept {}: a trusted manifest is already there (--replace replaces it)",
            out::shown(label)
        );
    }
    outln!("{}", report.summary());
    for (label, why) in &report.rejected {
        outln!("  rejected {}: {}", out::shown(label), out::shown(why));
    }
    Ok(ExitCode::SUCCESS)
}
