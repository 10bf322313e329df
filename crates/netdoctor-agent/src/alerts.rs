//! Alert rules that ship: one Prometheus alert per finding class, generated from the finding
//! catalog so the rules never drift from the ids the agent exports.
//!
//! `deploy/alerts/netdoctor-rules.yaml` (a Prometheus rules file) and
//! `deploy/alerts/prometheus-rule.yaml` (the same groups as a Prometheus Operator
//! `PrometheusRule`) are this module's output, committed; a test fails when they differ from
//! it, and `promtool check rules` / `promtool test rules` check them
//! (`deploy/alerts/netdoctor-rules.test.yaml`). Regenerate with
//! `netdoctor watch --print-alert-rules > deploy/alerts/netdoctor-rules.yaml`.
//!
//! Each alert fires when `netdoctor_finding_severity` of its id is warning (2) or critical (3)
//! for two windows of the default 30 s (`for: 1m`), per node, port and side. The alert's own
//! `severity` label is fixed per class (critical where requests fail or the host refuses work,
//! warning where they are slow), so an alert keeps one identity while the finding's severity
//! moves; the annotation says the current one. The runbook text is the catalog's meaning and
//! first step in English, and the Chinese catalogue's fix (`findings.zh.ftl`).

use netdoctor_core::{Finding, FindingId, Severity, Side};
use netdoctor_report::Lang;
use std::fmt::Write;

/// How long a finding must stay before its alert fires.
pub const FOR: &str = "1m";

