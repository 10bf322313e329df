//! What an analysis yields: the capture's counters ([`CaptureStats`]), the exchanges'
//! figures ([`ExchangeStats`]), and the [`Analysis`] with its findings and warnings; the JSON
//! contract's `capture` part. Apart from the [`super::Analyzer`] that fills them (`mod.rs`),
//! so each file holds one subject.

use serde::{Deserialize, Serialize};

use super::bulk;
use super::quality::{self, CaptureQuality};
use crate::breakdown::Breakdown;
use crate::finding::Finding;
use crate::stats::Percentiles;

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CaptureStats {
    pub packets: u64,
    /// Sum of the on-the-wire lengths.
    pub bytes: u64,
    pub tcp_segments: u64,
    /// Valid packets that are not TCP segments (ARP, UDP, IP fragments, ...).
    pub other_packets: u64,
    pub decode_errors: u64,
    /// Of [`CaptureStats::decode_errors`], SYNs and SYN/ACKs whose TCP options the snap
    /// length cut (their window scale lost; their connections read as picked up mid-stream).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub syns_cut: u64,
    /// Connections analyzed (each SYN or each mid-stream connection counts once).
    pub connections: u64,
    pub connections_with_handshake: u64,
    /// Connections not analyzed because [`MAX_CONNECTIONS`] were open.
    pub connections_untracked: u64,
    /// Data segments entirely below the highest sequence number already sent, that repeat
    /// bytes already sent (out-of-order segments are not counted here).
    pub retransmitted_segments: u64,
    pub first_ts_ns: Option<i64>,
    pub last_ts_ns: Option<i64>,
    pub duration_s: f64,
    /// Packets the kernel ring dropped during a live capture.
    pub capture_drops: u64,
    /// New data segments carrying payload (original transmissions).
    #[serde(default)]
    pub data_segments: u64,
    /// Segments that filled a gap in the sequence space before the receiver asked for them
    /// (reordering, not loss).
    #[serde(default)]
    pub out_of_order_segments: u64,
    /// Retransmissions of data already acknowledged, or reported by the receiver as received
    /// twice (D-SACK).
    #[serde(default)]
    pub spurious_retransmissions: u64,
    /// Pure ACKs that repeated the previous cumulative ACK while data was outstanding.
    #[serde(default)]
    pub duplicate_acks: u64,
    /// Segments the receiver acknowledged that the capture never saw (capture-side drops).
    #[serde(default)]
    pub capture_gaps: u64,
    /// Repeated SYNs and SYN/ACKs (same initial sequence number).
    #[serde(default)]
    pub syn_retransmits: u64,
    /// TCP resets.
    #[serde(default)]
    pub resets: u64,
    /// Connections dropped after [`Analyzer::idle_timeout`] without a packet.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connections_evicted: u64,
    /// Half-open connections (a SYN seen, no handshake completed) evicted, oldest first,
    /// because [`MAX_HALF_OPEN`] were open at once: a SYN flood or a scan. Their handshake
    /// state is kept in a compact record while there is room ([`MAX_TOMBS`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub half_open_evicted: u64,
    /// Connections (closed, or open at the end) that carried pipelined or multiplexed
    /// traffic (HTTP/1 pipelining, HTTP/2): their exchanges are approximate.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pipelined_connections: u64,
    /// TLS connections whose ServerHello chose HTTP/2 (ALPN `h2`, TLS 1.2): exchanges found
    /// from direction turns there are not its multiplexed requests (`analyze::tls`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tls_h2_connections: u64,
    /// TLS connections whose ClientHello offered HTTP/2 and whose ServerHello was TLS 1.3's,
    /// which encrypts the choice: they may carry HTTP/2.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tls_h2_maybe_connections: u64,
    /// Times the HTTP/2 framing of a cleartext connection was lost (a frame header past the
    /// snap length or in a capture gap) and picked up again at a later segment.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h2_framing_lost: u64,
    /// Holes in a cleartext HTTP/2 byte stream given up because more out-of-order data
    /// waited behind them than the reassembler holds (`reasm::MAX_HELD_BYTES`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h2_reassembly_overflows: u64,
    /// HTTP/2 streams that were open when the server's frames went missing (a capture gap,
    /// the snap length) and never showed again: ended there, counted as incomplete exchanges
    /// when answered (`analyze::h2`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub h2_streams_cut_by_gap: u64,
    /// Retransmissions by what made the sender resend (see [`crate::track::loss::RetxClass`]):
    /// after duplicate ACKs or SACK (with RACK's and unexplained quick ones), after the
    /// retransmission timer, tail-loss probes. Their sum is `retransmitted_segments`.
    #[serde(default)]
    pub fast_retransmissions: u64,
    #[serde(default)]
    pub rto_retransmissions: u64,
    #[serde(default)]
    pub tail_loss_probes: u64,
    /// Keep-alive probes (not counted as data or retransmissions).
    #[serde(default)]
    pub keep_alives: u64,
    /// What the capture itself got wrong: copies dropped, segments it missed.
    #[serde(default)]
    pub quality: CaptureQuality,
    /// The bulk transfers of the window (directions that sent at least
    /// [`bulk::BULK_MIN_BYTES`]), the largest [`bulk::MAX_CHARTED`] by bytes, in the order
    /// they ended: their figures and series, for the HTML chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bulk: Vec<bulk::BulkTransfer>,
}

