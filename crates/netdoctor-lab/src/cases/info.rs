//! What each lab case is made of, the command that diagnoses it and what to expect
//! ([`Case::info`], the table `lab start --case` prints), apart from the case list and its
//! names in `cases/mod.rs`: one arm per case, the longest part of the cases' code.

use super::*;

impl Case {
    /// What a lab of this case called `cfg.name` is made of, how to diagnose it and what to
    /// expect.
    pub fn info(self, cfg: &LabConfig) -> CaseInfo {
        let lab = cfg.name.as_str();
        let srv = cfg.server_netns();
        let cli = cfg.client_netns();
        let mut namespaces = vec![srv.clone(), cli.clone()];
        namespaces.extend(self.extra_netns(lab));
        let host_url = format!("http://{HOST_SERVER_IP}:{HOST_CASE_PORT}/");
        let route_srv = route_lab::SERVER_IP.to_string();
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // `diagnose` run from the client's namespace with `args` (options, then the target).
        let from_client = |args: &[&str]| {
            let mut v = argv(&["netdoctor", "diagnose", "--netns", &cli]);
            v.extend(argv(args));
            v
        };
        let route_built = |resolver: &str, hop: &str| {
            vec![
                format!(
                    "route {cli} 10.231.1.2 → {lab}-r1 → {lab}-dly ({hop}) → {lab}-r2 → {srv} {route_srv}"
                ),
                format!(
                    "HTTP server http://{route_srv}:{ROUTE_CASE_PORT}/ in {srv}; lab nameserver {} (zone lab.test: {})",
                    route_lab::NAMESERVER_IP,
                    route_lab::SERVER_NAME
                ),
                format!("/etc/netns/{cli}/resolv.conf: {resolver}"),
            ]
        };
        // The HTTP/2 cases: watch their own clients' traffic, whole frames (the snap length).
        let h2_passive = |port: u16| {
            argv(&[
                "netdoctor",
                "diagnose",
                "--passive",
                "-d",
                "5s",
                "--snaplen",
                "65535",
                &format!("http://{route_srv}:{port}/"),
            ])
        };
        // The bridge labs (`far-l2` and the HTTP/2 cases): no router, one subnet.
        let bridge = |how: &str| {
            format!(
                "no router: {cli} {} ══ {lab}-dly (user-space bridge, {how}) ══ {srv} {route_srv}, one subnet",
                route_lab::L2_CLIENT_IP
            )
        };
        let h2_bridge = |b: H2Bridge| {
            (
                vec![
                    bridge(&format!("+40 ms RTT{}", b.impairment)),
                    b.servers,
                    b.clients,
                ],
                Some(cli.clone()),
                h2_passive(b.port),
                vec![b.expect],
                b.note,
            )
        };
        let route_url = format!("http://{}:{ROUTE_CASE_PORT}/", route_lab::SERVER_NAME);
        // The one command for the route cases: diagnose the server by name from the client
        // (`ip netns exec`, so the client's resolv.conf applies): DNS checks, the trace
        // through the routers, then the load.
        let route_diagnose = argv(&["netdoctor", "diagnose", &route_url]);
        let resolv_note = "`ip netns exec` gives the command the client's resolv.conf";
        let l2_built = vec![
            bridge("holds frames 20 ms each way: +40 ms RTT"),
            format!(
                "HTTP server http://{route_srv}:{ROUTE_CASE_PORT}/ in {srv} (answers in microseconds); lab nameserver {} (zone lab.test: {})",
                route_lab::NAMESERVER_IP,
                route_lab::SERVER_NAME
            ),
            format!("/etc/netns/{cli}/resolv.conf: the lab nameserver"),
        ];
        let (built, netns_exec, command, expect, note): (
            Vec<String>,
            Option<String>,
            Vec<String>,
            Vec<&str>,
            String,
        ) = match self {
            Case::Nagle => (
                vec![
                    format!("server namespace {srv}: nginx, tcp_nodelay on at http://{SERVER_IP}:8080/, off at http://{SERVER_IP}:{PORT_NODELAY_OFF}/"),
                    format!("client namespace {cli} (10.213.0.2), joined by a veth pair"),
                ],
                None,
                from_client(&[
                    &format!("http://{SERVER_IP}:{PORT_NODELAY_OFF}/"),
                ]),
                vec!["nagle_delayed_ack"],
                format!(
                    "the server with tcp_nodelay off holds each response's body behind the client's delayed ACK (~40 ms); http://{SERVER_IP}:8080/ (on) is healthy"
                ),
            ),
            Case::Backlog => (
                vec![
                    format!(
                        "server namespace {srv}: HTTP server {host_url} with listen backlog {BACKLOG}, accepting one connection per {ACCEPT_EVERY_MS} ms"
                    ),
                    format!("client namespace {cli} (10.214.0.2), joined by a veth pair"),
                ],
                None,
                from_client(&[
                    "-c",
                    "50",
                    "-d",
                    "3s",
                    &host_url,
                ]),
                vec!["listen_queue_overflow"],
                "run it from the client: diagnose reads the accept queue and its counters in the namespace of the process serving the target (the server's); SYNs dropped for a full queue come back after 1 s, 3 s".to_string(),
            ),
            Case::PortExhaustion => (
                vec![
                    format!(
                        "client namespace {cli}: net.ipv4.ip_local_port_range = {} {} ({} ports)",
                        PORT_RANGE.0,
                        PORT_RANGE.1,
                        PORT_RANGE.1 - PORT_RANGE.0 + 1
                    ),
                    format!(
                        "server namespace {srv}: HTTP server {host_url} that lets the client close first (TIME_WAIT stays on the client for 60 s)"
                    ),
                ],
                None,
                from_client(&[
                    "--no-keepalive",
                    "-c",
                    "4",
                    "-d",
                    "3s",
                    &host_url,
                ]),
                vec!["ephemeral_port_exhaustion"],
                "one connection per request: each closed connection keeps its local port in TIME_WAIT for 60 s, so connect() runs out of ports".to_string(),
            ),
            Case::SynFlood => (
                vec![
                    format!(
                        "server namespace {srv}: HTTP server {host_url} (also {HOST_SERVER_IP_ATK}:{HOST_CASE_PORT}), backlog 128"
                    ),
                    format!("client namespace {cli} (10.214.0.2)"),
                    format!(
                        "attacker namespace {lab}-atk (10.214.1.2): hping3 -S, {FLOOD_RATE} SYN/s to {HOST_SERVER_IP_ATK}:{HOST_CASE_PORT} for {FLOOD_SECS} s; an iptables rule there drops its RSTs, so the connections stay half-open"
                    ),
                ],
                None,
                from_client(&[
                    "-c",
                    "10",
                    "-d",
                    "3s",
                    &host_url,
                ]),
                vec!["syn_flood"],
                format!(
                    "run it from the client: diagnose reads the half-open sockets and SYN cookies in the namespace of the process serving the target (the server's); the flood stops by itself {FLOOD_SECS} s after the start, `lab stop` ends it sooner"
                ),
            ),
            Case::NoArp | Case::NoRoute => {
                let (target, expect, note) = if self == Case::NoArp {
                    (
                        format!("http://{NO_ARP_IP}:{HOST_CASE_PORT}/"),
                        "neighbour_unreachable",
                        format!(
                            "{NO_ARP_IP} is on the client's /24 but nobody holds it: ARP goes unanswered, the preflight stops the run in about a second (side network) and no load runs; {host_url} is the healthy server beside it"
                        ),
                    )
                } else {
                    (
                        format!("http://{NO_ROUTE_IP}:{HOST_CASE_PORT}/"),
                        "no_route",
                        format!(
                            "the client's namespace routes only 10.214.0.0/24: connect() fails with ENETUNREACH before any packet leaves (side client) and no load runs; {host_url} is the healthy server beside it"
                        ),
                    )
                };
                (
                    vec![
                        format!("server namespace {srv}: HTTP server {host_url}"),
                        format!("client namespace {cli} (10.214.0.2/24), joined by a veth pair, no default route"),
                    ],
                    None,
                    from_client(&[&target]),
                    vec![expect],
                    note,
                )
            }
            Case::SlowDns2s => (
                route_built(
                    "the lab nameserver, which answers after 2 s; no options line (glibc: timeout 5 s, attempts 2)",
                    "no impairment",
                ),
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["dns_slow"],
                format!("{resolv_note}; getaddrinfo succeeds after 2 s, and the direct tries wait as glibc does (5 s), so the server is slow, not unreachable"),
            ),
            Case::SlowDns => (
                route_built("the lab nameserver, which answers after 300 ms", "no impairment"),
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["dns_slow"],
                format!("{resolv_note}; every new name lookup waits 300 ms before the request starts"),
            ),
            Case::DeadDns => (
                route_built(
                    &format!("nameserver {} only, which never answers", route_lab::DEAD_NAMESERVER_IP),
                    "no impairment",
                ),
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["dns_server_unreachable"],
                format!("{resolv_note}; the name does not resolve, so the diagnosis is the DNS checks' (the lookup waits for the resolver's timeouts first)"),
            ),
            Case::NoDns => (
                route_built("no nameserver line", "no impairment"),
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["dns_no_nameserver"],
                format!("{resolv_note}; the name does not resolve, so the diagnosis is the DNS checks'"),
            ),
            Case::PtrTimeout => (
                route_built(
                    "the lab nameserver, which never answers PTR questions",
                    "no impairment",
                ),
                Some(cli.clone()),
                argv(&["netdoctor", "dns", route_lab::SERVER_NAME]),
                vec!["reverse_dns_timeout"],
                "forward lookups work, so `diagnose` (which makes no reverse lookups) finds nothing; every tool that turns addresses into names stalls".to_string(),
            ),
            Case::FarServer => (
                route_built("the lab nameserver", "holds packets 18.5 ms each way: +37 ms RTT"),
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["high_base_rtt"],
                "the path's RTT itself (37 ms from hop 2 on, in diagnose's trace through the routers) explains the latency, not the server or TCP".to_string(),
            ),
            Case::Ipv6 => (
                {
                    let mut b = route_built("the lab nameserver", "holds packets 18.5 ms each way: +37 ms RTT");
                    b.push(format!(
                        "IPv6 beside IPv4: {cli} {} → {lab}-r1 {} → {lab}-r2 {} → {srv} {}, HTTP server also at http://[{}]:{ROUTE_CASE_PORT}/",
                        route_lab::CLIENT_IP6,
                        route_lab::R1_IP6,
                        route_lab::R2_IP6,
                        route_lab::SERVER_IP6,
                        route_lab::SERVER_IP6
                    ));
                    b
                },
                Some(cli.clone()),
                argv(&[
                    "netdoctor",
                    "diagnose",
                    &format!("http://[{}]:{ROUTE_CASE_PORT}/", route_lab::SERVER_IP6),
                ]),
                vec!["high_base_rtt"],
                "every stage runs over IPv6 (probe, load, capture, sockets, trace); the path's RTT (37 ms from hop 2 on) explains the latency, not the server or TCP".to_string(),
            ),
            Case::LossyHop => (
                route_built("the lab nameserver", "drops 20% of frames each way"),
                Some(cli.clone()),
                argv(&[
                    "netdoctor",
                    "trace",
                    &route_srv,
                    "-p",
                    &ROUTE_CASE_PORT.to_string(),
                    "-n",
                    "--rounds",
                    "40",
                    "--interval",
                    "50ms",
                    "--timeout",
                    "300ms",
                ]),
                vec!["route_problem"],
                "the loss starts at hop 2 and persists to the destination".to_string(),
            ),
            Case::H2Window => h2_bridge(H2Bridge {
                impairment: String::new(),
                servers: format!(
                    "HTTP/2 (h2c) server http://{route_srv}:{}/ in {srv}: python3-h2 with the default 65 535-byte stream and connection windows, WINDOW_UPDATE as it reads",
                    crate::h2case::H2_WINDOW_PORT
                ),
                clients: format!(
                    "client in {cli}: h2load -c 1 -m 1 -n {} -d (a {} KiB body per request) in a loop, a new connection per run, for {} s",
                    crate::h2case::RUN_REQUESTS,
                    crate::h2case::UPLOAD_BYTES / 1024,
                    crate::h2case::LOAD_SECS
                ),
                port: crate::h2case::H2_WINDOW_PORT,
                expect: "h2_flow_control_stall",
                note: "passive: the case's own client makes the traffic; the snap length keeps whole HTTP/2 frames. Every 64 KB of a body waits one round trip (40 ms) for the server's WINDOW_UPDATE".to_string(),
            }),
            Case::H2StreamLimit | Case::H2Resets | Case::H2HeadOfLine => {
                use crate::h2case as h;
                let (port, control, servers, client, expect, note) = match self {
                    Case::H2StreamLimit => (
                        h::STREAM_LIMIT_PORT,
                        h::UNLIMITED_PORT,
                        format!(
                            "h2c servers (python3-h2) answering {}–{} ms after each request: :{} announces SETTINGS_MAX_CONCURRENT_STREAMS {}, :{} (the control) python3-h2's 100",
                            h::ANSWER_DELAY_MS.0,
                            h::ANSWER_DELAY_MS.1,
                            h::STREAM_LIMIT_PORT,
                            h::STREAM_LIMIT,
                            h::UNLIMITED_PORT
                        ),
                        format!("h2load -c 1 -m {} to each", h::WANTED_STREAMS),
                        "h2_stream_limit",
                        format!(
                            "the client wants {} streams, the server allows {}: the connection is filled to exactly the limit again and again; the control port (same slow answers, no limit reached) has no such finding",
                            h::WANTED_STREAMS,
                            h::STREAM_LIMIT
                        ),
                    ),
                    Case::H2Resets => (
                        h::RESETS_PORT,
                        h::ERRORS_PORT,
                        format!(
                            "h2c servers (python3-h2): :{} answers every {}th stream with RST_STREAM INTERNAL_ERROR, :{} (the control) every {}th with HTTP 503",
                            h::RESETS_PORT,
                            h::EVERY,
                            h::ERRORS_PORT,
                            h::EVERY
                        ),
                        "h2load -c 1 -m 4 to each".to_string(),
                        "h2_stream_resets",
                        "a quarter of the streams end in the server's RST_STREAM, not in a response; the control port's failures are HTTP 503s (http_errors), not resets".to_string(),
                    ),
                    _ => (
                        h::HOL_PORT,
                        h::HOL_H1_PORT,
                        format!(
                            "servers (python3-h2 script) with {} KiB answers: :{} h2c, :{} (the control) HTTP/1.1",
                            h::HOL_BODY / 1024,
                            h::HOL_PORT,
                            h::HOL_H1_PORT
                        ),
                        "h2load -c 1 -m 10 to :8095, h2load --h1 -c 1 to :8096".to_string(),
                        "h2_head_of_line",
                        "diagnosed at the client, whose capture has a hole at each loss of the server's data: the frames behind it are read when the retransmission fills it, about a round trip later. Each lost segment holds every stream of the connection until it is repaired; the HTTP/1.1 control over the same path shows the loss, not head-of-line blocking".to_string(),
                    ),
                };
                let hol = self == Case::H2HeadOfLine;
                h2_bridge(H2Bridge {
                    impairment: if hol {
                        format!(
                            ", drops {:.0}% of frames each way; TSO/GSO/GRO off on both ends",
                            h::HOL_LOSS * 100.0
                        )
                    } else {
                        String::new()
                    },
                    servers: format!("{servers}, in {srv}"),
                    clients: format!(
                        "clients in {cli}: {client}, in loops of short runs (a new connection each) for {} s",
                        h::LOAD_SECS
                    ),
                    port,
                        expect,
                    note: format!(
                        "passive: the case's own clients make the traffic; the snap length keeps whole HTTP/2 frames. {note}; diagnose the control with http://{route_srv}:{control}/ (same namespace)"
                    ),
                })
            }
            Case::SelfSigned => {
                let url = format!("https://{HOST_SERVER_IP}:{SELF_SIGNED_PORT}/");
                (
                    vec![
                        format!(
                            "server namespace {srv}: nginx, {url} with a self-signed certificate for {HOST_SERVER_IP} (and plain {host_url})"
                        ),
                        format!("client namespace {cli} (10.214.0.2), joined by a veth pair"),
                    ],
                    None,
                    from_client(&[&url]),
                    vec!["tls_verify_failed"],
                    format!(
                        "the certificate's issuer is not trusted (it signed itself): the preflight stops the run in about a second, side client, and no load runs; `netdoctor diagnose --netns {cli} -k -c 4 {url}` accepts it, loads the server and finds it healthy (nginx here is one process: 100 connections of TLS saturate a small machine's CPU, which diagnose reports as such)"
                    ),
                )
            }
            Case::SmallWmem
            | Case::SmallRmem
            | Case::PathLoss
            | Case::Shaper
            | Case::MtuBlackhole
            | Case::SlowWriter
            | Case::SmallMss
            | Case::SoftirqBound => bulk_info(self, &cli, &srv, lab),
            Case::FarL2 => (
                l2_built,
                Some(cli.clone()),
                route_diagnose.clone(),
                vec!["high_base_rtt"],
                "no router in between, so there is no trace: the base RTT comes from the SYN probe, the captured handshakes and the kernel's min_rtt of the load's connections, and it explains the latency".to_string(),
            ),
        };
        let mut shell = Vec::new();
        if let Some(ns) = &netns_exec {
            shell.extend(["ip".to_string(), "netns".into(), "exec".into(), ns.clone()]);
        }
        shell.extend(command.iter().cloned());
        CaseInfo {
            lab: lab.to_string(),
            case: self.name().to_string(),
            summary: self.summary().to_string(),
            namespaces,
            built,
            netns_exec,
            diagnose: command,
            command: shell.join(" "),
            expect: expect.into_iter().map(str::to_string).collect(),
            note,
            stop: if lab == "netdoctor" {
                "netdoctor lab stop".to_string()
            } else {
                format!("netdoctor lab stop --name {lab}")
            },
            pid: None,
        }
    }
}