/// The catalog's meaning of a finding class and the first thing to check, in English.
pub fn runbook_en(id: FindingId) -> &'static str {
    use FindingId::*;
    match id {
        NagleDelayedAck => {
            "A sender's Nagle algorithm waits for the peer's delayed ACK (about 40 ms on Linux) on each response written in pieces. Enable TCP_NODELAY on the side that holds data (nginx: tcp_nodelay on), or write each response in one call."
        }
        DelayedAckStall => {
            "A delayed ACK stalls a window- or cwnd-limited sender. Give the receiver a larger buffer, or make it ACK at once (TCP_QUICKACK, ip route ... quickack 1)."
        }
        PacketLossRetransmission => {
            "Segments are lost and resent. Find where: nstat -az TcpRetransSegs on both ends, ip -s link for drops, mtr along the path; check shapers, queues and firewall rules."
        }
        RetransmissionTimeout => {
            "Losses wait for the retransmission timeout (200 ms or more) because nothing told the sender quickly. Find the loss (nstat -az TcpExtTCPTimeouts, ip -s link, mtr) and check the listen queue if it happens at setup."
        }
        SynRetransmit => {
            "Connection setup waits for SYN retransmissions (1 s, 3 s). Check the listen queue (ss -ltn Recv-Q vs Send-Q, nstat -az TcpExtListenOverflows), then firewalls or loss on the path."
        }
        ZeroWindow => {
            "A receiver advertised a zero or full window: it reads too slowly. Look for a blocked event loop or busy CPU on that side, read in larger chunks, and do not pin SO_RCVBUF small."
        }
        ConnectionReset => {
            "Connections are reset during or instead of exchanges. Check the side's logs at the time of the resets (crashes, timeouts, killed workers) and proxies' idle timeouts; keep tcp_abort_on_overflow at 0."
        }
        ListenQueueOverflow => {
            "The accept queue is full: new connections wait or are dropped. Accept faster (more workers, no blocking in the accept loop) and raise the backlog (listen() argument and net.core.somaxconn)."
        }
        SynFlood => {
            "Many half-open connections or SYN cookies: a SYN flood or a burst above the SYN queue. Keep tcp_syncookies=1, size tcp_max_syn_backlog, and rate-limit SYNs upstream if it is an attack."
        }
        ConntrackTableFull => {
            "The conntrack table is full: new connections are dropped. Raise net.netfilter.nf_conntrack_max (and hashsize), shorten timeouts of entries no longer needed, or NOTRACK traffic that needs no tracking."
        }
        EphemeralPortExhaustion => {
            "Local ports are nearly exhausted (TIME_WAIT vs ip_local_port_range): connect() slows or fails. Reuse connections (keep-alive, pools), widen ip_local_port_range, enable tcp_tw_reuse for outgoing connections."
        }
        InterfaceErrors => {
            "A NIC reports errors, drops or overruns. Read ip -s -s link show DEV and ethtool -S DEV: larger rings (ethtool -G), netdev_max_backlog, spread interrupts (RSS/RPS), check cables and speed/duplex."
        }
        SlowServerProcessing => {
            "The server's think time (first response byte minus request, net of RTT) dominates latency. Profile the application and its backends (database, upstreams); the network is not the cause."
        }
        ShortConnections => {
            "Each request pays connection setup. Reuse connections: HTTP keep-alive, client pools, nginx upstream keepalive; if the server closes, raise keepalive_timeout and keepalive_requests."
        }
        ServerNotListening => {
            "Connections are refused: nothing listens on the port. Start the service or point clients at the port it listens on (ss -ltnp on the server)."
        }
        HttpErrors => {
            "Requests fail: 4xx/5xx answers, resets or timeouts. Read the server's error log for the failing requests; a share of 503 means overload or rate limiting."
        }
        HighBaseRtt => {
            "The path's round trip itself explains the latency. Move the service closer to its clients, keep connections open, and cut round trips per request (TLS 1.3, session resumption, HTTP/2)."
        }
        RouteProblem => {
            "A hop on the route adds latency or loss. Give the per-hop results (netdoctor trace, mtr -T) to the team that runs that hop; compare other times and paths."
        }
        DnsNoNameserver => {
            "No usable nameserver is configured. Put a working nameserver in /etc/resolv.conf (or fix what writes it: systemd-resolved, NetworkManager, DHCP)."
        }
        DnsServerUnreachable => {
            "A configured nameserver does not answer. Remove or fix it (UDP/TCP 53 allowed, service running); short options timeout:1 attempts:2 limit the damage."
        }
        DnsSlow => {
            "Name resolution is slow or unstable. Use a closer or healthier resolver (a local cache), check search and ndots, and cache answers in the application."
        }
        ReverseDnsTimeout => {
            "PTR lookups time out, so tools that resolve addresses stall. Serve the reverse zone or answer NXDOMAIN at once; use -n in tools."
        }
        SmallInitialWindow => {
            "Responses wait on a small initial congestion window: the server sends a few segments, then waits a round trip per flight while the client's window is open. Give the server's route to the clients the default: ip route change <route> initcwnd 10 (and initrwnd on the client if its first window is small too)."
        }
        SlowStartAfterIdle => {
            "Responses on kept connections restart slow start after an idle pause: the server's kernel reset its congestion window and each response pays round trips the grown window did not need. On the sending host: sysctl -w net.ipv4.tcp_slow_start_after_idle=0 (persist it in /etc/sysctl.d)."
        }
        DnsServerError => {
            "A nameserver answers but fails the question: SERVFAIL (it cannot resolve the name: upstream, DNSSEC or zone broken), REFUSED (it does not serve this client) or a truncated answer with TCP 53 blocked. Fix the nameserver or its upstream, allow the client, or allow TCP 53."
        }
        DnsNameNotFound => {
            "The resolver works but the name has no address (NXDOMAIN/NODATA). Check the host name's spelling, the search domains and ndots, or add the record."
        }
        ReceiveWindowLimited => {
            "A bulk transfer is held by the receiver's window: bytes in flight sit at the advertised window while cwnd has room. Raise the receiver's tcp_rmem maximum (or its SO_RCVBUF) to at least the bandwidth-delay product."
        }
        ApplicationLimited => {
            "A transfer is limited by the sending application: it writes slower than the network and the receiver allow. Check the writer's rate limit, write sizes and threads; nothing in the network needs fixing."
        }
        NoRoute => {
            "The client has no route to the target: connections fail before a packet leaves. Add the route or default gateway (ip route), or check the address in the URL."
        }
        NeighbourUnreachable => {
            "The next hop does not answer ARP/NDP: packets cannot leave the local link. Check that the host or gateway is up and has that address (ip neigh show, arping), and the VLAN/link."
        }
        TlsVerifyFailed => {
            "The client refuses the server's TLS certificate (unknown issuer, wrong name, or expired). Renew or fix the certificate on the server, or trust its CA on the client (-k only for a test)."
        }
        H2FlowControlStall => {
            "HTTP/2 DATA waits for WINDOW_UPDATE: the receiver's flow-control window is below the bandwidth-delay product. Raise its SETTINGS_INITIAL_WINDOW_SIZE and connection window (gRPC: BDP-based windows)."
        }
        H2StreamLimit => {
            "HTTP/2 requests queue behind the server's SETTINGS_MAX_CONCURRENT_STREAMS. Raise the limit (nginx http2_max_concurrent_streams) or let the client open more connections."
        }
        H2HeadOfLine => {
            "One TCP loss stalls every HTTP/2 stream of the connection (head-of-line blocking). Remove the loss on the path; otherwise spread requests over more connections or use HTTP/3."
        }
        H2StreamResets => {
            "HTTP/2 streams end with RST_STREAM or GOAWAY error codes. Look at the sender and the code: REFUSED_STREAM (over the stream limit), ENHANCE_YOUR_CALM (abuse limits), INTERNAL_ERROR (server log)."
        }
        SendBufferLimited => {
            "A bulk transfer is held by the sender's socket buffer: in flight stays under cwnd and the peer's window while the buffer is full. Raise the sender's tcp_wmem maximum (or its SO_SNDBUF) to twice the bandwidth-delay product."
        }
        CongestionLimited => {
            "A bulk transfer is limited by loss: retransmits shrink the congestion window while the receiver's window has room. Find where packets drop (netdoctor trace, interface and firewall counters) and fix it; bbr tolerates random loss better than reno/cubic."
        }
        ShaperLimited => {
            "A bulk transfer runs at a flat rate set by a shaper or policer: RTT rises well above its minimum (a queue) and cwnd, not the window, bounds it. Find the rate limit on the path (tc -s qdisc, cloud or carrier limits) and raise it, or accept the rate."
        }
        MssMtuProblem => {
            "Full-size segments are lost on the path (an MTU black hole) or the MSS is small. Allow ICMP fragmentation-needed / packet-too-big, clamp the MSS to the path MTU on the router, or enable tcp_mtu_probing on the sender."
        }
        ReceiverSoftirqSaturated => {
            "One CPU of the receiving host is saturated and its receive softirq cannot keep up: packet processing there (netfilter rules, no GRO, one receive queue) bounds the transfer. Spread receive work (RSS queues, RPS/RFS, IRQ affinity), cut per-packet cost (fewer or set-based netfilter rules, GRO on), then test again."
        }
        SpuriousRetransmission => {
            "Segments were resent that had arrived: the receiver reported them twice (D-SACK) or had acknowledged them. Not loss: a retransmission timer or tail-loss probe faster than the receiver's ACKs, or reordering on the path. Nothing to fix unless they are frequent: then look at the receiver's delayed ACKs or what reorders packets."
        }
        DnsDeadRecord => {
            "One of the name's addresses does not accept connections while another does: clients that try it first wait their connect timeout (or get a reset, or fail at once without a route) before they fall back. Remove the dead A/AAAA record (or /etc/hosts line) or bring the host back; check with getent ahosts NAME."
        }
    }
}

