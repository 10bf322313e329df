//! The packet-rate mode on loopback: at a set rate everything arrives and is counted; flat out
//! into a tiny receive buffer, the losses are found in `Udp.RcvbufErrors`.

use netdoctor_throughput::pktrate::{RecvConfig, SendConfig, receive, send};
use std::sync::mpsc;
use std::time::Duration;

/// One run at a time: the flat-out sender of one test would starve the receiver of the other,
/// whose count must be exact.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(
    rcvbuf: usize,
    rate: u64,
    threads: u32,
    secs: u64,
    gso: bool,
) -> (
    netdoctor_throughput::pktrate::SendReport,
    netdoctor_throughput::pktrate::RecvReport,
) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (tx, rx) = mpsc::channel();
    let recv = std::thread::spawn(move || {
        receive(
            &RecvConfig {
                bind: "127.0.0.1:0".parse().unwrap(),
                threads: 1,
                duration: Duration::from_secs(secs + 5),
                idle: Duration::from_millis(500),
                rcvbuf,
            },
            &mut |a| tx.send(a).unwrap(),
        )
        .unwrap()
    });
    let target = rx.recv().unwrap();
    let s = send(&SendConfig {
        target,
        threads,
        size: 64,
        rate,
        duration: Duration::from_secs(secs),
        gso,
    })
    .unwrap();
    (s, recv.join().unwrap())
}

#[test]
fn at_a_set_rate_everything_is_counted() {
    let (s, r) = run(8 << 20, 20_000, 2, 1, false);
    assert_eq!(s.segments_per_message, 1, "{s:?}");
    // 20k/s for 1 s from two threads
    assert!(
        s.packets > 18_000 && s.packets <= 20_100,
        "sent {}",
        s.packets
    );
    assert_eq!(r.sent, s.packets, "the receiver's view of what was sent");
    assert_eq!(
        r.received, s.packets,
        "loopback at 20k/s loses nothing: {:?}",
        r
    );
    assert_eq!(r.lost, 0);
}

#[test]
fn a_full_receive_buffer_is_named_as_the_place_of_loss() {
    let (s, r) = run(4096, 0, 2, 1, true);
    assert!(
        r.lost > 0,
        "flat out into a 4 KiB buffer must drop: sent {} received {}",
        s.packets,
        r.received
    );
    let rcvbuf = r
        .evidence
        .iter()
        .find(|e| e.counter == "Udp.RcvbufErrors")
        .map(|e| e.delta)
        .unwrap_or(0);
    // Other processes on this host may add to the counter, never take from it.
    assert!(
        rcvbuf as f64 >= r.lost as f64 * 0.95,
        "RcvbufErrors +{rcvbuf} explains {} lost: {:?}",
        r.lost,
        r.evidence
    );
    assert!(r.unexplained <= r.lost / 20, "{r:?}");
    assert!(r.lines().iter().any(|l| l.contains("Udp.RcvbufErrors")));
}

/// GSO: 64 datagrams per message, cut by the kernel; each arrives on its own, numbered in order
/// (the receiver's highest sequence + 1 equals what was sent, so none was skipped or repeated).
#[test]
fn gso_messages_arrive_as_separate_numbered_datagrams() {
    let (s, r) = run(8 << 20, 20_000, 2, 1, true);
    assert_eq!(
        s.segments_per_message, 64,
        "loopback takes UDP_SEGMENT: {s:?}"
    );
    assert!(
        s.packets > 18_000 && s.packets <= 20_100,
        "sent {}",
        s.packets
    );
    assert_eq!(r.sent, s.packets, "the receiver's view of what was sent");
    assert_eq!(r.received, s.packets, "{r:?}");
    assert_eq!(r.bytes, s.packets * 64, "every datagram 64 bytes: {r:?}");
}
