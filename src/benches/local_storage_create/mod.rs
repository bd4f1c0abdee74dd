//! The local-storage-create benchmark, under the kernel runner's name and
//! options (`benchs/bench_local_storage_create.c`): how fast BPF local
//! storage is created for new owners. Each producer call creates a batch of
//! `--batch-size` owners and then releases them: IPv6 UDP sockets
//! (`--storage-type socket`, the default) or threads that return at once
//! (`task`), joined after the batch. A BPF program that sees each new owner
//! creates its storage (`bpf/local_storage_create.bpf.c`), and a raw_tp
//! program counts the whole system's kmallocs meanwhile.
//!
//! The creating program is upstream's where the kernel takes it: a
//! sleepable LSM program on socket_post_create, a tp_btf program on
//! sched_process_fork. Where LSM programs are refused (this host: EPERM) or
//! never run, a cgroup/sock_create program on bench's own cgroup creates the
//! same socket storage for the same sockets; the run says which in its
//! header, `--probe` and the result file.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use libbpf_rs::Link;

mod creators;

use creators::{attach, Skel};

use super::memory;
use super::{Benchmark, Info};
use crate::bpf::{HitCounters, Needs};
use crate::channels::{Channel, Readings, Slot, HITS};
use crate::config::{BenchOption, NumberOption, RunConfig, TextOption};
use crate::error::{Error, Result};
use crate::figures::{self, Agg, Better, Figure, Sec, Show, Value};
use crate::kernel;
use crate::lines::{self, Cond, Fixed, Line, Lines, Missing, Num, Piece};
use crate::runner::{ProducerCtx, SetUp, Workload};

/// The most owners one batch holds at once: each is an open socket or a
/// live thread until the batch ends.
const MAX_BATCH: u64 = 65_536;

pub const BATCH_SIZE: NumberOption = NumberOption {
    long: "batch-size",
    short: None,
    value_name: "BATCH_SIZE",
    help: "The number of storage creations in each batch (local-storage-create); the \
           producers' batches within the threads or files the kernel allows now",
    default: 32,
    min: 1,
    max: MAX_BATCH,
    why_max: "a batch holds all its sockets or threads at once",
};
pub const STORAGE_TYPE: TextOption = TextOption {
    long: "storage-type",
    value_name: "STORAGE_TYPE",
    help: "The type of local storage to test (socket or task)",
    default: "socket",
    max_len: 16,
    choices: &[],
};

static OPTIONS: [BenchOption; 2] = [
    BenchOption::Number(BATCH_SIZE),
    BenchOption::Text(STORAGE_TYPE),
];

/// Storages the BPF program created.
const CREATES: Channel = Channel {
    unit: "creates",
    about: "storages the BPF program created, one a new socket or thread",
    ..HITS
};
/// Storages created per second: upstream's `creates`.
const CREATES_FIGURE: Figure = Figure {
    unit: "creates/s",
    ..figures::HITS
};
const KMALLOCS_ALL: Channel = Channel::counter(
    "kmallocs",
    "kmallocs",
    "the whole system's kmallocs while the storages were created",
)
.was(Slot::Drops);
const OWNER_ERRORS: Channel = Channel::counter(
    "owner errors",
    "owners",
    "sockets or threads the producers failed to create (socket() or pthread_create() failed)",
);
const CREATE_ERRORS: Channel = Channel::counter(
    "create errors",
    "storages",
    "storages the BPF program failed to create",
);
const CHANNELS: [Channel; 4] = [CREATES, KMALLOCS_ALL, OWNER_ERRORS, CREATE_ERRORS];

const CREATES_RATE: Sec = Sec::Rate(&CREATES);
const KMALLOCS_RATE: Sec = Sec::Rate(&KMALLOCS_ALL);

