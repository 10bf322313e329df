//! One probe: a socket sent toward the target with a given TTL, and what came back.
//!
//! Every probe has its own socket, so matching a reply to its probe is the kernel's job for TCP,
//! UDP and ICMP datagram sockets (their ICMP errors land on the error queue of the socket that
//! caused them, IP_RECVERR). Only raw ICMP sockets see every ICMP packet; there each probe keeps
//! the packets carrying its own identifier and sequence number.
//!
//! - TCP: a non-blocking `connect()` with IP_TTL set. The kernel sends the SYN; a router's Time
//!   Exceeded aborts the connect and is queued with the router's address; a SYN-ACK (connected)
//!   or a RST (refused) means the destination answered. No privilege is needed — the method of
//!   `traceroute -T`'s unprivileged `tcpconn` module. What it cannot do: keep one source port for
//!   every probe (each connect picks a new one, so routers that balance per flow may show more
//!   than one address at a hop).
//! - UDP: a connected datagram socket, IP_TTL, IP_RECVERR: Time Exceeded from routers, Port
//!   Unreachable from the destination. Unprivileged.
//! - ICMP: echo requests. A raw socket needs CAP_NET_RAW; an ICMP datagram ("ping") socket
//!   needs the group id within `net.ipv4.ping_group_range`.

use super::sys;
use serde::Serialize;
use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::time::{Instant, SystemTime};

/// What a probe learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    /// A router on the way: ICMP Time Exceeded.
    TimeExceeded,
    /// The destination answered (SYN-ACK, RST, port unreachable, echo reply).
    Reached,
    /// A router said the destination is unreachable (ICMP type 3 from someone else).
    Unreachable { code: u8 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reply {
    pub from: IpAddr,
    pub kind: ReplyKind,
    /// When we saw it (after poll woke us).
    pub at: Instant,
    /// When the kernel received it (SO_TIMESTAMPNS), for errors and datagrams.
    pub kernel_at: Option<SystemTime>,
}

/// How probes are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    TcpConnect,
    Udp,
    IcmpRaw,
    IcmpDgram,
}

impl Method {
    pub fn describe(self) -> &'static str {
        match self {
            Method::TcpConnect => "tcp connect() with IP_RECVERR (unprivileged)",
            Method::Udp => "udp with IP_RECVERR (unprivileged)",
            Method::IcmpRaw => "icmp echo on a raw socket (CAP_NET_RAW)",
            Method::IcmpDgram => "icmp echo on a datagram (ping) socket (unprivileged)",
        }
    }
}

/// One probe in flight.
pub struct Probe {
    pub ttl: u8,
    pub sent_at: Instant,
    /// Wall-clock send time, to compare with kernel receive timestamps.
    pub sent_wall: SystemTime,
    sock: Socket,
    method: Method,
    target: Ipv4Addr,
    /// Raw ICMP: our echo id and sequence number.
    ident: u16,
    seq: u16,
    pub reply: Option<Reply>,
    /// A local error that ended the probe (no route, …).
    pub error: Option<String>,
}

fn v4(target: Ipv4Addr, port: u16) -> SockAddr {
    SocketAddr::V4(SocketAddrV4::new(target, port)).into()
}

