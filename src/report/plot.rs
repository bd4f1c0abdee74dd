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

/// One chart of the plot: a figure by the swept value.
pub struct Panel<'a> {
    pub title: String,
    /// What the figure counts (its unit).
    pub what: &'a str,
    pub points: Vec<Point>,
    /// Draw the ideal linear scaling (a sweep of producers).
    pub ideal: bool,
    /// A rate, drawn in a scaled unit per second; otherwise the figure's
    /// values as they are.
    pub rate: bool,
}

/// The plot of one or more panels, one above the other: the headline rate,
/// then each figure of the benchmark's own (a time per op).
pub fn render(param: &str, panels: &[Panel]) -> Result<String> {
    let fail = |e: String| Error::runtime(format!("cannot draw the plot: {e}"));
    let mut svg = String::new();
    {
        let height = 500 * panels.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut svg, (800, height)).into_drawing_area();
        root.fill(&WHITE).map_err(why).map_err(fail)?;
        for (area, panel) in root
            .split_evenly((panels.len().max(1), 1))
            .iter()
            .zip(panels)
        {
            let frame = Frame::of(&panel.points, panel.ideal, panel.rate);
            draw(area, param, panel, &frame).map_err(fail)?;
        }
        root.present().map_err(why).map_err(fail)?;
    }
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
    fn of(points: &[Point], ideal: bool, rate: bool) -> Frame {
        let top = points.iter().map(|p| p.mean + p.sd).fold(0.0f64, f64::max);
        let ideal_top = match (ideal, points.first()) {
            (true, Some(first)) if first.value > 0 => points
                .iter()
                .map(|p| first.mean * p.value as f64 / first.value as f64)
                .fold(0.0f64, f64::max),
            _ => 0.0,
        };
        let (_, unit) = match rate {
            true => scaled(top.max(ideal_top)),
            false => (0.0, ""),
        };
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

/// Draws the axes, the ideal line, the means and their error bars of a
/// panel into its area.
fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    param: &str,
    panel: &Panel,
    frame: &Frame,
) -> std::result::Result<(), String> {
    let Panel {
        title,
        what,
        points,
        ideal,
        rate,
    } = panel;
    let (points, ideal) = (points.as_slice(), *ideal);
    let &Frame {
        div,
        unit,
        y_max,
        x_min,
        x_max,
        pad,
    } = frame;
    let mut chart = chart_on(root, title)
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
        .y_desc(match rate {
            true => format!("{what} ({unit}/s)"),
            false => what.to_string(),
        })
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
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft).map_err(why)
}

/// A figure's value by the swept value: the mean over the value's runs, ±
/// their sd.
fn figure_points(figure: &str, result: &ResultFile) -> Vec<Point> {
    let mut values: Vec<u64> = result.runs.iter().filter_map(|r| r.sweep_value).collect();
    values.dedup();
    values
        .into_iter()
        .filter_map(|value| {
            let seen: Vec<f64> = (result.runs.iter())
                .filter(|run| run.sweep_value == Some(value))
                .filter_map(|run| run.figure(figure))
                .collect();
            let figure = (!seen.is_empty()).then(|| mean_sd(&seen))?;
            Some(Point {
                value,
                mean: figure.mean,
                sd: figure.sd,
            })
        })
        .collect()
}

/// The SVG exporter: the sweep of a result, its headline rate by the swept
/// value, and each of its other figures below.
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
        let Some((headline, others)) = result.figures.split_first() else {
            return Err(Error::runtime(format!(
                "the result of '{}' declares no figure to plot",
                result.benchmark
            )));
        };
        let points: Vec<Point> = result
            .runs
            .iter()
            .filter_map(|run| {
                let seconds = run.within_run(&headline.name);
                let rate = (!seconds.is_empty()).then(|| mean_sd(&seconds))?;
                Some(Point {
                    value: run.sweep_value?,
                    mean: rate.mean,
                    sd: rate.sd,
                })
            })
            .collect();
        let what = &headline.name;
        let title = format!("{}: {what} per second by {}", result.benchmark, sweep.param);
        let swept = applies::sweep_param(bench, &SweepName::parse(&sweep.param));
        let producers = matches!(swept, Some(SweepParam::Producers { .. }));
        let mut panels = vec![Panel {
            title,
            what,
            points,
            ideal: producers,
            rate: true,
        }];
        let labels: Vec<String> = others
            .iter()
            .map(|f| format!("{} {}", f.name, f.unit))
            .collect();
        panels.extend(others.iter().zip(&labels).map(|(figure, label)| Panel {
            title: format!("{}: {label} by {}", result.benchmark, sweep.param),
            what: label,
            points: figure_points(&figure.name, result),
            ideal: false,
            rate: false,
        }));
        let svg = render(&sweep.param, &panels)?;
        Ok(vec![(target.clone(), svg.into_bytes())])
    }
}
