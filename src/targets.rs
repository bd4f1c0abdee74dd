//! Probe targets: tiny functions whose first instruction is fixed in assembly,
//! so that no optimiser can change what a uprobe lands on, and the ELF work that
//! turns a target's symbol into the file offset a uprobe is attached at.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use object::elf::{PF_X, PT_LOAD};
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol};

use crate::error::{Error, Result};

/// The running binary, where the targets live. Probes are attached through
/// this magic link: it names the very file this process executes, even if the
/// path was replaced since.
pub const SELF_EXE: &str = "/proc/self/exe";

#[cfg(not(target_arch = "x86_64"))]
compile_error!("the probe targets are written in x86-64 assembly");

// Each target is its own global function symbol. `push` calls a helper so that it
// is not a leaf and its frame set-up is real; `nop5` starts with the 5-byte nop
// that 6.17-7.2 kernels optimise uprobes on, `nop10` with the 10-byte nop
// (the kernel runner's bytes) that later kernels optimise instead.
std::arch::global_asm!(
    ".pushsection .text.bench_targets,\"ax\",@progbits",
    ".p2align 4",
    ".globl bench_target_nop",
    ".type bench_target_nop,@function",
    "bench_target_nop:",
    "    nop",
    "    ret",
    ".size bench_target_nop, .-bench_target_nop",
    ".p2align 4",
    ".hidden bench_target_callee",
    ".globl bench_target_callee",
    ".type bench_target_callee,@function",
    "bench_target_callee:",
    "    ret",
    ".size bench_target_callee, .-bench_target_callee",
    ".p2align 4",
    ".globl bench_target_push",
    ".type bench_target_push,@function",
    "bench_target_push:",
    "    push rbp",
    "    mov rbp, rsp",
    "    call bench_target_callee",
    "    pop rbp",
    "    ret",
    ".size bench_target_push, .-bench_target_push",
    ".p2align 4",
    ".globl bench_target_ret",
    ".type bench_target_ret,@function",
    "bench_target_ret:",
    "    ret",
    ".size bench_target_ret, .-bench_target_ret",
    ".p2align 4",
    ".globl bench_target_nop5",
    ".type bench_target_nop5,@function",
    "bench_target_nop5:",
    "    .byte 0x0f, 0x1f, 0x44, 0x00, 0x00",
    "    ret",
    ".size bench_target_nop5, .-bench_target_nop5",
    ".p2align 4",
    ".globl bench_target_nop10",
    ".type bench_target_nop10,@function",
    "bench_target_nop10:",
    "    .byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00",
    "    ret",
    ".size bench_target_nop10, .-bench_target_nop10",
    ".popsection",
);

/// The `.stapsdt.base` section every SDT note's base address names: one
/// byte, in a group the linker keeps once, emitted by the first note of a file.
macro_rules! stapsdt_base {
    () => {
        concat!(
            ".ifndef _.stapsdt.base\n",
            ".pushsection .stapsdt.base,\"aG\",@progbits,.stapsdt.base,comdat\n",
            ".weak _.stapsdt.base\n",
            ".hidden _.stapsdt.base\n",
            "_.stapsdt.base: .space 1\n",
            ".size _.stapsdt.base, 1\n",
            ".popsection\n",
            ".endif",
        )
    };
}
pub(crate) use stapsdt_base;

