//! The attach family's parts that are not a benchmark: its probe sites, and
//! what the kernel says this process has attached.

pub mod facts;
pub mod run;
pub mod sites;

use std::collections::BTreeMap;

/// The count of this process's BPF links per link type, as
/// `/proc/self/fdinfo` shows them: it says what libbpf chose where libbpf
/// chooses (USDT), and, with nothing attached, that nothing was left behind.
pub fn link_types() -> BTreeMap<String, usize> {
    let mut types = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc/self/fdinfo") else {
        return types;
    };
    for entry in entries.flatten() {
        // An fd closed since the listing has no fdinfo: skip it.
        let Ok(info) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        if let Some(kind) = info
            .lines()
            .find_map(|line| line.strip_prefix("link_type:"))
        {
            *types.entry(kind.trim().to_string()).or_insert(0) += 1;
        }
    }
    types
}
