//! From stacks to a breakdown: the top functions by self and inclusive share,
//! and a hit's cost split into named stages.
//!
//! A stage is given to each sample of a producer thread by the one table
//! below, [`RULES`]: walking the kernel stack from the innermost frame out,
//! the first frame a rule names decides. A rule for a whole subsystem
//! (`Scope::Subtree`, e.g. the uprobe lookup) also takes the functions that
//! frame calls; a rule for entry and exit code (`Scope::Leaf`) takes only the
//! samples found in that very function, so that a syscall's own work is not
//! filed under "entry". A sample in user mode is user code; a kernel sample
//! no rule names is "other kernel", shown as such.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::symbolize::{UPROBE_RETURN_TRAMPOLINE, UPROBE_XOL_SLOT};
use super::{FrameKind, Profile, Stack};

/// The stages of a hit, in the order a hit goes through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The benchmark's own loop and the probed function, in user mode.
    UserCode,
    /// Entering and leaving the kernel: the int3 trap, the syscall, the
    /// return to user mode.
    TrapEntryExit,
    /// Finding the uprobe that the trap address belongs to.
    ProbeLookup,
    /// Running the probe's consumers: the uprobe core, the perf and
    /// multi-link dispatchers up to the BPF program.
    HandlerDispatch,
    /// The BPF programs themselves, with the helpers they call.
    BpfProgram,
    /// Executing the probed instruction: emulating it, or single-stepping it
    /// out of line (with the debug trap that ends the step).
    SingleStep,
    /// The uretprobe trampoline: hijacking the return address, and the
    /// return through the trampoline.
    ReturnTrampoline,
    /// Kernel code no rule names.
    OtherKernel,
    /// A tick in the kernel whose stack could not be recorded.
    Unattributed,
}

impl Stage {
    pub const ALL: [Stage; 9] = [
        Stage::UserCode,
        Stage::TrapEntryExit,
        Stage::ProbeLookup,
        Stage::HandlerDispatch,
        Stage::BpfProgram,
        Stage::SingleStep,
        Stage::ReturnTrampoline,
        Stage::OtherKernel,
        Stage::Unattributed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Stage::UserCode => "user code",
            Stage::TrapEntryExit => "trap entry and exit",
            Stage::ProbeLookup => "probe lookup",
            Stage::HandlerDispatch => "handler dispatch",
            Stage::BpfProgram => "BPF program",
            Stage::SingleStep => "probed insn (emulate/step)",
            Stage::ReturnTrampoline => "return trampoline",
            Stage::OtherKernel => "other kernel",
            Stage::Unattributed => "unattributed (stack lost)",
        }
    }
}

/// Which samples a rule takes: those found in the named function itself; or
/// also those in the functions it calls, unless a nearer frame is named; or
/// every sample with the function anywhere on its stack (a trap that exists
/// only for one stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Leaf,
    Subtree,
    Whole,
}

/// One rule of the table: the stage, which samples it takes, and the kernel
/// functions it names, blank-separated; a name ending in `*` is a prefix
/// (`bpf_trace_run*`).
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub stage: Stage,
    pub scope: Scope,
    pub names: &'static str,
}

impl Rule {
    fn matches(&self, function: &str) -> bool {
        self.names
            .split_whitespace()
            .any(|name| match name.strip_suffix('*') {
                Some(prefix) => function.starts_with(prefix),
                None => function == name,
            })
    }
}

use Scope::{Leaf, Subtree, Whole};

