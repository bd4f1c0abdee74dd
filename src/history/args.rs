//! The command lines of `bench history ...` and `bench export`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::series::Order;
use crate::stats::{Better, ChangeOptions, NOISE_FLOOR_PCT};

pub const AFTER_HELP: &str =
    "The history is one SQLite file or a PostgreSQL database: --history PATH or \
postgresql://USER@HOST:PORT/DB, else $BENCH_HISTORY, \
else $XDG_DATA_HOME/bench/history.sqlite (~/.local/share/bench/history.sqlite). A run appends \
itself with `bench --history PATH ...`; a run whose PostgreSQL history is away keeps its \
entries in a spool that `bench history push` delivers. A series is one figure of one benchmark on one machine \
with one set of options; change points are found in each by E-divisive means with a permutation \
test (as Apache Otava's), deterministic for a given --seed. Exit codes: 0 ok, 1 failure, \
2 bad usage (a file that is not a history, an unknown benchmark), 3 a privilege the database \
role lacks, 7 the PostgreSQL history away (unreachable, login refused, no answer in time).";

pub const EXPORT_AFTER_HELP: &str = "bmf: Bencher Metric Format (the figures as measures, with \
the interval's lower and upper values); otava: a CSV a series and the otava.yaml that \
`otava analyze` reads (--output DIR); github-action: github-action-benchmark's custom JSON, the \
figures of one direction (--better; customBiggerIsBetter is higher, customSmallerIsBetter lower). \
Exit codes: 0 ok, 1 failure, 2 bad usage.";

#[derive(Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct HistoryArgs {
    /// The history: a file or a postgresql:// URL (default:
    /// $BENCH_HISTORY, else $XDG_DATA_HOME/bench/history.sqlite).
    #[arg(
        long = "history",
        id = "history_file",
        value_name = "PATH",
        global = true
    )]
    pub history: Option<PathBuf>,

    #[command(subcommand)]
    pub command: HistoryCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum HistoryCommand {
    /// Add result files (--json) and BMF files to the history.
    Add(AddArgs),
    /// The benchmarks kept: entries, first and last.
    List,
    /// One benchmark's entries as a table, one line an entry, and with
    /// --plot an SVG of each series.
    Show(ShowArgs),
    /// Where each series changed: E-divisive means, permutation test.
    Changes(ChangesArgs),
    /// Write the history in a tracker's format (the newest entry of each
    /// series for bmf and github-action, every entry for otava).
    Export(HistoryExportArgs),
    /// Write a page (DIR/index.html): a chart a series, the change points
    /// marked and listed, and the entries.
    Report(ReportArgs),
    /// Join other histories (another machine's) into this one; entries
    /// already kept are left out.
    Merge(MergeArgs),
    /// Create a PostgreSQL history's tables (as the database's owner); a
    /// file is created.
    Init,
    /// Bring a PostgreSQL history's tables to this bench's schema (as the
    /// database's owner).
    Migrate,
    /// Deliver the spool of runs whose PostgreSQL history was away.
    Push,
}

#[derive(Args, Debug, Clone)]
pub struct AddArgs {
    /// Result files written by --json, or BMF files.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// When a BMF file's results were measured (RFC 3339, a date, or
    /// @SECONDS); default now.
    #[arg(long, value_name = "TIME", value_parser = super::time::parse)]
    pub at: Option<i64>,
    /// What the files do not carry: kernel=, kernel-version=, machine=,
    /// cpu=, cpus=, virtualised=, version=, commit=, or a label of your own.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label)]
    pub labels: Vec<(String, String)>,
    /// Which way a BMF measure other than throughput and latency is better.
    #[arg(long, value_enum, value_name = "higher|lower")]
    pub better: Option<BetterArg>,
}

