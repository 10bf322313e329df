//! Waking once per response (`SO_RCVLOWAT` set to the learned response size, see the engine's
//! `worker::lowat`): set when the size is steady, off with `rcvlowat = false`, and a response of
//! another size (smaller: the kernel alone would never signal it; larger: it arrives in parts)
//! is neither held back until the timeout nor miscounted, closed loop or at a constant rate.
//!
//! The servers are threads of this test on 127.0.0.1 (port 0, kept bound for the whole test);
//! the client's socket options are read from this process's own descriptors (`pidfd_getfd`).

mod common;

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::Server;
use netdoctor_load::{LoadConfig, LoadResult, run};

/// A 200 of `body` bytes: head and body in separate writes (as nginx), a body over 1,000 bytes
/// in two writes 1 ms apart (the client sees it in parts).
fn answer(s: &mut TcpStream, body: usize) -> io::Result<()> {
    let body = vec![b'x'; body];
    s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes())?;
    if body.len() > 1000 {
        let (a, b) = body.split_at(body.len() / 2);
        s.write_all(a)?;
        std::thread::sleep(Duration::from_millis(1));
        s.write_all(b)
    } else {
        s.write_all(&body)
    }
}

fn config(server: &Server, ms: u64) -> LoadConfig {
    let mut cfg = LoadConfig::new(server.target.clone());
    cfg.connections = 4;
    cfg.threads = 1;
    cfg.duration = Duration::from_millis(ms);
    // Long enough that a response held back by the low-water mark would end as a timeout.
    cfg.timeout = Duration::from_secs(5);
    cfg
}

/// The response size the client sees for a body of `body` bytes.
fn response_len(body: usize) -> i32 {
    (format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n").len() + body) as i32
}

/// SO_RCVLOWAT of this process's sockets connected to `peer`; None when descriptors of this
/// process cannot be duplicated here.
fn client_lowats(peer: SocketAddr) -> Option<Vec<i32>> {
    let pid = std::process::id();
    let mut out = Vec::new();
    // One entry per socket, not per descriptor: the other tests of this binary run at the same
    // time and duplicate every socket of the process while they look for theirs, so a client
    // socket can briefly have two descriptors here (seen in CI: 5 sockets for 4 connections).
    let mut seen = std::collections::HashSet::new();
    for e in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        let Ok(link) = std::fs::read_link(e.path()) else {
            continue;
        };
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<RawFd>().ok()) else {
            continue;
        };
        if !link.to_string_lossy().starts_with("socket:") || !seen.insert(link) {
            continue;
        }
        let dup = match netdoctor_sys::pidfd::dup_from(pid, fd) {
            Ok(d) => d,
            // Closed since the listing: not ours to judge.
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => continue,
            Err(_) => return None,
        };
        let sock = socket2::Socket::from(dup);
        if sock.peer_addr().ok().and_then(|a| a.as_socket()) != Some(peer) {
            continue;
        }
        if let Ok(v) = netdoctor_sys::sockopt::get_int(&sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT) {
            out.push(v);
        }
    }
    Some(out)
}

/// Runs `cfg`; `sample` is called once from the progress callback after 500 ms.
fn load_sampling(cfg: &LoadConfig, mut sample: impl FnMut()) -> LoadResult {
    let mut sampled = false;
    run(cfg, &AtomicBool::new(false), &mut |p| {
        if !sampled && p.elapsed >= Duration::from_millis(500) {
            sampled = true;
            sample();
        }
    })
    .expect("run")
}

/// No errors, counts agree with the server's, and no response waited anywhere near the timeout.
fn assert_clean(res: &LoadResult, server: &Server, at_least: u64) {
    assert_eq!(res.errors.total(), 0, "errors: {res:?}");
    let seen = server.requests.load(Ordering::SeqCst);
    assert!(
        res.requests >= at_least,
        "{} requests, expected at least {at_least}: {res:?}",
        res.requests
    );
    assert!(seen >= res.requests && seen <= res.requests + res.connections as u64);
    assert!(
        res.latency_ms.max < 2_500.0,
        "a response waited {} ms",
        res.latency_ms.max
    );
}

