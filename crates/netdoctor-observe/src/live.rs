//! Live packet capture on an AF_PACKET socket with a TPACKET_V3 ring, hand-written.
//!
//! Why by hand: no crate gives a TPACKET_V3 memory-mapped ring *with* a custom classic-BPF
//! filter and the kernel's drop statistics without linking libpcap (the `pcap` crate needs
//! libpcap-dev at build time and at run time; `afpacket`-style crates stop at plain sockets or
//! V2 rings without filters or statistics). The whole thing is a few syscalls:
//!
//! 1. `socket(AF_PACKET, SOCK_DGRAM, 0)`: protocol 0 means the socket receives nothing yet;
//!    SOCK_DGRAM ("cooked") means data starts at the network header on every interface, so the
//!    packets are [`LinkType::Raw`] whatever the device.
//! 2. `SO_ATTACH_FILTER` with a classic BPF program: IPv4/IPv6 TCP with source or destination
//!    port == the configured port, IPv4 non-first fragments dropped, accepted packets cut to the
//!    snap length (the program's return value). The ethertype comes from the SKF_AD_PROTOCOL
//!    ancillary load because a cooked socket's data has no link header.
//! 3. `PACKET_VERSION = TPACKET_V3`, `PACKET_RX_RING` (32 MiB by default, see [`ring_geometry`];
//!    [`LiveCapture::open_with_ring`] takes another size; 10 ms block timeout), `mmap` of the
//!    ring. The whole ring is mapped at once and counts in the process's RSS.
//! 4. `bind` with `ETH_P_ALL` (and an interface index, or 0 for all): only now do packets arrive,
//!    already filtered, so nothing unfiltered can leak in.
//!
//! Reading: the kernel hands over whole blocks (`block_status & TP_STATUS_USER`); each packet has
//! a `tpacket3_hdr` with a kernel timestamp (`tp_sec`/`tp_nsec`) followed by a `sockaddr_ll`.
//! On loopback devices every packet passes the tap twice (once outgoing, once incoming), so
//! outgoing copies are dropped there, as libpcap does (by the filter, in the kernel, before
//! they are copied into the ring; the reader skips any that still arrive); on other devices
//! both directions are kept. The reader wakes at most about every 40 ms while the ring is
//! lightly used ([`pause::COALESCE`]), and at once on a [`Wake`], and reads each packet in place in
//! the ring.
//! Drops come from `getsockopt(PACKET_STATISTICS)` (`tp_drops`; `tp_freeze_q_cnt` counts how often
//! the ring was full).
//!
//! `unsafe` is confined to the [`sys`] wrappers and to the two views into the ring
//! ([`Ring::status`], [`Ring::block`]), each with its `// SAFETY:` argument.
//!
//! The socket setup, the ring and its reader loop stay together (the loop must see the ring's
//! blocks); the filter program is in `live/filter.rs`, the length of the reader's pause
//! between batches (a pure function) in `live/pause.rs`.

use crate::error::sys_error;
use crate::{ObserveError, PacketSource, SourceSummary};
use netdoctor_core::{LinkType, RawPacket};
pub use netdoctor_sys::poll::Wake;
use std::ops::ControlFlow;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Default ring size: 32 MiB (about half a second of a busy loopback at snap length 256).
pub const DEFAULT_RING_BYTES: usize = 32 << 20;
/// Smallest ring accepted: four of the smallest blocks.
pub const MIN_RING_BYTES: usize = 4 * MIN_BLOCK as usize;
/// Block sizes: powers of two between these; a block holds whole packets, so the smallest one
/// is larger than the largest snap length (65535) plus headers.
const MIN_BLOCK: u32 = 128 << 10;
/// Smallest block for a short snap length ([`ring_geometry_for`]).
pub const MIN_SMALL_BLOCK: u32 = 16 << 10;
const MAX_BLOCK: u32 = 4 << 20;
/// Blocks aimed at: a block is handed over when full or after [`BLOCK_TIMEOUT_MS`], so at low
/// rates each block holds about that long of traffic, and the number of blocks is how long the
/// reader may be away before the kernel drops.
const TARGET_BLOCKS: usize = 32;
const FRAME_SIZE: u32 = 2048;
/// A block is handed to user space at the latest this long after its first packet.
pub(super) const BLOCK_TIMEOUT_MS: u32 = 10;
/// Longest wait in poll(), so `stop` is noticed quickly.
const POLL_MS: i32 = 50;
/// After `stop`, keep reading this long so the partly filled block retires and is read.
const DRAIN: Duration = Duration::from_millis(4 * BLOCK_TIMEOUT_MS as u64 + 20);

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_LOOPBACK: u16 = 772;
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where the `sockaddr_ll` follows the header.
const TPACKET3_HDRLEN: usize = 48;

