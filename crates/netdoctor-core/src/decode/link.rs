//! The link layer peeled by hand (see the parent module's docs for why): Ethernet with VLAN
//! and QinQ tags and PPPoE sessions, Linux cooked v1/v2, BSD Null/Loop, raw IP, 802.11 with or without radiotap and
//! Linux NFLOG, down to the IP packet they carry.

use super::{
    DecodeError, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_QINQ, ETHERTYPE_QINQ_OLD,
    ETHERTYPE_VLAN, be16,
};
use crate::packet::{LinkType, RawPacket};

/// The IP packet inside a link-layer frame, or `None` when the frame carries something else.
#[inline]
pub(super) fn link_payload<'a>(pkt: &RawPacket<'a>) -> Result<Option<&'a [u8]>, DecodeError> {
    let d = pkt.data;
    // The common case first: untagged Ethernet carrying IPv4 (what the general path below
    // gives for it, without the tag loop and the checks of the other link types).
    if pkt.link == LinkType::Ethernet && d.len() >= 14 && d[12] == 0x08 && d[13] == 0x00 {
        return Ok(Some(&d[14..]));
    }
    link_payload_general(pkt)
}

/// [`link_payload`] for every link type and tag.
#[inline(never)]
fn link_payload_general<'a>(pkt: &RawPacket<'a>) -> Result<Option<&'a [u8]>, DecodeError> {
    let d = pkt.data;
    let trunc = |layer| DecodeError::Truncated {
        frame: pkt.frame,
        layer,
        len: d.len(),
    };
    let (ethertype, off) = match pkt.link {
        LinkType::Raw | LinkType::Ipv4 | LinkType::Ipv6 => return Ok(Some(d)),
        LinkType::Ethernet => {
            let mut et = be16(d, 12).ok_or_else(|| trunc("Ethernet"))?;
            let mut off = 14;
            // Up to two VLAN tags (802.1Q, QinQ).
            for _ in 0..2 {
                if matches!(et, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD) {
                    et = be16(d, off + 2).ok_or_else(|| trunc("VLAN"))?;
                    off += 4;
                }
            }
            if et == ETHERTYPE_PPPOE_SESSION {
                // A PPPoE session (a DSL access network's frames, often under QinQ tags:
                // ppp-one_http_stream_rst was "no TCP segments" without this).
                let Some(et) = pppoe_session(d.get(off..).ok_or_else(|| trunc("PPPoE"))?) else {
                    return Ok(None);
                };
                off += PPPOE_HEADER;
                (et, off)
            } else {
                (et, off)
            }
        }
        LinkType::LinuxSll => (be16(d, 14).ok_or_else(|| trunc("Linux SLL"))?, 16),
        LinkType::LinuxSll2 => {
            if d.len() < 20 {
                return Err(trunc("Linux SLL2"));
            }
            (be16(d, 0).ok_or_else(|| trunc("Linux SLL2"))?, 20)
        }
        LinkType::Ieee80211 => return Ok(wifi_payload(d)),
        LinkType::Radiotap => {
            // it_version, it_pad, it_len (little-endian), it_present...
            let len = d
                .get(2..4)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
                .filter(|&l| l >= 8 && l <= d.len())
                .ok_or_else(|| trunc("radiotap"))?;
            return Ok(wifi_payload(&d[len..]));
        }
        LinkType::Nflog => return Ok(nflog_payload(d)),
        LinkType::Null | LinkType::Loop => {
            let b: [u8; 4] = d
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(|| trunc("loopback"))?;
            // The family is host-order for NULL, big-endian for LOOP; files move between
            // hosts, so accept both byte orders for both (families are < 256).
            let fam = if pkt.link == LinkType::Loop {
                u32::from_be_bytes(b)
            } else {
                let le = u32::from_le_bytes(b);
                if le < 256 { le } else { u32::from_be_bytes(b) }
            };
            let et = match fam {
                2 => ETHERTYPE_IPV4,
                // AF_INET6 on BSDs / macOS / Linux.
                10 | 24 | 28 | 30 => ETHERTYPE_IPV6,
                _ => return Ok(None),
            };
            (et, 4)
        }
    };
    if d.len() < off {
        return Err(trunc("link"));
    }
    match ethertype {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Ok(Some(&d[off..])),
        _ => Ok(None),
    }
}

