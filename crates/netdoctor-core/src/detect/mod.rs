//! Detectors: each file turns [`Event`]s (packet-derived and observed alike) into findings
//! for one finding id (or a pair that shares its evidence), behind one [`Detector`] trait.
//! [`REGISTRY`] lists them, one line each.
//!
//! Adding a detector: write `detect/<id>.rs` with a `Default` struct that implements
//! [`Detector`] (keep aggregates and at most [`MAX_EXAMPLES`] example packets, never a list
//! per packet, so memory does not grow with the capture), unit-test it on synthetic events in
//! the same file, add its `pub mod` and one line to [`REGISTRY`]. When it needs something the
//! packet path does not raise yet, add an [`Event`] variant and raise it from the tracker
//! (once per episode, exchange or connection, never per packet); when it needs something from
//! outside the packets, add an [`Observation`](crate::observation::Observation) kind.

pub mod bulk_limits;
pub mod connection_reset;
pub mod delayed_ack_stall;
pub mod h2_flow_control;
pub mod h2_head_of_line;
pub mod h2_stream_limit;
pub mod h2_stream_resets;
pub mod http_errors;
pub mod loss;
pub mod nagle_delayed_ack;
pub mod server_not_listening;
pub mod short_connections;
pub mod slow_handshake;
pub mod slow_server_processing;
pub mod slow_start_after_idle;
pub mod slow_tls_handshake;
pub mod small_initial_window;
pub mod spurious_retransmission;
pub mod syn_retransmit;
pub mod zero_window;

use std::net::SocketAddr;

pub use crate::event::{Event, Interests, Pkt};
use crate::finding::{Finding, Severity};

/// Examples kept per finding for evidence.
pub const MAX_EXAMPLES: usize = 3;

/// What a detector knows at the end of a window (or of the capture) besides its own events.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Context<'a> {
    /// Timestamp of the capture's first packet (evidence times are relative to it).
    pub t0_ns: i64,
    /// Completed exchanges in the window (HTTP/1.x or turns).
    pub exchanges: u64,
    /// Exchanges cut by the end of the capture after their first response byte (not in
    /// `exchanges`; see [`Event::ExchangeCut`]).
    pub incomplete: u64,
    /// Connections analyzed (since the start).
    pub connections: u64,
    /// New data segments carrying payload (since the start).
    pub data_segments: u64,
    /// Median exchange latency in the window, ms (0 without exchanges).
    pub latency_p50_ms: f64,
    /// Median server time in the window, ms (0 without exchanges).
    pub server_time_p50_ms: f64,
    /// The clients' reuse gaps of the window's complete exchanges
    /// ([`crate::event::ExchangeDone::reuse_gap_ns`]), recorded once per exchange by the
    /// window's aggregates (`analyze::agg::Agg`, rebuilt with the detectors for every window)
    /// for the idle stories of `short_connections` and `connection_reset`.
    pub(crate) reuse_gaps: Option<&'a crate::stats::Hist>,
}

