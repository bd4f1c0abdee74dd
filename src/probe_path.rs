//! Which way the kernel handles a uprobe hit, found from this process itself
//! while the probe is attached: the bytes at the probed address (`int3`, or a
//! `call` the kernel wrote over a 5-byte nop, or the `lea -0x80(%rsp),%rsp;
//! call` it writes over a 10-byte nop) and the special mappings in
//! `/proc/self/maps` (`[uprobes]`, the out-of-line area; `[uprobes-trampoline]`,
//! where an optimized probe calls).
//!
//! On x86-64 a trapping probe is either emulated (the kernel does the
//! instruction's work itself: nops and `push reg`) or single-stepped over a
//! copy of the instruction in the `[uprobes]` area (everything else). The trap
//! byte says the probe traps; which of the two follows is the kernel's rule
//! for the instruction, checked against the mappings: a single-stepped probe
//! that left no `[uprobes]` area is a contradiction, reported as an error.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the kernel handles a hit of one probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbePath {
    /// int3, and the kernel emulates the instruction.
    Emulated,
    /// int3, and the instruction is single-stepped out of line.
    SingleStepped,
    /// No trap: the nop was rewritten into a call to the trampoline (on
    /// a 10-byte nop, after a `lea` that steps over the red zone).
    Optimized,
}

impl ProbePath {
    /// The word in the JSON and the scripts' table.
    pub fn name(self) -> &'static str {
        match self {
            ProbePath::Emulated => "emulated",
            ProbePath::SingleStepped => "single-stepped",
            ProbePath::Optimized => "optimized",
        }
    }

    /// What was seen, for the set-up line.
    pub fn evidence(self) -> &'static str {
        match self {
            ProbePath::Emulated => "int3, instruction emulated",
            ProbePath::SingleStepped => "int3, single-stepped in the [uprobes] XOL area",
            ProbePath::Optimized => "call into [uprobes-trampoline]",
        }
    }
}

const INT3: u8 = 0xcc;
const CALL_REL32: u8 = 0xe8;
/// `lea -0x80(%rsp),%rsp`, which an optimized 10-byte nop starts with.
const LEA_RSP_RED_ZONE: [u8; 5] = [0x48, 0x8d, 0x64, 0x24, 0x80];
/// The bytes read at a probed address: a 10-byte nop's, the longest
/// instruction probed.
const PROBED_BYTES: usize = 10;

/// A range of this process's address space, as `/proc/self/maps` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// The named special mappings of `maps` text (`[uprobes]`, `[vdso]`, ...).
pub fn special_mappings(maps: &str) -> Vec<Mapping> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let name = fields.nth(4)?;
            if !name.starts_with('[') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                name: name.to_string(),
            })
        })
        .collect()
}

/// Whether the kernel emulates `instruction` on x86-64 rather than
/// single-stepping it: nops of any length (0x90, 0x66 0x90, 0x0f 0x1f /0) and
/// `push` of a general register (0x50-0x57, with a REX.B prefix for r8-r15).
pub fn is_emulated(instruction: &[u8]) -> bool {
    match instruction {
        [0x90, ..] | [0x66, 0x90, ..] | [0x0f, 0x1f, ..] | [0x66, 0x0f, 0x1f, ..] => true,
        // The 10-byte nop (a CS prefix): emulated where the kernel probes it.
        [0x66, 0x2e, 0x0f, 0x1f, ..] => true,
        [op, ..] if (0x50..=0x57).contains(op) => true,
        [0x41, op, ..] if (0x50..=0x57).contains(op) => true,
        _ => false,
    }
}

/// Judges the path from what is at the probed address now (`current`, at
/// least 5 bytes, 10 for a 10-byte nop, at address `address`), the
/// instruction that was there (`original`), and the special mappings.
pub fn classify(
    address: u64,
    current: &[u8],
    original: &[u8],
    mappings: &[Mapping],
) -> Result<ProbePath> {
    let optimized = |call_at: u64, rel: &[u8]| {
        let rel = i32::from_le_bytes([rel[0], rel[1], rel[2], rel[3]]);
        let target = call_at.wrapping_add(5).wrapping_add_signed(i64::from(rel));
        if mappings
            .iter()
            .any(|m| m.name == "[uprobes-trampoline]" && m.start <= target && target < m.end)
        {
            Ok(ProbePath::Optimized)
        } else {
            Err(Error::runtime(format!(
                "the probed nop became a call to {target:#x}, which is not in a \
                 [uprobes-trampoline] mapping"
            )))
        }
    };
    match current {
        [CALL_REL32, rel @ ..] if original.first() != Some(&CALL_REL32) && rel.len() >= 4 => {
            optimized(address, rel)
        }
        [lea @ .., CALL_REL32, a, b, c, d]
            if lea == LEA_RSP_RED_ZONE && !original.starts_with(&LEA_RSP_RED_ZONE) =>
        {
            optimized(address + 5, &[*a, *b, *c, *d])
        }
        [INT3, ..] => {
            if is_emulated(original) {
                Ok(ProbePath::Emulated)
            } else if mappings.iter().any(|m| m.name == "[uprobes]") {
                Ok(ProbePath::SingleStepped)
            } else {
                Err(Error::runtime(
                    "the probe traps on an instruction the kernel single-steps, yet this \
                     process has no [uprobes] XOL area",
                ))
            }
        }
        _ if current.starts_with(original) => Err(Error::runtime(
            "the probed instruction is unchanged: the probe is not installed in this process",
        )),
        _ => Err(Error::runtime(format!(
            "unexpected bytes at the probed address: {current:02x?}"
        ))),
    }
}

