//! Capture-quality warnings: undecodable packets, clamped timestamps, the ring's drops,
//! segments the receiver acknowledged that the capture never saw, untracked connections. With
//! missing packets, transport findings (computed from the packets) are trusted less and say
//! why. Also the [`CaptureQuality`] counts they are read from (moved here from `analyze/mod.rs`).

use serde::{Deserialize, Serialize};

use super::{CaptureStats, MAX_CONNECTIONS, MAX_HALF_OPEN, is_zero};
use crate::finding::{Finding, Layer};

/// How complete and clean the capture is, apart from what the network did.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CaptureQuality {
    /// Frames that were copies of a frame seen just before (port mirrors, merged
    /// captures): dropped before the analysis. See [`crate::track::dup`].
    pub duplicate_frames: u64,
    /// Segments the receiver acknowledged that the capture never saw (as
    /// [`CaptureStats::capture_gaps`]), and their bytes.
    pub missing_segments: u64,
    pub missing_bytes: u64,
    /// Payload bytes of new data the capture saw (for the missing share).
    pub captured_bytes: u64,
    /// Segments whose sender's previous segment was not captured (tshark: "previous
    /// segment not captured"): lost before the capture point or by the capture.
    pub sequence_gaps: u64,
    /// Connections captured in one direction only (one end's data, not one packet of the
    /// other end: asymmetric routing, a filter, a mirror of one direction), by the end whose
    /// packets are missing. Whether their data arrived cannot be seen.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub client_unseen_connections: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_unseen_connections: u64,
    /// Frames stamped earlier than the frame before them in the order they were analyzed (a
    /// capture on several NIC queues or CPUs, merged captures): read out of order.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backdated_frames: u64,
    /// Frames stamped earlier than their predecessor in the file that were analyzed in
    /// timestamp order instead (see [`super::order`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sorted_frames: u64,
}

impl CaptureQuality {
    /// Missing bytes over all bytes sent (captured + missing), 0 without data.
    pub fn missing_share(&self) -> f64 {
        let all = self.captured_bytes + self.missing_bytes;
        if all == 0 {
            0.0
        } else {
            self.missing_bytes as f64 / all as f64
        }
    }
    /// Nothing dropped and nothing missing.
    pub fn is_clean(&self) -> bool {
        self.duplicate_frames == 0 && self.missing_segments == 0 && self.one_way() == 0
    }
    /// Connections captured in one direction only.
    pub fn one_way(&self) -> u64 {
        self.client_unseen_connections + self.server_unseen_connections
    }
}

/// The one line on an unclean capture: copies dropped, segments (bytes, share) it missed.
pub(super) fn quality_line(q: &CaptureQuality) -> String {
    let mut parts = Vec::new();
    if q.duplicate_frames > 0 {
        parts.push(format!(
            "{} duplicate frames dropped (the capture holds copies of packets: a port mirror \
             or merged captures)",
            q.duplicate_frames
        ));
    }
    if q.missing_segments > 0 {
        parts.push(format!(
            "{} segments ({} bytes, {:.2} % of the data) that the receiver acknowledged were \
             never captured (dropped by the capture, not by the network): no timing is read \
             across them, loss and stall findings may be incomplete",
            q.missing_segments,
            q.missing_bytes,
            q.missing_share() * 100.0
        ));
    }
    if q.one_way() > 0 {
        parts.push(format!(
            "{}: the other end's packets went another way or were filtered out (asymmetric \
             routing, a capture filter, a mirror of one direction), so whether their data \
             arrived cannot be seen; a retransmission there is read as loss only when the \
             sender's timer fired {} times or more on it (no ACK reached the sender), and loss \
             and stall findings may be missing",
            one_way_text(q),
            crate::track::loss::Episode::SILENT_TIMER_RETX
        ));
    }
    format!("capture quality: {}", parts.join("; "))
}

/// How long an answer stopped mid-way must have been silent before the capture's last frame
/// for its end to count as lost by the capture ([`lost_ends`]), in round trips of its
/// connection, and at least (also without a round trip).
pub const LOST_END_RTTS: i64 = 10;
pub const LOST_END_MIN_NS: i64 = 20_000_000;

