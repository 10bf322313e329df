//! Root cause and consequences: when one finding explains others (an accept queue that
//! overflows makes clients repeat their SYNs; a full conntrack table drops packets), the report
//! names one root cause and lists the others as its consequences instead of showing unrelated
//! findings.
//!
//! [`RULES`] is the table: which id explains which, and on what condition. [`relate`] applies it
//! to the run's final findings (after ranking): each consequence gets `caused_by` (the root at
//! the top of its chain, so `syn_flood → listen_queue_overflow → syn_retransmit` has one root),
//! each root gets `consequences`, and each consequence moves right after its root. Severities,
//! and so the verdict, are untouched; a consequence blamed on the server whose root is the
//! path (a lossy hop, loss on the path) takes the root's side, network, and its fix names the
//! root first; so does one whose root is a client that stopped acknowledging (side client). The group is placed where its best-ranked member was, so a root ranks by the
//! latency it explains, not only by its own.

use crate::detect::http_errors::{proxy_waited, retell_waited};
use crate::finding::{Finding, FindingId, Severity, Side};

/// One "explains" edge of the table.
#[derive(Clone, Copy)]
pub struct Rule {
    pub root: FindingId,
    pub consequence: FindingId,
    /// Whether this root explains this consequence (the root is above `info` in any case).
    pub when: fn(root: &Finding, consequence: &Finding) -> bool,
}

/// Not the client's own doing: the consequence blames the server, its host or the path.
fn not_client(_: &Finding, c: &Finding) -> bool {
    c.side != Side::Client
}

/// Blamed on the server or its host (a reset or timeout the path would not explain).
fn server_or_host(_: &Finding, c: &Finding) -> bool {
    matches!(c.side, Side::Server | Side::Host)
}

/// Any finding: a failure before the first request (no route, no neighbour, a certificate the
/// client refuses) explains every error that follows it.
fn always(_: &Finding, _: &Finding) -> bool {
    true
}

/// Failures on the load generator's own host (connect() errors), not answers of the server.
fn on_host(_: &Finding, c: &Finding) -> bool {
    c.side == Side::Host
}

/// A route problem of loss (or an unreachable route), not of latency, explains what the packets
/// show of lost segments and SYNs on the server's or the path's side. A latency step loses
/// nothing.
fn path_loss(root: &Finding, c: &Finding) -> bool {
    root.impact.added_latency_ms.is_none() && matches!(c.side, Side::Server | Side::Network)
}

/// Loss the packets show on the path (side network) explains lost SYNs, RTOs and resets that
/// are not blamed on the client or on a host's queue.
fn lost_on_path(root: &Finding, c: &Finding) -> bool {
    root.side == Side::Network && matches!(c.side, Side::Server | Side::Network)
}

/// netdoctor's own timeouts that cut connects whose SYNs were being repeated (the `http_errors`
/// of client-side connect timeouts).
fn own_connect_timeouts(_: &Finding, c: &Finding) -> bool {
    c.side == Side::Client && c.summary.contains(CONNECT_TIMEOUT_MARK)
}

/// Requests that got no answer at all (no status), which loss on the path explains; an
/// `http_errors` summary carries these words when that is what failed.
fn unanswered_on_path(root: &Finding, c: &Finding) -> bool {
    c.summary.contains(NO_ANSWER_MARK) && (path_loss(root, c) || lost_on_path(root, c))
}

/// Requests that got no answer, not blamed on the client (a shaper's slow, lossy transfers
/// cut by a timeout).
fn unanswered(_: &Finding, c: &Finding) -> bool {
    c.summary.contains(NO_ANSWER_MARK) && c.side != Side::Client
}

/// Most requests were answered with an error status (not timeouts, not resets), and the
/// server closed the connections: servers close after error answers (nginx after 400, 413,
/// 414, 495-497, 500 and 501, with `Connection: close`; a TLS client certificate that is
/// required and missing is a 400), so one connection per request follows from the errors, not
/// from the server's keep-alive settings.
fn closed_after_errors(root: &Finding, c: &Finding) -> bool {
    c.side == Side::Server
        && root.summary.contains(ERROR_ANSWER_MARK)
        && root.impact.affected_fraction.is_some_and(|f| f >= 0.5)
}

