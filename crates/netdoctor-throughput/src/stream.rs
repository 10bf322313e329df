//! The data streams. UDP: one thread per stream, blocking sockets with short timeouts so a stop
//! flag ends them within ~100 ms. TCP: the streams of a side share a few threads
//! ([`crate::tcp_group`]). Counters are atomics the control thread samples every interval.
//!
//! UDP blocks carry iperf3's header: send time (seconds and microseconds, 32-bit big-endian
//! each) and the packet count (32-bit, or 64-bit when `udp_counters_64bit` was agreed). The
//! receiver counts a gap in the count as loss, a count below the highest seen as out-of-order
//! (and takes one back from the loss), and keeps RFC 1889's jitter (as iperf3 does).

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a blocked read or write waits before the thread looks at its stop flag.
pub(crate) const POLL: Duration = Duration::from_millis(100);

/// A connected data socket.
#[derive(Debug)]
pub enum DataSocket {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

impl DataSocket {
    /// The descriptor number (iperf3 prints it as the stream's label).
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match self {
            DataSocket::Tcp(s) => s.as_raw_fd(),
            DataSocket::Udp(s) => s.as_raw_fd(),
        }
    }
}

/// What a stream does and how fast.
#[derive(Debug, Clone, Copy)]
pub struct StreamPlan {
    /// iperf3's stream id (1, 3, 4, …).
    pub id: u32,
    /// This side writes (else reads).
    pub sender: bool,
    /// Bytes per write / datagram size.
    pub blksize: usize,
    /// Target bits/s for this stream; 0 = as fast as possible.
    pub rate: u64,
    /// UDP packet count is 64-bit.
    pub udp64: bool,
}

/// Counters one stream thread updates and the control thread reads.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes written (sender) or read while counting (receiver).
    pub bytes: AtomicU64,
    /// UDP: datagrams sent; receiver: the highest packet count seen (iperf3's meaning).
    pub packets: AtomicU64,
    /// UDP receiver: datagrams missing from the sequence.
    pub lost: AtomicI64,
    /// UDP receiver: datagrams that arrived after a later one.
    pub out_of_order: AtomicU64,
    /// UDP receiver: jitter in seconds (f64 bits).
    pub jitter_bits: AtomicU64,
    /// Datagrams received (UDP receiver), for the packet-rate view.
    pub datagrams: AtomicU64,
    /// TCP sender: the writing thread's nanoseconds on a CPU and waiting for one (from
    /// `/proc/thread-self/schedstat`, updated every 100 ms; the thread a group of streams
    /// shares, see [`crate::tcp_group`]). The rest of the wall time it slept: an unthrottled
    /// writer sleeps only in `poll` waiting for send-buffer space, the send-buffer finding's
    /// evidence.
    pub run_ns: AtomicU64,
    pub runq_ns: AtomicU64,
    /// TCP sender: what the writer's own `TCP_INFO` reads (every [`SCHED_EVERY`]) saw since
    /// the control thread last took them ([`Counters::take_reads`]).
    pub reads: Mutex<SubReads>,
}

/// `TCP_INFO` read inside an interval by the writing thread, folded as it goes (the control
/// thread reads only at the interval's edges). Cheap: one `getsockopt` per 100 ms, on the
/// same tick as the scheduler times.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct SubReads {
    /// Reads folded in.
    pub reads: u32,
    /// Reads with ≥ 80 % of the peer's window in flight and cwnd above the window, or the
    /// window closed (the rule `receive_window_limited` applies to each interval's edge).
    pub at_window: u32,
    /// Congestion window (bytes) lowest and highest, bytes in flight highest.
    pub cwnd_min: u64,
    pub cwnd_max: u64,
    pub inflight_max: u64,
    /// The largest share of one slice between two reads the kernel counted as limited by
    /// the peer's window and by the send buffer (`tcpi_rwnd_limited`, `tcpi_sndbuf_limited`
    /// over the slice's wall time, 0–1).
    pub rwnd_limited_peak: f64,
    pub sndbuf_limited_peak: f64,
}

/// The previous read of the writer's `TCP_INFO`: when, and the kernel's cumulative
/// limited times then (µs).
#[derive(Clone, Copy)]
pub(crate) struct LastRead {
    at: Instant,
    rwnd_us: u64,
    sndbuf_us: u64,
}

