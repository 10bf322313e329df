//! What one window of a long-running analysis is judged on.
//!
//! The analyzer's [`CaptureStats`] are cumulative since the start, but its detectors start
//! over at every [`Analyzer::take_window`](super::Analyzer::take_window). A window's findings
//! and capture-quality warnings must therefore be read against the window's own counts: with
//! the running totals, one ring drop early in a `watch` run repeated "capture dropped N
//! packets" (the same N) in every later window and cut every later transport finding's
//! confidence, and shares such as "N of M connections" divided a window's events by the
//! whole run's connections.

use super::hub::Hub;
use super::{CaptureStats, agg};

/// The analyzer's totals at the end of the previous window (all zero before the first).
#[derive(Default)]
pub(super) struct Base {
    stats: CaptureStats,
    clamped_ts: u64,
    /// Connections still open when the previous window ended: they go on in this one.
    carried: u64,
}

impl Base {
    /// The totals now, as the next window's base.
    pub(super) fn at(stats: &CaptureStats, clamped_ts: u64, open: usize) -> Base {
        Base {
            stats: CaptureStats {
                bulk: Vec::new(),
                ..stats.clone()
            },
            clamped_ts,
            carried: open as u64,
        }
    }

    /// What the window since this base is judged on: the counts since the base, with the
    /// connections carried over from the previous window counted as this window's too (a
    /// keep-alive connection reset now is one of the window's connections), and the clamped
    /// timestamps since the base.
    pub(super) fn judge(&self, now: &CaptureStats, clamped_ts: u64) -> (CaptureStats, u64) {
        let mut s = now.since(&self.stats);
        s.connections += self.carried;
        (s, clamped_ts.saturating_sub(self.clamped_ts))
    }
}

impl CaptureStats {
    /// A frame that could not be decoded: counted, and a SYN whose options were cut apart.
    pub(crate) fn count_decode_error(&mut self, e: &crate::decode::DecodeError) {
        self.decode_errors += 1;
        self.syns_cut += u64::from(matches!(
            e,
            crate::decode::DecodeError::SynOptionsCut { .. }
        ));
    }

    /// The counts since `earlier` (a snapshot of the same analysis); times, the duration and
    /// bulk transfers are kept from `self`.
    pub fn since(&self, earlier: &CaptureStats) -> CaptureStats {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let (q, p) = (&self.quality, &earlier.quality);
        CaptureStats {
            packets: d(self.packets, earlier.packets),
            bytes: d(self.bytes, earlier.bytes),
            tcp_segments: d(self.tcp_segments, earlier.tcp_segments),
            other_packets: d(self.other_packets, earlier.other_packets),
            decode_errors: d(self.decode_errors, earlier.decode_errors),
            syns_cut: d(self.syns_cut, earlier.syns_cut),
            connections: d(self.connections, earlier.connections),
            connections_with_handshake: d(
                self.connections_with_handshake,
                earlier.connections_with_handshake,
            ),
            connections_untracked: d(self.connections_untracked, earlier.connections_untracked),
            retransmitted_segments: d(self.retransmitted_segments, earlier.retransmitted_segments),
            capture_drops: d(self.capture_drops, earlier.capture_drops),
            data_segments: d(self.data_segments, earlier.data_segments),
            out_of_order_segments: d(self.out_of_order_segments, earlier.out_of_order_segments),
            spurious_retransmissions: d(
                self.spurious_retransmissions,
                earlier.spurious_retransmissions,
            ),
            duplicate_acks: d(self.duplicate_acks, earlier.duplicate_acks),
            capture_gaps: d(self.capture_gaps, earlier.capture_gaps),
            syn_retransmits: d(self.syn_retransmits, earlier.syn_retransmits),
            resets: d(self.resets, earlier.resets),
            connections_evicted: d(self.connections_evicted, earlier.connections_evicted),
            half_open_evicted: d(self.half_open_evicted, earlier.half_open_evicted),
            pipelined_connections: d(self.pipelined_connections, earlier.pipelined_connections),
            tls_h2_connections: d(self.tls_h2_connections, earlier.tls_h2_connections),
            tls_h2_maybe_connections: d(
                self.tls_h2_maybe_connections,
                earlier.tls_h2_maybe_connections,
            ),
            h2_framing_lost: d(self.h2_framing_lost, earlier.h2_framing_lost),
            h2_reassembly_overflows: d(
                self.h2_reassembly_overflows,
                earlier.h2_reassembly_overflows,
            ),
            fast_retransmissions: d(self.fast_retransmissions, earlier.fast_retransmissions),
            rto_retransmissions: d(self.rto_retransmissions, earlier.rto_retransmissions),
            tail_loss_probes: d(self.tail_loss_probes, earlier.tail_loss_probes),
            keep_alives: d(self.keep_alives, earlier.keep_alives),
            quality: super::CaptureQuality {
                duplicate_frames: d(q.duplicate_frames, p.duplicate_frames),
                missing_segments: d(q.missing_segments, p.missing_segments),
                missing_bytes: d(q.missing_bytes, p.missing_bytes),
                captured_bytes: d(q.captured_bytes, p.captured_bytes),
                sequence_gaps: d(q.sequence_gaps, p.sequence_gaps),
                client_unseen_connections: d(
                    q.client_unseen_connections,
                    p.client_unseen_connections,
                ),
                server_unseen_connections: d(
                    q.server_unseen_connections,
                    p.server_unseen_connections,
                ),
                backdated_frames: d(q.backdated_frames, p.backdated_frames),
                sorted_frames: d(q.sorted_frames, p.sorted_frames),
            },
            ..self.clone()
        }
    }
}

impl Hub {
    /// Starts a new window: fresh aggregates and detectors.
    pub(super) fn reset_window(&mut self) {
        if let agg::Out::Direct(a) = &mut self.out {
            **a = agg::Agg::new();
        }
    }
}