// USDT sites: each function's first instruction is a SystemTap SDT probe point
// ("bench" provider, no arguments), described by a note in .note.stapsdt as the
// SDT ABI lays it out: pc, the .stapsdt.base address, semaphore (none), names.
macro_rules! usdt_site {
    ($symbol:literal, $probe:literal, $($insn:literal),+) => {
        std::arch::global_asm!(
            ".pushsection .text.bench_targets,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $symbol),
            concat!(".type ", $symbol, ",@function"),
            concat!($symbol, ":"),
            "990:",
            $($insn,)+
            "    ret",
            concat!(".size ", $symbol, ", .-", $symbol),
            ".popsection",
            ".pushsection .note.stapsdt,\"?\",@note",
            ".balign 4",
            ".4byte 992f-991f, 994f-993f, 3",
            "991: .asciz \"stapsdt\"",
            "992: .balign 4",
            "993: .8byte 990b",
            ".8byte _.stapsdt.base",
            ".8byte 0",
            ".asciz \"bench\"",
            concat!(".asciz \"", $probe, "\""),
            ".asciz \"\"",
            "994: .balign 4",
            ".popsection",
            $crate::targets::stapsdt_base!(),
        );
    };
}

// The kernel runner's two USDT sites, under its probe names. `nop` is a lone
// one-byte nop (upstream's usdt_1.c sets usdt.h's USDT_NOP to it; classic
// sdt.h emits the same), which always traps. `nop5` is usdt.h's default site,
// a nop then a 5-byte nop (usdt_2.c): on a kernel with the uprobe syscall,
// libbpf sees the pair and probes the 5-byte nop, which the kernel optimizes.
// `nop10` is the site usdt.h emits since July 2026 (usdt_2.c in the 7.3
// runner): a nop then the 10-byte nop, which libbpf 1.8 probes at the 10-byte
// nop where the kernel has the uprobe syscall.
usdt_site!("bench_usdt_nop", "nop", "    nop");
usdt_site!(
    "bench_usdt_nop5",
    "nop5",
    "    nop",
    "    .byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
);
usdt_site!(
    "bench_usdt_nop10",
    "nop10",
    "    nop",
    "    .byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00"
);

/// The 10-byte nop the kernel runner's nop10 targets start with, and usdt.h
/// emits after a nop: `nopw %cs:0x0(%rax,%rax,1)`.
pub const NOP10: [u8; 10] = [0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00];

extern "C" {
    fn bench_target_nop();
    fn bench_target_push();
    fn bench_target_ret();
    fn bench_target_nop5();
    fn bench_target_nop10();
    fn bench_usdt_nop();
    fn bench_usdt_nop5();
    fn bench_usdt_nop10();
}

/// A probe target, named by the instruction the probe lands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Nop,
    Push,
    Ret,
    Nop5,
    /// The 10-byte nop `66 2e 0f 1f 84 00 00 00 00 00`.
    Nop10,
    /// A USDT site (provider `bench`, probe `nop`) on a lone one-byte nop,
    /// as classic sdt.h (and usdt.h with `USDT_NOP` set to it) lays it out.
    UsdtNop,
    /// A USDT site (provider `bench`, probe `nop5`) on a nop followed by a
    /// 5-byte nop, as libbpf's usdt.h lays it out by default.
    UsdtNop5,
    /// A USDT site (provider `bench`, probe `nop10`) on a nop followed by
    /// the 10-byte nop, as usdt.h lays it out since July 2026.
    UsdtNop10,
}

impl Target {
    pub const ALL: [Target; 8] = [
        Target::Nop,
        Target::Push,
        Target::Ret,
        Target::Nop5,
        Target::Nop10,
        Target::UsdtNop,
        Target::UsdtNop5,
        Target::UsdtNop10,
    ];

    /// The provider of the USDT sites.
    pub const USDT_PROVIDER: &'static str = "bench";

