//! WGSL Forge in the browser: the certifier run on the page's WebGPU (issue 17).
//!
//! [`certify_page`] is the browser's `forge certify`: every built-in kernel, every example's
//! kernel and the contract's kernels ([`examples`]), at their default schedules (or at every
//! schedule of their tuning spaces), certified by [`certify_async`]: the GPU against the
//! oracle, the oracle against the independent reference, the GPU again with poisoned
//! outputs. The oracle and the references run here, in wasm. A kernel whose feature the
//! adapter lacks, or a schedule over its limits, is skipped with the reason, as the tuner
//! skips them; it is not a failure. Then [`timing::time_passed`] times every kernel that
//! passed with the adapter's timestamp queries.
//!
//! The same code runs natively (its tests drive it with pollster on lavapipe); in a
//! browser, `certify_in_browser` (wasm only) is what `web/page.mjs` calls, and
//! `bash scripts/web-certify` runs that page in headless Chromium.

use wgsl_forge::certify::{certify_async, CertOptions, CertReport};
use wgsl_forge::prelude::*;

pub mod examples;
pub mod timing;

/// The seed of the browser's test vectors: `forge certify`'s default.
pub const SEED: u64 = 0x5EED;

/// What became of one kernel at one schedule.
#[derive(Debug)]
pub enum Outcome {
    /// Certified: passed or failed, with the report.
    Certified(Box<CertReport>),
    /// Not run here, and why (a missing feature, a schedule over the adapter's limits).
    Skipped(String),
}

/// One row of the table.
pub struct Row {
    /// The kernel.
    pub kernel: &'static dyn Kernel,
    /// The schedule it was certified at (or skipped).
    pub schedule: Schedule,
    /// What happened.
    pub outcome: Outcome,
}

impl Row {
    /// Whether the row counts as a certification that passed.
    pub fn passed(&self) -> bool {
        matches!(&self.outcome, Outcome::Certified(r) if r.passed())
    }

    /// The row as `forge certify`'s table shows it, then a line per failure or skip.
    pub fn lines(&self) -> Vec<String> {
        match &self.outcome {
            Outcome::Certified(r) => {
                let cases = if r.skipped.is_empty() {
                    r.cases.to_string()
                } else {
                    format!("{} ({} skipped)", r.cases, r.skipped.len())
                };
                let mut lines = vec![format!(
                    "{:<24} {:<36} {:<14} {:.2e} abs / {:.2e} rel  {}",
                    self.kernel.name(),
                    self.schedule.to_string(),
                    cases,
                    r.max_abs_err,
                    r.max_rel_err,
                    r.verdict
                )];
                lines.extend(r.failures.iter().map(|f| format!("FAIL {f}")));
                lines.extend(r.skipped.iter().map(|s| format!("skip {s}")));
                lines
            }
            Outcome::Skipped(why) => vec![format!(
                "{:<24} {:<36} skipped: {why}",
                self.kernel.name(),
                self.schedule.to_string()
            )],
        }
    }
}

/// Why `kernel` cannot run at `schedule` on `rt`'s adapter, if it cannot.
pub fn skip_reason(rt: &ForgeRuntime, kernel: &dyn Kernel, schedule: &Schedule) -> Option<String> {
    if let Some(why) = rt.cannot_run(kernel) {
        return Some(why);
    }
    rt.check_schedule(kernel, schedule)
        .err()
        .map(|e| e.to_string())
}