/// The whole system's kmallocs per storage created, lower is better: the
/// kernel runner's `kmallocs/create`, the ratio of the run's totals.
pub const KMALLOCS: Figure = Figure {
    name: "kmallocs",
    unit: "kmallocs/create",
    better: Better::Lower,
    show: Show::Decimals(2),
    value: Value::OfRun(&Agg::Div(
        &Agg::Total(&Sec::Value(&KMALLOCS_ALL)),
        &Agg::Total(&Sec::Value(&CREATES)),
    )),
};

const KILO_8: Num = Num::fixed(8, 3).per(1e3);
/// As upstream's `%.2f` of a double: `-nan` for 0/0, `inf` for x/0.
const fn per_create(width: usize) -> Num {
    Num::fixed(width, 2).missing(Missing::CNan)
}
const OWNER_TOTAL: Agg = Agg::Total(&Sec::Value(&OWNER_ERRORS));
const CREATE_TOTAL: Agg = Agg::Total(&Sec::Value(&CREATE_ERRORS));

/// The kernel runner's local-storage-create lines: creations in k/s, per
/// producer, and kmallocs per creation; after the Summary (and a fixed
/// run's block), the failed creations, if any.
const LINES: Lines = Lines {
    tick: &[
        lines::ITER[0],
        lines::ITER[1],
        lines::ITER[2],
        lines::ITER[3],
        Piece::Text("us): creates "),
        Piece::Num(Agg::Mean(&CREATES_RATE), KILO_8),
        Piece::Text("k/s ("),
        Piece::Num(
            Agg::Div(&Agg::Mean(&CREATES_RATE), &Agg::Producers),
            Num::fixed(7, 3).per(1e3),
        ),
        Piece::Text("k/prod), "),
        Piece::Num(
            Agg::Div(&Agg::Mean(&KMALLOCS_RATE), &Agg::Mean(&CREATES_RATE)),
            per_create(3),
        ),
        Piece::Text(" kmallocs/create"),
    ],
    summary: &[Line::Always(&[
        Piece::Text("Summary: creates "),
        Piece::Num(Agg::Mean(&CREATES_RATE), KILO_8),
        Piece::Text(" \u{b1} "),
        Piece::Num(Agg::Sd(&CREATES_RATE), Num::fixed(5, 3).per(1e3)),
        Piece::Text("k/s ("),
        Piece::Num(
            Agg::Div(&Agg::Mean(&CREATES_RATE), &Agg::Producers),
            Num::fixed(7, 3).per(1e3),
        ),
        Piece::Text("k/prod), "),
        Piece::Num(
            Agg::Div(&Agg::Mean(&KMALLOCS_RATE), &Agg::Mean(&CREATES_RATE)),
            per_create(4),
        ),
        Piece::Text(" kmallocs/create"),
        Piece::Notes,
    ])],
    after_summary: &[Line::When(
        Cond::Any(&[Cond::Positive(OWNER_TOTAL), Cond::Positive(CREATE_TOTAL)]),
        &[
            Piece::Choose(
                Cond::TextIs(&STORAGE_TYPE, "task"),
                "pthread_create",
                "socket",
            ),
            Piece::Text("() errors "),
            Piece::Num(OWNER_TOTAL, Num::whole(0)),
            Piece::Text(" create_errs "),
            Piece::Num(CREATE_TOTAL, Num::whole(0)),
        ],
    )],
    fixed: Fixed::Runner {
        counts: &[
            lines::HITS_COUNTS[0],
            Line::Always(&[
                Piece::Text(" "),
                Piece::Num(Agg::Total(&Sec::Value(&KMALLOCS_ALL)), Num::whole(14)),
                Piece::Text(" kmallocs"),
            ]),
            Line::Always(&[
                Piece::Text(" "),
                Piece::Num(
                    Agg::Div(
                        &Agg::Total(&Sec::Value(&KMALLOCS_ALL)),
                        &Agg::Total(&Sec::Value(&CREATES)),
                    ),
                    per_create(14),
                ),
                Piece::Text(" kmallocs/create"),
            ]),
        ],
        after: &[],
    },
    ..lines::HITS
};

