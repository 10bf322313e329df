//! One test's streams while they run, as both ends see them: start the threads, sample the
//! counters (and the senders' `TCP_INFO`) per interval, stop, and turn the totals into this
//! side's results for the exchange.

use crate::cpu::{CpuSnapshot, HostCpu};
use crate::proto::{Results, StreamResult};
use crate::report::{
    self, End, Interval, IntervalStream, Report, StreamTcpInfo, TcpReads, TcpSnapshot, TestSetup,
};
use crate::stream::{DataSocket, Running, StreamPlan, SubReads};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The running streams of one test.
pub struct Session {
    pub streams: Vec<Running>,
    counting: Arc<AtomicBool>,
    pub start: Instant,
    end: Option<Instant>,
    last: Instant,
    last_bytes: Vec<u64>,
    last_packets: Vec<u64>,
    last_retrans: Vec<u32>,
    last_sched: Vec<(u64, u64)>,
    /// Each sender's cumulative busy, rwnd-limited and sndbuf-limited µs at the last edge.
    last_limited: Vec<(u64, u64, u64)>,
    cpu0: (Duration, Duration),
    /// The host's CPU counters at the start (an error names the file that could not be read).
    host0: Result<CpuSnapshot, String>,
    /// The host's CPUs from the start to the end of the data phase (set by `mark_end`).
    pub host_cpu: Result<HostCpu, String>,
    /// The senders' last `TCP_INFO`, by stream id.
    pub tcp_final: Vec<(u32, TcpSnapshot)>,
    /// The congestion control of the first TCP stream (read at the end).
    pub congestion: Option<String>,
}

impl Session {
    /// Starts the streams: a thread per UDP stream, the TCP streams on a few shared threads
    /// ([`crate::tcp_group`]; `threads` of them, `None`: its default; `zerocopy`: TCP senders
    /// use `sendfile`; `notsent_lowat`: TCP senders' `TCP_NOTSENT_LOWAT`, see
    /// [`crate::tcp_group::set_notsent_lowat`]). The streams keep the order given.
    pub fn start(
        socks: Vec<(StreamPlan, DataSocket)>,
        threads: Option<usize>,
        zerocopy: bool,
        notsent_lowat: Option<u32>,
    ) -> std::io::Result<Session> {
        let counting = Arc::new(AtomicBool::new(true));
        let cpu0 = netdoctor_sys::rusage::own_cpu_times();
        let host0 = CpuSnapshot::take();
        let start = Instant::now();
        let mut slots: Vec<Option<Running>> = Vec::new();
        let (mut tcp, mut at) = (Vec::new(), Vec::new());
        for (i, (plan, sock)) in socks.into_iter().enumerate() {
            match sock {
                DataSocket::Tcp(s) => {
                    tcp.push((plan, s));
                    at.push(i);
                    slots.push(None);
                }
                udp => slots.push(Some(Running::start(plan, udp, counting.clone())?)),
            }
        }
        for (i, r) in at.into_iter().zip(crate::tcp_group::start(
            tcp,
            counting.clone(),
            threads,
            zerocopy,
            notsent_lowat,
        )?) {
            slots[i] = Some(r);
        }
        let streams: Vec<Running> = slots.into_iter().flatten().collect();
        let n = streams.len();
        Ok(Session {
            streams,
            counting,
            start,
            end: None,
            last: start,
            last_bytes: vec![0; n],
            last_packets: vec![0; n],
            last_retrans: vec![0; n],
            last_sched: vec![(0, 0); n],
            last_limited: vec![(0, 0, 0); n],
            cpu0,
            host0,
            host_cpu: Err("the test has not ended".into()),
            tcp_final: Vec::new(),
            congestion: None,
        })
    }