/// The alert's fixed severity label: critical where requests fail or the host refuses work.
pub fn alert_severity(id: FindingId) -> &'static str {
    use FindingId::*;
    match id {
        ServerNotListening
        | HttpErrors
        | ConntrackTableFull
        | ListenQueueOverflow
        | SynFlood
        | EphemeralPortExhaustion
        | DnsNoNameserver
        | DnsServerUnreachable
        | DnsNameNotFound
        | DnsServerError
        | NoRoute
        | NeighbourUnreachable
        | TlsVerifyFailed => "critical",
        _ => "warning",
    }
}

/// The alert's name: `Netdoctor` + the id in UpperCamelCase (`NetdoctorNagleDelayedAck`).
pub fn alert_name(id: FindingId) -> String {
    let mut s = String::from("Netdoctor");
    for part in id.as_str().split('_') {
        let mut c = part.chars();
        if let Some(f) = c.next() {
            s.extend(f.to_uppercase());
            s.push_str(c.as_str());
        }
    }
    s
}

/// The Chinese runbook: the catalogue's fix for the class's usual side.
pub fn runbook_zh(id: FindingId) -> String {
    let side = match id.layer() {
        netdoctor_core::Layer::Network => Side::Network,
        netdoctor_core::Layer::Host | netdoctor_core::Layer::Link => Side::Host,
        netdoctor_core::Layer::Dns => Side::Client,
        _ => Side::Server,
    };
    let mut f = Finding::new(id, Severity::Warning, side, "");
    // The catalogue renders a part only where the English one exists.
    f.fix = runbook_en(id).to_string();
    netdoctor_report::i18n::findings::texts(&f, Lang::Zh)
        .fix
        .into_owned()
}