pub static BENCHES: &[&dyn Benchmark] = &[&LocalStorageCreate {
    info: Info::hits(
        "local-storage-create",
        "create BPF local storage for new sockets (--storage-type socket) or threads \
         (task) in batches of --batch-size; creations/s and kmallocs per creation",
    )
    .untimed("one operation is one creation, and a call of the producer a batch of them")
    .needs(Needs::Link)
    .options(&OPTIONS)
    .declares(&CHANNELS, &[CREATES_FIGURE, KMALLOCS], LINES),
}];

/// The owners whose storage is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StorageType {
    Socket,
    Task,
}

impl StorageType {
    fn from_name(name: &str) -> Result<StorageType> {
        match name {
            "socket" => Ok(StorageType::Socket),
            "task" => Ok(StorageType::Task),
            _ => Err(Error::usage(format!(
                "--storage-type {name:?} is not one of local-storage-create's storage types \
                 (socket or task)"
            ))),
        }
    }

    fn word(self) -> &'static str {
        match self {
            StorageType::Socket => "socket",
            StorageType::Task => "task",
        }
    }

    /// Its map type's name in the kernel's `enum bpf_map_type`, and the
    /// first release that has it.
    fn map_type(self) -> (&'static str, &'static str) {
        match self {
            StorageType::Socket => ("BPF_MAP_TYPE_SK_STORAGE", "5.2"),
            StorageType::Task => ("BPF_MAP_TYPE_TASK_STORAGE", "5.11"),
        }
    }
}

struct LocalStorageCreate {
    info: Info,
}

impl Benchmark for LocalStorageCreate {
    fn info(&self) -> &Info {
        &self.info
    }

    fn validate(&self, config: &RunConfig) -> Result<()> {
        let storage_type = StorageType::from_name(config.params.text(&STORAGE_TYPE))?;
        let batch = config.params.number(&BATCH_SIZE);
        let owners = batch * config.producers as u64;
        let given = format!("--batch-size {batch} and -p {}", config.producers);
        match storage_type {
            StorageType::Task => memory::check_tasks(
                self.info.name,
                memory::Tasks {
                    given: &given,
                    count: owners,
                    starts: &format!("starts {owners} threads at once"),
                    bytes_each: THREAD_BYTES,
                    each: "a thread's kernel stack, task and first pages, for each",
                    smaller: "--batch-size",
                },
            ),
            StorageType::Socket => match open_files_room() {
                Some(room) if owners > room => Err(Error::usage(format!(
                    "local-storage-create with {given} keeps {owners} sockets open at once, \
                     more than the {room} more files this process may open (RLIMIT_NOFILE): \
                     give a smaller --batch-size"
                ))),
                _ => Ok(()),
            },
        }
    }

    fn setup(&self, config: &RunConfig) -> Result<SetUp> {
        let storage_type = StorageType::from_name(config.params.text(&STORAGE_TYPE))?;
        let batch = config.params.number(&BATCH_SIZE) as usize;
        lacking_map_type(storage_type)?;
        let (skel, creator, used) = creators::creator(storage_type)?;
        let kmalloc = attach(&skel, "count_kmalloc")?;
        // SAFETY: `hits`, `kmallocs` and `create_errs` are counters.h's
        // slots, and the skeleton is kept in the workload beside the
        // counters, dropped after them.
        let (hits, kmallocs, create_errors) = unsafe {
            let bss = skel.maps.bss_data.as_deref();
            (
                HitCounters::new(bss.map(|bss| &bss.hits[..]))?,
                HitCounters::new(bss.map(|bss| &bss.kmallocs[..]))?,
                HitCounters::new(bss.map(|bss| &bss.create_errs[..]))?,
            )
        };
        let workload = CreateWorkload {
            _links: [creator, kmalloc],
            hits,
            kmallocs,
            create_errors,
            owner_errors: AtomicU64::new(0),
            storage_type,
            batch,
            _skel: skel,
        };
        Ok(SetUp::producers(workload).from_trigger(used))
    }
}

