//! The history behind one interface: where it is (a SQLite file, or a
//! PostgreSQL database named by a `postgresql://` URL) and what every
//! command asks of it (append entries, read them back), so that `show`,
//! `changes`, `report`, `merge` and `export` behave the same on either.

use std::path::{Path, PathBuf};

use super::entry::Entry;
use super::postgres::target::{self, Target};
use super::postgres::PgStore;
use super::store::{Open, Store};
use crate::error::Result;

/// Where a history is.
#[derive(Clone, Debug)]
pub enum Location {
    File(PathBuf),
    Postgres(Box<Target>),
}

impl Location {
    /// A `--history` value or `BENCH_HISTORY`: a `postgresql://` (or
    /// `postgres://`) URL, else a file; a URL of another scheme is refused.
    pub fn of(path: &Path) -> Result<Location> {
        match path.to_str() {
            Some(text) if target::is_url(text)? => {
                Ok(Location::Postgres(Box::new(Target::parse(text)?)))
            }
            _ => Ok(Location::File(path.to_path_buf())),
        }
    }

    /// How it is named in messages and pages: a file's path, a URL without
    /// its password.
    pub fn shown(&self) -> PathBuf {
        match self {
            Location::File(path) => path.clone(),
            Location::Postgres(target) => PathBuf::from(&target.shown),
        }
    }
}

/// What the commands ask of a history.
pub trait HistoryStore {
    /// Appends `entries` at once (all or none); an entry already kept (the
    /// same identity) is left out. Returns how many were added.
    fn append(&mut self, entries: &[Entry]) -> Result<usize>;
    /// Every entry (of `benchmarks`, when some are named), in time order.
    fn entries(&self, benchmarks: &[String]) -> Result<Vec<Entry>>;
    /// How it was opened, when the reader should know (a file read as
    /// immutable, its WAL unseen).
    fn note(&self) -> Option<&str> {
        None
    }
}

impl HistoryStore for Store {
    fn append(&mut self, entries: &[Entry]) -> Result<usize> {
        Store::append(self, entries)
    }
    fn entries(&self, benchmarks: &[String]) -> Result<Vec<Entry>> {
        Store::entries(self, benchmarks)
    }
    fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

impl HistoryStore for PgStore {
    fn append(&mut self, entries: &[Entry]) -> Result<usize> {
        PgStore::append(self, entries)
    }
    fn entries(&self, benchmarks: &[String]) -> Result<Vec<Entry>> {
        PgStore::entries(self, benchmarks)
    }
}

/// Opens the history at `location`. A file is made when `how` is
/// [`Open::Create`]; a PostgreSQL history's tables are made by
/// `bench history init` alone.
pub fn open(location: &Location, how: Open) -> Result<Box<dyn HistoryStore>> {
    Ok(match location {
        Location::File(path) => Box::new(Store::open(path, how)?),
        Location::Postgres(target) => Box::new(PgStore::open(target)?),
    })
}