    /// Seconds since the start.
    pub fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// The interval since the last sample.
    pub fn sample(&mut self) -> Interval {
        let now = self.end.unwrap_or_else(Instant::now);
        let t0 = (self.last - self.start).as_secs_f64();
        let t1 = (now - self.start).as_secs_f64();
        let seconds = (t1 - t0).max(1e-9);
        let mut streams = Vec::with_capacity(self.streams.len());
        for (i, s) in self.streams.iter().enumerate() {
            let bytes = s.counters.bytes.load(Ordering::Relaxed);
            let packets = s.counters.packets.load(Ordering::Relaxed);
            let db = bytes - self.last_bytes[i].min(bytes);
            let dp = packets.saturating_sub(self.last_packets[i]);
            self.last_bytes[i] = bytes;
            self.last_packets[i] = packets;
            let tcp = if s.plan.sender {
                s.tcp.as_ref().and_then(|t| TcpSnapshot::read(t).ok())
            } else {
                None
            };
            let retransmits = tcp.as_ref().map(|t| {
                let d = t.total_retrans.saturating_sub(self.last_retrans[i]);
                self.last_retrans[i] = t.total_retrans;
                i64::from(d)
            });
            let sched = (
                s.counters.run_ns.load(Ordering::Relaxed),
                s.counters.runq_ns.load(Ordering::Relaxed),
            );
            let (l_run, l_wait) = self.last_sched[i];
            // The first sample has no baseline (the thread's counters start at its birth).
            let asleep = (l_run > 0).then(|| {
                asleep_share(
                    seconds,
                    sched.0.saturating_sub(l_run) as f64 / 1e9,
                    sched.1.saturating_sub(l_wait) as f64 / 1e9,
                )
            });
            let runq = (l_run > 0)
                .then(|| (sched.1.saturating_sub(l_wait) as f64 / 1e9 / seconds).clamp(0.0, 1.0));
            self.last_sched[i] = sched;
            let tcp_reads = tcp.as_ref().map(|t| {
                tcp_reads(
                    &mut self.last_limited[i],
                    t,
                    &s.counters.take_reads(),
                    seconds,
                )
            });
            let udp = s.tcp.is_none();
            streams.push(IntervalStream {
                id: s.plan.id,
                socket: s.fd,
                start: t0,
                end: t1,
                seconds,
                bytes: db,
                bits_per_second: db as f64 * 8.0 / seconds,
                retransmits,
                snd_cwnd: tcp
                    .as_ref()
                    .map(|t| u64::from(t.snd_cwnd) * u64::from(t.snd_mss)),
                rtt_us: tcp.as_ref().map(|t| t.rtt_us),
                packets: udp.then_some(dp),
                inflight: tcp
                    .as_ref()
                    .map(|t| u64::from(t.unacked) * u64::from(t.snd_mss)),
                snd_wnd: tcp.as_ref().map(|t| u64::from(t.snd_wnd)),
                notsent: tcp.as_ref().map(|t| u64::from(t.notsent_bytes)),
                sndbuf: tcp.as_ref().map(|t| u64::from(t.sndbuf)),
                min_rtt_us: tcp.as_ref().map(|t| t.min_rtt_us),
                writer_asleep: tcp.as_ref().and(asleep),
                writer_runq: tcp.as_ref().and(runq),
                tcp_reads,
                sender: s.plan.sender,
            });
        }
        self.last = now;
        Interval::new(t0, t1, streams)
    }

    /// Stops counting received bytes and marks the end time (iperf3: the TEST_END moment).
    pub fn mark_end(&mut self) {
        if self.end.is_none() {
            self.counting.store(false, Ordering::Relaxed);
            self.end = Some(Instant::now());
            self.host_cpu = match &self.host0 {
                Ok(a) => a.take_again().map(|b| b.since(a)),
                Err(e) => Err(e.clone()),
            };
            self.tcp_final = self
                .streams
                .iter()
                .filter(|s| s.plan.sender)
                .filter_map(|s| Some((s.plan.id, TcpSnapshot::read(s.tcp.as_ref()?).ok()?)))
                .collect();
            self.congestion = self
                .streams
                .iter()
                .find_map(|s| congestion_of(s.tcp.as_ref()?));
        }
    }

    /// Stops the sending threads only (the client does this before TEST_END).
    pub fn stop_senders(&mut self) {
        for s in self.streams.iter().filter(|s| s.plan.sender) {
            s.signal_stop();
        }
        for s in self.streams.iter_mut().filter(|s| s.plan.sender) {
            s.stop();
        }
    }

