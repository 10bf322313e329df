//! TCP SYN round-trip time, the way `hping3 -S` measures it, with a fallback to `connect()` timing.
//!
//! [`syn_rtt`] first tries the raw-socket probe (see the `raw` module: a hand-built SYN, the
//! kernel's SYN/ACK → RST, kernel timestamps on both ends). Without CAP_NET_RAW it times
//! non-blocking `connect()` calls instead (time until the socket is writable, i.e. until the
//! SYN/ACK came back and the kernel sent the ACK) and says so in `fallback_reason`. Both methods
//! never fail hard: every probe ends as answered, refused (RST: nothing listens) or lost.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, Socket, Type};

use crate::raw;

/// Settings of a SYN RTT measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynProbeConfig {
    /// Number of probes (default 5).
    pub count: u32,
    /// How long to wait for each answer (default 1 s).
    pub timeout: Duration,
    /// Pause between probes (default 20 ms).
    pub interval: Duration,
}

impl Default for SynProbeConfig {
    fn default() -> Self {
        SynProbeConfig {
            count: 5,
            timeout: Duration::from_secs(1),
            interval: Duration::from_millis(20),
        }
    }
}

/// How the round trips were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynMethod {
    /// Hand-built SYN on a raw socket, SYN/ACK matched on the same socket (needs CAP_NET_RAW).
    RawSyn,
    /// Non-blocking `connect()`, time until writable.
    Connect,
}

/// The result of a SYN RTT measurement. `sent == answered + refused + lost`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynProbe {
    /// How the probes were made.
    pub method: SynMethod,
    /// Why the raw-socket method was not used, when it was not.
    pub fallback_reason: Option<String>,
    /// Probes sent.
    pub sent: u32,
    /// Probes answered with SYN/ACK (connect succeeded).
    pub answered: u32,
    /// Probes answered with RST: nothing listens on the port.
    pub refused: u32,
    /// Probes without an answer within the timeout (or that could not be sent).
    pub lost: u32,
    /// One round-trip time per answered probe, in milliseconds, in probe order.
    pub rtt_ms: Vec<f64>,
    /// Smallest of `rtt_ms`.
    pub min_ms: Option<f64>,
    /// Median of `rtt_ms` (mean of the two middle values for an even count).
    pub median_ms: Option<f64>,
    /// Largest of `rtt_ms`.
    pub max_ms: Option<f64>,
}

/// What one probe found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Outcome {
    Answered(Duration),
    Refused,
    Lost,
}

impl SynProbe {
    /// Builds the result from per-probe outcomes.
    pub(crate) fn from_outcomes(method: SynMethod, outcomes: &[Outcome]) -> SynProbe {
        let mut p = SynProbe {
            method,
            fallback_reason: None,
            sent: outcomes.len() as u32,
            answered: 0,
            refused: 0,
            lost: 0,
            rtt_ms: Vec::new(),
            min_ms: None,
            median_ms: None,
            max_ms: None,
        };
        for o in outcomes {
            match o {
                Outcome::Answered(d) => {
                    p.answered += 1;
                    p.rtt_ms.push(d.as_secs_f64() * 1e3);
                }
                Outcome::Refused => p.refused += 1,
                Outcome::Lost => p.lost += 1,
            }
        }
        let mut sorted = p.rtt_ms.clone();
        sorted.sort_by(f64::total_cmp);
        p.min_ms = sorted.first().copied();
        p.max_ms = sorted.last().copied();
        p.median_ms = match sorted.len() {
            0 => None,
            n if n % 2 == 1 => Some(sorted[n / 2]),
            n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
        };
        p
    }
}

/// The shortest wait we ever pass to the kernel: a zero timeout means "forever" to SO_RCVTIMEO.
pub(crate) const MIN_WAIT: Duration = Duration::from_millis(1);

