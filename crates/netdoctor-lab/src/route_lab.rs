//! The route lab: a multi-hop path of network namespaces with a delay/loss hop and a lab
//! nameserver, for netdoctor's trace and dns checks.
//!
//! ```text
//!  cli ── r1 ══(dly: user-space delay/loss bridge)══ r2 ── srv
//!  10.231.1.2   10.231.1.1 | 10.231.2.1      10.231.2.2 | 10.231.3.1   10.231.3.2
//!                                                       nameserver 10.231.3.53 (behaviour set)
//!                                                       dead nameserver 10.231.3.54 (silent)
//! ```
//!
//! Without routers (`routers: false`, the `far-l2` case: a VPN, a stretched VLAN, a user-space
//! bridge) the client sits on the server's subnet, behind the same delay bridge, and `r1`/`r2`
//! stay empty:
//!
//! ```text
//!  cli ══(dly: user-space delay/loss bridge)══ srv
//!  10.231.3.100/24                               10.231.3.2/24 (nameservers as above)
//! ```
//!
//! With `ipv6: true` every routed link also carries IPv6 (otherwise IPv6 is off in every
//! namespace): `fd00:231:N::/64` beside `10.231.N.0/24`, the client `fd00:231:1::2`, r1
//! `fd00:231:1::1` | `fd00:231:2::1`, r2 `fd00:231:2::2` | `fd00:231:3::1`, the server
//! `fd00:231:3::2`; addresses with `nodad` and `accept_dad=0` (usable at once), routes via the
//! routers' fixed link-local addresses (`fe80::1` on both of r1's links, `fe80::2` on r2's),
//! `net.ipv6.conf.all.forwarding=1` and `net.ipv6.icmp.ratelimit=0` in r1 and r2. Two IPv6
//! look-alikes of a bad hop: `r1_icmp6_silent` (r1 forwards but an ip6tables rule in its
//! namespace drops its ICMPv6 Time Exceeded) and `r1_link_local_only` (r1 has no global IPv6
//! address, so it answers from `fe80::1`).
//!
//! `r1` and `r2` forward (`net.ipv4.ip_forward=1` set inside their namespaces, never in the
//! root namespace) and answer Time Exceeded without rate limit (`icmp_ratelimit=0`) unless a
//! test asks for one (`r1_icmp_ratelimit_ms`, to reproduce a router that rate-limits its own
//! ICMP). `dly` has no addresses and no forwarding: the [`Forwarder`] bridges its two veths and
//! holds frames there, so hop 2 and everything after it see the added RTT. ARP between r1 and r2
//! is fixed (permanent entries on fixed MACs), so the bridge's loss drops probes, never a
//! neighbour resolution. The client's
//! `/etc/netns/<cli>/resolv.conf` is written from the config, so `ip netns exec <cli> …` sees the
//! lab's resolver.
//!
//! Names are unique per lab (`ndrt-<pid>-<n>-…`), so tests may run in parallel. Everything is
//! removed by [`RouteLab::stop`] or on drop (panics included); [`cleanup_on_signal`] removes
//! every route lab of this process on SIGINT/SIGTERM/SIGHUP. No process is started: the
//! forwarder and the nameservers are threads of the process that holds the lab.
//! `ip` is run through a local helper (not the crate's `netns` module) to keep this file
//! independent of the lab's module layout while that is being split.

use crate::LabError;
use crate::forwarder::{Forwarder, Impairment};
use crate::nameserver::{Behavior, Nameserver, Zone};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

mod v6;

pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 1, 2);
pub const R1_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 1, 1);
pub const R1_FAR_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 2, 1);
pub const R2_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 2, 2);
pub const R2_FAR_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 3, 1);
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 3, 2);
pub const NAMESERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 3, 53);
pub const DEAD_NAMESERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 3, 54);
/// The client's address when the lab has no routers (on the server's subnet).
pub const L2_CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 231, 3, 100);
pub const CLIENT_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 1, 0, 0, 0, 0, 2);
pub const R1_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 1, 0, 0, 0, 0, 1);
pub const R1_FAR_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 2, 0, 0, 0, 0, 1);
pub const R2_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 2, 0, 0, 0, 0, 2);
pub const R2_FAR_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 3, 0, 0, 0, 0, 1);
pub const SERVER_IP6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x231, 3, 0, 0, 0, 0, 2);
/// r1's link-local address on both its links (what it answers from with `r1_link_local_only`).
pub const R1_LINK_LOCAL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
/// r2's link-local address on both its links.
pub const R2_LINK_LOCAL: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
/// MAC addresses of r1's and r2's ends of the bridged link (for their permanent neighbour
/// entries).
const R1_BRIDGE_MAC: &str = "02:31:00:00:01:02";
const R2_BRIDGE_MAC: &str = "02:31:00:00:02:01";
/// The names the lab nameserver serves.
pub const SERVER_NAME: &str = "srv.lab.test";

