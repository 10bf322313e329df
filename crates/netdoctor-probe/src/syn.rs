//! TCP SYN round-trip time, the way `hping3 -S` measures it, with a fallback to `connect()` timing.
//!
//! [`syn_rtt`] first tries the raw-socket probe (see the `raw` module: a hand-built SYN, the
//! kernel's SYN/ACK → RST, kernel timestamps on both ends). Without CAP_NET_RAW it times
//! non-blocking `connect()` calls instead (time until the socket is writable, i.e. until the
//! SYN/ACK came back and the kernel sent the ACK) and says so in `fallback_reason`. Both methods
//! never fail hard: every probe ends as answered, refused (RST: nothing listens) or lost.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netdoctor_sys::privilege::{Feature, Privileges};
use socket2::{Domain, Protocol, Socket, Type};

use crate::model::{MIN_WAIT, Outcome, SynMethod, SynProbe, SynProbeConfig};
use crate::raw;

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
            let missing = Privileges::current()
                .check(Feature::RawSynProbe)
                .err()
                .map_or("CAP_NET_RAW".to_string(), |m| m.capability_names());
            p.fallback_reason = Some(format!("raw sockets need {missing}; used connect() timing"));
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
        // Held, not merely freed: a freed port may be taken, or be a connect's own local port.
        let closed = netdoctor_lab::ports::ClosedPort::bind(std::net::Ipv6Addr::LOCALHOST).unwrap();
        let p = connect_rtt(closed.addr(), &quick(3));
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

    #[test]
    fn falls_back_to_connect_without_cap_net_raw() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let p = std::thread::spawn(move || {
            let _ = netdoctor_sys::privilege::drop_effective_in_this_thread(
                netdoctor_sys::privilege::Capability::NetRaw,
            );
            syn_rtt(addr, &quick(2))
        })
        .join()
        .unwrap();
        assert_eq!(p.method, SynMethod::Connect, "{p:?}");
        let why = p.fallback_reason.as_deref().unwrap_or("");
        assert!(why.contains("CAP_NET_RAW"), "{why}");
        assert_eq!((p.sent, p.answered), (2, 2), "{p:?}");
        // the other threads of the process keep the capability
        if Privileges::current().check(Feature::RawSynProbe).is_ok() {
            assert_eq!(syn_rtt(addr, &quick(1)).method, SynMethod::RawSyn);
        }
    }
}
