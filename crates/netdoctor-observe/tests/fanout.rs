//! Live capture on three rings of one PACKET_FANOUT group, on loopback (needs root; skipped with
//! a message otherwise): every packet of 24 connections arrives once (without the group each
//! socket would get every packet), each connection whole (SYN to both FINs) and in order.

use netdoctor_observe::LiveConfig;
use netdoctor_observe::fanout::LiveRings;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// (source port, destination port, seq, ack, flags) of an IPv4 TCP packet.
fn parse(ip: &[u8]) -> (u16, u16, u32, u32, u8) {
    let t = &ip[usize::from(ip[0] & 0x0f) * 4..];
    (
        u16::from_be_bytes([t[0], t[1]]),
        u16::from_be_bytes([t[2], t[3]]),
        u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        t[13],
    )
}

const CONNS: usize = 24;

#[test]
fn three_fanout_rings_see_every_packet_once_and_connections_whole() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut cfg = LiveConfig::new(port);
    cfg.interface = Some("lo".into());
    cfg.max_packets = Some(5000);
    let mut cap = LiveRings::open(&cfg, 1 << 20, 3).unwrap();
    assert_eq!(cap.rings(), 3);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut pkts = Vec::new();
        let mut fins = 0;
        let summary = cap
            .run_flow(&stop2, &mut |p| {
                let s = parse(p.data);
                if s.4 & 0x01 != 0 {
                    fins += 1;
                    if fins == 2 * CONNS {
                        let _ = done_tx.send(());
                    }
                }
                pkts.push((p.frame, s));
                ControlFlow::Continue(())
            })
            .unwrap();
        (pkts, summary)
    });
    let addr = listener.local_addr().unwrap();
    for _ in 0..CONNS {
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        s.write_all(b"pong").unwrap();
        c.read_exact(&mut buf).unwrap();
        drop(c);
        assert_eq!(s.read(&mut buf).unwrap(), 0);
        drop(s);
    }
    // A chunk is handed over when full, 5 ms of capture time after its first packet, or at the
    // stop: the last packets of a quiet capture come at the stop, so wait a little, then stop.
    let _ = done_rx.recv_timeout(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let (pkts, summary) = reader.join().unwrap();

    assert_eq!(summary.packets, pkts.len() as u64);
    assert_eq!(summary.drops, 0, "{:?}", summary.warnings);
    assert!(
        pkts.iter().enumerate().all(|(i, p)| p.0 == i as u64 + 1),
        "frames numbered in arrival order"
    );
    let unique: HashSet<_> = pkts.iter().map(|p| p.1).collect();
    assert_eq!(
        unique.len(),
        pkts.len(),
        "a packet came twice: the rings did not share"
    );
    // Per connection: SYN first, both FINs, sequence numbers of each direction in order.
    let mut by_conn: HashMap<u16, Vec<(u16, u32, u8)>> = HashMap::new();
    for (_, (src, dst, seq, _, flags)) in &pkts {
        let client = if *src == port { *dst } else { *src };
        by_conn
            .entry(client)
            .or_default()
            .push((*src, *seq, *flags));
    }
    assert_eq!(by_conn.len(), CONNS, "connections seen");
    for (client, segs) in &by_conn {
        assert_eq!(
            segs[0].2 & 0x12,
            0x02,
            "{client}: starts with the SYN: {segs:?}"
        );
        assert_eq!(
            segs.iter().filter(|s| s.2 & 0x01 != 0).count(),
            2,
            "{client}: {segs:?}"
        );
        for side in [port, *client] {
            let seqs: Vec<u32> = segs.iter().filter(|s| s.0 == side).map(|s| s.1).collect();
            assert!(
                seqs.windows(2).all(|w| w[1].wrapping_sub(w[0]) as i32 >= 0),
                "{client}: side {side} out of order: {seqs:?}"
            );
        }
    }
}