/// How the client's resolver is set up.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolver {
    /// `nameserver 10.231.3.53` with the given behaviour.
    Lab(Behavior),
    /// `nameserver 10.231.3.54`, which never answers.
    Dead,
    /// A resolv.conf without nameserver lines.
    Empty,
}

#[derive(Debug, Clone)]
pub struct RouteLabConfig {
    /// One-way delay each direction adds on the r1–r2 link (the RTT grows by twice this).
    pub one_way_delay: Duration,
    /// Fraction dropped in each direction on the r1–r2 link.
    pub loss: f64,
    /// `net.ipv4.icmp_ratelimit` for r1 in ms (`None`: 0, no limit).
    pub r1_icmp_ratelimit_ms: Option<u32>,
    pub resolver: Resolver,
    /// resolv.conf `options` line for the client (short timeouts keep tests quick).
    pub resolv_options: String,
    /// Routers between client and server (`false`: the client is on the server's subnet,
    /// behind the delay bridge only; `r1`/`r2` are left empty).
    pub routers: bool,
    /// IPv6 beside IPv4 on the routed path (see the module docs); needs `routers`.
    pub ipv6: bool,
    /// r1 forwards IPv6 but never sends ICMPv6 Time Exceeded (an ip6tables rule in r1).
    pub r1_icmp6_silent: bool,
    /// r1 has link-local IPv6 addresses only.
    pub r1_link_local_only: bool,
}

impl Default for RouteLabConfig {
    fn default() -> Self {
        RouteLabConfig {
            one_way_delay: Duration::ZERO,
            loss: 0.0,
            r1_icmp_ratelimit_ms: None,
            resolver: Resolver::Lab(Behavior::default()),
            resolv_options: "options timeout:1 attempts:1".to_string(),
            routers: true,
            ipv6: false,
            r1_icmp6_silent: false,
            r1_link_local_only: false,
        }
    }
}

/// The named cases of `lab start --case NAME` (see [`RouteLabConfig::case`]).
pub const CASES: &[(&str, &str)] = &[
    ("slow-dns", "the nameserver answers after 300 ms"),
    (
        "slow-dns-2s",
        "the nameserver answers after 2 s; resolv.conf has glibc's defaults (timeout 5 s)",
    ),
    (
        "dead-dns",
        "resolv.conf names a nameserver that never answers",
    ),
    ("no-dns", "resolv.conf lists no nameserver"),
    (
        "ptr-timeout",
        "the nameserver never answers reverse (PTR) questions",
    ),
    ("far-server", "the r1–r2 hop adds 37 ms of RTT"),
    ("lossy-hop", "the r1–r2 hop drops 20% of frames each way"),
    (
        "far-l2",
        "no router: a bridge between client and server adds 40 ms of RTT",
    ),
    (
        "h2-window",
        "far-l2's bridge (+40 ms RTT) with an HTTP/2 server keeping 64 KB windows",
    ),
    (
        "h2-stream-limit",
        "far-l2's bridge with HTTP/2 servers allowing 2 and 100 streams",
    ),
    (
        "h2-resets",
        "far-l2's bridge with HTTP/2 servers resetting streams and answering 503",
    ),
    (
        "h2-head-of-line",
        "far-l2's bridge dropping 2% each way, HTTP/2 and HTTP/1.1 servers",
    ),
    (
        "icmp-ratelimit",
        "r1 rate-limits its own ICMP (1/s after a burst); the path is fine",
    ),
    (
        "ipv6",
        "far-server over IPv6 too: the r1–r2 hop adds 37 ms of RTT",
    ),
];