impl SubReads {
    fn fold(&mut self, t: &libc::tcp_info, last: Option<LastRead>, now: Instant) {
        let cwnd = u64::from(t.tcpi_snd_cwnd) * u64::from(t.tcpi_snd_mss);
        let inflight = u64::from(t.tcpi_unacked) * u64::from(t.tcpi_snd_mss);
        let wnd = u64::from(t.tcpi_snd_wnd);
        if self.reads == 0 {
            self.cwnd_min = cwnd;
        }
        self.reads += 1;
        self.cwnd_min = self.cwnd_min.min(cwnd);
        self.cwnd_max = self.cwnd_max.max(cwnd);
        self.inflight_max = self.inflight_max.max(inflight);
        if (inflight > 0 || t.tcpi_notsent_bytes > 0)
            && (wnd == 0 || (inflight * 10 >= wnd * 8 && wnd < cwnd))
        {
            self.at_window += 1;
        }
        if let Some(l) = last {
            let us = (now - l.at).as_micros().max(1) as f64;
            let share = |cur: u64, prev: u64| (cur.saturating_sub(prev) as f64 / us).min(1.0);
            self.rwnd_limited_peak = self
                .rwnd_limited_peak
                .max(share(t.tcpi_rwnd_limited, l.rwnd_us));
            self.sndbuf_limited_peak = self
                .sndbuf_limited_peak
                .max(share(t.tcpi_sndbuf_limited, l.sndbuf_us));
        }
    }
}

impl Counters {
    /// The reads folded in since the last call, and a fresh start.
    pub fn take_reads(&self) -> SubReads {
        self.reads
            .lock()
            .map(|mut r| std::mem::take(&mut *r))
            .unwrap_or_default()
    }

    /// Jitter in seconds.
    pub fn jitter(&self) -> f64 {
        f64::from_bits(self.jitter_bits.load(Ordering::Relaxed))
    }
}

/// A running stream: its plan, counters and the thread that moves its data.
#[derive(Debug)]
pub struct Running {
    pub plan: StreamPlan,
    pub fd: i32,
    pub counters: Arc<Counters>,
    /// A second handle on a TCP socket, for `TCP_INFO` while the thread owns the first.
    pub tcp: Option<TcpStream>,
    stop: Arc<AtomicBool>,
    worker: Worker,
}

/// The thread of a stream: its own (UDP), or one a group of TCP streams shares.
#[derive(Debug)]
enum Worker {
    Own(Option<JoinHandle<()>>),
    Shared {
        /// Set by the group's thread once it no longer touches this stream.
        done: Arc<AtomicBool>,
        group: Arc<crate::tcp_group::GroupThread>,
    },
}

impl Running {
    /// Starts the stream's thread. `counting` says whether received bytes count (receivers stop
    /// counting at the test's end, as iperf3 counts only in TEST_RUNNING).
    pub fn start(
        plan: StreamPlan,
        sock: DataSocket,
        counting: Arc<AtomicBool>,
    ) -> std::io::Result<Running> {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let fd = sock.fd();
        let tcp = match &sock {
            DataSocket::Tcp(s) => Some(s.try_clone()?),
            DataSocket::Udp(_) => None,
        };
        let (c, st) = (counters.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("stream-{}", plan.id))
            .spawn(move || match (sock, plan.sender) {
                (DataSocket::Tcp(s), true) => tcp_send(s, plan, &c, &st),
                (DataSocket::Tcp(s), false) => tcp_recv(s, plan, &c, &st, &counting),
                (DataSocket::Udp(s), true) => udp_send(s, plan, &c, &st),
                (DataSocket::Udp(s), false) => udp_recv(s, plan, &c, &st, &counting),
            })?;
        Ok(Running {
            plan,
            fd,
            counters,
            tcp,
            stop,
            worker: Worker::Own(Some(thread)),
        })
    }

    /// A TCP stream that a group's thread moves (see [`crate::tcp_group`]).
    pub(crate) fn shared(
        plan: StreamPlan,
        tcp: &TcpStream,
        counters: Arc<Counters>,
        stop: Arc<AtomicBool>,
        done: Arc<AtomicBool>,
        group: Arc<crate::tcp_group::GroupThread>,
    ) -> std::io::Result<Running> {
        use std::os::fd::AsRawFd;
        Ok(Running {
            plan,
            fd: tcp.as_raw_fd(),
            counters,
            tcp: Some(tcp.try_clone()?),
            stop,
            worker: Worker::Shared { done, group },
        })
    }

