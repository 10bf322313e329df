//! TCP sockets of the calling thread's network namespace through sock_diag netlink
//! (`NETLINK_SOCK_DIAG`, what `ss` uses), with the `netlink-packet-sock-diag` and `netlink-sys`
//! crates: listeners with their accept queue against their backlog, SYN_RECV and TIME_WAIT
//! counts, and `tcp_info` (rtt, rttvar, retransmits, delivery rate) of chosen connections.
//!
//! A netlink socket belongs to the network namespace of the thread that created it, so every
//! call here opens its socket on the calling thread: call from the thread that joined the run's
//! namespace. Listing sockets needs no capability (the kernel shows every socket of the
//! namespace to any user; only `uid`/`inode` of other users' sockets may be hidden).
//!
//! For a listener, the kernel reports the accept queue length in `recv_queue` (Recv-Q in
//! `ss -ltn`) and the effective backlog (`min(listen() backlog, somaxconn)`) in `send_queue`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{
    ExtensionFlags, InetRequest, InetResponse, SocketId, StateFlags, nlas::Nla,
};
use netlink_sys::{Socket, SocketAddr as NlAddr, protocols::NETLINK_SOCK_DIAG};

use crate::host_error::{HostError, message};

const WHAT: &str = "sock_diag";

/// A listening TCP socket and its accept queue.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listener {
    pub local: SocketAddr,
    /// Connections completed by the kernel and waiting for `accept()` (Recv-Q).
    pub accept_queue: u32,
    /// The accept queue's limit: `min(backlog given to listen(), net.core.somaxconn)` (Send-Q).
    pub backlog: u32,
    pub uid: u32,
    pub inode: u32,
}

impl Listener {
    /// True when the accept queue is at its limit (the kernel drops at `queue > backlog`).
    pub fn is_full(&self) -> bool {
        self.accept_queue >= self.backlog
    }
}

/// Number of TCP sockets per state (IPv4 and IPv6 together).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StateCounts {
    pub established: u32,
    pub syn_sent: u32,
    pub syn_recv: u32,
    pub fin_wait: u32,
    pub time_wait: u32,
    pub close_wait: u32,
    pub listen: u32,
    pub other: u32,
    /// SYN_RECV (half-open) per local port, busiest first.
    pub syn_recv_by_port: Vec<(u16, u32)>,
    /// TIME_WAIT per remote address and port: each pair uses ports from one local range.
    pub time_wait_by_remote: Vec<(SocketAddr, u32)>,
    /// Listeners whose accept queue was at its limit when counted: (port, queue, backlog).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub full_listeners: Vec<(u16, u32, u32)>,
}

/// `tcp_info` of one connection (times in microseconds, as the kernel gives them).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnInfo {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: u8,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub rto_us: u32,
    /// Retransmissions over the life of the connection (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Segments currently considered lost.
    pub lost: u32,
    /// Bytes per second at which the last data was delivered.
    pub delivery_rate: u64,
    pub snd_cwnd: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
}

/// One raw dump of TCP sockets in the given states, IPv4 and IPv6.
fn dump(states: StateFlags, info: bool) -> Result<Vec<InetResponse>, HostError> {
    let nl = |op: &'static str, e: std::io::Error| HostError::Netlink {
        what: WHAT,
        op,
        message: message(&e),
        needs: None,
    };
    let mut socket = Socket::new(NETLINK_SOCK_DIAG).map_err(|e| nl("open netlink socket", e))?;
    socket
        .bind_auto()
        .map_err(|e| nl("bind netlink socket", e))?;
    socket
        .connect(&NlAddr::new(0, 0))
        .map_err(|e| nl("connect netlink socket", e))?;
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        let mut packet = NetlinkMessage::new(
            header,
            SockDiagMessage::InetRequest(InetRequest {
                family,
                protocol: IPPROTO_TCP,
                extensions: if info {
                    ExtensionFlags::INFO
                } else {
                    ExtensionFlags::empty()
                },
                states: states.clone(),
                socket_id: if family == AF_INET {
                    SocketId::new_v4()
                } else {
                    SocketId::new_v6()
                },
            })
            .into(),
        );
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf[..]);
        socket
            .send(&buf, 0)
            .map_err(|e| nl("send dump request", e))?;
        read_dump(&socket, &mut out)?;
    }
    Ok(out)
}

