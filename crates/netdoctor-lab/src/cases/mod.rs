//! Lab cases: the classic slow-request causes as scenarios a user starts, diagnoses and stops
//! (`netdoctor lab start --case NAME`).
//!
//! | case | built | diagnose with | expect |
//! |---|---|---|---|
//! | `nagle` | the reference lab (nginx, `tcp_nodelay` on/off) | `diagnose` from the client | `nagle_delayed_ack` |
//! | `backlog` | listen backlog 2, acceptor taking one connection per 100 ms | `diagnose` from the client | `listen_queue_overflow` |
//! | `port-exhaustion` | 50 local ports in the client, the client closes first | `diagnose --no-keepalive` from the client | `ephemeral_port_exhaustion` |
//! | `syn-flood` | `hping3 -S` from a third namespace, 500 SYN/s for 120 s | `diagnose` from the client | `syn_flood` |
//! | `no-arp` | client and server on one /24; the target is an address of it nobody holds | `diagnose` from the client | `neighbour_unreachable` (preflight) |
//! | `no-route` | the client routes only its /24; the target is outside it | `diagnose` from the client | `no_route` (preflight) |
//! | `slow-dns-2s` | the route lab's nameserver answers after 2 s; resolv.conf with glibc's defaults | `diagnose http://srv.lab.test:8080/` from the client | `dns_slow` (not `dns_server_unreachable`) |
//! | `slow-dns`, `dead-dns`, `no-dns` | the route lab's nameserver slow, silent, absent | `diagnose http://srv.lab.test:8080/` from the client (its DNS checks) | `dns_slow`, `dns_server_unreachable`, `dns_no_nameserver` |
//! | `ptr-timeout` | the route lab's nameserver deaf to PTR | `dns` from the client (diagnose makes no reverse lookups) | `reverse_dns_timeout` |
//! | `far-server` | a hop adding 37 ms | `diagnose http://srv.lab.test:8080/` from the client (its trace) | `high_base_rtt` |
//! | `ipv6` | `far-server` with IPv6 beside IPv4 on every routed link | `diagnose http://[fd00:231:3::2]:8080/` from the client (its trace over IPv6) | `high_base_rtt` |
//! | `lossy-hop` | a hop dropping 20 % each way | `trace` from the client (diagnose's 6 rounds do not place the loss) | `route_problem` |
//! | `far-l2` | no router: the client on the server's subnet behind a bridge adding 40 ms | `diagnose http://srv.lab.test:8080/` from the client (its SYN probe, handshakes and tcp_info min_rtt) | `high_base_rtt` |
//! | `h2-window` | `far-l2`'s bridge; an HTTP/2 (h2c) server keeping 64 KB windows, a client posting 256 KiB bodies ([`crate::h2case`]) | `diagnose --passive --snaplen 65535` from the client (the frames) | `h2_flow_control_stall` |
//! | `h2-stream-limit` | `far-l2`'s bridge; an h2c server allowing 2 streams, answering after 60–160 ms, clients wanting 8; control: the same server allowing 100 | `diagnose --passive --snaplen 65535` from the client | `h2_stream_limit` (not on the control) |
//! | `h2-resets` | `far-l2`'s bridge; an h2c server resetting every 4th stream (INTERNAL_ERROR); control: one answering every 4th with 503 | the same | `h2_stream_resets` (the control: `http_errors`) |
//! | `h2-head-of-line` | `far-l2`'s bridge dropping 2 % each way, offloads off; h2c, 10 streams per connection, 32 KiB answers; control: HTTP/1.1 | the same (from the client namespace: holes behind each loss are replayed when filled) | `h2_head_of_line` (the control: loss only) |
//! | `self-signed` | nginx with a self-signed certificate (for its own address) on :8443 | `diagnose https://10.214.0.1:8443/` from the client, without `-k` | `tls_verify_failed` (preflight, side client); with `-k` it loads and is healthy |
//! | `small-wmem` | client — router — `throughput --server` ([`crate::bulk_lab`]); `tcp_wmem` max 16 KB in the client | `throughput 10.216.1.2` from the client | `send_buffer_limited` |
//! | `small-rmem` | the same; `tcp_rmem` max 8 KB in the server | `throughput` from the client | `receive_window_limited` |
//! | `path-loss` | the same; the router drops 2 % of the client's packets, the client uses reno | `throughput` from the client | `congestion_limited` |
//! | `shaper` | the same; htb 100 Mbit/s on the router's link to the server | `throughput` from the client | `shaper_limited` |
//! | `mtu-blackhole` | the same; a 1280-byte MTU hop whose ICMP fragmentation-needed is dropped | `throughput` from the client | `mss_mtu_problem` |
//! | `slow-writer` | the same, unimpaired; the client writes at 50 Mbit/s | `throughput -b 50M` from the client | `application_limited` |
//! | `small-mss` | the same; the router clamps every SYN's MSS to 536 | `throughput` from the client | `mss_mtu_problem` (small MSS, not a black hole) |
//! | `softirq-bound` | the same; 10,000 non-matching iptables INPUT rules in the server, RPS steers its receive to the last CPU, the client's TSO/GSO off | `throughput` from the client | `receiver_softirq_saturated` |
//!
//! Every case but `nagle` runs in a detached process of the netdoctor binary (`lab run-case`,
//! hidden; started by [`spawn::start_case`], body in [`run::run_case`]), so its servers,
//! forwarder, nameserver and flood outlive `lab start`. Its PID (with start time) is in the
//! lab's state file with every namespace and `/etc/netns` dir it makes, so `lab stop` (with or
//! without `--name`) ends it by PID and removes all of it; the process itself removes its lab on
//! SIGTERM/SIGINT/SIGHUP. Host cases are diagnosed from the client, as users would: the
//! listener's queue, the SYN_RECV sockets and the counters are per namespace, and diagnose reads
//! them in the namespace of the process serving the target — here a thread of the case process
//! that joined the server namespace.

