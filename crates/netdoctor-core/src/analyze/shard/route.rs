//! Which worker gets a frame: the connection's symmetric route hash read straight from the
//! frame ([`ipv4_route`], [`route_hash`]), and the owner of each hash bucket ([`Owners`]).
//! Apart from the reader's loop because it is the one piece a test can check alone: both
//! directions and both paths (the fast IPv4 one and `tcp_ends`) must give one route.

use super::super::flow::Endpoint;
use crate::packet::{LinkType, RawPacket};

/// Hash buckets of the connection key (2^BUCKET_BITS, of [`Owners`]).
pub(super) const BUCKET_BITS: u32 = 16;

/// Which worker owns each hash bucket of connection keys, set when the bucket is first seen to
/// the worker given the fewest packets lately (its count halves every round, so a worker whose
/// connections have ended takes new ones). A bucket keeps its worker for the whole run, so
/// both directions and every later packet of a connection go where its first went. Buckets,
/// not connections: the table is a fixed 128 KiB whatever the number of connections (two
/// connections in one bucket share a worker), and a lookup is one load.
pub(super) struct Owners {
    /// Per bucket, the owner's index, or [`Owners::NONE`].
    of: Box<[u16]>,
    /// Per worker, packets given lately.
    load: Vec<u32>,
    /// How much heavier worker 0's packets count, in eighths ([`READER_EIGHTHS`]).
    reader: u32,
}

/// Worker 0 is the reader, who also reads, routes and merges every packet: its packets count
/// this many eighths (8 = as any worker's), so it is given fewer connections (a third of them
/// on 2 workers when all start at once). Chosen by wall time on the bench capture (session
/// 16, 6–8 alternating rounds): 8 → 12 → 16 → 20 → 24 → 32 → 64 eighths gave -j 2 medians of
/// 0.39, 0.36, 0.34, 0.34, 0.37, 0.40, 0.43 s against -j 1's 0.64 s.
pub(super) const READER_EIGHTHS: u32 = 16;

/// [`READER_EIGHTHS`] when the reader also merges the file's in-order runs by timestamp (or
/// reorders frames): that merge is ~250 M instructions on the bench capture, all on the
/// reader, and its first touch of each frame waits for memory. Chosen by wall time on a VM
/// whose two vCPUs ran alike (session 20: two `-j 1` at once took a lone one's time), 5
/// alternating rounds each, `-j 1` 0.33 s: on the bench capture (57 runs merged) 16 → 24 → 28
/// → 32 → 36 → 40 → 48 → 64 eighths gave `-j 2` medians of 0.245, 0.228, 0.215, 0.213, 0.211,
/// 0.217, 0.230, 0.236 s; on the same frames sorted (file order, `-j 1` 0.29 s) 16 → 28 → 32
/// → 36 → 40 gave 0.197, 0.196, 0.203, 0.208, 0.211 s, so the file-order weight stays.
/// Since session 30 a start weight, on the heavy side (see [`READER_EIGHTHS_WALKING`]).
pub(super) const READER_EIGHTHS_MERGING: u32 = 16;

/// [`READER_EIGHTHS`] when the reader also walks the record headers a chunk ahead of the
/// merge (`CaptureFile::merge_walking`, every mapped pcap since session 21): the walk is the
/// first touch of every byte of the file, on the reader. Chosen by wall time in a quiet window
/// (session 22, load 1.2–1.6, nothing else running; `/work/notes/jw-sweep.sh`-style
/// alternating rounds, 9 each, bench capture of 1.8 M frames, `-j 1` 0.305–0.314 s): 32 → 40
/// → 48 → 56 → 64 → 72 eighths gave `-j 2` medians of 0.216, 0.209, 0.205, 0.197, 0.197,
/// 0.192 s; a second sweep on the final code 56 → 72 → 88 → 104 → 128 gave 0.187, 0.184,
/// 0.189, 0.196, 0.197 s. (Session 21's 56 came from perf samples per thread under load.)
/// Session 27, after the hot-path changes of sessions 24–26 (quiet, load 1.5, 15 alternating
/// rounds, `-j 1` 0.290 s; helper jscale's `ND_EIGHTHS` build): 40 → 48 → 56 → 72 eighths
/// gave 0.195, 0.182, 0.181, 0.185 s (an earlier 15 rounds: 48 0.181, 72 0.186), and the
/// reader's share of the CPU samples under load fell from 0.525 at 32 to 0.474 at 72: the
/// reader is now the lighter thread at 72, so 56.
/// Session 30: on this session's host 24 ran fastest (8/16/24/32/56/80 eighths: medians 0.34,
/// 0.28, 0.28, 0.30, 0.33, 0.35 s, `-j 1` 0.52 s), so a fixed weight is a guess about the
/// host. It is now where the reader starts, on the heavy side: [`super::balance`] moves the
/// reader's connections to a worker until the threads' CPU times meet, and cannot move them
/// back.
pub(super) const READER_EIGHTHS_WALKING: u32 = 16;

impl Owners {
    pub(super) const NONE: u16 = u16::MAX;

