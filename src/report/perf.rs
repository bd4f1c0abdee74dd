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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::Counts;

    fn run(elapsed_ns: u64, ops: u64) -> FixedRun {
        FixedRun {
            elapsed_ns,
            calls: ops,
            ops,
            counts: Counts {
                hits: ops,
                drops: 0,
            },
        }
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
