//! The history on disk: one SQLite file (SQLite compiled in), in WAL mode so
//! that readers never wait, with a schema version and its migrations, and
//! appends in immediate transactions behind a busy timeout, so that two
//! processes appending at once both land whole. A file that is not a
//! history is refused before anything is written to it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use super::entry::{Entry, FigureValues, KernelId, MachineId, ToolId};
use crate::error::{Error, Result};
use crate::stats::Better;

/// Marks the file as a bench history in SQLite's header (`PRAGMA
/// application_id`): "bnch".
const APPLICATION_ID: i32 = 0x626e_6368;

/// The schema this bench writes (`PRAGMA user_version`); each step of
/// [`MIGRATIONS`] brings a file one version up.
pub const SCHEMA_VERSION: i32 = 1;

/// The statements from version i to i + 1, at index i.
const MIGRATIONS: &[&str] = &["
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    benchmark TEXT NOT NULL,
    time INTEGER NOT NULL,
    kernel_release TEXT NOT NULL,
    kernel_version TEXT NOT NULL,
    machine_name TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpus INTEGER NOT NULL,
    virtualised TEXT NOT NULL,
    bench_version TEXT NOT NULL,
    bench_commit TEXT NOT NULL,
    options TEXT NOT NULL,
    labels TEXT NOT NULL,
    source TEXT NOT NULL
);
CREATE INDEX entries_by_benchmark ON entries (benchmark, time);
CREATE TABLE figures (
    entry INTEGER NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    unit TEXT NOT NULL,
    better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
    run_values TEXT NOT NULL,
    low REAL,
    high REAL,
    PRIMARY KEY (entry, name)
);
"];

/// How long an append waits for another process's to end.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// An open history.
pub struct Store {
    path: PathBuf,
    conn: Connection,
}

/// Whether opening may create the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// Create it (and its directory) when missing: appending.
    Create,
    /// It must exist: reading.
    Existing,
}

