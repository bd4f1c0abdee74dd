//! The red zone, checked: whether a probe's path leaves the 128 bytes below
//! `rsp` alone, which the x86-64 ABI lets a leaf function keep data in
//! without moving `rsp`. An optimized uprobe on a 5-byte nop is a `call`
//! into a trampoline, which pushes its return address (and the trampoline
//! three registers) right there; the 10-byte nop's optimization steps `rsp`
//! over the red zone first (`lea -0x80(%rsp),%rsp; call`).
//!
//! Each check is a leaf function in assembly that fills its red zone with a
//! pattern, runs one probe site (the instruction of a probe path), and
//! copies the red zone out for comparison. A probe attached at the site's
//! symbol makes the site's hits go through the kernel's path for it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::probe_path::{self, ProbePath};
use crate::targets::{self, Target, SELF_EXE};

/// The red zone's size in bytes (x86-64 System V ABI).
pub const RED_ZONE: usize = 128;

// Every check takes the pattern (rdi) and where to copy the red zone after
// the site (rsi), 128 bytes each, and touches the stack only through its
// red zone. Each site is 16-byte aligned, so that a 10-byte nop never
// crosses a page (the kernel optimizes none that does).
macro_rules! red_zone_check {
    ($name:literal, $($site:literal),+) => {
        std::arch::global_asm!(
            ".pushsection .text.bench_red_zone,\"ax\",@progbits",
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            "    xor ecx, ecx",
            "2:  mov rax, [rdi + rcx]",
            "    mov [rsp + rcx - 128], rax",
            "    add rcx, 8",
            "    cmp rcx, 128",
            "    jne 2b",
            "    mov rax, rbp",
            "    mov rbp, [rdi + 120]",
            ".p2align 4",
            concat!(".globl ", $name, "_site"),
            concat!($name, "_site:"),
            $($site,)+
            "    mov rbp, rax",
            "    xor ecx, ecx",
            "3:  mov rax, [rsp + rcx - 128]",
            "    mov [rsi + rcx], rax",
            "    add rcx, 8",
            "    cmp rcx, 128",
            "    jne 3b",
            "    ret",
            concat!(".size ", $name, ", .-", $name),
            ".popsection",
        );
    };
}

// `rbp` holds the pattern's top 8 bytes at the site (saved in rax around
// it), so that the push site writes what is already there: an emulated
// `push %rbp` that writes the right value at the right place leaves the
// red zone as it was.
red_zone_check!("bench_red_zone_nop", "    nop");
red_zone_check!("bench_red_zone_push", "    push rbp", "    pop rbp");
red_zone_check!(
    "bench_red_zone_nop5",
    "    .byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
);
red_zone_check!(
    "bench_red_zone_nop10",
    "    .byte 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00"
);
// A site that writes below rsp itself (a `call` pushes its return address
// there): the check's own test that a clobber is seen, never probed.
red_zone_check!("bench_red_zone_call", "    call bench_red_zone_callee");

// The single-stepped site is a `ret`, which leaves the function: the inner
// function fills its red zone and returns through the site; the outer one
// copies that zone (8 bytes below its own rsp, past the return address its
// call pushed) out at once.
std::arch::global_asm!(
    ".pushsection .text.bench_red_zone,\"ax\",@progbits",
    ".p2align 4",
    ".hidden bench_red_zone_callee",
    ".globl bench_red_zone_callee",
    "bench_red_zone_callee:",
    "    ret",
    ".p2align 4",
    ".globl bench_red_zone_ret",
    ".type bench_red_zone_ret,@function",
    "bench_red_zone_ret:",
    "    call 4f",
    "    xor ecx, ecx",
    "3:  mov rax, [rsp + rcx - 136]",
    "    mov [rsi + rcx], rax",
    "    add rcx, 8",
    "    cmp rcx, 128",
    "    jne 3b",
    "    ret",
    "4:  xor ecx, ecx",
    "2:  mov rax, [rdi + rcx]",
    "    mov [rsp + rcx - 128], rax",
    "    add rcx, 8",
    "    cmp rcx, 128",
    "    jne 2b",
    ".p2align 4",
    ".globl bench_red_zone_ret_site",
    "bench_red_zone_ret_site:",
    "    ret",
    ".size bench_red_zone_ret, .-bench_red_zone_ret",
    ".popsection",
);

