//! `netdoctor trace HOST`: TCP (default), UDP or ICMP traceroute in rounds, per-hop statistics
//! as mtr shows them, and an assessment that tells a hop adding latency or loss to everything
//! behind it from a router that is only slow or stingy answering its own ICMP ([`assess`]).
//!
//! The probe engine is hand-written ([`probe`]): no crate on crates.io that builds here offers
//! an unprivileged TCP traceroute as a library. trippy-core (studied for its design: a pure
//! tracing strategy over a `Network` trait, per-hop state kept apart from the report) needs raw
//! sockets for TCP and pulls in its own runtime; our needs are one socket per probe, poll(2),
//! IP_RECVERR — about 300 lines. Every round sends one probe per TTL at once; rounds start every
//! `interval` whatever became of the earlier ones (loss does not stretch a trace), and each
//! probe waits at most `timeout` for its own answer ([`engine`]).
//! RTTs use the kernel's receive timestamp where the reply is a queued error or a datagram.
//! Rounds and TTLs are bounded. IPv4 and IPv6 share the engine; what differs per family is in
//! [`packet`].

pub mod assess;
mod engine;
pub mod packet;
pub mod probe;
pub mod stats;
mod sys;

use crate::scoped::{ScopedIp, needs_scope};
use probe::Method;
use serde::Serialize;
use stats::Hop;
use std::net::IpAddr;
use std::time::Duration;

/// Probe protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    Icmp,
}

/// Upper bounds that keep a run finite whatever the flags say.
pub const MAX_ROUNDS: u32 = 1000;
pub const MAX_TTL: u8 = 64;

#[derive(Debug, Clone)]
pub struct TraceOptions {
    /// IPv4 or IPv6; never IPv4-mapped (see [`TraceOptions::new`]).
    pub target: IpAddr,
    /// The target's scope id (interface index) when it is an IPv6 link-local address: every
    /// probe is sent with it (`sin6_scope_id`), which also binds the probe to that interface.
    pub scope_id: Option<u32>,
    pub protocol: Protocol,
    /// Destination port (TCP, UDP); UDP uses port + ttl - 1 when `udp_fixed_port` is false,
    /// as traceroute does.
    pub port: u16,
    pub udp_fixed_port: bool,
    pub first_ttl: u8,
    pub max_ttl: u8,
    pub rounds: u32,
    /// Time from the start of one round to the start of the next (rounds overlap when the
    /// answers take longer).
    pub interval: Duration,
    /// How long a probe waits for its answer.
    pub timeout: Duration,
    /// Reverse-resolve hop addresses (off with `-n`).
    pub names: bool,
    /// Cap on one reverse lookup.
    pub name_timeout: Duration,
    /// ICMP: use a ping socket even when a raw socket is allowed (what an unprivileged user
    /// gets; for tests of that path).
    pub icmp_ping_socket: bool,
}

