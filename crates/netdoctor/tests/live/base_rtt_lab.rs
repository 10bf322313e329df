//! The base round trip from the kernel's `tcp_info` (`min_rtt` of the load's own connections)
//! beside the SYN probe and the captured handshakes, on the route lab without routers (the
//! client behind a user-space delay bridge on the server's subnet, so no trace runs):
//!
//! - a server 40 ms away that answers at once: `high_base_rtt`, warning, and the kernel's
//!   `min_rtt` says 40 ms like the other sources;
//! - its look-alike, a server 25 ms away that takes 40 ms to answer each request: the p50 is
//!   about 65 ms, but `min_rtt` (like the SYN probe) stays at the round trip, 25 ms, not the
//!   server's time: `high_base_rtt` is info, a part of the latency, and never 65 ms.
//!
//! (The look-alike of a path with a queue, `min_rtt` low and the smoothed RTT high, is a unit
//! test of `netdoctor-diagnose`'s `base_rtt`; a healthy local server, no finding, is
//! `route_lab.rs`.) Needs root; skips with the reason otherwise. Every lab and server is
//! removed on drop, also when an assertion fails.

use netdoctor_lab::builtin::{BuiltinServers, response_head};
use netdoctor_lab::route_lab::{RouteLab, RouteLabConfig, SERVER_IP};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn skip() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    false
}

fn l2_lab(rtt_ms: f64) -> RouteLab {
    RouteLab::start(&RouteLabConfig {
        one_way_delay: Duration::from_secs_f64(rtt_ms / 2000.0),
        routers: false,
        ..Default::default()
    })
    .expect("start the route lab without routers")
}

/// `diagnose URL --json` from the lab's client namespace, a short load.
fn diagnose_in(lab: &RouteLab) -> (i32, Value) {
    let out = Command::new("ip")
        .args(["netns", "exec", lab.client_netns()])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args([
            "diagnose",
            "http://srv.lab.test:8080/",
            "-c",
            "4",
            "-d",
            "2s",
        ])
        .arg("--json")
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .expect("run netdoctor");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {stdout:?} stderr {:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    crate::common::assert_schema(&r);
    (out.status.code().unwrap_or(-1), r)
}

/// The `high_base_rtt` finding and the kernel's min_rtt median its evidence names, ms.
fn base_rtt(r: &Value) -> (&Value, f64) {
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "high_base_rtt")
        .unwrap_or_else(|| panic!("no high_base_rtt: {r:#}"));
    let ev = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["probe"] == "tcp_info min_rtt")
        .unwrap_or_else(|| panic!("no tcp_info source: {f:#}"));
    let note = ev["note"].as_str().unwrap();
    assert!(!note.contains("  "), "{note:?}");
    let min_rtt: f64 = note
        .split("min_rtt median ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no min_rtt figure in {note:?}"));
    // The other sources are there too, and the explanation names each.
    let text = f["evidence"].to_string();
    assert!(
        text.contains("syn probe") && text.contains("captured handshakes"),
        "{f:#}"
    );
    assert!(
        f["explanation"]
            .as_str()
            .unwrap()
            .contains("tcp_info min_rtt"),
        "{f:#}"
    );
    (f, min_rtt)
}

/// A server that takes `delay` to answer each request (keep-alive), on one thread per
/// connection; stopped (and joined) on drop.
struct SlowServer {
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl SlowServer {
    fn start(lab: &RouteLab, delay: Duration) -> SlowServer {
        let listener =
            netdoctor_lab::in_netns(lab.server_netns(), || TcpListener::bind((SERVER_IP, 8080)))
                .expect("enter the server namespace")
                .expect("bind the slow server");
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let flag = flag.clone();
                        conns.push(std::thread::spawn(move || serve(s, delay, &flag)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        SlowServer {
            stop,
            accept: Some(accept),
        }
    }
}

/// Answers every request on `s` after `delay`, until the peer closes or the server stops.
fn serve(mut s: TcpStream, delay: Duration, stop: &AtomicBool) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let body = b"slow";
    let head = response_head(body.len());
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return,
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            std::thread::sleep(delay);
            let mut resp = head.clone().into_bytes();
            resp.extend_from_slice(body);
            if s.write_all(&resp).is_err() {
                return;
            }
        }
    }
}

impl Drop for SlowServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn min_rtt_gives_the_round_trip_of_a_distant_server_and_not_the_time_of_a_slow_one() {
    let _turn = crate::common::file_turn(file!());
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());

    // 40 ms away, answers at once: the round trip is the latency.
    let lab = l2_lab(40.0);
    let server = netdoctor_lab::in_netns(lab.server_netns(), || {
        BuiltinServers::start(&[((SERVER_IP, 8080).into(), true)])
    })
    .expect("enter the server namespace")
    .expect("start the built-in server");
    let (code, r) = diagnose_in(&lab);
    let (f, min_rtt) = base_rtt(&r);
    eprintln!("far: {}", f["evidence"]);
    assert_eq!(code, 1, "{r:#}");
    assert_eq!(
        (f["severity"].as_str(), f["side"].as_str()),
        (Some("warning"), Some("network"))
    );
    assert!((39.0..46.0).contains(&min_rtt), "min_rtt {min_rtt} ms");
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((39.0..46.0).contains(&added), "base RTT {added} ms");
    server.stop();
    lab.stop().unwrap();

    // 25 ms away, 40 ms to answer: p50 ≈ 65 ms; the round trip is 25 ms of it.
    let lab = l2_lab(25.0);
    let server = SlowServer::start(&lab, Duration::from_millis(40));
    let (_code, r) = diagnose_in(&lab);
    let p50 = r["measurements"]["load"]["latency_ms"]["p50"]
        .as_f64()
        .unwrap();
    assert!(p50 >= 60.0, "p50 {p50} ms");
    let (f, min_rtt) = base_rtt(&r);
    eprintln!("slow: p50 {p50} {}", f["evidence"]);
    assert!(
        (24.0..31.0).contains(&min_rtt),
        "min_rtt {min_rtt} ms (p50 {p50})"
    );
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((24.0..31.0).contains(&added), "base RTT {added} ms");
    // A part of the latency, not its cause: information.
    assert_eq!(f["severity"], "info", "{f:#}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("of the requests' median latency"),
        "{f:#}"
    );
    drop(server);
    lab.stop().unwrap();
}
