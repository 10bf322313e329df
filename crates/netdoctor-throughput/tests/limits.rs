//! The transfer-limit findings on real loopback transfers between our client and server: a
//! rate-limited writer is `application_limited`; a receiver with a small receive buffer is
//! `receive_window_limited` (and not application-limited); a flat-out transfer is not
//! application-limited, nor limited by its send buffer, loss, a shaper or the MTU. The other
//! limits need a path: `crates/netdoctor/tests/live/throughput_lab.rs` runs the lab cases.

use netdoctor_core::FindingId;
use netdoctor_throughput::{ClientConfig, Report, Server, ServerConfig, run_client};
use std::time::Duration;

/// One transfer at a time: a flat-out transfer on loopback takes both cores of a 2-core machine,
/// and a writer or reader starved by the neighbour's transfer looks application- or
/// window-limited.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn transfer(rcvbuf: Option<usize>, bitrate: Option<u64>) -> Report {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    transfer_serialized(rcvbuf, bitrate)
}

/// [`transfer`] for a caller that holds [`SERIAL`] already (one that runs something beside
/// the transfer, which must not overlap another test's transfer).
fn transfer_serialized(rcvbuf: Option<usize>, bitrate: Option<u64>) -> Report {
    let s = Server::bind(ServerConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        interval: Duration::from_secs(1),
        rcvbuf,
        threads: None,
        zerocopy: false,
        notsent_lowat: None,
    })
    .unwrap();
    let port = s.local_addr().port();
    let h = std::thread::spawn(move || s.serve_one(&mut |_| {}).unwrap());
    let r = run_client(
        &ClientConfig {
            port,
            duration: 4,
            bitrate,
            interval: Duration::from_millis(500),
            ..ClientConfig::default()
        },
        &mut |_| {},
    )
    .unwrap();
    h.join().unwrap();
    r
}

fn ids(r: &Report) -> Vec<FindingId> {
    r.findings.iter().map(|f| f.id).collect()
}

#[test]
fn a_rate_limited_writer_is_application_limited() {
    let r = transfer(None, Some(200_000_000));
    assert_eq!(
        ids(&r),
        vec![FindingId::ApplicationLimited],
        "{:#?}",
        r.findings
    );
    let f = &r.findings[0];
    assert!(f.summary.contains("200 Mbits/sec"), "{}", f.summary);
}

#[test]
fn a_small_receive_buffer_is_receive_window_limited() {
    let r = transfer(Some(32 * 1024), None);
    assert!(
        ids(&r).contains(&FindingId::ReceiveWindowLimited),
        "{:#?}\n{:#?}",
        r.findings,
        r.intervals.iter().map(|i| &i.streams).collect::<Vec<_>>()
    );
    assert!(!ids(&r).contains(&FindingId::ApplicationLimited));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == FindingId::ReceiveWindowLimited)
        .unwrap();
    assert_eq!(
        f.side,
        netdoctor_core::Side::Server,
        "the receiver is the server"
    );
    // TCP_INFO is read inside each interval too (every 100 ms by the writer, plus the edge):
    // more reads than interval edges, figures that hold together, and the evidence says so.
    let reads: Vec<_> = r
        .intervals
        .iter()
        .flat_map(|i| &i.streams)
        .filter(|s| s.sender)
        .map(|s| s.tcp_reads.expect("a TCP sender's interval has its reads"))
        .collect();
    let total: u32 = reads.iter().map(|x| x.reads).sum();
    assert!(total as usize > reads.len(), "{reads:#?}");
    for x in &reads {
        assert!(x.reads >= 1 && x.at_window <= x.reads, "{x:?}");
        assert!(x.cwnd_min <= x.cwnd_max && x.cwnd_max > 0, "{x:?}");
        for share in [
            x.busy,
            x.rwnd_limited,
            x.sndbuf_limited,
            x.rwnd_limited_peak,
        ] {
            assert!((0.0..=1.0).contains(&share), "{x:?}");
        }
        // The kernel's busy time includes its limited times.
        assert!(x.rwnd_limited + x.sndbuf_limited <= x.busy + 0.02, "{x:?}");
    }
    assert!(
        reads.iter().map(|x| x.at_window).sum::<u32>() >= 1,
        "{reads:#?}"
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| format!("{e:?}").contains("tcp_info read")),
        "{:#?}",
        f.evidence
    );
}

#[test]
fn a_flat_out_transfer_is_not_application_limited() {
    // Nor any other limit: default buffers keep the connection busy (not the send buffer), no
    // retransmits (not loss), no standing queue (not a shaper), everything acknowledged.
    let r = transfer(None, None);
    for id in [
        FindingId::ApplicationLimited,
        FindingId::SendBufferLimited,
        FindingId::CongestionLimited,
        FindingId::ShaperLimited,
        FindingId::MssMtuProblem,
        FindingId::ReceiverSoftirqSaturated,
    ] {
        assert!(!ids(&r).contains(&id), "{id}: {:#?}", r.findings);
    }
    // Our server sent its CPUs: the receiver's softirq was judged, not skipped.
    assert!(r.receiver_cpu.is_some(), "{:?}", r.skipped);
}

/// A CPU saturated by a user-space hog (a spinning thread beside the transfer) is busy, but
/// not in softirq: not `receiver_softirq_saturated`.
#[test]
fn a_cpu_busy_in_user_space_is_not_softirq_saturation() {
    // The hog starts only once no other transfer runs: spinning beside another test's
    // flat-out transfer it starved that one's writer (`a_flat_out_transfer_…` then read
    // `send_buffer_limited`, 1 run in 10 under load).
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let hog = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        while !s2.load(std::sync::atomic::Ordering::Relaxed) && std::time::Instant::now() < deadline
        {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            std::hint::black_box(x);
        }
    });
    let r = transfer_serialized(None, Some(1_000_000_000));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    hog.join().unwrap();
    let cpu = r.receiver_cpu.as_ref().expect("our server sends its CPUs");
    assert!(
        cpu.busiest.iter().any(|c| c.user + c.system >= 0.5),
        "a CPU ran the hog: {cpu:?}"
    );
    assert!(
        !ids(&r).contains(&FindingId::ReceiverSoftirqSaturated),
        "{:#?}",
        r.findings
    );
}

#[test]
fn a_target_above_what_the_window_allows_is_not_application_limited() {
    // 50 Gbit/s cannot be reached through a 32 KiB window on loopback: the target is missed.
    let r = transfer(Some(32 * 1024), Some(50_000_000_000));
    assert!(
        !ids(&r).contains(&FindingId::ApplicationLimited),
        "{:#?}",
        r.findings
    );
}