/// Ethertype of PPPoE session frames (RFC 2516; 0x8863, discovery, carries no IP).
const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;
/// The PPPoE header (version/type, code, session id, length) and the PPP protocol field.
const PPPOE_HEADER: usize = 8;

/// The ethertype of what a PPPoE session frame `d` (from its PPPoE header on) carries: IPv4
/// or IPv6 by its PPP protocol field; `None` for anything else (LCP, IPCP, CHAP, a header
/// that is not version 1 type 1 with code 0, a short frame).
fn pppoe_session(d: &[u8]) -> Option<u16> {
    let h = d.get(..PPPOE_HEADER)?;
    if h[0] != 0x11 || h[1] != 0 {
        return None;
    }
    match u16::from_be_bytes([h[6], h[7]]) {
        0x0021 => Some(ETHERTYPE_IPV4),
        0x0057 => Some(ETHERTYPE_IPV6),
        _ => None,
    }
}

/// The IP packet in an 802.11 frame: an unencrypted data frame with an LLC/SNAP header
/// whose ethertype is IPv4 or IPv6; `None` for anything else (management and control
/// frames, null data, encrypted data, other protocols, short frames).
fn wifi_payload(d: &[u8]) -> Option<&[u8]> {
    let (fc0, fc1) = (*d.first()?, *d.get(1)?);
    // Type (bits 2-3) 2 is data; subtype bit 2 set means no data (null, CF-ack/poll only).
    if (fc0 >> 2) & 0x3 != 2 || fc0 & 0x40 != 0 || fc1 & 0x40 != 0 {
        return None;
    }
    let qos = fc0 & 0x80 != 0;
    let mut off = 24;
    if fc1 & 0x03 == 0x03 {
        off += 6; // ToDS and FromDS: a fourth address.
    }
    if qos {
        off += 2;
        if fc1 & 0x80 != 0 {
            off += 4; // +HTC: an HT control field.
        }
    }
    let llc = d.get(off..off + 8)?;
    if llc[..3] != [0xaa, 0xaa, 0x03] {
        return None;
    }
    match u16::from_be_bytes([llc[6], llc[7]]) {
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => Some(&d[off + 8..]),
        _ => None,
    }
}

/// NFULA_PAYLOAD: the TLV of an NFLOG message that holds the packet.
const NFULA_PAYLOAD: u16 = 9;

/// The IP packet in an NFLOG message (`nfgenmsg`: family, version, resource id; then TLVs of
/// a 16-bit length including the 4-byte TLV header, a 16-bit type, the value padded to 4
/// bytes). The TLV fields are in the logging host's byte order, told from the first TLV.
/// `None`: no payload TLV, or another family.
fn nflog_payload(d: &[u8]) -> Option<&[u8]> {
    if !matches!(*d.first()?, 2 | 10) {
        return None;
    }
    let field = |b: &[u8], le: bool| {
        if le {
            u16::from_le_bytes([b[0], b[1]])
        } else {
            u16::from_be_bytes([b[0], b[1]])
        }
    };
    // The byte order is the one in which the first TLV is a known type (1..=20) that fits.
    let first = d.get(4..8)?;
    let fits = |le: bool| {
        let (len, ty) = (
            usize::from(field(first, le)),
            field(&first[2..], le) & 0x3fff,
        );
        (4..=d.len() - 4).contains(&len) && (1..=20).contains(&ty)
    };
    let le = fits(true) || !fits(false);
    let mut off = 4;
    while let Some(h) = d.get(off..off + 4) {
        let len = usize::from(field(h, le));
        if len < 4 || len > d.len() - off {
            return None;
        }
        // The top bits of the type are flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER).
        if field(&h[2..], le) & 0x3fff == NFULA_PAYLOAD {
            return Some(&d[off + 4..off + len]);
        }
        off += (len + 3) & !3;
    }
    None
}
