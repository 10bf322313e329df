//! Live AF_PACKET capture on loopback (needs root; skipped with a message otherwise).

use netdoctor_core::LinkType;
use netdoctor_observe::{LiveCapture, LiveConfig, LiveSource, ObserveError, PacketSource};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Seg {
    src: u16,
    dst: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

fn parse(ip: &[u8]) -> Seg {
    let (ihl, total) = match ip[0] >> 4 {
        4 => {
            assert_eq!(ip[9], 6, "TCP");
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            (usize::from(ip[0] & 0x0f) * 4, total)
        }
        6 => {
            assert_eq!(ip[6], 6, "TCP");
            (40, 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]])))
        }
        v => panic!("IP version {v}: data must start at the network header"),
    };
    let t = &ip[ihl..];
    let doff = usize::from(t[12] >> 4) * 4;
    Seg {
        src: u16::from_be_bytes([t[0], t[1]]),
        dst: u16::from_be_bytes([t[2], t[3]]),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: t[13],
        payload: ip[ihl + doff..total.min(ip.len())].to_vec(),
    }
}

/// One connection to `port` exchanging "ping"/"pong", closed by both sides.
fn exchange(listener: &TcpListener) -> u16 {
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    client.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    server.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
    server.write_all(b"pong").unwrap();
    client.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"pong");
    let client_port = client.local_addr().unwrap().port();
    drop(client);
    // The server sees EOF once the client's FIN arrived, then closes its side.
    assert_eq!(server.read(&mut buf).unwrap(), 0);
    drop(server);
    client_port
}

#[test]
fn loopback_capture_sees_each_packet_once_and_filters_ports() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let watched = TcpListener::bind("127.0.0.1:0").unwrap();
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = watched.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();

    let mut cfg = LiveConfig::new(port);
    cfg.interface = Some("lo".into());
    // Bound the test even if something goes wrong with the stop flag.
    cfg.max_packets = Some(1000);
    let mut cap = LiveCapture::open(&cfg).unwrap();
    assert_eq!(cap.link_type(), LinkType::Raw);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    // Ready signal: the capture has seen a FIN from both ends of a connection.
    let (fins_tx, fins_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut pkts = Vec::new();
        let mut fin_from = std::collections::HashSet::new();
        let summary = cap
            .run(&stop2, &mut |p| {
                let s = parse(p.data);
                if s.flags & FIN != 0 && fin_from.insert(s.src) && fin_from.len() == 2 {
                    let _ = fins_tx.send(());
                }
                pkts.push((p.frame, p.ts_ns, p.link, p.orig_len, p.data.to_vec()))
            })
            .unwrap();
        (pkts, summary, cap.skipped_copies())
    });

    // `open` returned: the socket is capturing.
    exchange(&other);
    let client_port = exchange(&watched);
    // Generous bound only so a broken capture fails instead of hanging; the assertions below
    // say what is missing.
    let _ = fins_rx.recv_timeout(std::time::Duration::from_secs(20));
    stop.store(true, Ordering::Relaxed);
    let (pkts, summary, skipped_copies) = reader.join().unwrap();

    assert_eq!(summary.packets, pkts.len() as u64);
    // The filter drops loopback's outgoing copies in the kernel: none reaches the ring.
    assert_eq!(skipped_copies, 0, "outgoing copies in the ring");
    assert_eq!(summary.drops, 0);
    assert!(pkts.iter().all(|p| p.2 == LinkType::Raw));
    assert!(
        pkts.windows(2).all(|w| w[0].1 <= w[1].1),
        "timestamps monotonic"
    );
    assert!(
        pkts.windows(2).all(|w| w[0].0 + 1 == w[1].0),
        "frames numbered"
    );
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    assert!(
        pkts.iter().all(|p| (now_ns - p.1).abs() < 600_000_000_000),
        "wall-clock timestamps"
    );

    let segs: Vec<Seg> = pkts.iter().map(|p| parse(&p.4)).collect();
    assert!(
        segs.iter()
            .all(|s| s.src != other_port && s.dst != other_port),
        "the other port must be filtered out"
    );
    assert!(segs.iter().all(|s| s.src == port || s.dst == port));
    // Each packet exactly once: no two identical segments (loopback taps every packet twice).
    for (i, a) in segs.iter().enumerate() {
        assert!(!segs[i + 1..].contains(a), "duplicate {a:?}");
    }
    let count = |pred: &dyn Fn(&Seg) -> bool| segs.iter().filter(|s| pred(s)).count();
    let c2s = |s: &Seg| s.src == client_port && s.dst == port;
    let s2c = |s: &Seg| s.src == port && s.dst == client_port;
    assert_eq!(count(&|s| c2s(s) && s.flags & (SYN | ACK) == SYN), 1, "SYN");
    assert_eq!(
        count(&|s| s2c(s) && s.flags & (SYN | ACK) == SYN | ACK),
        1,
        "SYN-ACK"
    );
    let syn = segs.iter().find(|s| c2s(s) && s.flags & SYN != 0).unwrap();
    let synack = segs.iter().find(|s| s2c(s) && s.flags & SYN != 0).unwrap();
    assert_eq!(synack.ack, syn.seq.wrapping_add(1));
    assert_eq!(
        count(&|s| c2s(s)
            && s.flags & (SYN | FIN | RST) == 0
            && s.payload.is_empty()
            && s.seq == syn.seq.wrapping_add(1)
            && s.ack == synack.seq.wrapping_add(1)),
        1,
        "handshake ACK"
    );
    assert_eq!(
        count(&|s| c2s(s) && s.payload == b"ping"),
        1,
        "request data"
    );
    assert_eq!(
        count(&|s| s2c(s) && s.payload == b"pong"),
        1,
        "response data"
    );
    assert_eq!(count(&|s| c2s(s) && s.flags & FIN != 0), 1, "client FIN");
    assert_eq!(count(&|s| s2c(s) && s.flags & FIN != 0), 1, "server FIN");
}