/// A YAML double-quoted scalar.
fn q(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The rule groups, indented by `indent` spaces (0 for a rules file, 2 inside a
/// PrometheusRule's `spec`).
fn groups(indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut y = String::new();
    let _ = writeln!(y, "{pad}groups:");
    let _ = writeln!(y, "{pad}  - name: netdoctor-findings");
    let _ = writeln!(y, "{pad}    rules:");
    for id in FindingId::ALL {
        let r = format!("{pad}      ");
        let _ = writeln!(y, "{r}- alert: {}", alert_name(id));
        let _ = writeln!(
            y,
            "{r}  expr: max by (node, instance, port, side) (netdoctor_finding_severity{{id=\"{}\"}}) >= 2",
            id.as_str()
        );
        let _ = writeln!(y, "{r}  for: {FOR}");
        let _ = writeln!(y, "{r}  labels:");
        let _ = writeln!(y, "{r}    severity: {}", alert_severity(id));
        let _ = writeln!(y, "{r}    finding: {}", id.as_str());
        let _ = writeln!(y, "{r}  annotations:");
        let summary = format!(
            "{} on {{{{ $labels.instance }}}} port {{{{ $labels.port }}}} (side {{{{ $labels.side }}}}, severity {{{{ if ge $value 3.0 }}}}critical{{{{ else }}}}warning{{{{ end }}}})",
            id.as_str()
        );
        let _ = writeln!(y, "{r}    summary: {}", q(&summary));
        let _ = writeln!(y, "{r}    description: {}", q(runbook_en(id)));
        let _ = writeln!(y, "{r}    description_zh: {}", q(&runbook_zh(id)));
        let _ = writeln!(
            y,
            "{r}    evidence: {}",
            q(
                "The window's report (JSON) and its packets (pcap) are in the agent's evidence directory on the node (watch --dir); `netdoctor analyze FILE.pcap` shows them."
            )
        );
    }
    y
}

/// The Prometheus rules file.
pub fn rules_file() -> String {
    format!(
        "# Generated by `netdoctor watch --print-alert-rules` from the finding catalog; do not edit.\n{}",
        groups(0)
    )
}

/// The same rules as a Prometheus Operator `PrometheusRule`.
pub fn prometheus_rule() -> String {
    format!(
        "# Generated by `netdoctor watch --print-prometheus-rule` from the finding catalog; do not edit.\n\
         apiVersion: monitoring.coreos.com/v1\n\
         kind: PrometheusRule\n\
         metadata:\n  name: netdoctor\n  namespace: netdoctor\n  labels:\n    app.kubernetes.io/name: netdoctor\n\
         spec:\n{}",
        groups(2)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_an_alert_with_runbooks_in_both_languages() {
        let rules = rules_file();
        for id in FindingId::ALL {
            assert!(
                rules.contains(&format!("alert: {}", alert_name(id))),
                "{id}"
            );
            assert!(runbook_en(id).len() > 40, "{id}");
            let zh = runbook_zh(id);
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{id}: {zh}"
            );
        }
        assert_eq!(
            alert_name(FindingId::NagleDelayedAck),
            "NetdoctorNagleDelayedAck"
        );
        assert_eq!(q("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
