//! `netdoctor dns NAME`: the system resolver's path and each nameserver, timed.
//!
//! [`run`] reads the resolver configuration ([`config`]), times getaddrinfo (the path every
//! program takes), asks every configured nameserver directly over UDP and TCP a few times
//! ([`query`]: per-try time, answer and loss), and times the PTR lookups of the addresses found,
//! both directly at each nameserver and through getnameinfo. All file paths are options, so tests
//! point them at temporary files. Nameservers are asked in parallel (one thread per server and
//! transport), so a dead server costs one timeout × tries, not one per server.

pub mod config;
pub mod query;
mod reverse;
pub mod search;

use crate::names::{self, SystemLookup};
use config::ResolvConf;
use hickory_proto::rr::RecordType;
use query::{Transport, Try};
use serde::Serialize;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// What to look up and where the configuration lives.
#[derive(Debug, Clone)]
pub struct DnsOptions {
    pub name: String,
    /// `AAAA` instead of `A` for the direct questions.
    pub ipv6: bool,
    pub resolv_conf: PathBuf,
    pub nsswitch: PathBuf,
    pub hosts: PathBuf,
    /// Tries per nameserver and transport.
    pub tries: u32,
    /// Deadline of one try.
    pub timeout: Duration,
    pub tcp: bool,
    /// PTR lookups of the addresses found.
    pub reverse: bool,
    /// Time getaddrinfo/getnameinfo (the system path). Off in tests that inject files, since
    /// glibc always reads the real /etc.
    pub system: bool,
    /// Cap on one system lookup.
    pub system_cap: Duration,
    /// Do not ask the nameservers when the system answers the name without DNS (`localhost`,
    /// or an `/etc/hosts` entry consulted before DNS): what `diagnose` does, since the
    /// nameservers then play no part in reaching the target.
    pub skip_when_files_answer: bool,
    /// Take the tries and the deadline of each try from resolv.conf (`options attempts:`,
    /// `timeout:`; glibc's 2 and 5 s when absent), as the system resolver will, with this cap
    /// on tries × deadline per server so a run stays bounded (the report notes the cap when it
    /// bites). `None`: `tries` and `timeout` as given.
    pub follow_resolv_conf: Option<Duration>,
}

impl DnsOptions {
    pub fn new(name: &str) -> Self {
        DnsOptions {
            name: name.to_string(),
            ipv6: false,
            resolv_conf: "/etc/resolv.conf".into(),
            nsswitch: "/etc/nsswitch.conf".into(),
            hosts: "/etc/hosts".into(),
            tries: 3,
            timeout: Duration::from_secs(2),
            tcp: true,
            reverse: true,
            system: true,
            system_cap: Duration::from_secs(12),
            skip_when_files_answer: false,
            follow_resolv_conf: None,
        }
    }
}

/// The resolver's configuration as glibc will use it for this name.
#[derive(Debug, Clone, Serialize)]
pub struct ResolverPath {
    pub nsswitch_path: PathBuf,
    /// Sources of the `hosts:` line; `None` when the file or line is missing.
    pub nsswitch_hosts: Option<Vec<String>>,
    pub resolv_conf: ResolvConf,
    pub hosts_path: PathBuf,
    /// Addresses `/etc/hosts` gives the name (glibc answers from them without DNS when `files`
    /// comes first).
    pub hosts_matches: Vec<IpAddr>,
}

impl ResolverPath {
    /// Whether nsswitch sends host lookups to DNS at all (missing file/line: glibc's default
    /// does).
    pub fn uses_dns(&self) -> bool {
        self.nsswitch_hosts
            .as_ref()
            .is_none_or(|s| s.iter().any(|w| w == "dns" || w == "resolve"))
    }

