//! The watch loop on real loopback traffic (needs root for the capture; skipped otherwise):
//!
//! - one keep-alive connection with the Nagle stall (a server that writes headers and body in
//!   two writes without TCP_NODELAY, a client whose delayed ACK releases the body) runs across
//!   three windows: every window names `nagle_delayed_ack`, and the connection is counted once
//!   (in the window of its handshake), because one analyzer per port keeps its state across
//!   windows instead of picking it up mid-stream in each window;
//! - idle connections leave the analyzer after the idle timeout (`connections_evicted`), so its
//!   memory stays bounded, and the watched listener is sampled (accept queue and backlog).

use netdoctor_agent::{WatchConfig, WindowResult, watch};
use netdoctor_core::FindingId;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

const BODY: usize = 600;

/// Serves every connection: for each request, the headers and the body in two writes, without
/// TCP_NODELAY (the Nagle stall of the reference case). Ends with the listener's owner.
fn nagle_server(listener: TcpListener, stop: Arc<AtomicBool>) {
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 1024];
                        let mut req = Vec::new();
                        loop {
                            let n = match s.read(&mut buf) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => n,
                            };
                            req.extend_from_slice(&buf[..n]);
                            while let Some(end) = req.windows(4).position(|w| w == b"\r\n\r\n") {
                                req.drain(..end + 4);
                                let head = format!(
                                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {BODY}\r\n\r\n"
                                );
                                if s.write_all(head.as_bytes()).is_err()
                                    || s.write_all(&[b'x'; BODY]).is_err()
                                {
                                    return;
                                }
                            }
                        }
                    });
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
}

/// One keep-alive request and its whole response.
fn request(c: &mut TcpStream) -> std::io::Result<()> {
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        got.extend_from_slice(&buf[..n]);
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n")
            && got.len() >= end + 4 + BODY
        {
            return Ok(());
        }
    }
}

fn run_watch(cfg: &WatchConfig, on_start: impl FnOnce()) -> Vec<WindowResult> {
    let stop = AtomicBool::new(false);
    let mut start = Some(on_start);
    let mut windows = Vec::new();
    watch(
        cfg,
        &stop,
        &mut || {
            if let Some(f) = start.take() {
                f()
            }
        },
        &mut |w| windows.push(w.clone()),
    )
    .expect("watch");
    windows
}

fn stats(w: &WindowResult) -> &netdoctor_core::CaptureStats {
    &w.report.measurements.capture.as_ref().unwrap().stats
}

#[test]
fn a_connection_spanning_windows_keeps_its_state() {
    if !is_root() {
        eprintln!("skipped: packet capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    nagle_server(listener, Arc::clone(&stop));
    let mut cfg = WatchConfig::new(vec![port], Duration::from_secs(2));
    cfg.max_windows = Some(3);
    let client_stop = Arc::clone(&stop);
    let mut client = None;
    let windows = run_watch(&cfg, || {
        client = Some(std::thread::spawn(move || {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut n = 0u64;
            while !client_stop.load(Ordering::Relaxed) && request(&mut c).is_ok() {
                n += 1;
            }
            n
        }));
    });
    stop.store(true, Ordering::Relaxed);
    let requests = client.unwrap().join().unwrap();
    assert_eq!(windows.len(), 3);
    for w in &windows {
        let ids: Vec<FindingId> = w.report.findings.iter().map(|f| f.id).collect();
        let x = &w.report.measurements.capture.as_ref().unwrap().exchanges;
        eprintln!(
            "window {}: {:?}, {} exchanges, stats {:?}",
            w.index,
            ids,
            x.count,
            stats(w)
        );
        assert!(
            ids.contains(&FindingId::NagleDelayedAck),
            "window {}",
            w.index
        );
        assert!(x.count > 0);
        assert_eq!(stats(w).capture_drops, 0);
    }
    // One connection, counted once: in the first window, with its handshake.
    assert_eq!(stats(&windows[0]).connections, 1);
    assert_eq!(stats(&windows[0]).connections_with_handshake, 1);
    assert_eq!(
        stats(&windows[1]).connections,
        0,
        "picked up again mid-stream"
    );
    assert_eq!(
        stats(&windows[2]).connections,
        0,
        "picked up again mid-stream"
    );
    assert_eq!(windows[2].open_connections, 1);
    // Per-window packet counts add up to what the windows saw, not a running total.
    let total: u64 = windows.iter().map(|w| stats(w).packets).sum();
    assert!(
        stats(&windows[2]).packets < total,
        "window statistics must be per window"
    );
    let exchanges: u64 = windows
        .iter()
        .map(|w| {
            w.report
                .measurements
                .capture
                .as_ref()
                .unwrap()
                .exchanges
                .count
        })
        .sum();
    assert!(
        exchanges > 0 && exchanges <= requests,
        "{exchanges} of {requests}"
    );
}

#[test]
fn idle_connections_are_evicted_and_the_listener_is_sampled() {
    if !is_root() {
        eprintln!("skipped: packet capture needs root (CAP_NET_RAW)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    nagle_server(listener, Arc::clone(&stop));
    let mut cfg = WatchConfig::new(vec![port], Duration::from_secs(2));
    cfg.max_windows = Some(3);
    cfg.idle_timeout = Duration::from_secs(1);
    cfg.listener_sample_every = Duration::from_millis(200);
    let mut conns = Vec::new();
    let windows = run_watch(&cfg, || {
        // Five connections, one request each, then silent (still open) for the whole run.
        for _ in 0..5 {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            request(&mut c).unwrap();
            conns.push(c);
        }
    });
    stop.store(true, Ordering::Relaxed);
    assert_eq!(windows.len(), 3);
    assert_eq!(stats(&windows[0]).connections, 5);
    let evicted: u64 = windows.iter().map(|w| stats(w).connections_evicted).sum();
    assert_eq!(evicted, 5, "idle connections must leave the analyzer");
    assert_eq!(windows[2].open_connections, 0);
    drop(conns);
    for w in &windows {
        let l = w.listener.as_ref().expect("the listener is sampled");
        assert!(l.samples >= 5, "{l:?}");
        assert_eq!(l.backlog, 128, "std's listen backlog");
        assert!(
            w.report
                .checks
                .iter()
                .any(|c| serde_json::to_value(c).unwrap()["name"] == "host"),
            "{:?}",
            w.report.checks
        );
    }
}