#[test]
fn max_packets_ends_the_capture_and_source_trait_works() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = LiveConfig::new(listener.local_addr().unwrap().port());
    cfg.max_packets = Some(2);
    let mut cap = LiveCapture::open(&cfg).unwrap();
    exchange(&listener);
    // Never set: the capture must end on max_packets alone.
    let stop = AtomicBool::new(false);
    let mut src = LiveSource {
        capture: &mut cap,
        stop: &stop,
    };
    let mut flags = Vec::new();
    let summary = src
        .for_each_packet(&mut |p| {
            flags.push(parse(p.data).flags);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(summary.packets, 2);
    assert_eq!(flags, [SYN, SYN | ACK]);
}

#[test]
fn unknown_interface_is_a_clear_error() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let mut cfg = LiveConfig::new(80);
    cfg.interface = Some("nd-nosuch0".into());
    let err = LiveCapture::open(&cfg).err().unwrap();
    assert!(matches!(err, ObserveError::Capture { .. }));
    assert!(
        err.to_string()
            .starts_with("find capture interface nd-nosuch0: "),
        "{err}"
    );
}

#[test]
fn ipv6_loopback_is_captured() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        eprintln!("skipped: no IPv6 loopback");
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let mut cfg = LiveConfig::new(port);
    cfg.max_packets = Some(1000);
    let mut cap = LiveCapture::open(&cfg).unwrap();
    let client_port = exchange(&listener);
    // The capture ends when it sees the response; a watchdog bounds it if it never does.
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = done_rx.recv_timeout(std::time::Duration::from_secs(20));
            stop.store(true, Ordering::Relaxed);
        })
    };
    let mut segs = Vec::new();
    cap.run_flow(&stop, &mut |p| {
        assert_eq!(p.data[0] >> 4, 6);
        segs.push(parse(p.data));
        if segs.last().is_some_and(|s| s.payload == b"pong") {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    drop(done_tx);
    watchdog.join().unwrap();
    let from_client = |s: &&Seg| s.src == client_port && s.dst == port;
    assert_eq!(
        segs.iter()
            .filter(|s| from_client(s) && s.flags == SYN)
            .count(),
        1
    );
    assert_eq!(
        segs.iter()
            .filter(|s| from_client(s) && s.payload == b"ping")
            .count(),
        1
    );
    assert_eq!(
        segs.iter()
            .filter(|s| s.src == port && s.payload == b"pong")
            .count(),
        1
    );
}

/// Linux capabilities are per thread: drop CAP_NET_RAW from this thread's effective set only.
fn drop_net_raw_in_this_thread() -> bool {
    use netdoctor_sys::privilege::{Capability, drop_effective_in_this_thread};
    drop_effective_in_this_thread(Capability::NetRaw).unwrap_or(false)
}

#[test]
fn without_cap_net_raw_the_error_says_what_is_missing() {
    let err = std::thread::spawn(|| {
        if !drop_net_raw_in_this_thread() {
            return None;
        }
        LiveCapture::open(&LiveConfig::new(80)).err()
    })
    .join()
    .unwrap();
    let Some(err) = err else {
        eprintln!("skipped: could not drop CAP_NET_RAW in a thread");
        return;
    };
    assert!(matches!(err, ObserveError::NeedsCapNetRaw), "{err:?}");
    assert_eq!(
        err.to_string(),
        "packet capture needs CAP_NET_RAW (run as root); the rest of the diagnosis works without it"
    );
}

/// A small ring (512 KiB) still captures, and when the reader stays away while thousands of
/// packets arrive, the kernel's drops are counted and named in a warning instead of being lost
/// silently.
#[test]
fn a_small_ring_counts_its_drops() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    use netdoctor_observe::live::{MIN_RING_BYTES, ring_geometry};
    assert_eq!(ring_geometry(MIN_RING_BYTES), (128 << 10, 4));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut cap = LiveCapture::open_with_ring(&LiveConfig::new(port), MIN_RING_BYTES).unwrap();
    // Nothing reads the ring while 20000 small segments (and their ACKs) go through it: about
    // 40000 frames of ~350 bytes, 27 times what 512 KiB hold.
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_nodelay(true).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut n = 0usize;
        while n < 20_000 * 8 {
            let k = server.read(&mut buf).unwrap();
            assert!(k > 0);
            n += k;
        }
    });
    for i in 0..20_000u64 {
        client.write_all(&i.to_be_bytes()).unwrap();
        if i % 64 == 0 {
            // Give the reader a turn now and then so writes leave as separate segments.
            std::thread::yield_now();
        }
    }
    reader.join().unwrap();
    let stop = AtomicBool::new(true);
    let mut seen = 0u64;
    let summary = cap.run(&stop, &mut |_| seen += 1).unwrap();
    assert!(seen > 0, "a small ring still captures");
    assert!(summary.drops > 0, "{seen} packets seen, no drops counted");
    assert_eq!(summary.ring_fill, 1.0, "a ring that dropped was full");
    assert!(
        summary.warnings.iter().any(|w| w.contains("dropped")),
        "{:?}",
        summary.warnings
    );
}