mod info;
pub mod run;
pub mod spawn;

use serde::{Deserialize, Serialize};

use crate::bulk_lab::{self, Limit};
use crate::hostcases::{HOST_SERVER_IP, HOST_SERVER_IP_ATK};
use crate::route_lab::{self, RouteLab};
use crate::{LabConfig, PORT_NODELAY_OFF, SERVER_IP};

/// A lab case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    Nagle,
    Backlog,
    PortExhaustion,
    SynFlood,
    NoArp,
    NoRoute,
    SlowDns,
    SlowDns2s,
    DeadDns,
    NoDns,
    PtrTimeout,
    FarServer,
    LossyHop,
    FarL2,
    H2Window,
    H2StreamLimit,
    H2Resets,
    H2HeadOfLine,
    SelfSigned,
    SmallWmem,
    SmallRmem,
    PathLoss,
    Shaper,
    MtuBlackhole,
    SlowWriter,
    SmallMss,
    Ipv6,
    SoftirqBound,
}

/// Every case, in the order `--help` lists them.
pub const ALL: [Case; 28] = [
    Case::Nagle,
    Case::Backlog,
    Case::PortExhaustion,
    Case::SynFlood,
    Case::NoArp,
    Case::NoRoute,
    Case::SlowDns,
    Case::SlowDns2s,
    Case::DeadDns,
    Case::NoDns,
    Case::PtrTimeout,
    Case::FarServer,
    Case::LossyHop,
    Case::FarL2,
    Case::H2Window,
    Case::H2StreamLimit,
    Case::H2Resets,
    Case::H2HeadOfLine,
    Case::SelfSigned,
    Case::SmallWmem,
    Case::SmallRmem,
    Case::PathLoss,
    Case::Shaper,
    Case::MtuBlackhole,
    Case::SlowWriter,
    Case::SmallMss,
    Case::Ipv6,
    Case::SoftirqBound,
];

/// Port of the host cases' HTTP server.
pub const HOST_CASE_PORT: u16 = 8080;
/// Port of the route cases' HTTP server (at [`route_lab::SERVER_IP`]).
pub const ROUTE_CASE_PORT: u16 = 8080;
/// `listen()` backlog of the `backlog` case.
pub const BACKLOG: i32 = 2;
/// The `backlog` case's acceptor takes one connection per this many milliseconds.
pub const ACCEPT_EVERY_MS: u64 = 100;
/// The `no-arp` case's target: on the host cases' /24, held by nobody.
pub const NO_ARP_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 214, 0, 99);
/// The `no-route` case's target: outside every route of the client.
pub const NO_ROUTE_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 215, 0, 1);
/// `ip_local_port_range` of the `port-exhaustion` case's client.
pub const PORT_RANGE: (u16, u16) = (40000, 40049);
/// HTTPS port of the `self-signed` case's nginx (its plain HTTP port is [`HOST_CASE_PORT`]).
pub const SELF_SIGNED_PORT: u16 = 8443;
/// SYNs per second of the `syn-flood` case.
pub const FLOOD_RATE: u32 = 500;
/// How long the `syn-flood` case floods: it ends by itself then.
pub const FLOOD_SECS: u32 = 120;