    pub(super) fn new(workers: usize) -> Owners {
        Owners::weighted(workers, READER_EIGHTHS)
    }

    /// Worker 0's packets counting `reader` eighths.
    pub(super) fn weighted(workers: usize, reader: u32) -> Owners {
        Owners {
            of: vec![Owners::NONE; 1 << BUCKET_BITS].into_boxed_slice(),
            load: vec![0; workers],
            reader,
        }
    }

    /// The worker of the connection whose key hashes to `h`, counting one packet to it.
    #[inline]
    pub(super) fn pick(&mut self, h: u64) -> usize {
        let slot = &mut self.of[(h >> (64 - BUCKET_BITS)) as usize];
        if *slot == Owners::NONE {
            // Worker 0 (the reader's own) counts its packets `reader` eighths heavier.
            let cost = |w: usize, l: u32| {
                (u64::from(l) + 1) * if w == 0 { u64::from(self.reader) } else { 8 }
            };
            let mut best = 0;
            for (w, l) in self.load.iter().enumerate() {
                if cost(w, *l) < cost(best, self.load[best]) {
                    best = w;
                }
            }
            *slot = best as u16;
        }
        let w = usize::from(*slot);
        self.load[w] += 1;
        w
    }

    /// The connections of `bucket` are worker `w`'s from now on ([`super::balance`]).
    pub(super) fn give(&mut self, bucket: usize, w: usize) {
        self.of[bucket] = w as u16;
    }

    /// How much heavier the reader's packets count for new connections, in eighths.
    pub(super) fn reader_weight(&self) -> u32 {
        self.reader
    }

    /// Sets [`Owners::reader_weight`] ([`super::balance`] measured the threads).
    pub(super) fn weigh_reader(&mut self, eighths: u32) {
        self.reader = eighths;
    }

    /// A round went: older packets weigh half.
    pub(super) fn age(&mut self) {
        for l in &mut self.load {
            *l /= 2;
        }
    }
}

/// The route hash of an untagged Ethernet frame carrying an unfragmented IPv4 TCP segment
/// with a 20-byte IP header (nearly every frame of a server capture), read straight from the
/// header bytes; `None` for any other frame, IP options included
/// ([`ShardedAnalyzer::other_route`] takes it). The same connection gets the same hash on
/// either path: both hash the endpoints' [`end_bits`]. The frame's first 38 bytes are read as
/// one array, so no byte costs a bounds check (session 23: this was ~55 instructions a frame
/// with the IP header's length read from the frame).
#[inline]
pub(super) fn ipv4_route(pkt: &RawPacket<'_>) -> Option<u64> {
    if pkt.link != LinkType::Ethernet {
        return None;
    }
    let h: &[u8; 38] = pkt.data.first_chunk()?;
    // EtherType IPv4, version 4 with no options; TCP; no fragment (more-fragments flag or
    // offset).
    let head = u32::from_be_bytes([h[12], h[13], h[14], 0]);
    let frag = u16::from_be_bytes([h[20], h[21]]) & 0x3fff;
    if head != 0x0800_4500 || h[23] != 6 || frag != 0 {
        return None;
    }
    let src = u32::from_be_bytes([h[26], h[27], h[28], h[29]]);
    let dst = u32::from_be_bytes([h[30], h[31], h[32], h[33]]);
    let sport = u16::from_be_bytes([h[34], h[35]]);
    let dport = u16::from_be_bytes([h[36], h[37]]);
    let v4 = |a: u32, port: u16| u64::from(a) << 16 | u64::from(port);
    Some(route_hash(v4(src, sport), v4(dst, dport)))
}

/// A frame [`ipv4_route`] took has port 53 at one end (DNS over TCP, read by the reader).
#[inline]
pub(super) fn port_53(d: &[u8]) -> bool {
    matches!(d.get(34..38), Some(&[a, b, c, e]) if (a == 0 && b == 53) || (c == 0 && e == 53))
}

/// An endpoint in 64 bits for [`route_hash`]: an IPv4 (v4-mapped) address and port exactly
/// as [`ipv4_route`] packs them, an IPv6 one folded (a collision only puts two connections on
/// one worker).
#[inline]
pub(super) fn end_bits(e: Endpoint) -> u64 {
    let port = u64::from(e.port);
    if e.ip >> 32 == 0xffff {
        (e.ip as u64 & 0xffff_ffff) << 16 | port
    } else {
        (e.ip >> 64) as u64 ^ (e.ip as u64).rotate_left(29) ^ port << 48 ^ 0x9e37_79b9
    }
}

