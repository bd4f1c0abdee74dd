//! `bench history ...` and `bench export`: results kept over kernels,
//! versions and machines in one SQLite file ([`store`]) or a PostgreSQL
//! database ([`postgres`]), behind one interface ([`backend`]), with a
//! local [`spool`] for a run whose server is away; as plain entries
//! ([`entry`]) made from result files ([`import`], the one reader of a
//! `ResultFile` here) or BMF files ([`bmf`]); their series and change points
//! ([`series`], the statistics in `stats::edivisive`); and what `report`
//! makes of them (tables, SVG, the page, the trackers' formats).

pub mod args;
pub mod backend;
pub mod bmf;
pub mod entry;
pub mod import;
pub mod postgres;
pub mod series;
pub mod spool;
pub mod store;
pub mod time;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::OutputTarget;
use crate::error::{Error, Result};
use crate::report::history as lines;
use crate::report::{console, github_action, history_page, history_plot, otava, output};
use crate::results::ResultFile;
use args::{
    AddArgs, ChangesArgs, ExportArgs, FormatArgs, HistoryArgs, HistoryCommand, ReportArgs,
    SearchArgs, ShowArgs,
};
use backend::Location;
use entry::{Entry, KernelId, MachineId, ToolId};
use postgres::target::Target;
use postgres::PgStore;
use series::{changes, series, Change, Order, Series};
use store::Open;

/// The history file: `explicit` (--history), else `$BENCH_HISTORY`, else
/// `$XDG_DATA_HOME/bench/history.sqlite`, else under `~/.local/share`.
pub fn path_of(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(path) = env("BENCH_HISTORY") {
        return Ok(PathBuf::from(path));
    }
    let data = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".local/share")))
        .ok_or_else(|| {
            Error::usage("no history named: give --history PATH (neither BENCH_HISTORY, XDG_DATA_HOME nor HOME is set)")
        })?;
    Ok(data.join("bench/history.sqlite"))
}

/// Checks, before a run, that `path` can take its results: a history, or a
/// file that does not exist yet, where a file can be written (its directory
/// made now when missing, as the default path's is).
pub fn check_target(path: &Path) -> Result<()> {
    // A URL is checked here for its form alone: a server away at the end
    // of the run spools the entries.
    let Location::File(path) = Location::of(path)? else {
        return Ok(());
    };
    let path = path.as_path();
    let cannot = |why: String| {
        Error::usage(format!(
            "--history {} cannot be written: {why}",
            path.display()
        ))
    };
    store::check(path)?;
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| cannot(format!("cannot create {}: {e}", dir.display())))?;
    }
    output::check_writable("--history", path)?;
    // The file itself too: one made immutable, or another user's, passes
    // the check of its directory.
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(cannot(output::reason(&e))),
        _ => Ok(()),
    }
}

/// Appends a run's results (`--history` on a run); says how many entries.
pub fn append_results(path: &Path, results: &[ResultFile]) -> Result<usize> {
    let local = import::Local::gather();
    let mut entries = Vec::new();
    for result in results {
        entries.extend(import::entries_of(result, &local, "run")?);
    }
    let entries = import::as_today(entries);
    match Location::of(path)? {
        Location::Postgres(target) => append_or_spool(&target, &entries),
        file => opened(&file, Open::Create)?.append(&entries),
    }
}

/// Appends a run's entries to a PostgreSQL history, or, when it cannot
/// take them (away, login refused, no such table, no privilege), keeps
/// them in the spool and says where.
fn append_or_spool(target: &Target, entries: &[Entry]) -> Result<usize> {
    let err = match PgStore::open(target).and_then(|mut store| store.append(entries)) {
        Ok(added) => return Ok(added),
        Err(err) => err,
    };
    let spool = spool::keep(target, entries)?;
    let kept = format!(
        "{err}; the run's {} entries are kept in {}: `bench history push --history URL` delivers them",
        entries.len(),
        spool.display()
    );
    Err(match err {
        Error::Interrupted { code, .. } => Error::Interrupted {
            message: kept,
            code,
        },
        _ => Error::StoreAway(kept),
    })
}