impl TraceOptions {
    /// Defaults for `target`. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) becomes `a.b.c.d`:
    /// such a destination is reached over IPv4, and IPv6 sockets cannot set its TTL.
    pub fn new(target: impl Into<IpAddr>, protocol: Protocol) -> Self {
        TraceOptions {
            target: target.into().to_canonical(),
            scope_id: None,
            protocol,
            port: match protocol {
                Protocol::Udp => 33434,
                _ => 80,
            },
            udp_fixed_port: false,
            first_ttl: 1,
            max_ttl: 30,
            rounds: 10,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            names: true,
            name_timeout: Duration::from_secs(2),
            icmp_ping_socket: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{0}")]
    Privilege(String),
    #[error("invalid option: {0}")]
    Invalid(String),
    #[error("send probe with ttl {ttl} to {target}: {source}")]
    Send {
        ttl: u8,
        target: IpAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("poll probe sockets: {0}")]
    Poll(#[source] std::io::Error),
}

/// Everything a trace measured.
#[derive(Debug, Clone, Serialize)]
pub struct TraceResult {
    pub target: IpAddr,
    /// A link-local target's interface, by name and index (as a hop's `scope`/`scope_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_id: Option<u32>,
    pub protocol: Protocol,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// How probes were sent and what that needs.
    pub method: &'static str,
    pub rounds: u32,
    pub interval_ms: f64,
    pub timeout_ms: f64,
    /// Whether any probe reached the destination.
    pub reached: bool,
    /// Hops from `first_ttl` to the destination (or to the last TTL probed).
    pub hops: Vec<Hop>,
    /// What could not be done, and why.
    pub notes: Vec<String>,
}

impl TraceResult {
    /// The target as `ping` writes it: `fe80::1%eth0` for a link-local one.
    pub fn target_text(&self) -> String {
        ScopedIp {
            ip: self.target,
            scope_id: self.scope_id,
            scope: self.scope.clone(),
        }
        .to_text()
    }

    /// The destination's hop, when reached.
    pub fn destination(&self) -> Option<&Hop> {
        self.hops.iter().find(|h| h.destination)
    }
}

fn method_for(opts: &TraceOptions) -> Result<Method, TraceError> {
    match opts.protocol {
        Protocol::Tcp => Ok(Method::TcpConnect),
        Protocol::Udp => Ok(Method::Udp),
        Protocol::Icmp => {
            probe::icmp_method(opts.icmp_ping_socket, packet::Family::of(opts.target))
                .map_err(TraceError::Privilege)
        }
    }
}

/// Runs the trace: `rounds` rounds of one probe per TTL. `progress` is called after each round
/// (round number, rounds) so the CLI can show progress.
pub fn run(
    opts: &TraceOptions,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<TraceResult, TraceError> {
    if opts.first_ttl == 0 || opts.first_ttl > opts.max_ttl || opts.max_ttl > MAX_TTL {
        return Err(TraceError::Invalid(format!(
            "ttl range {}..{} (use 1 ≤ first ≤ max ≤ {MAX_TTL})",
            opts.first_ttl, opts.max_ttl
        )));
    }
    if opts.rounds == 0 || opts.rounds > MAX_ROUNDS {
        return Err(TraceError::Invalid(format!(
            "rounds {} (use 1..={MAX_ROUNDS})",
            opts.rounds
        )));
    }
    match (needs_scope(opts.target), opts.scope_id) {
        (true, None) => {
            return Err(TraceError::Invalid(format!(
                "{} is link-local: name its interface, e.g. {}%eth0",
                opts.target, opts.target
            )));
        }
        (false, Some(_)) => {
            return Err(TraceError::Invalid(format!(
                "a scope id applies only to an IPv6 link-local target, not {}",
                opts.target
            )));
        }
        _ => {}
    }
    let method = method_for(opts)?;
    let mut notes = Vec::new();
    match method {
        Method::TcpConnect => notes.push(
            "tcp probes use connect(): each probe has its own source port, so a per-flow \
             balanced route may show several addresses at one hop"
                .to_string(),
        ),
        Method::IcmpDgram => notes.push(
            "no CAP_NET_RAW: icmp probes use a ping socket (the kernel picks the echo id)"
                .to_string(),
        ),
        _ => {}
    }
    let ident = (std::process::id() & 0xffff) as u16;
    let engine::Probed {
        samples,
        sent,
        probed_rounds,
        dest_ttl,
        local_errors,
        ..
    } = engine::probe_rounds(opts, method, ident, progress)?;
    for e in local_errors {
        notes.push(format!("a probe failed locally: {e}"));
    }

    let last = dest_ttl.unwrap_or_else(|| {
        // Not reached: keep up to the last TTL that answered (plus one silent row), so the
        // table does not end in 20 rows of "???".
        let answered = (opts.first_ttl..=opts.max_ttl)
            .rev()
            .find(|t| !samples[usize::from(*t)].is_empty());
        answered.map_or(opts.first_ttl, |t| (t + 1).min(opts.max_ttl))
    });
    let mut hops: Vec<Hop> = (opts.first_ttl..=last)
        .map(|ttl| {
            let t = usize::from(ttl);
            Hop::from_samples(ttl, sent[t], &probed_rounds[t], &samples[t])
        })
        .collect();
    let reached = hops.iter().any(|h| h.destination);
    if !reached {
        notes.push(format!(
            "the destination did not answer within {} hops",
            opts.max_ttl
        ));
    }
    name_scopes(&mut hops);
    if opts.names {
        resolve_names(&mut hops, opts.name_timeout);
    }
    Ok(TraceResult {
        target: opts.target,
        scope: opts.scope_id.and_then(netdoctor_sys::iface::name_of),
        scope_id: opts.scope_id,
        protocol: opts.protocol,
        port: (opts.protocol != Protocol::Icmp).then_some(opts.port),
        method: method.describe(),
        rounds: opts.rounds,
        interval_ms: opts.interval.as_secs_f64() * 1000.0,
        timeout_ms: opts.timeout.as_secs_f64() * 1000.0,
        reached,
        hops,
        notes,
    })
}

/// Names the interface of every link-local hop address (its scope id is an index of this
/// thread's namespace, so this runs where the probes ran).
fn name_scopes(hops: &mut [Hop]) {
    for a in hops.iter_mut().flat_map(|h| h.addrs.iter_mut()) {
        a.scope = a.scope_id.and_then(netdoctor_sys::iface::name_of);
    }
}

/// Reverse-resolves every hop address in parallel, each bounded by `cap`; a link-local address
/// is asked with its scope id, as `traceroute` asks.
fn resolve_names(hops: &mut [Hop], cap: Duration) {
    let addrs: Vec<std::net::SocketAddr> = hops
        .iter()
        .flat_map(|h| h.addrs.iter().map(|a| a.socket_addr(0)))
        .collect();
    let names: Vec<Option<String>> = std::thread::scope(|s| {
        let hs: Vec<_> = addrs
            .iter()
            .map(|&sa| {
                s.spawn(move || {
                    crate::names::getnameinfo_addr(sa, cap)
                        .results
                        .into_iter()
                        .next()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or(None)).collect()
    });
    let mut it = names.into_iter();
    for h in hops.iter_mut() {
        for a in h.addrs.iter_mut() {
            a.name = it.next().flatten();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn tcp_trace_to_loopback_is_one_hop() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut o = TraceOptions::new(Ipv4Addr::LOCALHOST, Protocol::Tcp);
        o.port = listener.local_addr().unwrap().port();
        o.rounds = 3;
        o.interval = Duration::from_millis(10);
        o.names = false;
        let mut calls = 0;
        let r = run(&o, &mut |_, _| calls += 1).unwrap();
        assert_eq!(calls, 3);
        assert!(r.reached);
        assert_eq!(r.hops.len(), 1);
        assert_eq!((r.hops[0].sent, r.hops[0].received), (3, 3));
        assert!(r.hops[0].destination);
    }

    #[test]
    fn tcp_trace_to_ipv6_loopback_is_one_hop() {
        let listener = std::net::TcpListener::bind("[::1]:0").unwrap();
        let mut o = TraceOptions::new(std::net::Ipv6Addr::LOCALHOST, Protocol::Tcp);
        o.port = listener.local_addr().unwrap().port();
        o.rounds = 2;
        o.interval = Duration::from_millis(10);
        o.names = false;
        let r = run(&o, &mut |_, _| {}).unwrap();
        assert!(r.reached);
        assert_eq!(r.target, IpAddr::V6(std::net::Ipv6Addr::LOCALHOST));
        assert_eq!(r.hops.len(), 1);
        assert_eq!(r.hops[0].addrs[0].ip, r.target);
        assert_eq!((r.hops[0].sent, r.hops[0].received), (2, 2));
    }

    #[test]
    fn an_ipv4_mapped_target_is_traced_over_ipv4() {
        let mapped: std::net::Ipv6Addr = "::ffff:127.0.0.1".parse().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut o = TraceOptions::new(mapped, Protocol::Tcp);
        assert_eq!(o.target, IpAddr::V4(Ipv4Addr::LOCALHOST));
        o.port = listener.local_addr().unwrap().port();
        o.rounds = 1;
        o.names = false;
        let r = run(&o, &mut |_, _| {}).unwrap();
        assert!(r.reached);
        assert_eq!(r.hops[0].addrs[0].ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
    }

    #[test]
    fn bad_options_are_errors() {
        let mut o = TraceOptions::new(Ipv4Addr::LOCALHOST, Protocol::Udp);
        o.rounds = 0;
        assert!(matches!(
            run(&o, &mut |_, _| {}),
            Err(TraceError::Invalid(_))
        ));
        o.rounds = 1;
        o.first_ttl = 5;
        o.max_ttl = 4;
        assert!(matches!(
            run(&o, &mut |_, _| {}),
            Err(TraceError::Invalid(_))
        ));
        // A link-local target needs its scope; a scope needs a link-local target.
        let ll: std::net::Ipv6Addr = "fe80::1".parse().unwrap();
        let o = TraceOptions::new(ll, Protocol::Udp);
        let e = run(&o, &mut |_, _| {}).unwrap_err().to_string();
        assert!(
            e.contains("fe80::1 is link-local: name its interface"),
            "{e}"
        );
        let mut o = TraceOptions::new(Ipv4Addr::LOCALHOST, Protocol::Udp);
        o.scope_id = Some(1);
        let e = run(&o, &mut |_, _| {}).unwrap_err().to_string();
        assert!(e.contains("only to an IPv6 link-local target"), "{e}");
    }
}