/// The symmetric route hash of a connection's two endpoints (either order): the owner table's
/// bucket is its top bits. One folded multiply (as foldhash's), enough to spread endpoints
/// that differ in a port only.
#[inline]
pub(super) fn route_hash(a: u64, b: u64) -> u64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let p = u128::from(lo ^ 0x243f_6a88_85a3_08d3) * u128::from(hi ^ 0x1319_8a2e_0370_7344);
    (p as u64) ^ (p >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::tcp_ends;

    /// An Ethernet frame (with a VLAN tag when `vlan`) of an IPv4 TCP segment.
    fn frame(vlan: bool, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = vec![0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0];
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        f.extend_from_slice(&ip);
        let mut tcp = vec![0u8; 20];
        tcp[..2].copy_from_slice(&sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&dport.to_be_bytes());
        tcp[12] = 0x50;
        tcp[13] = 0x10;
        f.extend_from_slice(&tcp);
        f
    }

    fn raw(data: &[u8]) -> RawPacket<'_> {
        RawPacket {
            frame: 1,
            ts_ns: 0,
            link: LinkType::Ethernet,
            data,
            orig_len: data.len() as u32,
        }
    }

    /// The general path's hash of a frame (what [`ShardedAnalyzer::other_route`] computes).
    fn general(data: &[u8]) -> u64 {
        let (s, d) = tcp_ends(&raw(data)).expect("a TCP frame");
        route_hash(end_bits(Endpoint::from(s)), end_bits(Endpoint::from(d)))
    }

    #[test]
    fn both_directions_and_both_paths_give_one_route() {
        let (a, b) = ([10, 0, 0, 1], [192, 168, 7, 9]);
        let out = frame(false, a, 40_000, b, 80);
        let back = frame(false, b, 80, a, 40_000);
        let tagged = frame(true, b, 80, a, 40_000);
        let h = ipv4_route(&raw(&out)).expect("the fast path takes untagged IPv4");
        assert_eq!(ipv4_route(&raw(&back)), Some(h));
        assert_eq!(ipv4_route(&raw(&tagged)), None, "tags go the general way");
        assert_eq!(general(&out), h);
        assert_eq!(general(&tagged), h);
        // Another port: another route (the hash is not of the addresses alone).
        let other = frame(false, a, 40_001, b, 80);
        assert_ne!(ipv4_route(&raw(&other)), Some(h));
    }

    #[test]
    fn ip_options_go_the_general_way_to_the_same_route() {
        let (a, b) = ([10, 0, 0, 1], [192, 168, 7, 9]);
        let plain = frame(false, a, 40_000, b, 80);
        // The same segment with 4 bytes of IP options (a NOP-padded header of 24 bytes).
        let mut opts = plain[..14 + 20].to_vec();
        opts[14] = 0x46;
        opts.extend_from_slice(&[1, 1, 1, 0]);
        opts.extend_from_slice(&plain[14 + 20..]);
        assert_eq!(
            ipv4_route(&raw(&opts)),
            None,
            "the fast path reads 20-byte headers"
        );
        assert_eq!(general(&opts), ipv4_route(&raw(&plain)).unwrap());
        // A fragment (more-fragments flag) and a frame cut before the ports: not taken.
        let mut frag = plain.clone();
        frag[14 + 6] = 0x20;
        assert_eq!(ipv4_route(&raw(&frag)), None);
        assert_eq!(ipv4_route(&raw(&plain[..37])), None);
    }

    #[test]
    fn the_reader_is_given_fewer_connections() {
        let mut o = Owners::weighted(2, 24);
        let bucket = |i: u64| i << (64 - BUCKET_BITS);
        // 40 connections starting at once, a packet each: a quarter to the reader.
        let to_reader = (1..=40).filter(|&i| o.pick(bucket(i)) == 0).count();
        assert_eq!(to_reader, 10);
        // The start weights in use: a third of them to the reader, whatever else it does (the
        // balance hands connections on from there); a fifth at 32 eighths.
        let share = |w: u32| {
            let mut o = Owners::weighted(2, w);
            (1..=60).filter(|&i| o.pick(bucket(i)) == 0).count()
        };
        assert_eq!(share(READER_EIGHTHS), 20);
        assert_eq!(share(READER_EIGHTHS_MERGING), 20);
        assert_eq!(share(READER_EIGHTHS_WALKING), 20);
        assert_eq!(share(32), 12);
    }

    #[test]
    fn a_new_bucket_goes_to_the_worker_given_fewest_packets_lately() {
        let mut o = Owners::weighted(2, 8);
        let bucket = |i: u64| i << (64 - BUCKET_BITS);
        assert_eq!(o.pick(bucket(1)), 0);
        assert_eq!(
            o.pick(bucket(2)),
            1,
            "worker 0 has one packet, worker 1 none"
        );
        for _ in 0..10 {
            assert_eq!(o.pick(bucket(1)), 0, "a bucket keeps its worker");
        }
        assert_eq!(o.pick(bucket(3)), 1, "worker 1 is the less loaded");
        assert_eq!(o.pick(bucket(3) | 12_345), 1, "the same bucket");
        // Worker 1's connections go quiet; worker 0 keeps receiving: new ones go to 1.
        for _ in 0..8 {
            o.age();
            for _ in 0..100 {
                o.pick(bucket(1));
            }
        }
        assert_eq!(o.pick(bucket(4)), 1);
        assert_eq!(o.pick(bucket(2)), 1);
        // Worker 1 now far busier: the next new bucket goes to 0.
        for _ in 0..500 {
            o.pick(bucket(2));
        }
        assert_eq!(o.pick(bucket(5)), 0);
    }
}