/// The path of the probe on the function at `function`, whose first
/// instruction was `original`. Call it while the probe is attached, after it
/// has been hit (the kernel optimizes a probe on its first hits).
pub fn detect(function: unsafe extern "C" fn(), original: &[u8]) -> Result<ProbePath> {
    let address = function as usize as u64;
    let mut current = [0u8; PROBED_BYTES];
    for (i, byte) in current.iter_mut().enumerate() {
        // SAFETY: the targets are 16-byte aligned functions in this binary's
        // text section, followed by more of it, so their first 10 bytes are
        // readable; volatile because the kernel rewrites them behind the
        // compiler's back.
        *byte = unsafe { std::ptr::read_volatile((function as *const u8).add(i)) };
    }
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| Error::runtime(format!("cannot read /proc/self/maps: {e}")))?;
    classify(address, &current, original, &special_mappings(&maps))
}

/// The path of a probe on `address` in a file-backed mapping (a library
/// function), the original instruction read from the file behind it.
pub fn detect_at(address: u64) -> Result<ProbePath> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| Error::runtime(format!("cannot read /proc/self/maps: {e}")))?;
    let (path, file_offset) = maps
        .lines()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let (start, end) = (
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            );
            let offset = u64::from_str_radix(fields.nth(1)?, 16).ok()?;
            let path = fields.nth(2)?;
            (start <= address && address < end && path.starts_with('/'))
                .then(|| (path.to_string(), address - start + offset))
        })
        .ok_or_else(|| Error::runtime(format!("{address:#x} is in no file mapping")))?;
    let mut original = [0u8; PROBED_BYTES];
    std::fs::File::open(&path)
        .and_then(|file| {
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut original, file_offset)
        })
        .map_err(|e| Error::runtime(format!("cannot read {path} at {file_offset:#x}: {e}")))?;
    let mut current = [0u8; PROBED_BYTES];
    for (i, byte) in current.iter_mut().enumerate() {
        // SAFETY: the address is inside a mapped executable range (a probe
        // site 10 bytes before its end at the latest); volatile
        // because the kernel rewrites it behind the compiler's back.
        *byte = unsafe { std::ptr::read_volatile((address as *const u8).add(i)) };
    }
    // endbr64 (f3 0f 1e fa) starts most library functions built with CET;
    // the kernel emulates it as a nop.
    classify(address, &current, &original, &special_mappings(&maps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps() -> Vec<Mapping> {
        special_mappings(
            "7f0000000000-7f0000001000 r-xp 00000000 00:00 0                          [uprobes]\n\
             7f0000002000-7f0000003000 r-xp 00000000 00:00 0                          [uprobes-trampoline]\n\
             55d000000000-55d000001000 r-xp 00001000 08:01 123                        /usr/bin/bench\n",
        )
    }

    #[test]
    fn special_mappings_are_parsed() {
        let m = maps();
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].name, "[uprobes-trampoline]");
        assert_eq!(m[1].start, 0x7f0000002000);
    }

    #[test]
    fn each_path_is_recognised() {
        let nop5 = [0x0f, 0x1f, 0x44, 0x00, 0x00];
        let at = 0x7f0000000000u64 - 0x1000;
        // call rel32 from `at` to the trampoline's first byte.
        let rel = (0x7f0000002000u64 - (at + 5)) as i32;
        let mut call = vec![0xe8];
        call.extend_from_slice(&rel.to_le_bytes());
        assert_eq!(
            classify(at, &call, &nop5, &maps()).unwrap(),
            ProbePath::Optimized
        );
        let trap = [0xcc, 0x1f, 0x44, 0x00, 0x00];
        assert_eq!(
            classify(at, &trap, &nop5, &maps()).unwrap(),
            ProbePath::Emulated
        );
        assert_eq!(
            classify(at, &[0xcc, 0, 0, 0, 0], &[0x55], &maps()).unwrap(),
            ProbePath::Emulated
        );
        assert_eq!(
            classify(at, &[0xcc, 0, 0, 0, 0], &[0xc3], &maps()).unwrap(),
            ProbePath::SingleStepped
        );
        // A 10-byte nop: lea -0x80(%rsp),%rsp, then the call from at + 5.
        let rel = (0x7f0000002000u64 - (at + 10)) as i32;
        let mut lea_call = vec![0x48, 0x8d, 0x64, 0x24, 0x80, 0xe8];
        lea_call.extend_from_slice(&rel.to_le_bytes());
        let nop10 = crate::targets::NOP10;
        assert_eq!(
            classify(at, &lea_call, &nop10, &maps()).unwrap(),
            ProbePath::Optimized
        );
        let mut trap10 = nop10;
        trap10[0] = 0xcc;
        assert_eq!(
            classify(at, &trap10, &nop10, &maps()).unwrap(),
            ProbePath::Emulated
        );
    }

    #[test]
    fn contradictions_are_errors_not_guesses() {
        // Single-stepped without an XOL area.
        assert!(classify(0x1000, &[0xcc, 0, 0, 0, 0], &[0xc3], &[]).is_err());
        // A call that goes elsewhere.
        assert!(classify(0x1000, &[0xe8, 0, 0, 0, 0], &[0x0f, 0x1f], &maps()).is_err());
        // Not attached.
        assert!(classify(0x1000, &[0x90, 0xc3, 0, 0, 0], &[0x90], &maps()).is_err());
    }
}
