//! The host's integration tests, one binary (one link of the static
//! library, not one per file): each module is one area of the tool, run for
//! real as root. Tests that load BPF or time a run hold the probe lock
//! (`common::probe_lock`), which spans processes; the rest run beside them.
//! The VM tests are their own binary (`tests/vm.rs`): the test command runs
//! them beside these.

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod attach;
mod baseline_code;
mod bloom;
mod bodies;
mod calibrate;
mod cli;
mod cli_props;
mod compare_reports;
mod crypto;
mod docs;
mod hashmap;
mod helpers;
mod history;
mod history_files;
mod history_page;
mod history_pg;
mod htab_mem;
mod latency;
mod limits;
mod local_storage;
mod local_storage_create;
mod lpm;
mod output_safety;
mod outputs;
mod parity;
mod perf_family;
mod pg_cluster;
mod phases;
mod profile;
mod red_zone;
mod rename;
mod results;
mod ringbuf;
mod robustness;
mod runs;
mod scripts;
mod soak;
mod sockmap;
mod static_link;
mod tasks_trace;
mod timing;
mod trigger;
mod uprobe;
mod usage;
