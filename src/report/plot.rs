//! The SVG plot of a sweep: throughput against the swept parameter, with
//! ± sd error bars and, for producers, the ideal linear scaling. Text is left
//! to the SVG viewer, so no fonts are needed here.

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::results::ResultFile;

use super::reporter::Reporter;
use super::{scaled, Exporter};

/// One swept value and its measured rate (events per second).
pub struct Point {
    pub value: u64,
    pub mean: f64,
    pub sd: f64,
}

pub fn render(
    title: &str,
    param: &str,
    what: &str,
    points: &[Point],
    ideal: bool,
) -> Result<String> {
    let fail = |e: String| Error::runtime(format!("cannot draw the plot: {e}"));
    let top = points.iter().map(|p| p.mean + p.sd).fold(0.0f64, f64::max);
    let ideal_top = match (ideal, points.first()) {
        (true, Some(first)) if first.value > 0 => points
            .iter()
            .map(|p| first.mean * p.value as f64 / first.value as f64)
            .fold(0.0f64, f64::max),
        _ => 0.0,
    };
    let (_, unit) = scaled(top.max(ideal_top));
    let div = match unit {
        "M" => 1e6,
        "K" => 1e3,
        _ => 1.0,
    };
    let y_max = (top.max(ideal_top) / div * 1.1).max(1e-9);
    let x_min = points.iter().map(|p| p.value).min().unwrap_or(0) as f64;
    let x_max = points.iter().map(|p| p.value).max().unwrap_or(1) as f64;
    let pad = ((x_max - x_min) * 0.05).max(0.5);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(20)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d((x_min - pad)..(x_max + pad), 0.0..y_max)
            .map_err(|e| fail(e.to_string()))?;
        // The swept parameters are whole numbers: label only whole ticks.
        let whole = |x: &f64| {
            if (x - x.round()).abs() < 1e-9 {
                format!("{}", x.round())
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_labels(((x_max - x_min) as usize + 1).clamp(2, 12))
            .x_label_formatter(&whole)
            .x_desc(param)
            .y_desc(format!("{what} ({unit}/s)"))
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        if ideal {
            if let Some(first) = points.first().filter(|f| f.value > 0) {
                let line = points.iter().map(|p| {
                    (
                        p.value as f64,
                        first.mean * p.value as f64 / first.value as f64 / div,
                    )
                });
                chart
                    .draw_series(LineSeries::new(line, BLACK.mix(0.4).stroke_width(1)))
                    .map_err(|e| fail(e.to_string()))?
                    .label("ideal linear scaling")
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
            }
        }
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.value as f64, p.mean / div)),
                BLUE.stroke_width(2),
            ))
            .map_err(|e| fail(e.to_string()))?
            .label("mean \u{00b1} sd")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
        // Each error bar marks its mean with a dot: one per swept value.
        chart
            .draw_series(points.iter().map(|p| {
                ErrorBar::new_vertical(
                    p.value as f64,
                    (p.mean - p.sd) / div,
                    p.mean / div,
                    (p.mean + p.sd) / div,
                    BLUE.filled(),
                    8,
                )
            }))
            .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(svg)
}

/// The SVG exporter: the sweep of a result, its headline rate by the swept value.
pub struct Svg {
    pub reporter: Reporter,
}

impl Exporter for Svg {
    fn flag(&self) -> &'static str {
        "--plot"
    }

    fn render(&self, result: &ResultFile) -> Result<Vec<u8>> {
        let sweep = result
            .sweep
            .as_ref()
            .ok_or_else(|| Error::usage("--plot draws a sweep: give --sweep PARAM=LIST too"))?;
        let points: Vec<Point> = result
            .runs
            .iter()
            .filter_map(|run| {
                let rate = self.reporter.headline(run.summary.as_ref()?);
                Some(Point {
                    value: run.sweep_value?,
                    mean: rate.mean,
                    sd: rate.sd,
                })
            })
            .collect();
        let what = self.reporter.counted();
        let title = format!("{}: {what} per second by {}", result.benchmark, sweep.param);
        let producers = matches!(sweep.param.as_str(), "producers" | "parallelism");
        Ok(render(&title, &sweep.param, what, &points, producers)?.into_bytes())
    }
}