/// The words of an `http_errors` summary whose most common failure is an answered status
/// (`… failed (100.0%): HTTP 400 Bad Request`).
pub const ERROR_ANSWER_MARK: &str = "): HTTP ";

/// The words an abandoned-handshakes `server_not_listening` takes under a path root.
pub const PATH_LOSS_MARK: &str = "consistent with the loss on the path";

/// The words of an `http_errors` summary whose failures got no answer at all.
pub const NO_ANSWER_MARK: &str = "no answer";

/// The words an `http_errors` summary carries when its failures are the load's own connect
/// timeouts (see `detect::http_errors`).
pub const CONNECT_TIMEOUT_MARK: &str = "netdoctor's own timeout cut";

/// Both findings show the same connection in their packet evidence (a window that never
/// reopened, and the sender's timeouts on that connection).
fn same_connection(r: &Finding, c: &Finding) -> bool {
    use crate::finding::Evidence;
    let conns = |f: &Finding| -> Vec<String> {
        f.evidence
            .iter()
            .filter_map(|e| match e {
                Evidence::Packets { connection, .. } => Some(connection.clone()),
                _ => None,
            })
            .collect()
    };
    let rc = conns(r);
    conns(c).iter().any(|x| rc.contains(x))
}

/// Retransmission timeouts of a receiver that went silent (see `detect::loss`): not a window
/// that stayed shut, not loss on the path.
fn silent_peer(f: &Finding) -> bool {
    f.id == RetransmissionTimeout && f.summary.contains(crate::detect::loss::SILENT_PEER_MARK)
}

/// The window held the sender's timeouts on the same connection, unless its receiver went
/// silent (a window that reopened long before explains no silence).
fn window_held(r: &Finding, c: &Finding) -> bool {
    same_connection(r, c) && !silent_peer(c)
}

/// The sender gave up on a receiver that stopped acknowledging: its reset on the same
/// connection follows from the silence.
fn gave_up_on_silent_peer(r: &Finding, c: &Finding) -> bool {
    silent_peer(r) && same_connection(r, c)
}

const fn rule(
    root: FindingId,
    consequence: FindingId,
    when: fn(&Finding, &Finding) -> bool,
) -> Rule {
    Rule {
        root,
        consequence,
        when,
    }
}

use FindingId::*;

