//! Interoperability with a stock iperf3 on loopback: our client against `iperf3 -s`, and
//! `iperf3 -c` against our server, TCP and UDP, each direction. Each test compares what our
//! side measured with what iperf3 measured of the same transfer (iperf3's `--json` sums): they
//! must agree within 5 %.

use netdoctor_throughput::{ClientConfig, Report, Server, ServerConfig, run_client};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One transfer at a time: a TCP transfer on loopback takes a core per stream, so on a 2-core
/// machine a second test's transfer beside it starves this one's receiver (UDP datagrams lost,
/// TCP rates off) and the comparison would measure the neighbour.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn have_iperf3() -> bool {
    let ok = Command::new("iperf3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: needs iperf3 (apt-get install iperf3)");
    }
    ok
}

/// A port for an iperf3 server. Not port 0's pick: a port the kernel hands out and this test
/// frees again may be handed to the next test before iperf3 binds it. These come from a counter
/// below the ephemeral range (32768+), each checked free, so no two tests and no outgoing
/// connection share one.
fn free_port() -> u16 {
    netdoctor_lab::ports::unused_port([127, 0, 0, 1])
}

/// Waits until something listens on `port` (from /proc/net/tcp{,6}, without connecting: a
/// connection would count as iperf3's test).
fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let needle = format!(":{port:04X} ");
    while Instant::now() < deadline {
        for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let t = std::fs::read_to_string(f).unwrap_or_default();
            if t.lines().any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|a| format!("{a} ").contains(&needle))
                    && l.split_whitespace().nth(3) == Some("0A")
            }) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on port {port} after 10 s");
}

struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn iperf3_server(port: u16) -> Reaped {
    let c = Command::new("iperf3")
        .args([
            "-s",
            "-1",
            "--json",
            "-B",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn iperf3 -s");
    wait_listening(port);
    Reaped(c)
}

fn iperf3_output(mut c: Reaped) -> Value {
    let out = c.0.stdout.take().unwrap();
    let v: Value = serde_json::from_reader(out).expect("iperf3 JSON");
    assert!(v.get("error").is_none(), "iperf3 reported an error: {v}");
    v
}

fn bps(v: &Value, key: &str) -> f64 {
    v["end"][key]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no end.{key}.bits_per_second in {}", v["end"]))
}

/// iperf3's datagram count of `end.KEY`: sent, or on the receiving side received + lost.
fn datagrams(v: &Value, key: &str) -> f64 {
    v["end"][key]["packets"]
        .as_f64()
        .unwrap_or_else(|| panic!("no end.{key}.packets in {}", v["end"]))
}

fn ours(r: &Report, key: &str) -> f64 {
    let e = &r.end;
    match key {
        "sum_sent" => e.sum_sent.bits_per_second,
        "sum_received" => e.sum_received.bits_per_second,
        "sum_sent_bidir_reverse" => e.sum_sent_bidir_reverse.as_ref().unwrap().bits_per_second,
        "sum_received_bidir_reverse" => {
            e.sum_received_bidir_reverse
                .as_ref()
                .unwrap()
                .bits_per_second
        }
        _ => unreachable!(),
    }
}

fn agree(what: &str, a: f64, b: f64) {
    assert!(a > 0.0 && b > 0.0, "{what}: ours {a}, iperf3's {b}");
    let d = (a - b).abs() / b;
    assert!(
        d <= 0.05,
        "{what}: ours {a:.0} bit/s, iperf3's {b:.0} bit/s differ by {:.1} %",
        d * 100.0
    );
}

fn client(port: u16) -> ClientConfig {
    ClientConfig {
        port,
        duration: 3,
        interval: Duration::from_secs(1),
        ..ClientConfig::default()
    }
}

#[test]
fn our_tcp_client_against_iperf3_server() {
    if !have_iperf3() {
        return;
    }
    let _serial = one_at_a_time();
    // forward, two streams: what we sent against what iperf3 received
    let port = free_port();
    let srv = iperf3_server(port);
    let r = run_client(
        &ClientConfig {
            parallel: 2,
            ..client(port)
        },
        &mut |_| {},
    )
    .unwrap();
    let v = iperf3_output(srv);
    agree(
        "client→iperf3 -s: sent vs received",
        ours(&r, "sum_sent"),
        bps(&v, "sum_received"),
    );
    assert_eq!(r.intervals.len(), 3, "one interval per second");
    assert!(
        r.end.sum_sent.retransmits.is_some(),
        "a TCP sender counts retransmits"
    );
    // reverse: what iperf3 sent against what we received
    let port = free_port();
    let srv = iperf3_server(port);
    let r = run_client(
        &ClientConfig {
            reverse: true,
            ..client(port)
        },
        &mut |_| {},
    )
    .unwrap();
    let v = iperf3_output(srv);
    agree(
        "client -R: received vs iperf3 sent",
        ours(&r, "sum_received"),
        bps(&v, "sum_sent"),
    );
}

#[test]
fn our_tcp_client_bidir_against_iperf3_server() {
    if !have_iperf3() {
        return;
    }
    let _serial = one_at_a_time();
    let port = free_port();
    let srv = iperf3_server(port);
    let r = run_client(
        &ClientConfig {
            bidir: true,
            ..client(port)
        },
        &mut |_| {},
    )
    .unwrap();
    let v = iperf3_output(srv);
    agree(
        "bidir forward",
        ours(&r, "sum_sent"),
        bps(&v, "sum_received"),
    );
    agree(
        "bidir reverse",
        ours(&r, "sum_received_bidir_reverse"),
        bps(&v, "sum_sent_bidir_reverse"),
    );
}

fn our_server() -> (u16, std::thread::JoinHandle<Report>) {
    let s = Server::bind(ServerConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        interval: Duration::from_secs(1),
        rcvbuf: None,
        threads: None,
        zerocopy: false,
        notsent_lowat: None,
    })
    .unwrap();
    let port = s.local_addr().port();
    (
        port,
        std::thread::spawn(move || s.serve_one(&mut |_| {}).unwrap()),
    )
}

fn iperf3_client(port: u16, extra: &[&str]) -> Value {
    let out = Command::new("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "3",
            "--json",
        ])
        .args(extra)
        .output()
        .expect("run iperf3 -c");
    let v: Value = serde_json::from_slice(&out.stdout).expect("iperf3 JSON");
    assert!(v.get("error").is_none(), "iperf3 -c failed: {}", v["error"]);
    v
}

#[test]
fn iperf3_tcp_client_against_our_server() {
    if !have_iperf3() {
        return;
    }
    let _serial = one_at_a_time();
    for (extra, pairs) in [
        (&["-P", "2"][..], &[("sum_received", "sum_sent")][..]),
        (&["-R"][..], &[("sum_sent", "sum_received")][..]),
        (
            &["--bidir"][..],
            &[
                ("sum_received", "sum_sent"),
                ("sum_sent_bidir_reverse", "sum_received_bidir_reverse"),
            ][..],
        ),
    ] {
        let (port, h) = our_server();
        let v = iperf3_client(port, extra);
        let r = h.join().unwrap();
        for (our_key, their_key) in pairs {
            agree(
                &format!("iperf3 -c {extra:?}: our {our_key} vs its {their_key}"),
                ours(&r, our_key),
                bps(&v, their_key),
            );
        }
        // iperf3 took our results: its view of our side is ours exactly
        let (k, _) = pairs[0];
        let theirs_of_ours = bps(&v, k);
        assert!(
            (theirs_of_ours - ours(&r, k)).abs() / ours(&r, k) < 0.001,
            "{extra:?} {k}"
        );
    }
}