    /// Short name: the USDT probe name, or the tail of `trig-uprobe-<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Nop | Target::UsdtNop => "nop",
            Target::Push => "push",
            Target::Ret => "ret",
            Target::Nop5 | Target::UsdtNop5 => "nop5",
            Target::Nop10 | Target::UsdtNop10 => "nop10",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Target::Nop => "bench_target_nop",
            Target::Push => "bench_target_push",
            Target::Ret => "bench_target_ret",
            Target::Nop5 => "bench_target_nop5",
            Target::Nop10 => "bench_target_nop10",
            Target::UsdtNop => "bench_usdt_nop",
            Target::UsdtNop5 => "bench_usdt_nop5",
            Target::UsdtNop10 => "bench_usdt_nop10",
        }
    }

    /// The encoding of the first instruction (of the two, for the USDT
    /// site that is a nop and a 5-byte nop).
    pub fn expected_bytes(self) -> &'static [u8] {
        match self {
            Target::UsdtNop5 => &[0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00],
            Target::UsdtNop10 => &[0x90, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0],
            Target::Nop10 => &NOP10,
            Target::Nop | Target::UsdtNop => &[0x90],
            Target::Push => &[0x55],
            Target::Ret => &[0xc3],
            Target::Nop5 => &[0x0f, 0x1f, 0x44, 0x00, 0x00],
        }
    }

    /// The first instruction in AT&T syntax, for messages.
    pub fn instruction(self) -> &'static str {
        match self {
            Target::UsdtNop5 => "nop; nopl 0x0(%rax,%rax,1)",
            Target::UsdtNop10 => "nop; nopw %cs:0x0(%rax,%rax,1)",
            Target::Nop10 => "nopw %cs:0x0(%rax,%rax,1)",
            Target::Nop | Target::UsdtNop => "nop",
            Target::Push => "push %rbp",
            Target::Ret => "ret",
            Target::Nop5 => "nopl 0x0(%rax,%rax,1)",
        }
    }

    /// Runs `op` with the target's entry point bound statically, so that a
    /// producer loop calls the target directly rather than through a pointer.
    #[inline(always)]
    pub fn with_fn<R>(self, op: impl FnOnce(unsafe extern "C" fn()) -> R) -> R {
        match self {
            Target::Nop => op(bench_target_nop),
            Target::Push => op(bench_target_push),
            Target::Ret => op(bench_target_ret),
            Target::Nop5 => op(bench_target_nop5),
            Target::Nop10 => op(bench_target_nop10),
            Target::UsdtNop => op(bench_usdt_nop),
            Target::UsdtNop5 => op(bench_usdt_nop5),
            Target::UsdtNop10 => op(bench_usdt_nop10),
        }
    }
}

/// Calls the `nop` target once: the cheapest user-space operation the harness
/// can count, used by the baselines.
#[inline(always)]
pub fn call_nop() {
    // A direct `call bench_target_nop`, as the kernel runner's C loop does:
    // called as an extern function, the position-independent binary would
    // load its address from the GOT and call through a register.
    // SAFETY: the target is a leaf that only executes `nop; ret`; the C ABI's
    // caller-saved registers are declared clobbered, as for any call.
    unsafe {
        std::arch::asm!("call {target}", target = sym bench_target_nop, clobber_abi("C"));
    }
}

/// The file offset of `symbol` in the ELF executable at `exe`: the symbol's
/// address, moved from the executable PT_LOAD segment that holds it to the
/// file position that segment is loaded from. This is what a uprobe needs.
/// Found once a process for each (file, symbol): `--probe` sets up every
/// uprobe benchmark, and under emulation each read of the file is slow.
pub fn uprobe_offset(exe: &Path, symbol: &str) -> Result<u64> {
    static FOUND: Mutex<Vec<(PathBuf, String, u64)>> = Mutex::new(Vec::new());
    // Held while the file is read, so that threads asking at once read it once.
    let mut found = FOUND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, _, offset)) = found.iter().find(|(p, s, _)| p == exe && s == symbol) {
        return Ok(*offset);
    }
    let offset = read_uprobe_offset(exe, symbol)?;
    found.push((exe.to_path_buf(), symbol.to_string(), offset));
    Ok(offset)
}

