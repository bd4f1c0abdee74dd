//! `perf bench`'s output, line for line, for fixed-work (`--repeat`) runs of
//! the perf family, so that the two tools can be compared side by side.

use crate::runner::FixedRun;

/// `# Running 'syscall/basic' benchmark:`
pub fn running(collection: &str, name: &str) -> String {
    format!("# Running '{collection}/{name}' benchmark:")
}

/// ` Total time: 0.779 [sec]` and the blank line perf prints after it.
pub fn total_time(run: &FixedRun) -> [String; 2] {
    let secs = run.elapsed_ns / 1_000_000_000;
    let millis = run.elapsed_ns % 1_000_000_000 / 1_000_000;
    [
        format!(" {:>14}: {secs}.{millis:03} [sec]", "Total time"),
        String::new(),
    ]
}

/// Microseconds per operation, from whole microseconds as perf computes it.
pub fn usecs_per_op(run: &FixedRun, ops: u64) -> f64 {
    if ops == 0 {
        return 0.0;
    }
    (run.elapsed_ns / 1000) as f64 / ops as f64
}

/// ` 0.077906 usecs/op`
pub fn figure(value: f64, unit: &str) -> String {
    format!(" {value:14.6} {unit}")
}

/// ` 12835966 ops/sec`
pub fn ops_per_sec(run: &FixedRun, ops: u64) -> String {
    let usecs = run.elapsed_ns / 1000;
    let rate = if usecs == 0 {
        0
    } else {
        (ops as f64 / (usecs as f64 / 1e6)) as u64
    };
    format!(" {rate:14} ops/sec")
}

/// `1,053,963`: a whole number with thousands separators, as perf's `%'`
/// prints it in an English locale.
pub fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `1,053.963`: perf's `%'.3f`.
pub fn grouped_3(value: f64) -> String {
    let thousandths = (value.max(0.0) * 1000.0).round() as u64;
    format!("{}.{:03}", grouped(thousandths / 1000), thousandths % 1000)
}

/// perf bench uprobe's block after its `# Executed` line: the total in
/// microseconds and the time per call.
pub fn uprobe_figures(run: &FixedRun) -> [String; 3] {
    let usecs = run.elapsed_ns / 1000;
    let per_call = if run.calls == 0 {
        0.0
    } else {
        usecs as f64 / run.calls as f64
    };
    [
        format!(" {:>14}: {} usecs", "Total time", grouped(usecs)),
        String::new(),
        format!(" {} usecs/op", grouped_3(per_call)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(elapsed_ns: u64, ops: u64) -> FixedRun {
        FixedRun {
            elapsed_ns,
            calls: ops,
            ops,
            values: vec![Some(ops)],
        }
    }

    #[test]
    fn lines_match_perf_bench_uprobe() {
        // perf bench uprobe empty: 1,000 calls in 1,053,963 us.
        let r = run(1_053_963_400, 1000);
        assert_eq!(
            uprobe_figures(&r),
            [
                "     Total time: 1,053,963 usecs".to_string(),
                String::new(),
                " 1,053.963 usecs/op".to_string(),
            ]
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped_3(0.5), "0.500");
    }

    #[test]
    fn lines_match_perf_bench_syscall() {
        // perf bench syscall basic: 10,000,000 calls in 0.779066 s.
        let r = run(779_066_000, 10_000_000);
        assert_eq!(
            running("syscall", "basic"),
            "# Running 'syscall/basic' benchmark:"
        );
        assert_eq!(total_time(&r)[0], "     Total time: 0.779 [sec]");
        assert_eq!(
            figure(usecs_per_op(&r, 10_000_000), "usecs/op"),
            "       0.077907 usecs/op"
        );
        assert_eq!(ops_per_sec(&r, 10_000_000), "       12835882 ops/sec");
    }
}