impl RouteLabConfig {
    /// The config of a named case ([`CASES`]), `None` for an unknown name.
    pub fn case(name: &str) -> Option<RouteLabConfig> {
        let lab = |b: Behavior| Resolver::Lab(b);
        let mut c = RouteLabConfig::default();
        match name {
            "slow-dns" => {
                c.resolver = lab(Behavior {
                    delay: Duration::from_millis(300),
                    ..Default::default()
                })
            }
            "slow-dns-2s" => {
                c.resolver = lab(Behavior {
                    delay: Duration::from_secs(2),
                    ..Default::default()
                });
                c.resolv_options = String::new();
            }
            "dead-dns" => c.resolver = Resolver::Dead,
            "no-dns" => c.resolver = Resolver::Empty,
            "ptr-timeout" => {
                c.resolver = lab(Behavior {
                    drop_reverse: true,
                    ..Default::default()
                })
            }
            "far-server" => c.one_way_delay = Duration::from_micros(18_500),
            "ipv6" => {
                c.one_way_delay = Duration::from_micros(18_500);
                c.ipv6 = true;
            }
            "lossy-hop" => c.loss = 0.2,
            "far-l2" | "h2-window" | "h2-stream-limit" | "h2-resets" | "h2-head-of-line" => {
                c.routers = false;
                c.one_way_delay = Duration::from_millis(20);
                if name == "h2-head-of-line" {
                    c.loss = crate::h2case::HOL_LOSS;
                }
            }
            "icmp-ratelimit" => c.r1_icmp_ratelimit_ms = Some(1000),
            _ => return None,
        }
        Some(c)
    }
}

/// Route labs alive in this process (namespaces and /etc/netns dirs), for the signal handler.
static LIVE: Mutex<Vec<(Vec<String>, PathBuf)>> = Mutex::new(Vec::new());
static COUNTER: AtomicU32 = AtomicU32::new(0);
/// The namespaces' roles, in path order.
const ROLES: [&str; 5] = ["cli", "r1", "dly", "r2", "srv"];

/// A running route lab; torn down on [`RouteLab::stop`] or drop.
#[derive(Debug)]
pub struct RouteLab {
    tag: String,
    namespaces: Vec<String>,
    etc_dir: PathBuf,
    forwarder: Option<Forwarder>,
    nameservers: Vec<Nameserver>,
}