fn read_dump(socket: &Socket, out: &mut Vec<InetResponse>) -> Result<(), HostError> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        buf.clear();
        buf.reserve(64 * 1024);
        let n = socket.recv(&mut buf, 0).map_err(|e| HostError::Netlink {
            what: WHAT,
            op: "receive dump",
            message: message(&e),
            needs: None,
        })?;
        let mut offset = 0;
        while offset < n {
            let msg =
                <NetlinkMessage<SockDiagMessage>>::deserialize(&buf[offset..n]).map_err(|e| {
                    HostError::Netlink {
                        what: WHAT,
                        op: "decode dump",
                        message: e.to_string(),
                        needs: None,
                    }
                })?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => out.push(*r),
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) if e.code.is_some() => {
                    let io = e.to_io();
                    return Err(HostError::Netlink {
                        what: WHAT,
                        op: "dump TCP sockets",
                        needs: (io.kind() == std::io::ErrorKind::PermissionDenied)
                            .then_some("CAP_NET_ADMIN"),
                        message: message(&io),
                    });
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            offset += len;
        }
    }
}

fn addr(ip: IpAddr, port: u16) -> SocketAddr {
    // Dual-stack sockets show v4 peers as ::ffff:a.b.c.d: print them as IPv4.
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), port),
            None => SocketAddr::new(ip, port),
        },
        v4 => SocketAddr::new(v4, port),
    }
}

/// The TCP listeners of the calling thread's namespace.
pub fn listeners() -> Result<Vec<Listener>, HostError> {
    let mut out: Vec<Listener> = dump(StateFlags::LISTEN, false)?
        .into_iter()
        .map(|r| Listener {
            local: addr(
                r.header.socket_id.source_address,
                r.header.socket_id.source_port,
            ),
            accept_queue: r.header.recv_queue,
            backlog: r.header.send_queue,
            uid: r.header.uid,
            inode: r.header.inode,
        })
        .collect();
    out.sort_by_key(|l| (l.local.port(), l.local.ip()));
    Ok(out)
}

/// Socket counts per state in the calling thread's namespace (SYN_RECV includes the request
/// sockets of half-open connections).
pub fn state_counts() -> Result<StateCounts, HostError> {
    use netlink_packet_sock_diag::constants::TCP_LISTEN;
    let all = dump(StateFlags::all(), false)?;
    let mut c = count_states(all.iter().map(|r| (r.header.state, &r.header.socket_id)));
    c.full_listeners = all
        .iter()
        .filter(|r| {
            r.header.state == TCP_LISTEN
                && r.header.send_queue > 0
                && r.header.recv_queue >= r.header.send_queue
        })
        .map(|r| {
            (
                r.header.socket_id.source_port,
                r.header.recv_queue,
                r.header.send_queue,
            )
        })
        .collect();
    c.full_listeners.sort_unstable();
    c.full_listeners.dedup_by_key(|l| l.0);
    Ok(c)
}

/// Counts states from `(state, socket id)` pairs (pure, for tests).
pub fn count_states<'a>(items: impl Iterator<Item = (u8, &'a SocketId)>) -> StateCounts {
    use netlink_packet_sock_diag::constants::*;
    let mut c = StateCounts::default();
    let mut syn_ports = std::collections::BTreeMap::<u16, u32>::new();
    let mut tw_remote = std::collections::BTreeMap::<SocketAddr, u32>::new();
    for (state, id) in items {
        match state {
            TCP_ESTABLISHED => c.established += 1,
            TCP_SYN_SENT => c.syn_sent += 1,
            TCP_SYN_RECV => {
                c.syn_recv += 1;
                *syn_ports.entry(id.source_port).or_default() += 1;
            }
            TCP_FIN_WAIT1 | TCP_FIN_WAIT2 => c.fin_wait += 1,
            TCP_TIME_WAIT => {
                c.time_wait += 1;
                let remote = addr(id.destination_address, id.destination_port);
                *tw_remote.entry(remote).or_default() += 1;
            }
            TCP_CLOSE_WAIT => c.close_wait += 1,
            TCP_LISTEN => c.listen += 1,
            _ => c.other += 1,
        }
    }
    c.syn_recv_by_port = syn_ports.into_iter().collect();
    c.syn_recv_by_port.sort_by_key(|e| std::cmp::Reverse(e.1));
    c.time_wait_by_remote = tw_remote.into_iter().collect();
    c.time_wait_by_remote
        .sort_by_key(|e| std::cmp::Reverse(e.1));
    c
}