/// Of the exchanges cut while their answer was arriving (`cut_ends`: when each answer was last
/// seen, its connection's round trip), those whose end the capture lost: a capture that missed
/// segments its receivers acknowledged (`s.quality.missing_segments`: it drops frames) went on
/// recording for [`LOST_END_RTTS`] round trips (at least [`LOST_END_MIN_NS`]) after the answer
/// stopped, with no close of its connection. A sender resends what is not acknowledged, so a
/// network loss there would have shown; what stops with everything acknowledged is a server
/// that stopped writing, or the capture's drops, and only the second left its marks in this
/// file. Without any missed segment they stay cut by the end of the capture.
pub(super) fn lost_ends(s: &CaptureStats, cut_ends: &[(i64, Option<i64>)]) -> u64 {
    let Some(end) = s.last_ts_ns.filter(|_| s.quality.missing_segments > 0) else {
        return 0;
    };
    cut_ends
        .iter()
        .filter(|(last, rtt)| {
            let wait = rtt.map_or(LOST_END_MIN_NS, |r| {
                (r * LOST_END_RTTS).max(LOST_END_MIN_NS)
            });
            end - last > wait
        })
        .count() as u64
}

/// The warning for [`lost_ends`].
pub(super) fn lost_ends_line(n: u64) -> String {
    format!(
        "capture quality: {n} exchanges ended in frames the capture missed, not by the end of \
         the capture: their answers stopped mid-way with no close while the capture went on, \
         in a capture that dropped frames its receivers acknowledged (the capture dropped \
         them, not the network); their first byte counts, their latency is unknown"
    )
}

/// "3 connections were captured in one direction only (the server's packets, none of the
/// client's)".
fn one_way_text(q: &CaptureQuality) -> String {
    let whose = match (q.client_unseen_connections, q.server_unseen_connections) {
        (_, 0) => "the server's packets, none of the client's".to_string(),
        (0, _) => "the client's packets, none of the server's".to_string(),
        (c, s) => format!("{c} without a packet of the client, {s} without a packet of the server"),
    };
    format!(
        "{} connections were captured in one direction only ({whose})",
        q.one_way()
    )
}

/// Why a capture with many one-way connections cannot be called healthy (the verdict's
/// reason).
pub(super) fn one_way_reason(q: &CaptureQuality, connections: u64) -> String {
    format!(
        "{} of {connections} connections were captured in one direction only ({}): whether \
         their data arrived cannot be seen",
        q.one_way(),
        if q.server_unseen_connections == 0 {
            "none of the client's packets"
        } else if q.client_unseen_connections == 0 {
            "none of the server's packets"
        } else {
            "one end's packets missing"
        }
    )
}