fn run(program: &str, args: &[&str]) -> Result<(), LabError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| LabError::Io {
            op: format!("run `{program} {}`", args.join(" ")),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(LabError::Command {
            command: format!("{program} {}", args.join(" ")),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Fixes the neighbours across the delay/loss bridge: r1's and r2's ends get fixed MACs and
/// permanent entries for each other's address (`r1_addr` in r2, `r2_addr` in r1).
fn pin_bridge_neighbours(
    r1: &str,
    r2: &str,
    r1_addr: std::net::IpAddr,
    r2_addr: std::net::IpAddr,
) -> Result<(), LabError> {
    for (ns, dev, mac, peer, peer_mac) in [
        (r1, "r1-b", R1_BRIDGE_MAC, r2_addr, R2_BRIDGE_MAC),
        (r2, "r2-b", R2_BRIDGE_MAC, r1_addr, R1_BRIDGE_MAC),
    ] {
        run("ip", &["-n", ns, "link", "set", dev, "address", mac])?;
        let family = if peer.is_ipv6() { "-6" } else { "-4" };
        let peer = peer.to_string();
        run(
            "ip",
            &[
                "-n",
                ns,
                family,
                "neigh",
                "replace",
                &peer,
                "lladdr",
                peer_mac,
                "dev",
                dev,
                "nud",
                "permanent",
            ],
        )?;
    }
    Ok(())
}

fn sysctl(ns: &str, kv: &str) -> Result<(), LabError> {
    run("ip", &["netns", "exec", ns, "sysctl", "-qw", kv])
}

impl RouteLab {
    pub fn client_netns(&self) -> &str {
        &self.namespaces[0]
    }
    pub fn server_netns(&self) -> &str {
        &self.namespaces[4]
    }
    /// All namespaces of the lab: cli, r1, dly, r2, srv.
    pub fn namespaces(&self) -> &[String] {
        &self.namespaces
    }
    pub fn tag(&self) -> &str {
        &self.tag
    }
    /// The client's resolv.conf (bind-mounted over /etc/resolv.conf by `ip netns exec`).
    pub fn client_resolv_conf(&self) -> PathBuf {
        self.etc_dir.join("resolv.conf")
    }
    /// Frames the forwarder dropped so far (both directions).
    pub fn dropped(&self) -> u64 {
        self.forwarder.as_ref().map_or(0, |f| {
            f.counters
                .iter()
                .map(|c| c.dropped.load(Ordering::Relaxed))
                .sum()
        })
    }

    /// The most a round trip through the delay bridge gained beyond its delay so far, in ms:
    /// each direction's latest send (this machine's scheduling), added. On a quiet machine a
    /// few µs; a measured hop step may exceed the configured delay by this much.
    pub fn late_max_ms(&self) -> f64 {
        self.forwarder.as_ref().map_or(0.0, |f| {
            f.counters
                .iter()
                .map(|c| c.late_max_us.load(Ordering::Relaxed) as f64 / 1000.0)
                .sum()
        })
    }

    /// Builds the lab with unique names (`ndrt-<pid>-<n>-…`). On any error what was built is
    /// removed before returning.
    pub fn start(cfg: &RouteLabConfig) -> Result<RouteLab, LabError> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        Self::start_named(&format!("ndrt-{}-{n}", std::process::id()), cfg)
    }

    /// The namespaces a lab called `tag` has, in order: `<tag>-cli`, `-r1`, `-dly`, `-r2`,
    /// `-srv`.
    pub fn namespace_names(tag: &str) -> Vec<String> {
        ROLES.iter().map(|r| format!("{tag}-{r}")).collect()
    }

    /// Builds the lab with namespaces named after `tag` ([`RouteLab::namespace_names`]; the
    /// caller makes sure no other lab uses it). On any error what was built is removed before
    /// returning.
    pub fn start_named(tag: &str, cfg: &RouteLabConfig) -> Result<RouteLab, LabError> {
        let tag = tag.to_string();
        let namespaces = Self::namespace_names(&tag);
        for ns in &namespaces {
            crate::netns::check_netns_name(ns)?;
        }
        let etc_dir = PathBuf::from("/etc/netns").join(&namespaces[0]);
        let mut lab = RouteLab {
            tag,
            namespaces,
            etc_dir,
            forwarder: None,
            nameservers: Vec::new(),
        };
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((lab.namespaces.clone(), lab.etc_dir.clone()));
        match lab.build(cfg) {
            Ok(()) => Ok(lab),
            Err(e) => {
                lab.teardown();
                Err(e)
            }
        }
    }

    fn build(&mut self, cfg: &RouteLabConfig) -> Result<(), LabError> {
        let [cli, r1, dly, r2, srv] = [0, 1, 2, 3, 4].map(|i| self.namespaces[i].clone());
        if cfg.ipv6 && !cfg.routers {
            return Err(LabError::InvalidName {
                name: self.tag.clone(),
                reason: "the route lab's IPv6 needs its routers".to_string(),
            });
        }
        for ns in &self.namespaces {
            run("ip", &["netns", "add", ns])?;
            run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
            if cfg.ipv6 {
                // Before the links exist, so their addresses (link-local ones too) are usable
                // at once.
                sysctl(ns, "net.ipv6.conf.all.accept_dad=0")?;
                sysctl(ns, "net.ipv6.conf.default.accept_dad=0")?;
            } else {
                sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1")?;
                sysctl(ns, "net.ipv6.conf.default.disable_ipv6=1")?;
            }
        }
        if !cfg.routers {
            return self.build_l2(cfg);
        }
        // (namespace a, if a, namespace b, if b)
        let links = [
            (&cli, "cli-r1", &r1, "r1-cli"),
            (&r1, "r1-b", &dly, "b-r1"),
            (&dly, "b-r2", &r2, "r2-b"),
            (&r2, "r2-srv", &srv, "srv-r2"),
        ];
        for (na, ia, nb, ib) in links {
            run(
                "ip",
                &[
                    "link", "add", ia, "netns", na, "type", "veth", "peer", "name", ib, "netns", nb,
                ],
            )?;
            run("ip", &["-n", na, "link", "set", ia, "up"])?;
            run("ip", &["-n", nb, "link", "set", ib, "up"])?;
        }
        let addr = |ns: &str, ip: Ipv4Addr, dev: &str| {
            run(
                "ip",
                &["-n", ns, "addr", "add", &format!("{ip}/24"), "dev", dev],
            )
        };
        addr(&cli, CLIENT_IP, "cli-r1")?;
        addr(&r1, R1_IP, "r1-cli")?;
        addr(&r1, R1_FAR_IP, "r1-b")?;
        addr(&r2, R2_IP, "r2-b")?;
        addr(&r2, R2_FAR_IP, "r2-srv")?;
        addr(&srv, SERVER_IP, "srv-r2")?;
        addr(&srv, NAMESERVER_IP, "srv-r2")?;
        addr(&srv, DEAD_NAMESERVER_IP, "srv-r2")?;
        let route = |ns: &str, to: &str, via: Ipv4Addr| {
            run(
                "ip",
                &["-n", ns, "route", "add", to, "via", &via.to_string()],
            )
        };
        route(&cli, "default", R1_IP)?;
        route(&r1, "10.231.3.0/24", R2_IP)?;
        route(&r2, "10.231.1.0/24", R1_FAR_IP)?;
        route(&srv, "default", R2_FAR_IP)?;
        for ns in [&r1, &r2] {
            sysctl(ns, "net.ipv4.ip_forward=1")?;
            sysctl(ns, "net.ipv4.icmp_ratelimit=0")?;
        }
        if let Some(ms) = cfg.r1_icmp_ratelimit_ms {
            sysctl(&r1, &format!("net.ipv4.icmp_ratelimit={ms}"))?;
        }
        // ARP across the delay/loss bridge is fixed (permanent entries, as the IPv6 half's
        // neighbours): a lossy-hop lab loses probes, not r1's resolution of r2. With 15 % loss
        // each way, three ARP requests in a row went unanswered now and then (about 2 % of
        // resolutions, and every entry is re-confirmed after ~30 s): r1 dropped everything
        // for r2 for 3 s, and a trace saw hop 2 answer none of its probes.
        pin_bridge_neighbours(&r1, &r2, R1_FAR_IP.into(), R2_IP.into())?;
        if cfg.ipv6 {
            self.build_ipv6(cfg)?;
        }
        let imp = Impairment {
            delay: cfg.one_way_delay,
            loss: cfg.loss,
        };
        self.forwarder = Some(Forwarder::start(&dly, "b-r1", "b-r2", imp, imp)?);
        self.finish_build(cfg, CLIENT_IP)
    }

    /// The lab without routers: cli ══ dly ══ srv on one subnet.
    fn build_l2(&mut self, cfg: &RouteLabConfig) -> Result<(), LabError> {
        let [cli, dly, srv] = [0, 2, 4].map(|i| self.namespaces[i].clone());
        for (na, ia, nb, ib) in [
            (&cli, "cli-b", &dly, "b-cli"),
            (&dly, "b-srv", &srv, "srv-b"),
        ] {
            run(
                "ip",
                &[
                    "link", "add", ia, "netns", na, "type", "veth", "peer", "name", ib, "netns", nb,
                ],
            )?;
            run("ip", &["-n", na, "link", "set", ia, "up"])?;
            run("ip", &["-n", nb, "link", "set", ib, "up"])?;
        }
        for (ns, ip, dev) in [
            (&cli, L2_CLIENT_IP, "cli-b"),
            (&srv, SERVER_IP, "srv-b"),
            (&srv, NAMESERVER_IP, "srv-b"),
            (&srv, DEAD_NAMESERVER_IP, "srv-b"),
        ] {
            run(
                "ip",
                &["-n", ns, "addr", "add", &format!("{ip}/24"), "dev", dev],
            )?;
        }
        let imp = Impairment {
            delay: cfg.one_way_delay,
            loss: cfg.loss,
        };
        self.forwarder = Some(Forwarder::start(&dly, "b-cli", "b-srv", imp, imp)?);
        self.finish_build(cfg, L2_CLIENT_IP)
    }

    /// The nameservers, the client's resolv.conf and the warm-up.
    fn finish_build(&mut self, cfg: &RouteLabConfig, client_ip: Ipv4Addr) -> Result<(), LabError> {
        let srv = self.namespaces[4].clone();

        let zone = Zone {
            records: vec![
                (SERVER_NAME.to_string(), SERVER_IP),
                ("r1.lab.test".to_string(), R1_IP),
                ("r2.lab.test".to_string(), R2_IP),
                ("cli.lab.test".to_string(), client_ip),
            ],
        };
        let dead = Behavior {
            silent: true,
            ..Default::default()
        };
        self.nameservers.push(Nameserver::start(
            &srv,
            DEAD_NAMESERVER_IP,
            53,
            zone.clone(),
            dead,
        )?);
        let resolv = match &cfg.resolver {
            Resolver::Lab(b) => {
                self.nameservers
                    .push(Nameserver::start(&srv, NAMESERVER_IP, 53, zone, b.clone())?);
                format!("nameserver {NAMESERVER_IP}\nsearch lab.test\n")
            }
            Resolver::Dead => format!("nameserver {DEAD_NAMESERVER_IP}\nsearch lab.test\n"),
            Resolver::Empty => "# route lab: no nameserver\nsearch lab.test\n".to_string(),
        };
        let io = |op: String| move |source| LabError::Io { op, source };
        std::fs::create_dir_all(&self.etc_dir)
            .map_err(io(format!("create {}", self.etc_dir.display())))?;
        let path = self.client_resolv_conf();
        std::fs::write(&path, format!("{resolv}{}\n", cfg.resolv_options))
            .map_err(io(format!("write {}", path.display())))?;
        self.warm_up(cfg);
        Ok(())
    }

    /// Resolves the neighbours along the path once (one datagram to the server's discard port),
    /// so the first probe of a test does not pay the ARP round trips through the delay hop.
    fn warm_up(&self, cfg: &RouteLabConfig) {
        let _ = crate::in_netns(self.client_netns(), || {
            if let Ok(s) = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)) {
                let _ = s.send_to(b"warm-up", (SERVER_IP, 9));
            }
            if cfg.ipv6
                && let Ok(s) = std::net::UdpSocket::bind((Ipv6Addr::UNSPECIFIED, 0))
            {
                let _ = s.send_to(b"warm-up", (SERVER_IP6, 9));
            }
        });
        std::thread::sleep(cfg.one_way_delay * 8 + Duration::from_millis(20));
    }

    /// Removes everything; returns the errors (the rest is removed regardless).
    fn teardown(&mut self) -> Vec<String> {
        if let Some(f) = self.forwarder.take() {
            f.stop();
        }
        for ns in self.nameservers.drain(..) {
            ns.stop();
        }
        let errors = remove(&self.namespaces, &self.etc_dir);
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(n, _)| n != &self.namespaces);
        errors
    }

    /// Tears the lab down, reporting what could not be removed.
    pub fn stop(mut self) -> Result<(), LabError> {
        let errors = self.teardown();
        self.namespaces.clear();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(LabError::Teardown {
                removed: Vec::new(),
                errors,
            })
        }
    }
}