    /// Whether glibc answers the name from `/etc/hosts` before it would ask DNS.
    pub fn answered_by_files(&self) -> bool {
        if self.hosts_matches.is_empty() {
            return false;
        }
        // No nsswitch hosts line: glibc's default consults files first.
        let Some(sources) = &self.nsswitch_hosts else {
            return true;
        };
        let pos = |w: &str| sources.iter().position(|s| s == w);
        match (pos("files"), pos("dns").or(pos("resolve"))) {
            (Some(f), Some(d)) => f < d,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

/// Names the system answers without DNS whatever the configuration (RFC 6761 `localhost`).
pub fn is_localhost(name: &str) -> bool {
    let n = name.trim_end_matches('.').to_ascii_lowercase();
    n == "localhost" || n.ends_with(".localhost")
}

/// One transport's tries at one nameserver, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct TransportTiming {
    pub transport: Transport,
    pub tries: Vec<Try>,
    pub sent: u32,
    pub answered: u32,
    /// Lost fraction (0..=1): tries without an answer.
    pub loss: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
}

impl TransportTiming {
    pub fn from_tries(transport: Transport, tries: Vec<Try>) -> Self {
        let mut times: Vec<f64> = tries
            .iter()
            .filter(|t| t.answered())
            .filter_map(|t| t.elapsed_ms)
            .collect();
        times.sort_by(f64::total_cmp);
        let sent = tries.len() as u32;
        let answered = times.len() as u32;
        TransportTiming {
            transport,
            sent,
            answered,
            loss: if sent == 0 {
                0.0
            } else {
                1.0 - f64::from(answered) / f64::from(sent)
            },
            min_ms: times.first().copied(),
            median_ms: (!times.is_empty()).then(|| times[times.len() / 2]),
            max_ms: times.last().copied(),
            tries,
        }
    }

    /// The first error message among the tries (refused, unreachable …), if any.
    pub fn first_error(&self) -> Option<&str> {
        self.tries.iter().find_map(|t| match &t.outcome {
            query::Outcome::Error { error } => Some(error.as_str()),
            _ => None,
        })
    }

    pub fn timeouts(&self) -> u32 {
        self.tries
            .iter()
            .filter(|t| t.outcome == query::Outcome::Timeout)
            .count() as u32
    }
}

/// One nameserver asked directly.
#[derive(Debug, Clone, Serialize)]
pub struct ServerTiming {
    pub server: IpAddr,
    /// Its position in resolv.conf (0 = asked first by glibc without `rotate`).
    pub position: usize,
    pub udp: TransportTiming,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TransportTiming>,
    /// One UDP try of AAAA when A is asked: glibc's getaddrinfo (AF_UNSPEC) sends both
    /// questions in parallel and waits for both, so a server that never answers AAAA stalls
    /// every lookup by its timeout although A answers at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aaaa: Option<Try>,
}

impl ServerTiming {
    /// Answers of the first answered UDP (else TCP) try.
    pub fn answers(&self) -> &[String] {
        let all = self
            .udp
            .tries
            .iter()
            .chain(self.tcp.iter().flat_map(|t| &t.tries));
        all.filter(|t| t.answered())
            .map(|t| t.answers())
            .next()
            .unwrap_or(&[])
    }
    /// Whether the server answers A (over UDP) but its AAAA try went unanswered.
    pub fn aaaa_unanswered(&self) -> bool {
        self.udp.answered > 0 && self.aaaa.as_ref().is_some_and(|t| !t.answered())
    }
    /// The time of the AAAA try when the server answers A quickly (median over UDP below
    /// `slow_ms`) but answered AAAA only after `slow_ms` or more: getaddrinfo waits for it.
    pub fn aaaa_late_ms(&self, slow_ms: f64) -> Option<f64> {
        let a_fast = self.udp.median_ms.is_some_and(|ms| ms < slow_ms);
        let t = self.aaaa.as_ref().filter(|t| t.answered())?;
        t.elapsed_ms.filter(|&ms| a_fast && ms >= slow_ms)
    }
    /// Whether any try over any transport was answered.
    pub fn reachable(&self) -> bool {
        self.udp.answered > 0 || self.tcp.as_ref().is_some_and(|t| t.answered > 0)
    }
}

/// The reverse (PTR) lookup of one address found.
#[derive(Debug, Clone, Serialize)]
pub struct ReverseTiming {
    pub address: IpAddr,
    /// Directly at each nameserver that answered the forward question (one try each).
    pub direct: Vec<(IpAddr, Try)>,
    /// getnameinfo(NI_NAMEREQD), as `ping` and `traceroute` do it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemLookup>,
}

/// Everything `netdoctor dns` measured.
#[derive(Debug, Clone, Serialize)]
pub struct DnsReport {
    pub name: String,
    /// The name the direct questions asked: the one that answered the search walk (or, when
    /// none did, the last one it asked), else the first of the search order.
    pub query_name: String,
    pub record_type: String,
    pub resolver: ResolverPath,
    /// Deadline of one direct try, ms.
    pub timeout_ms: f64,
    /// Tries per nameserver and transport.
    pub tries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub getaddrinfo: Option<SystemLookup>,
    pub servers: Vec<ServerTiming>,
    /// The search order walked at the first answering server, when resolv.conf's search list
    /// and ndots give the name more than one form (see [`search`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<search::SearchWalk>,
    pub reverse: Vec<ReverseTiming>,
    /// The system answers the name without DNS (localhost, or `/etc/hosts` before DNS).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub answered_without_dns: bool,
    /// Parts that were skipped and why.
    pub notes: Vec<String>,
}

impl DnsReport {
    /// Whether getaddrinfo found the name through DNS (not from files, not `localhost`).
    pub fn getaddrinfo_answered_by_dns(&self) -> bool {
        !self.answered_without_dns
            && self.resolver.uses_dns()
            && self
                .getaddrinfo
                .as_ref()
                .is_some_and(|g| g.error.is_none() && !g.timed_out && !g.results.is_empty())
    }

    /// Whether `s` must have answered getaddrinfo although the direct tries got nothing:
    /// getaddrinfo found the name through DNS and `s` is the only nameserver, or (no `rotate`)
    /// the one glibc was asking when the lookup ended, after as many timeouts as servers
    /// before it. Such a server is slow or lossy, never unreachable.
    pub fn answered_getaddrinfo(&self, s: &ServerTiming) -> bool {
        if !self.getaddrinfo_answered_by_dns() {
            return false;
        }
        let rc = &self.resolver.resolv_conf;
        let gai_ms = self
            .getaddrinfo
            .as_ref()
            .and_then(|g| g.elapsed_ms)
            .unwrap_or(f64::MAX);
        // Without `rotate`, glibc moves on to the next server after each timeout: the one
        // asked when the answer came is the one that gave it.
        let waited = (gai_ms / (f64::from(rc.timeout_s.max(1)) * 1000.0)) as usize;
        self.servers.len() == 1 || (!rc.rotate && waited % self.servers.len().max(1) == s.position)
    }
}

impl DnsReport {
    /// What glibc waits, per lookup, on nameservers that time out before it reaches the first
    /// one that answers (without `rotate`, each costs one timeout), in ms.
    pub fn dead_servers_wait_ms(&self) -> f64 {
        let rc = &self.resolver.resolv_conf;
        if rc.rotate {
            return 0.0;
        }
        let dead_ahead = self
            .servers
            .iter()
            .take_while(|s| !s.reachable() && s.udp.timeouts() > 0)
            .count();
        if dead_ahead == self.servers.len() {
            return 0.0;
        }
        dead_ahead as f64 * f64::from(rc.timeout_s) * 1000.0
    }
}

/// Errors that stop the run (everything else becomes data in the report).
#[derive(Debug, thiserror::Error)]
pub enum DnsError {
    #[error("read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid name {0:?}: use a host name such as api.example.com")]
    InvalidName(String),
}

fn read_optional(path: &std::path::Path) -> Result<Option<String>, DnsError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(DnsError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Reads the resolver's configuration for `opts.name`.
pub fn resolver_path(opts: &DnsOptions) -> Result<ResolverPath, DnsError> {
    let resolv_conf =
        config::read_resolv_conf(&opts.resolv_conf).map_err(|source| DnsError::Read {
            path: opts.resolv_conf.display().to_string(),
            source,
        })?;
    let nsswitch_hosts = read_optional(&opts.nsswitch)?
        .as_deref()
        .and_then(config::parse_nsswitch_hosts);
    let hosts_matches = read_optional(&opts.hosts)?
        .map(|t| config::parse_hosts_matches(&t, &opts.name))
        .unwrap_or_default();
    Ok(ResolverPath {
        nsswitch_path: opts.nsswitch.clone(),
        nsswitch_hosts,
        resolv_conf,
        hosts_path: opts.hosts.clone(),
        hosts_matches,
    })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
        && !name.starts_with('.')
}

fn ask_n(
    server: IpAddr,
    transport: Transport,
    name: &str,
    rt: RecordType,
    o: &DnsOptions,
) -> TransportTiming {
    let tries = (0..o.tries.max(1))
        .map(|_| query::ask(SocketAddr::new(server, 53), transport, name, rt, o.timeout))
        .collect();
    TransportTiming::from_tries(transport, tries)
}

/// The direct tries of `qn` at each `(position, server)`, in parallel: UDP and TCP tries and,
/// when A is asked, one AAAA try.
fn ask_all(
    asked: &[(usize, IpAddr)],
    qn: &str,
    rt: RecordType,
    opts: &DnsOptions,
) -> Vec<ServerTiming> {
    std::thread::scope(|s| {
        let handles: Vec<_> = asked
            .iter()
            .map(|&(position, server)| {
                let udp = s.spawn(move || ask_n(server, Transport::Udp, qn, rt, opts));
                let tcp = opts
                    .tcp
                    .then(|| s.spawn(move || ask_n(server, Transport::Tcp, qn, rt, opts)));
                let aaaa = (rt == RecordType::A).then(|| {
                    s.spawn(move || {
                        let to = SocketAddr::new(server, 53);
                        query::ask(to, Transport::Udp, qn, RecordType::AAAA, opts.timeout)
                    })
                });
                (position, server, udp, tcp, aaaa)
            })
            .collect();
        handles
            .into_iter()
            .map(|(position, server, udp, tcp, aaaa)| ServerTiming {
                server,
                position,
                udp: udp.join().expect("udp query thread"),
                tcp: tcp.map(|t| t.join().expect("tcp query thread")),
                aaaa: aaaa.map(|t| t.join().expect("aaaa query thread")),
            })
            .collect()
    })
}

/// Runs every measurement for `opts.name`. Errors only for bad input and unreadable files.
pub fn run(opts: &DnsOptions) -> Result<DnsReport, DnsError> {
    if !valid_name(&opts.name) {
        return Err(DnsError::InvalidName(opts.name.clone()));
    }
    let resolver = resolver_path(opts)?;
    let rc = &resolver.resolv_conf;
    let query_name = format!("{}.", rc.first_query_name(&opts.name));
    let rt = if opts.ipv6 {
        RecordType::AAAA
    } else {
        RecordType::A
    };
    let mut notes = Vec::new();
    let opts = &effective(opts, rc, &mut notes);
    let files_answer = is_localhost(&opts.name) || resolver.answered_by_files();
    let ask_servers = !(opts.skip_when_files_answer && files_answer);
    if !ask_servers {
        notes.push(format!(
            "{} is answered without DNS ({}): nameservers not asked",
            opts.name,
            if resolver.answered_by_files() {
                format!("{} comes first", resolver.hosts_path.display())
            } else {
                "localhost".to_string()
            }
        ));
    } else if rc.nameservers.is_empty() {
        notes.push(format!(
            "{} lists no nameserver: no server to ask directly",
            rc.path.display()
        ));
    }

    let asked: Vec<(usize, IpAddr)> = if ask_servers {
        rc.nameservers.iter().copied().enumerate().collect()
    } else {
        Vec::new()
    };
    let (getaddrinfo, mut servers) = std::thread::scope(|s| {
        let gai = opts
            .system
            .then(|| s.spawn(|| names::getaddrinfo(&opts.name, opts.system_cap)));
        let servers = ask_all(&asked, &query_name, rt, opts);
        (gai.map(|g| g.join().expect("getaddrinfo thread")), servers)
    });
    // The search list: the rest of the order, asked at the first answering server; the direct
    // tries are then asked again, of the answering servers, for the name that ended the walk.
    let order = rc.search_order(&opts.name);
    let search = search::walk(&servers, &order, rt, opts.timeout);
    let mut query_name = query_name;
    if let Some(last) = search.as_ref().and_then(|w| w.steps.last())
        && format!("{}.", last.name) != query_name
    {
        query_name = format!("{}.", last.name);
        let again: Vec<(usize, IpAddr)> = servers
            .iter()
            .filter(|s| s.reachable())
            .map(|s| (s.position, s.server))
            .collect();
        for t in ask_all(&again, &query_name, rt, opts) {
            if let Some(slot) = servers.iter_mut().find(|s| s.position == t.position) {
                *slot = t;
            }
        }
        notes.push(format!(
            "the search list sent the lookup through {} name(s) before {}: direct tries asked \
             of {query_name}",
            search.as_ref().map_or(0, |w| w.steps.len() - 1),
            last.name
        ));
    }
    if !opts.system {
        notes.push("system lookups (getaddrinfo, getnameinfo) not timed".to_string());
    }

    let reverse = if opts.reverse {
        reverse::lookups(opts, getaddrinfo.as_ref(), &servers, &mut notes)
    } else {
        notes.push("reverse (PTR) lookups skipped".to_string());
        Vec::new()
    };

    Ok(DnsReport {
        name: opts.name.clone(),
        query_name,
        record_type: rt.to_string(),
        timeout_ms: opts.timeout.as_secs_f64() * 1000.0,
        tries: opts.tries.max(1),
        resolver,
        getaddrinfo,
        servers,
        search,
        reverse,
        answered_without_dns: files_answer,
        notes,
    })
}

/// `opts` with the tries and deadline resolv.conf gives (see
/// [`DnsOptions::follow_resolv_conf`]), noting the cap when it applies.
fn effective(opts: &DnsOptions, rc: &ResolvConf, notes: &mut Vec<String>) -> DnsOptions {
    let mut o = opts.clone();
    let Some(cap) = opts.follow_resolv_conf else {
        return o;
    };
    let asked = Duration::from_secs(u64::from(rc.timeout_s));
    let timeout = asked.min(cap).max(Duration::from_millis(100));
    let fit = (cap.as_millis() / timeout.as_millis().max(1)) as u32;
    let tries = rc.attempts.min(fit).max(1);
    if timeout < asked || tries < rc.attempts {
        notes.push(format!(
            "direct tries capped at {tries} × {:.0} s per server (resolv.conf asks {} × {} s) \
             so the run stays bounded",
            timeout.as_secs_f64(),
            rc.attempts,
            rc.timeout_s
        ));
    }
    o.tries = tries;
    o.timeout = timeout;
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_resolv_conf_is_data_not_an_error() {
        let dir = std::env::temp_dir().join(format!("nd-route-dns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rc = dir.join("resolv.conf");
        std::fs::write(&rc, "search example\n").unwrap();
        let mut o = DnsOptions::new("api");
        o.resolv_conf = rc;
        o.nsswitch = dir.join("missing-nsswitch");
        o.hosts = dir.join("missing-hosts");
        o.system = false;
        let r = run(&o).unwrap();
        assert!(r.servers.is_empty());
        assert_eq!(r.query_name, "api.example.");
        assert!(r.resolver.uses_dns());
        assert!(
            r.notes.iter().any(|n| n.contains("lists no nameserver")),
            "{:?}",
            r.notes
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_answered_from_files_skip_the_nameservers_only_when_asked() {
        let dir = std::env::temp_dir().join(format!("nd-route-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // TEST-NET nameserver: never asked in this test (no packet leaves).
        std::fs::write(dir.join("resolv.conf"), "nameserver 192.0.2.53\n").unwrap();
        std::fs::write(dir.join("nsswitch"), "hosts: files dns\n").unwrap();
        std::fs::write(dir.join("hosts"), "10.9.9.9 api.internal\n").unwrap();
        let opts = |name: &str| {
            let mut o = DnsOptions::new(name);
            o.resolv_conf = dir.join("resolv.conf");
            o.nsswitch = dir.join("nsswitch");
            o.hosts = dir.join("hosts");
            o.system = false;
            o.reverse = false;
            o.skip_when_files_answer = true;
            o
        };
        for name in ["api.internal", "localhost", "x.localhost"] {
            let r = run(&opts(name)).unwrap();
            assert!(r.answered_without_dns, "{name}");
            assert!(r.servers.is_empty(), "{name}");
            assert!(
                r.notes[0].contains("nameservers not asked"),
                "{:?}",
                r.notes
            );
        }
        // DNS before files: the nameservers matter.
        std::fs::write(dir.join("nsswitch"), "hosts: dns files\n").unwrap();
        let p = resolver_path(&opts("api.internal")).unwrap();
        assert!(!p.answered_by_files());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tries_and_deadline_follow_resolv_conf_within_the_cap() {
        let rc = |text: &str| config::parse_resolv_conf(std::path::Path::new("/x"), text);
        let mut o = DnsOptions::new("api");
        o.follow_resolv_conf = Some(Duration::from_secs(10));
        let mut notes = Vec::new();
        // glibc's defaults: 2 tries of 5 s.
        let e = effective(&o, &rc(""), &mut notes);
        assert_eq!((e.tries, e.timeout), (2, Duration::from_secs(5)));
        let e = effective(&o, &rc("options timeout:1 attempts:3\n"), &mut notes);
        assert_eq!((e.tries, e.timeout), (3, Duration::from_secs(1)));
        assert!(notes.is_empty(), "{notes:?}");
        // 5 × 30 s would hold the run 150 s per server: capped, and said.
        let e = effective(&o, &rc("options timeout:30 attempts:5\n"), &mut notes);
        assert_eq!((e.tries, e.timeout), (1, Duration::from_secs(10)));
        assert!(notes[0].contains("capped at 1 × 10 s"), "{notes:?}");
        // Without the option the caller's figures stand.
        o.follow_resolv_conf = None;
        let e = effective(&o, &rc("options timeout:30\n"), &mut notes);
        assert_eq!((e.tries, e.timeout), (3, Duration::from_secs(2)));
    }

    #[test]
    fn bad_names_are_rejected() {
        for bad in ["", "a b", ".x", "x/y"] {
            assert!(matches!(
                run(&DnsOptions::new(bad)),
                Err(DnsError::InvalidName(_))
            ));
        }
    }

    #[test]
    fn transport_summary_counts_loss() {
        let answered = |ms| Try {
            elapsed_ms: Some(ms),
            outcome: query::Outcome::Answer {
                rcode: "No Error".into(),
                answers: vec![],
                truncated: false,
            },
        };
        let lost = Try {
            elapsed_ms: None,
            outcome: query::Outcome::Timeout,
        };
        let t = TransportTiming::from_tries(
            Transport::Udp,
            vec![answered(30.0), lost, answered(10.0), answered(20.0)],
        );
        assert_eq!((t.sent, t.answered, t.timeouts()), (4, 3, 1));
        assert!((t.loss - 0.25).abs() < 1e-9);
        assert_eq!(
            (t.min_ms, t.median_ms, t.max_ms),
            (Some(10.0), Some(20.0), Some(30.0))
        );
    }
}