fn read_uprobe_offset(exe: &Path, symbol: &str) -> Result<u64> {
    // The whole file in one read: the symbol and string tables are read in
    // thousands of small pieces otherwise, each a round trip to the host on a
    // guest's shared root filesystem (minutes under emulation).
    let image = std::fs::read(exe)
        .map_err(|e| Error::setup(format!("cannot read {}: {e}", exe.display())))?;
    let elf = ElfFile64::<Endianness, _>::parse(image.as_slice())
        .map_err(|e| Error::setup(format!("{} is not a 64-bit ELF file: {e}", exe.display())))?;
    let endian = elf.endian();

    let address = elf
        .symbols()
        .chain(elf.dynamic_symbols())
        .find(|sym| sym.name() == Ok(symbol))
        .map(|sym| sym.address())
        .ok_or_else(|| {
            Error::setup(format!(
                "symbol {symbol} is not in {}'s symbol table (was the binary stripped?)",
                exe.display()
            ))
        })?;

    elf.elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == PT_LOAD && ph.p_flags(endian) & PF_X != 0)
        .find(|ph| {
            let start = ph.p_vaddr(endian);
            address >= start && address < start + ph.p_filesz(endian)
        })
        .map(|ph| address - ph.p_vaddr(endian) + ph.p_offset(endian))
        .ok_or_else(|| {
            Error::setup(format!(
                "symbol {symbol} at {address:#x} is not in an executable segment of {}",
                exe.display()
            ))
        })
}

/// Reads the bytes at `offset` in `exe` and refuses, with the reason, when they
/// are not `target`'s instruction: a benchmark named after an instruction must
/// measure a probe on that instruction.
pub fn check_instruction(exe: &Path, offset: u64, target: Target) -> Result<()> {
    let expected = target.expected_bytes();
    let mut found = vec![0u8; expected.len()];
    File::open(exe)
        .and_then(|file| file.read_exact_at(&mut found, offset))
        .map_err(|e| Error::setup(format!("cannot read {} at {offset:#x}: {e}", exe.display())))?;
    if found == expected {
        return Ok(());
    }
    Err(Error::setup(format!(
        "{} at offset {offset:#x} of {} starts with {} instead of {} ({}): refusing to probe it",
        target.symbol(),
        exe.display(),
        hex(&found),
        hex(expected),
        target.instruction(),
    )))
}

/// The checked uprobe offset of `target` in `exe`.
pub fn resolve(exe: &Path, target: Target) -> Result<u64> {
    let offset = uprobe_offset(exe, target.symbol())?;
    check_instruction(exe, offset, target)?;
    Ok(offset)
}

