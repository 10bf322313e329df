//! Decoding of captured frames into TCP segments.
//!
//! The link layer (Ethernet with VLAN tags, Linux cooked v1/v2, BSD Null/Loop, raw IP,
//! 802.11 with or without radiotap, Linux NFLOG) is peeled by hand: each is a few offsets plus
//! a protocol field, and etherparse 0.21 knows none of SLL2, Null/Loop, 802.11 or NFLOG (the
//! crates for radiotap and 802.11 parse every field of the radio header; here only its length
//! is needed). Encrypted 802.11 frames and frames without data carry nothing to read.
//!
//! The common case, IPv4 without an authentication header carrying TCP, and the TCP header
//! and its options are parsed by hand too: this is the hot path of `analyze` (every packet of
//! a capture goes through it), and etherparse's general slicing (a large `LaxIpSlice` enum
//! returned by value, an options iterator yielding `Result<TcpOptionElement>`) cost ~480
//! instructions per packet against ~100 here. The hand-written code follows etherparse's lax
//! rules exactly (length fallbacks, fragment test, option length checks), and a test
//! compares both on hundreds of thousands of mutated packets. Everything else on the IP
//! layer (IPv6 and its extension headers, IPv4 AH, every malformed header and its error) is
//! sliced with etherparse. Nothing here allocates: a [`TcpSegment`] borrows the packet bytes.
//! The link layer is peeled in `link`, tunnels (VXLAN, Geneve, GRE, IP in IP) in `tunnel`:
//! the connections read are the inner ones.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use etherparse::{IpNumber, LaxIpSlice};

mod link;
mod tunnel;

use link::link_payload;

use crate::packet::RawPacket;

/// TCP header flag bits (the low byte of the flags field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;

    pub fn fin(self) -> bool {
        self.0 & Self::FIN != 0
    }
    pub fn syn(self) -> bool {
        self.0 & Self::SYN != 0
    }
    pub fn rst(self) -> bool {
        self.0 & Self::RST != 0
    }
    pub fn psh(self) -> bool {
        self.0 & Self::PSH != 0
    }
    pub fn ack(self) -> bool {
        self.0 & Self::ACK != 0
    }
}

/// tcpdump's notation: `[S]`, `[S.]`, `[P.]`, `[F.]`, `[R]`, `[.]`.
impl std::fmt::Display for TcpFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[")?;
        for (bit, c) in [
            (Self::SYN, 'S'),
            (Self::FIN, 'F'),
            (Self::PSH, 'P'),
            (Self::RST, 'R'),
            (Self::URG, 'U'),
            (Self::ECE, 'E'),
            (Self::CWR, 'W'),
        ] {
            if self.0 & bit != 0 {
                write!(f, "{c}")?;
            }
        }
        if self.ack() {
            f.write_str(".")?;
        }
        f.write_str("]")
    }
}

/// Up to four SACK blocks (the most a TCP header can carry), without allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlocks {
    len: u8,
    blocks: [(u32, u32); 4],
}

impl SackBlocks {
    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn push(&mut self, b: (u32, u32)) {
        if usize::from(self.len) < self.blocks.len() {
            self.blocks[usize::from(self.len)] = b;
            self.len += 1;
        }
    }
}

/// One decoded TCP segment. Borrowed from the packet; cheap to copy around.
#[derive(Debug, Clone, Copy)]
pub struct TcpSegment<'a> {
    pub frame: u64,
    pub ts_ns: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// The raw (unscaled) window field.
    pub window: u16,
    /// Payload length from the IP header, also when the capture cut the packet (snaplen).
    pub payload_len: u32,
    /// The captured part of the payload (may be shorter than `payload_len`).
    pub payload: &'a [u8],
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack: SackBlocks,
    /// IPv4 identification field (`None` for IPv6). Linux numbers the packets of a
    /// connection consecutively, so it tells a late original from a retransmission.
    pub ip_id: Option<u16>,
    /// The TCP checksum field as captured (covers header, options and payload: two copies of
    /// one frame have the same, a retransmission usually not; see [`crate::track::dup`]).
    pub checksum: u16,
    /// The sender's TCP timestamp (TSval), when the segment carries the option.
    pub tsval: Option<u32>,
    /// The timestamp it echoes (TSecr), when the segment carries the option.
    pub tsecr: Option<u32>,
    /// IPv4 TTL or IPv6 hop limit as captured: one sender's packets to one place arrive with
    /// the same, so a reset with another one came from somewhere else (`detect::connection_reset`).
    pub ttl: u8,
    /// The TCP header's three reserved bits (`0x0e` of the data-offset byte): zero from every
    /// stack; set by forged packets.
    pub reserved: u8,
    /// Port 53 at either end (DNS over TCP, [`crate::analyze`] reads it): set here, where the
    /// ports are read, so the analyzer's per-segment check is one load instead of two
    /// compares of the `SocketAddr`s (session 27: ~15 instructions a frame).
    pub port_53: bool,
}

