//! Which packet sizes get from the target to this host: a path MTU probe of the answers'
//! direction, with TCP itself as the probe.
//!
//! One connection per packet size, all at once: each sets `TCP_MAXSEG` before `connect()`, so
//! its SYN announces `size − 40` (IPv6: `− 60`) and the server sends its answer in packets of
//! at most `size` bytes, with DF set as Linux TCP always does. Each asks for the target with
//! `Connection: close` and reads until the end of the answer, `max_bytes`, or the shared
//! deadline. A size whose answer brought more than one full segment got through; a size whose
//! answer stopped before one full segment arrived while the connection stayed open stalled.
//! When every size above N stalled and N got through, full-size packets are dropped on the way
//! to this host and no ICMP "fragmentation needed" reached the sender (had one, its kernel
//! would have resent smaller: PMTUD): a path MTU black hole, measured in the direction the
//! answers travel (a DF ping from this host tests the other one).
//!
//! No raw socket and no privilege: the server's own TCP sends the packets. HTTP in clear only
//! (a TLS handshake's certificate would be the first full-size packet, and the probe would
//! need the TLS stack for nothing). Hand-written on std's blocking sockets: a few dozen lines
//! around `TCP_MAXSEG` and `tcp_info`, which no HTTP client crate exposes.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use socket2::{Domain, Socket, Type};

use crate::error::ProbeError;
use crate::http::{HttpProbeConfig, request};
use crate::model::MIN_WAIT;

/// Packet sizes tried by default (bytes, IP header included): Ethernet, PPPoE, common tunnel
/// sizes, the IPv6 minimum, and two below it.
pub const DEFAULT_SIZES: [u32; 10] = [1500, 1492, 1460, 1420, 1400, 1360, 1320, 1280, 1024, 576];

/// What to probe.
#[derive(Debug, Clone)]
pub struct PmtuConfig {
    /// The request (plain HTTP; `tls` must be `None`).
    pub http: HttpProbeConfig,
    /// Packet sizes to try, bytes with the IP and TCP headers.
    pub sizes: Vec<u32>,
    /// How long every size gets, all of them at once.
    pub wait: Duration,
    /// Read no more than this of each answer.
    pub max_bytes: u64,
}

impl PmtuConfig {
    pub fn new(http: HttpProbeConfig) -> Self {
        PmtuConfig {
            http,
            sizes: DEFAULT_SIZES.to_vec(),
            wait: Duration::from_secs(2),
            max_bytes: 64 * 1024,
        }
    }
}

/// What one size's connection got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum StepOutcome {
    /// More than one full segment of the answer arrived.
    Delivered,
    /// The answer stopped before a full segment arrived and the connection stayed open until
    /// the deadline.
    Stalled,
    /// The whole answer was shorter than a segment of this size: it says nothing here.
    TooSmall,
    /// The kernel announced a smaller MSS than asked (this host's own route or interface MTU).
    NotTried { advertised_mss: u32 },
    /// Connect, write or read failed.
    Failed { error: String },
}

/// One packet size and what its connection got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PmtuStep {
    /// Packet size, bytes (IP and TCP headers included).
    pub size: u32,
    /// The MSS the SYN announced for it.
    pub mss: u32,
    /// Answer bytes read (headers included).
    pub bytes: u64,
    #[serde(flatten)]
    pub outcome: StepOutcome,
}

/// The probe's result: a step per size, largest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PmtuProbe {
    pub steps: Vec<PmtuStep>,
    /// How long each size had, ms.
    pub wait_ms: f64,
}

/// A path MTU black hole as the probe measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlackHole {
    /// The largest size that got through.
    pub largest_delivered: u32,
    /// The smallest size that stalled (every tried size from it up stalled).
    pub smallest_stalled: u32,
}