/// `tcp_info` of the established connections for which `select(local, remote)` is true.
pub fn tcp_info(
    mut select: impl FnMut(&SocketAddr, &SocketAddr) -> bool,
) -> Result<Vec<ConnInfo>, HostError> {
    let mut out = Vec::new();
    for r in dump(StateFlags::ESTABLISHED, true)? {
        let id = &r.header.socket_id;
        let local = addr(id.source_address, id.source_port);
        let remote = addr(id.destination_address, id.destination_port);
        if !select(&local, &remote) {
            continue;
        }
        let Some(info) = r.nlas.iter().find_map(|n| match n {
            Nla::TcpInfo(i) => Some(i),
            _ => None,
        }) else {
            continue;
        };
        out.push(ConnInfo {
            local,
            remote,
            state: r.header.state,
            rtt_us: info.rtt,
            rttvar_us: info.rttvar,
            min_rtt_us: info.min_rtt,
            rto_us: info.rto,
            total_retrans: info.total_retrans,
            lost: info.lost,
            delivery_rate: info.delivery_rate,
            snd_cwnd: info.snd_cwnd,
            bytes_acked: info.bytes_acked,
            bytes_received: info.bytes_received,
        });
    }
    Ok(out)
}

/// One look at a listener and the half-open connections to its port.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ListenerSample {
    /// Milliseconds since the sampler started.
    pub at_ms: u64,
    pub accept_queue: u32,
    pub backlog: u32,
    /// SYN_RECV sockets whose local port is the listener's.
    pub syn_recv: u32,
}

/// What a sampler saw of one listener over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ListenerSeries {
    pub port: u16,
    pub samples: Vec<ListenerSample>,
    /// Samples that could not be taken (the first error is kept).
    pub failed: u32,
    pub first_error: Option<String>,
}

impl ListenerSeries {
    /// The largest accept queue seen and the backlog at that moment.
    pub fn max_queue(&self) -> Option<(u32, u32)> {
        self.samples
            .iter()
            .max_by_key(|s| s.accept_queue)
            .map(|s| (s.accept_queue, s.backlog))
    }

    /// Samples in which the accept queue was at its limit.
    pub fn full_samples(&self) -> usize {
        self.samples
            .iter()
            .filter(|s| s.backlog > 0 && s.accept_queue >= s.backlog)
            .count()
    }

    /// The largest number of half-open connections seen.
    pub fn max_syn_recv(&self) -> u32 {
        self.samples.iter().map(|s| s.syn_recv).max().unwrap_or(0)
    }
}

/// Takes one sample of the listener on `port` (the first one found on any address).
pub fn sample_listener(port: u16, started: Instant) -> Result<Option<ListenerSample>, HostError> {
    sample_listener_states(port, started, true)
}

/// [`sample_listener`] with `syn_recv` left at 0 and not looked up: for a caller that knows
/// there is no half-open connection to the port (its capture saw no SYN since a sample that
/// found none). Listeners live in the kernel's small listening hash; SYN_RECV entries live in
/// the established hash, which a dump walks bucket by bucket whatever the namespace (262,144
/// buckets on a machine with 24 GB: milliseconds per dump, most of an idle agent's CPU).
pub fn sample_listener_queue(
    port: u16,
    started: Instant,
) -> Result<Option<ListenerSample>, HostError> {
    sample_listener_states(port, started, false)
}

fn sample_listener_states(
    port: u16,
    started: Instant,
    syn_recv_too: bool,
) -> Result<Option<ListenerSample>, HostError> {
    let states = if syn_recv_too {
        StateFlags::LISTEN | StateFlags::SYN_RECV
    } else {
        StateFlags::LISTEN
    };
    let all = dump(states, false)?;
    let mut sample: Option<ListenerSample> = None;
    let mut syn_recv = 0;
    for r in &all {
        if r.header.socket_id.source_port != port {
            continue;
        }
        match r.header.state {
            netlink_packet_sock_diag::constants::TCP_LISTEN => {
                let s = sample.get_or_insert(ListenerSample {
                    at_ms: started.elapsed().as_millis() as u64,
                    accept_queue: 0,
                    backlog: 0,
                    syn_recv: 0,
                });
                // Several sockets on one port (v4 + v6, SO_REUSEPORT): add them up.
                s.accept_queue += r.header.recv_queue;
                s.backlog += r.header.send_queue;
            }
            _ => syn_recv += 1,
        }
    }
    Ok(sample.map(|mut s| {
        s.syn_recv = syn_recv;
        s
    }))
}