/// `bench history ...`.
pub fn run(args: &HistoryArgs) -> Result<()> {
    let path = Location::of(&path_of(args.history.as_deref())?)?;
    match &args.command {
        HistoryCommand::Add(add) => add_files(&path, add),
        HistoryCommand::List => {
            let entries = opened(&path, Open::Existing)?.entries(&[])?;
            print(&lines::list(&entries));
            Ok(())
        }
        HistoryCommand::Show(show) => show_benchmark(&path, show),
        HistoryCommand::Changes(changes) => print_changes(&path, changes),
        HistoryCommand::Export(export) => {
            let entries = read(&path, &export.benchmarks)?;
            let entries = newest_or_all(&entries, &export.format);
            let target = match &path {
                Location::Postgres(target) => Some(target.as_ref()),
                Location::File(_) => None,
            };
            write_format(&entries, &export.format, export.by.order(), target)
        }
        HistoryCommand::Report(report) => write_report(&path, report),
        HistoryCommand::Merge(merge) => {
            if let Location::File(file) = &path {
                check_target(file)?;
            }
            let mut store = opened(&path, Open::Create)?;
            for other in &merge.others {
                let other = Location::of(other)?;
                let entries = opened(&other, Open::Existing)?.entries(&[])?;
                let entries = import::as_today(entries);
                let added = store.append(&entries)?;
                print(&[lines::merged(&other.shown(), added, entries.len())]);
            }
            Ok(())
        }
        HistoryCommand::Init => upgrade(&path, true),
        HistoryCommand::Migrate => upgrade(&path, false),
        HistoryCommand::Push => push(&path),
    }
}

/// `init` and `migrate`: a PostgreSQL history's tables made or brought up
/// (the owner's work); a file is made, or migrated, by opening it.
fn upgrade(path: &Location, create: bool) -> Result<()> {
    let said = match path {
        Location::Postgres(target) => postgres::upgrade(target, create)?,
        Location::File(file) => {
            let how = if create { Open::Create } else { Open::Existing };
            store::Store::open(file, how)?;
            format!(
                "{} is a history of schema {}",
                file.display(),
                store::SCHEMA_VERSION
            )
        }
    };
    print(&[said]);
    Ok(())
}

/// `push`: the spool of a run whose PostgreSQL history was away, delivered.
fn push(path: &Location) -> Result<()> {
    let Location::Postgres(target) = path else {
        return Err(Error::usage(
            "`bench history push` delivers a run's spool to a postgresql:// history: give --history URL",
        ));
    };
    let said = match spool::push(target)? {
        None => format!("nothing to push to {}: no spool", target.shown),
        Some(pushed) => format!(
            "pushed {}: {} new entries of {} to {}",
            pushed.spool.display(),
            pushed.added,
            pushed.offered,
            target.shown
        ),
    };
    print(&[said]);
    Ok(())
}

/// `bench export`: result files in a tracker's format.
pub fn export(args: &ExportArgs) -> Result<()> {
    let local = import::Local::default();
    let mut entries = Vec::new();
    for file in &args.files {
        entries.extend(import::entries_of(&loaded(file)?, &local, "result-file")?);
    }
    let entries = import::as_today(entries);
    write_format(&entries, &args.format, Order::Time, None)
}

/// A result file, of today's layout or an earlier one brought to it (whose
/// note, said once, goes to stderr).
fn loaded(file: &Path) -> Result<ResultFile> {
    // The history keeps numbers: a test tick's file is refused always.
    let (result, note) = crate::compare::load_result(file, None)?;
    if let Some(note) = note {
        crate::report::console::warning(&note);
    }
    Ok(result)
}

/// Prints `text`, control characters escaped: names, kernels and labels
/// come from files anyone could have written, and must not drive the
/// terminal (as `compare` prints them).
fn print(text: &[String]) {
    for line in text {
        output::print_line(&lines::printable(line));
    }
}

