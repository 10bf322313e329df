//! Requests that time out because the server's answer was lost on the path, not because the
//! server did not answer.
//!
//! `http_errors` sees only the load: requests without an answer are the server's. A diagnose
//! run also sees both ends: the capture next to the client (completed handshakes, the
//! retransmitted segments that arrived) and, when the server runs on this host, the server's
//! kernel (eBPF `tcp_retransmit_skb` on the target's connections). When most requests timed
//! out after completed handshakes while the server's kernel kept resending on the target's
//! connections and the capture saw few of those segments (at most a quarter) arrive, the
//! server answered and the answer was lost between the two hosts: the failure is the path's
//! (side network). The client's `tcp_info` (request acknowledged, 0 bytes received) is added
//! as evidence when it shows it. The
//! usual cause is a path MTU black hole (full-size segments dropped where the MTU shrinks, the
//! ICMP "fragmentation needed" that would tell the server filtered), which the MTU probe
//! run after the load (`crate::pmtu`) checks: with its size dependence the finding is named
//! `mss_mtu_problem`.
//!
//! Look-alikes, told apart here: a server that accepts and never answers, or answers after
//! the timeout (its kernel resends nothing: stays the server's); loss on the path that still
//! lets answers through (requests succeed or bytes arrive: the loss detectors speak, this does
//! not apply).

use netdoctor_core::finding::{Evidence, Finding, FindingId, Side};
use netdoctor_load::LoadResult;
use netdoctor_observe::host_findings::KernelEvents;
use netdoctor_observe::sockdiag::ConnInfo;
use netdoctor_probe::{BlackHole, PmtuProbe, StepOutcome};
use netdoctor_report::Report;

/// What the run saw of the lost answers; `None` when the evidence is not there.
#[derive(Debug, Clone, PartialEq)]
pub struct LostAnswer {
    /// Requests that failed without an answer (timeouts and read errors), of `attempted`.
    pub unanswered: u64,
    pub attempted: u64,
    /// The server's retransmissions on the target's connections, and on how many.
    pub resent: u64,
    pub resent_connections: u64,
    /// Retransmitted segments the capture next to the client saw.
    pub captured_resent: u64,
    /// The load read not one byte.
    pub nothing_read: bool,
    /// The load's connections sampled with their request acknowledged and 0 bytes received,
    /// of `sampled` (`tcp_info`); 0 of 0 when sock_diag could not be read.
    pub acked_nothing_back: usize,
    pub sampled: usize,
}

/// The evidence of answers lost on the path, from the report's load and kernel sections and
/// the client's `tcp_info`.
pub fn evidence(report: &Report, client: &[ConnInfo]) -> Option<LostAnswer> {
    let load = report.measurements.load.as_ref()?;
    let kernel = report.measurements.kernel.as_ref()?;
    let (unanswered, attempted) = load_sign(load, kernel)?;
    // The handshakes completed, and the capture next to the client saw few of the server's
    // resent segments arrive (a lossy path delivers most of them).
    let stats = &report.measurements.capture.as_ref()?.stats;
    if stats.connections_with_handshake == 0
        || stats.retransmitted_segments * 4 > kernel.target_retransmits
    {
        return None;
    }
    let acked_nothing_back = client
        .iter()
        .filter(|c| c.bytes_acked > 1 && c.bytes_received == 0)
        .count();
    Some(LostAnswer {
        unanswered,
        attempted,
        resent: kernel.target_retransmits,
        resent_connections: kernel.target_retransmit_connections,
        captured_resent: stats.retransmitted_segments,
        nothing_read: load.bytes_read == 0,
        acked_nothing_back,
        sampled: client.len(),
    })
}

/// The half of the sign the load and eBPF show before the capture is analyzed: most failed
/// requests went out on an open connection and got nothing back, and the server's kernel
/// retransmitted on the target's connections. `(unanswered, attempted)`.
pub(crate) fn load_sign(load: &LoadResult, kernel: &KernelEvents) -> Option<(u64, u64)> {
    let e = &load.errors;
    let attempted = load.requests + e.connect + e.read + e.write + e.timeout + e.status;
    // Requests that went out on an open connection and got nothing back.
    let unanswered = (e.timeout + e.read).saturating_sub(e.connect_timeout);
    let failed = attempted - load.requests;
    (unanswered > 0 && unanswered * 2 > failed && kernel.target_retransmits > 0)
        .then_some((unanswered, attempted))
}

/// Retells the server-side `http_errors` as the path's when [`evidence`] holds.
/// With the MTU probe's size dependence ([`PmtuProbe::black_hole`]) it is named
/// `mss_mtu_problem`, the probe's sizes and answers its evidence.
pub fn apply(
    report: &Report,
    client: &[ConnInfo],
    pmtu: Option<&PmtuProbe>,
    findings: &mut [Finding],
) -> Option<LostAnswer> {
    let lost = evidence(report, client)?;
    let f = findings
        .iter_mut()
        .find(|f| f.id == FindingId::HttpErrors && f.side == Side::Server)?;
    retell(f, &lost);
    if let Some(p) = pmtu
        && let Some(b) = p.black_hole()
    {
        name_black_hole(f, p, b);
    }
    Some(lost)
}

