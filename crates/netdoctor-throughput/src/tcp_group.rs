//! TCP streams multiplexed on a few threads: non-blocking sockets and `poll(2)`, each stream
//! moved by one thread of its side, as iperf3 3.12 moves all of a side's streams in one thread
//! with `select()`.
//!
//! Why threads can be shared: on a 2-CPU machine, 4 streams made 8 busy data threads (4 per
//! side) that the scheduler moved between the CPUs (24–69 migrations in a 4 s test, iperf3
//! 0–15); sharing a thread per side (`-T 1`) cuts the migrations to ~0 and the syscalls per GB
//! by ~7 % (helper tput5, loaded machine). But on the quiet machine (session 10, `T=5
//! ROUNDS=4 PER_STREAM=1 bench/throughput-vs-iperf3.sh`, load ~2) one shared thread per side
//! was worse at 4 streams: veth 0.70× iperf3's Gbit/s at 1.37× its CPU per GB against 1.07× /
//! 1.20× with a thread per stream; loopback 1.29× / 0.83× against 2.38× / 0.56×. So the
//! default ([`threads_for`]) is a thread per stream, and `-T N` shares N threads among them.
//!
//! Each thread waits in `poll` for any of its streams to be writable (senders) or readable
//! (receivers), then the ready ones take turns, one block each per round, for up to [`BURST`]
//! rounds (iperf3 3.12's `iperf_send`: 10 rounds over its streams per `select`), rather than
//! a stream moving its 10 blocks before the next one's (session 11). On a loaded 2-CPU machine
//! (veth, 4 streams, `-T 1`, `perf record`, 3 runs each) this took the receiver's socket-backlog
//! work (`__release_sock`) from 0.028–0.036 to 0.019–0.023 CPU s/GB (iperf3 0.015–0.019), the
//! total staying within that machine's noise (0.56–0.62 s/GB, iperf3 0.57–0.58). A sender
//! ahead of its target rate is left out of the wait until its bytes are due. Every [`stream::SCHED_EVERY`] the thread records its scheduler times and
//! each sender's `TCP_INFO`, as the one-thread-per-stream writer did: a stream's "writer asleep"
//! is its thread's, which sleeps only in `poll` when every stream it moves is blocked (or
//! held back by its rate).
//!
//! With `zerocopy` (`-Z`, as `iperf3 -Z`) senders send from a memory file by reference
//! (`sendfile(2)` of a memfd holding the pattern); by default they `write` from a buffer, as
//! iperf3 and most applications do. On a veth pair, 4 streams, iperf3 against itself (helper tput7, loaded machine):
//! `-Z` took the client's CPU per GB from 0.114–0.131 to 0.070–0.084 s and the server's from
//! 0.109–0.121 to 0.072–0.086 s (the receiver copies from the sender's pages, which stay warm
//! in the cache instead of a fresh copy per write). `MSG_ZEROCOPY` was not taken: on loopback
//! and veth the kernel copies such pages anyway when it delivers them to a local socket
//! (`skb_orphan_frags_rx`), and adds a completion notification per send to read
//! (Documentation/networking/msg_zerocopy.rst, "Loopback"). Where `memfd_create` or
//! `sendfile` is not allowed (a seccomp filter, `EINVAL`/`ENOSYS`), a stream falls back to
//! copying. The send buffer fills and empties as with `write` (the pages count against
//! `SO_SNDBUF` as copied data does), but a sender that no longer copies drains a small send
//! buffer faster: in the `small-wmem` lab case (`tcp_wmem` 16 KB) sendfile moved 16.5 Gbit/s
//! and the report named no limit, where `write` moved 10.1 Gbit/s and named
//! `send_buffer_limited` (helper tput7). The test stands for an application's transfer, which
//! copies, so copying stays the default and sendfile is the opt-in that measures the path.
//!
//! Hand-written rather than mio: a level-triggered `poll` over a handful of sockets is a loop
//! of ~100 lines; mio's edge-triggered readiness would need each socket drained to `EAGAIN`
//! before the next wait, which is not how the streams take turns here.

