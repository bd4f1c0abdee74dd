//! The SVG plot of an attach sweep: µs per probe of attach and detach against
//! the probe count, both axes logarithmic, so that a cost that grows with N
//! (an O(N²) path) shows as a rising slope and a constant cost per probe as a
//! flat line.

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::results::CycleLevel;

/// Draws `levels` (one per swept count) for `bench`.
pub fn render(bench: &str, param: &str, levels: &[CycleLevel]) -> Result<String> {
    let fail = |e: String| Error::runtime(format!("cannot draw the plot: {e}"));
    let points = |pick: fn(&CycleLevel) -> f64| -> Vec<(f64, f64)> {
        levels
            .iter()
            .filter_map(|l| Some((l.sweep_value? as f64, pick(l))))
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
            .collect()
    };
    let attach = points(|l| l.attach_us_per_probe.mean);
    let detach = points(|l| l.detach_us_per_probe.mean);
    let all = attach.iter().chain(&detach);
    let x_max = all.clone().map(|p| p.0).fold(1.0f64, f64::max) * 2.0;
    let y_min = all.clone().map(|p| p.1).fold(f64::MAX, f64::min).min(1.0) / 2.0;
    let y_max = all.map(|p| p.1).fold(1.0f64, f64::max) * 2.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let mut chart =
            super::chart::chart_on(&root, &format!("{bench}: \u{b5}s per probe by {param}"))
                .build_cartesian_2d(
                    (0.5..x_max).log_scale(),
                    (y_min.max(1e-3)..y_max).log_scale(),
                )
                .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc(format!("{param} (log)"))
            .y_desc("\u{b5}s per probe, wall (log)")
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        for (name, series, color) in [("attach", &attach, BLUE), ("detach", &detach, RED)] {
            chart
                .draw_series(LineSeries::new(
                    series.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| fail(e.to_string()))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(
                    series
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 4, color.filled())),
                )
                .map_err(|e| fail(e.to_string()))?;
        }
        super::chart::draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(svg)
}