/// Samples one listener every `interval` on a thread of its own until [`ListenerSampler::finish`].
/// The thread is spawned from the caller's thread and so inherits its network namespace.
pub struct ListenerSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<ListenerSeries>>,
}

impl ListenerSampler {
    /// Starts sampling the listener on `port`, at most `max_samples` times.
    pub fn start(port: u16, interval: Duration, max_samples: usize) -> Result<Self, HostError> {
        // Fail early (and on the caller's thread) when sock_diag does not work at all.
        sample_listener(port, Instant::now())?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name(format!("nd-listen-{port}"))
            .spawn(move || {
                let started = Instant::now();
                let mut series = ListenerSeries {
                    port,
                    ..Default::default()
                };
                // At least one sample, however soon the run ends.
                for _ in 0..max_samples.max(1) {
                    match sample_listener(port, started) {
                        Ok(Some(s)) => series.samples.push(s),
                        Ok(None) => {}
                        Err(e) => {
                            series.failed += 1;
                            series.first_error.get_or_insert(e.to_string());
                        }
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::park_timeout(interval);
                }
                series
            })
            .map_err(|e| HostError::Netlink {
                what: WHAT,
                op: "spawn listener sampler",
                message: message(&e),
                needs: None,
            })?;
        Ok(ListenerSampler {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the sampler and returns what it saw.
    pub fn finish(mut self) -> ListenerSeries {
        self.stop_thread().unwrap_or_default()
    }

    fn stop_thread(&mut self) -> Option<ListenerSeries> {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take()?;
        handle.thread().unpark();
        handle.join().ok()
    }
}

impl Drop for ListenerSampler {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn sees_a_listener_and_its_backlog() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let all = listeners().unwrap();
        let mine = all
            .iter()
            .find(|x| x.local.port() == port)
            .expect("listener");
        assert_eq!(mine.accept_queue, 0);
        // std listens with backlog 128, capped by somaxconn (4096 by default).
        assert_eq!(mine.backlog, 128);
        // Two completed but unaccepted connections show in the accept queue.
        let _a = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _b = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let s = sample_listener(port, Instant::now()).unwrap().unwrap();
        assert_eq!(s.accept_queue, 2);
        let info = tcp_info(|local, _| local.port() == port).unwrap();
        assert_eq!(info.len(), 2, "{info:?}");
        assert!(info.iter().all(|c| c.rtt_us > 0));
        let counts = state_counts().unwrap();
        assert!(counts.listen >= 1 && counts.established >= 4, "{counts:?}");
    }

    #[test]
    fn sampler_records_and_stops() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let sampler = ListenerSampler::start(port, Duration::from_millis(5), 3).unwrap();
        let series = sampler.finish();
        assert!(!series.samples.is_empty() && series.samples.len() <= 3);
        assert_eq!(series.max_queue(), Some((0, 128)));
        assert_eq!(series.full_samples(), 0);
    }

    #[test]
    fn counts_time_wait_by_remote() {
        use netlink_packet_sock_diag::constants::*;
        let mut a = SocketId::new_v4();
        a.destination_address = "10.0.0.1".parse().unwrap();
        a.destination_port = 80;
        let mut b = SocketId::new_v4();
        b.source_port = 8080;
        let items = [
            (TCP_TIME_WAIT, &a),
            (TCP_TIME_WAIT, &a),
            (TCP_SYN_RECV, &b),
            (TCP_ESTABLISHED, &b),
        ];
        let c = count_states(items.into_iter());
        assert_eq!(c.time_wait, 2);
        assert_eq!(
            c.time_wait_by_remote,
            vec![("10.0.0.1:80".parse().unwrap(), 2)]
        );
        assert_eq!(c.syn_recv_by_port, vec![(8080, 1)]);
        assert_eq!(c.established, 1);
    }
}
