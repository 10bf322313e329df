//! Loss on the client's own host: segments of the server's data that the capture saw arrive,
//! which the client never acknowledged and the server sent again.
//!
//! `diagnose` captures on the client's interface (in its namespace), where a packet is seen
//! before the client's firewall and its TCP take it ([`Observation::RunConfig`] says netdoctor's
//! own load ran, so the capture was there). A retransmission that repeats bytes the capture
//! had already seen ([`Episode::original_seen`]) then means the first copy reached the
//! client's host and was dropped inside it: an INPUT rule, a conntrack INVALID drop, a full
//! receive buffer or backlog, a bad checksum. That is the client's side, not the path's and
//! not the server's. Look-alikes kept apart: the same drop before the capture (a lossy path,
//! the server's own OUTPUT rule: the first copy never shows, the retransmission fills a hole);
//! the client's own data lost (sent past the capture, lost after it: the path or the server);
//! both ends on one host (loopback: the capture is at both); a capture file of unknown place
//! (`analyze`: no `RunConfig`); a client that went silent (told by [`super::silent`]).
//!
//! Both kinds are retold: timeouts (`retransmission_timeout`) and fast retransmissions on the
//! client's duplicate ACKs or SACK (`packet_loss_retransmission`). An episode counts only when
//! the analyzer is sure the capture had the first copy ([`Episode::original_seen`]): not a
//! range it never saw (a hole, also one a bare FIN jumped over, or more holes than it keeps),
//! not data the client acknowledged or SACKed, and here also none the client reported again by
//! D-SACK (it had the data: its ACK was lost on the way back, and the server resent what had
//! arrived). Session 9 saw the fast kind on the route lab's lossy path in 12 of 17 episodes:
//! the built-in server sends headers, body and FIN as three segments, the path lost the body,
//! and the FIN that arrived after the gap moved the analyzer's highest sequence past it without
//! a hole, so the body's resend looked like a resend of captured data.
//!
//! [`Observation::RunConfig`]: crate::observation::Observation::RunConfig

use std::net::SocketAddr;

use crate::finding::{Finding, Side};
use crate::track::loss::Episode;

/// Episodes (fast and timeout together) that must look dropped inside the client's host before
/// a finding is retold there. One is not enough: in the look-alike with the server's OUTPUT dropping 5 %
/// (`client_drop.rs`), one run in about ten had a single fast episode whose 615-byte segment
/// the capture saw and the server resent 5 ms later with nothing to show why; the client's own
/// drops gave hundreds of episodes.
pub(super) const MIN_ARRIVED: u64 = 3;

#[derive(Default)]
pub(super) struct ArrivedAgg {
    /// netdoctor's own load ran: the capture was on the client's interface.
    pub capture_at_client: bool,
    /// Non-spurious timeout episodes of the server's data whose original was captured,
    /// between two hosts.
    timeout: u64,
    /// The same for fast retransmissions.
    fast: u64,
}

impl ArrivedAgg {
    pub(super) fn on_episode(&mut self, client: SocketAddr, server: SocketAddr, ep: &Episode) {
        let local =
            client.ip().is_loopback() || server.ip().is_loopback() || client.ip() == server.ip();
        if ep.first.from_server && ep.original_seen && !local && ep.spurious == 0 {
            *(if ep.timeout {
                &mut self.timeout
            } else {
                &mut self.fast
            }) += 1;
        }
    }

    /// Retells the finding of `episodes` episodes of one kind when most of them were the
    /// server's data that had reached the client's host, and at least [`MIN_ARRIVED`] of both
    /// kinds together were. A story
    /// already on the client's side (a silent client) or the host's (a full listen queue)
    /// stays.
    pub(super) fn retell(&self, timeout: bool, episodes: u64, f: &mut Finding) {
        let n = if timeout { self.timeout } else { self.fast };
        if !self.capture_at_client
            || n == 0
            || self.timeout + self.fast < MIN_ARRIVED
            || n * 2 < episodes
            || f.side != Side::Network
        {
            return;
        }
        f.side = Side::Client;
        f.summary.push_str(&format!(
            ": {n} of the {episodes} had reached the client's host (the capture on its interface \
             saw them arrive) and were dropped there, not on the path"
        ));
        let how = if timeout {
            "after its retransmission timer (a fifth of a second or more)"
        } else {
            "when the client's duplicate ACKs or SACK blocks for later data told it one was missing"
        };
        f.explanation = format!(
            "netdoctor captured on the client's own interface, where a packet is seen before \
             the client's firewall and its TCP take it. On {n} of these {episodes} loss \
             episodes the server's segment is in the capture: it arrived. The client still did \
             not acknowledge it, so the server sent it again {how}. The first copies were \
             dropped inside the client's host after they arrived: a firewall rule (INPUT, \
             conntrack INVALID), a receive buffer or backlog that was full, or a bad checksum. \
             Neither the path nor the server lost them."
        );
        f.fix = "Look at the client's host: firewall rules that drop incoming packets \
                 (`iptables -S`, `nft list ruleset`: INPUT, conntrack INVALID), checksum and \
                 buffer errors (`nstat -az TcpInCsumErrors TcpExtTCPRcvQDrop \
                 TcpExtTCPBacklogDrop`), and the kernel's drop reasons there (`perf trace -e \
                 skb:kfree_skb`, or `netdoctor diagnose` with eBPF run from the client's \
                 namespace)."
            .to_string();
    }
}