/// Block size and count for a ring of about `ring_bytes` (rounded down to whole blocks, at
/// least [`MIN_RING_BYTES`]): blocks of a power-of-two size between 128 KiB and 4 MiB, about
/// 32 of them (32 MiB → 32 × 1 MiB, 4 MiB → 32 × 128 KiB, 1 MiB → 8 × 128 KiB).
pub fn ring_geometry(ring_bytes: usize) -> (u32, u32) {
    ring_geometry_for(ring_bytes, 65_535)
}

/// [`ring_geometry`] for packets cut to `snaplen`: the smallest block only has to hold one
/// such packet with its headers (at least [`MIN_SMALL_BLOCK`]), so a small ring still has
/// about 32 blocks (2 MiB at snap length 256 → 32 × 64 KiB), which is how long the reader may
/// be away at low rates before the kernel drops (a block is handed over after 10 ms).
pub fn ring_geometry_for(ring_bytes: usize, snaplen: u32) -> (u32, u32) {
    let min_block = (snaplen as usize + 256)
        .next_power_of_two()
        .clamp(MIN_SMALL_BLOCK as usize, MIN_BLOCK as usize);
    let bytes = ring_bytes.max(4 * min_block);
    let want = (bytes / TARGET_BLOCKS).clamp(min_block, MAX_BLOCK as usize);
    // Largest power of two not above `want`.
    let block = 1usize << (usize::BITS - 1 - want.leading_zeros());
    let blocks = (bytes / block).min(u32::MAX as usize);
    (block as u32, blocks as u32)
}

/// What to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveConfig {
    /// TCP port; packets with this source or destination port are kept.
    pub port: u16,
    /// Bytes kept per packet, from the IP header on (default 256: headers plus the start of an
    /// HTTP message). 0 means 65535.
    pub snaplen: u32,
    /// Stop after this many packets.
    pub max_packets: Option<u64>,
    /// Interface name; `None` captures on all interfaces.
    pub interface: Option<String>,
}

impl LiveConfig {
    /// Port `port` on all interfaces, snap length 256, no packet limit.
    pub fn new(port: u16) -> LiveConfig {
        LiveConfig {
            port,
            snaplen: 256,
            max_packets: None,
            interface: None,
        }
    }
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig::new(0)
    }
}

/// An open, filtered, capturing AF_PACKET socket with its ring.
pub struct LiveCapture {
    // Field order: the ring is unmapped before the socket closes.
    ring: Ring,
    fd: OwnedFd,
    next_block: usize,
    frames: u64,
    /// Outgoing copies on a loopback device that reached the ring (the filter rejects them;
    /// a kernel that ignored that part of the filter would show here).
    skipped_copies: u64,
    /// Packets with a timestamp up to this are skipped ([`skip_through`](Self::skip_through)).
    skip_through: Option<i64>,
    drops: u64,
    freezes: u64,
    max_packets: Option<u64>,
    what: String,
    /// Set by [`set_wake`](Self::set_wake): the reader waits on it beside the socket, so a
    /// `stop` that comes with a [`Wake::wake`] is seen at once and the waits can be long: an
    /// idle capture wakes about once a second ([`IDLE_POLL`]) rather than 20 times
    /// ([`POLL_MS`]); each wake-up is a context switch on a possibly idle CPU.
    wake: Option<Wake>,
}

/// Longest wait in poll() with a [`Wake`]: the stop is then signalled, this only bounds a
/// stop set without a wake.
pub const IDLE_POLL: Duration = Duration::from_secs(1);

impl LiveCapture {
    /// Opens the socket, attaches the filter and the ring and binds it. The socket is capturing
    /// when this returns: the caller may start traffic right after (that is the ready signal).
    /// The ring is [`DEFAULT_RING_BYTES`].
    pub fn open(cfg: &LiveConfig) -> Result<LiveCapture, ObserveError> {
        LiveCapture::open_with_ring(cfg, DEFAULT_RING_BYTES)
    }

