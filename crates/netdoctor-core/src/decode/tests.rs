//! Decoder tests: every link type, malformed input, and the hand-written fast path against
//! etherparse. Just over 700 lines (session 18 added PPPoE under VLAN/QinQ, its cases folded
//! into one loop): one subject, the decoder's inputs; the next link type's tests are the seam
//! to split them along (per link type family).

use super::*;
use crate::packet::LinkType;
use etherparse::{TcpHeaderSlice, TcpOptionElement};

/// The decoder before the hand-written fast path (etherparse for IP, TCP and options):
/// the reference that [`decode`] must agree with on every input.
fn decode_reference<'a>(pkt: &RawPacket<'a>) -> Result<Option<TcpSegment<'a>>, DecodeError> {
    let frame = pkt.frame;
    let Some(ip_bytes) = super::link_payload(pkt)? else {
        return Ok(None);
    };
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
        // Tunnels are peeled the same way (not what this reference checks).
        return match super::tunnel::inner(pkt, payload.ip_number.0, payload.payload) {
            Some(inner) => decode(&inner),
            None => Ok(None),
        };
    }
    let tcp = TcpHeaderSlice::from_slice(payload.payload).map_err(|e| {
        use etherparse::err::tcp::HeaderSliceError as E;
        match e {
            E::Len(_) => DecodeError::Truncated {
                frame,
                layer: "TCP",
                len: payload.payload.len(),
            },
            E::Content(_) => DecodeError::Malformed {
                frame,
                layer: "TCP",
                what: "data offset smaller than the header",
            },
        }
    })?;
    let hlen = tcp.slice().len();
    let captured = &payload.payload[hlen..];
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

    let mut mss = None;
    let mut wscale = None;
    let mut sack = SackBlocks::default();
    let mut tsval = None;
    let mut tsecr = None;
    for opt in tcp.options_iterator() {
        match opt {
            Ok(TcpOptionElement::MaximumSegmentSize(m)) => mss = Some(m),
            Ok(TcpOptionElement::Timestamp(v, e)) => {
                tsval = Some(v);
                tsecr = Some(e);
            }
            Ok(TcpOptionElement::WindowScale(w)) => wscale = Some(w),
            Ok(TcpOptionElement::SelectiveAcknowledgement(first, rest)) => {
                sack.push(first);
                for b in rest.into_iter().flatten() {
                    sack.push(b);
                }
            }
            Ok(_) => {}
            // Options are advisory for the analysis: keep what parsed, ignore the rest.
            Err(_) => break,
        }
    }
    let flags = tcp.slice()[13];
    Ok(Some(TcpSegment {
        frame,
        ts_ns: pkt.ts_ns,
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack: tcp.acknowledgment_number(),
        flags: TcpFlags(flags),
        window: tcp.window_size(),
        payload_len,
        payload: captured,
        mss,
        wscale,
        sack,
        ip_id,
        checksum: tcp.checksum(),
        tsval,
        tsecr,
        ttl,
        reserved: tcp.slice()[12] & 0x0e,
        port_53: tcp.source_port() == 53 || tcp.destination_port() == 53,
    }))
}

/// IPv4 + TCP, 127.0.0.1:40000 → 127.0.0.2:8080, seq 1000, ack 2000, [P.], payload "GET ".
/// TCP header with MSS 1460, wscale 7 and one SACK block (data offset 11 words = 44 bytes).
fn ipv4_tcp(payload: &[u8]) -> Vec<u8> {
    let tcp_opts: [u8; 24] = [
        2, 4, 0x05, 0xb4, // MSS 1460
        1, 3, 3, 7, // NOP, wscale 7
        1, 1, 5, 10, // NOP NOP SACK len 10
        0, 0, 0, 10, 0, 0, 0, 20, // block 10..20
        0, 0, 0, 0, // EOL padding
    ];
    let tcp_len = 20 + tcp_opts.len();
    let total = 20 + tcp_len + payload.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0, // DF, no fragment
        64,
        6,
        0,
        0,
        127,
        0,
        0,
        1,
        127,
        0,
        0,
        2,
    ];
    p.extend_from_slice(&40000u16.to_be_bytes());
    p.extend_from_slice(&8080u16.to_be_bytes());
    p.extend_from_slice(&1000u32.to_be_bytes());
    p.extend_from_slice(&2000u32.to_be_bytes());
    p.push(((tcp_len / 4) as u8) << 4);
    p.push(TcpFlags::PSH | TcpFlags::ACK);
    p.extend_from_slice(&[0x01, 0x00, 0, 0, 0, 0]); // window 256, checksum, urgent
    p.extend_from_slice(&tcp_opts);
    p.extend_from_slice(payload);
    p
}

