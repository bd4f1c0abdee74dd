//! Which trigger ran a benchmark's BPF body: the kernel runner's (a program
//! on the getpgid system call, producers calling getpgid), or, where this
//! kernel refuses that program, the fallback: the same body in a raw_tp
//! program run with BPF_PROG_TEST_RUN. A run says it in its header line,
//! `--probe` in its verdict and the result file as `trigger`.

use serde::{Deserialize, Serialize};

/// The trigger a body ran from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerPath {
    /// fentry on the getpgid syscall: upstream's, for the loop helpers.
    FentryGetpgid,
    /// The syscalls:sys_enter_getpgid tracepoint: upstream's, for strncmp.
    TpGetpgid,
    /// A raw_tp program run by BPF_PROG_TEST_RUN: the fallback (`refused`
    /// says which of upstream's triggers the kernel refused), or the trigger
    /// of a benchmark that measures that trigger alone.
    RawtpTestRun,
    /// local-storage-create's socket storage: a sleepable LSM program on
    /// socket_post_create (upstream's).
    LsmSocketPostCreate,
    /// Its fallback where the kernel refuses LSM programs: a cgroup/
    /// sock_create program on bench's own cgroup, which creates the same
    /// storage for the same sockets.
    CgroupSockCreate,
    /// local-storage-create's task storage: a tp_btf program on
    /// sched_process_fork (upstream's).
    TpBtfSchedProcessFork,
    /// bpf-nop's timed loop, in a syscall program run by
    /// BPF_PROG_TEST_RUN: may_goto's (upstream's).
    SyscallMayGoto,
    /// Its fallback where the kernel lacks may_goto: bpf_loop() calls of
    /// an empty callback.
    SyscallBpfLoop,
}

impl TriggerPath {
    /// The word in the result file.
    pub fn name(self) -> &'static str {
        match self {
            TriggerPath::FentryGetpgid => "fentry-getpgid",
            TriggerPath::TpGetpgid => "tp-getpgid",
            TriggerPath::RawtpTestRun => "rawtp-test-run",
            TriggerPath::LsmSocketPostCreate => "lsm-socket-post-create",
            TriggerPath::CgroupSockCreate => "cgroup-sock-create",
            TriggerPath::TpBtfSchedProcessFork => "tp-btf-sched-process-fork",
            TriggerPath::SyscallMayGoto => "syscall-may-goto",
            TriggerPath::SyscallBpfLoop => "syscall-bpf-loop",
        }
    }

    /// What it is, in a few words.
    pub fn words(self) -> &'static str {
        match self {
            TriggerPath::FentryGetpgid => "fentry on getpgid",
            TriggerPath::TpGetpgid => "tracepoint syscalls:sys_enter_getpgid",
            TriggerPath::RawtpTestRun => "raw_tp program run by BPF_PROG_TEST_RUN",
            TriggerPath::LsmSocketPostCreate => "lsm.s program on socket_post_create",
            TriggerPath::CgroupSockCreate => "cgroup/sock_create program on bench's cgroup",
            TriggerPath::TpBtfSchedProcessFork => "tp_btf program on sched_process_fork",
            TriggerPath::SyscallMayGoto => {
                "may_goto loop in a syscall program run by BPF_PROG_TEST_RUN"
            }
            TriggerPath::SyscallBpfLoop => {
                "bpf_loop() loop in a syscall program run by BPF_PROG_TEST_RUN"
            }
        }
    }
}

/// The trigger a run used and, for a fallback, the one the kernel refused
/// and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerUsed {
    pub path: TriggerPath,
    /// Upstream's trigger and the kernel's reason, when this is a fallback.
    pub refused: Option<(TriggerPath, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_file_keeps_the_name() {
        for path in [
            TriggerPath::FentryGetpgid,
            TriggerPath::TpGetpgid,
            TriggerPath::RawtpTestRun,
            TriggerPath::LsmSocketPostCreate,
            TriggerPath::CgroupSockCreate,
            TriggerPath::TpBtfSchedProcessFork,
            TriggerPath::SyscallMayGoto,
            TriggerPath::SyscallBpfLoop,
        ] {
            let json = serde_json::to_string(&path).unwrap();
            assert_eq!(json, format!("\"{}\"", path.name()));
        }
    }
}