impl TcpSegment<'_> {
    /// Sequence space this segment occupies (payload plus one for SYN and one for FIN).
    pub fn seq_len(&self) -> u32 {
        self.payload_len + u32::from(self.flags.syn()) + u32::from(self.flags.fin())
    }
}

/// Why a frame could not be decoded. Frames that are simply not TCP are `Ok(None)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("decode frame {frame}: {layer} header truncated ({len} bytes captured)")]
    Truncated {
        frame: u64,
        layer: &'static str,
        len: usize,
    },
    #[error("decode frame {frame}: malformed {layer} header: {what}")]
    Malformed {
        frame: u64,
        layer: &'static str,
        what: &'static str,
    },
    /// A SYN (or SYN/ACK) whose TCP options the snap length cut: its window scale is lost.
    #[error("decode frame {frame}: SYN options cut by the snap length ({len} bytes)")]
    SynOptionsCut { frame: u64, len: usize },
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

/// Decodes one captured frame. `Ok(None)`: the frame is valid but not a TCP segment
/// (ARP, UDP, IPv4 fragment, unknown protocol).
pub fn decode<'a>(pkt: &RawPacket<'a>) -> Result<Option<TcpSegment<'a>>, DecodeError> {
    decode_at(pkt, 0)
}

/// [`decode`] of a frame found `depth` tunnels deep.
fn decode_at<'a>(pkt: &RawPacket<'a>, depth: u8) -> Result<Option<TcpSegment<'a>>, DecodeError> {
    let Some(ip_bytes) = link_payload(pkt)? else {
        return Ok(None);
    };
    match ipv4_fast(ip_bytes) {
        Some(Some(v4)) => tcp_segment(
            pkt,
            IpAddr::V4(v4.src),
            IpAddr::V4(v4.dst),
            v4.tcp,
            v4.tcp_len,
            Some(v4.ip_id),
            v4.ttl,
        ),
        Some(None) => Ok(None),
        None => decode_ip_general(pkt, ip_bytes, depth),
    }
}

