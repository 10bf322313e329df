//! netdoctor-observe: the passive observers of netdoctor and its capture input/output.
//!
//! - [`pcapfile`]: read pcap and pcapng files (streaming, constant memory) as a [`PacketSource`].
//! - [`pcapwrite`]: write nanosecond pcap files that tcpdump, tshark and Wireshark read.
//! - [`live`]: AF_PACKET capture with a kernel BPF filter, a TPACKET_V3 ring and drop counts.
//! - [`counters`]: kernel counter snapshots (netstat, snmp, snmp6 of the calling thread's
//!   namespace), their deltas and the meaning of the counters that matter.
//! - Host collectors, each reading the calling thread's network namespace: [`sockdiag`]
//!   (listeners, accept queues, SYN_RECV/TIME_WAIT, tcp_info), [`kmsg`] (kernel log lines),
//!   [`conntrack`] (count vs max), [`netdev`] (interface errors), [`sysctl`]; the host's
//!   per-CPU time and softirq counts ([`cpustat`]) and softnet counters ([`softnet`]); and
//!   [`host_findings`], the pure functions that turn what they saw into findings;
//!   [`host_run`] runs them all around one run (start before the load, finish after).
//! - [`sockopt`]: socket options (TCP_NODELAY, TCP_CORK, buffers) of the process serving a port.
//!
//! Every source of packets sits behind the small [`PacketSource`] trait, so the analysis code
//! runs the same on a live capture, a file, or a fake in tests.

pub mod conntrack;
mod counter_meaning;
pub mod counters;
pub mod cpustat;
mod error;
pub mod fanout;
pub mod host_error;
pub mod host_findings;
pub mod host_run;
pub mod kmsg;
pub mod listener_ns;
pub mod live;
pub mod netdev;
pub mod pcapfile;
pub mod pcapwrite;
pub mod schedstat;
pub mod sockdiag;
pub mod sockopt;
pub mod softnet;
pub mod sysctl;

pub use counters::{CounterDelta, CounterSnapshot, delta, snapshot, snapshot_from};
pub use error::{BadCaptureKind, ObserveError};
pub use live::{LiveCapture, LiveConfig, LiveSource};
pub use pcapfile::CaptureFile;
pub use pcapwrite::PcapWriter;

use netdoctor_core::RawPacket;
use std::ops::ControlFlow;

/// Anything that yields packets: a capture file, the live ring, a fake in tests.
pub trait PacketSource {
    /// Calls `f` for every packet until the source ends or `f` returns `ControlFlow::Break(())`.
    fn for_each_packet(
        &mut self,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> Result<SourceSummary, ObserveError>;
}

/// What a source reports after it ended.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SourceSummary {
    /// Packets handed to the callback.
    pub packets: u64,
    /// Kernel ring drops for live capture; 0 for files.
    pub drops: u64,
    /// Live capture: the largest share (0–1) of the ring's blocks that waited for the reader
    /// at once during the call, sampled whenever the reader came back from a wait (1 when the
    /// ring was full); 0 for files. How close the ring came to dropping.
    pub ring_fill: f64,
    /// Non-fatal problems, one line each (e.g. a truncated capture file).
    pub warnings: Vec<String>,
}
