//! A PostgreSQL history named by a URL (`postgresql://` or `postgres://`,
//! libpq's form): the client's configuration, the password from the URL,
//! `PGPASSWORD` or the password file (`PGPASSFILE`, else `~/.pgpass`), the
//! TLS mode (libpq's `sslmode`), and the name it is shown by, which never
//! holds the password. Every message about the store goes through
//! [`Target::redact`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::Config;

use crate::error::{Error, Result};

/// How long a connection may take, the login included, when the URL does
/// not say (`connect_timeout=N`, in seconds, as libpq's).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// libpq's `sslmode`: what TLS is asked of the server and what is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    Disable,
    /// TLS when the server offers it, the certificate not checked.
    Prefer,
    /// TLS or nothing, the certificate not checked.
    Require,
    /// TLS, the certificate signed by a trusted root.
    VerifyCa,
    /// TLS, the certificate signed by a trusted root and naming the host.
    VerifyFull,
}

/// A PostgreSQL history's address.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: Config,
    pub tls: Tls,
    /// `sslrootcert`: the roots a verify mode trusts (default
    /// `~/.postgresql/root.crt` when present, else the system's).
    pub root_cert: Option<PathBuf>,
    /// `postgresql://user@host:port/database`: no password.
    pub shown: String,
    /// What must never be printed: the password as given and as decoded.
    secrets: Vec<String>,
}

/// Whether `text` names a PostgreSQL history rather than a file; a URL of
/// another scheme is refused.
pub fn is_url(text: &str) -> Result<bool> {
    if text.starts_with("postgresql://") || text.starts_with("postgres://") {
        return Ok(true);
    }
    match text.split_once("://") {
        Some((scheme, _)) if !scheme.is_empty() && !scheme.contains('/') => {
            Err(Error::usage(format!(
                "--history {scheme}://...: a history is a file or a postgresql:// URL, not {scheme}://"
            )))
        }
        _ => Ok(false),
    }
}

impl Target {
    /// Parses a `postgresql://` URL; a bad one is refused with a sentence
    /// that does not repeat its password.
    pub fn parse(url: &str) -> Result<Target> {
        let raw_password = url_password(url);
        let mut secrets: Vec<String> = raw_password.iter().cloned().collect();
        let (rest, tls, root_cert) = take_tls_params(url)?;
        let mut config = rest.parse::<Config>().map_err(|e| {
            let text = redact_with(&e.to_string(), &secrets);
            Error::usage(format!(
                "--history {}: not a PostgreSQL URL ({text})",
                redact_with(url, &secrets)
            ))
        })?;
        fill_defaults(&mut config)?;
        if let Some(password) = config.get_password() {
            secrets.push(String::from_utf8_lossy(password).into_owned());
        } else if let Some(password) = password_from_environment(&config) {
            secrets.push(password.clone());
            config.password(password);
        }
        secrets.retain(|s| !s.is_empty());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.ssl_mode(match tls {
            Tls::Disable => SslMode::Disable,
            Tls::Prefer => SslMode::Prefer,
            Tls::Require | Tls::VerifyCa | Tls::VerifyFull => SslMode::Require,
        });
        config.application_name("bench");
        let shown = shown_name(&config);
        Ok(Target {
            config,
            tls,
            root_cert,
            shown,
            secrets,
        })
    }

    /// `text` with every form of the password replaced by `***`.
    pub fn redact(&self, text: &str) -> String {
        redact_with(text, &self.secrets)
    }

    /// The connect deadline: the URL's `connect_timeout`, else ours.
    pub fn connect_timeout(&self) -> Duration {
        self.config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT)
    }

    pub fn user(&self) -> &str {
        self.config.get_user().unwrap_or_default()
    }

    pub fn database(&self) -> &str {
        self.config.get_dbname().unwrap_or_default()
    }
}