/// Certifies each kernel of `kernels` at its default schedule, or at every schedule of its
/// tuning space with `every_schedule`, and hands each row's lines to `log` as it is done.
/// Only a lost device is an error: nothing after it could run.
pub async fn certify_kernels(
    rt: &mut ForgeRuntime,
    kernels: &[&'static dyn Kernel],
    every_schedule: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, ForgeError> {
    let opts = CertOptions::new(SEED);
    let mut rows = Vec::new();
    for &kernel in kernels {
        let schedules = if every_schedule {
            kernel.tune_space().candidates()
        } else {
            vec![rt.schedule_for(kernel)]
        };
        for schedule in schedules {
            let outcome = match skip_reason(rt, kernel, &schedule) {
                Some(why) => Outcome::Skipped(why),
                None => {
                    Outcome::Certified(Box::new(certify_async(rt, kernel, &schedule, &opts).await?))
                }
            };
            let row = Row {
                kernel,
                schedule,
                outcome,
            };
            for line in row.lines() {
                log(&line);
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The page's kernels, in the order it certifies them, each group with its heading: the
/// built-ins, the examples' kernels, the contract's kernels.
pub fn page_kernels() -> Vec<(&'static str, Vec<&'static dyn Kernel>)> {
    vec![
        ("built-in kernels", wgsl_forge::kernels::registry::builtin()),
        ("example kernels (examples/)", examples::example_kernels()),
        (
            "contract kernels (tests/contract_kernels, written from DESIGN.md)",
            examples::contract_kernels(),
        ),
    ]
}

/// Every kernel of [`page_kernels`], each group under its heading: see
/// [`certify_kernels`].
pub async fn certify_page(
    rt: &mut ForgeRuntime,
    every_schedule: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, ForgeError> {
    let mut rows = Vec::new();
    for (heading, kernels) in page_kernels() {
        log(&format!("{heading}:"));
        rows.extend(certify_kernels(rt, &kernels, every_schedule, log).await?);
    }
    Ok(rows)
}

/// The last line: `browser: N/M certifications passed` (skipped rows are not counted).
pub fn summary(rows: &[Row]) -> String {
    let certified = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Certified(_)))
        .count();
    let passed = rows.iter().filter(|r| r.passed()).count();
    let skipped = rows.len() - certified;
    let mut line = format!("browser: {passed}/{certified} certifications passed");
    if skipped > 0 {
        line.push_str(&format!(" ({skipped} skipped)"));
    }
    line
}

/// A kernel that leaves its last element unwritten, with a reference that mirrors the
/// bug: only the GPU run with poisoned outputs, compared with the oracle, can catch it.
/// The page certifies it with `?wrong=1`, and must then fail: the browser's comparison
/// of GPU results with the oracle bites.
#[forge_kernel(threads = n, reference = skips_last_reference, case(n = 10), case(n = 1000))]
pub fn skips_last(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i + 1 < n {
        y[i] = x[i] * x[i];
    }
}

fn skips_last_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
    let mut y: Vec<f32> = x.iter().map(|v| v * v).collect();
    if let Some(last) = y.last_mut() {
        *last = 0.0;
    }
    Ok(y)
}

#[cfg(target_arch = "wasm32")]
mod browser {
    use super::*;
    use wasm_bindgen::prelude::*;

    /// The page's entry: opens a runtime on the browser's WebGPU, certifies every kernel
    /// of [`page_kernels`] (`every_schedule`: at every schedule of its tuning space) and
    /// times those that passed, or certifies only [`skips_last`] with `wrong`, calling
    /// `log(line)` for each line of the table. Returns `{ ok, summary, timed }` as JSON;
    /// `ok` is false on any failure, or when nothing ran; `timed` is the number of kernels
    /// timed with timestamp queries (null when the adapter has none).
    #[wasm_bindgen]
    pub async fn certify_in_browser(
        every_schedule: bool,
        wrong: bool,
        log: js_sys::Function,
    ) -> String {
        let mut emit = |line: &str| {
            let _ = log.call1(&JsValue::NULL, &JsValue::from_str(line));
        };
        let (ok, summary, timed) = match run(every_schedule, wrong, &mut emit).await {
            Ok((rows, timed)) => {
                let certified = rows
                    .iter()
                    .any(|r| matches!(r.outcome, Outcome::Certified(_)));
                (
                    certified
                        && rows
                            .iter()
                            .all(|r| r.passed() || matches!(r.outcome, Outcome::Skipped(_))),
                    super::summary(&rows),
                    timed,
                )
            }
            Err(e) => (false, format!("browser: error: {e}"), None),
        };
        serde_json::json!({ "ok": ok, "summary": summary, "timed": timed }).to_string()
    }

    async fn run(
        every_schedule: bool,
        wrong: bool,
        log: &mut dyn FnMut(&str),
    ) -> Result<(Vec<Row>, Option<usize>), ForgeError> {
        let mut rt = ForgeRuntime::new_async(512 << 20).await?;
        let info = rt.adapter_info();
        // WebGPU does not give wgpu the adapter's name.
        let name = if info.name.is_empty() {
            "unnamed"
        } else {
            info.name.as_str()
        };
        log(&format!(
            "adapter: {name} ({:?}, timestamp queries: {}), emission {}, seed {SEED}",
            info.backend,
            if rt.has_timestamps() { "yes" } else { "no" },
            rt.emission()
        ));
        if wrong {
            let rows = certify_kernels(&mut rt, &[&skips_last::Kernel], false, log).await?;
            return Ok((rows, None));
        }
        let rows = certify_page(&mut rt, every_schedule, log).await?;
        let timed = timing::time_passed(&mut rt, &rows, log).await?;
        Ok((rows, timed.map(|t| t.len())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> ForgeRuntime {
        // A missing adapter fails the test: GPU tests never pass silently.
        pollster::block_on(ForgeRuntime::new_async(512 << 20))
            .expect("a GPU adapter (lavapipe in CI)")
    }

    /// What the page runs, run natively: every built-in, example and contract kernel
    /// passes, every line is logged, each group under its heading; then every kernel is
    /// timed with timestamp queries (lavapipe has them), at a positive time.
    #[test]
    fn every_page_kernel_certifies_through_the_async_certifier_and_is_timed() {
        let mut rt = runtime();
        let mut lines = Vec::new();
        let rows = pollster::block_on(certify_page(&mut rt, false, &mut |l| {
            lines.push(l.to_string())
        }))
        .unwrap();
        let n: usize = page_kernels().iter().map(|(_, k)| k.len()).sum();
        assert_eq!(rows.len(), n);
        // Every row passes, but a kernel that lavapipe cannot run at all (`gemm_f16`: no
        // cooperative matrices), which is skipped and says why.
        let mut skipped = 0;
        for r in &rows {
            if rt.cannot_run(r.kernel).is_some() {
                assert!(matches!(r.outcome, Outcome::Skipped(_)), "{:?}", r.lines());
                skipped += 1;
            } else {
                assert!(r.passed(), "{:?}", r.lines());
            }
        }
        assert!(skipped < n, "nothing was certified");
        let passed = n - skipped;
        let expected = if skipped > 0 {
            format!("browser: {passed}/{passed} certifications passed ({skipped} skipped)")
        } else {
            format!("browser: {n}/{n} certifications passed")
        };
        assert_eq!(summary(&rows), expected);
        for (heading, kernels) in page_kernels() {
            let at = lines.iter().position(|l| *l == format!("{heading}:"));
            let at = at.unwrap_or_else(|| panic!("no heading {heading:?} in {lines:?}"));
            let first = format!("{} ", kernels[0].name());
            assert!(lines[at + 1].starts_with(&first), "{lines:?}");
        }
        for name in ["gemv ", "histogram64 ", "blur "] {
            assert!(
                lines
                    .iter()
                    .any(|l| l.starts_with(name) && l.ends_with("PASS")),
                "{name}: {lines:?}"
            );
        }

        assert!(rt.has_timestamps(), "lavapipe has timestamp queries");
        let mut timing_lines = Vec::new();
        let timed = pollster::block_on(timing::time_passed(&mut rt, &rows, &mut |l| {
            timing_lines.push(l.to_string())
        }))
        .unwrap()
        .expect("timed with timestamps");
        assert_eq!(timed.len(), passed, "{timing_lines:?}");
        let timed_rows = rows.iter().filter(|r| r.passed());
        for (t, row) in timed.iter().zip(timed_rows) {
            assert_eq!(t.kernel, row.kernel.name());
            assert!(t.timing.median_ns > 0.0 && t.timing.median_ns.is_finite());
            assert_eq!(t.timing.samples.len(), 5);
            assert!(timing_lines.contains(&t.line()));
        }
    }

    /// The page's `?wrong=1` kernel fails, on the GPU-vs-oracle comparison of the
    /// poisoned run, naming the unwritten element.
    #[test]
    fn the_wrong_kernel_fails_on_the_gpu_comparison() {
        let mut rt = runtime();
        let rows = pollster::block_on(certify_kernels(
            &mut rt,
            &[&skips_last::Kernel],
            false,
            &mut |_| {},
        ))
        .unwrap();
        assert!(!rows[0].passed());
        let text = rows[0].lines().join("\n");
        assert!(
            text.contains("never written") && text.contains("y[9]"),
            "{text}"
        );
        assert_eq!(summary(&rows), "browser: 0/1 certifications passed");
    }

    /// A schedule over the adapter's limits is skipped with the limit's name.
    #[test]
    fn a_schedule_over_the_limits_is_skipped_with_the_reason() {
        let rt = runtime();
        let too_big = Schedule::new(rt.limits().max_compute_invocations_per_workgroup * 2, 1, 1);
        let why = skip_reason(&rt, &skips_last::Kernel, &too_big).expect("over the limits");
        assert!(why.contains("max_compute"), "{why}");
    }
}
