//! What a test measured, in the shape of iperf3's `--json` (`intervals[].streams/sum`,
//! `end.sum_sent`/`sum_received`, `cpu_utilization_percent`) so scripts written for iperf3 read
//! it, plus the senders' `TCP_INFO` and (for the client) the findings about what limited the
//! transfer. Both ends describe the same data direction: `sum_sent`/`sum_received` is the
//! test's direction (client to server, or server to client with `-R`); with `--bidir`,
//! `*_bidir_reverse` is server to client.
//!
//! The text lines and iperf3's units are in [`crate::text`].

use crate::proto::{Results, StreamResult};
use serde::{Deserialize, Serialize};
use std::net::TcpStream;

/// The schema name of the JSON.
pub const SCHEMA: &str = "netdoctor.throughput/v1";

/// A sender's `TCP_INFO`, the fields the transfer-limit findings use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TcpSnapshot {
    pub snd_mss: u32,
    pub snd_cwnd: u32,
    pub snd_ssthresh: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub total_retrans: u32,
    pub unacked: u32,
    pub pmtu: u32,
    pub delivery_rate: u64,
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub notsent_bytes: u32,
    /// Microseconds with data in flight.
    pub busy_time_us: u64,
    /// Microseconds limited by the peer's receive window.
    pub rwnd_limited_us: u64,
    /// Microseconds limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// The peer's advertised window (bytes).
    pub snd_wnd: u32,
    /// Retransmission timeouts backed off in a row at the sample (0: none pending).
    #[serde(default)]
    pub backoff: u8,
    /// Segments the sender counts as lost at the sample.
    #[serde(default)]
    pub lost: u32,
    /// The send buffer the kernel gives the socket (`SO_SNDBUF`, bytes; 0: unknown).
    #[serde(default)]
    pub sndbuf: u32,
}

impl TcpSnapshot {
    /// Reads `TCP_INFO` of a socket.
    pub fn read(s: &TcpStream) -> std::io::Result<TcpSnapshot> {
        let t = netdoctor_sys::sockopt::tcp_info(s)?;
        Ok(TcpSnapshot {
            snd_mss: t.tcpi_snd_mss,
            snd_cwnd: t.tcpi_snd_cwnd,
            snd_ssthresh: t.tcpi_snd_ssthresh,
            rtt_us: t.tcpi_rtt,
            rttvar_us: t.tcpi_rttvar,
            min_rtt_us: t.tcpi_min_rtt,
            total_retrans: t.tcpi_total_retrans,
            unacked: t.tcpi_unacked,
            pmtu: t.tcpi_pmtu,
            delivery_rate: t.tcpi_delivery_rate,
            pacing_rate: t.tcpi_pacing_rate,
            bytes_acked: t.tcpi_bytes_acked,
            bytes_sent: t.tcpi_bytes_sent,
            bytes_retrans: t.tcpi_bytes_retrans,
            notsent_bytes: t.tcpi_notsent_bytes,
            busy_time_us: t.tcpi_busy_time,
            rwnd_limited_us: t.tcpi_rwnd_limited,
            sndbuf_limited_us: t.tcpi_sndbuf_limited,
            snd_wnd: t.tcpi_snd_wnd,
            backoff: t.tcpi_backoff,
            lost: t.tcpi_lost,
            sndbuf: socket2::SockRef::from(s)
                .send_buffer_size()
                .map_or(0, |b| u32::try_from(b).unwrap_or(u32::MAX)),
        })
    }
}

/// One stream in one interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IntervalStream {
    pub id: u32,
    pub socket: i32,
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// TCP sender: bytes in flight (unacknowledged segments × MSS) at the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inflight: Option<u64>,
    /// TCP sender: the peer's advertised window at the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// TCP sender: bytes written but not yet sent, at the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent: Option<u64>,
    /// TCP sender: the socket's send buffer (`SO_SNDBUF`) at the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf: Option<u64>,
    /// TCP sender: the minimum RTT seen so far, at the sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
    /// TCP sender: the share of the interval the writing thread slept (neither on a CPU nor
    /// waiting for one; 0–1), out of the time it was not waiting for a CPU, so a busy host
    /// does not move it. Unthrottled, it sleeps only waiting for send-buffer space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_asleep: Option<f64>,
    /// TCP sender: the share of the interval's wall time the writing thread waited on a run
    /// queue for a CPU (0–1, `/proc/thread-self/schedstat`): how short of CPU the sending host
    /// was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_runq: Option<f64>,
    /// TCP sender: `TCP_INFO` read inside the interval (every 100 ms by the writer, and at
    /// the edge), not only at its edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_reads: Option<TcpReads>,
    pub sender: bool,
}