/// The first release's refusal where the kernel lacks the storage's map
/// type (its BTF's `enum bpf_map_type` says); none where the BTF cannot
/// be read (loading then says what it can).
fn lacking_map_type(storage_type: StorageType) -> Result<()> {
    let (name, since) = storage_type.map_type();
    let Ok(btf) = libbpf_rs::btf::Btf::from_vmlinux() else {
        return Ok(());
    };
    let Some(types) = btf.type_by_name::<libbpf_rs::btf::types::Enum<'_>>("bpf_map_type") else {
        return Ok(());
    };
    let has = types
        .iter()
        .any(|member| member.name.and_then(|n| n.to_str()) == Some(name));
    match has {
        true => Ok(()),
        false => Err(Error::unsupported(kernel::needs_linux(
            &format!("{name} ({} local storage) needs", storage_type.word()),
            since,
        ))),
    }
}

/// What one live thread of a batch takes, roughly: its 16 KiB kernel stack,
/// its task, and the first pages of its user stack.
const THREAD_BYTES: u64 = 64 << 10;

/// How many more files this process may open: its RLIMIT_NOFILE less the
/// descriptors it holds (`None` where it cannot tell).
fn open_files_room() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    Some(limit.rlim_cur.saturating_sub(open))
}

/// A batch whose `failed` of `batch` owners could not be created: the run
/// fails, since what it measured is not batches of that size.
fn failed_owners(what: &str, failed: usize, batch: usize, first: std::io::Error) -> Error {
    Error::runtime(format!(
        "{what} failed for {failed} of a batch of {batch} ({first}): the run measured \
         smaller batches than --batch-size {batch}, so it stops"
    ))
}

struct CreateWorkload {
    // Fields drop in order: the links detach before the object is closed.
    _links: [Link; 2],
    hits: HitCounters,
    kmallocs: HitCounters,
    create_errors: HitCounters,
    /// Sockets or threads the producers failed to create.
    owner_errors: AtomicU64,
    storage_type: StorageType,
    batch: usize,
    _skel: Skel,
}

/// What each thread of a task batch runs: nothing, as upstream's.
extern "C" fn return_at_once(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

impl CreateWorkload {
    /// Runs `create(i)` for each owner of a batch until the run stops, which
    /// it asks every 256 owners: a batch of tens of thousands takes seconds
    /// (83 us a thread here), and Ctrl-C must not wait for it. How many it
    /// ran: the whole batch but at a stop.
    fn until_stopped(&self, ctx: &ProducerCtx<'_>, mut create: impl FnMut(usize)) -> usize {
        for i in 0..self.batch {
            if i % 256 == 255 && ctx.should_stop() {
                return i;
            }
            create(i);
        }
        self.batch
    }

    /// A batch of sockets, created and then closed.
    fn sockets(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        let mut fds = vec![-1; self.batch];
        ctx.try_run(|| {
            let mut first = None;
            let made = self.until_stopped(ctx, |i| {
                // SAFETY: creates a socket of our own, closed below.
                fds[i] = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_DGRAM, 0) };
                if fds[i] == -1 {
                    self.owner_errors.fetch_add(1, Relaxed);
                    first.get_or_insert_with(std::io::Error::last_os_error);
                }
            });
            for &fd in fds[..made].iter().filter(|&&fd| fd != -1) {
                // SAFETY: closes a socket this loop created.
                unsafe { libc::close(fd) };
            }
            match first {
                None => Ok(made as u64),
                Some(err) => {
                    let failed = fds[..made].iter().filter(|&&fd| fd == -1).count();
                    Err(failed_owners("socket()", failed, self.batch, err))
                }
            }
        })
    }

    /// A batch of threads, created and then joined.
    fn threads(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        // SAFETY: pthread_t is a plain integer, and zero a placeholder that
        // is overwritten before it is read.
        let mut threads: Vec<libc::pthread_t> = vec![unsafe { std::mem::zeroed() }; self.batch];
        let mut results = vec![0; self.batch];
        ctx.try_run(|| {
            let made = self.until_stopped(ctx, |i| {
                // SAFETY: the thread runs a function that touches nothing,
                // and is joined below.
                results[i] = unsafe {
                    libc::pthread_create(
                        &mut threads[i],
                        std::ptr::null(),
                        return_at_once,
                        std::ptr::null_mut(),
                    )
                };
                if results[i] != 0 {
                    self.owner_errors.fetch_add(1, Relaxed);
                }
            });
            let (threads, results) = (&threads[..made], &results[..made]);
            for (&thread, _) in threads.iter().zip(results).filter(|(_, &r)| r == 0) {
                // SAFETY: joins a thread created above, once.
                unsafe { libc::pthread_join(thread, std::ptr::null_mut()) };
            }
            match results.iter().find(|&&r| r != 0) {
                None => Ok(made as u64),
                Some(&code) => {
                    let failed = results.iter().filter(|&&r| r != 0).count();
                    let err = std::io::Error::from_raw_os_error(code);
                    Err(failed_owners("pthread_create()", failed, self.batch, err))
                }
            }
        })
    }
}