/// The ICMP echo request (type 8) with its checksum.
pub fn echo_request(ident: u16, seq: u16) -> [u8; 16] {
    let mut p = [0u8; 16];
    p[0] = 8;
    p[4..6].copy_from_slice(&ident.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    p[8..16].copy_from_slice(b"netdoctr");
    let sum = checksum(&p);
    p[2..4].copy_from_slice(&sum.to_be_bytes());
    p
}

pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Parses an IPv4 packet read from a raw ICMP socket: the reply kind and sender when it answers
/// our echo (`ident`, `seq`), either directly (echo reply) or quoted inside an ICMP error.
pub fn parse_raw_icmp(pkt: &[u8], ident: u16, seq: u16) -> Option<(IpAddr, ReplyKind)> {
    let ihl = usize::from(pkt.first()? & 0x0f) * 4;
    let src = Ipv4Addr::new(*pkt.get(12)?, pkt[13], pkt[14], pkt[15]);
    let icmp = pkt.get(ihl..)?;
    let ours = |echo: &[u8]| -> bool {
        echo.len() >= 8
            && echo[0] == 8
            && u16::from_be_bytes([echo[4], echo[5]]) == ident
            && u16::from_be_bytes([echo[6], echo[7]]) == seq
    };
    match *icmp.first()? {
        0 => {
            let id_ok = u16::from_be_bytes([*icmp.get(4)?, *icmp.get(5)?]) == ident;
            let seq_ok = u16::from_be_bytes([*icmp.get(6)?, *icmp.get(7)?]) == seq;
            (id_ok && seq_ok).then_some((IpAddr::V4(src), ReplyKind::Reached))
        }
        t @ (3 | 11) => {
            let inner = icmp.get(8..)?;
            let inner_ihl = usize::from(inner.first()? & 0x0f) * 4;
            if !ours(inner.get(inner_ihl..)?) {
                return None;
            }
            let kind = if t == 11 {
                ReplyKind::TimeExceeded
            } else {
                ReplyKind::Unreachable { code: icmp[1] }
            };
            Some((IpAddr::V4(src), kind))
        }
        _ => None,
    }
}

impl Probe {
    /// Opens the socket for `method` and sends the probe.
    pub fn send(
        method: Method,
        target: Ipv4Addr,
        port: u16,
        ttl: u8,
        ident: u16,
        seq: u16,
    ) -> std::io::Result<Probe> {
        let sock = open(method)?;
        sock.set_ttl_v4(u32::from(ttl))?;
        if method != Method::IcmpRaw {
            sys::enable_recverr(&sock)?;
        }
        sys::enable_rx_timestamps(&sock);
        let sent_wall = SystemTime::now();
        let sent_at = Instant::now();
        let mut probe = Probe {
            ttl,
            sent_at,
            sent_wall,
            sock,
            method,
            target,
            ident,
            seq,
            reply: None,
            error: None,
        };
        match method {
            Method::TcpConnect => match probe.sock.connect(&v4(target, port)) {
                Ok(()) => probe.finish(IpAddr::V4(target), ReplyKind::Reached, None),
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            },
            Method::Udp => {
                probe.sock.connect(&v4(target, port))?;
                probe.sock.send(b"netdoctor trace probe")?;
            }
            Method::IcmpDgram | Method::IcmpRaw => {
                probe
                    .sock
                    .send_to(&echo_request(ident, seq), &v4(target, 0))?;
            }
        }
        Ok(probe)
    }

    pub fn fd(&self) -> std::os::fd::RawFd {
        self.sock.as_raw_fd()
    }

    pub fn done(&self) -> bool {
        self.reply.is_some() || self.error.is_some()
    }

    /// poll(2) events this probe waits for.
    pub fn events(&self) -> libc::c_short {
        match self.method {
            Method::TcpConnect => libc::POLLOUT | libc::POLLERR,
            _ => libc::POLLIN | libc::POLLERR,
        }
    }

    fn finish(&mut self, from: IpAddr, kind: ReplyKind, kernel_at: Option<SystemTime>) {
        if self.reply.is_none() {
            self.reply = Some(Reply {
                from,
                kind,
                at: Instant::now(),
                kernel_at,
            });
        }
    }

    /// Round-trip time: kernel receive time minus send time when the kernel stamped the
    /// reply, else the time poll(2) woke us (TCP SYN-ACK/RST, or no timestamps).
    pub fn rtt(&self) -> Option<std::time::Duration> {
        let r = self.reply?;
        let user = r.at.duration_since(self.sent_at);
        Some(
            r.kernel_at
                .and_then(|k| k.duration_since(self.sent_wall).ok())
                .filter(|k| *k <= user)
                .unwrap_or(user),
        )
    }

    fn classify(&self, e: sys::QueuedError) -> (IpAddr, ReplyKind) {
        let from = e.offender.unwrap_or(IpAddr::V4(self.target));
        let kind = match e.icmp_type {
            11 => ReplyKind::TimeExceeded,
            _ if from == IpAddr::V4(self.target) => ReplyKind::Reached,
            _ => ReplyKind::Unreachable { code: e.icmp_code },
        };
        (from, kind)
    }

    /// Called when poll(2) reported an event on this probe's socket.
    pub fn on_event(&mut self) {
        if self.method != Method::IcmpRaw {
            match sys::recv_errqueue(&self.sock) {
                Ok(Some(e)) => {
                    let (from, kind) = self.classify(e);
                    return self.finish(from, kind, e.received);
                }
                Ok(None) => {}
                Err(e) => {
                    self.error = Some(format!("read error queue: {e}"));
                    return;
                }
            }
        }
        let target = IpAddr::V4(self.target);
        match self.method {
            Method::TcpConnect => match self.sock.take_error() {
                Ok(None) => self.finish(target, ReplyKind::Reached, None),
                Ok(Some(e)) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    self.finish(target, ReplyKind::Reached, None)
                }
                Ok(Some(e)) => self.error = Some(e.to_string()),
                Err(e) => self.error = Some(e.to_string()),
            },
            Method::Udp | Method::IcmpDgram => {
                let mut buf = [0u8; 1500];
                match sys::recv_nonblocking(&self.sock, &mut buf) {
                    Ok(Some((_, ts))) => self.finish(target, ReplyKind::Reached, ts),
                    Ok(None) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                        self.finish(target, ReplyKind::Reached, None)
                    }
                    Err(e) => self.error = Some(e.to_string()),
                }
            }
            Method::IcmpRaw => {
                let mut buf = [0u8; 1500];
                while let Ok(Some((n, ts))) = sys::recv_nonblocking(&self.sock, &mut buf) {
                    if let Some((from, kind)) = parse_raw_icmp(&buf[..n], self.ident, self.seq) {
                        self.finish(from, kind, ts);
                        break;
                    }
                }
            }
        }
    }

    /// Closes a TCP probe that connected with a RST instead of a FIN, so the destination keeps
    /// no state for it.
    pub fn abort(self) {
        if self.method == Method::TcpConnect {
            let _ = self.sock.set_linger(Some(std::time::Duration::ZERO));
        }
    }
}

