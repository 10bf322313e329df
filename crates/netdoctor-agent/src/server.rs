//! The `/metrics` endpoint: a std `TcpListener` on one thread of its own.
//!
//! Why by hand and not `tiny_http` (or hyper): the endpoint answers one request type to one
//! client (Prometheus, every 15–60 s). `tiny_http` spawns a thread per connection with no cap
//! and brings its own buffering; hyper needs an async runtime. Forty lines of std give exactly
//! the bounds the agent promises:
//!
//! - one connection at a time (a second scraper waits in the kernel's listen backlog);
//! - a request head of at most [`MAX_REQUEST`] bytes, read within [`IO_TIMEOUT`], written within
//!   the same timeout; `Connection: close` after every answer;
//! - `GET /metrics` (any query string) → 200 with the protobuf format (native histograms) when
//!   the `Accept` header prefers it (Prometheus with `--enable-feature=native-histograms`), the
//!   OpenMetrics text when it asks for that (Prometheus does), else the classic 0.0.4 text
//!   format (negotiation: [`crate::accept`]); `HEAD /metrics` → 200
//!   without a body, any other path → 404, any other method → 405, an oversized or malformed
//!   head → 400;
//! - with a web configuration ([`crate::webconfig`], `--web.config.file`): TLS (rustls) and
//!   HTTP basic auth (bcrypt), 401 with `WWW-Authenticate` without valid credentials.

use crate::accept::{Format, negotiate};
use crate::metrics::AgentMetrics;
use crate::webconfig::WebConfig;
use netdoctor_sys::poll::{Wake, wait_any};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest accepted request head.
pub const MAX_REQUEST: usize = 8 * 1024;
/// Read and write timeout per connection.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a connection; the stop comes as a wake-up, this only bounds a lost one.
const ACCEPT_POLL: Duration = Duration::from_secs(10);
/// Pause after a failed accept or poll.
const ERROR_PAUSE: Duration = Duration::from_millis(200);

pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub const CONTENT_TYPE_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A running endpoint; stopped and joined on drop.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    wake: Wake,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves on a thread of its own.
    pub fn start(addr: SocketAddr, metrics: Arc<AgentMetrics>) -> io::Result<MetricsServer> {
        MetricsServer::start_with(addr, metrics, WebConfig::default())
    }

    /// As [`start`](Self::start), with TLS and basic auth from a web configuration.
    pub fn start_with(
        addr: SocketAddr,
        metrics: Arc<AgentMetrics>,
        web: WebConfig,
    ) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        // Non-blocking accept, waiting on the listener and a wake-up that `drop` sends: the
        // thread sleeps until a scrape or the stop instead of looking at a flag on a timer.
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let wake = Wake::new()?;
        let flag = Arc::clone(&stop);
        let woken = wake.clone();
        let thread = std::thread::Builder::new()
            .name("metrics-http".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            // A failed exchange (client went away, timeout) only ends that
                            // connection.
                            let _ = serve(stream, &metrics, &web);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            let mut fds = [
                                woken.pollfd(),
                                libc::pollfd {
                                    fd: listener.as_raw_fd(),
                                    events: libc::POLLIN,
                                    revents: 0,
                                },
                            ];
                            if wait_any(&mut fds, ACCEPT_POLL).is_err() {
                                std::thread::sleep(ERROR_PAUSE);
                            }
                        }
                        // Out of descriptors and the like: a pause, then again.
                        Err(_) => std::thread::sleep(ERROR_PAUSE),
                    }
                }
            })?;
        Ok(MetricsServer {
            addr,
            stop,
            wake,
            thread: Some(thread),
        })
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, metrics: &AgentMetrics, web: &WebConfig) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    match &web.tls {
        Some(cfg) => {
            let conn = rustls::ServerConnection::new(Arc::clone(cfg)).map_err(io::Error::other)?;
            let mut tls = rustls::StreamOwned::new(conn, stream);
            let r = exchange(&mut tls, metrics, web);
            tls.conn.send_close_notify();
            let _ = tls.flush();
            r
        }
        None => {
            let mut plain = stream;
            exchange(&mut plain, metrics, web)
        }
    }
}

fn exchange<S: Read + Write>(
    stream: &mut S,
    metrics: &AgentMetrics,
    web: &WebConfig,
) -> io::Result<()> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    let head_end = loop {
        if len == buf.len() {
            return respond(stream, "400 Bad Request", "request head too large\n", true);
        }
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            return Ok(());
        }
        len += n;
        if let Some(p) = buf[..len].windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !parts.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return respond(stream, "400 Bad Request", "malformed request line\n", true);
    }
    let authorization = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("authorization")
            .then_some(v.trim())
    });
    if !web.authorized(authorization) {
        let body = "unauthorized\n";
        let head = format!(
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"netdoctor\"\r\n\
             Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())?;
        return stream.flush();
    }
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            // Prometheus asks for protobuf (native histograms) or OpenMetrics in its Accept
            // header; everyone else (curl, promtool, older scrapers) gets the 0.0.4 text.
            let accept = head.lines().filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case("accept").then_some(v)
            });
            let text = |om: bool| -> (Vec<u8>, &str) {
                match om {
                    true => (metrics.encode().into_bytes(), CONTENT_TYPE),
                    false => (metrics.encode_text_004().into_bytes(), CONTENT_TYPE_004),
                }
            };
            let (body, ctype) = match negotiate(accept) {
                // Should the text not read back (a bug), the scrape still gets its metrics.
                Format::Protobuf => match metrics.encode_protobuf() {
                    Ok(pb) => (pb, crate::proto::CONTENT_TYPE),
                    Err(_) => text(true),
                },
                Format::OpenMetrics => text(true),
                Format::Text004 => text(false),
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes())?;
            if method == "GET" {
                stream.write_all(&body)?;
            }
            stream.flush()
        }
        ("GET" | "HEAD", _) => respond(stream, "404 Not Found", "only /metrics here\n", true),
        _ => respond(
            stream,
            "405 Method Not Allowed",
            "only GET /metrics\n",
            true,
        ),
    }
}

fn respond(stream: &mut dyn Write, status: &str, body: &str, with_body: bool) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if with_body {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}
