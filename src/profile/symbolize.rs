//! Names for the addresses of sampled stacks, through blazesym: kernel
//! addresses (and the BPF programs among them, by their kallsyms names
//! `bpf_prog_<tag>_<name>`) from /proc/kallsyms, user addresses from the ELF
//! files mapped into this process (the bench binary, the C library). A user
//! address no symbol covers is named by its mapping: `[libc.so.6]` (a
//! function the library does not export), `[uprobes]` (the kernel's
//! trampolines); what nothing names is `[unknown]`.

use std::collections::{BTreeSet, HashMap};

use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One stack frame, named.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    pub name: String,
    pub kind: FrameKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    User,
    Kernel,
    /// A BPF program (JIT-compiled code the kernel names in kallsyms).
    Bpf,
}

const UNKNOWN: &str = "[unknown]";

/// The names of every address of a profile's stacks.
pub struct Names {
    user: HashMap<u64, Frame>,
    kernel: HashMap<u64, Frame>,
}

/// The address to look up for the `i`-th entry of a stack (innermost first):
/// the innermost is where the thread was; the others are return addresses,
/// which follow their call, so one byte back lies in the calling function
/// even when the call is its last instruction.
fn lookup_address(i: usize, ip: u64) -> u64 {
    if i == 0 {
        ip
    } else {
        ip.saturating_sub(1)
    }
}

fn addresses<'a>(stacks: impl Iterator<Item = &'a [u64]>) -> Vec<u64> {
    let mut set = BTreeSet::new();
    for stack in stacks {
        for (i, &ip) in stack.iter().enumerate() {
            set.insert(lookup_address(i, ip));
        }
    }
    set.into_iter().collect()
}

impl Names {
    /// Names every address of the given stacks (innermost first, as the
    /// kernel records them).
    pub fn resolve<'a>(
        user_stacks: impl Iterator<Item = &'a [u64]>,
        kernel_stacks: impl Iterator<Item = &'a [u64]>,
    ) -> Result<Names> {
        let symbolizer = Symbolizer::builder()
            .enable_code_info(false)
            .enable_inlined_fns(false)
            .enable_demangling(true)
            .build();

        let user_addrs = addresses(user_stacks);
        let process = |map_files| {
            Source::Process(Process {
                debug_syms: false,
                perf_map: false,
                map_files,
                ..Process::new(Pid::Slf)
            })
        };
        // map_files (robust against a binary replaced on disk while it runs)
        // needs CAP_SYS_ADMIN; the paths in /proc/self/maps do without.
        let user_syms = symbolizer
            .symbolize(&process(true), Input::AbsAddr(&user_addrs))
            .or_else(|_| symbolizer.symbolize(&process(false), Input::AbsAddr(&user_addrs)));
        let mappings = mappings();
        let mut user = HashMap::with_capacity(user_addrs.len());
        for (i, &addr) in user_addrs.iter().enumerate() {
            let name = match user_syms.as_ref().ok().and_then(|s| s.get(i)) {
                Some(Symbolized::Sym(sym)) => sym.name.to_string(),
                _ => mappings
                    .iter()
                    .find(|(start, end, _)| (*start..*end).contains(&addr))
                    .map_or_else(
                        || UNKNOWN.to_string(),
                        |(start, _, name)| mapping_frame(name, addr - start),
                    ),
            };
            user.insert(
                addr,
                Frame {
                    name,
                    kind: FrameKind::User,
                },
            );
        }

        let kernel_addrs = addresses(kernel_stacks);
        let kernel_source = Source::Kernel(Kernel {
            kallsyms: MaybeDefault::Default,
            // kallsyms names BPF programs, which no vmlinux does; and it
            // is quick to read.
            vmlinux: MaybeDefault::None,
            debug_syms: false,
            ..Kernel::default()
        });
        let kernel_syms = symbolizer.symbolize(&kernel_source, Input::AbsAddr(&kernel_addrs));
        let mut kernel = HashMap::with_capacity(kernel_addrs.len());
        for (i, &addr) in kernel_addrs.iter().enumerate() {
            let frame = match kernel_syms.as_ref().ok().and_then(|s| s.get(i)) {
                Some(Symbolized::Sym(sym)) => {
                    let bpf = sym.module.as_deref().is_some_and(|m| m == "[bpf]")
                        || sym.name.starts_with("bpf_prog_");
                    Frame {
                        name: sym.name.to_string(),
                        kind: if bpf {
                            FrameKind::Bpf
                        } else {
                            FrameKind::Kernel
                        },
                    }
                }
                _ => Frame {
                    name: UNKNOWN.to_string(),
                    kind: FrameKind::Kernel,
                },
            };
            kernel.insert(addr, frame);
        }
        Ok(Names { user, kernel })
    }

    /// A user stack's frames, outermost first.
    pub fn user_stack(&self, stack: &[u64]) -> Vec<Frame> {
        frames(&self.user, stack, FrameKind::User)
    }

    /// A kernel stack's frames, outermost first.
    pub fn kernel_stack(&self, stack: &[u64]) -> Vec<Frame> {
        frames(&self.kernel, stack, FrameKind::Kernel)
    }
}

