//! A throwaway PostgreSQL server for the tests: one cluster in a temporary
//! folder, started once for the whole test process (the first test that
//! asks), listening on 127.0.0.1 at a free port and on a unix socket in the
//! folder, stopped and removed when the process exits. initdb refuses root:
//! the cluster belongs to the `postgres` user (Debian's package makes it),
//! else `nobody`. The owner `owner` logs in with a password over TCP (so a
//! wrong one is refused); the socket trusts, for the tests' own psql. The
//! server speaks TLS with a certificate for 127.0.0.1 signed by a CA of its
//! own (`ca.crt`; `other-ca.crt` signed nothing), and the database `tlsonly`
//! takes TCP connections with TLS alone.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

pub const OWNER_PASSWORD: &str = "Owner-pw-7c1e";

pub struct Cluster {
    pub dir: PathBuf,
    pub port: u16,
    bin: PathBuf,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();
static SERVER: Mutex<Option<Child>> = Mutex::new(None);

/// The shared cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    CLUSTER.get_or_init(start)
}

impl Cluster {
    /// A root certificate in the cluster's folder: `ca.crt` signed the
    /// server's, `other-ca.crt` did not.
    pub fn root(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `postgresql://owner:PASSWORD@127.0.0.1:PORT/DB`.
    pub fn owner_url(&self, db: &str) -> String {
        self.url("owner", OWNER_PASSWORD, db)
    }

    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!(
            "postgresql://{user}:{password}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// Runs `sql` as the owner through the socket; panics on failure.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = succeeded(
            self.psql_command(db).args(["-c", sql]),
            &format!("psql {sql}"),
        );
        String::from_utf8_lossy(&out).trim().to_string()
    }

    /// psql as the owner through the socket, unaligned, tuples only.
    pub fn psql_command(&self, db: &str) -> Command {
        let mut cmd = Command::new(self.bin.join("psql"));
        cmd.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", self.dir.to_str().unwrap()])
            .args(["-p", &self.port.to_string(), "-U", "owner", "-d", db]);
        cmd
    }

    /// A fresh database for one test.
    pub fn database(&self, name: &str) -> String {
        self.psql("postgres", &format!("DROP DATABASE IF EXISTS {name}"));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name.to_string()
    }
}

/// The newest server Debian's packages installed
/// (`/usr/lib/postgresql/VERSION/bin`).
fn server_bin() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|d| {
            let version = d.file_name().to_str()?.parse().ok()?;
            let bin = d.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .expect("no PostgreSQL server: scripts/install-deps.sh --postgresql installs it")
}

fn owner_of_cluster() -> (u32, u32) {
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    for user in ["postgres", "nobody"] {
        if let Some(line) = passwd.lines().find(|l| l.starts_with(&format!("{user}:"))) {
            let fields: Vec<&str> = line.split(':').collect();
            return (fields[2].parse().unwrap(), fields[3].parse().unwrap());
        }
    }
    panic!("neither a postgres nor a nobody user to own the test cluster");
}