/// An HTTP/2 case on the bridge (no router, `{lab}-dly` adds 40 ms of RTT), diagnosed passively
/// on `port` from the client's namespace: `built` is the bridge line, `servers` and `clients`.
struct H2Bridge {
    /// After "+40 ms RTT" on the bridge line (loss, offloads), or empty.
    impairment: String,
    servers: String,
    clients: String,
    port: u16,
    expect: &'static str,
    note: String,
}

/// `built`, the namespace to run in, the command, the expected ids and the note of a bulk case.
fn bulk_info(
    case: Case,
    cli: &str,
    srv: &str,
    lab: &str,
) -> (
    Vec<String>,
    Option<String>,
    Vec<String>,
    Vec<&'static str>,
    String,
) {
    let server = bulk_lab::SERVER_IP.to_string();
    let mut built = vec![format!(
        "{cli} {} → {lab}-rtr (forwards) → {srv} {server}: `netdoctor throughput --server` on port {}",
        bulk_lab::CLIENT_IP,
        bulk_lab::PORT
    )];
    let mut command: Vec<String> = ["netdoctor", "throughput", &server, "-t", "5"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (what, expect, note) = match case {
        Case::SmallWmem => (
            format!("{cli}: net.ipv4.tcp_wmem = 4096 16384 16384"),
            "send_buffer_limited",
            "the client sends; its socket buffer holds at most 16 KB, so the data in flight stays under the congestion and receive windows",
        ),
        Case::SmallRmem => (
            format!("{srv}: net.ipv4.tcp_rmem = 4096 8192 8192 (set before the server started)"),
            "receive_window_limited",
            "the server receives; its small buffer caps the window it advertises, so the data in flight sits at that window",
        ),
        Case::PathLoss => (
            format!(
                "{lab}-rtr: iptables -m statistic drops {} % of the client's packets; {cli}: TSO/GSO off, tcp_congestion_control = reno",
                bulk_lab::LOSS * 100.0
            ),
            "congestion_limited",
            "random loss without a queue: retransmits, the congestion window collapses, the RTT stays near its minimum",
        ),
        Case::Shaper => (
            format!(
                "{lab}-rtr: htb {} Mbit/s with a 100-packet pfifo on its link to the server",
                bulk_lab::SHAPER_MBIT
            ),
            "shaper_limited",
            "a flat rate and a standing queue: the RTT rises far above its minimum; not a receive window or the writer",
        ),
        Case::MtuBlackhole => (
            format!(
                "{lab}-rtr: MTU {} towards the server, its ICMP fragmentation-needed dropped (both ends keep MTU 1500)",
                bulk_lab::SMALL_MTU
            ),
            "mss_mtu_problem",
            "the handshake and the control messages pass, full-size data segments vanish: the transfer stalls in retransmission timeouts",
        ),
        Case::SmallMss => (
            format!(
                "{lab}-rtr: iptables -t mangle … -j TCPMSS --set-mss {} on every SYN it forwards",
                bulk_lab::CLAMPED_MSS
            ),
            "mss_mtu_problem",
            "every segment carries at most 536 bytes and arrives: the transfer is bound by packets per second, not lost in a black hole",
        ),
        Case::SoftirqBound => (
            format!(
                "{srv}: {} non-matching iptables rules in INPUT, RPS steering b-srv's receive to CPU {}; {cli}: TSO/GSO off",
                bulk_lab::SOFTIRQ_RULES,
                bulk_lab::softirq_cpu()
            ),
            "receiver_softirq_saturated",
            "netfilter runs in the receive softirq: every packet walks the rules on the one CPU RPS picked, which spends most of its time in softirq while the server program idles; the sender, the window and the path have room",
        ),
        _ => {
            command.extend(["-b".to_string(), bulk_lab::WRITER_RATE.to_string()]);
            (
                "nothing impaired: the client writes at 50 Mbit/s (-b 50M)".to_string(),
                "application_limited",
                "the writer sets the rate; the path and the receiver have room",
            )
        }
    };
    built.push(what);
    (
        built,
        Some(cli.to_string()),
        command,
        vec![expect],
        note.to_string(),
    )
}
