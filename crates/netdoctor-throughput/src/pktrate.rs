//! Packet rate: pktgen's job without the kernel module. Small UDP datagrams at a target rate or
//! as fast as possible, from one thread or several, with `sendmmsg`; a receiver
//! with `recvmmsg` on one or several `SO_REUSEPORT` sockets counts what arrived, and says where
//! the rest was lost from the counters of its namespace and host, read before and after:
//! `Udp.RcvbufErrors`/`Udp.InErrors` (a socket's receive buffer was full), `/proc/net/softnet_stat`
//! drops (a CPU's backlog queue was full) and time squeezes, and the interfaces' drop counters.
//!
//! The sender hands the kernel 64 datagrams per message with `UDP_SEGMENT` (UDP GSO, 8 messages
//! per `sendmmsg`): the UDP/IP send path then runs once per 64 datagrams and the kernel cuts the
//! message into separate datagrams (each with its own UDP and IP header) before the device, or
//! the device does it (USO). That cut the sender's CPU per datagram several times on veth (see
//! bench/README.md); pktgen and trafgen get their rate by skipping the stack instead. Where the
//! kernel or the route refuses GSO it sends one datagram per message (batches of 64) and says
//! so. A device with USO (veth by default) passes the 64-datagram message on whole, so its
//! `rx_packets` counts messages; the receiving socket still gets each datagram on its own.
//!
//! Each datagram starts with a 16-byte header: `NDPR`, the sender thread (u16), the run (u16),
//! the thread's sequence number (u64), all big-endian. The receiver takes the highest sequence
//! per thread plus one as what was sent (a loss at the very end is not seen).

use crate::Error;
use netdoctor_observe::{counters, netdev, softnet};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MAGIC: &[u8; 4] = b"NDPR";
/// Bytes of the header; the smallest datagram.
pub const HEADER: usize = 16;
const BATCH: usize = 64;
/// Datagrams per GSO message (the kernel takes up to `UDP_MAX_SEGMENTS`, 64 or more).
pub const GSO_SEGMENTS: usize = 64;
/// GSO messages per `sendmmsg`: 512 datagrams, a burst a default receive buffer absorbs.
const GSO_BATCH: usize = 8;

/// The sending side.
#[derive(Debug, Clone)]
pub struct SendConfig {
    pub target: SocketAddr,
    pub threads: u32,
    /// UDP payload bytes per datagram (at least [`HEADER`]).
    pub size: usize,
    /// Datagrams per second over all threads; 0: as fast as possible.
    pub rate: u64,
    pub duration: Duration,
    /// Hand the kernel up to [`GSO_SEGMENTS`] datagrams per message with `UDP_SEGMENT` (GSO),
    /// falling back to one datagram per message where the kernel or the route refuses it.
    pub gso: bool,
}

/// What the sender did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SendReport {
    pub target: String,
    pub threads: u32,
    pub size: usize,
    pub target_pps: u64,
    pub seconds: f64,
    pub packets: u64,
    pub pps: f64,
    pub bits_per_second: f64,
    /// Datagrams the kernel refused (ENOBUFS, ECONNREFUSED …), not counted as sent.
    pub send_errors: u64,
    /// CPU seconds this process used.
    pub cpu_seconds: f64,
    /// Datagrams per message the kernel segmented (`UDP_SEGMENT`); 1: one per message (GSO off,
    /// or refused: see `notes`).
    #[serde(default)]
    pub segments_per_message: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Sends for the configured duration.
