//! Nothing lost when the store is away: a run whose PostgreSQL history
//! cannot take its entries keeps them in a local spool, one SQLite history
//! a store (named after its URL without the password), and `bench history
//! push` delivers them later in one transaction. Appends are idempotent, so
//! a push run twice, or one that failed half-way, delivers each entry once;
//! the spool is removed once delivered.

use std::path::{Path, PathBuf};

use super::entry::Entry;
use super::postgres::target::Target;
use super::postgres::PgStore;
use super::store::{Open, Store};
use crate::error::{Error, Result};

/// The spool's directory: `$BENCH_SPOOL`, else
/// `$XDG_STATE_HOME/bench/spool`, else `~/.local/state/bench/spool`.
pub fn directory() -> Result<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = env("BENCH_SPOOL") {
        return Ok(PathBuf::from(dir));
    }
    env("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".local/state")))
        .map(|state| state.join("bench/spool"))
        .ok_or_else(|| {
            Error::runtime(
                "no spool directory: set BENCH_SPOOL (neither XDG_STATE_HOME nor HOME is set)",
            )
        })
}

/// The spool of `target`: `postgresql___user_host_port_db.sqlite`.
pub fn path_of(target: &Target) -> Result<PathBuf> {
    let name: String = target
        .shown
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    Ok(directory()?.join(format!("{name}.sqlite")))
}

/// Keeps `entries` in `target`'s spool; returns its path.
pub fn keep(target: &Target, entries: &[Entry]) -> Result<PathBuf> {
    let path = path_of(target)?;
    Store::open(&path, Open::Create)?.append(entries)?;
    Ok(path)
}

/// What a push did.
pub struct Pushed {
    pub spool: PathBuf,
    /// Entries in the spool, and how many of them were new to the store.
    pub offered: usize,
    pub added: usize,
}

/// Delivers `target`'s spool (none: `None`) in one transaction, then
/// removes it.
pub fn push(target: &Target) -> Result<Option<Pushed>> {
    let spool = path_of(target)?;
    if !spool.is_file() {
        return Ok(None);
    }
    let entries = Store::open(&spool, Open::Existing)?.entries(&[])?;
    let added = PgStore::open(target)?.append(&entries)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut file = spool.clone().into_os_string();
        file.push(suffix);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::runtime(format!(
                    "delivered {}, but cannot remove it: {e}",
                    spool.display()
                )))
            }
        }
    }
    Ok(Some(Pushed {
        spool,
        offered: entries.len(),
        added,
    }))
}