    /// Stops every thread and closes the data sockets (iperf3's server closes them at TEST_END;
    /// iperf3 3.12's client may sit in a blocking read on one until it sees the close).
    pub fn stop_all(&mut self) {
        self.mark_end();
        for s in &self.streams {
            s.signal_stop();
        }
        for s in &mut self.streams {
            s.stop();
            if let Some(t) = s.tcp.take() {
                let _ = t.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Seconds from start to end (or now).
    pub fn duration(&self) -> f64 {
        (self.end.unwrap_or_else(Instant::now) - self.start).as_secs_f64()
    }

    /// CPU use of this process since the start, percent of one core's wall time: total, user,
    /// system (iperf3's `cpu_util`).
    pub fn cpu_percent(&self) -> (f64, f64, f64) {
        let (u, s) = netdoctor_sys::rusage::own_cpu_times();
        let wall = self.duration().max(1e-9);
        let user = (u - self.cpu0.0.min(u)).as_secs_f64() / wall * 100.0;
        let sys = (s - self.cpu0.1.min(s)).as_secs_f64() / wall * 100.0;
        (user + sys, user, sys)
    }

    /// This side's results for the exchange.
    pub fn results(&self) -> Results {
        let congestion = self.congestion.clone();
        let (total, user, system) = self.cpu_percent();
        let any_sender = self.streams.iter().any(|s| s.plan.sender);
        let tcp = self.streams.iter().any(|s| s.tcp.is_some());
        let end = self.duration();
        Results {
            cpu_util_total: total,
            cpu_util_user: user,
            cpu_util_system: system,
            sender_has_retransmits: match (any_sender, tcp) {
                (false, _) => -1,
                (true, true) => 1,
                (true, false) => 0,
            },
            congestion_used: congestion,
            streams: self
                .streams
                .iter()
                .map(|s| {
                    let c = &s.counters;
                    let retrans = self
                        .tcp_final
                        .iter()
                        .find(|(id, _)| *id == s.plan.id)
                        .map(|(_, t)| i64::from(t.total_retrans))
                        .unwrap_or(-1);
                    StreamResult {
                        id: s.plan.id,
                        bytes: c.bytes.load(Ordering::Relaxed),
                        retransmits: if s.plan.sender { retrans } else { -1 },
                        jitter: c.jitter(),
                        errors: c.lost.load(Ordering::Relaxed),
                        omitted_errors: 0,
                        packets: c.packets.load(Ordering::Relaxed) as i64,
                        omitted_packets: 0,
                        start_time: 0.0,
                        end_time: end,
                    }
                })
                .collect(),
            netdoctor_cpu: self.host_cpu.as_ref().ok().cloned(),
        }
    }
}

impl Drop for Session {
    /// Asks every stream to stop at once (each [`Running`] then waits for its own when dropped),
    /// so streams that share a thread are not waited for one after the other.
    fn drop(&mut self) {
        for s in &self.streams {
            s.signal_stop();
        }
    }
}

/// Who ran the test and how, for [`Session::report`].
pub struct ReportContext {
    pub is_client: bool,
    pub local: String,
    pub remote: String,
    pub setup: TestSetup,
    pub intervals: Vec<Interval>,
}

impl Session {
    /// The report of a finished test from both sides' results.
    pub fn report(&self, cx: ReportContext, local: &Results, peer: &Results) -> Report {
        let udp = cx.setup.protocol == "udp";
        let ooo = |local_sends: bool| -> Option<u64> {
            (udp && !local_sends).then(|| {
                self.streams
                    .iter()
                    .filter(|s| !s.plan.sender)
                    .map(|s| s.counters.out_of_order.load(Ordering::Relaxed))
                    .sum()
            })
        };
        let (reverse, bidir) = (cx.setup.reverse, cx.setup.bidir);
        let mut end: End = report::end_sums(local, peer, cx.is_client, reverse, bidir, udp, &ooo);
        // The congestion control of the side that sends in the test's direction.
        let local_sends = cx.is_client != reverse;
        end.sender_tcp_congestion = if local_sends {
            local.congestion_used.clone()
        } else {
            peer.congestion_used.clone()
        };
        // The receiver's CPUs: the peer's when this side sends (its findings are about its own
        // sending), else this host's.
        let sends = self.streams.iter().any(|s| s.plan.sender);
        let tcp = self.streams.iter().any(|s| s.tcp.is_some());
        let mut skipped = Vec::new();
        let receiver_cpu = if sends {
            peer.netdoctor_cpu.clone()
        } else {
            local.netdoctor_cpu.clone()
        };
        if receiver_cpu.is_none() && tcp {
            skipped.push(match &self.host_cpu {
                Err(e) if !sends => format!("receiver softirq: {e}"),
                _ => "receiver softirq: the receiver did not report its CPUs (not a netdoctor server, e.g. a stock iperf3 -s, or it could not read /proc/stat): its softirq load is unknown".to_string(),
            });
        }
        let mut r = Report {
            schema: report::SCHEMA.into(),
            role: if cx.is_client { "client" } else { "server" }.into(),
            local: cx.local,
            remote: cx.remote,
            setup: cx.setup,
            intervals: cx.intervals,
            end,
            sender_tcp_info: self
                .tcp_final
                .iter()
                .map(|(id, info)| StreamTcpInfo {
                    id: *id,
                    info: info.clone(),
                })
                .collect(),
            findings: Vec::new(),
            sysctls: crate::limits::read_sysctls(),
            receiver_cpu,
            skipped,
        };
        r.findings = crate::limits::findings(&r);
        r
    }
}

/// The share of an interval the writer slept, out of the time it was not waiting for a CPU:
/// `(seconds − run − wait) / (seconds − wait)`, 0–1. Time on a run queue is neither the
/// writer's own work nor a wait for buffer space; counted as awake (as before session 18) it
/// moved the share with the host's load (the small-wmem lab's writer: 31–38 % quiet,
/// 20–32 % beside a busy loop), so a busy node hid a small send buffer.
fn asleep_share(seconds: f64, run: f64, wait: f64) -> f64 {
    let own = seconds - wait;
    if own <= 0.0 {
        return 0.0;
    }
    ((own - run) / own).clamp(0.0, 1.0)
}

/// A TCP socket's congestion control name.
fn congestion_of(s: &std::net::TcpStream) -> Option<String> {
    let name = socket2::SockRef::from(s).tcp_congestion().ok()?;
    let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
    Some(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// A sending stream's reads inside the interval with the edge's (`t`) folded in, and the
/// limited-time shares since the last edge (`last`: its cumulative counters then, updated).
fn tcp_reads(
    last: &mut (u64, u64, u64),
    t: &TcpSnapshot,
    sub: &SubReads,
    seconds: f64,
) -> TcpReads {
    let (cwnd, inflight, wnd) = (
        u64::from(t.snd_cwnd) * u64::from(t.snd_mss),
        u64::from(t.unacked) * u64::from(t.snd_mss),
        u64::from(t.snd_wnd),
    );
    let edge_at_window = (inflight > 0 || t.notsent_bytes > 0)
        && (wnd == 0 || (inflight * 10 >= wnd * 8 && wnd < cwnd));
    let (b0, r0, s0) = *last;
    *last = (t.busy_time_us, t.rwnd_limited_us, t.sndbuf_limited_us);
    let share = |cur: u64, prev: u64| (cur.saturating_sub(prev) as f64 / 1e6 / seconds).min(1.0);
    TcpReads {
        reads: sub.reads + 1,
        at_window: sub.at_window + u32::from(edge_at_window),
        cwnd_min: if sub.reads == 0 {
            cwnd
        } else {
            sub.cwnd_min.min(cwnd)
        },
        cwnd_max: sub.cwnd_max.max(cwnd),
        inflight_max: sub.inflight_max.max(inflight),
        busy: share(t.busy_time_us, b0),
        rwnd_limited: share(t.rwnd_limited_us, r0),
        sndbuf_limited: share(t.sndbuf_limited_us, s0),
        rwnd_limited_peak: sub.rwnd_limited_peak,
        sndbuf_limited_peak: sub.sndbuf_limited_peak,
    }
}

#[cfg(test)]
mod tests {
    use super::asleep_share;

    #[test]
    fn time_waiting_for_a_cpu_is_neither_asleep_nor_awake() {
        // Quiet: 0.6 s on a CPU, no wait, 0.4 s asleep.
        assert!((asleep_share(1.0, 0.6, 0.0) - 0.4).abs() < 1e-9);
        // The same writer beside a busy loop: a quarter of the second on a run queue.
        assert!((asleep_share(1.0, 0.45, 0.25) - 0.4).abs() < 1e-9);
        // A CPU-bound writer starved of CPU is never asleep.
        assert_eq!(asleep_share(1.0, 0.5, 0.5), 0.0);
        assert_eq!(asleep_share(1.0, 0.0, 1.0), 0.0);
    }
}
