//! The crypto kfuncs' family, the kernel runner's `crypto-encrypt` and
//! `crypto-decrypt`: a syscall program makes a crypto context with
//! bpf_crypto_ctx_create once, then producers run a tc program on a packet
//! with BPF_PROG_TEST_RUN, 64 repetitions a call, each encrypting (or
//! decrypting) the packet and counting itself.

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::ProgramInput;

use super::{Benchmark, Info};
use crate::bpf::skel::crypto::{CryptoSkel, CryptoSkelBuilder};
use crate::bpf::{self, HitCounters, Needs};
use crate::channels::Readings;
use crate::config::{BenchOption, NumberOption, RunConfig, TextOption};
use crate::error::{Error, Result};
use crate::kernel;
use crate::runner::{ProducerCtx, SetUp, Workload};

/// The packet's length: a tc program's test run takes an Ethernet header at
/// least (upstream's 1 to 13 fail there), and the buffer it is written into
/// holds 256 bytes.
pub const CRYPTO_LEN: NumberOption = NumberOption {
    long: "crypto-len",
    short: None,
    value_name: "CRYPTO_LEN",
    help: "Set the length of crypto buffer",
    default: 16,
    min: ETH_HLEN,
    max: 256,
    why_max: "a tc program's test run takes a packet of an Ethernet header at least, and the \
              destination buffer holds 256 bytes",
};

pub const CRYPTO_CIPHER: TextOption = TextOption {
    long: "crypto-cipher",
    value_name: "CRYPTO_CIPHER",
    help: "Set the cipher to use",
    default: "ecb(aes)",
    max_len: 32,
    choices: &[],
};

/// Repetitions of the program per BPF_PROG_TEST_RUN call, as the kernel
/// runner's producer asks.
const REPEAT: u32 = 64;

/// BPF_PROG_TEST_RUN of a tc program takes at least an Ethernet header.
const ETH_HLEN: u64 = 14;

/// The key the kernel runner uses (16 bytes: AES-128).
const KEY: &[u8; 16] = b"12345678testtest";

/// The kfunc whose absence says the kernel has no crypto kfuncs.
const KFUNC: &str = "bpf_crypto_ctx_create";

pub static BENCHES: &[&dyn Benchmark] = &[
    &Crypto {
        info: info(
            "crypto-encrypt",
            "bpf_crypto_encrypt of a packet in a tc program run by BPF_PROG_TEST_RUN",
        ),
        program: "drive_encrypt",
        verb: "encrypt",
    },
    &Crypto {
        info: info(
            "crypto-decrypt",
            "bpf_crypto_decrypt of a packet in a tc program run by BPF_PROG_TEST_RUN",
        ),
        program: "drive_decrypt",
        verb: "decrypt",
    },
];

const fn info(name: &'static str, description: &'static str) -> Info {
    Info::hits(name, description)
        .needs(Needs::RunProgram)
        .untimed(
            "one producer call is a BPF_PROG_TEST_RUN of 64 repetitions; a call's time is \
             a batch's, not one operation's",
        )
        .options(&[
            BenchOption::Number(CRYPTO_LEN),
            BenchOption::Text(CRYPTO_CIPHER),
        ])
}

struct Crypto {
    info: Info,
    /// The tc program's name in `bpf/crypto.bpf.c`.
    program: &'static str,
    /// `encrypt` or `decrypt`, for messages.
    verb: &'static str,
}

/// The packet: printable digits and a final NUL, as the kernel runner's
/// (whose digits are random; the cipher's cost does not depend on them).
fn packet(len: usize) -> Vec<u8> {
    let mut packet: Vec<u8> = (0..len).map(|i| b'1' + (i * 7 % 9) as u8).collect();
    if let Some(last) = packet.last_mut() {
        *last = 0;
    }
    packet
}

/// A kernel errno (negative, as BPF stores it) by its name.
fn errno_text(status: i32) -> String {
    let code = status.saturating_neg();
    let name = match code {
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOMEM => "ENOMEM",
        libc::EFAULT => "EFAULT",
        _ => return format!("errno {code}"),
    };
    name.to_string()
}

