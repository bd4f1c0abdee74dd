//! How a benchmark's lines print and what its counts are: the [`Metric`]
//! each declares, with the formats the metrics carry.

use crate::config::NumberOption;

/// How a benchmark's per-second lines and fixed-work block print (what it
/// is judged by is its [`Figure`](crate::figures::Figure)s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Hits (and drops) counted by a BPF program or the producers: the kernel
    /// runner's lines in M/s.
    Hits,
    /// Operations per second with `perf bench`'s usecs/op; a fixed run prints
    /// perf's own block.
    Ops(PerfFormat),
    /// Hits, printed as the kernel runner's `ops_report_progress` and
    /// `ops_report_final` print them: throughput in M ops/s and latency in
    /// ns/op (one producer's time per hit), one op being one hit.
    HitOps,
    /// Bytes moved between sockets, printed as the kernel runner's
    /// `sockmap` prints them: send, BPF and receive speeds in MB/s each
    /// second (`Sample::extra` holds the send and receive counts), and a
    /// Summary of the total and mean MB the BPF programs saw.
    Sockmap,
    /// Hits and important hits (carried as the second count), printed as
    /// the kernel runner's `local_storage_report_progress` and
    /// `local_storage_report_final`: hits throughput and latency, important
    /// hits throughput.
    LocalStorage,
    /// Storages created (hits) and the whole system's kmallocs (drops),
    /// printed as the kernel runner's local-storage-create prints them:
    /// creations in k/s, per producer, and kmallocs per creation; after the
    /// Summary, the failed creations the run kept, if any.
    LocalStorageCreate,
    /// Hits and false hits, printed as the kernel runner's
    /// `false_hits_report_progress` and `false_hits_report_final` print
    /// them: "N false hits of T total operations. Percentage = P %". The
    /// false hits are the drops (a body that counts every false hit as a
    /// drop, and nothing else), and the total is hits + drops + false hits,
    /// as upstream adds them.
    FalseHits,
    /// The kernel runner's htab-mem lines: hits are operations, shown per
    /// producer in k/s, and a second's drops carry the map's memory in bytes
    /// at its end (the workload reports a running sum of its readings), shown
    /// in MiB; the Summary adds the peak the run kept.
    HtabMem,
    /// Hits, and before the summary the kernel runner's per-CPU lines of a
    /// benchmark timed inside BPF, from the figures its run kept.
    PerCpu(PerCpuLines),
    /// The kernel runner's local-storage-tasks-trace lines: each second the
    /// mean RCU Tasks Trace grace period latency and the kthread's ticks per
    /// grace period (`Sample::extra` carries the cumulative ns, grace
    /// periods and ticks), and two `SUMMARY` lines from the figures the run
    /// kept. Hits (storage updates) are not printed.
    TasksTrace,
    /// The kernel runner's `frac_second_report_progress` and
    /// `frac_second_report_final` (the LPM trie's insert, delete and free):
    /// rates over the time the BPF side measured in each second, not over
    /// the second, since emptying or refilling the map takes the rest. A
    /// sample's `extra` holds that second's measured time in ns and its
    /// operations; the summary's figures are the workload's own (kept by
    /// the names in [`lpm`]).
    FracSecond(FracScale),
}

impl Metric {
    /// What a run's counts are under this metric, for its result file: a
    /// reader of the file cannot otherwise tell events from a map's bytes.
    pub fn count_names(self) -> crate::results::CountNames {
        const EVENTS: &str = "events the BPF program or the producers counted";
        const LOST: &str = "events lost or refused (docs/benchmarks.md says which, per benchmark)";
        let (hits, drops, extra): (&str, &str, &[&str]) = match self {
            Metric::Hits | Metric::HitOps | Metric::PerCpu(_) => (EVENTS, LOST, &[]),
            Metric::Ops(_) => (
                "operations the producers completed (perf's ops are hits and drops together)",
                LOST,
                &[],
            ),
            Metric::Sockmap => (
                "bytes the BPF programs saw",
                "redirects the BPF programs asked for and were refused",
                &["bytes sent", "send calls", "bytes received", "read calls"],
            ),
            Metric::LocalStorage => (
                "storage lookups",
                "important hits: the lookups of map 0, the important one",
                &[],
            ),
            Metric::LocalStorageCreate => (
                "storages created",
                "kmallocs, the whole system's, while they were created",
                &[],
            ),
            Metric::FalseHits => (
                "lookups the bloom filter called absent or the hash map held",
                "false hits: lookups the bloom filter passed and the hash map lacked",
                &[],
            ),
            Metric::HtabMem => (
                "operations",
                "the map's memory in bytes, read at the end of the second (of a fixed run: at its end)",
                &[],
            ),
            Metric::TasksTrace => (
                "storage updates",
                LOST,
                &[
                    "RCU Tasks Trace grace periods' summed latency, ns",
                    "grace periods",
                    "the RCU Tasks Trace kthread's ticks",
                ],
            ),
            Metric::FracSecond(_) => (
                EVENTS,
                LOST,
                &["ns the BPF side measured", "operations in that time"],
            ),
        };
        crate::results::CountNames {
            hits: hits.to_string(),
            drops: drops.to_string(),
            extra: extra.iter().map(|e| e.to_string()).collect(),
        }
    }
}

/// The units of a [`Metric::FracSecond`] benchmark's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FracScale {
    /// Millions of operations per second, nanoseconds per operation
    /// (insert, delete).
    MegaOpsNs,
    /// Thousands of operations per second, milliseconds per operation
    /// (free).
    KiloOpsMs,
}

/// Which per-CPU lines a [`Metric::PerCpu`] benchmark prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerCpuLines {
    /// `N:hash_map_full_perf X events per sec`.
    FullUpdate,
    /// `cpuNN: lookup X.XXXM ± Y.YYYM events/sec (approximated from N samples of ~Mms)`.
    Lookup,
}

/// How `perf bench` reports one of its benchmarks, as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfFormat {
    /// `# Running 'COLLECTION/NAME' benchmark:`
    pub collection: &'static str,
    pub name: &'static str,
    /// The line under it, piece by piece.
    pub executed: &'static [Piece],
    /// perf's `usecs/op/cpu`: one producer's time per operation (also in the
    /// timed summary).
    pub per_cpu: bool,
    /// perf's `ops/sec` line.
    pub ops_per_sec: bool,
    /// The total time in microseconds, and every number with thousands
    /// separators, as perf's uprobe collection prints them.
    pub usecs_grouped: bool,
}

/// One piece of perf's `# Executed ...` line: text, or a figure of the fixed
/// run filled in when it is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(&'static str),
    /// The operations the run made.
    Ops,
    /// The producers' calls (a batch of operations may be one call).
    Calls,
    Producers,
    /// The value of one of the benchmark's own options.
    Param(NumberOption),
}