/// One detector: consumes events, emits findings.
pub trait Detector: Send {
    /// The kinds of events this detector wants (all unless it says otherwise); the others
    /// are not handed to it (fewer calls on the analyzer's path).
    fn interests(&self) -> Interests {
        Interests::ALL
    }
    /// Called for every event of a wanted kind, in the order the analyzer raised them.
    fn on_event(&mut self, ev: &Event<'_>);
    /// Appends this detector's findings for what it saw. The analyzer builds a fresh
    /// detector for the next window afterwards.
    fn finish(&mut self, cx: &Context, out: &mut Vec<Finding>);
}

/// Every detector, in the order their findings are listed before ranking (ties in rank keep
/// this order). One line per detector.
pub const REGISTRY: &[fn() -> Box<dyn Detector>] = &[
    || Box::<nagle_delayed_ack::NagleDelayedAck>::default(),
    || Box::<delayed_ack_stall::DelayedAckStall>::default(),
    || Box::<slow_server_processing::SlowServerProcessing>::default(),
    || Box::<loss::Loss>::default(),
    || Box::<syn_retransmit::SynRetransmit>::default(),
    || Box::<slow_handshake::SlowHandshake>::default(),
    || Box::<zero_window::ZeroWindow>::default(),
    || Box::<connection_reset::ConnectionReset>::default(),
    || Box::<short_connections::ShortConnections>::default(),
    || Box::<server_not_listening::ServerNotListening>::default(),
    || Box::<http_errors::HttpErrors>::default(),
    || Box::<h2_flow_control::H2FlowControl>::default(),
    || Box::<h2_stream_limit::H2StreamLimit>::default(),
    || Box::<h2_head_of_line::H2HeadOfLine>::default(),
    || Box::<h2_stream_resets::H2StreamResets>::default(),
    || Box::<bulk_limits::BulkLimits>::default(),
    || Box::<spurious_retransmission::SpuriousRetransmission>::default(),
    || Box::<small_initial_window::SmallInitialWindow>::default(),
    || Box::<slow_start_after_idle::SlowStartAfterIdle>::default(),
];

/// A fresh set of every registered detector.
pub fn all() -> Vec<Box<dyn Detector>> {
    REGISTRY.iter().map(|make| make()).collect()
}

/// `"client → server"` as used in `Evidence::Packets::connection`.
pub(crate) fn conn_label(client: SocketAddr, server: SocketAddr) -> String {
    format!("{client} → {server}")
}

/// A stall's evidence: the data, the late ACK (or window update) and the segment it released,
/// with `note`; shared by the detectors of that signature (Nagle, delayed ACK, full window).
pub(crate) fn stall_evidence(
    client: SocketAddr,
    server: SocketAddr,
    st: &crate::event::Stall,
    t0_ns: i64,
    note: String,
) -> crate::finding::Evidence {
    crate::finding::Evidence::Packets {
        connection: conn_label(client, server),
        packets: vec![
            st.prev.to_ref(t0_ns),
            st.ack.to_ref(t0_ns),
            st.held.to_ref(t0_ns),
        ],
        note,
    }
}

pub(crate) fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// A single episode at least this long (a request held for a second or more) is critical.
pub const WORST_CRITICAL_MS: f64 = 1000.0;
/// A single episode at least this long is a warning.
pub const WORST_WARNING_MS: f64 = 100.0;
/// Episodes that add up to less than this are info, however many there were.
pub const TOTAL_INFO_MS: f64 = 1.0;

/// Severity of a detector with episodes (stalls, zero-window periods, timeouts): the
/// detector's own rule on the typical episode and the share of requests it hit (`typical`),
/// raised by the worst episode and capped by the total. One multi-second stall is critical
/// however many tiny episodes came with it (a median would hide it); episodes that add up to
/// under a millisecond are info however many there were.
pub(crate) fn episode_severity(typical: Severity, worst_ms: f64, total_ms: f64) -> Severity {
    if total_ms < TOTAL_INFO_MS {
        return Severity::Info;
    }
    let by_worst = if worst_ms >= WORST_CRITICAL_MS {
        Severity::Critical
    } else if worst_ms >= WORST_WARNING_MS {
        Severity::Warning
    } else {
        Severity::Info
    };
    typical.max(by_worst)
}

/// Below this share of the time of the requests a stall cause hit (their stall over their
/// latency, on average), its typical episode cannot make it critical: one 40 ms pause in a
/// 25 s transfer is no root cause, however long 40 ms is beside a 1 ms request.
pub const SHARE_CRITICAL: f64 = 0.10;
/// Below this share it is info (the worst episode may still raise it, [`episode_severity`]).
pub const SHARE_WARNING: f64 = 0.01;

/// The typical severity of a stall cause capped by what its stalls took of the requests they
/// hit: `share` is the mean over those requests of stall / latency, `None` when no completed
/// request was hit (then the typical severity stands). Session 27: `zero_window` and
/// `delayed_ack_stall` were critical on a single 36-80 ms stall in a 12-25 s rate-limited
/// download (`rate-limited-reader`), because that one request was "100 % of requests".
pub(crate) fn cap_by_share(typical: Severity, share: Option<f64>) -> Severity {
    match share {
        Some(s) if s < SHARE_WARNING => Severity::Info,
        Some(s) if s < SHARE_CRITICAL => typical.min(Severity::Warning),
        _ => typical,
    }
}

/// The share of an exchange's latency a stall of `stall_ns` took (0..=1).
#[inline]
pub(crate) fn stall_share(stall_ns: i64, latency_ns: i64) -> f64 {
    if latency_ns > 0 {
        (stall_ns as f64 / latency_ns as f64).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// An added latency as a summary shows it, at a precision that shows it: `"+43.8 ms"`,
/// `"+0.33 ms"`, `"+4 µs"` (a median of 0.33 ms must not read "+0.0 ms" beside evidence that
/// says "stalled 0.33 ms").
pub(crate) fn added_ms(v: f64) -> String {
    format!("+{}", ms_text(v))
}

/// A time in ms at a precision that shows it, unsigned: `"43.8 ms"`, `"0.33 ms"`, `"4 µs"`
/// ([`added_ms`] without the sign).
pub(crate) fn ms_text(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.1} ms")
    } else if v >= 0.01 {
        format!("{v:.2} ms")
    } else {
        format!("{:.0} µs", (v * 1000.0).max(1.0))
    }
}

/// `" (worst 5869.7 ms)"` when the worst episode says more than the typical one (at least
/// twice it and 10 ms more), else nothing: summaries mention the worst where it matters.
pub(crate) fn worst_note(typical_ms: f64, worst_ms: f64) -> String {
    if worst_ms >= 2.0 * typical_ms && worst_ms >= typical_ms + 10.0 {
        format!(" (worst {worst_ms:.1} ms)")
    } else {
        String::new()
    }
}

/// Helpers for detectors' unit tests: synthetic packets and connections.
#[cfg(test)]
pub(crate) mod testkit {
    use super::*;
    use crate::decode::TcpFlags;
    use crate::event::Ends;