impl Benchmark for Crypto {
    fn info(&self) -> &Info {
        &self.info
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let len = config.params.number(&CRYPTO_LEN);
        let cipher = config.params.text(&CRYPTO_CIPHER);
        let mut storage = bpf::ObjectStorage::new();
        // SAFETY: declared before `open`, and the skeleton goes into an `Owned`
        // with it.
        let mut open = unsafe { storage.open::<CryptoSkelBuilder>("the crypto BPF object")? };
        let rodata = bpf::rodata(open.maps.rodata_data.as_deref_mut(), "the crypto object")?;
        rodata.len = u32::try_from(len).map_err(|_| Error::usage("--crypto-len is too large"))?;
        for mut prog in open.open_object_mut().progs_mut() {
            if prog.name() == "drive_crypto_setup" || prog.name() == self.program {
                prog.set_autoload(true);
            }
        }
        let mut skel = open.load().map_err(|e| load_refused(&e))?;
        fill_params(&mut skel, cipher)?;
        let skel = bpf::Owned::new(skel, storage);
        let program = |name: &str| {
            skel.object()
                .progs_mut()
                .find(|p| p.name() == name)
                .ok_or_else(|| Error::setup(format!("the crypto object has no program {name}")))
        };
        program("drive_crypto_setup")?
            .test_run(ProgramInput::default())
            .map_err(|e| Error::setup(format!("running the crypto set-up program failed: {e}")))?;
        match status(&skel) {
            0 => {}
            status => return Err(context_refused(cipher, status)),
        }
        let packet = packet(len as usize);
        // One operation first: a length the cipher refuses is said now, not
        // counted as operations that did nothing.
        let input = ProgramInput {
            data_in: Some(&packet),
            ..Default::default()
        };
        program(self.program)?.test_run(input).map_err(|e| {
            Error::setup(format!("BPF_PROG_TEST_RUN of {} failed: {e}", self.program))
        })?;
        match status(&skel) {
            0 => {}
            status => {
                return Err(Error::usage(format!(
                    "bpf_crypto_{} refused a {len}-byte packet with {cipher} ({}): the length \
                     must be whole blocks of the cipher (16 bytes for ecb(aes)), and the \
                     cipher must take no IV (none is given, as in the kernel runner)",
                    self.verb,
                    errno_text(status)
                )))
            }
        }
        // SAFETY: `hits` is counters.h's array, and the skeleton is kept in
        // the workload beside the counters, dropped after them.
        let hits =
            unsafe { HitCounters::new(skel.maps.bss_data.as_deref().map(|bss| &bss.hits[..]))? };
        Ok(SetUp::producers(CryptoWorkload {
            hits,
            program: self.program,
            packet,
            skel,
        }))
    }
}

/// The context's parameters, in the object's .bss: the set-up program
/// passes them to bpf_crypto_ctx_create.
fn fill_params(skel: &mut CryptoSkel<'static>, cipher: &str) -> Result<()> {
    let bss = skel
        .maps
        .bss_data
        .as_deref_mut()
        .ok_or_else(|| Error::setup("the crypto object's .bss is not memory-mapped"))?;
    let params = &mut bss.params;
    for (to, from) in params.r#type.iter_mut().zip(b"skcipher") {
        *to = *from as i8;
    }
    // The option's range keeps the name within the 128 bytes, NUL included.
    for (to, from) in params.algo.iter_mut().zip(cipher.bytes()) {
        *to = from as i8;
    }
    params.key[..KEY.len()].copy_from_slice(KEY);
    params.key_len = KEY.len() as u32;
    params.authsize = 0;
    Ok(())
}

/// The status the last program run left: 0 or a negative errno.
fn status(skel: &CryptoSkel<'static>) -> i32 {
    skel.maps.bss_data.as_deref().map_or(0, |bss| {
        // SAFETY: an aligned field of the mapped .bss; the kernel wrote it in
        // a finished system call.
        unsafe { std::ptr::read_volatile(&bss.status) }
    })
}

/// Why the kernel refused the programs: no crypto kfuncs, or another reason.
fn load_refused(err: &libbpf_rs::Error) -> Error {
    if kernel::btf_has_func(KFUNC) == Some(false) {
        return Error::unsupported(kernel::needs_linux(
            &format!("the {KFUNC} kfunc needs"),
            "6.10",
        ));
    }
    bpf::load_error("the crypto programs", err)
}

/// Why bpf_crypto_ctx_create made no context.
fn context_refused(cipher: &str, status: i32) -> Error {
    match -status {
        libc::EOPNOTSUPP | libc::ENOENT => Error::unsupported(format!(
            "the kernel has no skcipher {cipher} for BPF (bpf_crypto_ctx_create: {}): a crypto \
             module missing, or a cipher it does not know",
            errno_text(status)
        )),
        _ => Error::setup(format!(
            "bpf_crypto_ctx_create refused {cipher} with a {}-byte key ({})",
            KEY.len(),
            errno_text(status)
        )),
    }
}

/// Producers run the tc program on the packet; the program counts.
struct CryptoWorkload {
    hits: HitCounters,
    /// The tc program's name in `skel`.
    program: &'static str,
    packet: Vec<u8>,
    skel: bpf::Owned<CryptoSkel<'static>>,
}

impl Workload for CryptoWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let program = self
            .skel
            .object()
            .progs_mut()
            .find(|p| p.name() == self.program)
            .ok_or_else(|| {
                Error::setup(format!("the crypto object has no program {}", self.program))
            })?;
        ctx.try_run(|| {
            let input = ProgramInput {
                data_in: Some(&self.packet),
                repeat: REPEAT,
                ..Default::default()
            };
            program.test_run(input).map_err(|e| {
                Error::runtime(format!(
                    "BPF_PROG_TEST_RUN of {} failed: {e:#}",
                    self.program
                ))
            })?;
            Ok(u64::from(REPEAT))
        })
    }

    fn read(&self, _ops: u64) -> Readings {
        self.hits.readings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packet_is_digits_and_a_nul() {
        let packet = packet(16);
        assert_eq!(packet.len(), 16);
        assert!(packet[..15].iter().all(u8::is_ascii_digit));
        assert_eq!(packet[15], 0);
        assert_eq!(errno_text(-libc::EOPNOTSUPP), "EOPNOTSUPP");
        assert_eq!(errno_text(-200), "errno 200");
    }
}
