//! The tables that close a sweep: each value's rate and scaling, and for a
//! sweep of bodies, each body's cost against count.

use super::rate_with_sd;
use crate::config::Body;
use crate::figures::{rate, FigureDecl, Show};
use crate::results::BodyRow;
use crate::stats::MeanSd;

/// The table after a sweep: each value's headline, per-producer rate, the
/// headline relative to the first value and, for producers, the scaling
/// efficiency. The per-producer and efficiency columns are a total rate's
/// alone: a percentage, a time or a rate already per producer is not
/// divided among producers.
pub fn sweep_table(
    param: &str,
    figure: &FigureDecl,
    points: &[(u64, usize, MeanSd)],
    producers_swept: bool,
) -> Vec<String> {
    let total_rate = figure.show == Show::Rate && !figure.unit.ends_with(" per producer");
    let scaling = producers_swept && total_rate;
    let mut lines = vec![format!(
        "{param:>16} {:>24} {:>14} {:>9}{}",
        "mean \u{00b1} sd",
        if total_rate { "per producer" } else { "" },
        "relative",
        if scaling { "  efficiency" } else { "" }
    )];
    let Some(&(first_value, _, first)) = points.first() else {
        return lines;
    };
    for &(value, producers, mean_sd) in points {
        let per_producer = match total_rate {
            true => rate(mean_sd.mean / producers.max(1) as f64),
            false => String::new(),
        };
        let relative = if first.mean > 0.0 {
            mean_sd.mean / first.mean
        } else {
            0.0
        };
        let mut line = format!(
            "{value:>16} {:>24} {per_producer:>14} {relative:>9.3}",
            figure.show_spread(mean_sd.mean, mean_sd.sd),
        );
        if scaling && first_value > 0 {
            let ideal = value as f64 / first_value as f64;
            line.push_str(&format!(" {:>10.1}%", relative / ideal * 100.0));
        }
        lines.push(line);
    }
    lines
}

/// The title of a body sweep's table. A body's cost is its time per hit
/// minus count's: without count in the sweep there is none to show, and the
/// title says how to get it instead.
pub fn body_table_title(bench: &str, rows: &[BodyRow]) -> String {
    if has_count(rows) {
        return format!("Bodies of {bench} (cost: time per hit minus count's, paired run by run):");
    }
    let bodies: Vec<&str> = rows.iter().map(|r| r.body).collect();
    format!(
        "Bodies of {bench} (no cost per hit: it is measured against count, which this sweep \
         lacks; add it: --sweep body=count,{}):",
        bodies.join(",")
    )
}

fn has_count(rows: &[BodyRow]) -> bool {
    rows.iter().any(is_count)
}

/// The count's row: the reference the other bodies cost against.
fn is_count(row: &BodyRow) -> bool {
    row.body == Body::Count.name()
}