pub fn send(cfg: &SendConfig) -> Result<SendReport, Error> {
    if cfg.size < HEADER || cfg.size > crate::proto::MAX_UDP_BLOCKSIZE {
        return Err(Error::Protocol(format!(
            "packet size {} (allowed {HEADER}..={})",
            cfg.size,
            crate::proto::MAX_UDP_BLOCKSIZE
        )));
    }
    if cfg.threads == 0 || cfg.threads > 64 {
        return Err(Error::Protocol(format!(
            "threads = {} (allowed 1..=64)",
            cfg.threads
        )));
    }
    let run = (std::process::id() & 0xffff) as u16;
    let cpu0 = netdoctor_sys::rusage::own_cpu_time();
    let start = Instant::now();
    let sent = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let mut handles: Vec<std::thread::JoinHandle<Result<usize, String>>> = Vec::new();
    for t in 0..cfg.threads {
        let bind: SocketAddr = if cfg.target.is_ipv4() {
            ([0, 0, 0, 0], 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let s = UdpSocket::bind(bind).map_err(|e| Error::io("bind a UDP socket", e))?;
        s.connect(cfg.target)
            .map_err(|e| Error::io(format!("connect UDP {}", cfg.target), e))?;
        let _ = socket2::SockRef::from(&s).set_send_buffer_size(4 << 20);
        let (sent, errors) = (sent.clone(), errors.clone());
        let per_thread = cfg.rate / u64::from(cfg.threads)
            + u64::from(u64::from(t) < cfg.rate % u64::from(cfg.threads));
        let (size, duration, gso) = (cfg.size, cfg.duration, cfg.gso);
        handles.push(std::thread::spawn(move || {
            send_thread(
                &s, t as u16, run, size, gso, per_thread, start, duration, &sent, &errors,
            )
        }));
    }
    let mut segments_per_message = usize::MAX;
    let mut notes = Vec::new();
    for h in handles {
        match h.join() {
            Ok(Ok(segs)) => segments_per_message = segments_per_message.min(segs),
            Ok(Err(note)) => {
                segments_per_message = 1;
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            Err(_) => notes.push("a sending thread panicked".into()),
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let packets = sent.load(Ordering::Relaxed);
    Ok(SendReport {
        target: cfg.target.to_string(),
        threads: cfg.threads,
        size: cfg.size,
        target_pps: cfg.rate,
        seconds,
        packets,
        pps: packets as f64 / seconds,
        bits_per_second: packets as f64 * cfg.size as f64 * 8.0 / seconds,
        send_errors: errors.load(Ordering::Relaxed),
        cpu_seconds: (netdoctor_sys::rusage::own_cpu_time() - cpu0).as_secs_f64(),
        segments_per_message: if segments_per_message == usize::MAX {
            1
        } else {
            segments_per_message
        },
        notes,
    })
}

/// Datagrams per GSO message for `size`-byte datagrams: [`GSO_SEGMENTS`], fewer when they would
/// pass the 64 KB a UDP message can hold.
fn gso_segments(size: usize) -> usize {
    (65_000 / size).clamp(1, GSO_SEGMENTS)
}

/// One sending thread; returns the datagrams per message it ended with, or why GSO was refused
/// (it then went on with one datagram per message).
#[allow(clippy::too_many_arguments)]
fn send_thread(
    s: &UdpSocket,
    thread: u16,
    run: u16,
    size: usize,
    gso: bool,
    rate: u64,
    start: Instant,
    duration: Duration,
    sent: &AtomicU64,
    errors: &AtomicU64,
) -> Result<usize, String> {
    let mut refused = None;
    let mut segs = if gso { gso_segments(size) } else { 1 };
    if segs > 1
        && let Err(e) = netdoctor_sys::sockopt::set_int(
            s,
            libc::SOL_UDP,
            libc::UDP_SEGMENT,
            size as libc::c_int,
        )
    {
        refused = Some(format!(
            "GSO (UDP_SEGMENT) refused: {}; one datagram per message",
            netdoctor_sys::os_error::describe(&e)
        ));
        segs = 1;
    }
    let mut bufs = message_buffers(size, segs, thread, run);
    let mut seq = 0u64;
    loop {
        let el = start.elapsed();
        if el >= duration {
            break;
        }
        let mut n = bufs.len() * segs;
        if rate > 0 {
            let due = (el.as_secs_f64() * rate as f64) as u64 + 1;
            if seq >= due {
                let wait =
                    Duration::from_secs_f64((seq + 1) as f64 / rate as f64).saturating_sub(el);
                std::thread::sleep(wait.min(Duration::from_millis(50)));
                continue;
            }
            n = n.min((due - seq) as usize);
        }
        // Number the datagrams; the last message may hold fewer than `segs`.
        let mut refs: Vec<&[u8]> = Vec::with_capacity(n.div_ceil(segs));
        let mut k = 0usize;
        for b in bufs.iter_mut() {
            if k == n {
                break;
            }
            let take = (n - k).min(segs);
            for d in b.chunks_mut(size).take(take) {
                d[8..16].copy_from_slice(&(seq + k as u64).to_be_bytes());
                k += 1;
            }
            refs.push(&b[..take * size]);
        }
        // Datagrams in the messages, in order (all full but perhaps the last).
        let in_first = |m: usize| (m * segs).min(n) as u64;
        match netdoctor_sys::mmsg::sendmmsg(s, &refs) {
            Ok(m) => {
                let k = in_first(m);
                seq += k;
                sent.fetch_add(k, Ordering::Relaxed);
            }
            // The route's device cannot checksum a GSO message (EIO), or the size does not fit
            // the path (EINVAL): send one datagram per message from here on.
            Err(e)
                if segs > 1
                    && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL))
                    && seq == 0 =>
            {
                let _ = netdoctor_sys::sockopt::set_int(s, libc::SOL_UDP, libc::UDP_SEGMENT, 0);
                refused = Some(format!(
                    "GSO (UDP_SEGMENT) send refused: {}; one datagram per message",
                    netdoctor_sys::os_error::describe(&e)
                ));
                segs = 1;
                bufs = message_buffers(size, segs, thread, run);
            }
            Err(_) => {
                errors.fetch_add(1, Ordering::Relaxed);
                std::thread::yield_now();
            }
        }
    }
    match refused {
        Some(why) => Err(why),
        None => Ok(segs),
    }
}

/// The message buffers of one thread: [`BATCH`] messages of one datagram, or [`GSO_BATCH`] of
/// `segs` datagrams back to back, each datagram with its header (the sequence is filled in per
/// send).
fn message_buffers(size: usize, segs: usize, thread: u16, run: u16) -> Vec<Vec<u8>> {
    let count = if segs > 1 { GSO_BATCH } else { BATCH };
    let mut bufs = vec![vec![0u8; size * segs]; count];
    for b in &mut bufs {
        for d in b.chunks_mut(size) {
            d[..4].copy_from_slice(MAGIC);
            d[4..6].copy_from_slice(&thread.to_be_bytes());
            d[6..8].copy_from_slice(&run.to_be_bytes());
        }
    }
    bufs
}

/// The receiving side.
#[derive(Debug, Clone)]
pub struct RecvConfig {
    pub bind: SocketAddr,
    /// Sockets (and threads) sharing the port with `SO_REUSEPORT`.
    pub threads: u32,
    /// Receive at most this long.
    pub duration: Duration,
    /// After the first datagram, stop when nothing came for this long.
    pub idle: Duration,
    /// Socket receive buffer to ask for (the kernel caps it at `net.core.rmem_max`).
    pub rcvbuf: usize,
}

/// A counter that grew during the receive, with what it means.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Evidence {
    pub counter: String,
    pub delta: u64,
    pub meaning: String,
}

/// What the receiver saw.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RecvReport {
    pub bind: String,
    pub threads: u32,
    /// First to last datagram.
    pub seconds: f64,
    pub received: u64,
    pub bytes: u64,
    pub pps: f64,
    /// Highest sequence + 1 per sender thread, summed.
    pub sent: u64,
    pub lost: u64,
    pub lost_percent: f64,
    /// Where the losses went, from the counters.
    pub evidence: Vec<Evidence>,
    /// Losses no counter here explains (before this host: the sender's queue, the path).
    pub unexplained: u64,
    pub cpu_seconds: f64,
    pub notes: Vec<String>,
}

#[derive(Default)]
struct Tally {
    received: u64,
    bytes: u64,
    max_seq: HashMap<(u16, u16), u64>,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Binds, calls `ready` with the bound address, and receives until the duration ends or the
/// sender went quiet.
pub fn receive(cfg: &RecvConfig, ready: &mut dyn FnMut(SocketAddr)) -> Result<RecvReport, Error> {
    let threads = cfg.threads.clamp(1, 64);
    let mut socks = Vec::new();
    let mut addr = cfg.bind;
    for _ in 0..threads {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )
        .map_err(|e| Error::io("socket", e))?;
        s.set_reuse_port(true)
            .map_err(|e| Error::io("SO_REUSEPORT", e))?;
        let _ = s.set_recv_buffer_size(cfg.rcvbuf);
        s.bind(&addr.into())
            .map_err(|e| Error::io(format!("bind UDP {addr}"), e))?;
        let u: UdpSocket = s.into();
        addr = u.local_addr().map_err(|e| Error::io("local address", e))?;
        u.set_read_timeout(Some(Duration::from_millis(100))).ok();
        socks.push(u);
    }
    let snmp0 = counters::snapshot().ok();
    let soft0 = softnet::read().ok();
    let dev0 = netdev::read().ok();
    let cpu0 = netdoctor_sys::rusage::own_cpu_time();
    ready(addr);
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let last_any = Arc::new(AtomicU64::new(0));
    let (duration, idle) = (cfg.duration, cfg.idle);
    let handles: Vec<_> = socks
        .into_iter()
        .map(|s| {
            let (stop, last_any) = (stop.clone(), last_any.clone());
            std::thread::spawn(move || recv_thread(&s, start, &stop, &last_any))
        })
        .collect();
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let el = start.elapsed();
        let last = last_any.load(Ordering::Relaxed);
        if el >= duration || (last > 0 && el.saturating_sub(Duration::from_micros(last)) >= idle) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = Tally::default();
    for h in handles {
        let t = h.join().unwrap_or_default();
        total.received += t.received;
        total.bytes += t.bytes;
        for (k, v) in t.max_seq {
            let e = total.max_seq.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
        total.first = match (total.first, t.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        total.last = total.last.max(t.last);
    }
    let cpu = (netdoctor_sys::rusage::own_cpu_time() - cpu0).as_secs_f64();
    let sent: u64 = total.max_seq.values().map(|m| m + 1).sum();
    let lost = sent.saturating_sub(total.received);
    let seconds = match (total.first, total.last) {
        (Some(a), Some(b)) => (b - a).as_secs_f64().max(1e-6),
        _ => 0.0,
    };
    let mut notes = Vec::new();
    let mut evidence = Vec::new();
    match (snmp0, counters::snapshot().ok()) {
        (Some(a), Some(b)) => {
            for (name, meaning) in [
                (
                    "Udp.RcvbufErrors",
                    "a socket's receive buffer was full: the reader fell behind (more reader threads, a larger SO_RCVBUF / net.core.rmem_max)",
                ),
                (
                    "Udp.InErrors",
                    "datagrams dropped on receive (includes the receive-buffer drops)",
                ),
                ("Udp.NoPorts", "datagrams to a port nobody listened on"),
                (
                    "Udp6.RcvbufErrors",
                    "a socket's receive buffer was full (IPv6)",
                ),
                ("Ip.InDiscards", "IP dropped packets on input"),
            ] {
                let d = b
                    .get(name)
                    .unwrap_or(0)
                    .saturating_sub(a.get(name).unwrap_or(0));
                if d > 0 {
                    evidence.push(Evidence {
                        counter: name.into(),
                        delta: d,
                        meaning: meaning.into(),
                    });
                }
            }
        }
        _ => notes.push(
            "kernel counters (/proc/net/snmp) unreadable: receive-buffer drops not checked".into(),
        ),
    }
    match (soft0, softnet::read().ok()) {
        (Some(a), Some(b)) => {
            let (ta, tb) = (softnet::totals(&a), softnet::totals(&b));
            if tb.1 > ta.1 {
                evidence.push(Evidence {
                    counter: "softnet.dropped".into(),
                    delta: tb.1 - ta.1,
                    meaning:
                        "a CPU's input backlog was full (net.core.netdev_max_backlog); host-wide"
                            .into(),
                });
            }
            if tb.2 > ta.2 {
                evidence.push(Evidence { counter: "softnet.time_squeeze".into(), delta: tb.2 - ta.2, meaning: "the receive softirq ran out of budget with packets left (net.core.netdev_budget); host-wide, not a drop by itself".into() });
            }
        }
        _ => notes.push("/proc/net/softnet_stat unreadable: backlog drops not checked".into()),
    }
    match (dev0, netdev::read().ok()) {
        (Some(a), Some(b)) => {
            for d in netdev::delta(&a, &b) {
                for (name, before, after) in d.grown_errors() {
                    evidence.push(Evidence {
                        counter: format!("{}.{name}", d.after.name),
                        delta: after - before,
                        meaning: "the interface dropped or failed packets".into(),
                    });
                }
            }
        }
        _ => notes.push("interface statistics unreadable: NIC drops not checked".into()),
    }
    // What the counters explain: receive-buffer drops and backlog drops (InErrors includes
    // RcvbufErrors, so it is not added again; squeezes are not drops).
    let explained: u64 = evidence
        .iter()
        .filter(|e| {
            e.counter == "Udp.RcvbufErrors"
                || e.counter == "Udp6.RcvbufErrors"
                || e.counter == "softnet.dropped"
                || e.counter.ends_with(".rx_drop")
        })
        .map(|e| e.delta)
        .sum();
    if total.received == 0 {
        notes.push(format!("nothing arrived on {addr} in {duration:?}"));
    }
    Ok(RecvReport {
        bind: addr.to_string(),
        threads,
        seconds,
        received: total.received,
        bytes: total.bytes,
        pps: if seconds > 0.0 {
            total.received as f64 / seconds
        } else {
            0.0
        },
        sent,
        lost,
        lost_percent: if sent > 0 {
            100.0 * lost as f64 / sent as f64
        } else {
            0.0
        },
        unexplained: lost.saturating_sub(explained),
        evidence,
        cpu_seconds: cpu,
        notes,
    })
}

fn recv_thread(s: &UdpSocket, start: Instant, stop: &AtomicBool, last_any: &AtomicU64) -> Tally {
    let mut t = Tally::default();
    let mut bufs = vec![vec![0u8; 2048]; BATCH];
    let mut lens = vec![0usize; BATCH];
    while !stop.load(Ordering::Relaxed) {
        let n = match netdoctor_sys::mmsg::recvmmsg(s, &mut bufs, &mut lens) {
            Ok(n) => n,
            Err(_) => continue,
        };
        if n == 0 {
            continue;
        }
        let now = Instant::now();
        t.first.get_or_insert(now);
        t.last = Some(now);
        last_any.store((now - start).as_micros() as u64, Ordering::Relaxed);
        for (b, &len) in bufs[..n].iter().zip(&lens[..n]) {
            if len < HEADER || &b[..4] != MAGIC {
                continue;
            }
            t.received += 1;
            t.bytes += len as u64;
            let thread = u16::from_be_bytes([b[4], b[5]]);
            let run = u16::from_be_bytes([b[6], b[7]]);
            let seq = u64::from_be_bytes(b[8..16].try_into().unwrap_or_default());
            let e = t.max_seq.entry((run, thread)).or_insert(0);
            *e = (*e).max(seq);
        }
    }
    t
}

impl SendReport {
    /// Text lines.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!(
            "sent {} datagrams of {} B in {:.2} s from {} thread(s): {:.0} packets/s ({}), {} send errors, {:.2} CPU s, {}",
            self.packets,
            self.size,
            self.seconds,
            self.threads,
            self.pps,
            crate::text::fmt_bits(self.bits_per_second),
            self.send_errors,
            self.cpu_seconds,
            if self.segments_per_message > 1 {
                format!("GSO {} datagrams per message", self.segments_per_message)
            } else {
                "one datagram per message".to_string()
            }
        )];
        for n in &self.notes {
            v.push(format!("  note: {n}"));
        }
        v
    }
}

impl RecvReport {
    /// Text lines: the count, then where the losses went.
    pub fn lines(&self) -> Vec<String> {
        let mut v = vec![format!(
            "received {} of {} datagrams ({:.2} % lost) in {:.2} s: {:.0} packets/s on {} socket(s), {:.2} CPU s",
            self.received,
            self.sent,
            self.lost_percent,
            self.seconds,
            self.pps,
            self.threads,
            self.cpu_seconds
        )];
        for e in &self.evidence {
            v.push(format!("  {} +{}: {}", e.counter, e.delta, e.meaning));
        }
        if self.lost > 0 {
            v.push(format!(
                "  {} lost datagrams not explained by this host's counters: lost before it (the sender's socket or queue, the path)",
                self.unexplained
            ));
        }
        for n in &self.notes {
            v.push(format!("  note: {n}"));
        }
        v
    }
}
