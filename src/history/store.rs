//! The history on disk: one SQLite file (SQLite compiled in), in WAL mode so
//! that readers never wait, with a schema version and its migrations, and
//! appends in immediate transactions behind a busy timeout, so that two
//! processes appending at once both land whole. A writer checks what the
//! file is and makes its schema in one immediate transaction, so that
//! writers creating one file at once wait for each other rather than see it
//! half made. A reader opens the file read-only, and immutable where it
//! cannot write the WAL's index beside it (a read-only mount, another
//! user's directory). A file that is not a history is refused before
//! anything is written to it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    /// What the reader should know of how it was opened (immutable, its
    /// WAL unseen), to be said once.
    pub note: Option<String>,
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
        match (how, exists) {
            (Open::Existing, false) => Err(Error::usage(format!(
                "{} does not exist: a run with --history PATH or `bench history add` makes a history",
                path.display()
            ))),
            (Open::Existing, true) => Store::read(path),
            (Open::Create, _) => Store::write(path, exists),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens `path` (a regular file) to read, writing nothing: an empty file
    /// or an empty database reads as a history with no entries.
    fn read(path: &Path) -> Result<Store> {
        let empty = || {
            let conn = Connection::open_in_memory().map_err(|e| sql_error(path, e))?;
            migrate(&conn, 0).map_err(|e| sql_error(path, e))?;
            Ok(Store {
                path: path.to_path_buf(),
                conn,
                note: None,
            })
        };
        if !sqlite_header(path)? {
            return empty();
        }
        let (conn, note) = open_read_only(path)?;
        match kind_of(&conn).map_err(|e| sql_error(path, e))? {
            Kind::New => empty(),
            Kind::Foreign => Err(foreign(path)),
            Kind::History(version) if version > SCHEMA_VERSION => Err(newer(path, version)),
            Kind::History(version) if version < SCHEMA_VERSION => Err(Error::usage(format!(
                "{} is a history of schema {version}: `bench history add` or a run with \
                 --history brings it to schema {SCHEMA_VERSION} before it can be read",
                path.display()
            ))),
            Kind::History(_) => Ok(Store {
                path: path.to_path_buf(),
                conn,
                note,
            }),
        }
    }

    /// Opens `path` to append, making it (and its directory) when missing.
    /// What an SQLite file is, is read in the transaction that makes its
    /// schema ([`Store::prepare`]), never through a second connection that
    /// could see another writer's creation half way.
    fn write(path: &Path, exists: bool) -> Result<Store> {
        if exists {
            sqlite_header(path)?;
        } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, e))?;
        let mut store = Store {
            path: path.to_path_buf(),
            conn,
            note: None,
        };
        store.prepare()?;
        Ok(store)
    }

    /// The busy timeout; what the file is and its schema brought up to date
    /// in one immediate transaction, so that processes creating the file at
    /// once wait for each other and migrate it once; then WAL mode.
    fn prepare(&mut self) -> Result<()> {
        let path = self.path.clone();
        let err = |e| sql_error(&path, e);
        self.conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        self.conn
            .pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        let conn = &mut self.conn;
        retried(|| make_schema(conn, &path)).map_err(err)?
    }

    /// Appends `entries` in one transaction; an entry already kept (the same
    /// uid) is left out. Returns how many were added.
    pub fn append(&mut self, entries: &[Entry]) -> Result<usize> {
        let conn = &mut self.conn;
        retried(|| append_once(conn, entries)).map_err(|e| sql_error(&self.path, e))
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
        Store::read(path)?;
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

/// Brings the schema of `conn` from `version` up to [`SCHEMA_VERSION`] and
/// marks the file as a history, in the caller's transaction.
fn migrate(conn: &Connection, version: i32) -> rusqlite::Result<()> {
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        conn.execute_batch(sql)?;
        conn.pragma_update(None, "user_version", step as i32 + 1)?;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)
}

/// [`Store::prepare`]'s transaction and switch to WAL mode; the outer error
/// is SQLite's (retried when busy), the inner one a refusal of the file.
fn make_schema(conn: &mut Connection, path: &Path) -> rusqlite::Result<Result<()>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Refused before a byte is written: dropping `tx` rolls back nothing.
    let version = match kind_of(&tx)? {
        Kind::Foreign => return Ok(Err(foreign(path))),
        Kind::History(version) if version > SCHEMA_VERSION => return Ok(Err(newer(path, version))),
        Kind::History(version) => version,
        Kind::New => 0,
    };
    if version < SCHEMA_VERSION {
        migrate(&tx, version)?;
    }
    tx.commit()?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    Ok(match mode.eq_ignore_ascii_case("wal") {
        true => Ok(()),
        false => Err(Error::runtime(format!(
            "{}: SQLite could not switch it to WAL mode (it stayed in {mode})",
            path.display()
        ))),
    })
}

