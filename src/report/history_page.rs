//! `bench history report DIR`: one static page, `DIR/index.html`, that
//! needs nothing from elsewhere (no script, no font, no stylesheet to
//! fetch: the charts are inline SVG): the change points listed, a chart a
//! benchmark's figure with them marked, and the entries' table.

use std::fmt::Write;

use super::history::{better_word, change_points, number, short_version};
use super::history_plot::{chart_svg, charts, compare_entries, escape};
use crate::history::entry::Entry;
use crate::history::series::{Change, Order, Series};
use crate::history::time;

const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}\
th{background:#f2f2f2}td.num{text-align:right}\
.regression{color:#b00020;font-weight:bold}.improvement{color:#1b7f1b;font-weight:bold}\
section.chart{margin:1.5em 0}";

/// The charts a page draws and the entries it lists at most: the page of a
/// history of 100,000 one-entry series is 0.62 MB, not 166 MB, and says
/// what it left out.
pub const MAX_CHARTS: usize = 200;
pub const MAX_ENTRY_ROWS: usize = 2000;

/// What the page shows: where the history is, its series and changes (one
/// list a series), its entries, and the order of the charts.
pub struct Page<'a> {
    pub source: &'a str,
    pub series: &'a [Series<'a>],
    pub changes: &'a [Vec<Change>],
    pub entries: &'a [Entry],
    pub order: Order,
}

/// The page's HTML.
pub fn page(page: &Page<'_>) -> String {
    let found: Vec<&Change> = page.changes.iter().flatten().collect();
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<link rel=\"icon\" href=\"data:,\">\n<title>bench history</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>bench history</h1>\n"
    );
    let _ = writeln!(
        html,
        "<p>{}: {} entries, {} series, {}; points in {} order.</p>",
        escape(page.source),
        page.entries.len(),
        page.series.len(),
        change_points(found.len()),
        match page.order {
            Order::Time => "time",
            Order::Kernel => "kernel release",
        }
    );
    change_table(&mut html, &found);
    html.push_str("<h2>Charts</h2>\n");
    let mut all = charts(page.series, page.changes);
    // Those with a change point first (stable: in their order otherwise).
    all.sort_by_key(|chart| chart.series.iter().all(|(_, found)| found.is_empty()));
    for chart in all.iter().take(MAX_CHARTS) {
        let _ = writeln!(
            html,
            "<section class=\"chart\">\n{}</section>",
            chart_svg(chart, page.order)
        );
    }
    if all.len() > MAX_CHARTS {
        let _ = writeln!(
            html,
            "<p id=\"charts-left-out\">{} more charts are not drawn: a page draws {MAX_CHARTS}, those with a change point first. Name the benchmarks (<code>bench history report DIR BENCH...</code>) or a figure (<code>--figure</code>) to draw theirs.</p>",
            all.len() - MAX_CHARTS
        );
    }
    entry_table(&mut html, page.entries, page.order);
    html.push_str("</body>\n</html>\n");
    html
}

fn change_table(html: &mut String, found: &[&Change]) {
    html.push_str("<h2>Change points</h2>\n");
    if found.is_empty() {
        html.push_str("<p id=\"no-changes\">No change point found.</p>\n");
        return;
    }
    html.push_str("<table id=\"changes\">\n<tr><th>benchmark</th><th>figure</th><th>machine</th><th>options</th><th>at entry</th><th>before</th><th>after</th><th>change</th><th>verdict</th><th>p</th><th>last before</th><th>first after</th></tr>\n");
    for change in found {
        let side = |b: &crate::history::series::Beside| {
            escape(&format!("{} {} {}", b.time, b.kernel, b.bench_version))
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.1} %</td><td class=\"{}\">{}</td><td class=\"num\">{:.3}</td><td>{}</td><td>{}</td></tr>",
            escape(&change.benchmark),
            escape(&change.figure),
            escape(&change.unit),
            escape(&change.machine),
            escape(&change.options),
            change.index,
            number(change.before),
            number(change.after),
            change.change_pct,
            change.verdict.word(),
            change.verdict.word(),
            change.p,
            side(&change.last_before),
            side(&change.first_after)
        );
    }
    html.push_str("</table>\n");
}

fn entry_table(html: &mut String, entries: &[Entry], order: Order) {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        a.benchmark
            .cmp(&b.benchmark)
            .then(compare_entries(a, b, order))
    });
    html.push_str("<h2>Entries</h2>\n<table id=\"entries\">\n<tr><th>benchmark</th><th>time</th><th>kernel</th><th>machine</th><th>bench</th><th>options</th><th>figures</th></tr>\n");
    let left_out = sorted.len().saturating_sub(MAX_ENTRY_ROWS);
    for entry in sorted.into_iter().take(MAX_ENTRY_ROWS) {
        let figures: Vec<String> = entry
            .figures
            .iter()
            .filter_map(|f| {
                let point = f.point()?;
                Some(format!(
                    "{} {} {} ({} better, {} runs)",
                    f.name,
                    number(point.value),
                    f.unit,
                    better_word(f.better),
                    f.values.len()
                ))
            })
            .collect();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&entry.benchmark),
            escape(&time::show(entry.time)),
            escape(&entry.kernel.release),
            escape(&entry.machine.label()),
            escape(&short_version(entry)),
            escape(&entry.options_line()),
            escape(&figures.join("; "))
        );
    }
    html.push_str("</table>\n");
    if left_out > 0 {
        let _ = writeln!(
            html,
            "<p id=\"entries-left-out\">{left_out} more entries are not listed: a page lists {MAX_ENTRY_ROWS} (<code>bench history show BENCH</code> lists a benchmark's).</p>"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::bare;
    use crate::history::series::series;
    use crate::stats::Better;

    /// A history of more series and entries than a page holds: the page
    /// draws and lists its bounds, and says how many it left out.
    #[test]
    fn a_page_is_bounded_and_says_what_it_left_out() {
        let entries: Vec<Entry> = (0..MAX_ENTRY_ROWS + 5)
            .map(|i| Entry {
                benchmark: format!("b{i}"),
                ..bare(i as i64, ("hits", "hits/s", Better::Higher), 1.0)
            })
            .collect();
        let all = series(&entries, None, Order::Time);
        let html = page(&Page {
            source: "h.sqlite",
            series: &all,
            changes: &[],
            entries: &entries,
            order: Order::Time,
        });
        assert_eq!(
            html.matches("<section class=\"chart\">").count(),
            MAX_CHARTS
        );
        let charts = format!("{} more charts are not drawn", entries.len() - MAX_CHARTS);
        assert!(html.contains(&charts));
        assert_eq!(html.matches("<tr><td>b").count(), MAX_ENTRY_ROWS);
        assert!(html.contains("5 more entries are not listed"));
    }
}
