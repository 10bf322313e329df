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

/// A capture moved to a new ring (the agent grows and shrinks its rings) while a connection
/// streams data: the old ring's unread packets are read into the hand-over, and the packets
/// both rings got while both were open come once. The client's data segments, in the order
/// read, must then follow on byte for byte: no gap (packets left in the old ring) and no
/// repeat (packets from both rings).
#[test]
fn a_handed_over_capture_loses_and_repeats_no_packet() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut cfg = LiveConfig::new(port);
    cfg.interface = Some("lo".into());
    let mut old = LiveRings::open(&cfg, 4 << 20, 1).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_nodelay(true).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let sink = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while server.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let done2 = done.clone();
    let source = std::thread::spawn(move || {
        // Bounded: at most 50,000 messages (~10 s at 200 µs apart).
        for _ in 0..50_000 {
            if done2.load(Ordering::Relaxed) {
                break;
            }
            client.write_all(&[7u8; 200]).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    let segs: std::cell::RefCell<Vec<(u32, usize)>> = Default::default();
    let mut take = |p: &netdoctor_core::RawPacket<'_>| {
        let (src, _, seq, _, _) = parse(p.data);
        let ihl = usize::from(p.data[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([p.data[2], p.data[3]]));
        let doff = usize::from(p.data[ihl + 12] >> 4) * 4;
        let len = total - ihl - doff;
        if src != port && len > 0 {
            segs.borrow_mut().push((seq, len));
        }
        ControlFlow::Continue(())
    };
    // Read the old ring for a while, then let packets wait in it unread.
    read_for(&mut old, 200, &mut take);
    let before = segs.borrow().len();
    std::thread::sleep(Duration::from_millis(100));
    let mut new = LiveRings::open(&cfg, 4 << 20, 1).unwrap();
    // Both rings take packets for a while.
    std::thread::sleep(Duration::from_millis(50));
    let handed = old.hand_over(&mut new, &mut take);
    drop(old);
    let after_hand_over = segs.borrow().len();
    read_for(&mut new, 200, &mut take);
    done.store(true, Ordering::Relaxed);
    source.join().unwrap();
    sink.join().unwrap();

    let segs = segs.into_inner();
    assert!(before > 10, "the old ring was read: {before} segments");
    assert!(
        handed > 0 && after_hand_over > before,
        "the hand-over read what waited in the old ring: {handed} packets"
    );
    assert!(segs.len() > after_hand_over + 10, "the new ring was read");
    let mut gaps = Vec::new();
    for w in segs.windows(2) {
        let ((a, la), (b, _)) = (w[0], w[1]);
        if a.wrapping_add(la as u32) != b {
            gaps.push((a, la, b));
        }
    }
    assert!(
        gaps.is_empty(),
        "{} of {} segments do not follow on (seq, len, next seq), first: {:?}",
        gaps.len(),
        segs.len(),
        &gaps[..gaps.len().min(5)]
    );
}

/// Reads `cap` into `f` for `ms` milliseconds.
fn read_for(
    cap: &mut LiveRings,
    ms: u64,
    f: &mut dyn FnMut(&netdoctor_core::RawPacket<'_>) -> ControlFlow<()>,
) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(ms));
            stop.store(true, Ordering::Relaxed);
        });
        cap.run_flow(&stop, f).unwrap();
    });
}