impl Case {
    /// The name `--case` takes.
    pub fn name(self) -> &'static str {
        match self {
            Case::Nagle => "nagle",
            Case::Backlog => "backlog",
            Case::PortExhaustion => "port-exhaustion",
            Case::SynFlood => "syn-flood",
            Case::NoArp => "no-arp",
            Case::NoRoute => "no-route",
            Case::SlowDns => "slow-dns",
            Case::SlowDns2s => "slow-dns-2s",
            Case::DeadDns => "dead-dns",
            Case::NoDns => "no-dns",
            Case::PtrTimeout => "ptr-timeout",
            Case::FarServer => "far-server",
            Case::LossyHop => "lossy-hop",
            Case::FarL2 => "far-l2",
            Case::H2Window => "h2-window",
            Case::H2StreamLimit => "h2-stream-limit",
            Case::H2Resets => "h2-resets",
            Case::H2HeadOfLine => "h2-head-of-line",
            Case::SelfSigned => "self-signed",
            Case::SmallWmem => "small-wmem",
            Case::SmallRmem => "small-rmem",
            Case::PathLoss => "path-loss",
            Case::Shaper => "shaper",
            Case::MtuBlackhole => "mtu-blackhole",
            Case::SlowWriter => "slow-writer",
            Case::SmallMss => "small-mss",
            Case::Ipv6 => "ipv6",
            Case::SoftirqBound => "softirq-bound",
        }
    }

    /// The case called `name`.
    pub fn parse(name: &str) -> Option<Case> {
        ALL.into_iter().find(|c| c.name() == name)
    }

    /// One line for `--help`.
    pub fn summary(self) -> &'static str {
        match self {
            Case::Nagle => {
                "nginx with tcp_nodelay on (:8080) and off (:8081): Nagle meets delayed ACK"
            }
            Case::Backlog => "listen backlog 2 and a slow acceptor: the accept queue overflows",
            Case::PortExhaustion => {
                "50 local ports and one connection per request: connect() runs out of ports"
            }
            Case::SynFlood => "a SYN flood from a third namespace (500/s, stops after 120 s)",
            Case::NoArp => "the target is an address on the client's link that nobody answers",
            Case::NoRoute => "the target is outside every route of the client",
            Case::SlowDns => "the nameserver answers after 300 ms",
            Case::SlowDns2s => {
                "the nameserver answers after 2 s (below glibc's 5 s timeout): slow, not dead"
            }
            Case::DeadDns => "resolv.conf names a nameserver that never answers",
            Case::NoDns => "resolv.conf lists no nameserver",
            Case::PtrTimeout => "the nameserver never answers reverse (PTR) questions",
            Case::FarServer => "the server is behind a hop that adds 37 ms of RTT",
            Case::LossyHop => "a hop on the route drops 20% of packets each way",
            Case::FarL2 => {
                "no router: a user-space bridge between client and server adds 40 ms of RTT"
            }
            Case::H2Window => {
                "HTTP/2 uploads over +40 ms RTT to a server keeping 64 KB windows: DATA waits for WINDOW_UPDATE"
            }
            Case::H2StreamLimit => {
                "HTTP/2 clients wanting 8 streams from a slow server allowing 2 (control: one allowing 100)"
            }
            Case::H2Resets => {
                "an HTTP/2 server resetting every 4th stream (control: one answering every 4th with 503)"
            }
            Case::H2HeadOfLine => {
                "HTTP/2 with 10 streams per connection over a path with +40 ms RTT and 2% loss (control: HTTP/1.1)"
            }
            Case::SelfSigned => {
                "nginx over HTTPS with a self-signed certificate: diagnose stops at the TLS check without -k"
            }
            Case::SmallWmem => "a bulk transfer from a client whose tcp_wmem allows 16 KB",
            Case::SmallRmem => "a bulk transfer to a server whose tcp_rmem allows 8 KB",
            Case::PathLoss => "a bulk transfer (reno) through a router dropping 2% of packets",
            Case::Shaper => "a bulk transfer through an htb shaper at 100 Mbit/s",
            Case::MtuBlackhole => {
                "a bulk transfer through a 1280-byte MTU hop that drops its ICMP fragmentation-needed"
            }
            Case::SlowWriter => "a bulk transfer whose writer sends at 50 Mbit/s",
            Case::SmallMss => "a bulk transfer through a router that clamps the MSS to 536 bytes",
            Case::Ipv6 => "the server is reached over IPv6, behind a hop that adds 37 ms of RTT",
            Case::SoftirqBound => {
                "a bulk transfer to a server whose receive CPU walks 10,000 iptables rules per packet in softirq"
            }
        }
    }

    /// The lab name `lab start --case` uses without `--name`: `netdoctor` for the reference
    /// lab, `nd-<case>` for the others (so several cases can run side by side).
    pub fn default_lab_name(self) -> String {
        match self {
            Case::Nagle => "netdoctor".to_string(),
            c => format!("nd-{}", c.name()),
        }
    }

    fn is_route(self) -> bool {
        matches!(
            self,
            Case::SlowDns
                | Case::SlowDns2s
                | Case::DeadDns
                | Case::NoDns
                | Case::PtrTimeout
                | Case::FarServer
                | Case::Ipv6
                | Case::LossyHop
                | Case::FarL2
                | Case::H2Window
                | Case::H2StreamLimit
                | Case::H2Resets
                | Case::H2HeadOfLine
        )
    }

    /// The namespaces of a lab of this case called `lab`, beyond `<lab>-srv` and `<lab>-cli`.
    pub(crate) fn extra_netns(self, lab: &str) -> Vec<String> {
        if self.is_route() {
            RouteLab::namespace_names(lab)
                .into_iter()
                .filter(|n| !n.ends_with("-cli") && !n.ends_with("-srv"))
                .collect()
        } else if self == Case::SynFlood {
            vec![format!("{lab}-atk")]
        } else if self.bulk_limit().is_some() {
            vec![format!("{lab}-rtr")]
        } else {
            Vec::new()
        }
    }

    /// The bulk-transfer limit of a throughput case.
    pub fn bulk_limit(self) -> Option<Limit> {
        Some(match self {
            Case::SmallWmem => Limit::SmallWmem,
            Case::SmallRmem => Limit::SmallRmem,
            Case::PathLoss => Limit::PathLoss,
            Case::Shaper => Limit::Shaper,
            Case::MtuBlackhole => Limit::MtuBlackhole,
            Case::SlowWriter => Limit::SlowWriter,
            Case::SmallMss => Limit::SmallMss,
            Case::SoftirqBound => Limit::SoftirqBound,
            _ => return None,
        })
    }

    /// The `/etc/netns/<ns>` dirs a lab of this case writes.
    pub(crate) fn etc_netns(self, lab: &str) -> Vec<String> {
        if self.is_route() {
            vec![format!("{lab}-cli")]
        } else {
            Vec::new()
        }
    }
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A lab case as `lab start --case` and `lab status` show it (`--json`: this object).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseInfo {
    /// The lab's name.
    pub lab: String,
    /// The case's name.
    pub case: String,
    /// One line on the case.
    pub summary: String,
    /// Every network namespace of the lab.
    pub namespaces: Vec<String>,
    /// What was built, one line each.
    pub built: Vec<String>,
    /// The namespace to run the command in with `ip netns exec` (so it also sees that
    /// namespace's `/etc/netns` files), when the command does not take `--netns` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns_exec: Option<String>,
    /// The netdoctor command that diagnoses the case, as arguments (`netdoctor` first).
    pub diagnose: Vec<String>,
    /// The same, as one line to type (with `ip netns exec` when needed).
    pub command: String,
    /// The finding ids the command reports.
    pub expect: Vec<String>,
    /// What to know about the case.
    pub note: String,
    /// The command that removes the lab.
    pub stop: String,
    /// The case's process (absent for `nagle`, whose nginx runs on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_parses_back_and_says_how_to_diagnose_it() {
        for case in ALL {
            assert_eq!(Case::parse(case.name()), Some(case));
            let cfg = LabConfig::new(&case.default_lab_name());
            let info = case.info(&cfg);
            assert_eq!(info.diagnose[0], "netdoctor", "{case}");
            assert!(!info.expect.is_empty(), "{case}");
            assert!(
                info.command.contains(&info.diagnose[1..].join(" ")),
                "{case}"
            );
            assert!(info.namespaces.contains(&cfg.client_netns()), "{case}");
            for ns in &info.namespaces {
                crate::netns::check_netns_name(ns).unwrap();
            }
        }
        assert_eq!(Case::parse("nope"), None);
        let far = Case::FarServer.info(&LabConfig::new("x"));
        assert_eq!(far.netns_exec.as_deref(), Some("x-cli"));
        assert_eq!(
            far.command,
            "ip netns exec x-cli netdoctor diagnose http://srv.lab.test:8080/"
        );
        // diagnose makes no reverse lookups: the PTR case keeps `dns`.
        let ptr = Case::PtrTimeout.info(&LabConfig::new("x"));
        assert_eq!(
            ptr.command,
            "ip netns exec x-cli netdoctor dns srv.lab.test"
        );
        assert_eq!(far.namespaces, ["x-srv", "x-cli", "x-r1", "x-dly", "x-r2"]);
        let flood = Case::SynFlood.info(&LabConfig::new("y"));
        assert_eq!(flood.namespaces, ["y-srv", "y-cli", "y-atk"]);
        assert_eq!(flood.stop, "netdoctor lab stop --name y");
    }

    #[test]
    fn route_cases_match_the_route_labs_named_cases() {
        for case in ALL.into_iter().filter(|c| c.is_route()) {
            assert!(
                route_lab::RouteLabConfig::case(case.name()).is_some(),
                "{case}"
            );
        }
    }
}
