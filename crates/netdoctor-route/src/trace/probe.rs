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
//!   needs the group id within `net.ipv4.ping_group_range` (which also governs ICMPv6 ping
//!   sockets).
//!
//! IPv6 is the same engine on AF_INET6 sockets: the hop limit is IPV6_UNICAST_HOPS per socket
//! (there is no header to write: the kernel builds it, as IP_TTL does for IPv4), errors are
//! queued by IPV6_RECVERR, ICMPv6 echo goes over a raw or ping ICMPv6 socket whose checksum
//! the kernel computes, and a TCP probe is still the kernel's own SYN, so its pseudo-header
//! checksum is the kernel's too. What differs per family (message types, the echo request, the
//! raw parser) is in [`super::packet`]. An IPv4-mapped target (`::ffff:a.b.c.d`) is traced over
//! IPv4 ([`super::TraceOptions::new`] turns it into `a.b.c.d`). A router that answers from its
//! link-local address (`fe80::/10`, valid on one link only) is kept with the scope id the kernel
//! gives its error or datagram (the index of the interface it arrived on): the address alone
//! does not say which link, and anything that later sends to it needs that index. A link-local
//! target is probed the same way with its scope id in the destination (`sin6_scope_id`: the
//! kernel binds a connected socket to that interface and routes a raw or ping socket's echo
//! out of it; no SO_BINDTODEVICE is needed), and the destination's answers keep that scope.

use super::packet::Family;
use super::sys;
use crate::scoped::ScopedIp;
use serde::Serialize;
use socket2::{Domain, Protocol as SockProto, SockAddr, Socket, Type};
use std::net::IpAddr;
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
    /// `from`'s scope id when it is an IPv6 link-local address: the index of the interface
    /// the reply arrived on.
    pub scope_id: Option<u32>,
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
    target: IpAddr,
    /// The target's scope id (0: none), for a link-local target: sent with every probe and
    /// kept for its replies.
    scope_id: u32,
    family: Family,
    /// Raw ICMP: our echo id and sequence number.
    ident: u16,
    seq: u16,
    pub reply: Option<Reply>,
    /// A local error that ended the probe (no route, …).
    pub error: Option<String>,
}

