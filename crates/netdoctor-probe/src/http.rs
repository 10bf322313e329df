//! One HTTP/1.1 request, timed: connect, TLS handshake (https), time to first byte, total
//! (HTTP/2 when [`HttpProbeConfig::protocol`] asks for it: [`crate::h2`]).
//!
//! A blocking `std::net::TcpStream` (with TLS: a `netdoctor_load::tls::TlsSession` over it, the
//! load engine's rustls session, every handshake a full one); the response is framed by the load engine's incremental
//! parser (`netdoctor_load::http::ResponseParser`: `httparse` for the head, Content-Length,
//! chunked or until close for the body), netdoctor's one HTTP/1 framer. An HTTP client crate
//! would hide exactly the timings measured here. The body is counted, not stored.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use netdoctor_load::http::{Feed, ResponseParser};
use netdoctor_load::tls::{TlsClient, TlsSession};
use netdoctor_load::{Protocol, TlsOptions};
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
    /// Limit for connect() alone (`None`: `timeout`): the preflight gives up on a SYN
    /// unanswered for about a second and looks at the neighbour table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<Duration>,
    /// HTTPS: TLS towards this server name (`TlsOptions::for_url`); `None` = plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsOptions>,
    /// HTTP/1.1 (the default); HTTP/2 (h2c with prior knowledge in clear, ALPN `h2` only over
    /// TLS: [`crate::h2`]); or, with `Auto`, over TLS whatever the server picks of `h2` and
    /// `http/1.1` (in clear HTTP/1.1) — what the load engine does with the same setting.
    #[serde(default = "http1", skip_serializing_if = "is_http1")]
    pub protocol: Protocol,
}

fn http1() -> Protocol {
    Protocol::Http1
}

fn is_http1(p: &Protocol) -> bool {
    *p == Protocol::Http1
}

impl Default for HttpProbeConfig {
    fn default() -> Self {
        HttpProbeConfig {
            host: String::new(),
            path: "/".into(),
            timeout: Duration::from_secs(5),
            connect_timeout: None,
            tls: None,
            protocol: Protocol::Http1,
        }
    }
}

/// Timing and size of one HTTP exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpTiming {
    /// connect() start to connection established.
    pub connect_ms: f64,
    /// HTTPS: connection established to TLS handshake complete (absent for plain HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ms: Option<f64>,
    /// Request written to first response byte (server think time + one RTT).
    pub ttfb_ms: f64,
    /// connect() start to first response byte, cumulative like curl's `time_starttransfer`
    /// (connect + TLS + request written + `ttfb_ms`).
    #[serde(default)]
    pub first_byte_ms: f64,
    /// connect() start to last response byte.
    pub total_ms: f64,
    /// Final status code (informational 1xx responses are skipped).
    pub status: u16,
    /// Bytes of status line and headers (including skipped 1xx responses).
    pub header_bytes: u64,
    /// Body bytes after transfer decoding (chunk framing is not counted).
    pub body_bytes: u64,
    /// `h2` (HTTP/2 over TLS) or `h2c` (cleartext HTTP/2); absent: HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// Sends `GET cfg.path` to `addr` with `Connection: close` (over TLS when `cfg.tls` is set) and
/// times the answer.
pub fn http_timing(addr: SocketAddr, cfg: &HttpProbeConfig) -> Result<HttpTiming, ProbeError> {
    let http_err = |msg: String| ProbeError::Http { addr, msg };
    let request = request(addr, cfg, "close")?;

    let timeout = cfg.timeout.max(MIN_WAIT);
    let start = Instant::now();
    let deadline = start + timeout;
    let connect_limit = cfg
        .connect_timeout
        .map_or(timeout, |c| c.clamp(MIN_WAIT, timeout));
    let stream = TcpStream::connect_timeout(&addr, connect_limit)
        .map_err(|e| ProbeError::from_io("connect", addr, e))?;
    let connect = start.elapsed();
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        tls: None,
        buf: Vec::with_capacity(16 * 1024),
        addr,
        deadline,
    };
    let alpn: &[&[u8]] = match cfg.protocol {
        Protocol::Http1 => &[],
        Protocol::Http2 => &[b"h2"],
        Protocol::Auto => &[b"h2", b"http/1.1"],
    };
    let tls = match &cfg.tls {
        Some(opts) => {
            let connected = Instant::now();
            conn.handshake_alpn(opts, alpn)?;
            Some(ms(connected.elapsed()))
        }
        None => None,
    };
    let picked = conn.tls.as_ref().and_then(|t| t.alpn().map(<[u8]>::to_vec));
    match (&cfg.tls, cfg.protocol) {
        (None, Protocol::Http2) => return crate::h2::exchange(conn, cfg, start, connect, tls),
        (Some(_), _) if picked.as_deref() == Some(b"h2") => {
            return crate::h2::exchange(conn, cfg, start, connect, tls);
        }
        (Some(_), Protocol::Http2) => {
            return Err(http_err(format!(
                "the server did not agree to HTTP/2 by ALPN (it chose {})",
                picked.map_or("none, i.e. HTTP/1.1".to_string(), |p| {
                    String::from_utf8_lossy(&p).into_owned()
                })
            )));
        }
        _ => {}
    }
    conn.write_all(request.as_bytes())?;
    let written = Instant::now();
    if conn.fill()? == 0 {
        return Err(http_err(
            "connection closed before any response byte".into(),
        ));
    }
    let ttfb = written.elapsed();
    let first_byte = start.elapsed();
    if h2_settings_first(&conn.buf) {
        return Err(ProbeError::Http2Only { addr });
    }

    // Frame the response (informational 1xx responses are skipped by the parser).
    let mut parser = ResponseParser::new(false);
    loop {
        match parser.feed(&conn.buf) {
            Ok(Feed::Complete { .. }) => break,
            Ok(Feed::NeedMore) => {}
            Err(e) => return Err(http_err(e.to_string())),
        }
        conn.buf.clear();
        if conn.fill()? == 0 {
            if parser.eof_completes() {
                break;
            }
            return Err(http_err(if parser.in_headers() {
                "connection closed inside the response headers".into()
            } else if let Some(left) = parser.body_remaining() {
                let got = parser.body_bytes;
                format!("connection closed after {got} of {} body bytes", got + left)
            } else {
                "connection closed inside a chunked body".into()
            }));
        }
    }
    let (status, header_bytes, body_bytes) =
        (parser.status, parser.header_bytes, parser.body_bytes);
    let total = start.elapsed();
    Ok(HttpTiming {
        connect_ms: ms(connect),
        tls_ms: tls,
        ttfb_ms: ms(ttfb),
        first_byte_ms: ms(first_byte),
        total_ms: ms(total),
        status,
        header_bytes,
        body_bytes,
        protocol: None,
    })
}

