//! Ports for tests that must not collide, however busy the machine and whatever else runs.
//!
//! "Bind port 0, note the number, drop the socket, use the number" races: the kernel may hand
//! the freed port to another test's `bind(0)`, or to an outgoing connection as its local port
//! (and a connect to a freed port can even connect to itself: TCP simultaneous open). Two ways
//! out, one per need:
//!
//! - [`ClosedPort`]: a port where nothing listens, for "connection refused" tests. It stays
//!   bound (without `listen()`) while the value lives: connects to it are refused, nothing else
//!   can bind it, and the kernel never picks it as an outgoing connection's local port.
//! - [`unused_port`]: a port for a server another process or library binds itself (nginx,
//!   iperf3, prometheus, a server that takes an address). It comes from a per-process counter
//!   below the kernel's ephemeral range (`ip_local_port_range`), so no outgoing connection and no
//!   `bind(0)` is ever given it, and no two calls in one process return the same port; it is
//!   checked free (TCP and UDP) when picked. [`on_unused_port`] tries another when the
//!   server's own bind still finds it taken (another process may bind it in between).
//!
//! Hand-written: a counter and a bound socket; no crate does just this.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};

/// A TCP port on one address where nothing listens, held until this value drops.
#[derive(Debug)]
pub struct ClosedPort {
    _socket: socket2::Socket,
    addr: SocketAddr,
}

impl ClosedPort {
    /// A free port on `ip`, bound without `listen()` in the calling thread's namespace.
    pub fn bind(ip: impl Into<IpAddr>) -> io::Result<ClosedPort> {
        let addr = SocketAddr::new(ip.into(), 0);
        let s = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )?;
        s.bind(&addr.into())?;
        let addr = s
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("bound socket has no IP address"))?;
        Ok(ClosedPort { _socket: s, addr })
    }

    /// `127.0.0.1:PORT`, held; panics when loopback has no free port (a test helper).
    pub fn loopback() -> ClosedPort {
        ClosedPort::bind([127, 0, 0, 1]).expect("bind a TCP socket on 127.0.0.1")
    }

    /// The address connects to which are refused.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

/// How many ports below the ephemeral range the counter cycles through.
const SPAN: u32 = 12_000;

/// A port on `ip` that is free now, below the ephemeral range and never returned before by this
/// process (until the counter wraps after [`SPAN`] calls). For a server that binds the port
/// itself: hand it over and wait until it listens.
pub fn unused_port(ip: impl Into<IpAddr>) -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ip = ip.into();
    let (lo, hi) = below_ephemeral();
    let span = u32::from(hi - lo).clamp(1, SPAN);
    // Processes start at different places, so two test binaries rarely try the same ports.
    let offset = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = lo + ((offset + n) % span) as u16;
        if std::net::TcpListener::bind((ip, port)).is_ok()
            && std::net::UdpSocket::bind((ip, port)).is_ok()
        {
            return port;
        }
    }
    panic!("no free port in {lo}..{hi} on {ip}");
}

/// How many ports [`on_unused_port`] tries.
const TRIES: usize = 8;

/// Runs `start` (a server binding the port it is given) on ports from [`unused_port`] until it
/// does not fail with `AddrInUse`, up to [`TRIES`] ports. A port checked free can still be
/// taken by another process before the server binds it: CI of session 18 failed once on a
/// built-in server's `bind 127.0.0.1:22074: Address already in use` a moment after the check.
pub fn on_unused_port<T>(
    ip: impl Into<IpAddr>,
    mut start: impl FnMut(u16) -> io::Result<T>,
) -> io::Result<T> {
    let ip = ip.into();
    let mut last = None;
    for _ in 0..TRIES {
        match start(unused_port(ip)) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AddrInUse)))
}

/// `[lo, hi)`: up to [`SPAN`] ports just below the first ephemeral port (32768 by default).
fn below_ephemeral() -> (u16, u16) {
    let first = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let hi = first.max(2_048);
    let lo = hi.saturating_sub(SPAN as u16).max(1_024);
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_closed_port_refuses_and_cannot_be_taken() {
        let c = ClosedPort::loopback();
        let e = TcpStream::connect(c.addr()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused, "{e}");
        assert!(TcpListener::bind(c.addr()).is_err(), "the port is held");
    }

    #[test]
    fn a_port_taken_before_the_bind_is_replaced_by_another() {
        let mut tried = Vec::new();
        let got = on_unused_port([127, 0, 0, 1], |p| {
            tried.push(p);
            if tried.len() < 3 {
                Err(io::Error::from(io::ErrorKind::AddrInUse))
            } else {
                Ok(p)
            }
        })
        .unwrap();
        assert_eq!(tried.len(), 3);
        assert_eq!(got, tried[2]);
        assert_ne!(tried[0], tried[1]);
        // Any other error ends the tries at once; a port always taken ends them after TRIES.
        let e = on_unused_port([127, 0, 0, 1], |_| -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        });
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        let mut n = 0;
        let e = on_unused_port([127, 0, 0, 1], |_| -> io::Result<()> {
            n += 1;
            Err(io::Error::from(io::ErrorKind::AddrInUse))
        });
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::AddrInUse);
        assert_eq!(n, TRIES);
    }

    #[test]
    fn unused_ports_are_distinct_free_and_below_the_ephemeral_range() {
        let (_, hi) = below_ephemeral();
        let ports: Vec<u16> = (0..50).map(|_| unused_port([127, 0, 0, 1])).collect();
        let set: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(set.len(), ports.len(), "{ports:?}");
        for p in ports {
            assert!(p < hi, "{p} is in the ephemeral range");
            drop(TcpListener::bind(("127.0.0.1", p)).unwrap());
        }
    }
}
