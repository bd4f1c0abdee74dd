//! The history's charts, as SVG written by hand (no script, no fonts from
//! elsewhere): one chart a benchmark's figure and options, a point an entry
//! with its interval, coloured by machine, in time or kernel order; the
//! means between change points drawn as steps and each change point
//! marked, with its change in %.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write;

use super::history::{better_word, number};
use crate::history::entry::{Entry, Point};
use crate::history::series::{kernel_order, Change, Order, Series};
use crate::history::time;
use crate::stats::Better;

const WIDTH: f64 = 760.0;
/// The height of the plot and its labels; the legend adds a line a machine.
const HEIGHT: f64 = 330.0;
const LEGEND_LINE: f64 = 14.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 48.0;
const BOTTOM: f64 = 100.0;

/// The colours of machines, in the order they first appear.
const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];
const CHANGE_COLOUR: &str = "#b00020";

/// The series drawn in one chart: one benchmark's figure with one set of
/// options, on every machine, with each machine's change points.
pub struct Chart<'a> {
    pub series: Vec<(&'a Series<'a>, &'a [Change])>,
}

/// The charts of `all` (with `changes`, one list a series, or none), in
/// the order their first series come; one pass, a chart found by its key.
pub fn charts<'a>(all: &'a [Series<'a>], changes: &'a [Vec<Change>]) -> Vec<Chart<'a>> {
    let mut charts: Vec<Chart<'a>> = Vec::new();
    let mut index: HashMap<(&str, &str, &str, Better, &str), usize> = HashMap::new();
    for (i, series) in all.iter().enumerate() {
        let found = changes.get(i).map_or(&[][..], |c| &c[..]);
        let key = (
            series.benchmark.as_str(),
            series.figure.as_str(),
            series.unit.as_str(),
            series.better,
            series.options.as_str(),
        );
        match index.get(&key) {
            Some(&at) => charts[at].series.push((series, found)),
            None => {
                index.insert(key, charts.len());
                charts.push(Chart {
                    series: vec![(series, found)],
                });
            }
        }
    }
    charts
}

/// One point of a chart: its x slot, machine and value.
struct Placed<'a> {
    entry: &'a Entry,
    point: Point,
    machine: usize,
}

/// Every entry of the chart on one axis, in `order`.
fn placed<'a>(chart: &Chart<'a>, order: Order) -> Vec<Placed<'a>> {
    let mut all: Vec<Placed<'a>> = chart
        .series
        .iter()
        .enumerate()
        .flat_map(|(machine, (series, _))| {
            series.points.iter().map(move |&(entry, point)| Placed {
                entry,
                point,
                machine,
            })
        })
        .collect();
    all.sort_by(|a, b| compare_entries(a.entry, b.entry, order));
    all
}

/// A chart as an `<svg>` element.
pub fn chart_svg(chart: &Chart<'_>, order: Order) -> String {
    let points = placed(chart, order);
    let first = chart.series[0].0;
    let height = chart_height(chart);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n"
    );
    let _ = writeln!(
        svg,
        "<title>{}</title>\n<rect width=\"{WIDTH}\" height=\"{height}\" fill=\"white\"/>",
        escape(&first.title())
    );
    let heading = format!("{}, {} is better", first.title(), better_word(first.better));
    let _ = writeln!(
        svg,
        "<text x=\"{LEFT}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text>\n<text x=\"{LEFT}\" y=\"31\" fill=\"#555\">{}</text>",
        escape(&heading),
        escape(&first.options)
    );
    if points.is_empty() {
        svg.push_str("</svg>\n");
        return svg;
    }
    let scale = Scale::of(&points);
    let y = |value: f64| scale.y(value);
    let slot = (WIDTH - LEFT - RIGHT) / points.len() as f64;
    let x = |i: usize| LEFT + slot * (i as f64 + 0.5);
    axes(&mut svg, &scale);
    if scale.log {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#555\">log scale</text>",
            WIDTH - RIGHT,
            TOP - 4.0
        );
    }
    x_labels(&mut svg, &points, order, &x);
    for (machine, (series, changes)) in chart.series.iter().enumerate() {
        let slots: Vec<usize> = (0..points.len())
            .filter(|&i| points[i].machine == machine)
            .collect();
        steps(
            &mut svg,
            series,
            changes,
            &slots,
            &x,
            &y,
            PALETTE[machine % PALETTE.len()],
        );
        for change in changes.iter() {
            mark_change(&mut svg, change, &slots, &x);
        }
    }
    for (i, placed) in points.iter().enumerate() {
        let colour = PALETTE[placed.machine % PALETTE.len()];
        let (px, p) = (x(i), placed.point);
        if p.low < p.high {
            let _ = writeln!(
                svg,
                "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{px:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
                y(p.low),
                y(p.high)
            );
        }
        let _ = writeln!(
            svg,
            "<circle cx=\"{px:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"><title>{} {} ({})</title></circle>",
            y(p.value),
            escape(&time::show(placed.entry.time)),
            escape(&number(p.value)),
            escape(&placed.entry.kernel.release)
        );
    }
    legend(&mut svg, chart);
    svg.push_str("</svg>\n");
    svg
}