/// IPv6 with a hop-by-hop extension header, ::1:5555 → ::1:80, [S], no payload.
fn ipv6_tcp_with_ext() -> Vec<u8> {
    let tcp: [u8; 20] = [
        0x15, 0xb3, 0, 80, 0, 0, 0, 5, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
    ];
    let hbh: [u8; 8] = [6, 0, 1, 4, 0, 0, 0, 0]; // next = TCP, len 0, PadN
    let plen = (hbh.len() + tcp.len()) as u16;
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&plen.to_be_bytes());
    p.push(0); // next header: hop-by-hop
    p.push(64);
    p.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
    p.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
    p.extend_from_slice(&hbh);
    p.extend_from_slice(&tcp);
    p
}

fn raw(link: LinkType, data: &[u8]) -> RawPacket<'_> {
    RawPacket {
        frame: 7,
        ts_ns: 1_000,
        link,
        data,
        orig_len: data.len() as u32,
    }
}

fn check_v4(seg: &TcpSegment<'_>) {
    assert_eq!(seg.src, "127.0.0.1:40000".parse().unwrap());
    assert_eq!(seg.dst, "127.0.0.2:8080".parse().unwrap());
    assert_eq!((seg.seq, seg.ack, seg.window), (1000, 2000, 256));
    assert!(seg.flags.psh() && seg.flags.ack() && !seg.flags.syn());
    assert_eq!(seg.payload_len, 4);
    assert_eq!(seg.payload, b"GET ");
    assert_eq!(seg.mss, Some(1460));
    assert_eq!(seg.wscale, Some(7));
    assert_eq!(seg.sack.as_slice(), &[(10, 20)]);
    assert_eq!(seg.frame, 7);
}

#[test]
fn raw_ipv4() {
    let p = ipv4_tcp(b"GET ");
    for link in [LinkType::Raw, LinkType::Ipv4] {
        let seg = decode(&raw(link, &p)).unwrap().unwrap();
        check_v4(&seg);
    }
}

#[test]
fn ethernet_plain_and_vlan() {
    let ip = ipv4_tcp(b"GET ");
    let mut eth = vec![0u8; 12];
    eth.extend_from_slice(&[0x08, 0x00]);
    eth.extend_from_slice(&ip);
    check_v4(&decode(&raw(LinkType::Ethernet, &eth)).unwrap().unwrap());

    let mut vlan = vec![0u8; 12];
    vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a, 0x08, 0x00]);
    vlan.extend_from_slice(&ip);
    check_v4(&decode(&raw(LinkType::Ethernet, &vlan)).unwrap().unwrap());

    // QinQ, then a PPPoE session carrying IPv4 (PPP protocol 0x0021); then the same with
    // LCP (0xc021), as a discovery frame (0x8863), its header cut: no IP.
    let mut pppoe = vec![0u8; 12];
    pppoe.extend_from_slice(&[
        0x88, 0xa8, 0, 7, 0x81, 0, 0, 9, 0x88, 0x64, 0x11, 0, 1, 2, 0, 0,
    ]);
    pppoe.extend_from_slice(&[0x00, 0x21]);
    pppoe.extend_from_slice(&ip);
    let seg = decode(&raw(LinkType::Ethernet, &pppoe)).unwrap().unwrap();
    check_v4(&seg);
    let ends = tcp_ends(&raw(LinkType::Ethernet, &pppoe));
    assert_eq!(ends, Some((seg.src, seg.dst)));
    for (at, b) in [(28, [0xc0, 0x21]), (20, [0x88, 0x63])] {
        let mut other = pppoe.clone();
        other[at..at + 2].copy_from_slice(&b);
        assert!(decode(&raw(LinkType::Ethernet, &other)).unwrap().is_none());
    }
    assert!(
        decode(&raw(LinkType::Ethernet, &pppoe[..26]))
            .unwrap()
            .is_none()
    );

    let mut arp = vec![0u8; 12];
    arp.extend_from_slice(&[0x08, 0x06]);
    arp.extend_from_slice(&[0u8; 28]);
    assert!(decode(&raw(LinkType::Ethernet, &arp)).unwrap().is_none());
}

