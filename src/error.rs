//! Errors as values: each carries one sentence for the user and maps to a
//! documented exit code (see docs/exit-codes.md).

use std::fmt;

/// Exit codes, documented in docs/exit-codes.md. Scripts depend on them: never renumber.
pub mod exit {
    pub const SUCCESS: u8 = 0;
    /// The benchmark failed while running, or an output could not be written.
    pub const FAILURE: u8 = 1;
    /// Bad command line: unknown benchmark, bad number, bad CPU list, ...
    pub const USAGE: u8 = 2;
    /// Not root, or without CAP_BPF / CAP_PERFMON.
    pub const PERMISSION: u8 = 3;
    /// This kernel (or CPU) cannot run the benchmark.
    pub const UNSUPPORTED: u8 = 4;
    /// Set-up refused to run: a probe target is not the expected instruction,
    /// or the probe could not be attached for a reason other than missing support.
    pub const SETUP: u8 = 5;
    /// `bench compare --fail-on-regression`: a benchmark got significantly slower.
    pub const REGRESSION: u8 = 6;
    /// The history's server could not be reached, refused the login or did
    /// not answer in time; a run's entries were kept in the spool.
    pub const STORE_AWAY: u8 = 7;
    /// Stopped by SIGINT (Ctrl-C): 128 + 2.
    pub const SIGINT: u8 = 130;
    /// Stopped by SIGTERM: 128 + 15.
    pub const SIGTERM: u8 = 143;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Usage(String),
    Permission(String),
    Unsupported(String),
    Setup(String),
    Runtime(String),
    Regression(String),
    /// The history's server is away (unreachable, login refused, timed out).
    StoreAway(String),
    /// Stopped by a signal: what was measured has been reported.
    Interrupted {
        message: String,
        code: u8,
    },
}

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn setup(msg: impl Into<String>) -> Self {
        Error::Setup(msg.into())
    }
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
    pub fn permission(msg: impl Into<String>) -> Self {
        Error::Permission(msg.into())
    }
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Error::Unsupported(msg.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Permission(_) => exit::PERMISSION,
            Error::Unsupported(_) => exit::UNSUPPORTED,
            Error::Setup(_) => exit::SETUP,
            Error::Runtime(_) => exit::FAILURE,
            Error::Regression(_) => exit::REGRESSION,
            Error::StoreAway(_) => exit::STORE_AWAY,
            Error::Interrupted { code, .. } => *code,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unsupported(msg) => write!(f, "unsupported: {msg}"),
            Error::Usage(msg)
            | Error::Permission(msg)
            | Error::Setup(msg)
            | Error::Runtime(msg)
            | Error::Regression(msg)
            | Error::StoreAway(msg)
            | Error::Interrupted { message: msg, .. } => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

/// A panic's message, whatever its payload: the one reading of a payload,
/// for the main thread's hook and the workers' guard.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