/// A sending stream's `TCP_INFO` over one interval: the limited-time shares from the
/// kernel's cumulative counters between the interval's edges, and what the reads inside it
/// saw (cwnd's range, the window full, the busiest 100 ms slice).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct TcpReads {
    /// Reads inside the interval (the writer's, every 100 ms) plus the edge's.
    pub reads: u32,
    /// Of them, with ≥ 80 % of the peer's window in flight and cwnd above it, or the window
    /// closed.
    pub at_window: u32,
    /// Congestion window lowest and highest (bytes), bytes in flight highest.
    pub cwnd_min: u64,
    pub cwnd_max: u64,
    pub inflight_max: u64,
    /// Shares of the interval's wall time with data in flight (`tcpi_busy_time`), limited by
    /// the peer's window (`tcpi_rwnd_limited`) and by the send buffer
    /// (`tcpi_sndbuf_limited`), 0–1.
    pub busy: f64,
    pub rwnd_limited: f64,
    pub sndbuf_limited: f64,
    /// The largest rwnd-limited and sndbuf-limited shares of one slice between two reads.
    pub rwnd_limited_peak: f64,
    pub sndbuf_limited_peak: f64,
}

/// One interval: its streams and their sums (one per direction).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    pub streams: Vec<IntervalStream>,
    pub sum: IntervalSum,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<IntervalSum>,
}

/// The sum of one direction's streams in an interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IntervalSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    pub sender: bool,
}

impl Interval {
    /// Sums the streams; with both directions present, `sum` is this side's sending streams.
    pub fn new(start: f64, end: f64, streams: Vec<IntervalStream>) -> Interval {
        let seconds = (end - start).max(1e-9);
        let sum_of = |sender: bool| -> Option<IntervalSum> {
            let s: Vec<&IntervalStream> = streams.iter().filter(|s| s.sender == sender).collect();
            if s.is_empty() {
                return None;
            }
            let bytes: u64 = s.iter().map(|s| s.bytes).sum();
            let retr: Vec<i64> = s.iter().filter_map(|s| s.retransmits).collect();
            let pk: Vec<u64> = s.iter().filter_map(|s| s.packets).collect();
            Some(IntervalSum {
                start,
                end,
                seconds,
                bytes,
                bits_per_second: bytes as f64 * 8.0 / seconds,
                retransmits: (!retr.is_empty()).then(|| retr.iter().sum()),
                packets: (!pk.is_empty()).then(|| pk.iter().sum()),
                sender,
            })
        };
        let (a, b) = (sum_of(true), sum_of(false));
        let (sum, rev) = match (a, b) {
            (Some(a), b) => (a, b),
            (None, Some(b)) => (b, None),
            (None, None) => (
                IntervalSum {
                    start,
                    end,
                    seconds,
                    bytes: 0,
                    bits_per_second: 0.0,
                    retransmits: None,
                    packets: None,
                    sender: false,
                },
                None,
            ),
        };
        Interval {
            streams,
            sum,
            sum_bidir_reverse: rev,
        }
    }
}

/// A direction's total, as the sending or the receiving side measured it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Sum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<i64>,
    /// UDP: datagrams sent (sender) or the highest count seen (receiver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
    pub sender: bool,
}

/// CPU use of both ends during the test, percent of one core.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cpu {
    pub host_total: f64,
    pub host_user: f64,
    pub host_system: f64,
    pub remote_total: f64,
    pub remote_user: f64,
    pub remote_system: f64,
}

/// The end of a test.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct End {
    pub sum_sent: Sum,
    pub sum_received: Sum,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<Sum>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<Sum>,
    pub cpu_utilization_percent: Cpu,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
}

/// The test as asked for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TestSetup {
    pub protocol: String,
    pub num_streams: u32,
    pub blksize: u64,
    pub duration: u32,
    pub reverse: bool,
    pub bidir: bool,
    /// Target bits/s per stream (0: unlimited).
    pub target_bitrate: u64,
}

