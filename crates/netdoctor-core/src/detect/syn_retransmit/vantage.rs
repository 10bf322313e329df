//! Which side a SYN the server never answered is told on, when no counter of the server's host
//! was read (`analyze` of a capture alone).
//!
//! A repeated SYN with no SYN/ACK before it says the SYN, or its answer, was lost somewhere
//! after the client sent it: a full listen queue or a firewall on the server's host drops it
//! the same as a router or a lossy link on the way. Only two things place it on the server's
//! host: a counter of that host (`TcpExt.ListenOverflows`/`ListenDrops`, then side host, or
//! `diagnose`'s kernel events, `syn_path`), or a capture taken at the server, where the SYN is
//! seen arriving and no SYN/ACK leaving. Where the capture was taken is read from the
//! handshakes that went through at once: next to the server the SYN/ACK follows its SYN within
//! the server's processing and the client's ACK comes a round trip later; next to the client
//! it is the other way round. Legs of a few microseconds (one host, namespaces) tell nothing.
//!
//! Without that, the side is the network with a lower confidence, and the explanation says
//! what the packets cannot tell (the server's listen queue stays the first thing to check in
//! the fix). Between two addresses of one host there is no path: side host.

use std::net::SocketAddr;

use crate::event::SynState;
use crate::finding::{Finding, FindingId, Side};

/// Where the sentence that says the packets cannot place the lost SYNs begins; it ends with
/// [`CANNOT_TELL_END`].
const CANNOT_TELL: &str = " Where the unanswered SYNs were lost the packets cannot tell: ";
const CANNOT_TELL_END: &str = "say otherwise.";

/// A leg must be this much longer than the other (and 4× it) to place the capture.
const MIN_SPREAD_NS: i64 = 200_000;

/// Handshakes that place the capture next to the server or next to the client, and the
/// connections whose SYN was repeated unanswered between two addresses of one host.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Vantage {
    near_server: u64,
    near_client: u64,
    /// Connections whose SYN went unanswered (repeated with no SYN/ACK before the repeat).
    unanswered_syn: u64,
    unanswered_syn_local: u64,
    /// A counter observation came (a live run, or `analyze` given counters).
    pub counters_seen: bool,
}

impl Vantage {
    /// Every connection that began with a captured SYN.
    pub fn on_conn(&mut self, client: SocketAddr, server: SocketAddr, st: &SynState) {
        if let (1, 1, Some(syn), Some(sa), Some(ack)) = (
            st.syns,
            st.synacks,
            st.first_syn,
            st.first_synack,
            st.first_ack,
        ) {
            let (to_answer, to_ack) = (sa.ts_ns - syn.ts_ns, ack.ts_ns - sa.ts_ns);
            if to_ack >= 4 * to_answer && to_ack - to_answer >= MIN_SPREAD_NS {
                self.near_server += 1;
            } else if to_answer >= 4 * to_ack && to_answer - to_ack >= MIN_SPREAD_NS {
                self.near_client += 1;
            }
        }
        let answered_before_repeat = match (st.first_synack, st.last_syn) {
            (Some(sa), Some(last)) => sa.ts_ns < last.ts_ns,
            _ => false,
        };
        if st.syns > 1 && st.synacks <= 1 && !answered_before_repeat {
            self.unanswered_syn += 1;
            let local = client.ip().is_loopback() || client.ip() == server.ip();
            self.unanswered_syn_local += u64::from(local);
        }
    }

    /// The capture was taken next to the server: most handshakes that tell say so.
    pub fn at_server(&self) -> bool {
        self.near_server > 0 && self.near_server >= 4 * self.near_client
    }

    /// Retells `f` (side server, for SYNs nobody answered) by what the capture shows, when no
    /// counter was read. `synack_repeated`: the server repeated its own SYN/ACK on some
    /// connections (it had the SYN: that story stays the server's).
    pub fn place(&self, f: &mut Finding, synack_repeated: u64) {
        if self.counters_seen
            || f.side != Side::Server
            || synack_repeated > 0
            || self.unanswered_syn == 0
        {
            return;
        }
        if self.at_server() {
            f.explanation.push_str(
                " The capture was taken next to the server (its SYN/ACKs follow the SYNs within \
                 microseconds, the client's ACKs come a round trip later): the unanswered SYNs \
                 reached the server's interface, and its host did not answer them.",
            );
            return;
        }
        if self.unanswered_syn_local * 2 >= self.unanswered_syn {
            f.side = Side::Host;
            f.explanation.push_str(
                " Both ends are on this host, so no network lost the SYNs: the host did (the \
                 listener's queue, or a firewall rule).",
            );
            return;
        }
        f.side = Side::Network;
        f.confidence = f.confidence.min(0.6);
        f.explanation.push_str(&format!(
            "{CANNOT_TELL}{}, and no counter \
             of the server's host was read. The SYNs left; whether a router, a firewall or loss \
             on the path dropped them (or the answers), or the server's host did (a full listen \
             queue), looks the same from here, so the side is the path between them until the \
             server's counters (`nstat TcpExtListenOverflows TcpExtListenDrops`) or a capture \
             at the server say otherwise.",
            if self.near_client > 0 {
                "the capture was taken next to the client"
            } else {
                "nothing in the capture says it was taken at the server"
            }
        ));
    }
}

/// Retells `f` (unanswered SYNs told on the path because the packets cannot place them) under
/// `root`, loss on the path that the run shows otherwise (`relate`: the data lost on the path,
/// or a lossy hop): the SYNs alone still
/// cannot place their loss, but a full listen queue drops SYNs, not the segments of
/// connections already open, so the same loss is the likelier cause, and the fix names it
/// first with the listen queue as what to check after. The "cannot tell" sentence goes, so
/// the explanation no longer contradicts the "Caused by" of the fix. False when `f` does not
/// carry that sentence (it was placed otherwise, or told already).
pub fn retell_under_path_loss(f: &mut Finding, root: FindingId) -> bool {
    let Some(at) = f.explanation.find(CANNOT_TELL) else {
        return false;
    };
    let rest = &f.explanation[at + CANNOT_TELL.len()..];
    let capture = rest
        .split(", and no counter")
        .next()
        .unwrap_or_default()
        .to_string();
    let end = rest.find(CANNOT_TELL_END).map_or(f.explanation.len(), |e| {
        at + CANNOT_TELL.len() + e + CANNOT_TELL_END.len()
    });
    let shown = match root {
        FindingId::PacketLossRetransmission => format!(
            "the same capture shows the path losing segments of connections already open \
             ({root}, above)"
        ),
        FindingId::RouteProblem => {
            format!("the route to the server has a hop that loses packets ({root}, above)")
        }
        // Other roots (no neighbour, no route) lose everything: their own words stand.
        _ => return false,
    };
    let told = format!(
        " The SYNs alone cannot place where they were lost ({capture}, and no counter of the \
         server's host was read), but {shown}. A full listen queue drops SYNs, not the segments \
         of connections already open, so the same loss most likely took these SYNs (or their \
         SYN/ACKs) too; the server's counters (`nstat TcpExtListenOverflows \
         TcpExtListenDrops`) staying at zero would rule its queue out."
    );
    f.explanation.replace_range(at..end, &told);
    f.fix = format!(
        "Caused by {root} (above): fix that first; these SYNs were most likely lost with the \
         rest. If SYNs are still repeated once the path is clean, check the server's listen \
         queue (`ss -ltn`: Recv-Q reaching Send-Q; `nstat TcpExtListenOverflows \
         TcpExtListenDrops`) and look for a firewall or rate limit dropping SYNs."
    );
    true
}
