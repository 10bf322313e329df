//! The raw-socket SYN probe, as `hping3 -S` does it.
//!
//! For each probe: a TCP socket is bound (not listening, not connected) to port 0 on the source
//! address, which reserves a source port; a hand-built SYN (MSS option) leaves from that port on
//! a raw `IPPROTO_TCP` socket; the target's SYN/ACK (or RST) is matched in userspace on the same
//! raw socket — no BPF filter, the raw socket is only `connect()`ed to the target so the kernel
//! skips packets from other hosts. Our kernel answers the SYN/ACK with a RST itself (no socket is
//! in SYN_SENT for that 4-tuple), so no connection is ever left on the target: it never reaches
//! its accept queue, and its SYN_RECV entry is dropped by the RST.
//!
//! Source address: a UDP socket is `connect()`ed to the target and `getsockname` tells which
//! address the route uses. IPv4: the TCP checksum is computed here with the pseudo header;
//! IPv6: `IPV6_CHECKSUM` = 16 makes the kernel fill it (an IPv6 raw socket never sees or writes
//! the IP header, so it does not know the addresses in userspace terms anyway).
//!
//! Timestamps, both CLOCK_REALTIME and taken by the kernel:
//! - receive: `SO_TIMESTAMPNS`, the `SCM_TIMESTAMPNS` control message of the SYN/ACK;
//! - send: `SO_TIMESTAMPING` with `SOF_TIMESTAMPING_TX_SOFTWARE | SOFTWARE | OPT_TSONLY`, read
//!   from the error queue (`MSG_ERRQUEUE`). **This works on raw sockets here** (kernel 6.18,
//!   IPv4 and IPv6, on `lo`: the loopback driver stamps in `loopback_xmit`), so the RTT spans
//!   device transmit of the SYN to device receive of the SYN/ACK, without scheduler noise. When a
//!   kernel or driver gives no TX timestamp, `clock_gettime(CLOCK_REALTIME)` taken right before
//!   `send()` is used instead.
//!
//! Limitation: the raw socket receives a copy of every TCP packet from the target address (on
//! loopback: all local TCP traffic). Under heavy concurrent loopback load and CPU contention a
//! SYN/ACK can be dropped from the socket queue and the probe counts as lost; a classic BPF
//! filter on the ports (SO_ATTACH_FILTER) would remove that, the userspace match was chosen to
//! keep this code free of filter programs.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use netdoctor_sys::sockopt;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::model::{MIN_WAIT, Outcome, SynMethod, SynProbe, SynProbeConfig};
use crate::packet::{self, Answer};
use crate::sys;

/// Why the raw probe could not start.
#[derive(Debug)]
pub(crate) enum SetupError {
    /// EPERM/EACCES creating the raw socket: CAP_NET_RAW is missing.
    NoPermission,
    /// Anything else, described with the operation.
    Other(String),
}

/// A finished raw run, with how many send times came from kernel TX timestamps.
#[derive(Debug)]
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the stamp counts are checked by tests only")
)]
pub(crate) struct RawRun {
    pub probe: SynProbe,
    /// Answered probes whose send time is a kernel TX software timestamp.
    pub kernel_tx_stamps: u32,
    /// Answered probes whose receive time is a kernel `SCM_TIMESTAMPNS`.
    pub kernel_rx_stamps: u32,
}

/// Upper bound on packets examined while waiting for one answer (the raw socket sees every TCP
/// packet from the target address, e.g. a concurrent load test's traffic on loopback).
const MAX_PACKETS_PER_PROBE: u32 = 200_000;

fn other(op: &str, addr: SocketAddr, e: io::Error) -> SetupError {
    SetupError::Other(format!("{op} {addr}: {e}"))
}

/// The source address the kernel would use toward `target`.
fn source_addr(target: SocketAddr) -> io::Result<SocketAddr> {
    let bind: SocketAddr = match target {
        SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), 0).into(),
        SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), 0).into(),
    };
    let udp = UdpSocket::bind(bind)?;
    udp.connect(target)?;
    udp.local_addr()
}

