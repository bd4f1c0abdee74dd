//! What a set-up will allocate, estimated before it allocates it: a map of
//! millions of entries in the kernel, or their keys in bench. A set-up that
//! would take more than half the memory available is refused with one
//! sentence (exit 2): past that, the kernel finds out by killing processes
//! or bench by aborting, not by a failed call. The sizes of the kernel's
//! maps are those its `fdinfo` reports (`memlock`) on Linux 6.18.

use crate::error::{Error, Result};

/// A kernel hash map element's header (`struct htab_elem`), before its key
/// and value (each rounded up to 8 bytes).
const HTAB_ELEM_BYTES: u64 = 48;
/// A hash map bucket; a map has a power of two of them, at least its
/// max_entries.
const HTAB_BUCKET_BYTES: u64 = 16;

/// `n` rounded up to 8.
const fn round8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

/// A kernel hash map of `max_entries` whose `elements` are allocated (all
/// of them when preallocated), keys of `key_size` and values of
/// `value_size` bytes.
pub fn hash_map_bytes(max_entries: u64, elements: u64, key_size: u64, value_size: u64) -> u64 {
    let element = HTAB_ELEM_BYTES + round8(key_size) + round8(value_size);
    let buckets = max_entries.max(1).next_power_of_two();
    elements.saturating_mul(element) + buckets.saturating_mul(HTAB_BUCKET_BYTES)
}

/// A kernel array of `max_entries` values of `value_size` bytes.
pub fn array_bytes(max_entries: u64, value_size: u64) -> u64 {
    max_entries.saturating_mul(round8(value_size))
}

/// A kernel bloom filter of `max_entries` and `hashes` hash functions: a
/// bit array of a power of two bits, 7/5 of a bit per entry and hash (the
/// kernel's 1/ln 2), 2^32 bits at most.
pub fn bloom_filter_bytes(max_entries: u64, hashes: u64) -> u64 {
    let bits = (max_entries.saturating_mul(hashes) / 5)
        .saturating_mul(7)
        .max(64);
    let bits = match bits > 1 << 31 {
        true => 1 << 32,
        false => bits.next_power_of_two(),
    };
    bits / 8
}

/// MemAvailable of /proc/meminfo, in bytes.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What a set-up would allocate: `bytes` for `given` (the options,
/// "--nr_entries 4294967295") as `what` ("the trie's keys and nodes");
/// `smaller` names the option to lower.
pub struct Need<'a> {
    pub given: &'a str,
    pub what: &'a str,
    pub bytes: u64,
    pub smaller: &'a str,
}

/// Refuses what `bench` would allocate when it is more than half the
/// memory available now; no refusal where the memory cannot be read.
pub fn check(bench: &str, need: Need<'_>) -> Result<()> {
    check_against(bench, need, available())
}

/// Tasks a set-up or a batch would start: `count` of them for `given`,
/// which `starts` says ("starts 1000 threads at once"), each taking
/// `bytes_each` as `each` says; `smaller` names the option to lower.
pub struct Tasks<'a> {
    pub given: &'a str,
    pub count: u64,
    pub starts: &'a str,
    pub bytes_each: u64,
    pub each: &'a str,
    pub smaller: &'a str,
}

/// Refuses more tasks than the kernel lets bench start now (pid_max,
/// threads-max, its pids cgroup), or than half the memory holds.
pub fn check_tasks(bench: &str, tasks: Tasks<'_>) -> Result<()> {
    if let Some((room, why)) = crate::kernel::task_room() {
        if tasks.count > room {
            return Err(Error::usage(format!(
                "{bench} with {} {}, more than the {room} more tasks the kernel allows now \
                 ({why}): give a smaller {}",
                tasks.given, tasks.starts, tasks.smaller
            )));
        }
    }
    let need = Need {
        given: tasks.given,
        what: tasks.each,
        bytes: tasks.count.saturating_mul(tasks.bytes_each),
        smaller: tasks.smaller,
    };
    check(bench, need)
}

fn check_against(bench: &str, need: Need<'_>, available: Option<u64>) -> Result<()> {
    let Need {
        given,
        what,
        bytes: needed,
        smaller,
    } = need;
    match available {
        Some(available) if needed > available / 2 => Err(Error::usage(format!(
            "{bench} with {given} would allocate about {} MiB ({what}), more than half of \
             the {} MiB of memory available: give a smaller {smaller}",
            needed.div_ceil(1 << 20),
            available >> 20
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sizes the kernel's fdinfo gave for maps of a million entries
    /// (Linux 6.18).
    #[test]
    fn the_estimates_are_the_kernels_memlock() {
        // Within a thousandth: the map's own struct and a spare element
        // per CPU are left out.
        let near = |estimate: u64, memlock: u64| {
            assert!(
                estimate.abs_diff(memlock) * 1000 < memlock,
                "{estimate} for {memlock}"
            );
        };
        near(hash_map_bytes(1_000_000, 1_000_000, 4, 8), 80_778_256);
        near(hash_map_bytes(1_000_000, 1_000_000, 8, 8), 80_778_256);
        near(hash_map_bytes(1_000_000, 1_000_000, 256, 256), 576_779_248);
        near(hash_map_bytes(1_000_000, 1_000_000, 1024, 8), 1_096_780_288);
        near(array_bytes(1_000_000, 8), 8_000_312);
        near(bloom_filter_bytes(1_000_000, 3), 1_048_888);
        // Past 2^31 bits, the kernel's largest: 2^32 bits.
        assert_eq!(bloom_filter_bytes(u32::MAX as u64, 15), 1 << 29);
    }

    #[test]
    fn more_than_half_the_memory_is_refused_in_one_sentence() {
        let gib = 1u64 << 30;
        let need = |bytes| Need {
            given: "--n 9",
            what: "its maps",
            bytes,
            smaller: "--n",
        };
        assert!(check_against("b", need(gib), Some(2 * gib)).is_ok());
        assert!(check_against("b", need(4 * gib), None).is_ok());
        let err = check_against("b", need(gib + 1), Some(2 * gib));
        let err = err.err().map(|e| (e.exit_code(), e.to_string()));
        assert_eq!(
            err,
            Some((
                2,
                "b with --n 9 would allocate about 1025 MiB (its maps), more than half of the \
                 2048 MiB of memory available: give a smaller --n"
                    .to_string()
            ))
        );
    }
}
