//! Which configurations of two sides are held against each other, and what
//! makes two of them not comparable.

use std::path::Path;

use super::entry::Entry;
use crate::error::{Error, Result};
use crate::report::compare::Side;

/// A pair's row label: the benchmark (both, when they differ), and the
/// files when a side has two of one benchmark.
pub(super) fn pair_label(old: &[Entry], new: &[Entry], o: &Entry, n: &Entry) -> String {
    let label = if o.benchmark == n.benchmark {
        o.label()
    } else {
        format!("{} vs {}", o.label(), n.label())
    };
    // Two files of one benchmark on a side: say which row is which.
    let repeated =
        |side: &[Entry], e: &Entry| side.iter().filter(|x| x.key() == e.key()).count() > 1;
    if repeated(old, o) || repeated(new, n) {
        return format!("{label} ({} vs {})", o.file_name(), n.file_name());
    }
    label
}

/// Which side of a pair was interrupted, if any.
pub(super) fn partial_side(o: &Entry, n: &Entry) -> Option<Side> {
    match (o.partial, n.partial) {
        (true, true) => Some(Side::Both),
        (true, false) => Some(Side::Old),
        (false, true) => Some(Side::New),
        (false, false) => None,
    }
}

/// The pairs to compare, and the configurations found on one side only
/// (with the side that lacks them).
pub(super) struct Pairing<'a> {
    pub(super) pairs: Vec<(&'a Entry, &'a Entry)>,
    pub(super) missing: Vec<(String, Side)>,
}

/// Matches old and new entries by benchmark (and swept value), refusing what
/// should not be compared unless `--force`. Where a side holds one benchmark
/// more than once, the i-th of each side are paired.
pub(super) fn pair_up<'a>(
    old: &'a [Entry],
    new: &'a [Entry],
    (old_path, new_path): (&Path, &Path),
    force: bool,
) -> Result<Pairing<'a>> {
    let single_files = !old_path.is_dir() && !new_path.is_dir();
    let names = |side: &[Entry]| {
        let mut names: Vec<String> = side.iter().map(|e| e.benchmark.clone()).collect();
        names.dedup();
        names
    };
    let (old_names, new_names) = (names(old), names(new));
    let mut pairs = Vec::new();
    let mut missing = Vec::new();
    // Files one interleaved invocation wrote hold different benchmarks by design.
    let invocation = old.first().and_then(|e| e.interleaved.as_ref());
    let one_invocation = invocation.is_some()
        && old
            .iter()
            .chain(new)
            .all(|e| e.interleaved.as_ref() == invocation);
    if single_files && old_names != new_names {
        if !force && !one_invocation {
            return Err(Error::usage(format!(
                "{} holds {} but {} holds {}: different benchmarks (--force compares them anyway)",
                old_path.display(),
                old_names.join(", "),
                new_path.display(),
                new_names.join(", ")
            )));
        }
        pairs.extend(old.iter().zip(new.iter()));
    } else {
        for (side, lacking) in [(old, Side::New), (new, Side::Old)] {
            let other = if lacking == Side::New { new } else { old };
            let mut seen = Vec::new();
            for e in side
                .iter()
                .filter(|e| !other.iter().any(|o| o.key() == e.key()))
            {
                if !seen.contains(&e.key()) {
                    seen.push(e.key());
                    missing.push((e.label(), lacking));
                }
            }
        }
        let mut keys: Vec<_> = old.iter().map(Entry::key).collect();
        keys.dedup();
        for key in keys {
            let olds: Vec<&Entry> = old.iter().filter(|e| e.key() == key).collect();
            let news: Vec<&Entry> = new.iter().filter(|e| e.key() == key).collect();
            if news.is_empty() {
                continue;
            }
            for i in 0..olds.len().max(news.len()) {
                pairs.push((olds[i.min(olds.len() - 1)], news[i.min(news.len() - 1)]));
            }
        }
        if pairs.is_empty() {
            return Err(no_configuration_in_common(old, new, old_path, new_path));
        }
    }
    if !force {
        same_options(&pairs)?;
    }
    Ok(Pairing { pairs, missing })
}

/// Refuses pairs whose runs had different option sets.
fn same_options(pairs: &[(&Entry, &Entry)]) -> Result<()> {
    // A side with no run has no options to hold against the other.
    let with_runs = pairs
        .iter()
        .filter(|(o, n)| !o.runs.is_empty() && !n.runs.is_empty());
    for (o, n) in with_runs {
        let mut names = o.option_set.keys().chain(n.option_set.keys());
        if let Some(name) = names.find(|k| o.option_set.get(*k) != n.option_set.get(*k)) {
            let old_value = o.option_set.get(name).map_or("(none)", String::as_str);
            let new_value = n.option_set.get(name).map_or("(none)", String::as_str);
            return Err(Error::usage(format!(
                "{}: {} ran with {name}={old_value} but {} with {name}={new_value}: different option sets (--force compares them anyway)",
                o.label(),
                o.file.display(),
                n.file.display()
            )));
        }
    }
    Ok(())
}

/// Why two sides share no configuration: different benchmarks, or one
/// benchmark swept on one side (or over other values) and not on the other.
fn no_configuration_in_common(
    old: &[Entry],
    new: &[Entry],
    old_path: &Path,
    new_path: &Path,
) -> Error {
    let shared = old
        .iter()
        .any(|o| new.iter().any(|n| n.benchmark == o.benchmark));
    if !shared {
        return Error::usage(format!(
            "{} and {} have no benchmark in common",
            old_path.display(),
            new_path.display()
        ));
    }
    let configurations = |side: &[Entry]| {
        let mut labels: Vec<String> = side.iter().map(Entry::label).collect();
        labels.dedup();
        labels.join(", ")
    };
    Error::usage(format!(
        "{} holds {} but {} holds {}: the same benchmark, but no configuration in common \
         (a sweep is compared with a sweep over the same values)",
        old_path.display(),
        configurations(old),
        new_path.display(),
        configurations(new)
    ))
}