#[test]
fn udp_both_ways_with_iperf3() {
    if !have_iperf3() {
        return;
    }
    let _serial = one_at_a_time();
    // our client sends 20 Mbit/s to iperf3 -s
    let port = free_port();
    let srv = iperf3_server(port);
    let cfg = ClientConfig {
        udp: true,
        bitrate: Some(20_000_000),
        blksize: Some(1400),
        ..client(port)
    };
    let r = run_client(&cfg, &mut |_| {}).unwrap();
    let v = iperf3_output(srv);
    // UDP is compared in datagrams, not in the received bit rate: on a busy machine a
    // receiver that does not get the CPU overflows its socket buffer (iperf3 against iperf3
    // lost a third of 20 Mbit/s on the loaded test machine), and that loss is real, not a
    // disagreement. What the receiver counted from the sequence numbers (received + lost)
    // must be what was sent.
    agree(
        "udp: datagrams sent vs iperf3 counted",
        r.end.sum_sent.packets.unwrap() as f64,
        datagrams(&v, "sum_received"),
    );
    agree("udp: sent at the target", ours(&r, "sum_sent"), 20e6);
    let sent_pk = r.end.sum_sent.packets.unwrap();
    assert!(
        sent_pk > 5000 && sent_pk < 5600,
        "20 Mbit/s of 1400 B for 3 s is ~5357 datagrams: {sent_pk}"
    );
    assert_eq!(
        v["end"]["sum_received"]["packets"].as_i64(),
        r.end.sum_received.packets,
        "iperf3's count is ours"
    );
    // iperf3 -c -u -R against our server: we send, it counts loss and jitter
    let (port, h) = our_server();
    let v = iperf3_client(port, &["-u", "-R", "-b", "20M", "-l", "1400"]);
    let r = h.join().unwrap();
    agree(
        "iperf3 -u -R: datagrams we sent vs it counted",
        r.end.sum_sent.packets.unwrap() as f64,
        datagrams(&v, "sum_received"),
    );
    assert_eq!(
        v["end"]["sum_sent"]["packets"].as_i64(),
        r.end.sum_sent.packets
    );
    // iperf3 -c -u sends to our server: we count what arrived
    let (port, h) = our_server();
    let v = iperf3_client(port, &["-u", "-b", "20M", "-l", "1400"]);
    let r = h.join().unwrap();
    agree(
        "iperf3 -u: datagrams we counted vs it sent",
        r.end.sum_received.packets.unwrap() as f64,
        datagrams(&v, "sum_sent"),
    );
    let lost = r.end.sum_received.lost_packets.unwrap();
    assert_eq!(
        v["end"]["sum_received"]["lost_packets"].as_i64(),
        Some(lost),
        "iperf3 shows the loss we counted"
    );
}

#[test]
fn second_client_during_a_test_is_refused() {
    let _serial = one_at_a_time();
    let (port, h) = our_server();
    let cfg = ClientConfig {
        duration: 3,
        ..client(port)
    };
    // Ready signal: the first client prints its header once the server said the test runs
    // (a fixed sleep raced a slow start: the second client could come first).
    let (running_tx, running_rx) = std::sync::mpsc::channel();
    let first = std::thread::spawn(move || {
        run_client(&cfg, &mut |l| {
            if l.starts_with("[ ID]") {
                let _ = running_tx.send(());
            }
        })
    });
    running_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the first test did not start within 20 s");
    let e = run_client(
        &ClientConfig {
            duration: 1,
            ..client(port)
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("busy"), "{e}");
    first.join().unwrap().unwrap();
    h.join().unwrap();
}

#[test]
fn a_closed_port_is_a_clear_error() {
    // A socket bound without listen() holds the port: nothing else takes it while the test runs,
    // connect() is refused, and the client's own ephemeral port can never be it (a port merely
    // freed could be, and a connect to itself would succeed: TCP simultaneous open).
    let held = netdoctor_lab::ports::ClosedPort::loopback();
    let port = held.port();
    let e = run_client(&client(port), &mut |_| {}).unwrap_err();
    assert!(
        e.to_string().contains(&format!("connect 127.0.0.1:{port}")),
        "{e}"
    );
}