#[test]
fn a_steady_size_sets_the_mark_and_the_flag_turns_it_off() {
    let want = response_len(615);
    for on in [true, false] {
        let server = Server::start(|_, s| answer(s, 615));
        let mut cfg = config(&server, 1_200);
        cfg.rcvlowat = on;
        let mut lowats = None;
        let res = load_sampling(&cfg, || lowats = client_lowats(server.target.addr));
        let Some(lowats) = lowats else {
            println!("skipped: pidfd_getfd on this process is not allowed here");
            return;
        };
        assert_clean(&res, &server, 40);
        assert_eq!(lowats.len(), 4, "client sockets: {lowats:?}");
        if on {
            // Every connection has had two responses of the same size by 500 ms.
            assert!(lowats.iter().all(|&v| v == want), "{lowats:?}, want {want}");
        } else {
            assert!(lowats.iter().all(|&v| v == 1), "{lowats:?}");
        }
    }
}

#[test]
fn a_smaller_response_is_not_held_back() {
    // 615-byte bodies, then 40-byte ones: smaller than the mark, never signalled by the kernel
    // alone. Every connection switches, so each has a response below its mark.
    let server = Server::start(|k, s| answer(s, if k <= 10 { 615 } else { 40 }));
    let mut lowats = None;
    let res = load_sampling(&config(&server, 1_500), || {
        lowats = client_lowats(server.target.addr)
    });
    assert_clean(&res, &server, 4 * 10 + 100);
    // The thread gave up on the mark.
    if let Some(l) = lowats {
        assert!(l.iter().all(|&v| v == 1), "{l:?}");
    }
}

#[test]
fn a_larger_response_in_parts_is_read_whole() {
    let server = Server::start(|k, s| answer(s, if k <= 10 { 40 } else { 5_000 }));
    let res = load_sampling(&config(&server, 1_500), || {});
    // A framing slip would be a read error ("unexpected bytes after a response").
    assert_clean(&res, &server, 4 * 10 + 100);
}

#[test]
fn at_a_constant_rate_a_smaller_response_is_not_held_back() {
    let server = Server::start(|k, s| answer(s, if k <= 5 { 615 } else { 40 }));
    let mut cfg = config(&server, 1_500);
    cfg.rate = Some(200.0);
    let res = load_sampling(&cfg, || {});
    // 200/s for 1.5 s is 300 requests; a loaded machine may fall behind, never stall 5 s.
    assert_clean(&res, &server, 100);
    assert!(res.latency_ms.p50 < 500.0, "{:?}", res.latency_ms);
}

/// A 200 of 615 bytes; every 20th response of a connection says `Connection: close` (as
/// nginx's `keepalive_requests` does: 5 bytes more here, 5 fewer for nginx) and the server then
/// closes the connection.
fn answer_closing(k: u64, s: &mut TcpStream) -> io::Result<()> {
    if !k.is_multiple_of(20) {
        return answer(s, 615);
    }
    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 615\r\nConnection: close\r\n\r\n")?;
    s.write_all(&[b'x'; 615])?;
    Err(io::Error::other("closed after this response"))
}

#[test]
fn a_connections_last_response_keeps_the_mark() {
    // Every connection ends after 20 requests with a response of another size. That size is the
    // connection's last, not a change: the reopened connections learn the mark again, and some
    // socket has it whenever the run is sampled (several samples, from 500 ms on; before the
    // fix the thread turned the mark off for good at the first such response).
    let want = response_len(615);
    let server = Server::start(answer_closing);
    let cfg = config(&server, 1_500);
    let mut samples = Vec::new();
    let res = run(&cfg, &AtomicBool::new(false), &mut |p| {
        if p.elapsed >= Duration::from_millis(500) {
            samples.push(client_lowats(server.target.addr));
        }
    })
    .expect("run");
    assert_clean(&res, &server, 4 * 20);
    assert!(res.connects > 4, "no connection was reopened: {res:?}");
    if samples.iter().any(Option::is_none) || samples.is_empty() {
        println!("skipped: pidfd_getfd on this process is not allowed here");
        return;
    }
    let marked = samples
        .iter()
        .flatten()
        .filter(|l| l.contains(&want))
        .count();
    assert!(marked > 0, "no sample had a socket at {want}: {samples:?}");
}