/// The rows of a body sweep: `ktime  1.234 ± 0.010M/s  810.4 ns/hit
/// +255.0 ± 12.3 ns/hit`, the interval (95 %) when there are several runs.
/// Without count in the sweep the cost column is left out: it would be
/// empty.
pub fn body_table(rows: &[BodyRow]) -> Vec<String> {
    let with_cost = has_count(rows);
    let cost_column = |cost: &str| match with_cost {
        true => format!(" {cost:>26}"),
        false => String::new(),
    };
    let mut lines = vec![format!(
        "{:>10} {:>24} {:>10}{} {:>8}",
        "body",
        "rate mean \u{00b1} sd",
        "ns/hit",
        cost_column("body cost ns/hit"),
        "drops"
    )];
    for row in rows {
        let cost = match &row.cost_ns {
            None if is_count(row) => "(reference)".to_string(),
            None => "n/a".to_string(),
            Some(cost) => match cost.ci95 {
                Some(half) => format!("{:+.1} \u{00b1} {half:.1} (95 % CI)", cost.mean),
                None => format!("{:+.1}", cost.mean),
            },
        };
        lines.push(format!(
            "{:>10} {:>24} {:>10.1}{} {:>7.1}%",
            row.body,
            rate_with_sd(row.rate.mean, row.rate.sd),
            row.ns_per_hit,
            cost_column(&cost),
            row.drops_pct
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::HITS;
    use crate::stats::RunStats;

    #[test]
    fn sweep_tables_show_relative_rate_and_efficiency() {
        let points = [
            (
                1,
                1,
                MeanSd {
                    mean: 10e6,
                    sd: 0.1e6,
                },
            ),
            (
                2,
                2,
                MeanSd {
                    mean: 19e6,
                    sd: 0.2e6,
                },
            ),
        ];
        let hits = HITS.decl();
        let lines = sweep_table("producers", &hits, &points, true);
        assert_eq!(lines.len(), 3);
        assert!(lines[2].contains("19.000 \u{b1} 0.200M/s"), "{}", lines[2]);
        assert!(lines[2].contains("9.500M/s"), "{}", lines[2]);
        assert!(
            lines[2].contains("1.900") && lines[2].ends_with("95.0%"),
            "{}",
            lines[2]
        );
        let lines = sweep_table("breakpoints", &hits, &points, false);
        assert!(!lines[0].contains("efficiency"));
    }

    #[test]
    fn a_percentage_sweeps_as_a_percentage() {
        let percent = FigureDecl {
            name: "false-positive".to_string(),
            unit: "%".to_string(),
            better: crate::stats::Better::Lower,
            show: Show::Decimals(2),
            per_second: true,
        };
        let points = [
            (
                1,
                1,
                MeanSd {
                    mean: 28.098,
                    sd: 0.0,
                },
            ),
            (
                3,
                1,
                MeanSd {
                    mean: 2.783,
                    sd: 0.01,
                },
            ),
        ];
        let lines = sweep_table("nr_hash_funcs", &percent, &points, false);
        assert!(!lines[0].contains("per producer"), "{lines:#?}");
        assert!(lines[1].contains("28.10 \u{b1} 0.00 %"), "{lines:#?}");
        assert!(lines[2].contains("2.78 \u{b1} 0.01 %"), "{lines:#?}");
        assert!(lines.iter().all(|l| !l.contains("/s")), "{lines:#?}");
        // A producers sweep of it has no scaling efficiency either.
        let lines = sweep_table("producers", &percent, &points, true);
        assert!(!lines[0].contains("efficiency"), "{lines:#?}");
    }

    fn body_row(body: &'static str, cost_ns: Option<RunStats>) -> BodyRow {
        BodyRow {
            body,
            rate: MeanSd {
                mean: 1_000_000.0,
                sd: 10_000.0,
            },
            drops_pct: 0.0,
            ns_per_hit: 1000.0,
            cost_ns,
        }
    }

    #[test]
    fn a_body_sweep_without_count_says_how_to_get_the_cost() {
        let rows = [body_row("ktime", None), body_row("hash", None)];
        let title = body_table_title("trig-uprobe-nop", &rows);
        assert!(!title.contains("minus count's"), "{title}");
        assert!(title.contains("--sweep body=count,ktime,hash"), "{title}");
        let table = body_table(&rows);
        assert!(
            table
                .iter()
                .all(|l| !l.contains("n/a") && !l.contains("cost")),
            "{table:#?}"
        );
        assert_eq!(table[1].split_whitespace().collect::<Vec<_>>()[0], "ktime");
        assert!(table[1].ends_with("0.0%"), "{table:#?}");
    }

    #[test]
    fn a_body_sweep_with_count_shows_the_cost_against_it() {
        let cost = RunStats {
            runs: 1,
            mean: 255.0,
            sd: 0.0,
            ci95: None,
        };
        let rows = [body_row("count", None), body_row("ktime", Some(cost))];
        let title = body_table_title("trig-uprobe-nop", &rows);
        assert_eq!(
            title,
            "Bodies of trig-uprobe-nop (cost: time per hit minus count's, paired run by run):"
        );
        let table = body_table(&rows);
        assert!(table[0].contains("body cost ns/hit"), "{table:#?}");
        assert!(
            table[1].contains("(reference)") && table[2].contains("+255.0"),
            "{table:#?}"
        );
    }
}