/// The one table from kernel functions to stages (x86-64, Linux 6.x names;
/// a function this kernel lacks simply never matches). BPF programs are
/// recognised by kind, not by name; user-mode samples are user code, but for
/// the kernel's uprobe trampolines ([`USER_RULES`]).
pub const RULES: &[Rule] = &[
    // The debug trap exists only to end a single-step: all of it, its
    // entry and exit included, is the cost of stepping.
    Rule {
        stage: Stage::SingleStep,
        scope: Whole,
        names: "asm_exc_debug exc_debug_user",
    },
    // The int3 trap and the syscall, in and out. Leaf only: the syscall's
    // own work is not entry.
    Rule {
        stage: Stage::TrapEntryExit,
        scope: Leaf,
        names: "asm_exc_int3 exc_int3 do_int3_user do_int3 notify_die \
                 atomic_notifier_call_chain irqentry_enter_from_user_mode \
                 irqentry_exit_to_user_mode irqentry_exit error_entry error_return \
                 sync_regs entry_SYSCALL_64* do_syscall_64 x64_sys_call \
                 syscall_exit_to_user_mode syscall_exit_work exit_to_user_mode* \
                 arch_exit_to_user_mode_prepare \
                 swapgs_restore_regs_and_return_to_usermode \
                 restore_regs_and_return_to_kernel native_iret clear_bhb_loop*",
    },
    // The uretprobe return path: the syscall the trampoline makes, the
    // handling of the return, and taking over the return address at entry.
    // An optimised uprobe (a 5-byte nop turned into a call) enters by the
    // uprobe syscall: its own work (saving and restoring registers on the
    // user stack, checking the caller) is this path's trap.
    Rule {
        stage: Stage::TrapEntryExit,
        scope: Subtree,
        names: "__do_sys_uprobe __x64_sys_uprobe",
    },
    Rule {
        stage: Stage::ReturnTrampoline,
        scope: Subtree,
        names: "__do_sys_uretprobe __x64_sys_uretprobe uprobe_handle_trampoline \
                 handle_trampoline prepare_uretprobe \
                 arch_uretprobe_hijack_return_addr",
    },
    // Executing the probed instruction out of line.
    Rule {
        stage: Stage::SingleStep,
        scope: Subtree,
        names: "arch_uprobe_pre_xol arch_uprobe_post_xol pre_ssout xol_get_insn_slot \
                 xol_free_insn_slot handle_singlestep uprobe_post_sstep_notifier \
                 arch_uprobe_skip_sstep branch_emulate_op push_emulate_op",
    },
    // Finding the uprobe.
    Rule {
        stage: Stage::ProbeLookup,
        scope: Subtree,
        names: "find_active_uprobe_rcu find_active_uprobe find_uprobe_rcu \
                 find_uprobe",
    },
    // From the uprobe core to the BPF program (and the uprobe core's own
    // work, its optimisation attempts included).
    Rule {
        stage: Stage::HandlerDispatch,
        scope: Subtree,
        names: "handler_chain uprobe_dispatcher uretprobe_dispatcher \
                 __uprobe_perf_func uprobe_perf_func trace_call_bpf \
                 uprobe_multi_link_handler uprobe_multi_link_ret_handler \
                 uprobe_prog_run handle_swbp handle_syscall_uprobe \
                 uprobe_notify_resume uprobe_pre_sstep_notifier \
                 arch_uprobe_exception_notify arch_uprobe_optimize bpf_trace_run* \
                 __bpf_trace_* perf_trace_*",
    },
];

/// User-mode samples in the kernel's uprobe trampolines (named by their
/// mapping, see `symbolize`).
pub const USER_RULES: &[(&str, Stage)] = &[
    // The call an optimised uprobe jumps to, which makes the uprobe syscall.
    ("[uprobes-trampoline]", Stage::TrapEntryExit),
    (UPROBE_RETURN_TRAMPOLINE, Stage::ReturnTrampoline),
    (UPROBE_XOL_SLOT, Stage::SingleStep),
];

/// The stage of one stack of a producer thread.
pub fn classify(stack: &Stack) -> Stage {
    if stack.kernel_lost {
        return Stage::Unattributed;
    }
    if stack.kernel.is_empty() {
        let leaf = stack.user.last().map(|f| f.name.as_str());
        return USER_RULES
            .iter()
            .find(|(name, _)| Some(*name) == leaf)
            .map_or(Stage::UserCode, |&(_, stage)| stage);
    }
    let whole = RULES
        .iter()
        .find(|rule| rule.scope == Whole && stack.kernel.iter().any(|f| rule.matches(&f.name)));
    if let Some(rule) = whole {
        return rule.stage;
    }
    for (depth, frame) in stack.kernel.iter().rev().enumerate() {
        if frame.kind == FrameKind::Bpf {
            return Stage::BpfProgram;
        }
        let rule = RULES
            .iter()
            .find(|rule| rule.matches(&frame.name) && (depth == 0 || rule.scope == Subtree));
        if let Some(rule) = rule {
            return rule.stage;
        }
    }
    Stage::OtherKernel
}

