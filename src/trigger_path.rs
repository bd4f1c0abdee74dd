//! Which trigger ran a benchmark's BPF body: the kernel runner's (a program
//! on the getpgid system call, producers calling getpgid, say), or, where
//! this kernel refuses that program, a fallback the family chose. Each family
//! names its own triggers ([`Trigger`] values in its file); a run says the
//! one it took in its header line, `--probe` in its verdict and the result
//! file as `trigger`.

use crate::bpf::Needs;

/// A trigger a family's body can run from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Its name in result files (`fentry-getpgid`).
    pub name: &'static str,
    /// In words, for the header line (`fentry on getpgid`).
    pub words: &'static str,
    /// What loading and attaching it asks of the kernel.
    pub needs: Needs,
    /// The helper benchmarks' fallback, which a benchmark can also take as
    /// its own trigger (said so when it does).
    pub fallback: bool,
}

/// The trigger a set-up took, and the one it was refused, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriggerUsed {
    pub path: Trigger,
    pub refused: Option<(Trigger, String)>,
}

impl TriggerUsed {
    /// `trigger` taken as the family's own.
    pub fn own(trigger: Trigger) -> TriggerUsed {
        TriggerUsed {
            path: trigger,
            refused: None,
        }
    }
}