/// The warnings for `s`; lowers the confidence of transport findings when packets are missing.
pub(super) fn warnings(s: &CaptureStats, clamped_ts: u64, findings: &mut [Finding]) -> Vec<String> {
    let mut warnings = Vec::new();
    if s.syns_cut > 0 {
        warnings.push(format!(
            "capture quality: {} SYN or SYN/ACK segments were cut by the snap length inside their \
             TCP options, so their window scale is lost: their connections were read as picked \
             up mid-stream (no handshake RTT, setup time or SYN retransmission from them, and \
             their windows checked only for a true zero); capture with a snap length of at \
             least 96 bytes (tcpdump -s 96)",
            s.syns_cut
        ));
    }
    if s.decode_errors > s.syns_cut {
        warnings.push(format!(
            "{} packets could not be decoded",
            s.decode_errors - s.syns_cut
        ));
    }
    if clamped_ts > 0 {
        warnings.push(format!(
            "{clamped_ts} packets have timestamps more than a year away from the first packet's \
             (a corrupt file?); their times were clamped"
        ));
    }
    if s.capture_drops > 0 {
        warnings.push(format!(
            "capture dropped {} packets: findings may be incomplete",
            s.capture_drops
        ));
    }
    let q = &s.quality;
    if !q.is_clean() {
        warnings.push(quality_line(q));
    }
    if q.sorted_frames > 0 {
        warnings.push(format!(
            "capture quality: {} frames were stamped earlier than the frame before them in the \
             file (a capture on several NIC queues or CPUs, or merged captures): they were \
             analyzed in timestamp order, as `reordercap` sorts a file",
            q.sorted_frames
        ));
    }
    if q.backdated_frames > 0 {
        warnings.push(format!(
            "capture quality: {} frames are stamped earlier than the frame before them and were \
             analyzed in the file's order (a capture on several NIC queues or CPUs, or merged \
             captures): resends, out-of-order segments and unseen data near them may be the \
             capture's, not the network's; `reordercap IN OUT` sorts the file",
            q.backdated_frames
        ));
    }
    if s.capture_drops > 0 || s.capture_gaps > 0 {
        // Transport findings are computed from the packets; missing packets can hide or
        // fake their patterns. Say so where it matters and trust them less.
        for f in findings.iter_mut().filter(|f| f.layer == Layer::Transport) {
            f.confidence = (f.confidence * 0.7).max(0.1);
            f.explanation.push_str(
                " Note: the capture itself missed packets, so this analysis may be wrong \
                 (retransmissions, stalls or window changes may be hidden or misread).",
            );
        }
    }
    if s.connections_untracked > 0 {
        warnings.push(format!(
            "{} connections were not analyzed (more than {MAX_CONNECTIONS} open at once)",
            s.connections_untracked
        ));
    }
    if s.half_open_evicted > 0 {
        warnings.push(format!(
            "{} half-open connections (a SYN, no completed handshake) were evicted, the oldest \
             first, because more than {MAX_HALF_OPEN} were open at once (a SYN flood or a \
             scan); their repeated SYNs and SYN/ACKs are still counted",
            s.half_open_evicted
        ));
    }
    if s.pipelined_connections > 0 {
        warnings.push(format!(
            "{} connections carry pipelined or multiplexed requests (HTTP/1 pipelining or \
             HTTP/2): exchanges there were split at direction turns, so per-request figures \
             are approximate",
            s.pipelined_connections
        ));
    }
    if s.tls_h2_connections + s.tls_h2_maybe_connections > 0 {
        let how = match (s.tls_h2_connections, s.tls_h2_maybe_connections) {
            (n, 0) => format!("{n} TLS connections chose HTTP/2 (ALPN h2 in the ServerHello)"),
            (0, m) => format!(
                "{m} TLS connections offered HTTP/2 (ALPN h2; TLS 1.3 hides which protocol \
                 the server chose)"
            ),
            (n, m) => format!(
                "{n} TLS connections chose HTTP/2 (ALPN h2 in the ServerHello) and {m} more \
                 offered it (TLS 1.3 hides the choice)"
            ),
        };
        warnings.push(format!(
            "{how}: over HTTP/2 one direction turn can carry several multiplexed requests and \
             a response can span turns, so the exchanges counted there are not its requests \
             and per-request figures are approximate"
        ));
    }
    if s.h2_framing_lost > 0 {
        warnings.push(format!(
            "HTTP/2 framing was lost {} times (frame headers past the snap length or in a \
             capture gap): a stream whose request went missing is not counted, and {} streams \
             whose end may have gone missing were ended there (answered ones as incomplete: no \
             latency); capture with a larger snap length (--snaplen 65535) to see them all",
            s.h2_framing_lost, s.h2_streams_cut_by_gap
        ));
    }
    if s.h2_reassembly_overflows > 0 {
        warnings.push(format!(
            "{} holes in HTTP/2 byte streams were given up with more than {} KB of later data \
             waiting behind them: the frames in those holes were missed",
            s.h2_reassembly_overflows,
            super::reasm::MAX_HELD_BYTES / 1024
        ));
    }
    if s.packets > 0 && s.tcp_segments == 0 {
        warnings.push("the capture contains no TCP segments".to_string());
    }
    warnings
}
