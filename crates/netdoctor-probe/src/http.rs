//! One HTTP/1.1 request, timed: connect, time to first byte, total.
//!
//! A blocking `std::net::TcpStream` and `httparse` for the status line and headers; the body is
//! framed by hand (Content-Length, chunked via `httparse::parse_chunk_size`, or until close)
//! because all the probe needs is to know where the response ends and how big it was — an HTTP
//! client crate would hide exactly the timings measured here. The body is counted, not stored.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::ProbeError;
use crate::model::MIN_WAIT;

/// What to request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpProbeConfig {
    /// The Host header; empty means the target address (`127.0.0.1:8080`, `[::1]:8080`).
    pub host: String,
    /// The request target, e.g. `/index.html` (empty means `/`).
    pub path: String,
    /// Limit for the whole exchange, connect to last byte (default 5 s).
    pub timeout: Duration,
}

impl Default for HttpProbeConfig {
    fn default() -> Self {
        HttpProbeConfig {
            host: String::new(),
            path: "/".into(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Timing and size of one HTTP exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpTiming {
    /// connect() start to connection established.
    pub connect_ms: f64,
    /// Request written to first response byte (server think time + one RTT).
    pub ttfb_ms: f64,
    /// connect() start to last response byte.
    pub total_ms: f64,
    /// Final status code (informational 1xx responses are skipped).
    pub status: u16,
    /// Bytes of status line and headers (including skipped 1xx responses).
    pub header_bytes: u64,
    /// Body bytes after transfer decoding (chunk framing is not counted).
    pub body_bytes: u64,
}

/// Largest response header block accepted.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Sends `GET cfg.path` to `addr` with `Connection: close` and times the answer.
pub fn http_timing(addr: SocketAddr, cfg: &HttpProbeConfig) -> Result<HttpTiming, ProbeError> {
    let http_err = |msg: String| ProbeError::Http { addr, msg };
    let path = if cfg.path.is_empty() {
        "/"
    } else {
        cfg.path.as_str()
    };
    let host = if cfg.host.is_empty() {
        addr.to_string()
    } else {
        cfg.host.clone()
    };
    let bad = |s: &str| s.bytes().any(|b| b.is_ascii_control() || b == b' ');
    if bad(path) || bad(&host) {
        return Err(http_err(format!(
            "path {path:?} or host {host:?} contains spaces or control characters"
        )));
    }
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nUser-Agent: netdoctor/0.1\r\n\r\n"
    );

    let timeout = cfg.timeout.max(MIN_WAIT);
    let start = Instant::now();
    let deadline = start + timeout;
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| ProbeError::from_io("connect", addr, e))?;
    let connect = start.elapsed();
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        buf: Vec::with_capacity(16 * 1024),
        addr,
        deadline,
    };
    conn.write_all(request.as_bytes())?;
    let written = Instant::now();
    if conn.fill()? == 0 {
        return Err(http_err(
            "connection closed before any response byte".into(),
        ));
    }
    let ttfb = written.elapsed();

    // Status line and headers; informational (1xx, not 101) responses are skipped.
    let mut header_bytes = 0u64;
    let (status, framing) = loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&conn.buf) {
            Ok(httparse::Status::Complete(n)) => {
                let status = resp.code.unwrap_or(0);
                let framing = framing(status, resp.headers).map_err(&http_err)?;
                header_bytes += n as u64;
                conn.buf.drain(..n);
                if (100..200).contains(&status) && status != 101 {
                    continue;
                }
                break (status, framing);
            }
            Ok(httparse::Status::Partial) => {
                if conn.buf.len() > MAX_HEADER_BYTES {
                    return Err(http_err(format!(
                        "response headers longer than {MAX_HEADER_BYTES} bytes"
                    )));
                }
                if conn.fill()? == 0 {
                    return Err(http_err(
                        "connection closed inside the response headers".into(),
                    ));
                }
            }
            Err(e) => return Err(http_err(format!("invalid response: {e}"))),
        }
    };

    let body_bytes = match framing {
        Framing::Empty => 0,
        Framing::Length(len) => {
            conn.skip(len)?;
            len
        }
        Framing::Chunked => read_chunked(&mut conn)?,
        Framing::UntilClose => {
            let mut n = conn.buf.len() as u64;
            conn.buf.clear();
            loop {
                let got = conn.fill()?;
                if got == 0 {
                    break n;
                }
                n += got as u64;
                conn.buf.clear();
            }
        }
    };
    let total = start.elapsed();
    Ok(HttpTiming {
        connect_ms: ms(connect),
        ttfb_ms: ms(ttfb),
        total_ms: ms(total),
        status,
        header_bytes,
        body_bytes,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// How the end of the body is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

fn framing(status: u16, headers: &[httparse::Header<'_>]) -> Result<Framing, String> {
    if (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(Framing::Empty);
    }
    let value = |name: &'static str| {
        headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    if value("transfer-encoding").any(|v| v.split(',').any(|t| t.trim() == "chunked")) {
        return Ok(Framing::Chunked);
    }
    let mut length = None;
    for v in value("content-length") {
        let n: u64 = v
            .parse()
            .map_err(|_| format!("invalid Content-Length {v:?}"))?;
        if length.is_some_and(|l| l != n) {
            return Err("conflicting Content-Length headers".into());
        }
        length = Some(n);
    }
    Ok(length.map_or(Framing::UntilClose, Framing::Length))
}

/// Reads a chunked body to its end (including trailers); returns the decoded payload size.
fn read_chunked(conn: &mut Conn) -> Result<u64, ProbeError> {
    let addr = conn.addr;
    let err = |msg: &str| ProbeError::Http {
        addr,
        msg: msg.to_string(),
    };
    let mut total = 0u64;
    loop {
        let size = loop {
            match httparse::parse_chunk_size(&conn.buf) {
                Ok(httparse::Status::Complete((used, size))) => {
                    conn.buf.drain(..used);
                    break size;
                }
                Ok(httparse::Status::Partial) => {
                    if conn.buf.len() > MAX_HEADER_BYTES {
                        return Err(err("chunk size line too long"));
                    }
                    if conn.fill()? == 0 {
                        return Err(err("connection closed inside a chunked body"));
                    }
                }
                Err(_) => return Err(err("invalid chunk size line")),
            }
        };
        if size == 0 {
            // Trailer section: header lines, then an empty line.
            loop {
                if conn.buf.starts_with(b"\r\n") {
                    return Ok(total);
                }
                if let Some(i) = conn.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    conn.buf.drain(..i + 4);
                    return Ok(total);
                }
                if conn.buf.len() > MAX_HEADER_BYTES {
                    return Err(err("chunked trailers too long"));
                }
                if conn.fill()? == 0 {
                    return Err(err("connection closed inside the chunked trailers"));
                }
            }
        }
        conn.skip(size)?;
        total += size;
        while conn.buf.len() < 2 {
            if conn.fill()? == 0 {
                return Err(err("connection closed inside a chunked body"));
            }
        }
        if &conn.buf[..2] != b"\r\n" {
            return Err(err("chunk data not followed by CRLF"));
        }
        conn.buf.drain(..2);
    }
}

/// The connection plus unconsumed received bytes, with a deadline for every operation.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    addr: SocketAddr,
    deadline: Instant,
}

impl Conn {
    fn left(&self, op: &'static str) -> Result<Duration, ProbeError> {
        match self.deadline.checked_duration_since(Instant::now()) {
            Some(d) if !d.is_zero() => Ok(d),
            _ => Err(ProbeError::Timeout {
                op,
                addr: self.addr,
            }),
        }
    }

    fn write_all(&mut self, mut data: &[u8]) -> Result<(), ProbeError> {
        while !data.is_empty() {
            let left = self.left("write")?;
            let _ = self.stream.set_write_timeout(Some(left));
            match self.stream.write(data) {
                Ok(0) => {
                    return Err(ProbeError::from_io(
                        "write",
                        self.addr,
                        std::io::ErrorKind::WriteZero.into(),
                    ));
                }
                Ok(n) => data = &data[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ProbeError::from_io("write", self.addr, e)),
            }
        }
        Ok(())
    }

    /// Reads once more into `buf`; returns the number of new bytes (0 at end of stream).
    fn fill(&mut self) -> Result<usize, ProbeError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let left = self.left("read")?;
            let _ = self.stream.set_read_timeout(Some(left));
            match self.stream.read(&mut chunk) {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ProbeError::from_io("read", self.addr, e)),
            }
        }
    }

    /// Consumes exactly `n` bytes (buffered first, then from the socket).
    fn skip(&mut self, n: u64) -> Result<(), ProbeError> {
        let mut left = n;
        loop {
            let take = left.min(self.buf.len() as u64) as usize;
            self.buf.drain(..take);
            left -= take as u64;
            if left == 0 {
                return Ok(());
            }
            if self.fill()? == 0 {
                return Err(ProbeError::Http {
                    addr: self.addr,
                    msg: format!("connection closed after {} of {n} body bytes", n - left),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn framing_rules() {
        assert_eq!(
            framing(200, &[h("Content-Length", " 12 ")]),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            framing(
                200,
                &[
                    h("Transfer-Encoding", "gzip, Chunked"),
                    h("Content-Length", "3")
                ]
            ),
            Ok(Framing::Chunked)
        );
        assert_eq!(framing(200, &[]), Ok(Framing::UntilClose));
        assert_eq!(
            framing(204, &[h("Content-Length", "5")]),
            Ok(Framing::Empty)
        );
        assert_eq!(framing(304, &[]), Ok(Framing::Empty));
        assert!(framing(200, &[h("Content-Length", "x")]).is_err());
        assert!(framing(200, &[h("Content-Length", "1"), h("content-length", "2")]).is_err());
        assert_eq!(
            framing(200, &[h("Content-Length", "2"), h("content-length", "2")]),
            Ok(Framing::Length(2))
        );
    }
}