/// The TCP endpoints (source, destination) of a frame in the common cases, read without
/// decoding the rest: IPv4 as [`decode`]'s fast path takes it, and IPv6 whose next header is
/// TCP. `None`: another case (fragments, extension headers, other protocols, short frames);
/// [`decode`] it. When this gives `(s, d)` and [`decode`] gives a segment, the segment's `src`
/// and `dst` are `s` and `d` (a test checks it on mutated packets): `analyze -j N`'s reader
/// picks a packet's worker from this and leaves the decoding to the worker.
#[inline]
pub fn tcp_ends(pkt: &RawPacket<'_>) -> Option<(SocketAddr, SocketAddr)> {
    let ip = link_payload(pkt).ok().flatten()?;
    let port = |t: &[u8], at: usize| u16::from_be_bytes([t[at], t[at + 1]]);
    match ip.first()? >> 4 {
        4 => {
            let v4 = ipv4_fast(ip)??;
            let t = v4.tcp.get(..4)?;
            Some((
                SocketAddr::new(IpAddr::V4(v4.src), port(t, 0)),
                SocketAddr::new(IpAddr::V4(v4.dst), port(t, 2)),
            ))
        }
        6 => {
            let h: &[u8; 44] = ip.get(..44)?.try_into().ok()?;
            if h[6] != IPPROTO_TCP {
                return None;
            }
            let addr = |at: usize| {
                let mut a = [0u8; 16];
                a.copy_from_slice(&h[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(a))
            };
            Some((
                SocketAddr::new(addr(8), port(h, 40)),
                SocketAddr::new(addr(24), port(h, 42)),
            ))
        }
        _ => None,
    }
}

/// A UDP datagram's ends and payload (as far as captured): IPv4 that is not a fragment, and
/// IPv6 whose next header is UDP (no extension headers, no tunnels). For `analyze`'s DNS
/// (`analyze::dns`), asked only of frames that are not TCP segments.
pub fn udp_datagram<'a>(pkt: &RawPacket<'a>) -> Option<(SocketAddr, SocketAddr, &'a [u8])> {
    let ip = link_payload(pkt).ok().flatten()?;
    let (src, dst, udp) = match ip.first()? >> 4 {
        4 => {
            let h: &[u8; 20] = ip.get(..20)?.try_into().ok()?;
            let hl = usize::from(h[0] & 0x0f) * 4;
            if h[9] != IPPROTO_UDP || hl < 20 || h[6] & 0x3f != 0 || h[7] != 0 {
                return None;
            }
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            let end = if total >= hl {
                total.min(ip.len())
            } else {
                ip.len()
            };
            (
                IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15])),
                IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19])),
                ip.get(hl..end)?,
            )
        }
        6 => {
            let h: &[u8; 40] = ip.get(..40)?.try_into().ok()?;
            if h[6] != IPPROTO_UDP {
                return None;
            }
            let addr = |at: usize| {
                let mut a = [0u8; 16];
                a.copy_from_slice(&h[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(a))
            };
            (addr(8), addr(24), &ip[40..])
        }
        _ => return None,
    };
    let port = |at: usize| Some(u16::from_be_bytes([*udp.get(at)?, *udp.get(at + 1)?]));
    let (sport, dport) = (port(0)?, port(2)?);
    Some((
        SocketAddr::new(src, sport),
        SocketAddr::new(dst, dport),
        udp.get(8..)?,
    ))
}

const IPPROTO_UDP: u8 = 17;

/// What the TCP layer needs from an IPv4 header.
struct Ipv4Tcp<'a> {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ip_id: u16,
    ttl: u8,
    /// The IP payload (the TCP segment), as far as captured.
    tcp: &'a [u8],
    /// Its length according to the IP header, when the header has a usable one.
    tcp_len: Option<usize>,
}

/// IPv4 without an authentication header carrying TCP: the common case, parsed by hand with
/// the same (lax) rules as etherparse. `Some(None)`: a fragment (not decoded). `None`: not
/// this case, use [`decode_ip_general`] (which also produces the errors). Returns a small
/// struct, not the segment, so [`tcp_segment`] builds the segment in the caller's return slot
/// instead of copying it through nested `Option`s.
#[inline(always)]
fn ipv4_fast(ip: &[u8]) -> Option<Option<Ipv4Tcp<'_>>> {
    let h: &[u8; 20] = ip.get(..20)?.try_into().ok()?;
    let hl = usize::from(h[0] & 0x0f) * 4;
    if h[0] >> 4 != 4 || hl < 20 || ip.len() < hl || h[9] != IPPROTO_TCP {
        return None;
    }
    // Fragments (more-fragments flag or an offset) are not decoded.
    if h[6] & 0x3f != 0 || h[7] != 0 {
        return Some(None);
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    // Lax: a total length shorter than the header (0 as written by TSO) or longer than what
    // was captured (snaplen) falls back to the captured bytes.
    let (tcp, tcp_len) = if total < hl {
        (&ip[hl..], None)
    } else if ip.len() < total {
        (&ip[hl..], Some(total - hl))
    } else {
        (&ip[hl..total], Some(total - hl))
    };
    Some(Some(Ipv4Tcp {
        src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        ip_id: u16::from_be_bytes([h[4], h[5]]),
        ttl: h[8],
        tcp,
        tcp_len,
    }))
}

const IPPROTO_TCP: u8 = 6;