/// One test's report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema: String,
    /// `client` or `server`.
    pub role: String,
    pub local: String,
    pub remote: String,
    pub setup: TestSetup,
    pub intervals: Vec<Interval>,
    pub end: End,
    /// The local senders' `TCP_INFO` at the end, by stream id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sender_tcp_info: Vec<StreamTcpInfo>,
    /// What limited the transfer (client side).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<netdoctor_core::Finding>,
    /// This side's TCP sysctls during the test (`net.ipv4.tcp_wmem` …), as the findings'
    /// evidence.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sysctls: std::collections::BTreeMap<String, String>,
    /// The receiving host's CPUs over the test (the busiest in softirq first): this host's
    /// when it received, the peer's (a netdoctor server sends them) when it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu: Option<crate::cpu::HostCpu>,
    /// Checks that could not run, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// A stream's `TCP_INFO`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StreamTcpInfo {
    pub id: u32,
    #[serde(flatten)]
    pub info: TcpSnapshot,
}

/// The streams of one direction of the test, with both sides' figures.
pub struct DirectionTotals<'a> {
    /// This side's results and the peer's, both for this direction's streams.
    pub local: Vec<&'a StreamResult>,
    pub peer: Vec<&'a StreamResult>,
    /// This side sends in this direction.
    pub local_sends: bool,
    pub udp: bool,
}

fn span(s: &StreamResult) -> f64 {
    (s.end_time - s.start_time).max(0.0)
}

impl DirectionTotals<'_> {
    /// `sum_sent` and `sum_received` of this direction.
    pub fn sums(&self, out_of_order: Option<u64>) -> (Sum, Sum) {
        let (snd, rcv) = if self.local_sends {
            (&self.local, &self.peer)
        } else {
            (&self.peer, &self.local)
        };
        let secs = |v: &[&StreamResult]| v.iter().map(|s| span(s)).fold(0.0, f64::max);
        let bytes = |v: &[&StreamResult]| v.iter().map(|s| s.bytes).sum::<u64>();
        let (ss, rs) = (secs(snd), secs(rcv));
        let (sb, rb) = (bytes(snd), bytes(rcv));
        let bps = |b: u64, s: f64| if s > 0.0 { b as f64 * 8.0 / s } else { 0.0 };
        let retr: Vec<i64> = snd
            .iter()
            .map(|s| s.retransmits)
            .filter(|r| *r >= 0)
            .collect();
        let mut sent = Sum {
            start: 0.0,
            end: ss,
            seconds: ss,
            bytes: sb,
            bits_per_second: bps(sb, ss),
            retransmits: (!self.udp && !retr.is_empty()).then(|| retr.iter().sum()),
            sender: true,
            ..Sum::default()
        };
        let mut received = Sum {
            start: 0.0,
            end: rs,
            seconds: rs,
            bytes: rb,
            bits_per_second: bps(rb, rs),
            sender: false,
            ..Sum::default()
        };
        if self.udp {
            let sent_pk: i64 = snd.iter().map(|s| s.packets).sum();
            let lost: i64 = rcv.iter().map(|s| s.errors).sum();
            let jitter = if rcv.is_empty() {
                0.0
            } else {
                rcv.iter().map(|s| s.jitter).sum::<f64>() / rcv.len() as f64
            };
            sent.packets = Some(sent_pk);
            received.packets = Some(rcv.iter().map(|s| s.packets).sum());
            received.lost_packets = Some(lost);
            received.lost_percent = Some(if sent_pk > 0 {
                100.0 * lost as f64 / sent_pk as f64
            } else {
                0.0
            });
            received.jitter_ms = Some(jitter * 1000.0);
            received.out_of_order = out_of_order;
        }
        (sent, received)
    }
}

/// The end sums of a test from both sides' results. `client_sends_first` is the primary
/// direction (not `-R`); `bidir` adds the reverse one.
pub fn end_sums(
    local: &Results,
    peer: &Results,
    local_is_client: bool,
    reverse: bool,
    bidir: bool,
    udp: bool,
    local_ooo: &dyn Fn(bool) -> Option<u64>,
) -> End {
    let dir = |client_sends: bool| {
        let local_sends = client_sends == local_is_client;
        // A stream's role on this side: the local sender streams carry this direction when
        // this side sends in it. Streams are matched by id across both results.
        let local_ids: Vec<u32> = local
            .streams
            .iter()
            .filter(|s| is_sender(local, s, local_sends, bidir, local_is_client))
            .map(|s| s.id)
            .collect();
        let l: Vec<&StreamResult> = local
            .streams
            .iter()
            .filter(|s| local_ids.contains(&s.id))
            .collect();
        let p: Vec<&StreamResult> = peer
            .streams
            .iter()
            .filter(|s| local_ids.contains(&s.id))
            .collect();
        DirectionTotals {
            local: l,
            peer: p,
            local_sends,
            udp,
        }
        .sums(local_ooo(local_sends))
    };
    let (sum_sent, sum_received) = dir(!reverse || bidir);
    let (rs, rr) = if bidir {
        let (a, b) = dir(false);
        (Some(a), Some(b))
    } else {
        (None, None)
    };
    End {
        sum_sent,
        sum_received,
        sum_sent_bidir_reverse: rs,
        sum_received_bidir_reverse: rr,
        cpu_utilization_percent: Cpu {
            host_total: local.cpu_util_total,
            host_user: local.cpu_util_user,
            host_system: local.cpu_util_system,
            remote_total: peer.cpu_util_total,
            remote_user: peer.cpu_util_user,
            remote_system: peer.cpu_util_system,
        },
        sender_tcp_congestion: None,
    }
}

