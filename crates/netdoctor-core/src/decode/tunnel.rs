//! Tunnels whose inner packets are the connections to read: VXLAN (UDP 4789, and 8472, the
//! Linux kernel's default and flannel's), Geneve (UDP 6081), GRE (version 0: IPv4, IPv6 or
//! Ethernet inside; with checksum, key and sequence fields), and IP in IP (IPv4 or IPv6 in
//! either). A capture on an overlay network's underlay (a Kubernetes node's uplink, a
//! hypervisor) holds nothing but these; without this it read as "no TCP segments".
//!
//! Hand-written: each is a fixed header of a few bytes and a protocol field (etherparse 0.21
//! knows none of them), and only the offset of the inner packet is needed. One level is
//! peeled ([`MAX_DEPTH`] in all): a packet nested deeper is left as not TCP, so a crafted
//! packet cannot recurse.

use crate::packet::{LinkType, RawPacket};

/// Tunnels peeled one inside another, at most.
pub(super) const MAX_DEPTH: u8 = 2;

const UDP: u8 = 17;
const GRE: u8 = 47;
const IPV4_IN_IP: u8 = 4;
const IPV6_IN_IP: u8 = 41;
const VXLAN_PORTS: [u16; 2] = [4789, 8472];
const GENEVE_PORT: u16 = 6081;
const ETHERTYPE_TEB: u16 = 0x6558;

/// The packet inside a tunnel packet whose IP payload (`ip_number`, `payload`) is the tunnel,
/// as a frame of its own (same number and time), or `None` when it is no tunnel known here.
pub(super) fn inner<'a>(
    pkt: &RawPacket<'a>,
    ip_number: u8,
    payload: &'a [u8],
) -> Option<RawPacket<'a>> {
    let be16 = |at: usize| {
        Some(u16::from_be_bytes([
            *payload.get(at)?,
            *payload.get(at + 1)?,
        ]))
    };
    let (link, off) = match ip_number {
        IPV4_IN_IP | IPV6_IN_IP => (LinkType::Raw, 0),
        UDP => {
            let dport = be16(2)?;
            if VXLAN_PORTS.contains(&dport) {
                // Flags (the I bit says the network identifier is valid), 3 reserved bytes,
                // the identifier, a reserved byte; then an Ethernet frame.
                (*payload.get(8)? & 0x08 != 0).then_some((LinkType::Ethernet, 16))?
            } else if dport == GENEVE_PORT {
                // Version (0) and options length in 4-byte words, flags, protocol type.
                let b0 = *payload.get(8)?;
                if b0 >> 6 != 0 || be16(10)? != ETHERTYPE_TEB {
                    return None;
                }
                (LinkType::Ethernet, 16 + usize::from(b0 & 0x3f) * 4)
            } else {
                return None;
            }
        }
        GRE => {
            let flags = be16(0)?;
            // Version 0 only (version 1 is PPTP's enhanced GRE, carrying PPP); no routing.
            if flags & 0x0007 != 0 || flags & 0x4000 != 0 {
                return None;
            }
            let off = 4 + 4 * [0x8000u16, 0x2000, 0x1000]
                .iter()
                .filter(|&&b| flags & b != 0)
                .count();
            match be16(2)? {
                0x0800 | 0x86dd => (LinkType::Raw, off),
                ETHERTYPE_TEB => (LinkType::Ethernet, off),
                _ => return None,
            }
        }
        _ => return None,
    };
    let data = payload.get(off..).filter(|d| !d.is_empty())?;
    let outer = pkt.data.len() - data.len();
    Some(RawPacket {
        link,
        data,
        orig_len: pkt.orig_len.saturating_sub(outer as u32),
        ..*pkt
    })
}