/// Measures the SYN round trip to `addr`: raw SYN when allowed, else `connect()` timing.
/// Never fails: problems end up in the counters and in `fallback_reason`.
pub fn syn_rtt(addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe {
    syn_rtt_with(addr, cfg, None)
}

/// [`syn_rtt`] with the method forced (`Some`) or chosen as usual (`None`). With
/// `Some(SynMethod::RawSyn)` and no permission, the result is still the connect fallback.
pub(crate) fn syn_rtt_with(
    addr: SocketAddr,
    cfg: &SynProbeConfig,
    method: Option<SynMethod>,
) -> SynProbe {
    if method == Some(SynMethod::Connect) {
        return connect_rtt(addr, cfg);
    }
    match raw::probe(addr, cfg) {
        Ok(run) => run.probe,
        Err(raw::SetupError::NoPermission) => {
            let mut p = connect_rtt(addr, cfg);
            p.fallback_reason = Some("raw sockets need CAP_NET_RAW; used connect() timing".into());
            p
        }
        Err(raw::SetupError::Other(msg)) => {
            let mut p = connect_rtt(addr, cfg);
            p.fallback_reason = Some(format!(
                "raw SYN probe unavailable: {msg}; used connect() timing"
            ));
            p
        }
    }
}

/// Times `cfg.count` non-blocking `connect()` calls to `addr` (needs no privilege).
///
/// Each successful connection is closed with SO_LINGER 0 (a RST), so the probe leaves no
/// TIME_WAIT behind, like the raw probe; the server may see a short-lived accepted connection.
pub fn connect_rtt(addr: SocketAddr, cfg: &SynProbeConfig) -> SynProbe {
    let timeout = cfg.timeout.max(MIN_WAIT);
    let target = socket2::SockAddr::from(addr);
    let mut outcomes = Vec::with_capacity(cfg.count.min(10_000) as usize);
    for i in 0..cfg.count {
        if i > 0 {
            std::thread::sleep(cfg.interval);
        }
        let sock = match Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)) {
            Ok(s) => s,
            Err(_) => {
                outcomes.push(Outcome::Lost);
                continue;
            }
        };
        let start = Instant::now();
        let res = sock.connect_timeout(&target, timeout);
        let elapsed = start.elapsed();
        outcomes.push(match res {
            Ok(()) => {
                let _ = sock.set_linger(Some(Duration::ZERO));
                Outcome::Answered(elapsed)
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Outcome::Refused,
            Err(_) => Outcome::Lost,
        });
    }
    SynProbe::from_outcomes(SynMethod::Connect, &outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_from_outcomes() {
        let ms = Duration::from_millis;
        let p = SynProbe::from_outcomes(
            SynMethod::RawSyn,
            &[
                Outcome::Answered(ms(3)),
                Outcome::Lost,
                Outcome::Answered(ms(1)),
                Outcome::Refused,
                Outcome::Answered(ms(10)),
                Outcome::Answered(ms(2)),
            ],
        );
        assert_eq!((p.sent, p.answered, p.refused, p.lost), (6, 4, 1, 1));
        assert_eq!(p.rtt_ms, vec![3.0, 1.0, 10.0, 2.0]);
        assert_eq!(p.min_ms, Some(1.0));
        assert_eq!(p.max_ms, Some(10.0));
        assert_eq!(p.median_ms, Some(2.5));
        let odd = SynProbe::from_outcomes(
            SynMethod::Connect,
            &[
                Outcome::Answered(ms(5)),
                Outcome::Answered(ms(1)),
                Outcome::Answered(ms(4)),
            ],
        );
        assert_eq!(odd.median_ms, Some(4.0));
        let none = SynProbe::from_outcomes(SynMethod::Connect, &[Outcome::Lost]);
        assert_eq!(
            (none.min_ms, none.median_ms, none.max_ms),
            (None, None, None)
        );
    }

    #[test]
    fn serializes_with_snake_case_method() {
        let mut p = SynProbe::from_outcomes(SynMethod::RawSyn, &[Outcome::Refused]);
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["method"], "raw_syn");
        assert_eq!(v["refused"], 1);
        p.method = SynMethod::Connect;
        let back: SynProbe = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        assert_eq!(serde_json::to_value(&p).unwrap()["method"], "connect");
    }

    fn quick(count: u32) -> SynProbeConfig {
        SynProbeConfig {
            count,
            timeout: Duration::from_secs(2),
            interval: Duration::from_millis(1),
        }
    }

    #[test]
    fn connect_method_to_listener() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let p = syn_rtt_with(addr, &quick(4), Some(SynMethod::Connect));
        assert_eq!(p.method, SynMethod::Connect);
        assert_eq!(p.fallback_reason, None);
        assert_eq!(
            (p.sent, p.answered, p.refused, p.lost),
            (4, 4, 0, 0),
            "{p:?}"
        );
        assert!(p.rtt_ms.iter().all(|&r| r > 0.0 && r < 500.0), "{p:?}");
        // connect() really completed the handshakes: they wait in the accept queue
        l.set_nonblocking(true).unwrap();
        let accepted = std::iter::from_fn(|| l.accept().ok()).take(10).count();
        assert_eq!(accepted, 4);
    }

    #[test]
    fn connect_method_to_closed_port_v6() {
        let addr = std::net::TcpListener::bind("[::1]:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let p = connect_rtt(addr, &quick(3));
        assert_eq!(
            (p.sent, p.answered, p.refused, p.lost),
            (3, 0, 3, 0),
            "{p:?}"
        );
    }

    #[test]
    fn zero_count_sends_nothing() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let p = syn_rtt(addr, &quick(0));
        assert_eq!((p.sent, p.answered, p.refused, p.lost), (0, 0, 0, 0));
        assert!(p.rtt_ms.is_empty());
    }

    /// Drops CAP_NET_RAW from the effective set of the calling thread only (capabilities are
    /// per thread in Linux; the raw `capset` syscall, unlike glibc's setuid family, does not
    /// broadcast to other threads). Returns false when the thread had no CAP_NET_RAW anyway.
    fn drop_net_raw_in_this_thread() -> bool {
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const VERSION_3: u32 = 0x2008_0522;
        const CAP_NET_RAW: u32 = 13;
        let mut hdr = Header {
            version: VERSION_3,
            pid: 0,
        };
        let mut data = [Data::default(); 2];
        // SAFETY: capget writes two `Data` structs (version 3 layout) into `data` and reads `hdr`.
        let rc = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
        assert_eq!(rc, 0, "capget: {}", std::io::Error::last_os_error());
        if data[0].effective & (1 << CAP_NET_RAW) == 0 {
            return false;
        }
        data[0].effective &= !(1 << CAP_NET_RAW);
        // SAFETY: capset reads `hdr` and two `Data` structs; pid 0 is this thread only.
        let rc = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
        assert_eq!(rc, 0, "capset: {}", std::io::Error::last_os_error());
        true
    }

    #[test]
    fn falls_back_to_connect_without_cap_net_raw() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let p = std::thread::spawn(move || {
            drop_net_raw_in_this_thread();
            syn_rtt(addr, &quick(2))
        })
        .join()
        .unwrap();
        assert_eq!(p.method, SynMethod::Connect, "{p:?}");
        let why = p.fallback_reason.as_deref().unwrap_or("");
        assert!(why.contains("CAP_NET_RAW"), "{why}");
        assert_eq!((p.sent, p.answered), (2, 2), "{p:?}");
        // the other threads of the process keep the capability
        if crate::raw::tests::can_raw() {
            assert_eq!(syn_rtt(addr, &quick(1)).method, SynMethod::RawSyn);
        }
    }
}