fn redact_with(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets.iter().filter(|s| !s.is_empty()) {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// The password as written in the URL's user part (still percent-encoded).
fn url_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let (user_info, _) = authority.rsplit_once('@')?;
    let (_, password) = user_info.split_once(':')?;
    Some(password.to_string())
}

/// Takes `sslmode` and `sslrootcert` out of the query (the client knows
/// only three of libpq's modes): the URL left, the mode, the roots.
fn take_tls_params(url: &str) -> Result<(String, Tls, Option<PathBuf>)> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut tls = Tls::Prefer;
    let mut root_cert = None;
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                tls = match value {
                    "disable" => Tls::Disable,
                    "allow" | "prefer" => Tls::Prefer,
                    "require" => Tls::Require,
                    "verify-ca" => Tls::VerifyCa,
                    "verify-full" => Tls::VerifyFull,
                    other => {
                        return Err(Error::usage(format!(
                        "--history: sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                    )))
                    }
                }
            }
            "sslrootcert" => root_cert = Some(PathBuf::from(value)),
            _ => kept.push(pair),
        }
    }
    let rest = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((rest, tls, root_cert))
}

/// libpq's defaults for what the URL leaves out: the user (`PGUSER`, else
/// the login name), the database (the user's name), the host (`PGHOST`,
/// else the local socket directory), the port (`PGPORT`, else 5432).
fn fill_defaults(config: &mut Config) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if config.get_user().is_none() {
        let user = env("PGUSER")
            .or_else(|| env("USER"))
            .or_else(|| env("LOGNAME"))
            .ok_or_else(|| {
                Error::usage("--history: the URL names no user, and neither PGUSER nor USER is set")
            })?;
        config.user(user);
    }
    if config.get_dbname().is_none() {
        let database =
            env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or_default().to_string());
        config.dbname(database);
    }
    if config.get_hosts().is_empty() {
        match env("PGHOST") {
            Some(host) if host.starts_with('/') => config.host_path(host),
            Some(host) => config.host(host),
            None => config.host_path("/var/run/postgresql"),
        };
    }
    if config.get_ports().is_empty() {
        let port = env("PGPORT").and_then(|p| p.parse().ok()).unwrap_or(5432);
        config.port(port);
    }
    Ok(())
}

fn shown_name(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) if name.contains(':') => format!("[{name}]"),
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(dir)) => dir.display().to_string().replace('/', "%2F"),
        None => String::new(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgresql://{}@{host}:{port}/{}",
        config.get_user().unwrap_or_default(),
        config.get_dbname().unwrap_or_default()
    )
}

/// The password for `config`'s user at its host, port and database:
/// `PGPASSWORD`, else the first matching line of the password file.
fn password_from_environment(config: &Config) -> Option<String> {
    if let Some(password) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        // libpq matches a socket directory as `localhost`.
        Host::Unix(_) => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or_default(),
        config.get_user().unwrap_or_default(),
    ];
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = passfile_fields(line);
            let matches = fields.len() == 5
                && fields[..4]
                    .iter()
                    .zip(wanted)
                    .all(|(field, want)| field == "*" || field == want);
            matches.then(|| fields[4].clone())
        })
}

/// A password file's line split at its colons, `\:` and `\\` unescaped.
fn passfile_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields
                .last_mut()
                .into_iter()
                .for_each(|f| f.extend(chars.next())),
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields.last_mut().into_iter().for_each(|f| f.push(c)),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        let target =
            Target::parse("postgresql://writer:s3cr%2Ft@127.0.0.1:5433/fleet?sslmode=disable")
                .unwrap();
        assert_eq!(target.shown, "postgresql://writer@127.0.0.1:5433/fleet");
        assert_eq!(target.tls, Tls::Disable);
        assert_eq!(target.redact("x s3cr%2Ft y s3cr/t"), "x *** y ***");
        assert_eq!(target.connect_timeout(), CONNECT_TIMEOUT);
    }

    #[test]
    fn other_schemes_and_bad_urls_are_refused_without_the_password() {
        assert!(is_url("mysql://a:b@h/db").is_err());
        assert_eq!(is_url("dir/history.sqlite").ok(), Some(false));
        assert_eq!(is_url("postgres://h/db").ok(), Some(true));
        let err = Target::parse("postgresql://u:hunter2@127.0.0.1:99999/db").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(Target::parse("postgresql://u@h/db?sslmode=sometimes").is_err());
    }

    #[test]
    fn password_file_lines_unescape() {
        assert_eq!(
            passfile_fields(r"h:5432:*:u:pa\:ss\\"),
            ["h", "5432", "*", "u", r"pa:ss\"]
        );
    }
}
