//! The kernel's own word on where segments were lost: drops in a queueing discipline of the
//! server's host (eBPF `skb:kfree_skb` with reason `QDISC_DROP`, or at a qdisc's enqueue such
//! as `tbf_enqueue`, `htb_enqueue`, a policer's `tcf_police_act`), counted in the server's
//! network namespace. A token bucket that shapes the server's egress (the Kubernetes bandwidth
//! plugin's `tbf`) drops there when its queue overflows: the loss the packets show is then the
//! shaper's, on the server's host, not a faulty path's.
//!
//! [`apply`] adds the drops as evidence to `shaper_limited` (which the packets found from the
//! receiver's view) and to `packet_loss_retransmission`, and places both on the server's side;
//! the loss finding's fix then names the qdisc instead of "loss on a LAN is never normal". It
//! does nothing when the drops were counted in another namespace than the server's (a remote
//! server: a qdisc drop in the client's namespace is not on the server's egress), or when the
//! target's connections were not retransmitted at all (the drops were other traffic's).

use netdoctor_core::{Evidence, Finding, FindingId, Side};
use netdoctor_observe::host_findings::{KernelDrop, KernelEvents};

/// What kind of queue a drop location names, when it names one.
fn qdisc_kind(d: &KernelDrop) -> Option<&'static str> {
    let loc = d.location.as_str();
    let named = [
        ("tbf_", "a token bucket (tbf)"),
        ("htb_", "a hierarchical token bucket (htb)"),
        ("cake_", "cake"),
        ("tcf_police", "a policer (tc police)"),
    ];
    if let Some((_, k)) = named.iter().find(|(p, _)| loc.starts_with(p)) {
        return Some(k);
    }
    (d.reason == "QDISC_DROP").then_some("a queueing discipline")
}

/// The drops in a qdisc, busiest first, and the shaper they name (if any location does).
fn qdisc_drops(k: &KernelEvents) -> (Vec<&KernelDrop>, Option<&'static str>) {
    let mut v: Vec<&KernelDrop> = k.drops.iter().filter(|d| qdisc_kind(d).is_some()).collect();
    v.sort_by_key(|d| std::cmp::Reverse(d.count));
    let shaper = v
        .iter()
        .filter_map(|d| qdisc_kind(d))
        .find(|k| *k != "a queueing discipline");
    (v, shaper)
}

/// Adds the server host's qdisc drops to the shaper and loss findings (see the module docs).
pub fn apply(kernel: Option<&KernelEvents>, findings: &mut [Finding]) {
    let Some(k) = kernel.filter(|k| k.server_netns && k.target_retransmits > 0) else {
        return;
    };
    let (drops, shaper) = qdisc_drops(k);
    if drops.is_empty() {
        return;
    }
    let total: u64 = drops.iter().map(|d| d.count).sum();
    let what = shaper.unwrap_or("a queueing discipline");
    let evidence: Vec<Evidence> = drops
        .iter()
        .take(3)
        .map(|d| Evidence::Counter {
            name: format!("kfree_skb:{}", d.reason),
            before: 0,
            after: d.count,
            note: format!(
                "+{} packets dropped at {} (eBPF, in the server's network namespace): {} on the server's host dropped them",
                d.count,
                d.location,
                qdisc_kind(d).unwrap_or(what)
            ),
        })
        .collect();
    for f in findings.iter_mut() {
        match f.id {
            FindingId::ShaperLimited => {
                f.side = Side::Server;
                f.summary = format!(
                    "{}; the kernel dropped {total} packets in {what} on the server's host",
                    f.summary
                );
                f.explanation.push_str(&format!(
                    " eBPF places it: during the load the kernel dropped {total} packets in {what} of the server's network namespace, so the rate is held on the server's own egress."
                ));
                f.confidence = f.confidence.max(0.9);
                f.evidence.extend(evidence.iter().cloned());
            }
            FindingId::PacketLossRetransmission if f.side != Side::Client => {
                f.side = Side::Server;
                f.evidence.extend(evidence.iter().cloned());
                f.explanation.push_str(&format!(
                    " The kernel says where: {total} packets were dropped in {what} on the server's host during the load (eBPF, counted for the whole namespace): the server's own egress queue overflowed, not the path."
                ));
                f.fix = format!(
                    "The losses are {what} on the server's host dropping its own packets: `tc -s qdisc show` in the server's namespace shows its rate and drops; raise its rate or its queue (burst, limit/latency), or lower what the server sends at once."
                );
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdoctor_core::Severity;

    fn drop(reason: &str, location: &str, count: u64) -> KernelDrop {
        KernelDrop {
            reason: reason.into(),
            location: location.into(),
            count,
        }
    }

    fn events(server_netns: bool, drops: Vec<KernelDrop>) -> KernelEvents {
        KernelEvents {
            netns: "network namespace net:[1] of nginx (pid 1)".into(),
            server_netns,
            drops,
            target_retransmits: 40,
            target_retransmit_connections: 4,
            ..Default::default()
        }
    }

    fn loss() -> Vec<Finding> {
        vec![Finding::new(
            FindingId::PacketLossRetransmission,
            Severity::Warning,
            Side::Network,
            "Packet loss",
        )]
    }

    /// The reproduction's eBPF line: QDISC_DROP at __dev_queue_xmit and tbf_enqueue.
    #[test]
    fn a_token_buckets_drops_place_the_loss_on_the_server_host() {
        let k = events(
            true,
            vec![
                drop("QDISC_DROP", "__dev_queue_xmit+0xd01", 1646),
                drop("NOT_SPECIFIED", "tbf_enqueue+0x192", 25),
                drop("NOT_SPECIFIED", "ip6_mc_input+0x15e", 1),
            ],
        );
        let mut v = loss();
        apply(Some(&k), &mut v);
        assert_eq!(v[0].side, Side::Server);
        assert_eq!(v[0].evidence.len(), 2, "{:?}", v[0].evidence);
        assert!(v[0].fix.contains("token bucket (tbf)"), "{}", v[0].fix);
        assert!(!v[0].fix.contains("never normal"));
    }

    /// Drops elsewhere (netfilter), in the client's namespace, or with no retransmission of
    /// the target leave the loss finding alone.
    #[test]
    fn other_drops_and_other_namespaces_change_nothing() {
        for k in [
            events(true, vec![drop("NETFILTER_DROP", "nf_hook_slow+0x9c", 300)]),
            events(
                false,
                vec![drop("QDISC_DROP", "__dev_queue_xmit+0xd01", 300)],
            ),
            KernelEvents {
                target_retransmits: 0,
                ..events(
                    true,
                    vec![drop("QDISC_DROP", "__dev_queue_xmit+0xd01", 300)],
                )
            },
        ] {
            let mut v = loss();
            apply(Some(&k), &mut v);
            assert_eq!(v, loss());
        }
    }
}
