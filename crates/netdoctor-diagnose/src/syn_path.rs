//! Repeated SYNs that never reached the server: the kernel of the server's host says so.
//!
//! `syn_retransmit` sees from the packets next to the client that SYNs went unanswered; which
//! of the server's host (a full SYN or accept queue, its own firewall) or the path (a firewall
//! or SYN rate limit at a hop, loss) dropped them, the packets cannot tell, so it blames the
//! server and its fix starts at the listen queue. A diagnose run whose eBPF counted in the
//! server's network namespace can tell: every SYN that reaches a listener moves a request
//! socket from LISTEN to SYN_RECV, and one dropped there is a kernel drop (its reason names the
//! listen queue, or `NETFILTER_DROP` for its firewall). When the listener of that namespace
//! took fewer SYNs than the client tried connections (the capture's), completed every
//! handshake it took (no SYN/ACK left unanswered), dropped nothing at its listener or
//! firewall, and its listen-queue counters did not grow (else `syn_retransmit` is already the
//! host's), the other SYNs never arrived: [`apply`] retells the finding as the path's (side
//! network), naming a firewall or SYN rate limit on the way first when no data segment was
//! resent (loss that picks only SYNs is a rule matching SYNs, not a lossy link).
//!
//! Recorded case (explore9): iptables `-m limit --limit 20/s` on SYNs in a router namespace,
//! `diagnose --no-keepalive`: 46 of 70 connections opened, 39 after a repeated SYN; the
//! server's namespace counted `LISTEN→SYN_RECV` 46, `SYN_RECV→ESTABLISHED` 46 and no drop at
//! its listener: told as "the server did not answer: its accept queue was full…", side server,
//! before this.

use netdoctor_core::analyze::CaptureStats;
use netdoctor_core::finding::{Evidence, Finding, FindingId, Side};
use netdoctor_observe::host_findings::KernelEvents;

/// Drop reasons that place a lost SYN on the server's host (its listener or its firewall).
fn server_host_drop(reason: &str) -> bool {
    reason.starts_with("TCP_LISTEN")
        || reason.contains("REQQFULL")
        || reason.starts_with("NETFILTER")
        || reason == "SOCKET_BACKLOG"
}

/// Sockets the server's namespace moved from state `from` to `to` during the load.
fn moved(k: &KernelEvents, from: &str, to: &str) -> u64 {
    k.state_changes
        .iter()
        .filter(|s| s.from == from && s.to == to)
        .map(|s| s.count)
        .sum()
}

/// Retells a server-side `syn_retransmit` as the path's when the server's kernel never saw
/// the repeated SYNs (see the module docs). Returns whether it did.
pub fn apply(
    kernel: Option<&KernelEvents>,
    stats: Option<&CaptureStats>,
    findings: &mut [Finding],
) -> bool {
    let (Some(k), Some(stats)) = (kernel.filter(|k| k.server_netns), stats) else {
        return false;
    };
    let Some(f) = findings
        .iter_mut()
        .find(|f| f.id == FindingId::SynRetransmit && f.side == Side::Server)
    else {
        return false;
    };
    // Every SYN the listener took became a connection, and fewer arrived than the client
    // opened connections for.
    let taken = moved(k, "LISTEN", "SYN_RECV");
    let established = moved(k, "SYN_RECV", "ESTABLISHED");
    let tried = stats.connections_with_handshake;
    if stats.syn_retransmits == 0
        || taken > established
        || taken >= tried
        || k.drops.iter().any(|d| server_host_drop(&d.reason))
    {
        return false;
    }
    f.side = Side::Network;
    let only_syns = stats.retransmitted_segments == 0;
    f.summary.push_str(
        ": the server's host never received the repeated SYNs, they were dropped on the way",
    );
    f.explanation.push_str(&format!(
        " The server's kernel says where (eBPF in its network namespace during the load): its \
         listener took {taken} SYNs (LISTEN→SYN_RECV) and completed each handshake \
         (SYN_RECV→ESTABLISHED {established}), for the {tried} connections the client \
         tried; it dropped none at its listener or firewall, and its listen-queue counters \
         did not grow. The SYNs of the other {} connections never reached it, nor did the \
         repeated SYNs before the one that got through: something between the client and \
         the server dropped them.{}",
        tried - taken,
        if only_syns {
            " No data segment was resent on the same path: a loss that picks only SYNs is a \
             rule that matches them (a SYN rate limit or connection limit in a firewall, a \
             cloud security group, a load balancer's SYN-flood defence, a full conntrack table \
             on a router), not a lossy link."
        } else {
            ""
        }
    ));
    f.fix = "The server's listen queue is not the cause (it took every SYN that reached it). \
             Find the hop that drops SYNs: firewalls and SYN rate limits between the client and \
             the server (`iptables -S` / `nft list ruleset` on routers and gateways: `limit`, \
             `hashlimit`, `connlimit`; a cloud security group's or load balancer's connection \
             limits), conntrack on routers (`conntrack -S`: drop, insert_failed), then loss \
             on the path (`netdoctor trace`)."
        .to_string();
    f.evidence.push(Evidence::Counter {
        name: "tcp_state:LISTEN→SYN_RECV".into(),
        before: 0,
        after: taken,
        note: format!(
            "SYNs the server's listener took during the load (eBPF, in the server's network \
             namespace), each completed (SYN_RECV→ESTABLISHED {established}), against {tried} \
             connections the client tried in the capture: the other SYNs did not arrive"
        ),
    });
    true
}

#[cfg(test)]
mod tests;
