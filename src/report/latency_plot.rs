//! The SVG plots of `--latency`: the percentile distribution, HdrHistogram's
//! way (latency against 1/(1 − percentile) on a log axis, so that p90, p99,
//! p99.9 ... are evenly spaced), one line per benchmark; and, over a sweep,
//! p50 and p99 against the swept value.

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::latency::Percentiles;
use crate::results::ResultFile;

fn fail(e: impl std::fmt::Display) -> Error {
    Error::runtime(format!("cannot draw the latency plot: {e}"))
}

const COLORS: [RGBColor; 6] = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];

/// One labelled line.
fn line<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: impl IntoIterator<Item = CT::From>,
    color: RGBColor,
    name: &str,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    chart
        .draw_series(LineSeries::new(points, color.stroke_width(2)))
        .map_err(fail)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    Ok(())
}

/// The legend, top left.
fn legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>) -> Result<()>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    super::chart::draw_legend(chart, SeriesLabelPosition::UpperLeft).map_err(fail)
}

/// The points of a histogram's percentile curve: (1/(1 − q), ns), q the
/// fraction of operations at or below the bucket, the last point (q = 1)
/// drawn at `x_max`.
pub fn curve(buckets: &[[u64; 2]], x_max: f64) -> Vec<(f64, f64)> {
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    let mut below = 0u64;
    let mut points = Vec::with_capacity(buckets.len() + 1);
    for &[value, count] in buckets {
        // The bucket's value holds from where the previous one ended.
        let x = 1.0 / (1.0 - below as f64 / total as f64);
        points.push((x.min(x_max), value as f64));
        below += count;
        let x = if below == total {
            x_max
        } else {
            1.0 / (1.0 - below as f64 / total as f64)
        };
        points.push((x.min(x_max), value as f64));
    }
    points
}

/// `99.9%` for 1000: the percentile at 1/(1 − q).
fn percentile_label(x: &f64) -> String {
    let q = 1.0 - 1.0 / x;
    let digits = x.log10().round().max(0.0) as usize;
    format!("{:.*}%", digits.saturating_sub(2), q * 100.0)
}

/// The percentile distributions of `series` (name, histogram buckets).
pub fn distribution(title: &str, series: &[(&str, &[[u64; 2]])]) -> Result<String> {
    let most = series
        .iter()
        .map(|(_, b)| b.iter().map(|b| b[1]).sum::<u64>())
        .max()
        .unwrap_or(1);
    // Up to the percentile the counts can resolve: 10^digits of the count.
    let x_max = 10f64.powi((most.max(10) as f64).log10().ceil() as i32);
    let curves: Vec<Vec<(f64, f64)>> = series.iter().map(|(_, b)| curve(b, x_max)).collect();
    let y_min = curves
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(f64::MAX, f64::min);
    let y_max = curves.iter().flatten().map(|p| p.1).fold(1.0f64, f64::max);
    let y_min = (y_min.min(y_max) / 1.5).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let mut chart = super::chart::chart_on(&root, title)
            .build_cartesian_2d((1f64..x_max).log_scale(), (y_min..y_max * 1.5).log_scale())
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_label_formatter(&percentile_label)
            .x_desc("percentile")
            .y_desc("latency (ns, log)")
            .draw()
            .map_err(fail)?;
        for (i, ((name, _), points)) in series.iter().zip(curves).enumerate() {
            line(&mut chart, points, COLORS[i % COLORS.len()], name)?;
        }
        legend(&mut chart)?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// p50 and p99 against a swept value.
pub fn by_sweep(title: &str, param: &str, points: &[(u64, Percentiles)]) -> Result<String> {
    let x_min = points.iter().map(|p| p.0).min().unwrap_or(0) as f64;
    let x_max = points.iter().map(|p| p.0).max().unwrap_or(1) as f64;
    let pad = ((x_max - x_min) * 0.05).max(0.5);
    let y_max = points.iter().map(|p| p.1.p99).max().unwrap_or(1).max(1) as f64 * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let mut chart = super::chart::chart_on(&root, title)
            .build_cartesian_2d((x_min - pad)..(x_max + pad), 0.0..y_max)
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc(param)
            .y_desc("latency (ns)")
            .draw()
            .map_err(fail)?;
        for (i, (name, pick)) in [
            ("p50", (|p: &Percentiles| p.p50) as fn(&Percentiles) -> u64),
            ("p99", |p: &Percentiles| p.p99),
        ]
        .into_iter()
        .enumerate()
        {
            let values = points.iter().map(|(x, p)| (*x as f64, pick(p) as f64));
            line(&mut chart, values, COLORS[i], name)?;
        }
        legend(&mut chart)?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// The `--plot` of `--latency` runs: p50 and p99 by the swept value for a
/// sweep (the first benchmark's), otherwise every benchmark's distribution,
/// its runs merged.
pub fn render_results(results: &[ResultFile]) -> Result<Vec<u8>> {
    let Some(first) = results.first() else {
        return Err(fail("no result to draw"));
    };
    if let Some(sweep) = &first.sweep {
        let points: Vec<(u64, Percentiles)> = first
            .runs
            .iter()
            .filter_map(|r| Some((r.sweep_value?, r.latency.as_ref()?.percentiles)))
            .collect();
        let title = format!("{}: latency by {}", first.benchmark, sweep.param);
        return Ok(by_sweep(&title, &sweep.param, &points)?.into_bytes());
    }
    let series: Vec<(&str, &[[u64; 2]])> = results
        .iter()
        .filter_map(|r| {
            let buckets = match r.run_stats.first().and_then(|l| l.latency.as_ref()) {
                Some(over) => &over.buckets,
                None => &r.runs.first()?.latency.as_ref()?.buckets,
            };
            Some((r.benchmark.as_str(), buckets.as_slice()))
        })
        .collect();
    let names: Vec<&str> = series.iter().map(|(n, _)| *n).collect();
    let title = format!("Latency distribution: {}", names.join(", "));
    Ok(distribution(&title, &series)?.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_climbs_to_the_max_at_the_last_percentile() {
        let points = curve(&[[100, 90], [200, 9], [5000, 1]], 1000.0);
        assert_eq!(points.first(), Some(&(1.0, 100.0)));
        // 90 % at or below 100 ns: the 100 ns step ends at x = 10.
        assert!((points[1].0 - 10.0).abs() < 1e-9);
        assert_eq!(points.last(), Some(&(1000.0, 5000.0)));
        assert_eq!(percentile_label(&100.0), "99%");
        assert_eq!(percentile_label(&1000.0), "99.9%");
        let svg = distribution("t", &[("a", &[[100, 90], [200, 10]])]).unwrap();
        assert!(svg.starts_with("<svg"));
    }
}