pub(super) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How request/response exchanges were found.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExchangeMethod {
    /// Every request starts with an HTTP/1.x request line.
    Http1,
    /// From the direction turns of application data alone (TLS, RESP, a custom RPC, ...).
    Turns,
    /// Some of each.
    Mixed,
    /// HTTP/2 streams of cleartext connections (h2c), read frame by frame.
    H2,
}

impl ExchangeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeMethod::Http1 => "http1",
            ExchangeMethod::Turns => "turns",
            ExchangeMethod::Mixed => "mixed",
            ExchangeMethod::H2 => "h2",
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ExchangeStats {
    /// Completed request/response exchanges (HTTP/1.x, or found from direction turns).
    pub count: u64,
    /// Of `count`, exchanges cut by the end of the capture while their response was arriving
    /// (or an HTTP/2 stream whose end fell in a capture gap): their server time counts, their latency (the response's end is unknown) does not.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub incomplete: u64,
    /// Of `incomplete`, exchanges whose end the capture lost, not the end of the capture:
    /// their answer stopped mid-way, with no close, long before the capture's last frame, in
    /// a capture that missed frames its receivers acknowledged ([`super::quality::lost_ends`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lost_by_capture: u64,
    /// How they were found (absent without exchanges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<ExchangeMethod>,
    /// Last response byte − first request byte, as seen at the capture point.
    pub latency_ms: Percentiles,
    /// First response byte − last request byte, minus the handshake RTT when known.
    pub server_time_ms: Percentiles,
    /// Median handshake RTT (SYN → ACK of the SYN/ACK) over connections with a handshake.
    pub rtt_ms: Option<f64>,
    /// Where the time of a typical (median-latency) request went; see [`crate::breakdown`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_p50_ms: Option<Breakdown>,
    /// The same for the requests of the p90 band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_p90_ms: Option<Breakdown>,
    /// The same for the requests of the p99 band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_p99_ms: Option<Breakdown>,
    /// The same for the requests of the p99.9 band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_p999_ms: Option<Breakdown>,
    /// The same for the slowest band (the bucket of the slowest request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_max_ms: Option<Breakdown>,
    /// Mean breakdown over all exchanges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown_mean_ms: Option<Breakdown>,
    /// TLS handshake turns (ClientHello → ServerHello …): connection setup, in none of the
    /// figures above; with the server's time in them (absent without TLS handshakes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<TlsHandshakeStats>,
    /// Exchanges whose latency was at most each bound of [`crate::stats::LATENCY_BOUNDS_MS`]
    /// (cumulative): the exact histogram exporters publish. Not in the JSON (the percentiles
    /// are); empty in a report read back from JSON.
    #[serde(skip)]
    pub latency_cumulative: Vec<u64>,
    /// The latency distribution itself: each distinct latency (microseconds, at the HDR
    /// histogram's 3 significant digits) with its count, ascending; sums to the exchanges with
    /// a latency. For exporters with buckets of their own (the agent's native histogram). Not
    /// in the JSON; empty in a report read back from JSON.
    #[serde(skip)]
    pub latency_recorded_us: Vec<(u64, u64)>,
}

/// A capture's TLS handshake turns ([`ExchangeStats::tls_handshake`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct TlsHandshakeStats {
    /// Handshake turns (a full TLS 1.2 handshake has two, TLS 1.3 and a resumed one one).
    pub turns: u64,
    /// The server's time per turn: its first answer byte − the client's last handshake byte,
    /// minus the path's round trip (as [`ExchangeStats::server_time_ms`]).
    pub server_time_ms: Percentiles,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Analysis {
    pub stats: CaptureStats,
    pub exchanges: ExchangeStats,
    /// Ranked with [`crate::finding::rank`].
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
}

impl Analysis {
    /// What the capture contributes to the verdict ([`crate::verdict::decide`]): its
    /// completed exchanges, and that a capture was analyzed. Callers add what they know
    /// (failed requests, an interrupted run, ...).
    pub fn verdict_inputs(&self) -> crate::verdict::VerdictInputs {
        let q = &self.stats.quality;
        let share = q.missing_share();
        let mut incomplete = Vec::new();
        if share > MAX_MISSING_SHARE_FOR_HEALTHY {
            incomplete.push(format!(
                "{:.1} % of the data ({} bytes) was acknowledged by its receiver but never captured",
                share * 100.0,
                q.missing_bytes
            ));
        }
        let conns = self.stats.connections.max(1);
        if q.one_way() as f64 / conns as f64 > MAX_MISSING_SHARE_FOR_HEALTHY {
            incomplete.push(quality::one_way_reason(q, self.stats.connections));
        }
        crate::verdict::VerdictInputs {
            exchanges: self.exchanges.count,
            capture_present: true,
            capture_incomplete: (!incomplete.is_empty()).then(|| incomplete.join("; ")),
            ..Default::default()
        }
    }
}

/// Above this share of data missing from the capture, a run without findings is inconclusive,
/// not healthy: the stalls and losses may sit in what was not captured.
pub const MAX_MISSING_SHARE_FOR_HEALTHY: f64 = 0.05;