extern "C" {
    fn bench_red_zone_nop(pattern: *const u8, out: *mut u8);
    fn bench_red_zone_push(pattern: *const u8, out: *mut u8);
    fn bench_red_zone_ret(pattern: *const u8, out: *mut u8);
    fn bench_red_zone_nop5(pattern: *const u8, out: *mut u8);
    fn bench_red_zone_nop10(pattern: *const u8, out: *mut u8);
    #[cfg(test)]
    fn bench_red_zone_call(pattern: *const u8, out: *mut u8);
    fn bench_red_zone_nop_site();
    fn bench_red_zone_push_site();
    fn bench_red_zone_ret_site();
    fn bench_red_zone_nop5_site();
    fn bench_red_zone_nop10_site();
    #[cfg(test)]
    fn bench_red_zone_call_site();
}

/// A red-zone check's probe site, by the instruction probed there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Nop,
    Push,
    Ret,
    Nop5,
    Nop10,
    /// Not a probe site: a `call`, which clobbers the red zone itself.
    #[cfg(test)]
    Call,
}

impl Site {
    /// The site of the instruction a probe on `target` lands on; a USDT
    /// site's by where it was attached (`at_second`: on its second
    /// instruction, as libbpf does where the kernel has the uprobe syscall).
    pub fn of(target: Target, at_second: bool) -> Site {
        match target {
            Target::Nop => Site::Nop,
            Target::Push => Site::Push,
            Target::Ret => Site::Ret,
            Target::Nop5 => Site::Nop5,
            Target::Nop10 => Site::Nop10,
            Target::UsdtNop => Site::Nop,
            Target::UsdtNop5 if at_second => Site::Nop5,
            Target::UsdtNop10 if at_second => Site::Nop10,
            Target::UsdtNop5 | Target::UsdtNop10 => Site::Nop,
        }
    }

    /// The symbol of the site's instruction, where a probe is attached.
    pub fn symbol(self) -> &'static str {
        match self {
            Site::Nop => "bench_red_zone_nop_site",
            Site::Push => "bench_red_zone_push_site",
            Site::Ret => "bench_red_zone_ret_site",
            Site::Nop5 => "bench_red_zone_nop5_site",
            Site::Nop10 => "bench_red_zone_nop10_site",
            #[cfg(test)]
            Site::Call => "bench_red_zone_call_site",
        }
    }

    /// The bytes the site's instruction starts with.
    pub fn instruction(self) -> &'static [u8] {
        match self {
            Site::Nop => &[0x90],
            Site::Push => &[0x55],
            Site::Ret => &[0xc3],
            Site::Nop5 => &[0x0f, 0x1f, 0x44, 0x00, 0x00],
            Site::Nop10 => &crate::targets::NOP10,
            #[cfg(test)]
            Site::Call => &[0xe8],
        }
    }

    /// Where the site's instruction is in this process.
    fn address(self) -> u64 {
        let site: unsafe extern "C" fn() = match self {
            Site::Nop => bench_red_zone_nop_site,
            Site::Push => bench_red_zone_push_site,
            Site::Ret => bench_red_zone_ret_site,
            Site::Nop5 => bench_red_zone_nop5_site,
            Site::Nop10 => bench_red_zone_nop10_site,
            #[cfg(test)]
            Site::Call => bench_red_zone_call_site,
        };
        site as usize as u64
    }

    fn check_fn(self) -> unsafe extern "C" fn(*const u8, *mut u8) {
        match self {
            Site::Nop => bench_red_zone_nop,
            Site::Push => bench_red_zone_push,
            Site::Ret => bench_red_zone_ret,
            Site::Nop5 => bench_red_zone_nop5,
            Site::Nop10 => bench_red_zone_nop10,
            #[cfg(test)]
            Site::Call => bench_red_zone_call,
        }
    }
}

/// What a probe's path did to the red zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "red_zone")]
pub enum RedZone {
    Intact,
    /// So many of its 128 bytes differed after the site.
    Clobbered {
        bytes: u32,
    },
}

