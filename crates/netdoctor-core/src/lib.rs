//! netdoctor-core: the pure heart of netdoctor. No I/O, no privileges, no global state.
//!
//! Packets (from a live ring or a capture file) go in through [`analyze::Analyzer::push`];
//! the analyzer decodes them, rebuilds TCP connections, splits HTTP/1.x exchanges and runs
//! the detectors, which produce [`finding::Finding`]s. The same code serves `diagnose`
//! (live) and `analyze` (files), and would serve a per-node agent.

pub mod analyze;
pub mod breakdown;
pub mod decode;
pub mod detect;
pub mod finding;
pub mod packet;
pub mod probes;
pub mod sockets;
mod stats;

pub use analyze::{Analysis, Analyzer, AnalyzerConfig, CaptureStats, ExchangeStats};
pub use breakdown::{Breakdown, Stalls};
pub use decode::{DecodeError, SackBlocks, TcpFlags, TcpSegment, decode};
pub use finding::{
    Evidence, Finding, FindingId, Impact, Layer, PacketRef, Severity, Side, Verdict,
};
pub use packet::{LinkType, RawPacket};
pub use stats::Percentiles;