/// IPv6 (with extension headers), IPv4 with an authentication header, and every malformed
/// IP header: sliced with etherparse. Kept out of line: the common path stays small.
#[inline(never)]
fn decode_ip_general<'a>(
    pkt: &RawPacket<'a>,
    ip_bytes: &'a [u8],
    depth: u8,
) -> Result<Option<TcpSegment<'a>>, DecodeError> {
    let frame = pkt.frame;
    let (ip, ext_err) = LaxIpSlice::from_slice(ip_bytes).map_err(|e| {
        use etherparse::err::ip::LaxHeaderSliceError as E;
        match e {
            E::Len(_) => DecodeError::Truncated {
                frame,
                layer: "IP",
                len: ip_bytes.len(),
            },
            E::Content(_) => DecodeError::Malformed {
                frame,
                layer: "IP",
                what: "bad version or header length",
            },
        }
    })?;
    let mut ip_id = None;
    let ttl;
    let (src_ip, dst_ip, payload, ip_payload_len): (IpAddr, IpAddr, _, Option<usize>) = match &ip {
        LaxIpSlice::Ipv4(v4) => {
            let h = v4.header();
            let total = usize::from(h.total_len());
            let auth = v4.extensions().auth.map_or(0, |a| a.slice().len());
            let hl = h.slice().len() + auth;
            let len = (total >= hl).then(|| total - hl);
            ip_id = Some(h.identification());
            ttl = h.ttl();
            (
                IpAddr::V4(Ipv4Addr::from(h.source())),
                IpAddr::V4(Ipv4Addr::from(h.destination())),
                v4.payload(),
                len,
            )
        }
        LaxIpSlice::Ipv6(v6) => {
            let h = v6.header();
            let plen = usize::from(h.payload_length());
            let ext = v6.extensions().slice().len();
            let len = (plen != 0 && plen >= ext).then(|| plen - ext);
            ttl = h.hop_limit();
            (
                IpAddr::V6(Ipv6Addr::from(h.source())),
                IpAddr::V6(Ipv6Addr::from(h.destination())),
                v6.payload(),
                len,
            )
        }
    };
    if payload.fragmented || ext_err.is_some() {
        return Ok(None);
    }
    if payload.ip_number != IpNumber::TCP {
        return match tunnel::inner(pkt, payload.ip_number.0, payload.payload) {
            Some(inner) if depth < tunnel::MAX_DEPTH => decode_at(&inner, depth + 1),
            _ => Ok(None),
        };
    }
    tcp_segment(
        pkt,
        src_ip,
        dst_ip,
        payload.payload,
        ip_payload_len,
        ip_id,
        ttl,
    )
}

/// The TCP header and options, by hand (same rules as etherparse's `TcpHeaderSlice` and
/// options iterator, without their per-option enum and `Result` plumbing).
/// `ip_payload_len`: the TCP segment's length according to the IP header, when it has one.
#[inline(always)]
fn tcp_segment<'a>(
    pkt: &RawPacket<'a>,
    src: IpAddr,
    dst: IpAddr,
    tcp: &'a [u8],
    ip_payload_len: Option<usize>,
    ip_id: Option<u16>,
    ttl: u8,
) -> Result<Option<TcpSegment<'a>>, DecodeError> {
    let frame = pkt.frame;
    let Some(h) = tcp.get(..20) else {
        return Err(DecodeError::Truncated {
            frame,
            layer: "TCP",
            len: tcp.len(),
        });
    };
    let hlen = usize::from(h[12] >> 4) * 4;
    if hlen < 20 {
        return Err(DecodeError::Malformed {
            frame,
            layer: "TCP",
            what: "data offset smaller than the header",
        });
    }
    // Options cut by the snap length (`tcpdump -s 54`/`-s 64`, headers only): ports,
    // sequence numbers, flags and window are whole, the length comes from the IP header; the
    // options that were captured are read. A SYN's cut options would hide its window scale
    // (every window then read 2^scale too small): it stays an error of its own kind, and its
    // connection is read as one picked up mid-stream.
    let short = pkt.data.len() < pkt.orig_len as usize;
    let cut = short && h[13] & 0x02 == 0;
    if tcp.len() < hlen && !cut {
        let len = pkt.data.len();
        return Err(match short {
            true => DecodeError::SynOptionsCut { frame, len },
            false => DecodeError::Truncated {
                frame,
                layer: "TCP",
                len: tcp.len(),
            },
        });
    }
    let opts_end = tcp.len().min(hlen);
    let captured: &[u8] = tcp.get(hlen..).unwrap_or(&[]);
    // Length from the IP header; fall back to what was captured (IPv4 total length 0 as
    // written by TSO, IPv6 jumbograms).
    let payload_len = match ip_payload_len {
        Some(l) if l >= hlen => l - hlen,
        Some(_) => {
            return Err(DecodeError::Malformed {
                frame,
                layer: "IP",
                what: "length shorter than the TCP header",
            });
        }
        None => captured.len(),
    };
    let payload_len = u32::try_from(payload_len).unwrap_or(u32::MAX);
    let captured = &captured[..captured.len().min(payload_len as usize)];
    let be32 = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    let opts = if opts_end == 32 && tcp[20..24] == [1, 1, 8, 10] {
        // NOP, NOP, timestamp: what Linux puts on every segment after the handshake (the
        // first case of `parse_options`, without the call).
        Options {
            tsval: Some(u32::from_be_bytes([tcp[24], tcp[25], tcp[26], tcp[27]])),
            tsecr: Some(u32::from_be_bytes([tcp[28], tcp[29], tcp[30], tcp[31]])),
            ..Options::default()
        }
    } else if opts_end > 20 {
        parse_options(&tcp[20..opts_end])
    } else {
        Options::default()
    };
    let ports = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    let (sport, dport) = ((ports >> 16) as u16, ports as u16);
    Ok(Some(TcpSegment {
        frame,
        ts_ns: pkt.ts_ns,
        src: SocketAddr::new(src, sport),
        dst: SocketAddr::new(dst, dport),
        seq: be32(4),
        ack: be32(8),
        flags: TcpFlags(h[13]),
        window: u16::from_be_bytes([h[14], h[15]]),
        payload_len,
        payload: captured,
        mss: opts.mss,
        wscale: opts.wscale,
        sack: opts.sack,
        ip_id,
        checksum: u16::from_be_bytes([h[16], h[17]]),
        tsval: opts.tsval,
        tsecr: opts.tsecr,
        ttl,
        reserved: h[12] & 0x0e,
        // `|` (not `||`): both compares without a branch.
        port_53: (sport == 53) | (dport == 53),
    }))
}

