//! netdoctor-core: the pure heart of netdoctor. No I/O, no privileges, no global state.
//!
//! Packets (from a live ring or a capture file) go in through [`analyze::Analyzer::push`],
//! what observers saw outside the packets through [`analyze::Analyzer::observe`]; the
//! analyzer decodes packets, rebuilds TCP connections ([`track`] keeps per-direction state),
//! splits HTTP/1.x exchanges and raises [`event::Event`]s, which the registered
//! [`detect::Detector`]s turn into [`finding::Finding`]s. [`verdict`] is the one rule that
//! turns findings into the run's answer. The same code serves `diagnose` (live) and `analyze`
//! (files), and serves a long-running agent through [`analyze::Analyzer::take_window`].

#![forbid(unsafe_code)]

pub mod analyze;
pub mod breakdown;
pub mod decode;
pub mod detect;
pub mod event;
pub mod finding;
pub mod observation;
pub mod packet;
pub mod probes;
pub mod relate;
pub mod sockets;
mod stats;
pub mod track;
pub mod verdict;

pub use analyze::{
    Analysis, Analyzer, AnalyzerConfig, CaptureQuality, CaptureStats, ExchangeStats,
};
pub use breakdown::{Breakdown, STALL_CAUSES, Stalls};
pub use decode::{DecodeError, SackBlocks, TcpFlags, TcpSegment, decode};
pub use detect::{Context, Detector};
pub use event::Event;
pub use finding::{
    Evidence, Finding, FindingId, Impact, Layer, PacketRef, Severity, Side, Verdict,
};
pub use observation::{CounterDelta, Observation};
pub use packet::{LinkType, RawPacket};
pub use stats::{LATENCY_BOUNDS_MS, Percentiles};