    /// Like [`open`](Self::open) with a ring of about `ring_bytes` (see [`ring_geometry`]):
    /// smaller rings cost less memory and drop packets sooner when the reader falls behind.
    pub fn open_with_ring(
        cfg: &LiveConfig,
        ring_bytes: usize,
    ) -> Result<LiveCapture, ObserveError> {
        let snaplen = match cfg.snaplen {
            0 => 65_535,
            n => n.min(MIN_BLOCK / 2),
        };
        let (block_size, block_nr) = ring_geometry_for(ring_bytes, snaplen);
        LiveCapture::open_with_geometry(cfg, block_size, block_nr)
    }

    /// Like [`open_with_ring`](Self::open_with_ring) with the ring's blocks given: `blocks`
    /// blocks of `block_size` bytes (a power of two, at least one packet at the snap length;
    /// see [`ring_geometry_for`]). A caller that grows a ring keeps the block size and adds
    /// blocks: at rates where blocks are handed over by their timeout (10 ms) rather than
    /// full, larger blocks hold no more time, more blocks do.
    pub fn open_with_geometry(
        cfg: &LiveConfig,
        block_size: u32,
        block_nr: u32,
    ) -> Result<LiveCapture, ObserveError> {
        let where_ = cfg.interface.as_deref().unwrap_or("all interfaces");
        let what = format!("tcp port {} on {where_}", cfg.port);
        let fd = sys::packet_socket().map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => ObserveError::NeedsCapNetRaw,
            _ => sys_error("open packet socket", &e),
        })?;
        let ifindex = match &cfg.interface {
            None => 0,
            Some(name) => sys::if_index(name)
                .map_err(|e| sys_error(format!("find capture interface {name}"), &e))?,
        };
        let snaplen = match cfg.snaplen {
            0 => 65_535,
            n => n.min(MIN_BLOCK / 2),
        };
        // At least the smallest block that holds one packet at the snap length.
        let block_size = block_size
            .max(ring_geometry_for(1, snaplen).0)
            .next_power_of_two();
        let block_nr = block_nr.max(4);
        let filter = port_filter(cfg.port, snaplen);
        sys::attach_filter(&fd, &filter)
            .map_err(|e| sys_error(format!("attach BPF filter for {what}"), &e))?;
        sys::set_tpacket_v3(&fd).map_err(|e| sys_error("set PACKET_VERSION TPACKET_V3", &e))?;
        let req = sys::TpacketReq3 {
            tp_block_size: block_size,
            tp_block_nr: block_nr,
            tp_frame_size: FRAME_SIZE,
            tp_frame_nr: block_size / FRAME_SIZE * block_nr,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        sys::set_rx_ring(&fd, &req).map_err(|e| {
            sys_error(
                format!("set up PACKET_RX_RING ({block_nr} blocks of {block_size} bytes)"),
                &e,
            )
        })?;
        let len = (block_size as usize) * (block_nr as usize);
        let ptr = sys::mmap_ring(&fd, len)
            .map_err(|e| sys_error(format!("mmap packet ring of {len} bytes"), &e))?;
        let ring = Ring {
            ptr,
            len,
            block_size: block_size as usize,
            blocks: block_nr as usize,
        };
        sys::bind_all(&fd, ifindex)
            .map_err(|e| sys_error(format!("bind packet socket for {what}"), &e))?;
        Ok(LiveCapture {
            ring,
            fd,
            next_block: 0,
            frames: 0,
            skipped_copies: 0,
            skip_through: None,
            drops: 0,
            freezes: 0,
            max_packets: cfg.max_packets,
            what,
            wake: None,
        })
    }

    /// Joins the PACKET_FANOUT group `group` of this network namespace, hashing by flow
    /// (`PACKET_FANOUT_HASH`, symmetric: both directions of a connection go to one socket):
    /// the group's sockets then share the packets instead of each getting all of them. See
    /// [`crate::fanout`].
    /// `group` `None` creates a group with an id the kernel picks (unique in the namespace,
    /// so another process's group is never joined by chance) and returns that id.
    pub fn join_fanout(&self, group: Option<u16>) -> Result<u16, ObserveError> {
        sys::join_fanout(&self.fd, group)
            .map_err(|e| sys_error(format!("join a PACKET_FANOUT group for {}", self.what), &e))
    }

    /// The link type of the packets it yields: always [`LinkType::Raw`] (cooked socket).
    pub fn link_type(&self) -> LinkType {
        LinkType::Raw
    }

    /// Stops the socket taking packets (a filter that rejects every packet) without closing
    /// it: what is in the ring can still be read. For a hand-over to a new socket without a
    /// gap ([`crate::fanout::LiveRings::hand_over`]).
    pub fn stop_intake(&self) -> Result<(), ObserveError> {
        let reject = [libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: 0,
        }];
        sys::attach_filter(&self.fd, &reject)
            .map_err(|e| sys_error(format!("stop the capture of {}", self.what), &e))
    }

    /// Waits on `wake` beside the socket from now on (see [`Wake`]).
    pub fn set_wake(&mut self, wake: &Wake) {
        self.wake = Some(wake.clone());
    }

    /// Waits up to `timeout` for a block (when `socket`) or a wake-up, whichever comes first;
    /// without a [`Wake`], a plain poll of the socket or a sleep.
    fn wait(&self, socket: bool, timeout: Duration) -> Result<(), ObserveError> {
        let Some(w) = &self.wake else {
            if socket {
                let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
                return sys::poll_in(&self.fd, ms)
                    .map_err(|e| sys_error(format!("poll packet socket for {}", self.what), &e));
            }
            std::thread::sleep(timeout);
            return Ok(());
        };
        let mut fds = [
            w.pollfd(),
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            },
        ];
        let n = if socket { 2 } else { 1 };
        netdoctor_sys::poll::wait_any(&mut fds[..n], timeout)
            .map_err(|e| sys_error(format!("poll packet socket for {}", self.what), &e))?;
        if fds[0].revents != 0 {
            w.clear();
        }
        Ok(())
    }

    /// Skips the packets stamped at or before `ts_ns`, from the start of the ring on: the ones
    /// a socket closed after this one opened already gave. The kernel hands each packet to the
    /// newest socket first, so a packet both got is stamped here no later than there.
    pub fn skip_through(&mut self, ts_ns: i64) {
        self.skip_through = Some(ts_ns);
    }

    /// The kernel's drops since the socket opened, as of the end of the last
    /// [`run_flow`](Self::run_flow).
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// Outgoing copies of loopback packets that reached the ring and were skipped by the
    /// reader: 0 while the kernel applies the filter's loopback rule ([`port_filter`]).
    pub fn skipped_copies(&self) -> u64 {
        self.skipped_copies
    }

    /// Captures until `stop` is set (noticed within 50 ms, or at once with a [`Wake`]; packets
    /// already in the ring are still read) or `max_packets` packets were seen, calling `f` for
    /// each packet.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>),
    ) -> Result<SourceSummary, ObserveError> {
        self.run_flow(stop, &mut |p| {
            f(p);
            ControlFlow::Continue(())
        })
    }

    /// Like [`run`](Self::run), and `f` may end the capture.
    pub fn run_flow(
        &mut self,
        stop: &AtomicBool,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> Result<SourceSummary, ObserveError> {
        let start_frames = self.frames;
        let (start_drops, start_freezes) = (self.drops, self.freezes);
        let mut drain_until: Option<Instant> = None;
        // Blocks read after the drain's end: only ones the kernel had already handed over, at
        // most one lap of the ring.
        let mut late = 0;
        // The reader comes back from a wait (the call's start: the window's end was handled
        // meanwhile; a poll): how many blocks wait for it then.
        let mut back = true;
        let mut peak_ready = 0usize;
        // Blocks read since the reader last came back from a wait, and when that was.
        let mut batch = 0usize;
        let mut woke = Instant::now();
        // The shortest time a block of the batch (or of the last one that said) took to fill
        // at its own rate (see [`pause::COALESCE`]), and the same for the batch being read.
        let mut full_ns: Option<u64> = None;
        let mut batch_ns: Option<u64> = None;
        loop {
            if self.max_packets.is_some_and(|m| self.frames >= m) {
                break;
            }
            let idx = self.next_block;
            let ready = self.ring.status(idx).load(Ordering::Acquire) & TP_STATUS_USER != 0;
            // Checked before every block too, so a busy ring cannot keep the loop alive. A
            // thread that gets the CPU back only after the drain's end (a busy machine) still
            // reads the blocks retired meanwhile: they hold the capture's last packets.
            if stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                if now >= *drain_until.get_or_insert(now + DRAIN) {
                    if !ready || late >= self.ring.blocks {
                        break;
                    }
                    late += 1;
                }
            }
            if ready {
                if back {
                    back = false;
                    peak_ready = peak_ready.max(self.ready_blocks(idx));
                }
                let (flow, fill) = self.walk_block(idx, f);
                if let Some(ns) = fill {
                    batch_ns = Some(batch_ns.map_or(ns, |m| m.min(ns)));
                }
                self.ring
                    .status(idx)
                    .store(TP_STATUS_KERNEL, Ordering::Release);
                self.next_block = (idx + 1) % self.ring.blocks;
                batch += 1;
                if flow.is_break() {
                    break;
                }
                continue;
            }
            back = true;
            let limit = (self.ring.blocks / COALESCE_SHARE).max(1);
            full_ns = batch_ns.take().or(full_ns);
            if drain_until.is_none()
                && batch > 0
                && batch <= self.ring.blocks / 2
                && !stop.load(Ordering::Relaxed)
                && let Some(rest) = pause(batch, limit, full_ns).checked_sub(woke.elapsed())
            {
                // In slices, looking at the ring between them: a pause misjudged (a burst that
                // began in a block of one packet, or late in a slow block) ends once `limit`
                // blocks wait.
                let until = Instant::now() + rest;
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    self.wait(false, left.min(PAUSE_SLICE))?;
                    if stop.load(Ordering::Relaxed) || self.ready_blocks(self.next_block) >= limit {
                        break;
                    }
                }
                batch = 0;
                woke = Instant::now();
                continue;
            }
            let timeout = match (drain_until.is_some(), self.wake.is_some()) {
                (true, _) => Duration::from_millis(10),
                (false, true) => IDLE_POLL,
                (false, false) => Duration::from_millis(POLL_MS as u64),
            };
            self.wait(true, timeout)?;
            batch = 0;
            // Caught up: what comes next is judged afresh.
            full_ns = None;
            woke = Instant::now();
        }
        let stats = sys::packet_stats(&self.fd)
            .map_err(|e| sys_error("getsockopt PACKET_STATISTICS", &e))?;
        self.drops += u64::from(stats.tp_drops);
        self.freezes += u64::from(stats.tp_freeze_q_cnt);
        let mut warnings = Vec::new();
        // Drops of this call (a long-running caller calls once per window).
        if self.drops > start_drops {
            warnings.push(format!(
                "the kernel dropped {} packets of {} (capture ring full {} times): the capture is incomplete",
                self.drops - start_drops,
                self.what,
                self.freezes - start_freezes
            ));
        }
        let ring_fill = if self.drops > start_drops {
            1.0
        } else {
            peak_ready as f64 / self.ring.blocks as f64
        };
        Ok(SourceSummary {
            packets: self.frames - start_frames,
            drops: self.drops,
            ring_fill,
            warnings,
        })
    }

    /// Blocks handed to user space in a row from `idx` (status words only, at most one lap).
    fn ready_blocks(&self, idx: usize) -> usize {
        (0..self.ring.blocks)
            .take_while(|k| {
                let i = (idx + k) % self.ring.blocks;
                self.ring.status(i).load(Ordering::Acquire) & TP_STATUS_USER != 0
            })
            .count()
    }

    /// Hands every packet of user-owned block `idx` to `f`; also returns how long a whole block
    /// takes to fill at this block's rate: its first to last packet, scaled by the block's size
    /// over the bytes it holds (`None` under two packets).
    fn walk_block(
        &mut self,
        idx: usize,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> (ControlFlow<()>, Option<u64>) {
        let block = self.ring.block(idx);
        let u32_at = |o: usize| -> Option<u32> {
            let b = block.get(o..o + 4)?;
            Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u16_at = |o: usize| -> Option<u16> {
            let b = block.get(o..o + 2)?;
            Some(u16::from_ne_bytes([b[0], b[1]]))
        };
        // tpacket_block_desc: version, offset_to_priv, then tpacket_hdr_v1.
        let num_pkts = u32_at(12).unwrap_or(0);
        let mut off = u32_at(16).unwrap_or(0) as usize;
        // blk_len: the bytes in use, from the block's start.
        let used = u64::from(u32_at(20).unwrap_or(0)).max(1);
        let size = block.len() as u64;
        let (mut first, mut last) = (None, 0i64);
        let span = |first: Option<i64>, last: i64| {
            first.filter(|_| num_pkts > 1).map(|a| {
                let ns = u64::try_from(last - a).unwrap_or(0);
                u64::try_from(u128::from(ns) * u128::from(size) / u128::from(used))
                    .unwrap_or(u64::MAX)
            })
        };
        for _ in 0..num_pkts {
            if off == 0 || off >= block.len() {
                break;
            }
            let (Some(next), Some(sec), Some(nsec), Some(snap), Some(len), Some(net)) = (
                u32_at(off),
                u32_at(off + 4),
                u32_at(off + 8),
                u32_at(off + 12),
                u32_at(off + 16),
                u16_at(off + 26),
            ) else {
                break;
            };
            let sll = off + TPACKET3_HDRLEN;
            let hatype = u16_at(sll + 8).unwrap_or(0);
            let pkttype = block.get(sll + 10).copied().unwrap_or(0);
            let start = off + usize::from(net);
            let data = block.get(start..start + snap as usize);
            let copy = hatype == ARPHRD_LOOPBACK && pkttype == PACKET_OUTGOING;
            self.skipped_copies += u64::from(copy && data.is_some());
            let ts_ns = i64::from(sec) * 1_000_000_000 + i64::from(nsec);
            first.get_or_insert(ts_ns);
            last = ts_ns;
            let seen = match self.skip_through {
                Some(t) if ts_ns <= t => true,
                Some(_) => {
                    self.skip_through = None;
                    false
                }
                None => false,
            };
            if let Some(data) = data
                && !copy
                && !seen
            {
                self.frames += 1;
                let pkt = RawPacket {
                    frame: self.frames,
                    ts_ns,
                    link: LinkType::Raw,
                    data,
                    orig_len: len,
                };
                if f(&pkt).is_break() || self.max_packets.is_some_and(|m| self.frames >= m) {
                    return (ControlFlow::Break(()), span(first, last));
                }
            }
            if next == 0 {
                break;
            }
            off += next as usize;
        }
        (ControlFlow::Continue(()), span(first, last))
    }
}

/// A live capture and its stop flag as a [`PacketSource`].
pub struct LiveSource<'a> {
    pub capture: &'a mut LiveCapture,
    pub stop: &'a AtomicBool,
}

