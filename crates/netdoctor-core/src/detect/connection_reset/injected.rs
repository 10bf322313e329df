//! The story of resets a middlebox injected in an end's name
//! ([`ResetKind::Injected`](crate::event::ResetKind)): what marks them (TTL, reserved bits)
//! and whether the receiver ignored them. Apart from the other kinds because its evidence
//! and its side (the network) are its own.

use super::KindAgg;
use crate::event::Forged;
use crate::finding::Severity;

/// The TTL range of a sender's packets: `49` or `49–50`.
fn ttl_range(f: &Forged) -> String {
    if f.ttl_lo == f.ttl_hi {
        f.ttl_lo.to_string()
    } else {
        format!("{}–{}", f.ttl_lo, f.ttl_hi)
    }
}

/// What marks one injected reset: `TTL 46, the server's 3 other packets 49; reserved TCP
/// bits set; ignored, the connection went on`.
pub(super) fn forged_note(who: &str, f: &Forged) -> String {
    let mut parts = Vec::new();
    if f.ttl_differs() {
        parts.push(format!(
            "TTL {}, the {who}'s {} other packets {}",
            f.ttl,
            f.others,
            ttl_range(f)
        ));
    }
    if f.reserved {
        parts.push("reserved TCP header bits set".to_string());
    }
    if f.ignored {
        parts.push("it did not acknowledge the SYN: ignored, the handshake went on".to_string());
    }
    parts.join("; ")
}

/// The story of resets that carried the `who`'s address but not its header traits
/// ([`ResetKind::Injected`]): network side, info when every one was ignored.
pub(super) fn injected_story(
    who: &str,
    n: u64,
    k: &KindAgg,
    connections: u64,
) -> (f64, Severity, String, String, String) {
    let ended = n.saturating_sub(k.ignored);
    let first = k.examples.iter().find_map(|e| e.forged);
    let traits = first.map_or_else(String::new, |f| {
        let mut t = Vec::new();
        if f.ttl_differs() {
            t.push(format!(
                "IP TTL {} where the {who}'s {} other packets on the connection had {}",
                f.ttl,
                f.others,
                ttl_range(&f)
            ));
        }
        if f.reserved {
            t.push("reserved TCP header bits set, which no TCP stack sets".to_string());
        }
        format!(" ({})", t.join("; "))
    });
    let effect = if ended == 0 {
        format!(
            "; the receiver ignored {} and the connection went on",
            if n == 1 { "it" } else { "them" }
        )
    } else {
        format!("; {ended} ended a connection")
    };
    let summary = format!(
        "{n} reset{} carrying the {who}'s address probably came from a middlebox on the path, \
         not from the {who}{traits}{effect}",
        if n == 1 { "" } else { "s" }
    );
    let explanation = format!(
        "Every packet one host sends to one place crosses the same routers, so they all arrive \
         with the same IP TTL (hop limit), and no TCP stack sets the reserved header bits. \
         These resets differ from every other packet of the {who} on their connection{traits}: \
         a device on the path forged them in the {who}'s name (a firewall or IPS rule, a DPI \
         or censorship box, a load balancer's timeout), the {who} did not send them. A forged \
         reset the receiver cannot accept (in SYN-SENT, one that does not acknowledge the SYN) \
         is dropped and the connection goes on; one it accepts ends the connection and its \
         request fails."
    );
    let fix = format!(
        "Look for the device between the two ends that resets connections (firewall and IPS \
         rules, DPI, proxies, load balancers): its hop count is about the {who}'s minus the TTL \
         difference (`netdoctor trace`). The {who}'s own logs will not show these resets."
    );
    let frac = (ended as f64 / connections.max(1) as f64).min(1.0);
    let severity = if ended == 0 {
        Severity::Info
    } else {
        Severity::Warning
    };
    (frac, severity, summary, explanation, fix)
}