fn start() -> Cluster {
    let bin = server_bin();
    let (uid, gid) = owner_of_cluster();
    let dir = std::env::temp_dir().join(format!("bench-test-pg-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
    let pwfile = dir.join("pw");
    fs::write(&pwfile, OWNER_PASSWORD).unwrap();
    std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).unwrap();
    let data = dir.join("data");
    succeeded(
        Command::new(bin.join("initdb"))
            .args(["-D", data.to_str().unwrap(), "-U", "owner", "--no-sync"])
            .args(["--auth-local=trust", "--auth-host=scram-sha-256"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-E", "UTF8", "--locale=C"])
            .uid(uid)
            .gid(gid)
            .current_dir(&dir),
        "initdb",
    );
    certificates(&dir, uid, gid);
    let mut hba = "hostnossl tlsonly all 127.0.0.1/32 reject\n".to_string();
    hba += &fs::read_to_string(data.join("pg_hba.conf")).unwrap();
    fs::write(data.join("pg_hba.conf"), hba).unwrap();
    let port = free_port();
    let log = fs::File::create(dir.join("server.log")).unwrap();
    std::os::unix::fs::chown(dir.join("server.log"), Some(uid), Some(gid)).unwrap();
    // Spawned from a thread that lives as long as the process: the death
    // signal goes with the spawning thread, not the process.
    let (sent, received) = std::sync::mpsc::channel();
    let (server_bin, data_dir, socket_dir) = (bin.join("postgres"), data.clone(), dir.clone());
    std::thread::spawn(move || {
        let server = unsafe {
            Command::new(server_bin)
                .args(["-D", data_dir.to_str().unwrap(), "-p", &port.to_string()])
                .args(["-c", "listen_addresses=127.0.0.1"])
                .arg(format!(
                    "-cunix_socket_directories={}",
                    socket_dir.display()
                ))
                .args(["-c", "fsync=off", "-c", "max_connections=60"])
                .args(["-c", "shared_buffers=16MB", "-c", "ssl=on"])
                .args(["-c", "ssl_cert_file=../server.crt"])
                .args(["-c", "ssl_key_file=../server.key"])
                .stdout(Stdio::null())
                .stderr(log)
                .uid(uid)
                .gid(gid)
                // The server goes with the test process, whatever ends it.
                .pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                    Ok(())
                })
                .spawn()
                .expect("postgres starts")
        };
        sent.send(server).unwrap();
        loop {
            std::thread::park();
        }
    });
    let server = received.recv().unwrap();
    *SERVER.lock().unwrap() = Some(server);
    // SAFETY: registers a plain function for the process's exit.
    unsafe { libc::atexit(stop) };
    let cluster = Cluster { dir, port, bin };
    wait_ready(&cluster);
    cluster
}

/// openssl in `dir`: two CAs (P-256, two days), and the server's key and
/// certificate (subjectAltName IP:127.0.0.1 alone) signed by the first; the
/// key the server's user's alone, as the server demands.
fn certificates(dir: &Path, uid: u32, gid: u32) {
    let openssl = |args: &[&str]| {
        // The postgresql package brings openssl.
        succeeded(
            Command::new("openssl").args(args).current_dir(dir),
            &format!("openssl {args:?}"),
        );
    };
    let key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    for ca in ["ca", "other-ca"] {
        let (crt, pem) = (format!("{ca}.crt"), format!("{ca}.key"));
        let subject = format!("/CN=bench test {ca}");
        let names = ["-subj", &subject, "-keyout", &pem, "-out", &crt];
        openssl(&[&["req", "-x509", "-nodes", "-days", "2"][..], &key, &names].concat());
    }
    fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    let names = ["-keyout", "server.key", "-out", "server.csr"];
    openssl(
        &[
            &["req", "-nodes", "-subj", "/CN=127.0.0.1"][..],
            &key,
            &names,
        ]
        .concat(),
    );
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "san.ext",
        "-out",
        "server.crt",
    ]);
    let server_key = dir.join("server.key");
    std::os::unix::fs::chown(&server_key, Some(uid), Some(gid)).unwrap();
    fs::set_permissions(&server_key, fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs `cmd` to its end; panics with `what` and its stderr unless it
/// succeeded. Its stdout.
fn succeeded(cmd: &mut Command, what: &str) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// At exit: an immediate shutdown, then the folder removed.
extern "C" fn stop() {
    if let Ok(mut server) = SERVER.lock() {
        if let Some(mut child) = server.take() {
            unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
            let _ = child.wait();
        }
    }
    if let Some(cluster) = CLUSTER.get() {
        let _ = fs::remove_dir_all(&cluster.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

fn wait_ready(cluster: &Cluster) {
    let start = Instant::now();
    loop {
        let ok = Command::new(cluster.bin.join("pg_isready"))
            .args(["-q", "-h", cluster.dir.to_str().unwrap()])
            .args(["-p", &cluster.port.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the test cluster did not start: {}",
            fs::read_to_string(cluster.dir.join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes `text` to a child's stdin and leaves it open.
pub fn feed(child: &mut Child, text: &str) {
    let stdin = child.stdin.as_mut().expect("a piped stdin");
    stdin.write_all(text.as_bytes()).unwrap();
    stdin.flush().unwrap();
}