/// Where the byte at `file_offset` of the running executable is in this
/// process's memory, from the mappings the kernel made of it
/// (/proc/self/maps): for tests, an address found without the symbol.
#[cfg(test)]
pub(crate) fn runtime_address(file_offset: u64) -> usize {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(SELF_EXE).unwrap().ino();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .find_map(|line| {
            // start-end perms offset dev inode path
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || fields[4].parse::<u64>().ok()? != inode {
                return None;
            }
            let (start, end) = fields[0].split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            let offset = u64::from_str_radix(fields[2], 16).ok()?;
            let into = usize::try_from(file_offset.checked_sub(offset)?).ok()?;
            (into < end - start).then_some(start + into)
        })
        .unwrap_or_else(|| panic!("file offset {file_offset:#x} is mapped nowhere:\n{maps}"))
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SELF: &str = "/proc/self/exe";

    #[test]
    fn every_target_resolves_in_this_binary() {
        for target in Target::ALL {
            let offset = resolve(Path::new(SELF), target).unwrap();
            assert!(offset > 0, "{target:?}");
        }
    }

    #[test]
    fn the_offset_points_at_the_code_that_runs() {
        // The bytes at the file offset must equal the bytes at the function's
        // address in memory: the offset maps the symbol to the running code.
        for target in Target::ALL {
            let offset = uprobe_offset(Path::new(SELF), target.symbol()).unwrap();
            let mut on_disk = [0u8; 8];
            File::open(SELF)
                .unwrap()
                .read_exact_at(&mut on_disk, offset)
                .unwrap();
            let in_memory = target.with_fn(|f| {
                // SAFETY: reading the first bytes of a function in a mapped text segment.
                unsafe { std::slice::from_raw_parts(f as *const u8, 8) }.to_vec()
            });
            assert_eq!(&on_disk[..], &in_memory[..], "{target:?}");
        }
    }

    #[test]
    fn a_wrong_instruction_is_refused() {
        let offset = uprobe_offset(Path::new(SELF), Target::Nop.symbol()).unwrap();
        let err = check_instruction(Path::new(SELF), offset, Target::Push).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("starts with 90 instead of 55"), "{msg}");
        assert_eq!(err.exit_code(), crate::error::exit::SETUP);
    }

    #[test]
    fn an_unknown_symbol_is_a_clear_error() {
        let err = uprobe_offset(Path::new(SELF), "no_such_symbol_here").unwrap_err();
        assert!(err.to_string().contains("not in"), "{err}");
    }

    /// Every byte of `target`'s function as the assembly above writes it,
    /// the `call`'s displacement of `push` left zero (checked apart).
    fn whole_code(target: Target) -> &'static [u8] {
        match target {
            Target::Nop | Target::UsdtNop => &[0x90, 0xc3],
            // push %rbp; mov %rsp,%rbp; call callee; pop %rbp; ret
            Target::Push => &[0x55, 0x48, 0x89, 0xe5, 0xe8, 0, 0, 0, 0, 0x5d, 0xc3],
            Target::Ret => &[0xc3],
            Target::Nop5 => &[0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3],
            Target::UsdtNop5 => &[0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3],
            Target::Nop10 => &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0xc3],
            Target::UsdtNop10 => &[0x90, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0, 0xc3],
        }
    }

    /// Each target is the code it claims, whole (its symbol's size, its
    /// bytes in memory, its first instruction the one it is named by), the
    /// function `with_fn` hands out is that symbol's, and a call runs it: an
    /// execute breakpoint on its first byte counts every call, and the call
    /// returns.
    #[test]
    fn each_target_is_the_code_it_claims_and_a_call_runs_it() {
        let image = std::fs::read(SELF).unwrap();
        let elf = ElfFile64::<Endianness, _>::parse(image.as_slice()).unwrap();
        for target in Target::ALL {
            let code = whole_code(target);
            assert!(code.starts_with(target.expected_bytes()), "{target:?}");
            let size = elf
                .symbols()
                .find(|sym| sym.name() == Ok(target.symbol()))
                .map(|sym| sym.size())
                .unwrap();
            assert_eq!(size, code.len() as u64, "{target:?}: the symbol's size");

            let entry = runtime_address(uprobe_offset(Path::new(SELF), target.symbol()).unwrap());
            assert_eq!(target.with_fn(|f| f as usize), entry, "{target:?}");
            // SAFETY: reading the bytes of a function in the mapped text segment.
            let mut in_memory =
                unsafe { std::slice::from_raw_parts(entry as *const u8, code.len()) }.to_vec();
            if target == Target::Push {
                // The call's displacement leads to a lone `ret`.
                let displacement = i32::from_le_bytes(in_memory[5..9].try_into().unwrap());
                let callee = (entry + 9).wrapping_add_signed(displacement as isize);
                // SAFETY: as above, the callee's one byte.
                assert_eq!(unsafe { *(callee as *const u8) }, 0xc3, "push's callee");
                in_memory[5..9].fill(0);
            }
            assert_eq!(in_memory, code, "{target:?}: the code in memory");

            let counter = crate::perf_event::ExecutionCounter::at(entry)
                .expect("an execute hardware breakpoint (run as root)");
            for _ in 0..3 {
                // SAFETY: every target is a function that takes and returns nothing.
                target.with_fn(|f| unsafe { f() });
            }
            assert_eq!(counter.count(), 3, "{target:?}: three calls ran it");
        }
    }
}