/// Sets up the raw socket and runs `cfg.count` probes to `target`.
pub(crate) fn probe(target: SocketAddr, cfg: &SynProbeConfig) -> Result<RawRun, SetupError> {
    // ::ffff:a.b.c.d cannot be reached through an IPv6 raw socket: probe a.b.c.d over IPv4.
    let target = SocketAddr::new(target.ip().to_canonical(), target.port());
    let domain = Domain::for_address(target);
    let raw = match Socket::new(domain, Type::RAW, Some(Protocol::TCP)) {
        Ok(s) => s,
        Err(e) if netdoctor_sys::os_error::is_permission(&e) => {
            return Err(SetupError::NoPermission);
        }
        Err(e) => return Err(other("raw socket for", target, e)),
    };
    let mut src = source_addr(target).map_err(|e| other("route to", target, e))?;
    src.set_port(0);
    let mut dst = target;
    dst.set_port(0); // on raw IPv6 sockets the port field means "protocol": must be 0
    raw.bind(&src.into())
        .map_err(|e| other("bind raw socket to", src, e))?;
    raw.connect(&dst.into())
        .map_err(|e| other("connect raw socket to", target, e))?;
    if target.is_ipv6() {
        sockopt::set_int(&raw, libc::IPPROTO_IPV6, libc::IPV6_CHECKSUM, 16)
            .map_err(|e| other("set IPV6_CHECKSUM for", target, e))?;
    }
    sockopt::set_int(&raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
        .map_err(|e| other("set SO_TIMESTAMPNS for", target, e))?;
    // Best effort: without TX timestamps the send time comes from clock_gettime.
    let tx_flags = libc::SOF_TIMESTAMPING_TX_SOFTWARE
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    let _ = sockopt::set_int(
        &raw,
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        tx_flags as i32,
    );
    // The raw socket gets a copy of every TCP packet from the target address (on loopback: of
    // all local TCP traffic, e.g. a load test running meanwhile). A big buffer keeps the SYN/ACK
    // from being dropped behind them; SO_RCVBUFFORCE (CAP_NET_ADMIN) passes net.core.rmem_max.
    if sockopt::set_int(&raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 4 << 20).is_err() {
        let _ = raw.set_recv_buffer_size(4 << 20);
    }

    let mss = if target.is_ipv6() { 1440 } else { 1460 };
    let isn_base = isn_seed();
    let mut outcomes = Vec::with_capacity(cfg.count.min(10_000) as usize);
    let mut kernel_tx_stamps = 0;
    let mut kernel_rx_stamps = 0;
    // Port reservations live until every probe is done, so a late SYN/ACK still finds the port
    // bound (and gets the kernel's RST) rather than reaching some new socket.
    let mut reserved = Vec::new();
    for i in 0..cfg.count {
        if i > 0 {
            std::thread::sleep(cfg.interval);
        }
        let Ok((port_sock, local_port)) = reserve_port(src) else {
            outcomes.push(Outcome::Lost);
            continue;
        };
        reserved.push(port_sock);
        let isn = isn_base.wrapping_add(i.wrapping_mul(0x0100_0193));
        let mut syn = packet::build_syn(local_port, target.port(), isn, mss);
        if let (IpAddr::V4(s), IpAddr::V4(d)) = (src.ip(), target.ip()) {
            packet::fill_ipv4_checksum(&mut syn, s, d);
        }
        drain_errqueue(&raw);
        let user_tx = realtime();
        let start = Instant::now();
        if raw.send(&syn).is_err() {
            outcomes.push(Outcome::Lost);
            continue;
        }
        let wait = wait_answer(
            &raw,
            target,
            local_port,
            isn,
            start + cfg.timeout.max(MIN_WAIT),
        );
        let Some((answer, rx)) = wait else {
            outcomes.push(Outcome::Lost);
            continue;
        };
        match answer {
            Answer::Rst => outcomes.push(Outcome::Refused),
            Answer::SynAck => {
                let kernel_tx = drain_errqueue(&raw);
                kernel_tx_stamps += u32::from(kernel_tx.is_some());
                kernel_rx_stamps += u32::from(rx.is_some());
                let tx = kernel_tx.unwrap_or(user_tx);
                let rtt = match rx.and_then(|rx| rx.checked_sub(tx)) {
                    // a wall-clock step between the stamps: fall back to the monotonic clock
                    Some(d) if d <= start.elapsed() + Duration::from_millis(1) => d,
                    _ => start.elapsed(),
                };
                outcomes.push(Outcome::Answered(rtt));
            }
        }
    }
    drop(reserved);
    Ok(RawRun {
        probe: SynProbe::from_outcomes(SynMethod::RawSyn, &outcomes),
        kernel_tx_stamps,
        kernel_rx_stamps,
    })
}

/// Binds (without listening) a TCP socket to port 0 on `src`: the port is ours, and a SYN/ACK
/// to it gets a RST from the kernel.
fn reserve_port(src: SocketAddr) -> io::Result<(Socket, u16)> {
    let s = Socket::new(Domain::for_address(src), Type::STREAM, Some(Protocol::TCP))?;
    s.bind(&SockAddr::from(src))?;
    let port = s
        .local_addr()?
        .as_socket()
        .map(|a| a.port())
        .ok_or_else(|| io::Error::other("bound socket has no inet address"))?;
    Ok((s, port))
}

/// Waits until `deadline` for the answer to the probe with `isn` from `local_port`. Returns the
/// answer and its kernel receive timestamp.
fn wait_answer(
    raw: &Socket,
    target: SocketAddr,
    local_port: u16,
    isn: u32,
    deadline: Instant,
) -> Option<(Answer, Option<Duration>)> {
    let mut buf = [0u8; 2048];
    let mut ctrl = [0u8; 512];
    for _ in 0..MAX_PACKETS_PER_PROBE {
        let left = deadline.checked_duration_since(Instant::now())?;
        raw.set_read_timeout(Some(left.max(MIN_WAIT))).ok()?;
        let got = match sys::recvmsg(raw, &mut buf, &mut ctrl, 0) {
            Ok(g) => g,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return None, // timed out (EAGAIN) or a socket error
        };
        let data = &buf[..got.len.min(buf.len())];
        let head = match target {
            SocketAddr::V4(t) => match packet::parse_ipv4_tcp(data) {
                Some((s, _, h)) if s == *t.ip() => h,
                _ => continue,
            },
            SocketAddr::V6(t) => match got.from {
                Some(SocketAddr::V6(f)) if f.ip() == t.ip() => match packet::parse_tcp(data) {
                    Some(h) => h,
                    None => continue,
                },
                _ => continue,
            },
        };
        if let Some(answer) = packet::classify(&head, target.port(), local_port, isn) {
            let cm = sys::cmsgs(&ctrl[..got.ctrl_len]);
            return Some((answer, sys::rx_timestamp(&cm)));
        }
    }
    None
}

/// Reads everything on the error queue; returns the last software TX timestamp found.
fn drain_errqueue(raw: &Socket) -> Option<Duration> {
    let mut buf = [0u8; 64];
    let mut ctrl = [0u8; 512];
    let mut last = None;
    for _ in 0..64 {
        match sys::recvmsg(
            raw,
            &mut buf,
            &mut ctrl,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
        ) {
            Ok(got) => {
                if let Some(ts) = sys::tx_timestamp(&sys::cmsgs(&ctrl[..got.ctrl_len])) {
                    last = Some(ts);
                }
            }
            Err(_) => break,
        }
    }
    last
}

fn realtime() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// An initial sequence number that differs per run (no RNG crate needed for this).
fn isn_seed() -> u32 {
    let t = realtime();
    (t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(16)) ^ std::process::id().rotate_left(8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// True when this thread may open raw sockets (root / CAP_NET_RAW).
    fn can_raw() -> bool {
        netdoctor_sys::privilege::Privileges::current()
            .check(netdoctor_sys::privilege::Feature::RawSynProbe)
            .is_ok()
    }

    fn cfg(count: u32) -> SynProbeConfig {
        SynProbeConfig {
            count,
            timeout: Duration::from_secs(2),
            interval: Duration::from_millis(1),
        }
    }

    /// Sockets in /proc/net/tcp{,6} on `port` other than the listener itself (SYN_RECV request
    /// sockets included: the kernel lists them there).
    fn non_listen_entries(v6: bool, port: u16) -> Vec<String> {
        let file = if v6 {
            "/proc/net/tcp6"
        } else {
            "/proc/net/tcp"
        };
        let text = std::fs::read_to_string(file).unwrap();
        let want = format!(":{port:04X}");
        text.lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[1].ends_with(&want) && f[3] != "0A"
            })
            .map(str::to_string)
            .collect()
    }

    fn listener_case(bind: &str) {
        if !can_raw() {
            eprintln!("skipped: no CAP_NET_RAW");
            return;
        }
        let _quiet = crate::keepalive::tests::flooding();
        let l = TcpListener::bind(bind).unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let run = probe(addr, &cfg(5)).expect("raw probe runs as root");
        let p = &run.probe;
        assert_eq!(p.method, SynMethod::RawSyn);
        assert_eq!(
            (p.sent, p.answered, p.refused, p.lost),
            (5, 5, 0, 0),
            "{p:?}"
        );
        assert_eq!(p.rtt_ms.len(), 5);
        // loopback: well below a millisecond usually; generous bound for a noisy machine
        assert!(p.rtt_ms.iter().all(|&r| r > 0.0 && r < 500.0), "{p:?}");
        assert!(p.min_ms <= p.median_ms && p.median_ms <= p.max_ms);
        // Kernel timestamps on both ends (what the module doc claims for this kernel).
        assert_eq!(run.kernel_rx_stamps, 5, "no SCM_TIMESTAMPNS on the SYN/ACK");
        assert_eq!(
            run.kernel_tx_stamps, 5,
            "no TX software timestamp on the error queue"
        );
        // The kernel RST the SYN/ACKs: nothing reaches accept(), no SYN_RECV stays. The RST is
        // processed in softirq right after the SYN/ACK, possibly just after we saw the SYN/ACK;
        // wait for that, bounded well below the 1 s SYN/ACK retransmission.
        let until = Instant::now() + Duration::from_millis(500);
        let mut left = non_listen_entries(addr.is_ipv6(), addr.port());
        while !left.is_empty() && Instant::now() < until {
            std::thread::yield_now();
            left = non_listen_entries(addr.is_ipv6(), addr.port());
        }
        assert!(
            left.is_empty(),
            "connections left on the listener port: {left:?}"
        );
        match l.accept() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => panic!("the probe left a connection to accept: {other:?}"),
        }
    }

    #[test]
    fn raw_syn_to_listener_v4() {
        listener_case("127.0.0.1:0");
    }

    #[test]
    fn raw_syn_to_listener_v6() {
        listener_case("[::1]:0");
    }

    fn closed_case(bind: &str) {
        if !can_raw() {
            eprintln!("skipped: no CAP_NET_RAW");
            return;
        }
        let _quiet = crate::keepalive::tests::flooding();
        let addr = TcpListener::bind(bind).unwrap().local_addr().unwrap(); // dropped: closed
        let run = probe(addr, &cfg(3)).expect("raw probe runs as root");
        let p = &run.probe;
        assert_eq!(
            (p.sent, p.answered, p.refused, p.lost),
            (3, 0, 3, 0),
            "{p:?}"
        );
        assert!(p.rtt_ms.is_empty() && p.median_ms.is_none());
    }

    #[test]
    fn raw_syn_to_closed_port_v4() {
        closed_case("127.0.0.1:0");
    }

    #[test]
    fn raw_syn_to_closed_port_v6() {
        closed_case("[::1]:0");
    }

    #[test]
    fn v4_mapped_target_is_probed_over_ipv4() {
        if !can_raw() {
            eprintln!("skipped: no CAP_NET_RAW");
            return;
        }
        let _quiet = crate::keepalive::tests::flooding();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mapped: SocketAddr = format!("[::ffff:127.0.0.1]:{port}").parse().unwrap();
        let p = probe(mapped, &cfg(2))
            .expect("raw probe runs as root")
            .probe;
        assert_eq!((p.sent, p.answered), (2, 2), "{p:?}");
    }
}