    pub const MS: i64 = 1_000_000;
    pub const T0: i64 = 1_700_000_000_000_000_000;

    pub fn ends() -> Ends {
        Ends {
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:80".parse().unwrap(),
        }
    }

    /// A packet `ms` after [`T0`].
    pub fn pkt(frame: u64, ms: i64, from_server: bool, flags: u8, len: u32) -> Pkt {
        Pkt {
            frame,
            ts_ns: T0 + ms * MS,
            from_server,
            flags: TcpFlags(flags),
            len,
        }
    }

    pub fn cx(exchanges: u64) -> Context<'static> {
        Context {
            t0_ns: T0,
            exchanges,
            incomplete: 0,
            connections: 1,
            data_segments: exchanges * 2,
            latency_p50_ms: 1.0,
            server_time_p50_ms: 0.1,
            reuse_gaps: None,
        }
    }

    #[test]
    fn worst_and_total_drive_episode_severity() {
        // A 5.9 s stall next to a sub-millisecond one: the median says 0, the worst says critical.
        assert_eq!(
            episode_severity(Severity::Info, 5869.7, 5869.7),
            Severity::Critical
        );
        assert_eq!(
            episode_severity(Severity::Info, 150.0, 150.0),
            Severity::Warning
        );
        // Sub-millisecond in total: info whatever the detector's own rule said.
        assert_eq!(
            episode_severity(Severity::Warning, 0.5, 0.9),
            Severity::Info
        );
        assert_eq!(
            episode_severity(Severity::Critical, 40.0, 400.0),
            Severity::Critical
        );
        assert_eq!(worst_note(40.0, 45.0), "");
        assert_eq!(worst_note(0.0, 5869.7), " (worst 5869.7 ms)");
    }

    /// Runs `events` through a fresh detector and returns its findings.
    pub fn run<D: Detector + Default>(events: &[Event<'_>], cx: &Context) -> Vec<Finding> {
        let mut d = D::default();
        // The reuse gaps, as the window's aggregates record them for every detector.
        let mut gaps: Option<crate::stats::Hist> = None;
        for e in events {
            if let Event::ExchangeDone(x) = e
                && let Some(g) = x.reuse_gap_ns
            {
                gaps.get_or_insert_with(crate::stats::Hist::new)
                    .record_ns(g);
            }
            d.on_event(e);
        }
        let cx = Context {
            reuse_gaps: gaps.as_ref(),
            ..*cx
        };
        let mut out = Vec::new();
        d.finish(&cx, &mut out);
        out
    }
}
