//! Which process on this host owns the listener of a target address, and in which network
//! namespace: a lab or a container serves `10.214.0.1:80` from a namespace other than the
//! client's, where netdoctor runs. The host collectors then sample that listener from a thread
//! that joined the process's namespace (`/proc/PID/ns/net`, see [`crate::host_run`]).
//!
//! How: the same walk as [`crate::sockopt`] (every process's socket descriptors matched against
//! its namespace's TCP table), keeping a LISTEN socket on the target port bound to the target
//! address, or to the unspecified address in a namespace that has the target address (its
//! local routes in `/proc/PID/net/fib_trie`, `/proc/PID/net/if_inet6` for IPv6). A loopback
//! target is always served from the caller's own namespace. Hand-written for the same reason as
//! `sockopt`: a few lines of /proc parsing.

use crate::sockopt::{comm, socket_fds, tcp_table};
use std::collections::HashMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The process that listens on the target, and its network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenerOwner {
    /// The process, or its thread that is in `netns` when only a thread is (`/proc/PID/ns/net`
    /// names `netns` either way).
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`).
    pub process: String,
    /// Its network namespace, as the kernel names it (`net:[4026532…]`).
    pub netns: String,
    /// The namespace is the calling thread's own.
    pub same_netns: bool,
}

impl ListenerOwner {
    /// `"network namespace net:[…] of nginx (pid 123)"`.
    pub fn describe(&self) -> String {
        format!(
            "network namespace {} of {} (pid {})",
            self.netns, self.process, self.pid
        )
    }
}

/// The calling thread's network namespace (`net:[…]`).
pub fn own_netns() -> Option<String> {
    fs::read_link("/proc/thread-self/ns/net")
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The process listening on `addr` on this host, `None` when none can be seen (a remote
/// server, a loopback target, or processes this user may not inspect) or when several
/// namespaces have such a listener and none can be told apart as the one serving this thread.
///
/// Several (two labs, or pods, with the same addresses): [`PROBES`] connections from the
/// calling thread to `addr` are held open, and the namespace that serves them is the one whose
/// TCP table holds all of their accepted ends and sees each of them change state when this side
/// sends its FIN. The address pair alone is not enough: the kernel draws ephemeral ports from
/// one sequence for all namespaces (`table_perturb` is global), so a client with the same
/// address in a neighbouring namespace holds the same ports minutes later, and its server's
/// namespace then has our 4-tuples too (session 13: a hang lab counted 31 retransmits of the
/// black-hole lab beside it).
pub fn listener_owner(addr: SocketAddr) -> Option<ListenerOwner> {
    listener_owner_or_why(addr).ok().flatten()
}

/// [`listener_owner`], with why none was chosen when several namespaces listen on `addr`.
pub fn listener_owner_or_why(addr: SocketAddr) -> Result<Option<ListenerOwner>, String> {
    let mut found = candidates(addr);
    if found.len() <= 1 {
        return Ok(found.pop());
    }
    let n = found.len();
    serving(found, addr).map(Some).ok_or_else(|| {
        format!(
            "{n} network namespaces listen on {addr} and none was seen serving this run's \
             {PROBES} probe connections alone"
        )
    })
}

/// Probe connections that must all be seen in the serving namespace.
pub const PROBES: usize = 3;

/// Of `found`, the one namespace that serves this thread's connections to `addr`.
fn serving(found: Vec<ListenerOwner>, addr: SocketAddr) -> Option<ListenerOwner> {
    use std::time::{Duration, Instant};
    // Up to 2.5 s each, stopping at the first failure: a SYN/ACK lost on a lossy path is
    // repeated after 1 s (CI: 5 % loss lost one of three, and the run counted in its own
    // namespace instead of the server's).
    let mut conns: Vec<std::net::TcpStream> = Vec::with_capacity(PROBES);
    while conns.len() < PROBES {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(2500)) {
            Ok(c) => conns.push(c),
            Err(_) => break,
        }
    }
    let ours: Vec<SocketAddr> = conns.iter().filter_map(|c| c.local_addr().ok()).collect();
    if ours.len() < PROBES {
        return None;
    }
    // The accepted ends: the server's kernel takes the handshake's last ACK just after
    // connect() returns here.
    let states = |o: &ListenerOwner| -> Vec<Option<u8>> {
        let table = conn_states(o.pid);
        ours.iter()
            .map(|r| {
                table
                    .iter()
                    .find(|(l, rem, _)| same(*l, addr) && same(*rem, *r))
                    .map(|t| t.2)
            })
            .collect()
    };
    let begun = Instant::now();
    let mut before: Vec<Vec<Option<u8>>>;
    loop {
        before = found.iter().map(states).collect();
        if before.iter().any(|b| b.iter().all(Option::is_some))
            || begun.elapsed() > Duration::from_millis(1000)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &conns {
        let _ = c.shutdown(std::net::Shutdown::Write);
    }
    // Ours move to CLOSE_WAIT (or on, or away) once our FIN arrives; a neighbour's
    // connection on the same 4-tuple does not.
    let begun = Instant::now();
    let serves = loop {
        let serves: Vec<usize> = found
            .iter()
            .enumerate()
            .filter(|(i, o)| {
                let after = states(o);
                before[*i]
                    .iter()
                    .zip(&after)
                    .all(|(b, a)| b.is_some() && a != b)
            })
            .map(|(i, _)| i)
            .collect();
        // Our FIN may be lost and resent after an RTO (200 ms or more).
        if !serves.is_empty() || begun.elapsed() > Duration::from_millis(1500) {
            break serves;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(conns);
    match serves[..] {
        [i] => found.into_iter().nth(i),
        _ => None,
    }
}

/// One owner per namespace with a listener on `addr`.
fn candidates(addr: SocketAddr) -> Vec<ListenerOwner> {
    let mut out: Vec<ListenerOwner> = Vec::new();
    if addr.ip().is_loopback() {
        return out;
    }
    let own = own_netns();
    let me = std::process::id();
    // Per namespace: (TCP table, whether it holds the target address).
    let mut seen: HashMap<String, (HashMap<u64, crate::sockopt::TcpEntry>, bool)> = HashMap::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        if pid == me {
            continue;
        }
        let Ok(fds) = socket_fds(pid) else { continue };
        if fds.is_empty() {
            continue;
        }
        // A thread may serve from a namespace of its own (setns in one thread, as a lab's
        // case process does): each namespace of the process's threads is looked at, through
        // the first thread in it (`/proc/TID/…` is that thread's namespace).
        for (id, ns) in task_namespaces(pid) {
            if out.iter().any(|o| o.netns == ns) {
                continue;
            }
            let (table, has_addr) = seen
                .entry(ns.clone())
                .or_insert_with(|| (tcp_table(id), netns_has_ip(id, addr.ip())));
            let listens = fds.iter().any(|(_, inode)| {
                table.get(inode).is_some_and(|e| {
                    e.state == 0x0A
                        && e.local.port() == addr.port()
                        && (e.local.ip() == addr.ip()
                            || (e.local.ip().is_unspecified() && *has_addr))
                })
            });
            if listens {
                out.push(ListenerOwner {
                    pid: id,
                    process: comm(pid),
                    same_netns: own.as_deref() == Some(ns.as_str()),
                    netns: ns,
                });
            }
        }
    }
    out
}

/// The network namespaces of `pid`'s threads, each with the first thread in it (`pid` itself
/// for its own namespace, listed first).
fn task_namespaces(pid: u32) -> Vec<(u32, String)> {
    let ns_of = |path: String| {
        fs::read_link(path)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    };
    let mut out: Vec<(u32, String)> = Vec::new();
    if let Some(ns) = ns_of(format!("/proc/{pid}/ns/net")) {
        out.push((pid, ns));
    }
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    let mut tids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&t| t != pid)
        .collect();
    tids.sort_unstable();
    for tid in tids {
        if let Some(ns) = ns_of(format!("/proc/{pid}/task/{tid}/ns/net"))
            && !out.iter().any(|(_, n)| *n == ns)
        {
            out.push((tid, ns));
        }
    }
    out
}

/// `(local, remote, state)` of every TCP socket in `pid`'s namespace (`/proc/PID/net/tcp{,6}`).
fn conn_states(pid: u32) -> Vec<(SocketAddr, SocketAddr, u8)> {
    let mut out = Vec::new();
    for f in ["tcp", "tcp6"] {
        let Ok(t) = fs::read_to_string(format!("/proc/{pid}/net/{f}")) else {
            continue;
        };
        out.extend(t.lines().skip(1).filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().take(4).collect();
            Some((
                crate::sockopt::parse_hex_addr(f.get(1)?)?,
                crate::sockopt::parse_hex_addr(f.get(2)?)?,
                u8::from_str_radix(f.get(3)?, 16).ok()?,
            ))
        }));
    }
    out
}

/// Equal addresses, an IPv4-mapped IPv6 one equal to its IPv4 form.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    let canon = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    a.port() == b.port() && canon(a.ip()) == canon(b.ip())
}

/// Whether `ip` is a local address of `pid`'s network namespace.
fn netns_has_ip(pid: u32, ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => fs::read_to_string(format!("/proc/{pid}/net/fib_trie"))
            .is_ok_and(|t| local_v4(&t).contains(&v4)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => netns_has_ip(pid, IpAddr::V4(v4)),
            None => fs::read_to_string(format!("/proc/{pid}/net/if_inet6"))
                .is_ok_and(|t| local_v6(&t).contains(&v6)),
        },
    }
}

/// The local IPv4 addresses in a `fib_trie` dump: a `|-- ADDR` line followed by
/// `/32 host LOCAL`.
fn local_v4(fib_trie: &str) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in fib_trie.lines() {
        let t = line.trim_start();
        if let Some(a) = t.strip_prefix("|-- ") {
            last = a.trim().parse().ok();
        } else if t.starts_with("/32 host LOCAL")
            && let Some(a) = last
            && !out.contains(&a)
        {
            out.push(a);
        }
    }
    out
}

/// The addresses in `/proc/net/if_inet6` (32 hex digits first on each line).
fn local_v6(if_inet6: &str) -> Vec<Ipv6Addr> {
    if_inet6
        .lines()
        .filter_map(|l| {
            let hex = l.split_whitespace().next()?;
            u128::from_str_radix(hex, 16).ok().map(Ipv6Addr::from)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_namespaces_start_with_its_own() {
        let me = std::process::id();
        let ns = task_namespaces(me);
        assert_eq!(ns.first().map(|(id, _)| *id), Some(me), "{ns:?}");
        assert_eq!(ns.first().map(|(_, n)| n.clone()), own_netns(), "{ns:?}");
        // One entry per namespace.
        for (i, (_, a)) in ns.iter().enumerate() {
            assert!(ns[i + 1..].iter().all(|(_, b)| b != a), "{ns:?}");
        }
    }

    #[test]
    fn local_addresses_from_proc() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.214.0.0\n        /24 link UNICAST\n     |-- 10.214.0.1\n        /32 host LOCAL\nLocal:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.214.0.1\n        /32 host LOCAL\n     |-- 10.214.0.255\n        /32 link BROADCAST\n";
        assert_eq!(local_v4(trie), [Ipv4Addr::new(10, 214, 0, 1)]);
        let v6 = "00000000000000000000000000000001 01 80 10 80       lo\nfe800000000000000000000000000001 02 40 20 80     veth\n";
        assert_eq!(
            local_v6(v6),
            [Ipv6Addr::LOCALHOST, "fe80::1".parse::<Ipv6Addr>().unwrap()]
        );
    }

    #[test]
    fn a_loopback_target_is_served_here() {
        assert_eq!(listener_owner("127.0.0.1:80".parse().unwrap()), None);
        assert!(own_netns().unwrap().starts_with("net:["));
    }
}