/// [`Store::append`]'s transaction.
fn append_once(conn: &mut Connection, entries: &[Entry]) -> rusqlite::Result<usize> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut added = 0;
    for entry in entries {
        let inserted = tx.execute(
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
        )?;
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
            )?;
        }
        added += 1;
    }
    tx.commit()?;
    Ok(added)
}

/// Runs `work` again while SQLite answers busy, until [`BUSY_TIMEOUT`]:
/// SQLite answers so at once, without its busy handler, where waiting could
/// deadlock or another writer changed the file under the connection (1
/// writer in about 400 creating one history at once was refused so).
fn retried<T>(mut work: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        match work() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            other => return other,
        }
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// What an SQLite database is to bench.
enum Kind {
    /// Nothing in it yet (no table, no application id, no user version).
    New,
    /// A bench history of this schema version.
    History(i32),
    /// Anything else: another program's.
    Foreign,
}

fn kind_of(conn: &Connection) -> rusqlite::Result<Kind> {
    let read = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [], |row| row.get(0)) };
    let id = read("PRAGMA application_id")?;
    let version = read("PRAGMA user_version")?;
    let tables = read("SELECT count(*) FROM sqlite_master")?;
    let ours = id == i64::from(APPLICATION_ID);
    Ok(match (id, version, tables) {
        (0, 0, 0) => Kind::New,
        // bench marks a file and makes its tables in one transaction:
        // tables without a version are another program's.
        _ if ours && version > 0 => Kind::History(i32::try_from(version).unwrap_or(i32::MAX)),
        _ if ours && tables == 0 => Kind::New,
        _ => Kind::Foreign,
    })
}

fn foreign(path: &Path) -> Error {
    not_a_history(path, "it is an SQLite database of another program")
}

fn newer(path: &Path, version: i32) -> Error {
    Error::usage(format!(
        "{} is a history of schema {version}, newer than this bench's {SCHEMA_VERSION}: use a newer bench",
        path.display()
    ))
}

/// Opens `path` to read: read-only, and where that cannot be done because
/// the WAL's index beside the file cannot be made or written (a read-only
/// mount, a directory of another user), as immutable, which reads the file
/// alone: a WAL left by a writer that did not end is then unseen, and the
/// note returned says so.
fn open_read_only(path: &Path) -> Result<(Connection, Option<String>)> {
    let open = |query: &str| -> rusqlite::Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(uri(path, query), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // The first read is where the WAL's index is opened.
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(conn)
    };
    match open("mode=ro") {
        Ok(conn) => Ok((conn, None)),
        Err(e) if cannot_share(&e) => {
            let wal = PathBuf::from(format!("{}-wal", path.display()));
            let note = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0).then(|| {
                format!(
                    "note: {} is read without {}, which this process cannot share: \
                         entries still in it are not shown",
                    path.display(),
                    wal.display()
                )
            });
            let conn = open("immutable=1").map_err(|e| sql_error(path, e))?;
            Ok((conn, note))
        }
        Err(e) => Err(sql_error(path, e)),
    }
}

/// Whether opening read-only failed for want of writing beside the file.
fn cannot_share(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    )
}

/// `path` as an absolute SQLite URI with `query`, every byte that a URI
/// could read otherwise (`?`, `#`, `%`, a space) percent-encoded.
fn uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut text = String::from("file://");
    for &byte in absolute.as_os_str().as_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'.' | b'-' | b'_' | b'~' => {
                text.push(char::from(byte))
            }
            _ => text.push_str(&format!("%{byte:02X}")),
        }
    }
    format!("{text}?{query}")
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
        _ => Error::runtime(format!("history {}: {}", path.display(), message(&err))),
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

/// SQLite's message alone: never the statement it was given (the schema's
/// SQL, which says nothing to the user).
fn message(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// Whether the regular file `path` holds something, which must then be an
/// SQLite database: an empty file is taken as a new history, anything else
/// is refused without a byte written.
fn sqlite_header(path: &Path) -> Result<bool> {
    let mut header = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(100).read_to_end(&mut header))
        .map_err(|e| Error::usage(format!("cannot read {}: {e}", path.display())))?;
    if header.is_empty() {
        return Ok(false);
    }
    if !header.starts_with(b"SQLite format 3\0") {
        return Err(not_a_history(path, "it is not an SQLite database"));
    }
    Ok(true)
}