use crate::stream::{self, AlignedBuf, Counters, LastRead, Running, StreamPlan};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Blocks moved on a ready stream per wake-up (iperf3 3.12's `multisend`).
pub const BURST: usize = 10;

/// How many threads a side runs for `streams` TCP streams by default: one per stream (see the
/// module docs for the quiet-machine figures that chose it over sharing). `_cpus` is kept for
/// the callers' sake: the measured choice did not depend on it on 2 CPUs.
pub fn threads_for(streams: usize, _cpus: usize) -> usize {
    streams.max(1)
}

/// A group's thread, shared by the [`Running`] streams it moves.
#[derive(Debug, Default)]
pub struct GroupThread {
    /// Streams the thread still moves.
    live: AtomicUsize,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl GroupThread {
    /// Joins the thread once it moves no stream any more (it then ends by itself).
    pub(crate) fn join_if_finished(&self) {
        if self.live.load(Ordering::Acquire) == 0 {
            let h = self.handle.lock().ok().and_then(|mut h| h.take());
            if let Some(h) = h {
                let _ = h.join();
            }
        }
    }
}

/// One stream inside a group's thread.
struct Member {
    plan: StreamPlan,
    sock: TcpStream,
    c: Arc<Counters>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    /// Sender: where the next write starts in the payload (after a partial write).
    off: usize,
    /// Sender: send with `sendfile` from the side's memfd (else `write` from its buffer).
    zerocopy: bool,
    last_read: Option<LastRead>,
    /// The socket failed or the peer closed it: the stream ends.
    ended: bool,
}

/// Starts the threads for a side's TCP streams (`threads` of them, at most one per stream;
/// `None`: [`threads_for`] the usable CPUs); the streams come back in the order given.
/// `zerocopy`: senders use `sendfile` from a memfd (see the module docs), else `write`.
/// `notsent_lowat`: senders' `TCP_NOTSENT_LOWAT` (see [`set_notsent_lowat`]); `None`: the
/// system's (`net.ipv4.tcp_notsent_lowat`, unlimited unless set).
pub fn start(
    socks: Vec<(StreamPlan, TcpStream)>,
    counting: Arc<AtomicBool>,
    threads: Option<usize>,
    zerocopy: bool,
    notsent_lowat: Option<u32>,
) -> std::io::Result<Vec<Running>> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = match threads {
        Some(t) => t.clamp(1, socks.len().max(1)),
        None => threads_for(socks.len(), cpus),
    };
    // One payload block for every sending thread of the side: it is only read, so the CPUs'
    // caches share one copy of it (a block per thread was 512 KB of source at 4 streams).
    let payload = socks
        .iter()
        .filter(|(p, _)| p.sender)
        .map(|(p, _)| p.blksize.max(1))
        .max()
        .map(|len| {
            let mut b = AlignedBuf::new(len);
            b.fill_payload();
            Arc::new(b)
        });
    // The same block in a memory file, for sendfile; none when it cannot be made (the
    // senders then copy).
    let file = payload
        .as_ref()
        .filter(|_| zerocopy)
        .and_then(|b| netdoctor_sys::sendfile::memfd_with(c"netdoctor-payload", b.slice()).ok())
        .map(Arc::new);
    let mut running = Vec::with_capacity(socks.len());
    let mut groups: Vec<Vec<Member>> = (0..n).map(|_| Vec::new()).collect();
    let shared: Vec<Arc<GroupThread>> = (0..n).map(|_| Arc::default()).collect();
    for (i, (plan, sock)) in socks.into_iter().enumerate() {
        sock.set_nonblocking(true)?;
        if let (true, Some(bytes)) = (plan.sender, notsent_lowat) {
            set_notsent_lowat(&sock, bytes)?;
        }
        let (c, stop, done) = (Arc::<Counters>::default(), Arc::default(), Arc::default());
        let g = i % n;
        running.push(Running::shared(
            plan,
            &sock,
            c.clone(),
            Arc::clone(&stop),
            Arc::clone(&done),
            shared[g].clone(),
        )?);
        groups[g].push(Member {
            plan,
            sock,
            c,
            stop,
            done,
            off: 0,
            zerocopy: file.is_some(),
            last_read: None,
            ended: false,
        });
    }
    for (k, (members, group)) in groups.into_iter().zip(shared).enumerate() {
        if members.is_empty() {
            continue;
        }
        group.live.store(members.len(), Ordering::Release);
        let (cnt, g, pay, f) = (
            counting.clone(),
            group.clone(),
            payload.clone(),
            file.clone(),
        );
        let h = std::thread::Builder::new()
            .name(format!("tcp-streams-{k}"))
            .spawn(move || run(members, pay.as_deref(), f.as_deref(), &cnt, &g))?;
        if let Ok(mut slot) = group.handle.lock() {
            *slot = Some(h);
        }
    }
    Ok(running)
}

/// Caps the bytes a sending socket holds that TCP has not sent yet (`TCP_NOTSENT_LOWAT`): the
/// socket reports writable, and takes more, only while fewer than `bytes` wait unsent. It does
/// not cap the congestion window or the bytes in flight, only the queue behind them.
///
/// Why it is offered (issue 22, helper tput, session 13): with the send buffer autotuned to
/// 4 MB, the writer keeps up to 4 MB queued ahead of TCP, and every block is copied into
/// pages that are cold again by the time the receiver copies them out. On a veth pair, one
/// stream, load 4–9 on 2 CPUs, in the same run (`T=5`, three rounds): iperf3 0.264–0.291 CPU
/// s/GB (both ends), netdoctor 0.226–0.331, netdoctor with 256 KB 0.190–0.221 and 1 MB
/// 0.219–0.238, with 1.5–2× the Gbit/s and near no retransmits. Not the default: a writer held at
/// the mark sleeps in `poll` and, late to refill on a busy CPU, lets the connection idle
/// (tcp_info busy 70 % of a 4 s test in one such run): the look of `send_buffer_limited`,
/// whose rule reads a sleeping writer as one waiting for buffer space.
pub fn set_notsent_lowat(sock: &TcpStream, bytes: u32) -> std::io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    netdoctor_sys::sockopt::set_int(sock, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, v)
}