impl Workload for CreateWorkload {
    fn produce(&self, ctx: &ProducerCtx<'_>) -> Result<()> {
        match self.storage_type {
            StorageType::Socket => self.sockets(ctx),
            StorageType::Task => self.threads(ctx),
        }
    }

    /// The storages created, the system's kmallocs, and the failures.
    fn read(&self, _ops: u64) -> Readings {
        vec![
            Some(self.hits.total()),
            Some(self.kmallocs.total()),
            Some(self.owner_errors.load(Relaxed)),
            Some(self.create_errors.total()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use crate::report::lines::testing;

    #[test]
    fn lines_are_the_kernel_runners() {
        let bench = "local-storage-create";
        assert_eq!(
            testing::tick(bench, &[123_456, 508_638, 0, 0], 2),
            "Iter   3 ( 12.345us): creates  123.456k/s ( 61.728k/prod), 4.12 kmallocs/create"
        );
        assert!(testing::tick(bench, &[0, 0, 0, 0], 1)
            .ends_with("(  0.000k/prod), -nan kmallocs/create"));
        let seconds = [[122_222u64, 508_638, 0, 0], [124_690, 508_639, 0, 0]];
        let line = testing::summary(bench, &seconds, 2);
        assert_eq!(
            line,
            ["Summary: creates  123.456 \u{b1} 1.745k/s ( 61.728k/prod), 4.12 kmallocs/create"]
        );
        let cut = line[0].split('(').next().unwrap_or("");
        let fields: Vec<&str> = cut.split(' ').skip(2).collect();
        assert_eq!(fields.join(" "), " 123.456 \u{b1} 1.745k/s ");
    }

    #[test]
    fn a_fixed_run_shows_kmallocs_instead_of_drops() {
        let lines = testing::fixed("local-storage-create", &[320, 1_440, 0, 0], 1);
        for line in ["            320 hits", "           1440 kmallocs"] {
            assert!(lines.contains(&line.to_string()), "{lines:?}");
        }
        assert!(
            lines.contains(&"           4.50 kmallocs/create".to_string()),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.ends_with("drops")), "{lines:?}");
    }

    #[test]
    fn failures_are_said_after_the_summary_only_when_there_were_some() {
        let bench = "local-storage-create";
        let none = testing::summary(bench, &[[10u64, 40, 0, 0]], 1);
        assert_eq!(none.len(), 1, "{none:?}");
        let some = testing::summary(bench, &[[10u64, 40, 3, 0]], 1);
        assert_eq!(some[1], "socket() errors 3 create_errs 0");
        let fixed = testing::fixed(bench, &[10, 40, 0, 2], 1);
        assert_eq!(
            fixed.last().map(String::as_str),
            Some("socket() errors 0 create_errs 2")
        );
    }
}
