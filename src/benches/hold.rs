//! How long one trigger may hold its CPU in the kernel. A trigger (a
//! getpgid() whose program runs the body, or one BPF_PROG_TEST_RUN) runs its
//! whole body without a pause: Ctrl-C waits for it, and on a kernel built
//! without preemption the watchdog calls a CPU held for 20 s a soft lockup.
//! An option that scales a trigger's work is refused (exit 2) where the
//! work, at a time per operation measured on a 2-CPU EPYC VM with a margin
//! (docs/benchmarks.md, "How long a trigger holds a CPU"), would take more
//! than [`BUDGET_NS`].

use crate::error::{Error, Result};

/// The longest a trigger may hold its CPU, by the estimate: Ctrl-C then acts
/// within a second, and a machine 40 times slower stays at half the
/// watchdog's 20 s.
pub const BUDGET_NS: f64 = 500e6;

/// The work of one trigger: `ops` operations of up to `ns_per_op` each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriggerWork {
    pub ops: u64,
    pub ns_per_op: f64,
}

impl TriggerWork {
    /// The most operations of this cost a trigger may make.
    pub fn most_ops(&self) -> u64 {
        (BUDGET_NS / self.ns_per_op).floor() as u64
    }
}

/// Refuses `work` past the budget: `bench` with `given` (the options, as
/// typed) makes `work.ops` `what` at a time ("lookups of 1024-byte keys");
/// `option` is what to lower.
pub fn check(bench: &str, given: &str, what: &str, work: TriggerWork, option: &str) -> Result<()> {
    let ns = work.ops as f64 * work.ns_per_op;
    if ns <= BUDGET_NS {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{bench} with {given} would hold a CPU in the kernel for about {:.1} s at a time ({} \
         {what} at up to {:.0} ns each), where bench allows {:.1} s (Ctrl-C and the \
         soft-lockup watchdog wait for it): give a smaller {option}, for {} {what} at most",
        ns / 1e9,
        work.ops,
        work.ns_per_op,
        BUDGET_NS / 1e9,
        work.most_ops()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_past_the_budget_is_refused_in_one_sentence() {
        let work = |ops| TriggerWork {
            ops,
            ns_per_op: 1000.0,
        };
        assert_eq!(work(1).most_ops(), 500_000);
        assert!(check("b", "--n 1", "ops", work(500_000), "--n").is_ok());
        let err = check("b", "--n 9", "ops", work(500_001), "--n").err();
        let err = err.map(|e| (e.exit_code(), e.to_string()));
        assert_eq!(
            err,
            Some((
                2,
                "b with --n 9 would hold a CPU in the kernel for about 0.5 s at a time (500001 \
                 ops at up to 1000 ns each), where bench allows 0.5 s (Ctrl-C and the \
                 soft-lockup watchdog wait for it): give a smaller --n, for 500000 ops at most"
                    .to_string()
            ))
        );
    }
}