/// Lets a stream go: the thread no longer touches it (its socket's descriptor is closed here;
/// the [`Running`]'s second handle keeps the connection).
fn retire(m: Member, group: &GroupThread) {
    m.done.store(true, Ordering::Release);
    group.live.fetch_sub(1, Ordering::AcqRel);
}

/// A group's thread. `payload`: the side's shared block for the senders (`None` when the side
/// sends nothing), and `file` the same bytes in a memfd for `sendfile`; the receive buffer is
/// the thread's own, made only when it has a receiver.
fn run(
    mut members: Vec<Member>,
    payload: Option<&AlignedBuf>,
    file: Option<&File>,
    counting: &AtomicBool,
    group: &GroupThread,
) {
    let recv_len = members
        .iter()
        .filter(|m| !m.plan.sender)
        .map(|m| m.plan.blksize.max(stream::RECV_AT_MOST))
        .max();
    let mut recv_store = recv_len.map(AlignedBuf::new);
    let send_block: &[u8] = payload.map_or(&[], AlignedBuf::slice);
    let start = Instant::now();
    let mut last_sched = start;
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(members.len());
    let mut which: Vec<usize> = Vec::with_capacity(members.len());
    let mut ready: Vec<usize> = Vec::with_capacity(members.len());
    record(&mut members, false);
    loop {
        // Streams asked to stop, or ended, leave the group.
        let mut i = 0;
        while i < members.len() {
            if members[i].ended || members[i].stop.load(Ordering::Relaxed) {
                retire(members.swap_remove(i), group);
            } else {
                i += 1;
            }
        }
        if members.is_empty() {
            return;
        }
        if last_sched.elapsed() >= stream::SCHED_EVERY {
            last_sched = Instant::now();
            record(&mut members, true);
        }
        fds.clear();
        which.clear();
        let mut wait = stream::POLL;
        for (i, m) in members.iter().enumerate() {
            let events = if m.plan.sender {
                if let Some(d) =
                    stream::ahead_by(start, m.c.bytes.load(Ordering::Relaxed), m.plan.rate)
                {
                    wait = wait.min(d);
                    continue;
                }
                libc::POLLOUT
            } else {
                libc::POLLIN
            };
            fds.push(libc::pollfd {
                fd: m.sock.as_raw_fd(),
                events,
                revents: 0,
            });
            which.push(i);
        }
        match netdoctor_sys::poll::wait_any(&mut fds, wait) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(_) => {
                members.iter_mut().for_each(|m| m.ended = true);
                continue;
            }
        }
        // The ready streams take turns, one block each per round, up to BURST rounds (iperf3
        // 3.12's `iperf_send` order); a stream whose socket is full, empty, or ahead of its
        // rate sits out the rest of the wake-up.
        ready.clear();
        ready.extend(
            fds.iter()
                .zip(&which)
                .filter(|(p, _)| p.revents != 0)
                .map(|(_, &i)| i),
        );
        for _ in 0..BURST {
            if ready.is_empty() {
                break;
            }
            ready.retain(|&i| {
                let m = &mut members[i];
                match (m.plan.sender, recv_store.as_mut()) {
                    (true, _) => send_one(m, &send_block[..m.plan.blksize.max(1)], file, start),
                    (false, Some(r)) => recv_one(m, r.slice_mut(), counting),
                    (false, None) => false,
                }
            });
        }
    }
}

