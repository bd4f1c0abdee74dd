//! The SVG plot of a sweep: throughput against the swept parameter, with
//! ± sd error bars and, for producers, the ideal linear scaling. Text is left
//! to the SVG viewer, so no fonts are needed here.

use std::path::Path;

use plotters::prelude::*;

use crate::benches::{self, applies};

use crate::error::{Error, Result};
use crate::results::ResultFile;
use crate::stats::mean_sd;

use super::chart::{chart_on, draw_legend};

use super::{scaled, Exporter, Rendered};
use crate::config::{OutputTarget, SweepName, SweepParam};

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
    let frame = Frame::of(points, ideal);
    let mut svg = String::new();
    draw(&mut svg, title, param, what, points, ideal, &frame)
        .map_err(|e| Error::runtime(format!("cannot draw the plot: {e}")))?;
    Ok(svg)
}

/// The plot's ranges and the unit of its rates.
struct Frame {
    /// What the rates are divided by to be in `unit`.
    div: f64,
    unit: &'static str,
    y_max: f64,
    x_min: f64,
    x_max: f64,
    pad: f64,
}

impl Frame {
    fn of(points: &[Point], ideal: bool) -> Frame {
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
        let x_min = points.iter().map(|p| p.value).min().unwrap_or(0) as f64;
        let x_max = points.iter().map(|p| p.value).max().unwrap_or(1) as f64;
        Frame {
            div,
            unit,
            y_max: (top.max(ideal_top) / div * 1.1).max(1e-9),
            x_min,
            x_max,
            pad: ((x_max - x_min) * 0.05).max(0.5),
        }
    }
}

/// A drawing error, as the reason of the sentence that reports it.
fn why(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// Draws the axes, the ideal line, the means and their error bars into `svg`.
fn draw(
    svg: &mut String,
    title: &str,
    param: &str,
    what: &str,
    points: &[Point],
    ideal: bool,
    frame: &Frame,
) -> std::result::Result<(), String> {
    let &Frame {
        div,
        unit,
        y_max,
        x_min,
        x_max,
        pad,
    } = frame;
    let root = SVGBackend::with_string(svg, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(why)?;
    let mut chart = chart_on(&root, title)
        .build_cartesian_2d((x_min - pad)..(x_max + pad), 0.0..y_max)
        .map_err(why)?;
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
        .map_err(why)?;
    if let Some(first) = points.first().filter(|f| ideal && f.value > 0) {
        let line = points.iter().map(|p| {
            (
                p.value as f64,
                first.mean * p.value as f64 / first.value as f64 / div,
            )
        });
        chart
            .draw_series(LineSeries::new(line, BLACK.mix(0.4).stroke_width(1)))
            .map_err(why)?
            .label("ideal linear scaling")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    }
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.value as f64, p.mean / div)),
            BLUE.stroke_width(2),
        ))
        .map_err(why)?
        .label("mean \u{00b1} sd")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    // Each error bar marks its mean with a dot: one per swept value.
    chart
        .draw_series(points.iter().map(|p| {
            let (low, mean, high) = ((p.mean - p.sd) / div, p.mean / div, (p.mean + p.sd) / div);
            ErrorBar::new_vertical(p.value as f64, low, mean, high, BLUE.filled(), 8)
        }))
        .map_err(why)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft).map_err(why)?;
    root.present().map_err(why)
}

/// The SVG exporter: the sweep of a result, its headline rate by the swept value.
pub struct Svg;

impl Exporter for Svg {
    fn long(&self) -> &'static str {
        "plot"
    }

    fn help(&self) -> &'static str {
        "Draw the sweep as an SVG plot in FILE.svg"
    }

    fn value_name(&self) -> &'static str {
        "FILE.svg"
    }

    fn extension(&self) -> &'static str {
        "svg"
    }

    fn takes_stdout(&self) -> bool {
        false
    }

    fn needs_sweep(&self) -> bool {
        true
    }

    fn check_name(&self, path: &Path) -> std::result::Result<(), String> {
        match path.extension() {
            Some(x) if x.eq_ignore_ascii_case("svg") => Ok(()),
            _ => Err(format!(
                "--plot writes SVG: give a file name ending in .svg, not {}",
                path.display()
            )),
        }
    }

    fn files(&self, result: &ResultFile, target: &OutputTarget) -> Result<Vec<Rendered>> {
        // --latency: the percentile distribution (by the swept value for a sweep).
        if result.options.latency {
            let svg = super::latency_plot::render_results(std::slice::from_ref(result))?;
            return Ok(vec![(target.clone(), svg)]);
        }
        let bench = benches::find(&result.benchmark).ok_or_else(|| {
            Error::runtime(format!(
                "cannot plot unknown benchmark '{}'",
                result.benchmark
            ))
        })?;
        let sweep = result
            .sweep
            .as_ref()
            .ok_or_else(|| Error::usage("--plot draws a sweep: give --sweep PARAM=LIST too"))?;
        if !result.cycle_stats.is_empty() {
            let svg =
                super::attach_plot::render(&result.benchmark, &sweep.param, &result.cycle_stats)?;
            return Ok(vec![(target.clone(), svg.into_bytes())]);
        }
        let headline = bench.headline();
        let points: Vec<Point> = result
            .runs
            .iter()
            .filter_map(|run| {
                let seconds = headline.within_run(run);
                let rate = (!seconds.is_empty()).then(|| mean_sd(&seconds))?;
                Some(Point {
                    value: run.sweep_value?,
                    mean: rate.mean,
                    sd: rate.sd,
                })
            })
            .collect();
        let what = headline.unit;
        let title = format!("{}: {what} per second by {}", result.benchmark, sweep.param);
        let swept = applies::sweep_param(bench, &SweepName::parse(&sweep.param));
        let producers = matches!(swept, Some(SweepParam::Producers { .. }));
        let svg = render(&title, &sweep.param, what, &points, producers)?;
        Ok(vec![(target.clone(), svg.into_bytes())])
    }
}