    /// Asks the thread to leave this stream alone, without waiting (so several streams of a
    /// group can be asked at once, see [`Running::stop`]).
    pub fn signal_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Asks the thread to end (or to drop this stream, when it is a group's) and waits for it.
    /// After this the stream's counters no longer change.
    pub fn stop(&mut self) {
        self.signal_stop();
        match &mut self.worker {
            Worker::Own(t) => {
                if let Some(t) = t.take() {
                    let _ = t.join();
                }
            }
            Worker::Shared { done, group } => {
                // The group's thread looks at the flag at least every POLL.
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                group.join_if_finished();
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// With a target rate: when `sent` bytes are ahead of `rate` bits/s since `start`, sleeps toward
/// their due time (at most one poll period, so the caller sees its stop flag) and says so.
fn hold(start: Instant, sent: u64, rate: u64) -> bool {
    match ahead_by(start, sent, rate) {
        Some(d) => {
            std::thread::sleep(d.min(POLL));
            true
        }
        None => false,
    }
}

/// With a target rate: how long until `sent` bytes are due at `rate` bits/s since `start`, when
/// they are ahead of it.
pub(crate) fn ahead_by(start: Instant, sent: u64, rate: u64) -> Option<Duration> {
    if rate == 0 {
        return None;
    }
    let due = Duration::from_secs_f64(sent as f64 * 8.0 / rate as f64);
    let now = start.elapsed();
    (due > now).then(|| due - now)
}

/// The TCP receiver's read size when the block size is smaller: iperf3's default block, 128 KB.
/// Reads of up to 1 MB (session 8) cost more per byte: with 4 streams the receive buffers
/// (4 MB) outgrow a core's 2 MB L2 beside the senders' data, and a lagging receiver copied
/// ~800 KB of cache-cold data per call; `perf record` on a veth, 4 streams, both processes on
/// one CPU: `_copy_to_iter`+`_copy_from_iter` 0.28–0.36 CPU s/GB with 1 MB reads, 0.24–0.29
/// with 128 KB (iperf3 0.21–0.23).
pub(crate) const RECV_AT_MOST: usize = 128 << 10;

/// How often the writer records its scheduler times.
pub(crate) const SCHED_EVERY: Duration = Duration::from_millis(100);

/// The calling thread's time on a CPU and waiting on a run queue (ns), from
/// `/proc/thread-self/schedstat` ("run wait slices"); `None` without schedstats.
pub fn thread_schedstat() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

pub(crate) fn store_schedstat(c: &Counters) {
    if let Some((run, wait)) = thread_schedstat() {
        c.run_ns.store(run, Ordering::Relaxed);
        c.runq_ns.store(wait, Ordering::Relaxed);
    }
}

/// One `TCP_INFO` read of the writer's socket, folded into [`Counters::reads`].
pub(crate) fn read_tcp_info(s: &TcpStream, c: &Counters, last: &mut Option<LastRead>) {
    let Ok(t) = netdoctor_sys::sockopt::tcp_info(s) else {
        return;
    };
    let now = Instant::now();
    if let Ok(mut r) = c.reads.lock() {
        r.fold(&t, *last, now);
    }
    *last = Some(LastRead {
        at: now,
        rwnd_us: t.tcpi_rwnd_limited,
        sndbuf_us: t.tcpi_sndbuf_limited,
    });
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

fn tcp_send(mut s: TcpStream, plan: StreamPlan, c: &Counters, stop: &AtomicBool) {
    let _ = s.set_write_timeout(Some(POLL));
    let mut store = AlignedBuf::new(plan.blksize.max(1));
    let buf = store.fill_payload();
    let start = Instant::now();
    let mut off = 0usize;
    let mut last_sched = start;
    let mut last_read = None;
    store_schedstat(c);
    while !stop.load(Ordering::Relaxed) {
        if hold(start, c.bytes.load(Ordering::Relaxed), plan.rate) {
            continue;
        }
        if last_sched.elapsed() >= SCHED_EVERY {
            last_sched = Instant::now();
            store_schedstat(c);
            read_tcp_info(&s, c, &mut last_read);
        }
        match s.write(&buf[off..]) {
            Ok(0) => break,
            Ok(n) => {
                c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                off = (off + n) % buf.len();
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
}

fn tcp_recv(
    mut s: TcpStream,
    plan: StreamPlan,
    c: &Counters,
    stop: &AtomicBool,
    counting: &AtomicBool,
) {
    let _ = s.set_read_timeout(Some(POLL));
    // Reads take what is queued, up to the block size or 128 KB, whichever is larger (iperf3
    // reads one block per call; the bytes counted are the same).
    let mut store = AlignedBuf::new(plan.blksize.max(RECV_AT_MOST));
    let buf = store.slice_mut();
    while !stop.load(Ordering::Relaxed) {
        match s.read(buf) {
            Ok(0) => break,
            Ok(n) => {
                if counting.load(Ordering::Relaxed) {
                    c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
}

/// A block of the repeating pattern iperf3 fills its buffer with when asked to (any bytes do).
fn payload(len: usize) -> Vec<u8> {
    (0..len.max(1)).map(|i| b"0123456789"[i % 10]).collect()
}

/// A page-aligned buffer for the TCP data path. A plain `Vec` of 128 KB comes from glibc's
/// mmap path 16 bytes past a page boundary, and the kernel's copy to and from the socket
/// (`rep movsb` into page-aligned skb fragments) was ~30 % slower per byte from such a
/// buffer than from iperf3's page-aligned one (`perf record` on a veth, 4 streams:
/// `_copy_from_iter`/`_copy_to_iter` per GB). Safe code: a slice of a larger `Vec` starting
/// at the first page boundary.
pub(crate) struct AlignedBuf {
    v: Vec<u8>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    pub(crate) fn new(len: usize) -> AlignedBuf {
        let v = vec![0u8; len + Self::ALIGN];
        let off = v.as_ptr().align_offset(Self::ALIGN).min(Self::ALIGN);
        AlignedBuf { v, off, len }
    }

    pub(crate) fn slice_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.off..self.off + self.len]
    }

    pub(crate) fn slice(&self) -> &[u8] {
        &self.v[self.off..self.off + self.len]
    }

    /// Fills the buffer with [`payload`]'s pattern and returns it.
    pub(crate) fn fill_payload(&mut self) -> &[u8] {
        let b = self.slice_mut();
        for (i, x) in b.iter_mut().enumerate() {
            *x = b"0123456789"[i % 10];
        }
        b
    }
}

/// iperf3's UDP header: the wall-clock send time and the packet count.
pub fn write_udp_header(buf: &mut [u8], now: Duration, count: u64, udp64: bool) {
    buf[0..4].copy_from_slice(&(now.as_secs() as u32).to_be_bytes());
    buf[4..8].copy_from_slice(&now.subsec_micros().to_be_bytes());
    if udp64 {
        buf[8..16].copy_from_slice(&count.to_be_bytes());
    } else {
        buf[8..12].copy_from_slice(&(count as u32).to_be_bytes());
    }
}

/// The send time (seconds) and count of a datagram; `None` when it is too short.
pub fn read_udp_header(buf: &[u8], udp64: bool) -> Option<(f64, u64)> {
    let need = if udp64 { 16 } else { 12 };
    if buf.len() < need {
        return None;
    }
    let sec = u32::from_be_bytes(buf[0..4].try_into().ok()?);
    let usec = u32::from_be_bytes(buf[4..8].try_into().ok()?);
    let count = if udp64 {
        u64::from_be_bytes(buf[8..16].try_into().ok()?)
    } else {
        u64::from(u32::from_be_bytes(buf[8..12].try_into().ok()?))
    };
    Some((f64::from(sec) + f64::from(usec) / 1e6, count))
}

fn wall() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn udp_send(s: UdpSocket, plan: StreamPlan, c: &Counters, stop: &AtomicBool) {
    let _ = s.set_write_timeout(Some(POLL));
    let mut buf = payload(plan.blksize.max(16));
    let start = Instant::now();
    let mut count = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if hold(start, c.bytes.load(Ordering::Relaxed), plan.rate) {
            continue;
        }
        write_udp_header(&mut buf, wall(), count + 1, plan.udp64);
        match s.send(&buf) {
            Ok(n) => {
                count += 1;
                c.packets.store(count, Ordering::Relaxed);
                c.bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            // ENOBUFS, ECONNREFUSED (the peer's socket not there yet or gone): iperf3 treats
            // them as soft errors and sends on; so do we, without counting the datagram.
            Err(_) => std::thread::yield_now(),
        }
    }
}

/// The receiver's sequence and jitter bookkeeping (iperf3's `iperf_udp_recv`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct UdpRecvState {
    /// Highest packet count seen.
    pub max_count: u64,
    pub lost: i64,
    pub out_of_order: u64,
    pub jitter: f64,
    prev_transit: Option<f64>,
}

impl UdpRecvState {
    /// Accounts one datagram sent at `sent` (s) with `count`, that arrived at `arrived` (s).
    pub fn on_packet(&mut self, count: u64, sent: f64, arrived: f64) {
        if count > self.max_count {
            if count > self.max_count + 1 {
                self.lost += (count - 1 - self.max_count) as i64;
            }
            self.max_count = count;
        } else {
            self.out_of_order += 1;
            if self.lost > 0 {
                self.lost -= 1;
            }
        }
        let transit = arrived - sent;
        let prev = self.prev_transit.unwrap_or(transit);
        self.jitter += ((transit - prev).abs() - self.jitter) / 16.0;
        self.prev_transit = Some(transit);
    }
}

fn udp_recv(
    s: UdpSocket,
    plan: StreamPlan,
    c: &Counters,
    stop: &AtomicBool,
    counting: &AtomicBool,
) {
    let _ = s.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; plan.blksize.max(16) + 64];
    let mut st = UdpRecvState::default();
    while !stop.load(Ordering::Relaxed) {
        match s.recv(&mut buf) {
            Ok(n) => {
                if !counting.load(Ordering::Relaxed) {
                    continue;
                }
                c.bytes.fetch_add(n as u64, Ordering::Relaxed);
                c.datagrams.fetch_add(1, Ordering::Relaxed);
                if let Some((sent, count)) = read_udp_header(&buf[..n], plan.udp64) {
                    st.on_packet(count, sent, wall().as_secs_f64());
                    c.packets.store(st.max_count, Ordering::Relaxed);
                    c.lost.store(st.lost, Ordering::Relaxed);
                    c.out_of_order.store(st.out_of_order, Ordering::Relaxed);
                    c.jitter_bits.store(st.jitter.to_bits(), Ordering::Relaxed);
                }
            }
            Err(e) if is_timeout(&e) => {}
            // ECONNREFUSED from an earlier send's ICMP: keep reading.
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_start_at_a_page_and_hold_the_pattern() {
        for len in [1, 1000, 128 * 1024, 1 << 20] {
            let mut a = AlignedBuf::new(len);
            let b = a.fill_payload();
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % AlignedBuf::ALIGN, 0);
            assert_eq!(b, payload(len).as_slice());
        }
    }

    #[test]
    fn udp_header_round_trips_in_both_widths() {
        let mut b = [0u8; 32];
        let t = Duration::new(1_700_000_000, 123_456_000);
        write_udp_header(&mut b, t, 7, false);
        assert_eq!(&b[8..12], &7u32.to_be_bytes());
        let (s, c) = read_udp_header(&b, false).unwrap();
        assert_eq!(c, 7);
        assert!((s - 1_700_000_000.123456).abs() < 1e-6);
        write_udp_header(&mut b, t, 1 << 40, true);
        assert_eq!(read_udp_header(&b, true).unwrap().1, 1 << 40);
        assert_eq!(read_udp_header(&b[..11], false), None);
    }

    #[test]
    fn loss_and_reordering_are_counted_as_iperf3_does() {
        let mut st = UdpRecvState::default();
        for c in [1, 2, 4, 5, 3, 8] {
            st.on_packet(c, 0.0, 0.001);
        }
        // gap 3 (1 lost), 3 arrives late (lost back to 0, one out of order), gap 6-7 (2 lost)
        assert_eq!((st.max_count, st.lost, st.out_of_order), (8, 2, 1));
        assert_eq!(st.jitter, 0.0);
    }

    #[test]
    fn jitter_follows_transit_changes() {
        let mut st = UdpRecvState::default();
        st.on_packet(1, 0.0, 0.010);
        st.on_packet(2, 0.1, 0.110);
        assert!(st.jitter < 1e-12, "{}", st.jitter);
        st.on_packet(3, 0.2, 0.226); // transit 26 ms instead of 10
        assert!((st.jitter - 0.016 / 16.0).abs() < 1e-9, "{}", st.jitter);
    }
}