impl PmtuProbe {
    /// Sizes whose answer stalled while a smaller one got through, every stalled size above
    /// every delivered one (random loss stalls sizes at random, if at all); `None` otherwise.
    pub fn black_hole(&self) -> Option<BlackHole> {
        let sizes = |o: fn(&StepOutcome) -> bool| {
            self.steps
                .iter()
                .filter(move |s| o(&s.outcome))
                .map(|s| s.size)
        };
        let largest_delivered = sizes(|o| *o == StepOutcome::Delivered).max()?;
        let smallest_stalled = sizes(|o| *o == StepOutcome::Stalled).min()?;
        (smallest_stalled > largest_delivered).then_some(BlackHole {
            largest_delivered,
            smallest_stalled,
        })
    }

    /// `1500 stalled (0 B), 1400 stalled (212 B), 1280 delivered (64.0 KB), …`
    pub fn describe(&self) -> String {
        self.steps
            .iter()
            .map(|s| {
                let what = match &s.outcome {
                    StepOutcome::Delivered => "delivered",
                    StepOutcome::Stalled => "stalled",
                    StepOutcome::TooSmall => "whole answer smaller than a packet",
                    StepOutcome::NotTried { .. } => "not tried",
                    StepOutcome::Failed { .. } => "failed",
                };
                let detail = match &s.outcome {
                    StepOutcome::NotTried { advertised_mss } => {
                        format!("this host announced MSS {advertised_mss}")
                    }
                    StepOutcome::Failed { error } => error.clone(),
                    _ => format!("{} B", s.bytes),
                };
                format!("{} {what} ({detail})", s.size)
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Runs the probe against `addr`: every size at once, for `cfg.wait` at most.
pub fn pmtu_probe(addr: SocketAddr, cfg: &PmtuConfig) -> Result<PmtuProbe, ProbeError> {
    if cfg.http.tls.is_some() {
        return Err(ProbeError::Http {
            addr,
            msg: "the MTU probe speaks plain HTTP only".into(),
        });
    }
    let req = request(addr, &cfg.http, "close")?;
    let headers: u32 = if addr.is_ipv4() { 40 } else { 60 };
    let deadline = Instant::now() + cfg.wait;
    let mut sizes: Vec<u32> = cfg
        .sizes
        .iter()
        .copied()
        .filter(|s| *s > headers + 64)
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    sizes.dedup();
    let steps = std::thread::scope(|sc| {
        let hs: Vec<_> = sizes
            .iter()
            .map(|&size| {
                let req = req.as_bytes();
                sc.spawn(move || step(addr, size, size - headers, req, deadline, cfg.max_bytes))
            })
            .collect();
        hs.into_iter()
            .zip(&sizes)
            .map(|(h, &size)| {
                h.join().unwrap_or(PmtuStep {
                    size,
                    mss: size - headers,
                    bytes: 0,
                    outcome: StepOutcome::Failed {
                        error: "the probe thread panicked".into(),
                    },
                })
            })
            .collect()
    });
    Ok(PmtuProbe {
        steps,
        wait_ms: cfg.wait.as_secs_f64() * 1e3,
    })
}

fn step(
    addr: SocketAddr,
    size: u32,
    mss: u32,
    req: &[u8],
    deadline: Instant,
    max_bytes: u64,
) -> PmtuStep {
    let mut bytes = 0;
    let outcome = match exchange(addr, mss, req, deadline, max_bytes, &mut bytes) {
        Ok(o) => o,
        Err((op, e)) => StepOutcome::Failed {
            error: format!("{op}: {}", netdoctor_sys::os_error::describe(&e)),
        },
    };
    PmtuStep {
        size,
        mss,
        bytes,
        outcome,
    }
}

fn exchange(
    addr: SocketAddr,
    mss: u32,
    req: &[u8],
    deadline: Instant,
    max_bytes: u64,
    bytes: &mut u64,
) -> Result<StepOutcome, (&'static str, std::io::Error)> {
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(MIN_WAIT)
    };
    let sock =
        Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(|e| ("socket", e))?;
    sock.set_tcp_mss(mss)
        .map_err(|e| ("setsockopt TCP_MAXSEG", e))?;
    sock.connect_timeout(&addr.into(), left())
        .map_err(|e| ("connect", e))?;
    let mut s = std::net::TcpStream::from(sock);
    // What the SYN really announced: the kernel lowers it to its own route's MTU.
    // (`tcpi_advmss` loses the 12 bytes of the timestamp option once it is agreed.)
    let advertised = netdoctor_sys::sockopt::tcp_info(&s).map_or(mss, |i| {
        i.tcpi_advmss + if i.tcpi_options & 1 != 0 { 12 } else { 0 }
    });
    if advertised < mss {
        return Ok(StepOutcome::NotTried {
            advertised_mss: advertised,
        });
    }
    s.set_write_timeout(Some(left()))
        .map_err(|e| ("write", e))?;
    s.write_all(req).map_err(|e| ("write", e))?;
    let mut buf = [0u8; 16 * 1024];
    loop {
        if *bytes >= max_bytes {
            return Ok(StepOutcome::Delivered);
        }
        if Instant::now() >= deadline {
            break;
        }
        s.set_read_timeout(Some(left())).map_err(|e| ("read", e))?;
        match s.read(&mut buf) {
            Ok(0) => {
                return Ok(if *bytes > u64::from(mss) {
                    StepOutcome::Delivered
                } else {
                    StepOutcome::TooSmall
                });
            }
            Ok(n) => *bytes += n as u64,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(("read", e)),
        }
    }
    Ok(if *bytes > u64::from(mss) {
        StepOutcome::Delivered
    } else {
        StepOutcome::Stalled
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(outcomes: &[(u32, StepOutcome)]) -> PmtuProbe {
        PmtuProbe {
            steps: outcomes
                .iter()
                .map(|(size, o)| PmtuStep {
                    size: *size,
                    mss: size - 40,
                    bytes: 0,
                    outcome: o.clone(),
                })
                .collect(),
            wait_ms: 2000.0,
        }
    }

    use StepOutcome::{Delivered as D, Stalled as S, TooSmall as T};

    #[test]
    fn stalled_sizes_above_delivered_ones_are_a_black_hole() {
        let p = probe(&[(1500, S), (1400, S), (1280, D), (576, D)]);
        assert_eq!(
            p.black_hole(),
            Some(BlackHole {
                largest_delivered: 1280,
                smallest_stalled: 1400
            })
        );
    }

    #[test]
    fn no_size_dependence_is_no_black_hole() {
        // Everything through; nothing through; a stall below a delivered size (random loss).
        for steps in [
            vec![(1500, D), (1280, D)],
            vec![(1500, S), (1280, S)],
            vec![(1500, D), (1400, S), (1280, D)],
            vec![(1500, T), (1280, T)],
        ] {
            assert_eq!(probe(&steps).black_hole(), None, "{steps:?}");
        }
    }

    #[test]
    fn a_real_server_on_loopback_delivers_every_size() {
        // A listener kept bound for the whole test; it answers each connection with 200 KB.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..3 {
                let Ok((mut c, _)) = l.accept() else { return };
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let body = vec![b'x'; 200 * 1024];
                let _ = c.write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
                );
                let _ = c.write_all(&body);
            }
        });
        let mut cfg = PmtuConfig::new(HttpProbeConfig::default());
        cfg.sizes = vec![1500, 1280, 576];
        cfg.wait = Duration::from_secs(10);
        let p = pmtu_probe(addr, &cfg).unwrap();
        server.join().unwrap();
        assert_eq!(p.steps.len(), 3, "{p:?}");
        for s in &p.steps {
            assert_eq!(s.outcome, StepOutcome::Delivered, "{}", p.describe());
        }
        assert_eq!(p.black_hole(), None);
    }
}