impl Probe {
    /// Opens the socket for `method` and sends the probe to `to` (with its scope id, for a
    /// link-local target: the kernel then sends on that interface).
    pub fn send(
        method: Method,
        to: &ScopedIp,
        port: u16,
        ttl: u8,
        ident: u16,
        seq: u16,
    ) -> std::io::Result<Probe> {
        let target = to.ip;
        let family = Family::of(target);
        let sock = open(method, family)?;
        match family {
            Family::V4 => sock.set_ttl_v4(u32::from(ttl))?,
            Family::V6 => sock.set_unicast_hops_v6(u32::from(ttl))?,
        }
        if method != Method::IcmpRaw {
            sys::enable_recverr(&sock, family)?;
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
            scope_id: to.scope_id.unwrap_or(0),
            family,
            ident,
            seq,
            reply: None,
            error: None,
        };
        let addr = |port| SockAddr::from(to.socket_addr(port));
        let scope = probe.scope_id;
        match method {
            Method::TcpConnect => match probe.sock.connect(&addr(port)) {
                Ok(()) => probe.finish(target, scope, ReplyKind::Reached, None),
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            },
            Method::Udp => {
                probe.sock.connect(&addr(port))?;
                probe.sock.send(b"netdoctor trace probe")?;
            }
            Method::IcmpDgram | Method::IcmpRaw => {
                probe
                    .sock
                    .send_to(&family.echo_request(ident, seq), &addr(0))?;
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

    /// Records the reply (`scope_id`: the kernel's, 0 for none; kept for a link-local sender).
    fn finish(
        &mut self,
        from: IpAddr,
        scope_id: u32,
        kind: ReplyKind,
        kernel_at: Option<SystemTime>,
    ) {
        if self.reply.is_none() {
            let link_local = matches!(from, IpAddr::V6(v6) if v6.is_unicast_link_local());
            self.reply = Some(Reply {
                from,
                scope_id: (link_local && scope_id != 0).then_some(scope_id),
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
        let from = e.offender.unwrap_or(self.target);
        let kind = if self.family.is_time_exceeded(e.icmp_type) {
            ReplyKind::TimeExceeded
        } else if from == self.target {
            ReplyKind::Reached
        } else {
            ReplyKind::Unreachable { code: e.icmp_code }
        };
        (from, kind)
    }

    /// Called when poll(2) reported an event on this probe's socket.
    pub fn on_event(&mut self) {
        if self.method != Method::IcmpRaw {
            match sys::recv_errqueue(&self.sock) {
                Ok(Some(e)) => {
                    let (from, kind) = self.classify(e);
                    let scope = if e.offender.is_some() {
                        e.scope_id
                    } else {
                        self.scope_id
                    };
                    return self.finish(from, scope, kind, e.received);
                }
                Ok(None) => {}
                Err(e) => {
                    self.error = Some(format!("read error queue: {e}"));
                    return;
                }
            }
        }
        let (target, scope) = (self.target, self.scope_id);
        match self.method {
            Method::TcpConnect => match self.sock.take_error() {
                Ok(None) => self.finish(target, scope, ReplyKind::Reached, None),
                Ok(Some(e)) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    self.finish(target, scope, ReplyKind::Reached, None)
                }
                Ok(Some(e)) => self.error = Some(e.to_string()),
                Err(e) => self.error = Some(e.to_string()),
            },
            Method::Udp | Method::IcmpDgram => {
                let mut buf = [0u8; 1500];
                match sys::recv_nonblocking(&self.sock, &mut buf) {
                    Ok(Some(r)) => self.finish(target, scope, ReplyKind::Reached, r.at),
                    Ok(None) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                        self.finish(target, scope, ReplyKind::Reached, None)
                    }
                    Err(e) => self.error = Some(e.to_string()),
                }
            }
            Method::IcmpRaw => {
                let mut buf = [0u8; 1500];
                while let Ok(Some(r)) = sys::recv_nonblocking(&self.sock, &mut buf) {
                    let (pkt, ident, seq) = (&buf[..r.len], self.ident, self.seq);
                    if let Some((from, kind)) = self.family.parse_raw(pkt, r.from, ident, seq) {
                        let scope = if Some(from) == r.from { r.scope_id } else { 0 };
                        self.finish(from, scope, kind, r.at);
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

fn open(method: Method, family: Family) -> std::io::Result<Socket> {
    let (domain, icmp) = match family {
        Family::V4 => (Domain::IPV4, SockProto::ICMPV4),
        Family::V6 => (Domain::IPV6, SockProto::ICMPV6),
    };
    let (ty, proto) = match method {
        Method::TcpConnect => (Type::STREAM, None),
        Method::Udp => (Type::DGRAM, None),
        Method::IcmpRaw => (Type::RAW, Some(icmp)),
        Method::IcmpDgram => (Type::DGRAM, Some(icmp)),
    };
    let sock = Socket::new(domain, ty, proto)?;
    sock.set_nonblocking(true)?;
    sock.set_cloexec(true)?;
    Ok(sock)
}

/// Which ICMP method this process may use toward `family`: raw when it has CAP_NET_RAW, else a
/// ping socket when `net.ipv4.ping_group_range` allows its group, else an error naming both
/// ways out.
pub fn icmp_method(ping_socket_only: bool, family: Family) -> Result<Method, String> {
    if !ping_socket_only && open(Method::IcmpRaw, family).is_ok() {
        return Ok(Method::IcmpRaw);
    }
    match open(Method::IcmpDgram, family) {
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
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// TCP and UDP probes toward loopback reach the destination at TTL 1 without privilege,
    /// over IPv4 and IPv6.
    #[test]
    fn loopback_is_reached_by_tcp_and_udp() {
        for lo in [
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ] {
            let listener = std::net::TcpListener::bind((lo, 0)).unwrap();
            let port = listener.local_addr().unwrap().port();
            for (method, port) in [(Method::TcpConnect, port), (Method::Udp, 9)] {
                let mut p = Probe::send(method, &ScopedIp::plain(lo), port, 1, 0, 0).unwrap();
                let deadline = Instant::now() + std::time::Duration::from_secs(5);
                while !p.done() && Instant::now() < deadline {
                    let mut fds = [sys::pollfd(p.fd(), p.events())];
                    sys::poll(&mut fds, std::time::Duration::from_millis(100)).unwrap();
                    if fds[0].revents != 0 {
                        p.on_event();
                    }
                }
                let r = p.reply.expect("reply");
                assert_eq!(r.kind, ReplyKind::Reached, "{method:?} {lo}");
                assert_eq!(r.from, lo);
            }
        }
    }
}