/// Every [`stream::SCHED_EVERY`]: the thread's scheduler times into each sender's counters, and
/// each sender's `TCP_INFO` (`tcp_info`: not at the start, where the old writer did not either).
fn record(members: &mut [Member], tcp_info: bool) {
    let sched = stream::thread_schedstat();
    for m in members.iter_mut().filter(|m| m.plan.sender) {
        if let Some((run, wait)) = sched {
            m.c.run_ns.store(run, Ordering::Relaxed);
            m.c.runq_ns.store(wait, Ordering::Relaxed);
        }
        if tcp_info {
            stream::read_tcp_info(&m.sock, &m.c, &mut m.last_read);
        }
    }
}

/// One write of the payload on a writable stream (the rest of the block after a partial one);
/// `true` when the stream may take another turn (the block went out whole and the stream is
/// not ahead of its rate). With `file` (the block in a memfd) and the stream's `zerocopy`,
/// `sendfile` sends the same bytes by reference.
fn send_one(m: &mut Member, buf: &[u8], file: Option<&File>, start: Instant) -> bool {
    let want = buf.len() - m.off;
    let r = match file.filter(|_| m.zerocopy) {
        Some(f) => {
            let r = netdoctor_sys::sendfile::sendfile(&m.sock, f, m.off as u64, want);
            if let Err(e) = &r
                && cannot_sendfile(e)
            {
                // Not allowed here: this stream copies from now on.
                m.zerocopy = false;
                return true;
            }
            r
        }
        None => (&m.sock).write(&buf[m.off..]),
    };
    let Some(n) = moved(m, r) else { return false };
    let sent = m.c.bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
    m.off = (m.off + n) % buf.len();
    n == want && stream::ahead_by(start, sent, m.plan.rate).is_none()
}

/// One read on a readable stream; `true` when it filled the buffer (more may be queued).
fn recv_one(m: &mut Member, buf: &mut [u8], counting: &AtomicBool) -> bool {
    let r = (&m.sock).read(buf);
    let Some(n) = moved(m, r) else { return false };
    if counting.load(Ordering::Relaxed) {
        m.c.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }
    n == buf.len()
}

/// `sendfile` is refused for this socket or file (not a failure of the connection).
fn cannot_sendfile(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM)
    )
}

/// What one read or write did: `Some(bytes)` to go on (0 after an interrupted call, which
/// ends the stream's turns as a short one), `None` to end its turns: the socket is full or empty, or
/// the stream ended (closed by the peer or failed: `m.ended`).
fn moved(m: &mut Member, r: std::io::Result<usize>) -> Option<usize> {
    match r {
        Ok(0) => {
            m.ended = true;
            None
        }
        Ok(n) => Some(n),
        Err(e) if e.kind() == ErrorKind::Interrupted => Some(0),
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(_) => {
            m.ended = true;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_runs_a_thread_per_stream_by_default() {
        assert_eq!(threads_for(4, 2), 4);
        assert_eq!(threads_for(1, 1), 1);
        assert_eq!(threads_for(4, 8), 4);
        assert_eq!(threads_for(8, 6), 8);
        assert_eq!(threads_for(0, 4), 1);
    }
}