#[test]
fn linux_sll_v1_and_v2() {
    let ip = ipv4_tcp(b"GET ");
    // SLL v1: packet type, ARPHRD, addr len, 8 addr bytes, protocol.
    let mut sll = vec![0, 0, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0];
    sll.extend_from_slice(&[0x08, 0x00]);
    sll.extend_from_slice(&ip);
    check_v4(&decode(&raw(LinkType::LinuxSll, &sll)).unwrap().unwrap());
    // SLL v2: protocol, reserved, ifindex, ARPHRD, packet type, addr len, 8 addr bytes.
    let mut sll2 = vec![0x08, 0x00, 0, 0, 0, 0, 0, 1, 0x03, 0x04, 0, 6];
    sll2.extend_from_slice(&[0u8; 8]);
    sll2.extend_from_slice(&ip);
    check_v4(&decode(&raw(LinkType::LinuxSll2, &sll2)).unwrap().unwrap());
}

#[test]
fn null_and_loop_both_byte_orders() {
    let ip = ipv4_tcp(b"GET ");
    for (link, fam) in [
        (LinkType::Null, 2u32.to_le_bytes()),
        (LinkType::Null, 2u32.to_be_bytes()),
        (LinkType::Loop, 2u32.to_be_bytes()),
    ] {
        let mut p = fam.to_vec();
        p.extend_from_slice(&ip);
        check_v4(&decode(&raw(link, &p)).unwrap().unwrap());
    }
    let v6 = ipv6_tcp_with_ext();
    for fam in [24u32, 28, 30] {
        let mut p = fam.to_le_bytes().to_vec();
        p.extend_from_slice(&v6);
        let seg = decode(&raw(LinkType::Null, &p)).unwrap().unwrap();
        assert!(seg.src.is_ipv6());
    }
    let mut other = 99u32.to_le_bytes().to_vec();
    other.extend_from_slice(&ip);
    assert!(decode(&raw(LinkType::Null, &other)).unwrap().is_none());
}

#[test]
fn ipv6_skips_extension_headers() {
    let p = ipv6_tcp_with_ext();
    let seg = decode(&raw(LinkType::Ipv6, &p)).unwrap().unwrap();
    assert_eq!(seg.src, "[::1]:5555".parse().unwrap());
    assert_eq!(seg.dst, "[::1]:80".parse().unwrap());
    assert_eq!(seg.seq, 5);
    assert!(seg.flags.syn() && !seg.flags.ack());
    assert_eq!(seg.payload_len, 0);
    assert_eq!(seg.seq_len(), 1);
    assert_eq!(seg.flags.to_string(), "[S]");
}

#[test]
fn snaplen_cut_keeps_ip_length() {
    let p = ipv4_tcp(&[b'x'; 1000]);
    let cut = &p[..p.len() - 990];
    let seg = decode(&raw(LinkType::Raw, cut)).unwrap().unwrap();
    assert_eq!(seg.payload_len, 1000);
    assert_eq!(seg.payload.len(), 10);
}

#[test]
fn ipv4_fragments_and_udp_are_not_tcp() {
    let mut p = ipv4_tcp(b"GET ");
    p[6] = 0x20; // more fragments
    assert!(decode(&raw(LinkType::Raw, &p)).unwrap().is_none());
    let mut p = ipv4_tcp(b"GET ");
    p[7] = 0x10; // fragment offset != 0
    assert!(decode(&raw(LinkType::Raw, &p)).unwrap().is_none());
    let mut p = ipv4_tcp(b"GET ");
    p[9] = 17; // UDP
    assert!(decode(&raw(LinkType::Raw, &p)).unwrap().is_none());
}

#[test]
fn truncated_headers_are_errors() {
    let p = ipv4_tcp(b"GET ");
    assert!(matches!(
        decode(&raw(LinkType::Raw, &p[..30])),
        Err(DecodeError::Truncated { layer: "TCP", .. })
    ));
    assert!(matches!(
        decode(&raw(LinkType::Raw, &p[..10])),
        Err(DecodeError::Truncated { layer: "IP", .. })
    ));
    assert!(decode(&raw(LinkType::Ethernet, &[0u8; 5])).is_err());
    let e = decode(&raw(LinkType::LinuxSll2, &[0u8; 5])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decode frame 7: Linux SLL2 header truncated (5 bytes captured)"
    );
}