impl RedZone {
    /// The words of the `probe path:` line and of `--probe`.
    pub fn words(self) -> String {
        match self {
            RedZone::Intact => "red zone intact".to_string(),
            RedZone::Clobbered { bytes } => format!("red zone clobbered ({bytes} bytes)"),
        }
    }
}

/// A red-zone check's outcome: what the red zone looked like after the
/// probed site, and the path the kernel took there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedZoneFound {
    pub path: ProbePath,
    pub red_zone: RedZone,
}

/// The red zone under a probe on `site`: `attach` attaches the benchmark's
/// program at the site's file offset (in [`SELF_EXE`]); the site is hit, its
/// red zone compared and its path read while the probe is there, and the
/// probe dropped.
pub fn found<L>(site: Site, attach: impl FnOnce(usize) -> Result<L>) -> Result<RedZoneFound> {
    let exe = Path::new(SELF_EXE);
    let offset = targets::uprobe_offset(exe, site.symbol())?;
    let offset = usize::try_from(offset).map_err(|_| {
        crate::error::Error::setup(format!("offset {offset:#x} does not fit in usize"))
    })?;
    let probe = attach(offset)?;
    let red_zone = check(site);
    let path = probe_path::detect_at(site.address());
    drop(probe);
    Ok(RedZoneFound {
        path: path?,
        red_zone,
    })
}

/// Hits of the site before the red zone is looked at: the kernel optimizes
/// a probe on its first hit, and the check is of the path later hits take.
const WARM_HITS: usize = 4;

/// Runs `site`'s check (with a probe attached at `site.symbol()`, or none):
/// a few hits, then two patterns that differ in every byte, so that a byte
/// written with the value one pattern happened to hold still shows in the
/// other. The bytes that differed in either.
pub fn check(site: Site) -> RedZone {
    let patterns: [[u8; RED_ZONE]; 2] = [
        std::array::from_fn(|i| 0xa5 ^ (i as u8)),
        std::array::from_fn(|i| !(0xa5 ^ (i as u8))),
    ];
    let mut out = [0u8; RED_ZONE];
    for _ in 0..WARM_HITS {
        // SAFETY: the check reads 128 bytes from the pattern and writes 128
        // to `out`, and touches the stack only in its own red zone.
        unsafe { site.check_fn()(patterns[0].as_ptr(), out.as_mut_ptr()) };
    }
    let mut differed = [false; RED_ZONE];
    for pattern in &patterns {
        // SAFETY: as above.
        unsafe { site.check_fn()(pattern.as_ptr(), out.as_mut_ptr()) };
        for (i, (seen, put)) in out.iter().zip(pattern).enumerate() {
            differed[i] |= seen != put;
        }
    }
    match differed.iter().filter(|&&d| d).count() {
        0 => RedZone::Intact,
        n => RedZone::Clobbered { bytes: n as u32 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const SITES: [Site; 5] = [Site::Nop, Site::Push, Site::Ret, Site::Nop5, Site::Nop10];

    /// Unprobed, every site leaves its red zone alone: a clobber the
    /// check reports is the probe's path, not the check's.
    #[test]
    fn an_unprobed_site_leaves_the_red_zone_intact() {
        for site in SITES {
            assert_eq!(check(site), RedZone::Intact, "{site:?}");
        }
    }

    /// The check sees a clobber: a `call` at the site pushes its 8-byte
    /// return address into the red zone.
    #[test]
    fn a_call_at_the_site_is_seen_as_a_clobber() {
        assert_eq!(check(Site::Call), RedZone::Clobbered { bytes: 8 });
    }

    /// Each site's symbol is where its instruction is, in the file a probe
    /// is attached to.
    #[test]
    fn each_site_symbol_is_its_instruction() {
        let exe = Path::new(crate::targets::SELF_EXE);
        for site in SITES {
            let offset = crate::targets::uprobe_offset(exe, site.symbol()).unwrap();
            let mut found = vec![0u8; site.instruction().len()];
            std::os::unix::fs::FileExt::read_exact_at(
                &std::fs::File::open(exe).unwrap(),
                &mut found,
                offset,
            )
            .unwrap();
            assert_eq!(found, site.instruction(), "{site:?}");
            assert_eq!(offset % 16, 0, "{site:?}: the site is 16-byte aligned");
        }
    }
}