/// `GET cfg.path` with the given `Connection:` header value; an error names a path or host
/// that cannot go into a request line.
pub(crate) fn request(
    addr: SocketAddr,
    cfg: &HttpProbeConfig,
    connection: &str,
) -> Result<String, ProbeError> {
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
        return Err(ProbeError::Http {
            addr,
            msg: format!("path {path:?} or host {host:?} contains spaces or control characters"),
        });
    }
    Ok(format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: {connection}\r\nUser-Agent: netdoctor/0.1\r\n\r\n"
    ))
}

/// Whether an answer to an HTTP/1.1 request begins with an HTTP/2 SETTINGS frame (RFC 9113
/// §3.4: a server's first frame): a 9-byte header of type 4 on stream 0, its length a
/// multiple of 6. No HTTP/1 status line begins with a zero byte.
pub(crate) fn h2_settings_first(b: &[u8]) -> bool {
    b.len() >= 9
        && b[0] == 0
        && u32::from_be_bytes([0, b[0], b[1], b[2]]).is_multiple_of(6)
        && b[3] == 0x4
        && b[5..9] == [0; 4]
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The connection plus received bytes not yet given to the parser, with a deadline for every
/// operation.
pub(crate) struct Conn {
    pub(crate) stream: TcpStream,
    /// HTTPS: the TLS session over `stream`.
    pub(crate) tls: Option<Box<TlsSession>>,
    pub(crate) buf: Vec<u8>,
    pub(crate) addr: SocketAddr,
    pub(crate) deadline: Instant,
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

    /// The TLS handshake, within the deadline.
    pub(crate) fn handshake(&mut self, opts: &TlsOptions) -> Result<(), ProbeError> {
        self.handshake_alpn(opts, &[])
    }

    /// The handshake, offering `alpn` (none: no ALPN extension, as before HTTP/2).
    pub(crate) fn handshake_alpn(
        &mut self,
        opts: &TlsOptions,
        alpn: &[&[u8]],
    ) -> Result<(), ProbeError> {
        let addr = self.addr;
        let tls_err = |msg: String| ProbeError::Tls {
            addr,
            msg,
            certificate: None,
        };
        let client = if alpn.is_empty() {
            TlsClient::new(opts, false)
        } else {
            TlsClient::with_alpn(opts, false, alpn)
        }
        .map_err(|e| tls_err(e.to_string()))?;
        let mut session = client.session().map_err(|e| tls_err(e.to_string()))?;
        let left = self.left("tls handshake with")?;
        let _ = self.stream.set_read_timeout(Some(left));
        let _ = self.stream.set_write_timeout(Some(left));
        match session.handshake(&mut self.stream) {
            Ok(true) => {
                self.tls = Some(Box::new(session));
                Ok(())
            }
            // The socket's timeout: the deadline passed.
            Ok(false) => Err(ProbeError::Timeout {
                op: "tls handshake with",
                addr,
            }),
            Err(e) => Err(ProbeError::Tls {
                addr,
                msg: e.to_string(),
                certificate: e.certificate_problem(),
            }),
        }
    }

    pub(crate) fn write_all(&mut self, mut data: &[u8]) -> Result<(), ProbeError> {
        while !data.is_empty() {
            let left = self.left("write")?;
            let _ = self.stream.set_write_timeout(Some(left));
            let res = match self.tls.as_mut() {
                Some(t) => t.write(&mut self.stream, data),
                None => self.stream.write(data),
            };
            match res {
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
        while self.tls.as_ref().is_some_and(|t| t.wants_write()) {
            let left = self.left("write")?;
            let _ = self.stream.set_write_timeout(Some(left));
            if let Some(t) = self.tls.as_mut() {
                match t.flush(&mut self.stream) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ProbeError::from_io("write", self.addr, e)),
                }
            }
        }
        Ok(())
    }

    /// Reads once more into `buf`; returns the number of new bytes (0 at end of stream).
    pub(crate) fn fill(&mut self) -> Result<usize, ProbeError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let left = self.left("read")?;
            let _ = self.stream.set_read_timeout(Some(left));
            let res = match self.tls.as_mut() {
                Some(t) => t.read(&mut self.stream, &mut chunk).map(|(n, _)| n),
                None => self.stream.read(&mut chunk),
            };
            match res {
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // TLS: the bytes read were no whole application record yet (a session ticket,
                // part of a record): read on until the deadline (`left` says when it passed).
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && self.tls.is_some() => {}
                Err(e) => return Err(ProbeError::from_io("read", self.addr, e)),
            }
        }
    }
}