fn frames(names: &HashMap<u64, Frame>, stack: &[u64], kind: FrameKind) -> Vec<Frame> {
    let mut frames: Vec<Frame> = stack
        .iter()
        .enumerate()
        .map(|(i, &ip)| {
            names
                .get(&lookup_address(i, ip))
                .cloned()
                .unwrap_or_else(|| Frame {
                    name: UNKNOWN.to_string(),
                    kind,
                })
        })
        .collect();
    frames.reverse();
    frames
}

/// The kernel's uprobe area (`[uprobes]`) is split in slots: the first
/// holds the uretprobe trampoline, the others the probed instructions that
/// are single-stepped out of line (x86-64's UPROBE_XOL_SLOT_BYTES).
pub const UPROBE_RETURN_TRAMPOLINE: &str = "[uprobes: uretprobe trampoline]";
pub const UPROBE_XOL_SLOT: &str = "[uprobes: out-of-line step]";
const XOL_SLOT_BYTES: u64 = 128;

/// The name of an address no symbol covers, `offset` bytes into `mapping`.
fn mapping_frame(mapping: &str, offset: u64) -> String {
    if mapping == "[uprobes]" && cfg!(target_arch = "x86_64") {
        return if offset < XOL_SLOT_BYTES {
            UPROBE_RETURN_TRAMPOLINE.to_string()
        } else {
            UPROBE_XOL_SLOT.to_string()
        };
    }
    mapping.to_string()
}

/// This process's mappings as (start, end, name): `[uprobes]`, `[vdso]` for
/// the kernel's, `[libc.so.6]` (the file name) for a file's.
fn mappings() -> Vec<(u64, u64, String)> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let path = fields.nth(4)?;
            let name = if path.starts_with('[') {
                path.to_string()
            } else {
                format!("[{}]", path.rsplit('/').next()?)
            };
            let (start, end) = range.split_once('-')?;
            Some((
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
                name,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_known_name() -> u64 {
        std::hint::black_box(7)
    }

    #[test]
    fn this_process_and_the_kernel_are_named() {
        let here = a_function_with_a_known_name as *const () as usize as u64;
        let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
        let schedule = kallsyms
            .lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                let addr = f.next()?;
                (f.nth(1)? == "schedule").then(|| u64::from_str_radix(addr, 16).ok())?
            })
            .unwrap();
        let user = [here + 1];
        let kernel = [schedule + 1];
        let names = Names::resolve([&user[..]].into_iter(), [&kernel[..]].into_iter()).unwrap();
        let frame = &names.user_stack(&user)[0];
        assert!(
            frame.name.ends_with("a_function_with_a_known_name"),
            "{frame:?}"
        );
        // kallsyms shows zeros to those who may not read kernel addresses.
        if schedule != 0 {
            let frame = &names.kernel_stack(&kernel)[0];
            assert_eq!(frame.name, "schedule");
            assert_eq!(frame.kind, FrameKind::Kernel);
        }
        // Innermost first in, outermost first out.
        let stack = names.user_stack(&[here + 1, 0]);
        assert_eq!(stack[0].name, UNKNOWN);
    }
}
