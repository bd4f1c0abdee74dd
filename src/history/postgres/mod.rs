//! The fleet's history: PostgreSQL, many writers at once. The same entries
//! as the SQLite file's, keyed by the same identity (`Entry::uid`, unique);
//! an append is one transaction whose entries already kept are left out
//! (`ON CONFLICT DO NOTHING`), so appends are idempotent and two machines
//! appending at once each land whole. The tables carry a schema version;
//! `init` creates them and `migrate` brings an older store up, both as the
//! database's owner; a role that may only insert and select appends and
//! reads.

pub mod schema;
pub mod session;
pub mod target;
pub mod tls;

use std::collections::BTreeMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::entry::{Entry, FigureValues, KernelId, MachineId, ToolId};
use super::store::better_name;
use crate::error::{Error, Result};
use crate::stats::Better;
use schema::{Found, SCHEMA_VERSION};
use session::Session;
use target::Target;

/// An open PostgreSQL history.
pub struct PgStore {
    session: Session,
}

const INSERT_ENTRY: &str = "INSERT INTO bench_entries (uid, benchmark, time, kernel_release,
        kernel_version, machine_name, cpu_model, cpus, virtualised, bench_version,
        bench_commit, options, labels, source)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
    ON CONFLICT (uid) DO NOTHING RETURNING id";

const INSERT_FIGURE: &str = "INSERT INTO bench_figures (entry, position, name, unit,
        better, run_values, value, low, high)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

const SELECT_ENTRIES: &str = "SELECT id, uid, benchmark, time, kernel_release, kernel_version,
        machine_name, cpu_model, cpus, virtualised, bench_version, bench_commit, options,
        labels, source
    FROM bench_entries
    WHERE cardinality($1::text[]) = 0 OR benchmark = ANY($1)
    ORDER BY time, id";

const SELECT_FIGURES: &str = "SELECT f.entry, f.name, f.unit, f.better, f.run_values, f.low, f.high
    FROM bench_figures f JOIN bench_entries e ON e.id = f.entry
    WHERE cardinality($1::text[]) = 0 OR e.benchmark = ANY($1)
    ORDER BY f.entry, f.position";

impl PgStore {
    /// Connects and checks that the database holds a history of this
    /// bench's schema.
    pub fn open(target: &Target) -> Result<PgStore> {
        let store = PgStore {
            session: Session::connect(target)?,
        };
        match store.found()? {
            Found::History => {}
            Found::Nothing => {
                return Err(Error::usage(format!(
                    "{} holds no bench history yet: `bench history init --history URL` creates it (as the database's owner)",
                    target.shown
                )))
            }
            Found::Foreign(table) => return Err(foreign(target, &table)),
        }
        let version = store.version()?;
        if version != SCHEMA_VERSION {
            return Err(version_error(target, version));
        }
        Ok(store)
    }

    pub fn shown(&self) -> &str {
        &self.session.target.shown
    }

    fn found(&self) -> Result<Found> {
        let rows = self.session.call("read the tables", |client| async move {
            client.query(schema::COLUMNS_QUERY, &[]).await
        })?;
        let columns: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        Ok(schema::judge(&columns))
    }

    fn version(&self) -> Result<i32> {
        let row = self
            .session
            .call("read the schema version", |client| async move {
                client
                    .query_one("SELECT coalesce(max(version), 0) FROM bench_schema", &[])
                    .await
            })?;
        Ok(row.get(0))
    }

    /// Appends `entries` in one transaction; an entry already kept (the
    /// same uid) is left out. Returns how many were added.
    pub fn append(&mut self, entries: &[Entry]) -> Result<usize> {
        self.session.call_mut("add entries", |client| async move {
            let tx = client.transaction().await?;
            let entry_insert = tx.prepare(INSERT_ENTRY).await?;
            let figure_insert = tx.prepare(INSERT_FIGURE).await?;
            let mut added = 0;
            for entry in entries {
                let uid = match entry.uid.is_empty() {
                    true => entry.content_uid(),
                    false => entry.uid.clone(),
                };
                let options = to_json(&entry.options);
                let labels = to_json(&entry.labels);
                let cpus = i64::from(entry.machine.cpus);
                let params: [&(dyn ToSql + Sync); 14] = [
                    &uid,
                    &entry.benchmark,
                    &entry.time,
                    &entry.kernel.release,
                    &entry.kernel.version,
                    &entry.machine.name,
                    &entry.machine.cpu_model,
                    &cpus,
                    &entry.machine.virtualised,
                    &entry.tool.version,
                    &entry.tool.commit,
                    &options,
                    &labels,
                    &entry.source,
                ];
                let inserted = tx.query_opt(&entry_insert, &params).await?;
                let Some(row) = inserted else { continue };
                let id: i64 = row.get(0);
                for (position, figure) in (0i32..).zip(&entry.figures) {
                    let values = serde_json::to_string(&figure.values).unwrap_or_default();
                    let value = figure.point().map(|p| p.value);
                    let better = better_name(figure.better);
                    let params: [&(dyn ToSql + Sync); 9] = [
                        &id,
                        &position,
                        &figure.name,
                        &figure.unit,
                        &better,
                        &values,
                        &value,
                        &figure.low,
                        &figure.high,
                    ];
                    tx.execute(&figure_insert, &params).await?;
                }
                added += 1;
            }
            tx.commit().await?;
            Ok(added)
        })
    }