#[test]
fn flags_display_like_tcpdump() {
    assert_eq!(TcpFlags(TcpFlags::SYN | TcpFlags::ACK).to_string(), "[S.]");
    assert_eq!(TcpFlags(TcpFlags::PSH | TcpFlags::ACK).to_string(), "[P.]");
    assert_eq!(TcpFlags(TcpFlags::ACK).to_string(), "[.]");
    assert_eq!(TcpFlags(TcpFlags::FIN | TcpFlags::ACK).to_string(), "[F.]");
    assert_eq!(TcpFlags(TcpFlags::RST).to_string(), "[R]");
}

/// Random bytes of every length on every link type: never a panic.
/// An 802.11 data frame (From DS, QoS when `qos`) around `ip`, with LLC/SNAP.
fn wifi(ip: &[u8], qos: bool, protected: bool) -> Vec<u8> {
    let fc0 = if qos { 0x88 } else { 0x08 };
    let fc1 = 0x02 | if protected { 0x40 } else { 0 };
    let mut f = vec![fc0, fc1, 0, 0];
    f.extend_from_slice(&[0x11; 18]); // three addresses
    f.extend_from_slice(&[0x10, 0x00]); // sequence control
    if qos {
        f.extend_from_slice(&[0, 0]);
    }
    f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    f.extend_from_slice(ip);
    f
}

#[test]
fn wifi_with_and_without_radiotap() {
    let ip = ipv4_tcp(b"GET ");
    for qos in [false, true] {
        let f = wifi(&ip, qos, false);
        check_v4(&decode(&raw(LinkType::Ieee80211, &f)).unwrap().unwrap());
        // Radiotap: version 0, pad, length 12 (little-endian), present flags, 4 bytes of fields.
        let mut rt = vec![0, 0, 12, 0, 0x06, 0, 0, 0, 0x10, 0x02, 0x6c, 0x09];
        rt.extend_from_slice(&f);
        check_v4(&decode(&raw(LinkType::Radiotap, &rt)).unwrap().unwrap());
    }
    // Encrypted data, a beacon (management) and a null-data frame carry nothing to read.
    let enc = wifi(&ip, true, true);
    assert!(decode(&raw(LinkType::Ieee80211, &enc)).unwrap().is_none());
    let mut beacon = vec![0x80, 0, 0, 0];
    beacon.extend_from_slice(&[0u8; 60]);
    assert!(
        decode(&raw(LinkType::Ieee80211, &beacon))
            .unwrap()
            .is_none()
    );
    let mut null = vec![0x48, 0x01, 0, 0];
    null.extend_from_slice(&[0u8; 20]);
    assert!(decode(&raw(LinkType::Ieee80211, &null)).unwrap().is_none());
    // A radiotap length past the frame is a truncated radiotap header.
    let short = [0u8, 0, 200, 0, 0, 0, 0, 0];
    assert!(decode(&raw(LinkType::Radiotap, &short)).is_err());
}

#[test]
fn nflog_both_byte_orders() {
    let ip = ipv4_tcp(b"GET ");
    for le in [true, false] {
        let tlv = |ty: u16, v: &[u8]| {
            let len = (4 + v.len()) as u16;
            let mut t = Vec::new();
            if le {
                t.extend_from_slice(&len.to_le_bytes());
                t.extend_from_slice(&ty.to_le_bytes());
            } else {
                t.extend_from_slice(&len.to_be_bytes());
                t.extend_from_slice(&ty.to_be_bytes());
            }
            t.extend_from_slice(v);
            while t.len() % 4 != 0 {
                t.push(0);
            }
            t
        };
        // AF_INET, version 0, resource id 1; NFULA_PACKET_HDR, NFULA_PREFIX ("x\0", padded),
        // then NFULA_PAYLOAD.
        let mut m = vec![2, 0, 0, 1];
        m.extend(tlv(1, &[0x08, 0x00, 3, 0]));
        m.extend(tlv(10, b"x\0"));
        m.extend(tlv(9, &ip));
        check_v4(&decode(&raw(LinkType::Nflog, &m)).unwrap().unwrap());
        // No payload TLV, or another family: not TCP.
        let mut hdr_only = vec![2, 0, 0, 1];
        hdr_only.extend(tlv(1, &[0x08, 0x00, 3, 0]));
        assert!(decode(&raw(LinkType::Nflog, &hdr_only)).unwrap().is_none());
        m[0] = 7;
        assert!(decode(&raw(LinkType::Nflog, &m)).unwrap().is_none());
    }
}