/// Whether a local stream is in the direction where this side sends (`local_sends`) or
/// receives. Without `--bidir` every stream goes one way; with it, the client's first half of
/// streams send and the server's first half receive (iperf3's order of creation).
fn is_sender(
    local: &Results,
    s: &StreamResult,
    local_sends: bool,
    bidir: bool,
    local_is_client: bool,
) -> bool {
    if !bidir {
        return true;
    }
    let pos = local.streams.iter().position(|x| x.id == s.id).unwrap_or(0);
    let first_half = pos < local.streams.len() / 2;
    // client: first half sends; server: first half receives.
    let sends = first_half == local_is_client;
    sends == local_sends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sr(id: u32, bytes: u64, end: f64) -> StreamResult {
        StreamResult {
            id,
            bytes,
            end_time: end,
            retransmits: -1,
            ..StreamResult::default()
        }
    }

    #[test]
    fn end_sums_take_each_side_from_who_measured_it() {
        // client sent 1000 B in 1 s; server received 900 B in 2 s.
        let mut local = Results {
            streams: vec![sr(1, 1000, 1.0)],
            ..Results::default()
        };
        local.streams[0].retransmits = 3;
        let peer = Results {
            streams: vec![sr(1, 900, 2.0)],
            ..Results::default()
        };
        let e = end_sums(&local, &peer, true, false, false, false, &|_| None);
        assert_eq!(
            (e.sum_sent.bytes, e.sum_sent.bits_per_second),
            (1000, 8000.0)
        );
        assert_eq!(e.sum_sent.retransmits, Some(3));
        assert_eq!(
            (e.sum_received.bytes, e.sum_received.bits_per_second),
            (900, 3600.0)
        );
        // the server's view of the same test gives the same sums
        let e2 = end_sums(&peer, &local, false, false, false, false, &|_| None);
        assert_eq!(e2.sum_sent, e.sum_sent);
        assert_eq!(e2.sum_received, e.sum_received);
        // reverse: the client received
        let e3 = end_sums(&local, &peer, true, true, false, false, &|_| None);
        assert_eq!((e3.sum_sent.bytes, e3.sum_received.bytes), (900, 1000));
    }

    #[test]
    fn bidir_splits_streams_by_creation_order() {
        let client = Results {
            streams: vec![sr(1, 100, 1.0), sr(3, 200, 1.0)],
            ..Results::default()
        };
        let server = Results {
            streams: vec![sr(1, 90, 1.0), sr(3, 210, 1.0)],
            ..Results::default()
        };
        let e = end_sums(&client, &server, true, false, true, false, &|_| None);
        assert_eq!((e.sum_sent.bytes, e.sum_received.bytes), (100, 90));
        let (s, r) = (
            e.sum_sent_bidir_reverse.unwrap(),
            e.sum_received_bidir_reverse.unwrap(),
        );
        assert_eq!((s.bytes, r.bytes), (210, 200));
        let e2 = end_sums(&server, &client, false, false, true, false, &|_| None);
        assert_eq!((e2.sum_sent.bytes, e2.sum_received.bytes), (100, 90));
    }

    #[test]
    fn udp_loss_percent_is_of_packets_sent() {
        let mut snd = sr(1, 0, 1.0);
        snd.packets = 200;
        let mut rcv = sr(1, 0, 1.0);
        rcv.packets = 200;
        rcv.errors = 10;
        rcv.jitter = 0.002;
        let local = Results {
            streams: vec![snd],
            ..Results::default()
        };
        let peer = Results {
            streams: vec![rcv],
            ..Results::default()
        };
        let e = end_sums(&local, &peer, true, false, false, true, &|_| None);
        assert_eq!(e.sum_received.lost_packets, Some(10));
        assert_eq!(e.sum_received.lost_percent, Some(5.0));
        assert_eq!(e.sum_received.jitter_ms, Some(2.0));
    }
}