/// Which finding explains which, most upstream root first: when two roots could explain the
/// same consequence, the first rule wins.
pub const RULES: &[Rule] = &[
    // A preflight failure (the client's or the path's) comes before any request: every error
    // after it is its consequence, whatever side that error names.
    rule(NoRoute, HttpErrors, always),
    rule(NoRoute, DnsServerUnreachable, always),
    rule(NoRoute, ServerNotListening, always),
    rule(NoRoute, ConnectionReset, always),
    rule(NoRoute, SynRetransmit, always),
    rule(NeighbourUnreachable, HttpErrors, always),
    rule(NeighbourUnreachable, ServerNotListening, always),
    rule(NeighbourUnreachable, ConnectionReset, always),
    rule(NeighbourUnreachable, SynRetransmit, always),
    rule(NeighbourUnreachable, RetransmissionTimeout, always),
    rule(TlsVerifyFailed, HttpErrors, always),
    rule(TlsVerifyFailed, ConnectionReset, always),
    rule(TlsVerifyFailed, SlowServerProcessing, always),
    // A flood fills the SYN and accept queues; real clients' SYNs go unanswered.
    rule(SynFlood, ListenQueueOverflow, not_client),
    rule(SynFlood, SynRetransmit, not_client),
    rule(SynFlood, RetransmissionTimeout, server_or_host),
    rule(SynFlood, ConnectionReset, server_or_host),
    // A full conntrack table drops new flows' packets: SYNs repeated, segments lost.
    rule(ConntrackTableFull, SynRetransmit, not_client),
    rule(ConntrackTableFull, PacketLossRetransmission, not_client),
    rule(ConntrackTableFull, RetransmissionTimeout, not_client),
    // A full accept queue drops SYNs or final ACKs (repeated SYNs, setup-time RTOs), resets
    // them with tcp_abort_on_overflow, and the wait in the queue counts as server time.
    rule(ListenQueueOverflow, SynRetransmit, not_client),
    // Setup-time RTOs with the overflow in the same run are the queue's, whatever side the
    // packets alone suggested (a lossy path looks the same in them).
    rule(ListenQueueOverflow, RetransmissionTimeout, not_client),
    rule(ListenQueueOverflow, ConnectionReset, server_or_host),
    rule(ListenQueueOverflow, SlowServerProcessing, server_or_host),
    // No local port left: connect() fails on the client's host.
    rule(EphemeralPortExhaustion, HttpErrors, on_host),
    // A receiver whose window stayed shut (or below one segment) makes the sender's last
    // segments wait and be resent by its timer: the window, not the network, held them.
    rule(ZeroWindow, RetransmissionTimeout, window_held),
    // A receiver that stopped acknowledging: the sender's timer fires until it gives up with a
    // reset (before the path rules: the path delivered what the silent receiver ignored).
    rule(
        RetransmissionTimeout,
        ConnectionReset,
        gave_up_on_silent_peer,
    ),
    // Interface drops are lost segments.
    rule(InterfaceErrors, PacketLossRetransmission, not_client),
    rule(InterfaceErrors, RetransmissionTimeout, not_client),
    // A lossy hop (or a route that ends) loses segments and SYNs: repeated SYNs, RTOs, resets.
    rule(RouteProblem, PacketLossRetransmission, path_loss),
    rule(RouteProblem, SynRetransmit, path_loss),
    rule(RouteProblem, RetransmissionTimeout, path_loss),
    rule(RouteProblem, ConnectionReset, path_loss),
    // Handshakes abandoned on a lossy path (the client gave up, a late SYN/ACK met a reset)
    // look like refused connects in the packets; the route lab showed 7 of 81 (issue 20).
    rule(RouteProblem, ServerNotListening, path_loss),
    // Requests that got no answer through a lossy path (lost, reset or timed out on the way).
    rule(RouteProblem, HttpErrors, unanswered_on_path),
    // A shaper's queue that overflows loses segments: the loss is the rate limit's, not a
    // faulty path's (before the loss rules, so the chain's root is the shaper).
    rule(ShaperLimited, PacketLossRetransmission, not_client),
    rule(ShaperLimited, RetransmissionTimeout, not_client),
    rule(ShaperLimited, CongestionLimited, not_client),
    rule(ShaperLimited, HttpErrors, unanswered),
    // Loss on the path seen in the packets, without a trace to place it.
    rule(PacketLossRetransmission, SynRetransmit, lost_on_path),
    rule(
        PacketLossRetransmission,
        RetransmissionTimeout,
        lost_on_path,
    ),
    rule(PacketLossRetransmission, ConnectionReset, lost_on_path),
    rule(PacketLossRetransmission, ServerNotListening, lost_on_path),
    rule(PacketLossRetransmission, HttpErrors, unanswered_on_path),
    // A bulk transfer limited by the loss the packets show (the same connection), and a path
    // MTU black hole whose vanished segments the sender kept resending by timeout.
    rule(PacketLossRetransmission, CongestionLimited, same_connection),
    rule(MssMtuProblem, RetransmissionTimeout, same_connection),
    // Connects that took 3 s because SYNs were repeated, cut by the load's own timeout.
    rule(SynRetransmit, HttpErrors, own_connect_timeouts),
    // A server closes after its error answers: one connection per request follows (a TLS
    // server requiring a client certificate answered 400 to every request, explore6).
    rule(HttpErrors, ShortConnections, closed_after_errors),
    // A proxy's steady 504s at its timeout: the server's time is that wait for the upstream
    // (explore11's proxy-504), not the proxy's own work.
    rule(HttpErrors, SlowServerProcessing, proxy_waited),
];