#[test]
fn garbage_never_panics() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let links = [
        LinkType::Null,
        LinkType::Ethernet,
        LinkType::Raw,
        LinkType::Loop,
        LinkType::LinuxSll,
        LinkType::Ipv4,
        LinkType::Ipv6,
        LinkType::LinuxSll2,
        LinkType::Ieee80211,
        LinkType::Radiotap,
        LinkType::Nflog,
    ];
    let valid = ipv4_tcp(b"GET / HTTP/1.1\r\n");
    let mut ok = 0;
    for len in 0..200usize {
        for round in 0..40 {
            let mut buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Half of the rounds start from a valid IPv4/TCP packet with a few bytes
            // flipped, so the decoder gets deep into the headers.
            if round % 2 == 0 {
                buf = valid.clone();
                buf.truncate(len);
                for _ in 0..3 {
                    if !buf.is_empty() {
                        let i = (next() as usize) % buf.len();
                        buf[i] = next() as u8;
                    }
                }
            }
            for link in links {
                if decode(&raw(link, &buf)).is_ok() {
                    ok += 1;
                }
            }
        }
    }
    assert!(ok > 0, "some mutated packets must still decode");
}
/// Everything a caller can see of a decode result (TcpSegment has no PartialEq: it is
/// compared through its Debug form, which prints every field).
fn seen(r: &Result<Option<TcpSegment<'_>>, DecodeError>) -> String {
    format!("{r:?}")
}

/// The hand-written IPv4/TCP/options parsing agrees with etherparse on valid packets,
/// mutated ones (flags, lengths, options, fragments, versions) and truncated ones.
#[test]
fn fast_path_agrees_with_etherparse() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let bases = [
        ipv4_tcp(b"GET / HTTP/1.1\r\n"),
        ipv4_tcp(b""),
        ipv4_tcp(&[b'x'; 300]),
        ipv6_tcp_with_ext(),
        ipv6_tcp(),
    ];
    let mut compared = [0usize; 2]; // [errors or not TCP, segments]
    let mut ends_checked = 0;
    for base in &bases {
        for round in 0..4000 {
            let mut buf = base.clone();
            // Flip 1-3 bytes, biased toward the IP and TCP headers (first 64 bytes).
            for _ in 0..1 + round % 3 {
                let span = if round % 4 == 0 {
                    buf.len()
                } else {
                    64.min(buf.len())
                };
                let i = (next() as usize) % span;
                buf[i] = match next() % 4 {
                    0 => 0,
                    1 => 0xff,
                    _ => next() as u8,
                };
            }
            if round % 5 == 0 {
                buf.truncate((next() as usize) % (buf.len() + 1));
            }
            for link in [LinkType::Raw, LinkType::Ethernet] {
                let data = if link == LinkType::Ethernet {
                    let mut e = vec![0u8; 12];
                    e.extend_from_slice(&[0x08, 0x00]);
                    e.extend_from_slice(&buf);
                    e
                } else {
                    buf.clone()
                };
                let p = raw(link, &data);
                let (fast, reference) = (decode(&p), decode_reference(&p));
                assert_eq!(seen(&fast), seen(&reference), "{data:02x?}");
                // The reader of `analyze -j N` routes by `tcp_ends`: it must name the
                // segment's own endpoints.
                if let (Some((s, d)), Ok(Some(seg))) = (tcp_ends(&p), &fast) {
                    assert_eq!((s, d), (seg.src, seg.dst), "{data:02x?}");
                    ends_checked += 1;
                }
                compared[usize::from(matches!(fast, Ok(Some(_))))] += 1;
            }
        }
    }
    // Both outcomes were exercised a lot.
    assert!(compared[0] > 1000 && compared[1] > 1000, "{compared:?}");
    assert!(ends_checked > 1000, "{ends_checked}");
}

/// IPv6 carrying TCP directly, 2001:db8::1:5555 → 2001:db8::2:80, [P.], payload "GET ".
fn ipv6_tcp() -> Vec<u8> {
    let tcp: [u8; 24] = [
        0x15, 0xb3, 0, 80, 0, 0, 0, 5, 0, 0, 0, 9, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0, b'G', b'E',
        b'T', b' ',
    ];
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
    p.push(6); // next header: TCP
    p.push(64);
    p.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    p.extend_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
    p.extend_from_slice(&tcp);
    p
}