/// The y axis: linear, or logarithmic where the values span more than
/// [`LOG_SPAN`] times (an emulated guest beside a host) so that every
/// machine's series shows.
struct Scale {
    low: f64,
    high: f64,
    log: bool,
}

/// The ratio of the largest value to the smallest past which the axis is
/// logarithmic.
const LOG_SPAN: f64 = 20.0;

impl Scale {
    /// Every interval, with a margin.
    fn of(points: &[Placed<'_>]) -> Scale {
        let low = points
            .iter()
            .map(|p| p.point.low)
            .fold(f64::INFINITY, f64::min);
        let high = points
            .iter()
            .map(|p| p.point.high)
            .fold(f64::NEG_INFINITY, f64::max);
        let smallest = points
            .iter()
            .map(|p| p.point.value)
            .fold(f64::INFINITY, f64::min);
        if smallest > 0.0 && high / smallest > LOG_SPAN {
            let low = if low > 0.0 { low } else { smallest };
            return Scale {
                low: low / 1.25,
                high: (high * 1.25).min(f64::MAX),
                log: true,
            };
        }
        // Halves, so that values near f64::MAX do not overflow the span.
        let pad = match high / 2.0 - low / 2.0 {
            half if half > 0.0 => half * 0.2,
            _ => (high.abs() / 2.0).max(1.0) * 0.1,
        };
        let bottom = (low - pad).max(f64::MIN);
        Scale {
            low: if low >= 0.0 { bottom.max(0.0) } else { bottom },
            high: (high + pad).min(f64::MAX),
            log: false,
        }
    }

    /// Where `value` is drawn (clamped to the plot; the middle if it cannot
    /// be placed, never NaN in the page).
    fn y(&self, value: f64) -> f64 {
        let share = match self.log {
            true => (self.high.ln() - value.max(self.low).ln()) / (self.high.ln() - self.low.ln()),
            false => (self.high / 2.0 - value / 2.0) / (self.high / 2.0 - self.low / 2.0),
        };
        let share = if share.is_nan() { 0.5 } else { share };
        TOP + share.clamp(0.0, 1.0) * (HEIGHT - TOP - BOTTOM)
    }

    /// Five values to mark on the axis, evenly spaced as drawn.
    fn ticks(&self) -> Vec<f64> {
        (0..=4)
            .map(|k| {
                let at = f64::from(k) / 4.0;
                match self.log {
                    true => (self.low.ln() + (self.high.ln() - self.low.ln()) * at).exp(),
                    false => self.low * (1.0 - at) + self.high * at,
                }
            })
            .collect()
    }
}

fn axes(svg: &mut String, scale: &Scale) {
    let bottom = HEIGHT - BOTTOM;
    let _ = writeln!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom}\" stroke=\"#444\"/>\n<line x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{}\" y2=\"{bottom}\" stroke=\"#444\"/>",
        WIDTH - RIGHT
    );
    for value in scale.ticks() {
        let py = scale.y(value);
        let _ = writeln!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\" stroke=\"#ddd\"/>\n<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            py + 4.0,
            escape(&number(value))
        );
    }
}