/// The entries of `benchmarks` (all when none), each named one present.
fn read(path: &Location, benchmarks: &[String]) -> Result<Vec<Entry>> {
    let entries = opened(path, Open::Existing)?.entries(benchmarks)?;
    let entries = import::as_today(entries);
    if let Some(missing) = benchmarks
        .iter()
        .find(|name| !entries.iter().any(|e| &e.benchmark == *name))
    {
        return Err(Error::usage(format!(
            "{} has no entry of '{missing}'; `bench history list` shows what it has",
            path.shown().display()
        )));
    }
    Ok(entries)
}

fn add_files(path: &Location, add: &AddArgs) -> Result<()> {
    let labels = add.labels();
    let at = add.at.unwrap_or_else(now);
    let mut entries = Vec::new();
    for file in &add.files {
        entries.extend(entries_of_file(file, add, at)?);
    }
    let entries: Vec<Entry> = entries.into_iter().map(|e| e.labelled(&labels)).collect();
    let entries = import::as_today(entries);
    if let Location::File(file) = path {
        check_target(file)?;
    }
    let added = opened(path, Open::Create)?.append(&entries)?;
    print(&[lines::added(&path.shown(), added, entries.len())]);
    Ok(())
}

/// A file's entries: a result file's, or a BMF file's.
fn entries_of_file(file: &Path, add: &AddArgs, at: i64) -> Result<Vec<Entry>> {
    let text = crate::results::read_bounded(
        file,
        "`history add` takes result files (--json) and BMF files",
    )?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!(
            "{} is neither a result file nor BMF: {e}",
            file.display()
        ))
    })?;
    if !bmf::looks_like_bmf(&json) {
        let result = loaded(file)?;
        let entries = import::entries_of(&result, &import::Local::default(), "result-file")?;
        if entries.is_empty() {
            console::warning(&lines::no_entry(file, &result));
        }
        return Ok(entries);
    }
    let benchmarks = bmf::read(&json, add.better.map(|b| b.better()))
        .map_err(|e| Error::usage(format!("{}: {e}", file.display())))?;
    Ok(benchmarks
        .into_iter()
        .map(|benchmark| Entry {
            uid: String::new(),
            benchmark: benchmark.name,
            time: at,
            kernel: KernelId::default(),
            machine: MachineId::default(),
            tool: ToolId::default(),
            options: BTreeMap::new(),
            labels: BTreeMap::new(),
            source: "bmf".to_string(),
            figures: benchmark.figures,
        })
        .collect())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn show_benchmark(path: &Location, show: &ShowArgs) -> Result<()> {
    let entries = read(path, std::slice::from_ref(&show.benchmark))?;
    check_figure(&entries, show.figure.as_deref())?;
    let all = series(&entries, show.figure.as_deref(), show.by.order());
    if all.is_empty() {
        return Err(no_figure(&show.benchmark, show.figure.as_deref()));
    }
    print(&lines::show(&all));
    if let Some(plot) = &show.plot {
        let svg = history_plot::svg(&all, &[], show.by.order());
        output::write_before_exit(&OutputTarget::File(plot.clone()), svg.as_bytes())?;
    }
    Ok(())
}

fn no_figure(benchmark: &str, figure: Option<&str>) -> Error {
    Error::usage(match figure {
        Some(figure) => format!("'{benchmark}' has no figure '{figure}' in the history"),
        None => format!("'{benchmark}' has no figure in the history"),
    })
}

/// Refuses a `--figure` that no entry has (a typo must not pass a gate),
/// naming the figures there are.
fn check_figure(entries: &[Entry], figure: Option<&str>) -> Result<()> {
    let Some(figure) = figure else {
        return Ok(());
    };
    let mut names: Vec<&str> = entries
        .iter()
        .flat_map(|e| e.figures.iter().map(|f| f.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.contains(&figure) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "no entry has a figure '{figure}'; the figures there are: {}",
        lines::printable(&names.join(", "))
    )))
}

/// The series of `entries` the search names, and each one's change points.
fn searched<'a>(
    entries: &'a [Entry],
    search: &SearchArgs,
) -> Result<(Vec<Series<'a>>, Vec<Vec<Change>>)> {
    check_figure(entries, search.figure.as_deref())?;
    let all = series(entries, search.figure.as_deref(), search.by.order());
    let options = search.options();
    let found = all.iter().map(|s| changes(s, &options)).collect();
    Ok((all, found))
}