    /// Every entry (of `benchmarks`, when some are named), in time order
    /// (the order of adding among entries of the same second).
    pub fn entries(&self, benchmarks: &[String]) -> Result<Vec<Entry>> {
        let names: Vec<&str> = benchmarks.iter().map(String::as_str).collect();
        let (rows, figure_rows) = self.session.call("read entries", |client| async move {
            let rows = client.query(SELECT_ENTRIES, &[&names]).await?;
            let figures = client.query(SELECT_FIGURES, &[&names]).await?;
            Ok((rows, figures))
        })?;
        let mut figures: BTreeMap<i64, Vec<FigureValues>> = BTreeMap::new();
        for row in &figure_rows {
            figures.entry(row.get(0)).or_default().push(figure_of(row));
        }
        Ok(rows
            .iter()
            .map(|row| {
                entry_of(
                    row,
                    figures.remove(&row.get::<_, i64>(0)).unwrap_or_default(),
                )
            })
            .collect())
    }
}

fn entry_of(row: &Row, figures: Vec<FigureValues>) -> Entry {
    Entry {
        uid: row.get(1),
        benchmark: row.get(2),
        time: row.get(3),
        kernel: KernelId {
            release: row.get(4),
            version: row.get(5),
        },
        machine: MachineId {
            name: row.get(6),
            cpu_model: row.get(7),
            cpus: u32::try_from(row.get::<_, i64>(8)).unwrap_or(0),
            virtualised: row.get(9),
        },
        tool: ToolId {
            version: row.get(10),
            commit: row.get(11),
        },
        options: from_json(row.get(12)),
        labels: from_json(row.get(13)),
        source: row.get(14),
        figures,
    }
}

fn figure_of(row: &Row) -> FigureValues {
    let better: &str = row.get(3);
    FigureValues {
        name: row.get(1),
        unit: row.get(2),
        better: if better == "lower" {
            Better::Lower
        } else {
            Better::Higher
        },
        values: serde_json::from_str(row.get(4)).unwrap_or_default(),
        low: row.get(5),
        high: row.get(6),
    }
}

fn to_json(map: &BTreeMap<String, String>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

fn from_json(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn foreign(target: &Target, tables: &str) -> Error {
    Error::usage(format!(
        "{} is not a bench history: it holds other tables of a history's names ({tables}); they were left as they were",
        target.shown
    ))
}

fn version_error(target: &Target, version: i32) -> Error {
    match version > SCHEMA_VERSION {
        true => Error::usage(format!(
            "{} is a history of schema {version}, newer than this bench's {SCHEMA_VERSION}: use a newer bench",
            target.shown
        )),
        false => Error::usage(format!(
            "{} is a history of schema {version}, older than this bench's {SCHEMA_VERSION}: `bench history migrate --history URL` brings it up (as the database's owner)",
            target.shown
        )),
    }
}

/// `bench history init` (`create`) or `migrate`: the tables created or
/// brought to this bench's schema, in one transaction under an advisory
/// lock; says what was done.
pub fn upgrade(target: &Target, create: bool) -> Result<String> {
    let mut session = Session::connect(target)?;
    let bench_version = env!("CARGO_PKG_VERSION");
    let doing = match create {
        true => "create the history's tables (`init` needs the database's owner)",
        false => "migrate the history's tables (`migrate` needs the database's owner)",
    };
    let (found, from) = session.call_mut(doing, |client| async move {
        let tx = client.transaction().await?;
        tx.batch_execute(schema::MIGRATION_LOCK).await?;
        let rows = tx.query(schema::COLUMNS_QUERY, &[]).await?;
        let columns: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let found = schema::judge(&columns);
        let from: i32 = match found {
            Found::History => tx
                .query_one("SELECT coalesce(max(version), 0) FROM bench_schema", &[])
                .await?
                .get(0),
            _ => 0,
        };
        let wanted = match (&found, create) {
            (Found::Nothing, true) | (Found::History, false) => from < SCHEMA_VERSION,
            _ => false,
        };
        if wanted {
            for (step, sql) in schema::MIGRATIONS.iter().enumerate().skip(from as usize) {
                tx.batch_execute(sql).await?;
                let version = step as i32 + 1;
                let params: [&(dyn ToSql + Sync); 2] = [&version, &bench_version];
                tx.execute(
                    "INSERT INTO bench_schema (version, bench_version) VALUES ($1, $2)",
                    &params,
                )
                .await?;
            }
        }
        tx.commit().await?;
        Ok((found, from))
    })?;
    upgraded(target, create, found, from)
}

/// What `init` or `migrate` did, or why it did nothing.
fn upgraded(target: &Target, create: bool, found: Found, from: i32) -> Result<String> {
    let shown = &target.shown;
    match (found, create) {
        (Found::Foreign(table), _) => Err(foreign(target, &table)),
        (Found::Nothing, true) => Ok(format!(
            "created the history {shown} (schema {SCHEMA_VERSION})"
        )),
        (Found::Nothing, false) => Err(Error::usage(format!(
            "{shown} holds no bench history to migrate: `bench history init` creates one"
        ))),
        (Found::History, _) if from > SCHEMA_VERSION => Err(version_error(target, from)),
        (Found::History, _) if from == SCHEMA_VERSION => Ok(format!(
            "{shown} is a history of schema {SCHEMA_VERSION}, this bench's: nothing to do"
        )),
        (Found::History, true) => Err(version_error(target, from)),
        (Found::History, false) => Ok(format!(
            "migrated the history {shown} from schema {from} to {SCHEMA_VERSION}"
        )),
    }
}