/// Under the axis: each kernel once where it starts (kernel order), or
/// dates at most a dozen times (time order).
fn x_labels(svg: &mut String, points: &[Placed<'_>], order: Order, x: &dyn Fn(usize) -> f64) {
    let every = points.len().div_ceil(12).max(1);
    let mut last = String::new();
    for (i, placed) in points.iter().enumerate() {
        let label = match order {
            Order::Kernel => placed.entry.kernel.release.clone(),
            Order::Time => time::short(placed.entry.time),
        };
        let shown = match order {
            Order::Kernel => label != last,
            Order::Time => i % every == 0,
        };
        if shown {
            let (px, py) = (x(i), HEIGHT - BOTTOM + 12.0);
            let _ = writeln!(
                svg,
                "<text x=\"{px:.1}\" y=\"{py}\" transform=\"rotate(30 {px:.1} {py})\">{}</text>",
                escape(&label)
            );
        }
        last = label;
    }
}

/// The means between a series' change points, as horizontal steps.
fn steps(
    svg: &mut String,
    series: &Series<'_>,
    changes: &[Change],
    slots: &[usize],
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
    colour: &str,
) {
    let mut bounds = vec![0];
    bounds.extend(changes.iter().map(|c| c.index));
    bounds.push(series.points.len());
    let values = series.values();
    for w in bounds.windows(2) {
        let (start, end) = (w[0], w[1]);
        if end <= start || end > slots.len() {
            continue;
        }
        let mean = values[start..end].iter().sum::<f64>() / (end - start) as f64;
        let _ = writeln!(
            svg,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-opacity=\"0.45\" stroke-width=\"2\"/>",
            x(slots[start]) - 4.0,
            y(mean),
            x(slots[end - 1]) + 4.0,
            y(mean)
        );
    }
}

/// A dashed line between the entries either side of a change, and its %.
fn mark_change(svg: &mut String, change: &Change, slots: &[usize], x: &dyn Fn(usize) -> f64) {
    let (Some(&before), Some(&after)) = (slots.get(change.index - 1), slots.get(change.index))
    else {
        return;
    };
    let px = (x(before) + x(after)) / 2.0;
    let _ = writeln!(
        svg,
        "<line class=\"change\" x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"{CHANGE_COLOUR}\" stroke-dasharray=\"5,4\"/>\n<text x=\"{:.1}\" y=\"{}\" fill=\"{CHANGE_COLOUR}\">{:+.1} % {}</text>",
        HEIGHT - BOTTOM,
        px + 4.0,
        TOP + 10.0,
        change.change_pct,
        change.verdict.word()
    );
}

fn legend(svg: &mut String, chart: &Chart<'_>) {
    let mut y = HEIGHT;
    for (machine, (series, _)) in chart.series.iter().enumerate() {
        let colour = PALETTE[machine % PALETTE.len()];
        let _ = writeln!(
            svg,
            "<circle cx=\"{}\" cy=\"{:.1}\" r=\"4\" fill=\"{colour}\"/><text x=\"{}\" y=\"{:.1}\">{}</text>",
            LEFT + 4.0,
            y - 4.0,
            LEFT + 12.0,
            y,
            escape(&series.machine)
        );
        y += LEGEND_LINE;
    }
}

/// The whole SVG document of `all`'s charts, one under the other.
pub fn svg(all: &[Series<'_>], changes: &[Vec<Change>], order: Order) -> String {
    let charts = charts(all, changes);
    let height: f64 = charts.iter().map(chart_height).sum::<f64>().max(HEIGHT);
    let mut doc = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\">\n"
    );
    let mut top = 0.0;
    for chart in &charts {
        let inner = chart_svg(chart, order).replacen("<svg ", &format!("<svg y=\"{top}\" "), 1);
        doc.push_str(&inner);
        top += chart_height(chart);
    }
    doc.push_str("</svg>\n");
    doc
}

/// A chart's height: the plot, and a legend line a machine.
fn chart_height(chart: &Chart<'_>) -> f64 {
    HEIGHT + LEGEND_LINE * chart.series.len() as f64
}

/// Text for XML and HTML. Control characters, which XML 1.0 does not allow
/// even as references, are written out as `\u{1b}` (as the terminal's lines
/// show them).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.extend(c.escape_unicode())
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The order of two entries on a chart's axis.
pub fn compare_entries(a: &Entry, b: &Entry, order: Order) -> Ordering {
    match order {
        Order::Time => a.time.cmp(&b.time),
        Order::Kernel => {
            kernel_order(&a.kernel.release, &b.kernel.release).then(a.time.cmp(&b.time))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::{bare, Entry};
    use crate::stats::Better;

    fn entry(value: f64) -> Entry {
        bare(0, ("throughput", "ops/s", Better::Higher), value)
    }

    fn scale_of(values: &[f64]) -> Scale {
        let entries: Vec<Entry> = values.iter().map(|&v| entry(v)).collect();
        let points: Vec<Placed<'_>> = entries
            .iter()
            .map(|e| Placed {
                entry: e,
                point: e.figures[0].point().unwrap(),
                machine: 0,
            })
            .collect();
        Scale::of(&points)
    }

    #[test]
    fn values_far_apart_get_a_log_axis_and_stay_in_the_plot() {
        let near = scale_of(&[90.0, 100.0, 110.0]);
        assert!(!near.log && near.low <= 90.0 && near.high >= 110.0);
        let far = scale_of(&[50.0, 60.0, 15_000.0]);
        assert!(far.log);
        for value in [50.0, 15_000.0] {
            let y = far.y(value);
            assert!((TOP..=HEIGHT - BOTTOM).contains(&y), "{value}: {y}");
        }
        assert!(far.y(50.0) > far.y(60.0), "larger values are drawn higher");
        let ticks = far.ticks();
        assert!(ticks[0] < 50.0 && ticks[4] > 15_000.0, "{ticks:?}");
    }

    #[test]
    fn values_near_the_largest_double_are_placed_never_nan() {
        for values in [&[1e308, 1.5e308][..], &[-1.7e308, 1.7e308], &[1.7e308]] {
            let scale = scale_of(values);
            for &value in values.iter().chain(&scale.ticks()) {
                let y = scale.y(value);
                assert!(
                    (TOP..=HEIGHT - BOTTOM).contains(&y),
                    "{values:?}: {value} at {y}"
                );
            }
        }
    }

    #[test]
    fn control_characters_are_written_out_as_xml_allows() {
        assert_eq!(escape("a\u{1b}]0;x\u{7}<"), "a\\u{1b}]0;x\\u{7}&lt;");
    }
}
