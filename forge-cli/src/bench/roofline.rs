//! `forge bench --plot roofline.svg`: every row that declares both bytes and flops, placed
//! on a log-log roofline under the roofs measured in the same run (the device copy's
//! bandwidth and the peak FMA rate). Rows that count only bytes have no intensity; the
//! chart lists them with their fraction of the copy bandwidth instead.

use super::{copy_vec4, peak_fma, BenchResult};
use forge_core::roofline::Roof;
use forge_core::ForgeError;
use std::path::Path;

/// The roofs measured in a run: the copy row's GB/s and the FMA probe's TFLOP/s.
pub fn roof_of(results: &[BenchResult]) -> Roof {
    let row = |name: &str| results.iter().find(|r| r.kernel == name);
    Roof {
        copy_gbps: row(copy_vec4::NAME).and_then(|r| r.gbps),
        peak_tflops: row(peak_fma::NAME).and_then(|r| r.tflops),
    }
}

/// Draws the roofline of `results` and writes it atomically to `path`.
pub fn plot_svg(results: &[BenchResult], path: &Path) -> Result<(), ForgeError> {
    let plot_error = |e: String| ForgeError::Io {
        context: format!("drawing `{}`", forge_core::shown::shown_path(path)),
        source: std::io::Error::other(e),
    };
    let mut svg = String::new();
    draw(results, &roof_of(results), &mut svg).map_err(plot_error)?;
    forge_core::files::write_atomically(path, svg.as_bytes())
}

/// Whether a row measures a roof rather than a kernel under it.
fn is_roof(r: &BenchResult) -> bool {
    r.kernel == copy_vec4::NAME || r.kernel == peak_fma::NAME
}

/// A point of the chart: a row with both an intensity and a rate.
fn point(r: &BenchResult) -> Option<(f64, f64)> {
    let (i, t) = (r.intensity?, r.tflops?);
    (i > 0.0 && t > 0.0 && !is_roof(r)).then_some((i, t))
}

/// A rate given in TFLOP/s, written in TFLOP/s, or in GFLOP/s below one, with about three
/// significant digits.
pub fn rate(tflops: f64) -> String {
    if tflops >= 1.0 {
        format!("{tflops:.3} TFLOP/s")
    } else {
        let g = tflops * 1e3;
        let decimals = if g >= 100.0 {
            0
        } else if g >= 10.0 {
            1
        } else {
            2
        };
        format!("{g:.decimals$} GFLOP/s")
    }
}

fn draw(results: &[BenchResult], roof: &Roof, svg: &mut String) -> Result<(), String> {
    use plotters::prelude::*;
    let points: Vec<(&BenchResult, (f64, f64))> = results
        .iter()
        .filter_map(|r| point(r).map(|p| (r, p)))
        .collect();
    let bandwidth_only: Vec<&BenchResult> = results
        .iter()
        .filter(|r| point(r).is_none() && r.gbps.is_some() && !is_roof(r))
        .collect();
    // The axes span every point and the ridge, in whole decades.
    let decade_below = |v: f64| 10f64.powf(v.log10().floor());
    let decade_above = |v: f64| 10f64.powf(v.log10().ceil());
    let xs = points.iter().map(|(_, p)| p.0).chain(roof.ridge());
    let (x_lo, x_hi) = xs.fold((0.1f64, 100.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let ys = points
        .iter()
        .map(|(_, p)| p.1)
        .chain(roof.peak_tflops)
        .chain(roof.attainable_tflops(x_lo));
    let (y_lo, y_hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    let (y_lo, y_hi) = if y_hi > 0.0 {
        (decade_below(y_lo), decade_above(y_hi * 1.5))
    } else {
        (1e-3, 1.0)
    };
    let (x_lo, x_hi) = (decade_below(x_lo), decade_above(x_hi));
    let height = 560 + 18 * bandwidth_only.len() as u32;
    let root = SVGBackend::with_string(svg, (960, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (top, bottom) = root.split_vertically(560);
    let adapter = results.first().map_or("", |r| r.adapter.as_str());
    let mut chart = ChartBuilder::on(&top)
        .caption(
            format!("roofline on {adapter} (roofs measured in the same run)"),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (flop per byte)")
        .y_desc("TFLOP/s")
        .x_label_formatter(&|x| format!("{x}"))
        .y_label_formatter(&|y| format!("{y}"))
        .draw()
        .map_err(|e| e.to_string())?;
    // The roof: bandwidth × intensity up to the ridge, then the peak.
    let steps = 200;
    let roof_line: Vec<(f64, f64)> = (0..=steps)
        .filter_map(|s| {
            let x = x_lo * (x_hi / x_lo).powf(s as f64 / steps as f64);
            roof.attainable_tflops(x).map(|y| (x, y))
        })
        .collect();
    let roof_label = match (roof.copy_gbps, roof.peak_tflops) {
        (Some(c), Some(p)) => format!("roof: copy {c:.0} GB/s, FMA peak {p:.2} TFLOP/s"),
        (Some(c), None) => format!("roof: copy {c:.0} GB/s"),
        (None, Some(p)) => format!("roof: FMA peak {p:.2} TFLOP/s"),
        (None, None) => "no roof measured".to_string(),
    };
    chart
        .draw_series(LineSeries::new(roof_line, BLACK.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label(roof_label)
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    for (i, (r, (x, y))) in points.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let frac = roof
            .attainable_tflops(*x)
            .map(|a| format!(", {:.0}% of roof", 100.0 * y / a))
            .unwrap_or_default();
        chart
            .draw_series([Circle::new((*x, *y), 5, color.filled())])
            .map_err(|e| e.to_string())?
            .label(format!("{} {}: {}{frac}", r.kernel, r.shape, rate(*y)))
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    let style = ("sans-serif", 13).into_font();
    if bandwidth_only.is_empty() {
        root.present().map_err(|e| e.to_string())?;
        return Ok(());
    }
    bottom
        .draw(&Text::new(
            "rows that count bytes only (no flops), as a fraction of the copy bandwidth:",
            (24, 0),
            style.clone(),
        ))
        .map_err(|e| e.to_string())?;
    for (i, r) in bandwidth_only.iter().enumerate() {
        let frac = r
            .frac_copy
            .map(|f| format!("{:.0}% of copy", 100.0 * f))
            .unwrap_or_else(|| "-".into());
        let line = format!(
            "{} {}: {:.1} GB/s, {frac}",
            r.kernel,
            r.shape,
            r.gbps.unwrap_or(f64::NAN)
        );
        bottom
            .draw(&Text::new(line, (40, 18 * (i as i32 + 1)), style.clone()))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