impl PacketSource for LiveSource<'_> {
    fn for_each_packet(
        &mut self,
        f: &mut dyn FnMut(&RawPacket<'_>) -> ControlFlow<()>,
    ) -> Result<SourceSummary, ObserveError> {
        self.capture.run_flow(self.stop, f)
    }
}

/// The mapped ring; unmapped on drop.
struct Ring {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    block_size: usize,
    blocks: usize,
}

// SAFETY: the mapping is owned by this value alone (no aliasing handles exist), so moving it to
// another thread is as safe as moving a Vec; access goes through &self/&mut self as usual.
unsafe impl Send for Ring {}

impl Ring {
    /// The `block_status` word of block `idx`, shared with the kernel.
    fn status(&self, idx: usize) -> &AtomicU32 {
        assert!(idx < self.blocks);
        // SAFETY: the block starts inside the mapping (idx < blocks, blocks * block_size == len),
        // block_status sits at offset 8 of tpacket_block_desc and is 4-byte aligned (blocks are
        // page aligned); the kernel updates it concurrently, hence the atomic view.
        unsafe { &*(self.ptr.as_ptr().add(idx * self.block_size + 8) as *const AtomicU32) }
    }

    /// The bytes of block `idx`. Only call while the block is user-owned (TP_STATUS_USER seen
    /// with Acquire ordering): the kernel does not write to it until it is handed back.
    fn block(&self, idx: usize) -> &[u8] {
        assert!(idx < self.blocks);
        // SAFETY: in bounds as in `status`; the block belongs to user space until its status is
        // reset to TP_STATUS_KERNEL, which happens only after this borrow ends (walk_block).
        unsafe {
            std::slice::from_raw_parts(
                self.ptr.as_ptr().add(idx * self.block_size),
                self.block_size,
            )
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        sys::munmap(self.ptr, self.len);
    }
}

/// The classic BPF program of every capture socket.
mod filter;
pub use filter::port_filter;

/// How long the reader pauses after a batch (the coalescing of wake-ups).
mod pause;
use pause::{COALESCE_SHARE, PAUSE_SLICE, pause};

/// Thin syscall wrappers; every `unsafe` block of the capture lives here.
mod sys;
