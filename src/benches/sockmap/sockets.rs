//! The sockmap benchmark's sockets: two TCP connections on loopback through
//! one listener, c1 <-> p1 and c2 <-> p2 (c the connecting end, p the
//! accepted one), and the file the producer sends.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::FILE_SIZE;
use crate::error::{Error, Result};

/// The bytes the stream repeats: byte i of the file is `PATTERN[i % 10]`.
pub const PATTERN: [u8; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

pub struct Sockets {
    c1: TcpStream,
    p1: TcpStream,
    c2: TcpStream,
    p2: TcpStream,
    // Last: closed after the connections it accepted.
    _listener: TcpListener,
}

fn io_error(what: &str, err: std::io::Error) -> Error {
    Error::setup(format!("cannot {what}: {err}"))
}

impl Sockets {
    pub fn connect() -> Result<Sockets> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .map_err(|e| io_error("listen on a loopback TCP port", e))?;
        let address = listener
            .local_addr()
            .map_err(|e| io_error("read the listening socket's address", e))?;
        let pair = || -> Result<(TcpStream, TcpStream)> {
            let client = TcpStream::connect(address)
                .map_err(|e| io_error("connect to the loopback listener", e))?;
            let (accepted, _) = listener
                .accept()
                .map_err(|e| io_error("accept a loopback connection", e))?;
            Ok((client, accepted))
        };
        let (c1, p1) = pair()?;
        let (c2, p2) = pair()?;
        Ok(Sockets {
            c1,
            p1,
            c2,
            p2,
            _listener: listener,
        })
    }

    pub fn c1(&self) -> RawFd {
        self.c1.as_raw_fd()
    }
    pub fn p1(&self) -> RawFd {
        self.p1.as_raw_fd()
    }
    pub fn c2(&self) -> RawFd {
        self.c2.as_raw_fd()
    }
    pub fn p2(&self) -> RawFd {
        self.p2.as_raw_fd()
    }
}

/// A temporary file of [`FILE_SIZE`] bytes of [`PATTERN`], in the page
/// cache as upstream's tmpfile() is: what sendfile() reads.
pub fn pattern_file() -> Result<OwnedFd> {
    let mut file = tempfile::tempfile().map_err(|e| io_error("create the file to send", e))?;
    file.write_all(&pattern())
        .map_err(|e| io_error("write the file to send", e))?;
    Ok(file.into())
}

/// Makes `fd` non-blocking.
pub fn set_nonblocking(fd: RawFd) -> Result<()> {
    // SAFETY: fcntl on a descriptor the caller's sockets own.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io_error(
            "make a socket non-blocking",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The file's bytes, as sent: what every stretch of the stream is checked
/// against.
pub fn pattern() -> Vec<u8> {
    (0..FILE_SIZE).map(|i| PATTERN[i % PATTERN.len()]).collect()
}

/// Checks that `received` continues the stream at `position` (the bytes
/// read so far, modulo the file's size: each file starts the pattern again)
/// against `expected` (the file, [`pattern`]), and moves `position` past it.
/// Every byte is checked, a stretch at a time.
pub fn verify(received: &[u8], expected: &[u8], position: &mut usize) -> Result<()> {
    let mut rest = received;
    while !rest.is_empty() {
        let offset = *position % FILE_SIZE;
        let len = rest.len().min(FILE_SIZE - offset);
        let (now, later) = rest.split_at(len);
        if now != &expected[offset..offset + len] {
            let at = now
                .iter()
                .zip(&expected[offset..])
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(Error::runtime(format!(
                "the bytes read from c2 differ from those sent: byte {} of a file is {}, not {}",
                offset + at,
                now[at],
                expected[offset + at]
            )));
        }
        *position = (offset + len) % FILE_SIZE;
        rest = later;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_restarts_the_pattern_with_each_file() {
        let expected = pattern();
        let mut position = FILE_SIZE - 2;
        // 131070 % 10 = 0, 131071 % 10 = 1, then the next file's 0, 1.
        verify(&[0, 1, 0, 1], &expected, &mut position).unwrap();
        assert_eq!(position, 2);
        let err = verify(&[2, 3, 3], &expected, &mut position).unwrap_err();
        assert!(
            err.to_string().contains("byte 4 of a file is 3, not 4"),
            "{err}"
        );
    }
}
