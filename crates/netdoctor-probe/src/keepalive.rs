//! What a connection per request costs, measured: a short keep-alive probe.
//!
//! A few threads (one connection each at a time) send `GET` with `Connection: keep-alive`
//! for the budget (about a second), as many requests on each connection as the
//! server allows. A server that honours keep-alive answers several per connection; one that
//! closes after every answer (`Connection: close`, or the connection ends before the next
//! answer) is counted in `server_closed`.
//!
//! - The server kept connections: the cost is timed directly, a connection's first request
//!   (setup included) against the requests on kept connections.
//! - It kept none: there is no kept connection to time, so the first requests are split into
//!   their setup (connect, TLS) and the request itself. That counts only the setup the client
//!   sees; the server's accept and close work stays inside the request time (and shows under
//!   load as CPU, not as a time the client can split off), so the ratios are a lower bound and
//!   marked so.
//!
//! Hand-written on the HTTP probe's blocking connection (TLS too) and the load engine's
//! response framer: the load engine times whole requests, not the setup apart from them.

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub use netdoctor_core::observation::KeepAliveCost as KeepAliveProbe;
use netdoctor_load::http::{Feed, ResponseParser};

use crate::error::ProbeError;
use crate::http::{Conn, HttpProbeConfig, ms, request};
use crate::model::MIN_WAIT;

/// How long and how much to probe.
#[derive(Debug, Clone)]
pub struct KeepAliveConfig {
    pub http: HttpProbeConfig,
    /// Threads, each with one connection at a time (1..=16).
    pub connections: usize,
    pub budget: Duration,
}

impl KeepAliveConfig {
    pub fn new(http: HttpProbeConfig) -> Self {
        KeepAliveConfig {
            http,
            connections: 4,
            budget: Duration::from_secs(1),
        }
    }
}

#[derive(Default)]
struct Samples {
    /// Each connection's first request, setup included, ms.
    first: Vec<f64>,
    /// Requests on kept connections, ms.
    reused: Vec<f64>,
    /// Each connection's first request without its setup, ms.
    first_request: Vec<f64>,
    connections: u32,
    server_closed: u32,
    first_error: Option<ProbeError>,
}

impl Samples {
    fn add(&mut self, o: Samples) {
        self.first.extend(o.first);
        self.reused.extend(o.reused);
        self.first_request.extend(o.first_request);
        self.connections += o.connections;
        self.server_closed += o.server_closed;
        self.first_error = self.first_error.take().or(o.first_error);
    }
}

/// Runs the probe against `addr`. Fails only when no request was answered at all.
pub fn keepalive_probe(
    addr: SocketAddr,
    cfg: &KeepAliveConfig,
) -> Result<KeepAliveProbe, ProbeError> {
    let req = request(addr, &cfg.http, "keep-alive")?;
    let threads = cfg.connections.clamp(1, 16);
    let begun = Instant::now();
    let mut s = Samples::default();
    for one in parallel(threads, || requests(addr, cfg, &req, begun + cfg.budget)) {
        s.add(one);
    }
    let took = begun.elapsed().as_secs_f64();
    if s.first.is_empty() {
        return Err(s.first_error.unwrap_or(ProbeError::Http {
            addr,
            msg: "the keep-alive probe got no answer within its budget".into(),
        }));
    }
    let answered = s.first.len() + s.reused.len();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let first_p50 = median(&s.first);
    // Requests alone: on kept connections when there are any, else the first requests
    // without their setup.
    let lower_bound = s.reused.is_empty();
    let alone = if lower_bound {
        &s.first_request
    } else {
        &s.reused
    };
    let request_p50 = median(alone);
    Ok(KeepAliveProbe {
        requests: u32::try_from(answered).unwrap_or(u32::MAX),
        connections: s.connections,
        server_closed: s.server_closed,
        reused: u32::try_from(s.reused.len()).unwrap_or(u32::MAX),
        first_p50_ms: first_p50,
        request_p50_ms: request_p50,
        requests_per_s: answered as f64 / took.max(1e-6),
        rps_ratio: if mean(alone) > 0.0 {
            (mean(&s.first) / mean(alone)).max(1.0)
        } else {
            1.0
        },
        p50_ratio: if request_p50 > 0.0 {
            (first_p50 / request_p50).max(1.0)
        } else {
            1.0
        },
        lower_bound,
    })
}

fn parallel(threads: usize, f: impl Fn() -> Samples + Sync) -> Vec<Samples> {
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads).map(|_| sc.spawn(&f)).collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// A new connection (TLS included), with its deadline.
fn open(addr: SocketAddr, cfg: &KeepAliveConfig) -> Result<Conn, ProbeError> {
    let timeout = cfg.http.timeout.max(MIN_WAIT);
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| ProbeError::from_io("connect", addr, e))?;
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        tls: None,
        buf: Vec::with_capacity(16 * 1024),
        addr,
        deadline: Instant::now() + timeout,
    };
    if let Some(opts) = &cfg.http.tls {
        conn.handshake(opts)?;
    }
    Ok(conn)
}