/// The TCP options the analysis uses.
#[derive(Default)]
struct Options {
    mss: Option<u16>,
    wscale: Option<u8>,
    sack: SackBlocks,
    tsval: Option<u32>,
    tsecr: Option<u32>,
}

/// TCP options: MSS, window scale and SACK blocks. Options are advisory for the analysis:
/// what parsed before a malformed or unknown option is kept, the rest ignored (as with
/// etherparse's iterator: an option of a known kind with the wrong length, a truncated one, or
/// an unknown kind ends the list).
fn parse_options(mut o: &[u8]) -> Options {
    let mut seg = Options::default();
    // What Linux puts on every segment after the handshake: NOP, NOP, timestamp.
    if o.len() == 12 && o[..4] == [1, 1, 8, 10] {
        seg.tsval = Some(u32::from_be_bytes([o[4], o[5], o[6], o[7]]));
        seg.tsecr = Some(u32::from_be_bytes([o[8], o[9], o[10], o[11]]));
        return seg;
    }
    const EOL: u8 = 0;
    const NOP: u8 = 1;
    const MSS: u8 = 2;
    const WSCALE: u8 = 3;
    const SACK_PERMITTED: u8 = 4;
    const SACK: u8 = 5;
    const TIMESTAMP: u8 = 8;
    while let Some(&kind) = o.first() {
        let len = match kind {
            EOL => break,
            NOP => 1,
            MSS | WSCALE | SACK_PERMITTED | TIMESTAMP => {
                let want = match kind {
                    MSS => 4,
                    WSCALE => 3,
                    SACK_PERMITTED => 2,
                    _ => 10,
                };
                if o.len() < want || o[1] != want as u8 {
                    break;
                }
                match kind {
                    MSS => seg.mss = Some(u16::from_be_bytes([o[2], o[3]])),
                    WSCALE => seg.wscale = Some(o[2]),
                    TIMESTAMP => {
                        seg.tsval = Some(u32::from_be_bytes([o[2], o[3], o[4], o[5]]));
                        seg.tsecr = Some(u32::from_be_bytes([o[6], o[7], o[8], o[9]]));
                    }
                    _ => {}
                }
                want
            }
            SACK => {
                let Some(&l) = o.get(1) else { break };
                let l = usize::from(l);
                if !matches!(l, 10 | 18 | 26 | 34) || o.len() < l {
                    break;
                }
                for b in o[2..l].chunks_exact(8) {
                    seg.sack.push((
                        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    ));
                }
                l
            }
            _ => break,
        };
        o = &o[len..];
    }
    seg
}

#[cfg(test)]
mod tests;