fn open(method: Method) -> std::io::Result<Socket> {
    let (ty, proto) = match method {
        Method::TcpConnect => (Type::STREAM, None),
        Method::Udp => (Type::DGRAM, None),
        Method::IcmpRaw => (Type::RAW, Some(SockProto::ICMPV4)),
        Method::IcmpDgram => (Type::DGRAM, Some(SockProto::ICMPV4)),
    };
    let sock = Socket::new(Domain::IPV4, ty, proto)?;
    sock.set_nonblocking(true)?;
    sock.set_cloexec(true)?;
    Ok(sock)
}

/// Which ICMP method this process may use: raw when it has CAP_NET_RAW, else a ping socket when
/// `net.ipv4.ping_group_range` allows its group, else an error naming both ways out.
pub fn icmp_method(ping_socket_only: bool) -> Result<Method, String> {
    if !ping_socket_only && open(Method::IcmpRaw).is_ok() {
        return Ok(Method::IcmpRaw);
    }
    match open(Method::IcmpDgram) {
        Ok(_) => Ok(Method::IcmpDgram),
        Err(e) => {
            // SAFETY: getgid has no preconditions.
            let gid = unsafe { libc::getgid() };
            let range = std::fs::read_to_string("/proc/sys/net/ipv4/ping_group_range")
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            Err(format!(
                "icmp probes need CAP_NET_RAW (raw socket) or group {gid} within \
                 net.ipv4.ping_group_range (now \"{range}\") for a ping socket ({e}); \
                 --tcp and --udp need no privilege"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_request_checksums_to_zero() {
        let p = echo_request(0x1234, 7);
        assert_eq!(checksum(&p), 0);
        assert_eq!(&p[4..8], &[0x12, 0x34, 0, 7]);
    }

    fn ipv4(src: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0];
        h.extend_from_slice(&src);
        h.extend_from_slice(&[10, 0, 0, 1]);
        h.extend_from_slice(payload);
        h
    }

    #[test]
    fn raw_icmp_replies_are_matched_to_their_probe() {
        let mut reply = echo_request(9, 3).to_vec();
        reply[0] = 0;
        let pkt = ipv4([10, 0, 0, 9], &reply);
        assert_eq!(
            parse_raw_icmp(&pkt, 9, 3),
            Some(("10.0.0.9".parse().unwrap(), ReplyKind::Reached))
        );
        assert_eq!(parse_raw_icmp(&pkt, 9, 4), None);
        // Time exceeded from a router quoting our echo request.
        let quoted = ipv4([10, 0, 0, 1], &echo_request(9, 3));
        let mut te = vec![11, 0, 0, 0, 0, 0, 0, 0];
        te.extend_from_slice(&quoted);
        let pkt = ipv4([10, 0, 1, 1], &te);
        assert_eq!(
            parse_raw_icmp(&pkt, 9, 3),
            Some(("10.0.1.1".parse().unwrap(), ReplyKind::TimeExceeded))
        );
        assert_eq!(parse_raw_icmp(&pkt, 8, 3), None);
        assert_eq!(parse_raw_icmp(&pkt[..30], 9, 3), None);
    }

    /// TCP and UDP probes toward loopback reach the destination at TTL 1 without privilege.
    #[test]
    fn loopback_is_reached_by_tcp_and_udp() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for (method, port) in [(Method::TcpConnect, port), (Method::Udp, 9)] {
            let mut p = Probe::send(method, Ipv4Addr::LOCALHOST, port, 1, 0, 0).unwrap();
            let deadline = Instant::now() + std::time::Duration::from_secs(2);
            while !p.done() && Instant::now() < deadline {
                let mut fds = [sys::pollfd(p.fd(), p.events())];
                sys::poll(&mut fds, std::time::Duration::from_millis(100)).unwrap();
                if fds[0].revents != 0 {
                    p.on_event();
                }
            }
            let r = p.reply.expect("reply");
            assert_eq!(r.kind, ReplyKind::Reached, "{method:?}");
            assert_eq!(r.from, IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
    }
}
