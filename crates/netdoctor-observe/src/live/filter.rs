//! The capture's classic BPF filter, apart from the ring's reading in [`super`]: the program
//! decides what reaches the ring (the port, no IPv4 non-first fragments, the snap length, no
//! loopback doubles), the reader only walks what the kernel kept.

use super::{ARPHRD_LOOPBACK, PACKET_OUTGOING};

/// The classic BPF program: IPv4/IPv6 TCP with source or destination port `port`, IPv4
/// non-first fragments dropped, cut to `snaplen` bytes, and the outgoing copy of a packet on a
/// loopback device rejected (`SKF_AD_PKTTYPE` `PACKET_OUTGOING` with `SKF_AD_HATYPE`
/// `ARPHRD_LOOPBACK`): loopback passes every packet through the tap twice, and the kernel
/// copying both into the ring only for the reader to skip one doubled the ring's traffic and
/// the reader's wake-ups. Offsets are from the network header (cooked socket); the ethertype
/// is the SKF_AD_PROTOCOL ancillary load.
pub fn port_filter(port: u16, snaplen: u32) -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = 0x20;
    const LD_H_ABS: u16 = 0x28;
    const LD_B_ABS: u16 = 0x30;
    const LDX_B_MSH: u16 = 0xb1;
    const LD_H_IND: u16 = 0x48;
    const JEQ_K: u16 = 0x15;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const AD_PROTOCOL: u32 = (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32;
    const AD_PKTTYPE: u32 = (libc::SKF_AD_OFF + libc::SKF_AD_PKTTYPE) as u32;
    const AD_HATYPE: u32 = (libc::SKF_AD_OFF + libc::SKF_AD_HATYPE) as u32;
    const IPV4: usize = 4;
    const IPV6: usize = 15;
    const ACCEPT: usize = 22;
    const REJECT: usize = 23;
    let p = u32::from(port);
    let ins = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    // Jump offset from instruction `at` to `to`.
    let j = |at: usize, to: usize| (to - at - 1) as u8;
    vec![
        ins(LD_W_ABS, 0, 0, AD_PKTTYPE), // 0: A = packet type
        ins(JEQ_K, 0, j(1, IPV4), u32::from(PACKET_OUTGOING)), // 1: outgoing?
        ins(LD_W_ABS, 0, 0, AD_HATYPE),  // 2: A = device type
        ins(JEQ_K, j(3, REJECT), 0, u32::from(ARPHRD_LOOPBACK)), // 3: loopback's copy?
        ins(LD_H_ABS, 0, 0, AD_PROTOCOL), // 4: A = ethertype
        ins(JEQ_K, 0, j(5, IPV6), 0x0800), // 5: IPv4?
        ins(LD_B_ABS, 0, 0, 9),          // 6: A = protocol
        ins(JEQ_K, 0, j(7, REJECT), 6),  // 7: TCP?
        ins(LD_H_ABS, 0, 0, 6),          // 8: A = flags + fragment offset
        ins(JSET_K, j(9, REJECT), 0, 0x1fff), // 9: non-first fragment?
        ins(LDX_B_MSH, 0, 0, 0),         // 10: X = IPv4 header length
        ins(LD_H_IND, 0, 0, 0),          // 11: A = source port
        ins(JEQ_K, j(12, ACCEPT), 0, p), // 12
        ins(LD_H_IND, 0, 0, 2),          // 13: A = destination port
        ins(JEQ_K, j(14, ACCEPT), j(14, REJECT), p), // 14
        ins(JEQ_K, 0, j(15, REJECT), 0x86dd), // 15: IPv6?
        ins(LD_B_ABS, 0, 0, 6),          // 16: A = next header
        ins(JEQ_K, 0, j(17, REJECT), 6), // 17: TCP (no extension headers)?
        ins(LD_H_ABS, 0, 0, 40),         // 18: A = source port
        ins(JEQ_K, j(19, ACCEPT), 0, p), // 19
        ins(LD_H_ABS, 0, 0, 42),         // 20: A = destination port
        ins(JEQ_K, j(21, ACCEPT), j(21, REJECT), p), // 21
        ins(RET_K, 0, 0, snaplen),       // 22: accept, cut to snaplen
        ins(RET_K, 0, 0, 0),             // 23: reject
    ]
}
