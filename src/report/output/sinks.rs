//! Two outputs that would write one file, found before a run.

use std::collections::HashMap;
use std::fs;
use std::os::fd::RawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::fifo::is_fifo;
use super::path::{destination, in_proc, Destination};
use crate::config::OutputTarget;
use crate::error::{Error, Result};

/// What an output ends up writing into, to find two outputs on one file.
#[derive(PartialEq, Eq, Hash)]
pub(super) enum Sink {
    Descriptor(RawFd),
    Inode(u64, u64),
    Name(PathBuf),
}

/// Where `target` writes: its descriptor, or the file its links lead to (by
/// inode when it exists, by name in any case). A device has none: writing
/// one twice (/dev/null) loses nothing.
pub(super) fn sinks(target: &OutputTarget) -> Vec<Sink> {
    let path = match target {
        OutputTarget::Stdout => return vec![Sink::Descriptor(1)],
        OutputTarget::File(path) => path,
    };
    let end = match destination(path) {
        Ok(Destination::Descriptor(fd)) => return vec![Sink::Descriptor(fd)],
        Ok(Destination::Stream(end)) if !is_fifo(&end) && !in_proc(&end) => return Vec::new(),
        Ok(Destination::Stream(end) | Destination::Regular(end)) => end,
        // A directory (`--json DIR --csv DIR` write NAME.json and NAME.csv
        // in it), or a path the writability check refuses.
        Err(_) => return Vec::new(),
    };
    let mut sinks: Vec<Sink> = fs::metadata(&end)
        .map(|m| Sink::Inode(m.dev(), m.ino()))
        .into_iter()
        .collect();
    sinks.push(Sink::Name(end));
    sinks
}

fn shown(target: &OutputTarget) -> String {
    match target {
        OutputTarget::Stdout => "standard output".to_string(),
        OutputTarget::File(path) => path.display().to_string(),
    }
}

/// Refuses two of `outputs` (each with the option that asked for it) that
/// write one file: one name spelt two ways or reached through a symlink,
/// even before the file exists; one descriptor (`-`, `/dev/stdout`,
/// `/dev/fd/1`); one FIFO.
pub fn check_distinct(outputs: &[(String, OutputTarget)]) -> Result<()> {
    let mut seen: HashMap<Sink, usize> = HashMap::new();
    for (i, (flag, target)) in outputs.iter().enumerate() {
        for sink in sinks(target) {
            match seen.get(&sink) {
                Some(&first) if first != i => {
                    return Err(Error::usage(format!(
                        "{} and {flag} both name {}: give each its own file",
                        outputs[first].0,
                        shown(target)
                    )))
                }
                _ => drop(seen.insert(sink, i)),
            }
        }
    }
    Ok(())
}
