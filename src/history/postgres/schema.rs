//! The PostgreSQL history's tables: a schema version table and its forward
//! migrations, and what a database holds before bench touches it (nothing,
//! a history of some version, or other tables of the same names, which are
//! left as they are).

/// The schema this bench writes; each step of [`MIGRATIONS`] brings a store
/// one version up (`bench history init` from nothing, `migrate` from an
/// older one).
pub const SCHEMA_VERSION: i32 = 1;

/// The statements from version i to i + 1, at index i. An entry's `uid` is
/// its identity (`Entry::content_uid`), unique: appends from many machines
/// at once keep one row an entry. `value` is a figure's mean, for readers
/// such as Otava that take one number a row.
pub const MIGRATIONS: &[&str] = &["
CREATE TABLE bench_schema (
    version integer NOT NULL,
    bench_version text NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE bench_entries (
    id bigserial PRIMARY KEY,
    uid text NOT NULL UNIQUE,
    benchmark text NOT NULL,
    time bigint NOT NULL,
    kernel_release text NOT NULL,
    kernel_version text NOT NULL,
    machine_name text NOT NULL,
    cpu_model text NOT NULL,
    cpus bigint NOT NULL,
    virtualised text NOT NULL,
    bench_version text NOT NULL,
    bench_commit text NOT NULL,
    options text NOT NULL,
    labels text NOT NULL,
    source text NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bench_entries_by_machine ON bench_entries (benchmark, machine_name, cpu_model, time);
CREATE INDEX bench_entries_by_kernel ON bench_entries (benchmark, kernel_release, time);
CREATE INDEX bench_entries_by_time ON bench_entries (time, id);
CREATE TABLE bench_figures (
    entry bigint NOT NULL REFERENCES bench_entries (id) ON DELETE CASCADE,
    position integer NOT NULL,
    name text NOT NULL,
    unit text NOT NULL,
    better text NOT NULL CHECK (better IN ('higher', 'lower')),
    run_values text NOT NULL,
    value double precision,
    low double precision,
    high double precision,
    PRIMARY KEY (entry, name)
);
CREATE INDEX bench_figures_by_name ON bench_figures (name, entry);
"];

/// The tables of a history and the columns each has had since version 1.
pub const TABLES: &[(&str, &[&str])] = &[
    ("bench_schema", &["version", "bench_version"]),
    (
        "bench_entries",
        &[
            "id",
            "uid",
            "benchmark",
            "time",
            "kernel_release",
            "kernel_version",
            "machine_name",
            "cpu_model",
            "cpus",
            "virtualised",
            "bench_version",
            "bench_commit",
            "options",
            "labels",
            "source",
        ],
    ),
    (
        "bench_figures",
        &[
            "entry",
            "position",
            "name",
            "unit",
            "better",
            "run_values",
            "value",
            "low",
            "high",
        ],
    ),
];

/// Lists the columns of the history's tables in the current schema, as
/// `(table, column)` rows.
pub const COLUMNS_QUERY: &str = "SELECT table_name::text, column_name::text
    FROM information_schema.columns
    WHERE table_schema = current_schema()
      AND table_name IN ('bench_schema', 'bench_entries', 'bench_figures')";

/// Makes `init` and `migrate` from two machines at once run one after the
/// other (a transaction-scoped advisory lock: "bnch").
pub const MIGRATION_LOCK: &str = "SELECT pg_advisory_xact_lock(1651401576)";

/// What a database holds where a history's tables go.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// None of the tables.
    Nothing,
    /// The tables, each with its columns.
    History,
    /// Tables of the names (named), without a history's columns.
    Foreign(String),
}

/// Judges the `(table, column)` rows of [`COLUMNS_QUERY`].
pub fn judge(columns: &[(String, String)]) -> Found {
    if columns.is_empty() {
        return Found::Nothing;
    }
    let complete = TABLES.iter().all(|(table, wanted)| {
        wanted
            .iter()
            .all(|column| columns.iter().any(|(t, c)| t == table && c == column))
    });
    if complete {
        return Found::History;
    }
    let present: Vec<&str> = TABLES
        .iter()
        .map(|(table, _)| *table)
        .filter(|table| columns.iter().any(|(t, _)| t == table))
        .collect();
    Found::Foreign(present.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(tables: &[(&str, &[&str])]) -> Vec<(String, String)> {
        tables
            .iter()
            .flat_map(|(t, cs)| cs.iter().map(move |c| (t.to_string(), c.to_string())))
            .collect()
    }

    #[test]
    fn tables_of_the_same_names_are_told_apart() {
        assert_eq!(judge(&[]), Found::Nothing);
        assert_eq!(judge(&rows(TABLES)), Found::History);
        let mut newer = rows(TABLES);
        newer.push(("bench_entries".into(), "machine_id".into()));
        assert_eq!(judge(&newer), Found::History);
        let foreign = rows(&[("bench_entries", &["id", "name"])]);
        assert_eq!(judge(&foreign), Found::Foreign("bench_entries".into()));
    }

    #[test]
    fn every_version_has_its_migration() {
        assert_eq!(MIGRATIONS.len(), SCHEMA_VERSION as usize);
    }
}