/// One thread: connections one after another, as many requests on each as
/// the server allows, until `end`.
fn requests(addr: SocketAddr, cfg: &KeepAliveConfig, req: &str, end: Instant) -> Samples {
    let mut out = Samples::default();
    let timeout = cfg.http.timeout.max(MIN_WAIT);
    while Instant::now() < end {
        let born = Instant::now();
        let mut conn = match open(addr, cfg) {
            Ok(c) => c,
            Err(e) => {
                out.first_error.get_or_insert(e);
                break;
            }
        };
        let mut answered = 0u32;
        let mut closed = false;
        while Instant::now() < end {
            conn.deadline = Instant::now() + timeout;
            let sent = Instant::now();
            match exchange(&mut conn, req) {
                Ok(close) => {
                    if answered == 0 {
                        out.first.push(ms(born.elapsed()));
                        out.first_request.push(ms(sent.elapsed()));
                    } else {
                        out.reused.push(ms(sent.elapsed()));
                    }
                    answered += 1;
                    if close {
                        closed = true;
                        break;
                    }
                }
                // The server ended a connection that had answered: it does not keep it.
                Err(_) if answered > 0 => {
                    closed = true;
                    break;
                }
                Err(e) => {
                    out.first_error.get_or_insert(e);
                    break;
                }
            }
        }
        // A connection opened just as the budget ran out carried no request: not counted.
        if answered == 0 {
            break;
        }
        out.connections += 1;
        if closed && answered == 1 {
            out.server_closed += 1;
        }
    }
    out
}

/// Writes `req` and reads one whole response; `Ok(true)` when the server will close after it.
fn exchange(conn: &mut Conn, req: &str) -> Result<bool, ProbeError> {
    let addr = conn.addr;
    conn.write_all(req.as_bytes())?;
    conn.buf.clear();
    let mut parser = ResponseParser::new(false);
    loop {
        if conn.fill()? == 0 {
            if parser.started && parser.eof_completes() {
                return Ok(true);
            }
            return Err(ProbeError::Http {
                addr,
                msg: "connection closed before the response was complete".into(),
            });
        }
        match parser.feed(&conn.buf) {
            Ok(Feed::Complete { .. }) => return Ok(parser.close),
            Ok(Feed::NeedMore) => conn.buf.clear(),
            Err(e) => {
                return Err(ProbeError::Http {
                    addr,
                    msg: e.to_string(),
                });
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// A tiny server answering each request; `keep`: keep the connection open after it.
    fn server(keep: bool) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            l.set_nonblocking(false).unwrap();
            let end = Instant::now() + Duration::from_secs(3);
            while Instant::now() < end {
                let Ok((s, _)) = l.accept() else { return };
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                'conn: loop {
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            break 'conn;
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let hdr = if keep { "keep-alive" } else { "close" };
                    let _ = w.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: {hdr}\r\n\r\nok"
                        )
                        .as_bytes(),
                    );
                    if !keep {
                        break;
                    }
                }
            }
        });
        (addr, h)
    }

    /// Held by tests that flood loopback with connections (these) and by the raw SYN probe's
    /// tests, whose raw socket gets a copy of every local TCP packet: a second of this probe's
    /// traffic beside them fills its queue while a busy machine holds the reader back, and
    /// their SYN/ACKs are dropped (see `raw`'s limitation).
    pub(crate) static LOOPBACK_FLOOD: std::sync::Mutex<()> = std::sync::Mutex::new(());

    pub(crate) fn flooding() -> std::sync::MutexGuard<'static, ()> {
        LOOPBACK_FLOOD.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn cfg() -> KeepAliveConfig {
        KeepAliveConfig {
            connections: 1,
            // The probe's own default: room for the requests the tests need (more than five)
            // when a busy machine makes every request wait for the CPU, twice.
            budget: Duration::from_secs(1),
            ..KeepAliveConfig::new(HttpProbeConfig::default())
        }
    }

    #[test]
    fn a_server_that_closes_every_connection_is_counted() {
        let _flood = flooding();
        let (addr, _h) = server(false);
        let p = keepalive_probe(addr, &cfg()).unwrap();
        assert!(p.requests > 5, "{p:?}");
        assert_eq!(
            (p.connections, p.server_closed, p.reused),
            (p.requests, p.requests, 0)
        );
        assert!(p.lower_bound && p.first_p50_ms > p.request_p50_ms, "{p:?}");
        assert!(p.rps_ratio > 1.0 && p.p50_ratio > 1.0, "{p:?}");
    }

    #[test]
    fn a_keep_alive_server_reuses_one_connection() {
        let _flood = flooding();
        let (addr, _h) = server(true);
        let p = keepalive_probe(addr, &cfg()).unwrap();
        assert_eq!((p.connections, p.server_closed), (1, 0), "{p:?}");
        assert_eq!(p.reused, p.requests - 1, "{p:?}");
        assert!(!p.lower_bound, "{p:?}");
    }

    #[test]
    fn nothing_listening_is_an_error() {
        let closed = netdoctor_lab::ports::ClosedPort::loopback();
        assert!(keepalive_probe(closed.addr(), &cfg()).is_err());
    }
}