/// A run's profile as the report shows it and the JSON keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    pub frequency_hz: u64,
    /// The wall time sampling was on (the measured seconds).
    pub seconds: f64,
    /// Samples of bench's threads, and of its producer threads.
    pub samples: u64,
    pub producer_samples: u64,
    /// The producers' on-CPU share of the sampled time: their samples over
    /// what one producer per CPU at full time would give.
    pub producer_on_cpu_pct: f64,
    /// Samples lost to a full map (their stacks are unknown).
    pub dropped_samples: u64,
    /// Ticks that never fired: frequency x seconds x CPUs, less every tick
    /// the sampler saw (ours, other tasks', dropped). The kernel throttles a
    /// sampler whose interrupts take too much CPU time; those ticks are lost,
    /// not time the producers spent off a CPU.
    #[serde(default)]
    pub missed_ticks: u64,
    /// The sampling rate the kernel throttled to during the run
    /// (`kernel.perf_event_max_sample_rate` after it), when below the
    /// frequency asked: the sampler's own cost is in the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_to_hz: Option<u64>,
    /// The headline rate of the measured (sampled) seconds, and of the
    /// warm-up seconds, which are not sampled: the sampler's own cost shows
    /// as the first below the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_rate: Option<f64>,
    /// One producer's time per hit, in ns (producers / rate): what the
    /// stages and the time off CPU split.
    pub ns_per_hit: Option<f64>,
    /// The part of `ns_per_hit` the producers spent off a CPU (other tasks
    /// ran), by their on-CPU share; the stages split the rest.
    pub off_cpu_ns_per_hit: Option<f64>,
    /// Every stage that has samples, in stage order, over the producers'
    /// samples.
    pub stages: Vec<StageShare>,
    /// The functions the producers' samples were found in, most first.
    pub top_self: Vec<FunctionShare>,
    /// The kernel functions (and BPF programs) on the producers' stacks,
    /// most first.
    pub top_inclusive: Vec<FunctionShare>,
    /// Samples per thread (producers, consumers, the measuring thread).
    pub threads: Vec<ThreadShare>,
    /// The files written, when `--profile=DIR` was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageShare {
    pub stage: Stage,
    pub samples: u64,
    /// % of the producers' samples.
    pub share_pct: f64,
    /// share × the on-CPU part of a hit's time.
    pub ns_per_hit: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionShare {
    pub function: String,
    pub kind: FrameKind,
    pub samples: u64,
    pub share_pct: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadShare {
    pub thread: String,
    pub samples: u64,
}

/// The producers' samples counted by stage, by leaf function and by kernel
/// function anywhere on the stack.
struct Counts<'a> {
    by_stage: HashMap<Stage, u64>,
    by_self: HashMap<(&'a str, FrameKind), u64>,
    by_inclusive: HashMap<(&'a str, FrameKind), u64>,
}

impl<'a> Counts<'a> {
    fn of(producer_stacks: &[&'a Stack]) -> Counts<'a> {
        let mut counts = Counts {
            by_stage: HashMap::new(),
            by_self: HashMap::new(),
            by_inclusive: HashMap::new(),
        };
        for stack in producer_stacks {
            *counts.by_stage.entry(classify(stack)).or_default() += stack.count;
            if let Some(leaf) = stack.leaf() {
                *counts.by_self.entry((&leaf.name, leaf.kind)).or_default() += stack.count;
            }
            let mut seen: Vec<(&str, FrameKind)> = Vec::new();
            // User frames' inclusive shares are the thread's start-up
            // chain, every one near 100 %: only the kernel's tell something.
            for frame in stack.kernel.iter() {
                let key = (frame.name.as_str(), frame.kind);
                // A recursive function counts once per sample.
                if !seen.contains(&key) {
                    seen.push(key);
                    *counts.by_inclusive.entry(key).or_default() += stack.count;
                }
            }
        }
        counts
    }
}

/// The [`TOP`] functions of `counts`, most sampled first.
fn top_list(
    counts: HashMap<(&str, FrameKind), u64>,
    share: impl Fn(u64) -> f64,
) -> Vec<FunctionShare> {
    let mut list: Vec<FunctionShare> = counts
        .into_iter()
        .map(|((function, kind), n)| FunctionShare {
            function: function.to_string(),
            kind,
            samples: n,
            share_pct: share(n),
        })
        .collect();
    list.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    list.truncate(TOP);
    list
}

/// Every thread's samples, by thread name.
fn thread_shares(profile: &Profile) -> Vec<ThreadShare> {
    let mut threads: Vec<ThreadShare> = Vec::new();
    for stack in &profile.stacks {
        match threads.iter_mut().find(|t| t.thread == stack.thread) {
            Some(t) => t.samples += stack.count,
            None => threads.push(ThreadShare {
                thread: stack.thread.clone(),
                samples: stack.count,
            }),
        }
    }
    threads.sort_by(|a, b| a.thread.cmp(&b.thread));
    threads
}

/// How many functions each top list keeps.
pub const TOP: usize = 12;

impl Breakdown {
    /// `hits_per_sec`: the run's mean headline rate over all `producers`.
    pub fn of(profile: &Profile, producers: usize, hits_per_sec: Option<f64>) -> Breakdown {
        let samples: u64 = profile.stacks.iter().map(|s| s.count).sum();
        let producer_stacks: Vec<&Stack> =
            profile.stacks.iter().filter(|s| s.is_producer()).collect();
        let producer_samples: u64 = producer_stacks.iter().map(|s| s.count).sum();
        let share = |n: u64| match producer_samples {
            0 => 0.0,
            total => n as f64 / total as f64 * 100.0,
        };
        let ns_per_hit = hits_per_sec
            .filter(|&rate| rate > 0.0)
            .map(|rate| producers as f64 * 1e9 / rate);
        // Ticks that never fired are lost, not time off CPU: the producers'
        // share is of the ticks that fired.
        let expected = profile.freq_hz as f64 * profile.seconds * profile.cpus as f64;
        let fired = (samples + profile.other_ticks + profile.dropped) as f64;
        let fired_share = if expected > 0.0 {
            (fired / expected).min(1.0)
        } else {
            1.0
        };
        let full = profile.freq_hz as f64 * profile.seconds * producers as f64 * fired_share;
        let on_cpu = if full > 0.0 {
            producer_samples as f64 / full
        } else {
            0.0
        };
        // The ticks fire at the rate asked within a sample or so: a little
        // over 100 % is counting, not time.
        let on_cpu_ns = ns_per_hit.map(|ns| ns * on_cpu.min(1.0));

        let Counts {
            by_stage,
            by_self,
            by_inclusive,
        } = Counts::of(&producer_stacks);
        let stages = Stage::ALL
            .iter()
            .filter_map(|&stage| {
                let n = *by_stage.get(&stage)?;
                Some(StageShare {
                    stage,
                    samples: n,
                    share_pct: share(n),
                    ns_per_hit: on_cpu_ns.map(|ns| ns * n as f64 / producer_samples as f64),
                })
            })
            .collect();
        Breakdown {
            frequency_hz: profile.freq_hz,
            seconds: profile.seconds,
            samples,
            producer_samples,
            producer_on_cpu_pct: on_cpu * 100.0,
            dropped_samples: profile.dropped,
            missed_ticks: (expected - fired).max(0.0).round() as u64,
            throttled_to_hz: profile.throttled_to_hz,
            measured_rate: None,
            warmup_rate: None,
            ns_per_hit,
            off_cpu_ns_per_hit: ns_per_hit.zip(on_cpu_ns).map(|(all, on)| all - on),
            stages,
            top_self: top_list(by_self, share),
            top_inclusive: top_list(by_inclusive, share),
            threads: thread_shares(profile),
            files: Vec::new(),
        }
    }

    pub fn stage(&self, stage: Stage) -> Option<&StageShare> {
        self.stages.iter().find(|s| s.stage == stage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Frame;

    fn frame(name: &str, kind: FrameKind) -> Frame {
        Frame {
            name: name.to_string(),
            kind,
        }
    }

    fn stack(kernel: &[&str], count: u64) -> Stack {
        Stack {
            thread: "producer-0".to_string(),
            user: vec![frame("bench::main", FrameKind::User)],
            kernel: kernel
                .iter()
                .map(|n| {
                    let kind = if n.starts_with("bpf_prog_") {
                        FrameKind::Bpf
                    } else {
                        FrameKind::Kernel
                    };
                    frame(n, kind)
                })
                .collect(),
            kernel_lost: false,
            count,
        }
    }

    #[test]
    fn the_nearest_named_frame_decides_and_entry_takes_only_its_own_samples() {
        let lookup = stack(
            &[
                "asm_exc_int3",
                "exc_int3",
                "uprobe_notify_resume",
                "handle_swbp",
                "find_active_uprobe_rcu",
                "mtree_load",
            ],
            1,
        );
        assert_eq!(classify(&lookup), Stage::ProbeLookup);
        let program = stack(
            &[
                "handle_swbp",
                "uprobe_dispatcher",
                "bpf_prog_0123456789abcdef_count_uprobe",
            ],
            1,
        );
        assert_eq!(classify(&program), Stage::BpfProgram);
        let helper = stack(
            &[
                "trace_call_bpf",
                "bpf_prog_0123_count",
                "bpf_get_smp_processor_id",
            ],
            1,
        );
        assert_eq!(classify(&helper), Stage::BpfProgram);
        // A syscall's own work is not entry, even under do_syscall_64.
        let getpgid = stack(
            &[
                "entry_SYSCALL_64",
                "do_syscall_64",
                "__x64_sys_getpgid",
                "find_task_by_vpid",
            ],
            1,
        );
        assert_eq!(classify(&getpgid), Stage::OtherKernel);
        assert_eq!(
            classify(&stack(&["entry_SYSCALL_64", "do_syscall_64"], 1)),
            Stage::TrapEntryExit
        );
        assert_eq!(classify(&stack(&[], 1)), Stage::UserCode);
        // The debug trap that ends a single-step is the step's, entry and all.
        let step = stack(
            &[
                "asm_exc_debug",
                "exc_debug_user",
                "irqentry_exit_to_user_mode",
            ],
            1,
        );
        assert_eq!(classify(&step), Stage::SingleStep);
        let mut trampoline = stack(&[], 1);
        trampoline
            .user
            .push(frame(UPROBE_RETURN_TRAMPOLINE, FrameKind::User));
        assert_eq!(classify(&trampoline), Stage::ReturnTrampoline);
        let mut lost = stack(&[], 1);
        lost.kernel_lost = true;
        assert_eq!(classify(&lost), Stage::Unattributed);
    }

    #[test]
    fn shares_and_ns_per_hit_add_up() {
        let mut consumer = stack(&["schedule"], 50);
        consumer.thread = "consumer-0".to_string();
        let profile = Profile {
            freq_hz: 100,
            seconds: 2.0,
            stacks: vec![
                stack(&[], 100),
                stack(&["handle_swbp", "bpf_prog_aa_count"], 60),
                stack(&["handle_swbp", "find_active_uprobe_rcu"], 40),
                consumer,
            ],
            other_ticks: 0,
            dropped: 0,
            cpus: 1,
            throttled_to_hz: None,
        };
        // One producer at 5 M hits/s: 200 ns a hit.
        let b = Breakdown::of(&profile, 1, Some(5e6));
        assert_eq!((b.samples, b.producer_samples), (250, 200));
        assert_eq!(b.producer_on_cpu_pct, 100.0);
        assert_eq!(b.ns_per_hit, Some(200.0));
        assert_eq!(b.off_cpu_ns_per_hit, Some(0.0));
        let stage = |s| b.stage(s).unwrap();
        assert_eq!(stage(Stage::UserCode).share_pct, 50.0);
        assert_eq!(stage(Stage::BpfProgram).ns_per_hit, Some(60.0));
        assert_eq!(stage(Stage::ProbeLookup).samples, 40);
        assert!(b.stage(Stage::OtherKernel).is_none());
        assert_eq!(stage(Stage::UserCode).samples, 100);
        let total: f64 = b.stages.iter().map(|s| s.share_pct).sum();
        assert!((total - 100.0).abs() < 1e-9);
        assert_eq!(b.top_self[0].function, "bench::main");
        assert_eq!(b.top_inclusive[0].function, "handle_swbp");
        assert_eq!(b.top_inclusive[0].share_pct, 50.0);
        assert_eq!(b.threads.len(), 2);

        // Off the CPU half the time (other tasks had the other ticks): the
        // stages split the other half.
        let half = Profile {
            seconds: 4.0,
            other_ticks: 150,
            ..profile.clone()
        };
        let b = Breakdown::of(&half, 1, Some(5e6));
        assert_eq!(b.producer_on_cpu_pct, 50.0);
        assert_eq!(b.off_cpu_ns_per_hit, Some(100.0));
        assert_eq!(b.stage(Stage::BpfProgram).unwrap().ns_per_hit, Some(30.0));
        assert_eq!(b.missed_ticks, 0);

        // The same ticks missing because they never fired (a throttled
        // sampler): lost, not off CPU. Of the 250 that fired the producer
        // had 200.
        let throttled = Profile {
            seconds: 4.0,
            throttled_to_hz: Some(62),
            ..profile
        };
        let b = Breakdown::of(&throttled, 1, Some(5e6));
        assert_eq!(b.missed_ticks, 150);
        assert_eq!(b.throttled_to_hz, Some(62));
        assert!(
            (b.producer_on_cpu_pct - 80.0).abs() < 1e-9,
            "{}",
            b.producer_on_cpu_pct
        );
        assert!((b.off_cpu_ns_per_hit.unwrap() - 40.0).abs() < 1e-9);
    }
}