impl AddArgs {
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.labels.iter().cloned().collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BetterArg {
    Higher,
    Lower,
}

impl BetterArg {
    pub fn better(self) -> Better {
        match self {
            BetterArg::Higher => Better::Higher,
            BetterArg::Lower => Better::Lower,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    Time,
    Kernel,
}

impl ByArg {
    pub fn order(self) -> Order {
        match self {
            ByArg::Time => Order::Time,
            ByArg::Kernel => Order::Kernel,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// The benchmark.
    #[arg(value_name = "BENCH")]
    pub benchmark: String,
    /// One figure (hits, operations, attach, ... or a BMF measure).
    #[arg(long, value_name = "F")]
    pub figure: Option<String>,
    /// The series' order: by time, or by kernel release.
    #[arg(long, value_enum, default_value = "time")]
    pub by: ByArg,
    /// Draw each series (a point an entry, with its interval, coloured by
    /// machine) in FILE.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// The options of the change point search.
#[derive(Args, Debug, Clone)]
pub struct SearchArgs {
    /// One figure (default: every figure).
    #[arg(long, value_name = "F")]
    pub figure: Option<String>,
    /// The series' order: by time, or by kernel release.
    #[arg(long, value_enum, default_value = "time")]
    pub by: ByArg,
    /// The largest p-value of a change point (the permutation test's).
    #[arg(long, value_name = "P", default_value_t = 0.01, value_parser = probability)]
    pub significance: f64,
    /// Changes of the mean smaller than PCT percent are not change points.
    #[arg(long, value_name = "PCT", default_value_t = NOISE_FLOOR_PCT, value_parser = magnitude)]
    pub min_magnitude: f64,
    /// Permutations per test (the smallest p-value is 1/(N+1)).
    #[arg(long, value_name = "N", default_value_t = 199,
          value_parser = clap::value_parser!(u32).range(19..=100_000))]
    pub permutations: u32,
    /// The permutations' seed: the same history and seed give the same
    /// change points.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Search the values themselves, as Otava does, rather than their
    /// ranks (which outliers do not outweigh).
    #[arg(long)]
    pub linear: bool,
}

impl SearchArgs {
    pub fn options(&self) -> ChangeOptions {
        ChangeOptions {
            significance: self.significance,
            min_magnitude: self.min_magnitude / 100.0,
            permutations: self.permutations as usize,
            seed: self.seed,
            ranks: !self.linear,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ChangesArgs {
    /// The benchmarks (default: all).
    #[arg(value_name = "BENCH")]
    pub benchmarks: Vec<String>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Print the changes as a JSON list.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Bmf,
    Otava,
    GithubAction,
}

/// What an export writes and where.
#[derive(Args, Debug, Clone)]
pub struct FormatArgs {
    /// The tracker's format.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Where: a file (stdout when absent, or -), a directory for otava.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// github-action: the figures of this direction (higher:
    /// customBiggerIsBetter, lower: customSmallerIsBetter).
    #[arg(
        long,
        value_enum,
        default_value = "higher",
        value_name = "higher|lower"
    )]
    pub better: BetterArg,
}

#[derive(Args, Debug, Clone)]
pub struct HistoryExportArgs {
    /// The benchmarks (default: all).
    #[arg(value_name = "BENCH")]
    pub benchmarks: Vec<String>,
    #[command(flatten)]
    pub format: FormatArgs,
    /// otava: the order of a series' rows, by time or by kernel release
    /// (Otava takes the rows in the file's order).
    #[arg(long, value_enum, default_value = "time")]
    pub by: ByArg,
}

/// `bench export`: result files in a tracker's format.
#[derive(Args, Debug, Clone)]
#[command(after_help = EXPORT_AFTER_HELP)]
pub struct ExportArgs {
    /// Result files written by --json.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// The directory of the page (made when missing).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The benchmarks (default: all).
    #[arg(long = "bench", value_name = "BENCH")]
    pub benchmarks: Vec<String>,
    #[command(flatten)]
    pub search: SearchArgs,
}

#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// The histories to join into this one (files or postgresql:// URLs).
    #[arg(value_name = "OTHER", required = true)]
    pub others: Vec<PathBuf>,
}

fn label(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got '{text}'"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("expected KEY=VALUE, got '{text}'"));
    }
    if key == "cpus" && value.trim().parse::<u32>().is_err() {
        return Err(format!("cpus= takes a whole number, got '{value}'"));
    }
    Ok((key.to_string(), value.to_string()))
}

fn probability(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p < 1.0 => Ok(p),
        _ => Err(format!(
            "expected a probability between 0 and 1, got '{text}'"
        )),
    }
}

fn magnitude(text: &str) -> Result<f64, String> {
    match text.trim().trim_end_matches('%').parse::<f64>() {
        Ok(pct) if (0.0..1000.0).contains(&pct) => Ok(pct),
        _ => Err(format!("expected a percentage from 0, got '{text}'")),
    }
}