fn print_changes(path: &Location, args: &ChangesArgs) -> Result<()> {
    let entries = read(path, &args.benchmarks)?;
    let (all, found) = searched(&entries, &args.search)?;
    let found: Vec<Change> = found.into_iter().flatten().collect();
    match args.json {
        true => output::write_stdout(lines::changes_json(&found).as_bytes()),
        false => {
            print(&lines::changes(&found, all.len()));
            Ok(())
        }
    }
}

fn write_report(path: &Location, args: &ReportArgs) -> Result<()> {
    let entries = read(path, &args.benchmarks)?;
    let (all, found) = searched(&entries, &args.search)?;
    let source = path.shown().display().to_string();
    let page = history_page::page(&history_page::Page {
        source: &source,
        series: &all,
        changes: &found,
        entries: &entries,
        order: args.search.by.order(),
    });
    make_dir(&args.dir)?;
    let index = args.dir.join("index.html");
    output::write_before_exit(&OutputTarget::File(index.clone()), page.as_bytes())?;
    print(&[lines::report_written(
        &index,
        all.len(),
        found.iter().flatten().count(),
    )]);
    Ok(())
}

/// Makes the directory `dir` a report or an export writes into, when
/// missing; a file of that name is refused in a sentence, left as it is.
fn make_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::usage(format!(
            "{} is a file, not a directory: give a directory to write into (made when missing)",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::runtime(format!(
            "cannot create {}: {}",
            dir.display(),
            output::reason(&e)
        ))
    })
}

/// What a one-report format takes of a history: the newest entry of each
/// series (bmf, github-action); otava takes every entry.
fn newest_or_all(entries: &[Entry], format: &FormatArgs) -> Vec<Entry> {
    if format.format == args::Format::Otava {
        return entries.to_vec();
    }
    let mut newest: BTreeMap<(String, String, String), &Entry> = BTreeMap::new();
    for entry in entries {
        newest.insert(entry.series_key(), entry);
    }
    newest.into_values().cloned().collect()
}

/// Writes `entries` in a tracker's format; otava's tests query `store`
/// itself when the history is a PostgreSQL one.
fn write_format(
    entries: &[Entry],
    format: &FormatArgs,
    order: Order,
    store: Option<&Target>,
) -> Result<()> {
    let target = match format.output.as_deref() {
        None => OutputTarget::Stdout,
        Some(path) if path.as_os_str() == "-" => OutputTarget::Stdout,
        Some(path) => OutputTarget::File(path.to_path_buf()),
    };
    match format.format {
        args::Format::Bmf => {
            output::write_before_exit(&target, crate::report::bmf::bmf(entries).as_bytes())
        }
        args::Format::GithubAction => {
            let better = format.better.better();
            let (json, kept, left_out) = github_action::github_action(entries, better);
            if kept == 0 {
                // github-action-benchmark refuses an empty list: a CI step
                // must fail here, not there.
                return Err(Error::usage(lines::nothing_to_export(left_out, better)));
            }
            if left_out > 0 {
                console::warning(&lines::left_out(left_out, better));
            }
            output::write_before_exit(&target, json.as_bytes())
        }
        args::Format::Otava => {
            let OutputTarget::File(dir) = target else {
                return Err(Error::usage(
                    "--format otava writes a CSV a series and otava.yaml: give --output DIR",
                ));
            };
            make_dir(&dir)?;
            let dir = dir.canonicalize().unwrap_or(dir);
            let all = series(entries, None, order);
            let files = match store {
                Some(_) => otava::otava_postgres(&all),
                None => otava::otava(&all, &dir),
            };
            for (name, bytes) in files {
                output::write_before_exit(&OutputTarget::File(dir.join(name)), bytes.as_bytes())?;
            }
            Ok(())
        }
    }
}

/// The history at `location`, opened as `how` asks; how, said on stderr
/// when the reader should know.
fn opened(location: &Location, how: Open) -> Result<Box<dyn backend::HistoryStore>> {
    let store = backend::open(location, how)?;
    if let Some(note) = store.note() {
        console::warning(note);
    }
    Ok(store)
}