fn remove(namespaces: &[String], etc_dir: &PathBuf) -> Vec<String> {
    let mut errors = Vec::new();
    for ns in namespaces {
        if crate::netns_exists(ns)
            && let Err(e) = run("ip", &["netns", "del", ns])
        {
            errors.push(e.to_string());
        }
    }
    if etc_dir.exists()
        && let Err(e) = std::fs::remove_dir_all(etc_dir)
    {
        errors.push(format!("remove {}: {e}", etc_dir.display()));
    }
    errors
}

impl Drop for RouteLab {
    fn drop(&mut self) {
        if self.namespaces.is_empty() {
            return;
        }
        for e in self.teardown() {
            eprintln!("netdoctor route lab {}: {e}", self.tag);
        }
    }
}

/// On SIGINT/SIGTERM/SIGHUP, removes every route lab of this process and exits with 130.
pub fn cleanup_on_signal() -> Result<(), LabError> {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let mut signals =
        signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|source| {
            LabError::Io {
                op: "register SIGINT/SIGTERM/SIGHUP handlers".to_string(),
                source,
            }
        })?;
    std::thread::Builder::new()
        .name("nd-route-lab-signals".to_string())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
                for (namespaces, etc) in live {
                    for e in remove(&namespaces, &etc) {
                        eprintln!("netdoctor route lab: signal {sig}: {e}");
                    }
                }
                std::process::exit(130);
            }
        })
        .map_err(|source| LabError::Io {
            op: "spawn signal thread".to_string(),
            source,
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_case_has_a_config_and_unknown_names_none() {
        for (name, _) in CASES {
            assert!(RouteLabConfig::case(name).is_some(), "{name}");
        }
        assert!(RouteLabConfig::case("nope").is_none());
        let far = RouteLabConfig::case("far-server").unwrap();
        assert_eq!(far.one_way_delay * 2, Duration::from_millis(37));
    }
}
