//! One connection to the history's server, on a private current-thread
//! runtime: every call has a deadline (the connect timeout for the
//! connection and its login, the statement timeout for a statement or a
//! batch) and answers Ctrl-C within a tenth of a second, and every failure
//! becomes one sentence, the password redacted, with its exit code.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use super::target::Target;
use super::tls;
use crate::error::{Error, Result};
use crate::interrupt;

/// How long the server may take over one statement (`statement_timeout`,
/// set on each connection) or a batch of appends (our own deadline).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a wait looks for Ctrl-C.
const INTERRUPT_TICK: Duration = Duration::from_millis(100);

pub struct Session {
    pub target: Target,
    runtime: Runtime,
    pub client: Client,
}

impl Session {
    /// Connects and logs in within the connect timeout, then sets the
    /// statement timeout.
    pub fn connect(target: &Target) -> Result<Session> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::runtime(format!("cannot start the PostgreSQL client: {e}")))?;
        let connector = tls::connector(target)?;
        let config = target.config.clone();
        let deadline = target.connect_timeout();
        let (client, connection) = within(&runtime, target, deadline, "connect", async move {
            config.connect(connector).await
        })?;
        // The connection's own task: it carries the messages while a call
        // waits; it ends when the client is dropped or the server goes.
        runtime.spawn(async move {
            let _ = connection.await;
        });
        let session = Session {
            target: target.clone(),
            runtime,
            client,
        };
        let set = format!(
            "SET statement_timeout = {}; SET lock_timeout = {}",
            STATEMENT_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        session.call("set the statement timeout", |client| async move {
            client.batch_execute(&set).await
        })?;
        Ok(session)
    }

    /// Runs `work` on the client within the statement timeout (and a few
    /// seconds for the network), or until Ctrl-C.
    pub fn call<'a, T, F, W>(&'a self, doing: &str, work: W) -> Result<T>
    where
        W: FnOnce(&'a Client) -> F,
        F: Future<Output = Result<T, tokio_postgres::Error>> + 'a,
    {
        within(
            &self.runtime,
            &self.target,
            call_deadline(),
            doing,
            work(&self.client),
        )
    }

    /// As [`Session::call`], with the client to change (a transaction).
    pub fn call_mut<'a, T, F, W>(&'a mut self, doing: &str, work: W) -> Result<T>
    where
        W: FnOnce(&'a mut Client) -> F,
        F: Future<Output = Result<T, tokio_postgres::Error>> + 'a,
    {
        within(
            &self.runtime,
            &self.target,
            call_deadline(),
            doing,
            work(&mut self.client),
        )
    }
}

/// Runs `work` to its end, its deadline, or Ctrl-C.
fn within<T>(
    runtime: &Runtime,
    target: &Target,
    deadline: Duration,
    doing: &str,
    work: impl Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T> {
    runtime.block_on(async {
        let mut bounded = std::pin::pin!(tokio::time::timeout(deadline, work));
        loop {
            match tokio::time::timeout(INTERRUPT_TICK, bounded.as_mut()).await {
                Ok(Ok(done)) => return done.map_err(|e| pg_error(target, doing, &e)),
                Ok(Err(_)) => return Err(timed_out(target, doing, deadline)),
                Err(_) => {
                    if let Some(signal) = interrupt::received() {
                        return Err(Error::Interrupted {
                            message: format!(
                                "interrupted while waiting for {} ({doing})",
                                target.shown
                            ),
                            code: interrupt::exit_code(signal),
                        });
                    }
                }
            }
        }
    })
}

fn timed_out(target: &Target, doing: &str, deadline: Duration) -> Error {
    let which = match doing {
        "connect" => "the connect timeout; connect_timeout=N in the URL sets it",
        _ => "the statement timeout",
    };
    Error::StoreAway(format!(
        "{} did not answer within {} s ({doing}: {which})",
        target.shown,
        deadline.as_secs()
    ))
}

/// One sentence for a failure of the server or the way to it, the password
/// redacted, with its exit code: unreachable or refused login 7, no such
/// database 2, a privilege missing 3.
pub fn pg_error(target: &Target, doing: &str, err: &tokio_postgres::Error) -> Error {
    let shown = &target.shown;
    let Some(db) = err.as_db_error() else {
        // The client's words, then their cause (the system's: "Connection
        // refused", a name that does not resolve).
        let mut text = err.to_string();
        let mut cause = std::error::Error::source(err);
        while let Some(inner) = cause {
            text = format!("{text}: {inner}");
            cause = inner.source();
        }
        let text = target.redact(&text);
        return Error::StoreAway(match doing {
            "connect" => format!("cannot reach the history {shown}: {text}"),
            _ => format!("lost the history {shown} ({doing}): {text}"),
        });
    };
    let message = target.redact(db.message());
    let code = db.code();
    if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        Error::StoreAway(format!(
            "{shown} refused the login of '{}': {message}",
            target.user()
        ))
    } else if *code == SqlState::INVALID_CATALOG_NAME {
        Error::usage(format!(
            "{shown}: the server has no database '{}'",
            target.database()
        ))
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        Error::permission(format!(
            "{shown}: the role '{}' may not {doing} ({message})",
            target.user()
        ))
    } else if code.code().starts_with("57") || code.code().starts_with("08") {
        // Operator intervention (shutdown, cancel, statement timeout) and
        // connection exceptions: the server is away for now.
        Error::StoreAway(format!("{shown} ({doing}): {message}"))
    } else {
        Error::runtime(format!("{shown} ({doing}): {message}"))
    }
}

/// How long a call may take: the statement timeout, and a few seconds for
/// the network.
fn call_deadline() -> Duration {
    STATEMENT_TIMEOUT + Duration::from_secs(5)
}