impl Store {
    pub fn open(path: &Path, how: Open) -> Result<Store> {
        let exists = check_file(path)?;
        if !exists && how == Open::Existing {
            return Err(Error::usage(format!(
                "{} does not exist: a run with --history PATH or `bench history add` makes a history",
                path.display()
            )));
        }
        if exists {
            refuse_foreign(path)?;
        } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| sql_error(path, e))?;
        let mut store = Store {
            path: path.to_path_buf(),
            conn,
        };
        store.prepare()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// WAL mode, the busy timeout, and the schema brought up to date, in one
    /// immediate transaction so that two processes creating the file at once
    /// migrate it once.
    fn prepare(&mut self) -> Result<()> {
        let path = self.path.clone();
        let err = |e| sql_error(&path, e);
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        self.conn
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        let mode: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::runtime(format!(
                "{}: SQLite could not switch it to WAL mode (it stayed in {mode})",
                path.display()
            )));
        }
        let read = |conn: &Connection, pragma: &str| -> Result<i32> {
            conn.query_row(&format!("PRAGMA {pragma}"), [], |row| row.get(0))
                .map_err(err)
        };
        // Up to date: nothing to write (a reader only reads).
        if read(&self.conn, "user_version")? == SCHEMA_VERSION
            && read(&self.conn, "application_id")? == APPLICATION_ID
        {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let version = read(&tx, "user_version")?;
        if version > SCHEMA_VERSION {
            return Err(Error::usage(format!(
                "{} is a history of schema {version}, newer than this bench's {SCHEMA_VERSION}: use a newer bench",
                path.display()
            )));
        }
        for (step, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql).map_err(err)?;
            tx.pragma_update(None, "user_version", step as i32 + 1)
                .map_err(err)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// Appends `entries` in one transaction; an entry already kept (the same
    /// uid) is left out. Returns how many were added.
    pub fn append(&mut self, entries: &[Entry]) -> Result<usize> {
        let path = self.path.clone();
        let err = |e| sql_error(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut added = 0;
        for entry in entries {
            let inserted = tx
                .execute(
                    "INSERT OR IGNORE INTO entries (uid, benchmark, time, kernel_release,
                        kernel_version, machine_name, cpu_model, cpus, virtualised,
                        bench_version, bench_commit, options, labels, source)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                    params![
                        entry.uid,
                        entry.benchmark,
                        entry.time,
                        entry.kernel.release,
                        entry.kernel.version,
                        entry.machine.name,
                        entry.machine.cpu_model,
                        entry.machine.cpus,
                        entry.machine.virtualised,
                        entry.tool.version,
                        entry.tool.commit,
                        to_json(&entry.options),
                        to_json(&entry.labels),
                        entry.source,
                    ],
                )
                .map_err(err)?;
            if inserted == 0 {
                continue;
            }
            let id = tx.last_insert_rowid();
            for figure in &entry.figures {
                tx.execute(
                    "INSERT INTO figures (entry, name, unit, better, run_values, low, high)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        id,
                        figure.name,
                        figure.unit,
                        better_name(figure.better),
                        serde_json::to_string(&figure.values).unwrap_or_default(),
                        figure.low,
                        figure.high,
                    ],
                )
                .map_err(err)?;
            }
            added += 1;
        }
        tx.commit().map_err(err)?;
        Ok(added)
    }

    /// Every entry (of `benchmarks`, when some are named), in time order
    /// (the order of adding among entries of the same second).
    pub fn entries(&self, benchmarks: &[String]) -> Result<Vec<Entry>> {
        let err = |e| sql_error(&self.path, e);
        let mut figures = self.figures().map_err(err)?;
        let mut statement = self
            .conn
            .prepare(
                "SELECT id, uid, benchmark, time, kernel_release, kernel_version, machine_name,
                    cpu_model, cpus, virtualised, bench_version, bench_commit, options, labels,
                    source
                 FROM entries ORDER BY time, id",
            )
            .map_err(err)?;
        let rows = statement
            .query_map([], |row| {
                let id: i64 = row.get(0)?;
                Ok(Entry {
                    uid: row.get(1)?,
                    benchmark: row.get(2)?,
                    time: row.get(3)?,
                    kernel: KernelId {
                        release: row.get(4)?,
                        version: row.get(5)?,
                    },
                    machine: MachineId {
                        name: row.get(6)?,
                        cpu_model: row.get(7)?,
                        cpus: row.get(8)?,
                        virtualised: row.get(9)?,
                    },
                    tool: ToolId {
                        version: row.get(10)?,
                        commit: row.get(11)?,
                    },
                    options: from_json(&row.get::<_, String>(12)?),
                    labels: from_json(&row.get::<_, String>(13)?),
                    source: row.get(14)?,
                    figures: figures.remove(&id).unwrap_or_default(),
                })
            })
            .map_err(err)?;
        let mut entries = Vec::new();
        for row in rows {
            let entry = row.map_err(err)?;
            if benchmarks.is_empty() || benchmarks.contains(&entry.benchmark) {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    /// Every entry's figures, by the entry's row id, in the order added.
    fn figures(&self) -> rusqlite::Result<BTreeMap<i64, Vec<FigureValues>>> {
        let mut statement = self.conn.prepare(
            "SELECT entry, name, unit, better, run_values, low, high FROM figures ORDER BY rowid",
        )?;
        let mut by_entry: BTreeMap<i64, Vec<FigureValues>> = BTreeMap::new();
        let rows = statement.query_map([], |row| {
            let better: String = row.get(3)?;
            let values: String = row.get(4)?;
            Ok((
                row.get::<_, i64>(0)?,
                FigureValues {
                    name: row.get(1)?,
                    unit: row.get(2)?,
                    better: if better == "lower" {
                        Better::Lower
                    } else {
                        Better::Higher
                    },
                    values: serde_json::from_str(&values).unwrap_or_default(),
                    low: row.get(5)?,
                    high: row.get(6)?,
                },
            ))
        })?;
        for row in rows {
            let (entry, figure) = row?;
            by_entry.entry(entry).or_default().push(figure);
        }
        Ok(by_entry)
    }
}

/// Checks, without creating or changing anything, that `path` can take
/// entries: a history, an empty file, or a name not taken yet.
pub fn check(path: &Path) -> Result<()> {
    if check_file(path)? {
        refuse_foreign(path)?;
    }
    Ok(())
}

pub fn better_name(better: Better) -> &'static str {
    match better {
        Better::Higher => "higher",
        Better::Lower => "lower",
    }
}

fn to_json(map: &BTreeMap<String, String>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

fn from_json(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn sql_error(path: &Path, err: rusqlite::Error) -> Error {
    match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            not_a_history(path, "it is not an SQLite database")
        }
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            Error::runtime(format!(
                "{} stayed locked by another process for {} s",
                path.display(),
                BUSY_TIMEOUT.as_secs()
            ))
        }
        _ => Error::runtime(format!("history {}: {err}", path.display())),
    }
}

fn not_a_history(path: &Path, why: &str) -> Error {
    Error::usage(format!(
        "{} is not a bench history ({why}); it was left as it was",
        path.display()
    ))
}

/// Whether `path` exists; a directory, a FIFO or a device is refused.
fn check_file(path: &Path) -> Result<bool> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(not_a_history(path, "it is not a regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::usage(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Refuses, without writing to it, a file that is not a history: one that
/// is not SQLite, or an SQLite database of another program. An empty file
/// is taken as a new history.
fn refuse_foreign(path: &Path) -> Result<()> {
    let mut header = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(100).read_to_end(&mut header))
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    if header.is_empty() {
        return Ok(());
    }
    if !header.starts_with(b"SQLite format 3\0") {
        return Err(not_a_history(path, "it is not an SQLite database"));
    }
    // The header's application id may still be in the WAL: ask SQLite,
    // read-only.
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| sql_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| sql_error(path, e))?;
    let read = |sql: &str| -> Result<i64> {
        conn.query_row(sql, [], |row| row.get(0))
            .map_err(|e| sql_error(path, e))
    };
    let id = read("PRAGMA application_id")?;
    let tables = read("SELECT count(*) FROM sqlite_master")?;
    match (id == i64::from(APPLICATION_ID), id == 0 && tables == 0) {
        (true, _) | (_, true) => Ok(()),
        _ => Err(not_a_history(
            path,
            "it is an SQLite database of another program",
        )),
    }
}