/// Ties consequences to their root cause in `findings` (already ranked): sets `caused_by` and
/// `consequences` and puts each consequence right after its root, keeping the rank order
/// otherwise. A root is at the place of the best-ranked finding of its group.
pub fn relate(findings: &mut Vec<Finding>) {
    for f in findings.iter_mut() {
        f.caused_by = None;
        f.consequences.clear();
    }
    // Direct cause of each finding: the first rule whose root is present and applies.
    let direct: Vec<Option<usize>> = findings
        .iter()
        .map(|c| {
            RULES.iter().find_map(|r| {
                if r.consequence != c.id {
                    return None;
                }
                findings.iter().position(|root| {
                    root.id == r.root && root.severity > Severity::Info && (r.when)(root, c)
                })
            })
        })
        .collect();
    // The top of each chain (the table has no cycles; the bound guards a bad edit of it).
    let top = |mut i: usize| {
        for _ in 0..RULES.len() {
            match direct[i] {
                Some(up) if up != i => i = up,
                _ => break,
            }
        }
        i
    };
    let roots: Vec<Option<usize>> = (0..findings.len())
        .map(|i| direct[i].map(|_| top(i)).filter(|&r| r != i))
        .collect();
    if roots.iter().all(Option::is_none) {
        return;
    }
    for (i, root) in roots.iter().enumerate() {
        if let Some(r) = *root {
            let id = findings[i].id;
            let (root_id, root_side) = (findings[r].id, findings[r].side);
            // A consequence of the path is not the server's to fix: it says so, and where.
            // Likewise a server's reset of a client that had stopped acknowledging.
            let silent_client = root_side == Side::Client && silent_peer(&findings[r]);
            // A server's time that is a proxy's timeout: the upstream's, told so.
            if root_id == HttpErrors && id == SlowServerProcessing {
                let root = findings[r].clone();
                retell_waited(&root, &mut findings[i]);
            }
            let c = &mut findings[i];
            // A shaper's loss is where the shaper is (the server's host when the kernel's drops
            // place it there).
            let shaper = root_id == ShaperLimited && matches!(c.side, Side::Network | Side::Server);
            // Connections closed after error answers: whoever is to fix the errors.
            let errors = root_id == HttpErrors && id == ShortConnections;
            if errors {
                c.side = root_side;
                c.fix = format!(
                    "Caused by {root_id} (above): the server closes a connection after an error \
                     answer, so fix the failing requests first; run again to see whether it \
                     keeps connections for answers that succeed. {}",
                    c.fix
                );
            }
            // A lost SYN told on the path already (no counter, no capture at the server) is
            // the path's too: it says which loss first.
            let path_told =
                id == SynRetransmit && root_side == Side::Network && c.side == Side::Network;
            // ... and, where the packets could not place the lost SYNs, the explanation says
            // what does: the same path's loss (not a "cannot tell" beside a "Caused by").
            if path_told {
                crate::detect::syn_retransmit::retell_under_path_loss(c, root_id);
            }
            if ((root_side == Side::Network || silent_client) && c.side == Side::Server)
                || shaper
                || path_told
            {
                c.side = root_side;
                if !c.fix.starts_with("Caused by") {
                    c.fix = format!(
                        "Caused by {root_id} (above): fix that first; this follows from it. {}",
                        c.fix
                    );
                }
            }
            // Abandoned handshakes under a path root say so in their summary too.
            if id == ServerNotListening
                && matches!(root_id, RouteProblem | PacketLossRetransmission)
                && c.evidence.iter().any(|e| {
                    matches!(e, crate::finding::Evidence::Probe { probe, .. }
                        if probe == crate::detect::server_not_listening::ABANDONED_EVIDENCE)
                })
                && !c.summary.contains(PATH_LOSS_MARK)
            {
                c.summary = format!("{}; {PATH_LOSS_MARK} ({root_id})", c.summary);
            }
            findings[i].caused_by = Some(findings[r].id);
            if !findings[r].consequences.contains(&id) {
                findings[r].consequences.push(id);
            }
        }
    }
    // Order: groups by their best-ranked member, the root first, then its consequences in rank
    // order.
    let group = |i: usize| roots[i].unwrap_or(i);
    let mut first_of_group = vec![usize::MAX; findings.len()];
    for i in 0..findings.len() {
        let g = group(i);
        first_of_group[g] = first_of_group[g].min(i);
    }
    let mut order: Vec<usize> = (0..findings.len()).collect();
    order.sort_by_key(|&i| (first_of_group[group(i)], roots[i].is_some(), i));
    let mut slots: Vec<Option<Finding>> = std::mem::take(findings).into_iter().map(Some).collect();
    findings.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: FindingId, severity: Severity, side: Side) -> Finding {
        Finding::new(id, severity, side, id.as_str())
    }

    fn ids(v: &[Finding]) -> Vec<FindingId> {
        v.iter().map(|f| f.id).collect()
    }

    #[test]
    fn overflow_is_the_root_of_syn_retransmit_and_comes_first() {
        let mut v = vec![
            f(SynRetransmit, Severity::Critical, Side::Host),
            f(ShortConnections, Severity::Info, Side::Client),
            f(ListenQueueOverflow, Severity::Warning, Side::Server),
        ];
        relate(&mut v);
        assert_eq!(
            ids(&v),
            [ListenQueueOverflow, SynRetransmit, ShortConnections]
        );
        assert_eq!(v[0].consequences, [SynRetransmit]);
        assert_eq!(v[1].caused_by, Some(ListenQueueOverflow));
        assert_eq!(v[2].caused_by, None);
        assert!(v[2].consequences.is_empty());
    }

    /// Abandoned handshakes under the path's loss say so; a real refusal keeps its words.
    #[test]
    fn abandoned_handshakes_under_path_loss_say_it_in_their_summary() {
        use crate::finding::Evidence;
        let mut abandoned = f(ServerNotListening, Severity::Warning, Side::Server);
        abandoned.summary = "3 handshakes to 10.0.0.2:80 abandoned before completing".into();
        abandoned.evidence.push(Evidence::Probe {
            probe: crate::detect::server_not_listening::ABANDONED_EVIDENCE.into(),
            note: "3 attempts".into(),
        });
        let mut v = vec![
            abandoned.clone(),
            f(RouteProblem, Severity::Warning, Side::Network),
        ];
        relate(&mut v);
        assert_eq!(v[1].caused_by, Some(RouteProblem));
        assert_eq!(v[1].side, Side::Network);
        assert!(
            v[1].summary
                .ends_with("; consistent with the loss on the path (route_problem)"),
            "{}",
            v[1].summary
        );
        relate(&mut v);
        assert_eq!(v[1].summary.matches(PATH_LOSS_MARK).count(), 1, "once");
        let mut v = vec![
            f(ServerNotListening, Severity::Critical, Side::Server),
            f(PacketLossRetransmission, Severity::Warning, Side::Network),
        ];
        relate(&mut v);
        assert!(!v[1].summary.contains(PATH_LOSS_MARK), "{}", v[1].summary);
    }

    #[test]
    fn chains_end_at_one_root() {
        let mut v = vec![
            f(SynRetransmit, Severity::Critical, Side::Host),
            f(ListenQueueOverflow, Severity::Warning, Side::Server),
            f(SynFlood, Severity::Warning, Side::Host),
            f(SlowServerProcessing, Severity::Warning, Side::Server),
        ];
        relate(&mut v);
        assert_eq!(v[0].id, SynFlood);
        assert_eq!(
            v[0].consequences,
            [SynRetransmit, ListenQueueOverflow, SlowServerProcessing]
        );
        // slow_server_processing hangs under the overflow, whose root is the flood.
        let slow = v.iter().find(|x| x.id == SlowServerProcessing).unwrap();
        assert_eq!(slow.caused_by, Some(SynFlood));
        assert!(v.iter().skip(1).all(|x| x.caused_by == Some(SynFlood)));
    }

    #[test]
    fn conditions_hold_the_tie_back() {
        // The client's own resets, an info-level root, and 5xx answers are not explained.
        let mut v = vec![
            f(ConnectionReset, Severity::Info, Side::Client),
            f(ListenQueueOverflow, Severity::Warning, Side::Server),
            f(HttpErrors, Severity::Critical, Side::Server),
            f(EphemeralPortExhaustion, Severity::Warning, Side::Client),
            f(PacketLossRetransmission, Severity::Warning, Side::Network),
            f(InterfaceErrors, Severity::Info, Side::Host),
        ];
        let before = v.clone();
        relate(&mut v);
        assert_eq!(v, before);
        // The same port exhaustion explains connect() failures of the load generator's host.
        v[2].side = Side::Host;
        relate(&mut v);
        let errors = v.iter().find(|x| x.id == HttpErrors).unwrap();
        assert_eq!(errors.caused_by, Some(EphemeralPortExhaustion));
    }

    #[test]
    fn conntrack_explains_loss_and_severities_stay() {
        let mut v = vec![
            f(RetransmissionTimeout, Severity::Critical, Side::Network),
            f(PacketLossRetransmission, Severity::Warning, Side::Network),
            f(ConntrackTableFull, Severity::Critical, Side::Host),
        ];
        relate(&mut v);
        assert_eq!(
            ids(&v),
            [
                ConntrackTableFull,
                RetransmissionTimeout,
                PacketLossRetransmission
            ]
        );
        assert_eq!(
            v.iter().map(|x| x.severity).collect::<Vec<_>>(),
            [Severity::Critical, Severity::Critical, Severity::Warning]
        );
        // Applying it twice changes nothing.
        let once = v.clone();
        relate(&mut v);
        assert_eq!(v, once);
    }

    #[test]
    fn a_lossy_hop_is_the_root_of_the_lost_syns_rtos_and_own_timeouts() {
        let mut hop = f(RouteProblem, Severity::Critical, Side::Network);
        hop.impact.affected_fraction = Some(0.3);
        let mut timeouts = f(HttpErrors, Severity::Warning, Side::Client);
        timeouts.summary = format!("7 of 30 requests failed; 7 because {CONNECT_TIMEOUT_MARK}");
        let mut v = vec![
            f(SynRetransmit, Severity::Critical, Side::Server),
            f(RetransmissionTimeout, Severity::Critical, Side::Network),
            timeouts,
            f(NagleDelayedAck, Severity::Warning, Side::Server),
            hop,
        ];
        relate(&mut v);
        assert_eq!(
            ids(&v),
            [
                RouteProblem,
                SynRetransmit,
                RetransmissionTimeout,
                HttpErrors,
                NagleDelayedAck
            ]
        );
        assert_eq!(
            v[0].consequences,
            [SynRetransmit, RetransmissionTimeout, HttpErrors]
        );
        assert!(v[1..4].iter().all(|x| x.caused_by == Some(RouteProblem)));
        // The server is not told to check its listen queue for the path's loss.
        assert_eq!(v[1].side, Side::Network);
        assert!(
            v[1].fix.starts_with("Caused by route_problem"),
            "{}",
            v[1].fix
        );
        assert_eq!(v[4].caused_by, None);
        // A hop that only adds latency loses nothing: it explains no lost SYN.
        let mut slow_hop = f(RouteProblem, Severity::Warning, Side::Network);
        slow_hop.impact.added_latency_ms = Some(30.0);
        let mut v = vec![f(SynRetransmit, Severity::Critical, Side::Server), slow_hop];
        relate(&mut v);
        assert_eq!(v[0].caused_by, None);
        assert_eq!(v[0].side, Side::Server);
    }

    #[test]
    fn a_listen_overflow_explains_setup_rtos_on_any_side_but_the_clients() {
        let mut v = vec![
            f(SynRetransmit, Severity::Critical, Side::Host),
            f(RetransmissionTimeout, Severity::Critical, Side::Network),
            f(ListenQueueOverflow, Severity::Warning, Side::Server),
        ];
        relate(&mut v);
        assert_eq!(v[0].id, ListenQueueOverflow);
        assert_eq!(v[0].consequences, [SynRetransmit, RetransmissionTimeout]);
        // Other HTTP errors (the server's, or timeouts waiting for responses) stay apart.
        let mut v = vec![
            f(HttpErrors, Severity::Critical, Side::Server),
            f(SynRetransmit, Severity::Critical, Side::Server),
        ];
        relate(&mut v);
        assert!(v.iter().all(|x| x.caused_by.is_none()));
    }

    #[test]
    fn only_answered_errors_explain_connections_the_server_closed() {
        let errors = |summary: &str, share: f64| {
            let mut e = f(HttpErrors, Severity::Critical, Side::Server);
            e.summary = summary.to_string();
            e.impact.affected_fraction = Some(share);
            e
        };
        let short = |side| f(ShortConnections, Severity::Warning, side);
        let answered = "10 of 10 requests failed (100.0%): HTTP 500 Internal Server Error";
        let mut v = vec![short(Side::Server), errors(answered, 1.0)];
        relate(&mut v);
        assert_eq!(v[1].caused_by, Some(HttpErrors));
        // Timeouts and resets do not make a server close after answering; a few errors do
        // not explain every connection; a client that closed is the client's choice.
        let timeouts = "10 of 10 requests failed (100.0%): no answer (connect, read or write \
                        errors, timeouts)";
        for (e, s) in [
            (errors(timeouts, 1.0), Side::Server),
            (errors(answered, 0.2), Side::Server),
            (errors(answered, 1.0), Side::Client),
        ] {
            let mut v = vec![short(s), e];
            relate(&mut v);
            assert!(v.iter().all(|x| x.caused_by.is_none()), "{v:#?}");
        }
    }

    #[test]
    fn a_preflight_failure_explains_every_error_after_it() {
        // A certificate the client refuses: the server-side errors and resets are its doing.
        let mut v = vec![
            f(HttpErrors, Severity::Critical, Side::Server),
            f(SlowServerProcessing, Severity::Warning, Side::Server),
            f(ConnectionReset, Severity::Warning, Side::Client),
            f(TlsVerifyFailed, Severity::Critical, Side::Client),
        ];
        relate(&mut v);
        assert_eq!(v[0].id, TlsVerifyFailed);
        assert_eq!(
            v[0].consequences,
            [HttpErrors, SlowServerProcessing, ConnectionReset]
        );
        assert!(v[1..].iter().all(|x| x.caused_by == Some(TlsVerifyFailed)));
        // No route: the nameserver behind it is unreachable for the same reason.
        let mut v = vec![
            f(DnsServerUnreachable, Severity::Critical, Side::Client),
            f(NoRoute, Severity::Critical, Side::Client),
            f(DnsSlow, Severity::Warning, Side::Network),
        ];
        relate(&mut v);
        assert_eq!(ids(&v), [NoRoute, DnsServerUnreachable, DnsSlow]);
        assert_eq!(v[2].caused_by, None);
        // An unanswered neighbour explains the SYN repeats and the failed requests.
        let mut v = vec![
            f(SynRetransmit, Severity::Critical, Side::Server),
            f(HttpErrors, Severity::Critical, Side::Server),
            f(NeighbourUnreachable, Severity::Critical, Side::Network),
        ];
        relate(&mut v);
        assert_eq!(ids(&v), [NeighbourUnreachable, SynRetransmit, HttpErrors]);
    }

    #[test]
    fn the_table_has_no_cycles() {
        // Following "explained by" from any id ends within the table's length.
        for r in RULES {
            let mut id = r.consequence;
            for step in 0..=RULES.len() {
                assert!(step < RULES.len(), "cycle through {id}");
                match RULES.iter().find(|x| x.consequence == id) {
                    Some(x) => id = x.root,
                    None => break,
                }
            }
        }
    }
}