/// The path's `http_errors` becomes `mss_mtu_problem`: the probe showed which sizes pass.
fn name_black_hole(f: &mut Finding, p: &PmtuProbe, b: BlackHole) {
    f.id = FindingId::MssMtuProblem;
    let above: Vec<String> = p
        .steps
        .iter()
        .filter(|s| s.outcome == StepOutcome::Stalled)
        .map(|s| s.size.to_string())
        .collect();
    f.summary = format!(
        "packets of {} bytes and more are dropped on the path without an ICMP \"fragmentation \
         needed\" (a path MTU black hole): answers in {}-byte packets never arrived, in {}-byte \
         ones they did; {}",
        b.smallest_stalled,
        above.join("/"),
        b.largest_delivered,
        f.summary
    );
    f.explanation = format!(
        "After the load, the target was asked again once per packet size, each connection \
         announcing a smaller MSS so the server's answer came in packets of at most that \
         size (DF set, as TCP always does). Up to {} bytes the answers arrived; from {} \
         bytes on not one full packet did in {:.1} s, though the connections stayed open. \
         Somewhere between the hosts a hop's MTU is below {} bytes and the ICMP \
         \"fragmentation needed\" (ICMPv6 \"packet too big\") it should send back never \
         reached the server: had it, the server's kernel would have resent smaller (path MTU \
         discovery) and the large sizes would have arrived late, not never. The handshake, \
         the requests and small answers pass, which is why connections open and then hang.",
        b.largest_delivered,
        b.smallest_stalled,
        p.wait_ms / 1e3,
        b.smallest_stalled
    );
    f.fix = format!(
        "Allow ICMP type 3 code 4 (and ICMPv6 type 2, packet too big) through the firewalls \
         on the path; or clamp the MSS on the router at the small hop (`iptables -t mangle \
         -A FORWARD -p tcp --tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`); or lower \
         the MTU of the hosts' interfaces to {} (or enable `net.ipv4.tcp_mtu_probing = 1` on \
         the server). `ping -M do -s {} TARGET` from the server's side shows the largest \
         packet that passes.",
        b.largest_delivered,
        b.largest_delivered.saturating_sub(28)
    );
    f.evidence.push(Evidence::Probe {
        probe: "pmtu".into(),
        note: format!(
            "packet sizes from the server, one connection each for {:.1} s: {}",
            p.wait_ms / 1e3,
            p.describe()
        ),
    });
}

fn retell(f: &mut Finding, l: &LostAnswer) {
    let times = |n: u64| {
        if n == 1 {
            "once".to_string()
        } else {
            format!("{n} times")
        }
    };
    f.side = Side::Network;
    f.confidence = 0.8;
    let arrived = match (l.nothing_read, l.captured_resent) {
        (true, 0) => "none of it reached the client".to_string(),
        (false, 0) => "none of the resent segments reached the client".to_string(),
        (_, n) => format!("the client's capture saw only {n} resent segments arrive"),
    };
    f.summary = format!(
        "{} of {} requests got no answer in time at the client, though the server answered: \
         it resent its answer {} on {} connection{} and {arrived}",
        l.unanswered,
        l.attempted,
        times(l.resent),
        l.resent_connections,
        if l.resent_connections == 1 { "" } else { "s" }
    );
    f.explanation = "The connections opened and the server acknowledged the requests, and its \
         kernel kept retransmitting on the target's connections while the capture next to the \
         client saw (almost) none of those segments arrive: the server did answer, and the \
         answer was lost between the two hosts. Small packets (the handshake, the requests, \
         the ACKs, perhaps the headers) pass and the full-size segments do not: the sign of a path MTU black hole (full-size segments dropped where \
         the path's MTU shrinks, the ICMP \"fragmentation needed\" that would tell the server \
         filtered on the way), or of a filter that drops the server's data."
        .into();
    f.fix = "Look at the path between the hosts, not at the server's error log: allow ICMP \
             type 3 code 4 (and ICMPv6 packet-too-big) through the firewalls on the path, or \
             clamp the MSS on the router (`iptables -t mangle -A FORWARD -p tcp --tcp-flags \
             SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`), or lower the MTU of the interfaces \
             to the smallest one on the path; `ping -M do -s 1472 TARGET` shows whether \
             full-size packets pass."
        .into();
    f.evidence.push(Evidence::Probe {
        probe: "bpf".into(),
        note: format!(
            "the server's kernel retransmitted {} on {} of the target's connections during \
             the load (tcp_retransmit_skb)",
            times(l.resent),
            l.resent_connections
        ),
    });
    f.evidence.push(Evidence::Probe {
        probe: "capture".into(),
        note: format!(
            "the capture next to the client saw {} retransmitted segment{} in all",
            l.captured_resent,
            if l.captured_resent == 1 { "" } else { "s" }
        ),
    });
    if l.acked_nothing_back > 0 {
        f.evidence.push(Evidence::Probe {
            probe: "tcp_info".into(),
            note: format!(
                "{} of {} sampled load connections had their request acknowledged by the \
                 server and had received 0 bytes",
                l.acked_nothing_back, l.sampled
            ),
        });
    }
}