/// `tcp_ends` takes the common cases (so the reader of `-j N` rarely decodes) and leaves the
/// others to `decode`.
#[test]
fn tcp_ends_common_cases_only() {
    let v4 = ipv4_tcp(b"GET ");
    let (s, d) = tcp_ends(&raw(LinkType::Raw, &v4)).expect("IPv4/TCP");
    assert_eq!(s, "127.0.0.1:40000".parse().unwrap());
    assert_eq!(d, "127.0.0.2:8080".parse().unwrap());
    let mut vlan = vec![0u8; 12];
    vlan.extend_from_slice(&[0x81, 0x00, 0, 5, 0x08, 0x00]);
    vlan.extend_from_slice(&v4);
    assert_eq!(tcp_ends(&raw(LinkType::Ethernet, &vlan)), Some((s, d)));
    let v6 = ipv6_tcp();
    let (s6, d6) = tcp_ends(&raw(LinkType::Raw, &v6)).expect("IPv6/TCP");
    assert_eq!(s6, "[2001:db8::1]:5555".parse().unwrap());
    assert_eq!(d6, "[2001:db8::2]:80".parse().unwrap());
    // Extension headers, fragments and UDP: not taken.
    assert_eq!(tcp_ends(&raw(LinkType::Raw, &ipv6_tcp_with_ext())), None);
    let mut frag = v4.clone();
    frag[6] = 0x20; // more fragments
    assert_eq!(tcp_ends(&raw(LinkType::Raw, &frag)), None);
    let mut udp = v4.clone();
    udp[9] = 17;
    assert_eq!(tcp_ends(&raw(LinkType::Raw, &udp)), None);
    assert_eq!(tcp_ends(&raw(LinkType::Raw, &v4[..22])), None);
}

#[test]
fn options_like_etherparse() {
    // NOP NOP timestamp; SACK with 1..4 blocks; bad lengths; unknown kinds; truncations.
    let mut cases: Vec<Vec<u8>> = vec![
        vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
        vec![
            2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 3, 3, 9,
        ],
        vec![2, 3, 5, 180],
        vec![3, 3],
        vec![9, 2, 2, 4, 5, 180, 0, 0],
        vec![2, 4, 5, 180, 0, 3, 3, 7, 0, 0, 0, 0],
    ];
    for blocks in 1..=4usize {
        let mut o = vec![1, 1, 5, (2 + 8 * blocks) as u8];
        for b in 0..blocks as u32 {
            o.extend_from_slice(&(b * 100).to_be_bytes());
            o.extend_from_slice(&(b * 100 + 50).to_be_bytes());
        }
        cases.push(o.clone());
        o[3] += 1; // wrong length
        cases.push(o);
    }
    for mut opts in cases {
        while opts.len() % 4 != 0 {
            opts.push(0);
        }
        let mut p = ipv4_tcp(b"");
        p.truncate(20 + 20);
        p.extend_from_slice(&opts);
        p[32] = (((20 + opts.len()) / 4) as u8) << 4;
        let total = (p.len() as u16).to_be_bytes();
        p[2..4].copy_from_slice(&total);
        let r = raw(LinkType::Raw, &p);
        let fast = decode(&r);
        assert!(matches!(fast, Ok(Some(_))), "{fast:?}");
        assert_eq!(seen(&fast), seen(&decode_reference(&r)), "{opts:?}");
    }
}

mod tunnel;

#[test]
fn options_cut_by_the_snap_length_are_read_as_far_as_captured() {
    let p = ipv4_tcp(b"GET ");
    // 20 bytes of IP, the 20-byte TCP header and 4 bytes of options (MSS) captured.
    let cut = RawPacket {
        orig_len: p.len() as u32,
        ..raw(LinkType::Raw, &p[..44])
    };
    let seg = decode(&cut).unwrap().unwrap();
    assert_eq!((seg.src.port(), seg.dst.port()), (40000, 8080));
    assert_eq!((seg.seq, seg.ack, seg.window), (1000, 2000, 256));
    assert_eq!(seg.payload_len, 4, "from the IP header");
    assert!(seg.payload.is_empty());
    assert_eq!(seg.mss, Some(1460));
    assert_eq!(seg.wscale, None, "cut before it");
    // Cut by something else than the snap length (the frame is whole but short): an error.
    assert!(decode(&raw(LinkType::Raw, &p[..44])).is_err());
    // A SYN whose options were cut would lose its window scale: still an error, of its own
    // kind (the analysis says what was lost).
    let mut syn = p.clone();
    syn[33] = TcpFlags::SYN;
    let cut = RawPacket {
        orig_len: syn.len() as u32,
        ..raw(LinkType::Raw, &syn[..44])
    };
    assert!(matches!(
        decode(&cut),
        Err(DecodeError::SynOptionsCut { len: 44, .. })
    ));
}
