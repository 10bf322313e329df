//! Tunnels peeled to the inner connection (`decode/tunnel.rs`).

use super::*;

/// An IPv4 header (protocol `proto`, 10.9.0.1 → 10.9.0.2) in front of `payload`.
fn outer_ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut p = vec![
        0x45, 0, 0, 0, 0, 1, 0, 0, 64, proto, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2,
    ];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// A UDP header to `dport` in front of `payload`.
fn udp(dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = vec![0x30, 0x39];
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn ethernet(ip: &[u8]) -> Vec<u8> {
    let mut e = vec![0u8; 12];
    e.extend_from_slice(&[0x08, 0x00]);
    e.extend_from_slice(ip);
    e
}

/// The inner connection of VXLAN, Geneve, GRE and IP-in-IP packets is read; the look-alikes
/// (UDP to the VXLAN port without the I flag, UDP elsewhere, PPTP's GRE version 1, tunnels
/// nested deeper than two) are not TCP.
#[test]
fn tunnels_are_peeled_to_the_inner_connection() {
    let inner = ipv4_tcp(b"GET ");
    let check = |outer_ip: Vec<u8>, what: &str| {
        let frame = ethernet(&outer_ip);
        let seg = decode(&raw(LinkType::Ethernet, &frame))
            .unwrap()
            .unwrap_or_else(|| panic!("{what}: not read"));
        check_v4(&seg);
    };
    let mut vx = vec![0x08, 0, 0, 0, 0, 0, 42, 0];
    vx.extend_from_slice(&ethernet(&inner));
    check(outer_ipv4(17, &udp(4789, &vx)), "VXLAN");
    check(outer_ipv4(17, &udp(8472, &vx)), "VXLAN on 8472");
    // Geneve with one 4-byte option.
    let mut gn = vec![0x01, 0, 0x65, 0x58, 0, 0, 42, 0, 1, 2, 3, 4];
    gn.extend_from_slice(&ethernet(&inner));
    check(outer_ipv4(17, &udp(6081, &gn)), "Geneve");
    // GRE with a key, IPv4 inside; GRE with a checksum, Ethernet inside.
    let mut gre = vec![0x20, 0, 0x08, 0x00, 0, 0, 0, 7];
    gre.extend_from_slice(&inner);
    check(outer_ipv4(47, &gre), "GRE");
    let mut teb = vec![0x80, 0, 0x65, 0x58, 0, 0, 0, 0];
    teb.extend_from_slice(&ethernet(&inner));
    check(outer_ipv4(47, &teb), "GRE/Ethernet");
    check(outer_ipv4(4, &inner), "IP in IP");
    let mut gre_ipip = vec![0, 0, 0x08, 0x00];
    gre_ipip.extend_from_slice(&outer_ipv4(4, &inner));
    check(outer_ipv4(47, &gre_ipip), "IP in IP in GRE");
    // Look-alikes.
    let none = |outer_ip: Vec<u8>, what: &str| {
        let frame = ethernet(&outer_ip);
        let r = decode(&raw(LinkType::Ethernet, &frame));
        assert!(matches!(r, Ok(None)), "{what}: {}", seen(&r));
    };
    let mut no_i = vx.clone();
    no_i[0] = 0;
    none(
        outer_ipv4(17, &udp(4789, &no_i)),
        "VXLAN without the I flag",
    );
    none(outer_ipv4(17, &udp(53, &vx)), "UDP to another port");
    let mut pptp = vec![0x30, 0x01, 0x88, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0];
    pptp.extend_from_slice(&inner);
    none(outer_ipv4(47, &pptp), "PPTP's GRE");
    let deep = outer_ipv4(4, &outer_ipv4(4, &outer_ipv4(4, &inner)));
    none(deep, "three tunnels deep");
    none(outer_ipv4(17, &udp(4789, &vx[..8])), "VXLAN header alone");
}