#[test]
fn ring_geometry_is_whole_power_of_two_blocks() {
    use netdoctor_observe::live::{DEFAULT_RING_BYTES, ring_geometry};
    assert_eq!(ring_geometry(DEFAULT_RING_BYTES), (1 << 20, 32));
    assert_eq!(ring_geometry(4 << 20), (128 << 10, 32));
    assert_eq!(ring_geometry(6 << 20), (128 << 10, 48));
    assert_eq!(ring_geometry(256 << 20), (4 << 20, 64));
    // Below the minimum: the minimum.
    assert_eq!(ring_geometry(1), (128 << 10, 4));
    // A short snap length allows small blocks: a small ring keeps about 32 of them.
    use netdoctor_observe::live::ring_geometry_for;
    assert_eq!(ring_geometry_for(2 << 20, 256), (64 << 10, 32));
    assert_eq!(ring_geometry_for(512 << 10, 256), (16 << 10, 32));
    assert_eq!(ring_geometry_for(1, 256), (16 << 10, 4));
    assert_eq!(ring_geometry_for(2 << 20, 65_535), ring_geometry(2 << 20));
}

#[test]
fn ring_fill_is_the_share_of_blocks_that_waited_for_the_reader() {
    if !is_root() {
        eprintln!("skipped: live capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // 64 blocks of 64 KiB: the geometry a grown ring of `watch` has (more blocks, same size).
    let mut cap = LiveCapture::open_with_geometry(&LiveConfig::new(port), 64 << 10, 64).unwrap();
    // Nothing reads the ring for at least 200 ms of exchanges: each block is handed over after
    // 10 ms (or when full), so blocks pile up, but far fewer than 64 × 64 KiB hold.
    let t0 = std::time::Instant::now();
    let mut n = 0;
    while t0.elapsed() < std::time::Duration::from_millis(200) || n < 20 {
        exchange(&listener);
        n += 1;
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let stop = AtomicBool::new(true);
    let mut seen = 0u64;
    let s = cap.run(&stop, &mut |_| seen += 1).unwrap();
    assert!(seen >= 20 * 8, "{seen} packets of {n} exchanges");
    assert_eq!(s.drops, 0);
    assert!(
        s.ring_fill >= 2.0 / 64.0 && s.ring_fill < 1.0,
        "{} of the blocks waited ({seen} packets over {:?})",
        s.ring_fill,
        t0.elapsed()
    );
    // Read at once: nothing waited.
    let s = cap.run(&stop, &mut |_| {}).unwrap();
    assert_eq!(s.ring_fill, 0.0);
}
