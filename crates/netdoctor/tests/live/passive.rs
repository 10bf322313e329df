//! `diagnose --passive` and `tcp://` targets through the real binary, against real servers in
//! network namespaces this test creates (unique names, removed on drop, also on failure):
//! a line-protocol server whose clients connected before the run, redis-server under
//! redis-benchmark, and no traffic at all. The TLS nginx cases are in `https_nginx.rs`.

use crate::common::*;
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn lab(tag: &str) -> HostLab {
    HostLab::create(&format!("ndp-{tag}-{}", std::process::id()), false).expect("create netns")
}

/// `netdoctor diagnose ARGS` with progress on stderr (the ready signal), not waited for.
fn spawn_diagnose(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .arg("diagnose")
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run netdoctor")
}

/// Waits until the passive run says it is watching; returns the rest of stderr's reader.
fn wait_watching(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "netdoctor ended before watching:\n{seen}");
        seen.push_str(&line);
        if line.contains("watching traffic to port") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        seen + &rest
    })
}

#[test]
fn tcp_target_without_a_port_is_a_one_line_usage_error() {
    let _turn = crate::common::file_turn(file!());
    for target in ["tcp://127.0.0.1", "tcp://"] {
        let out = netdoctor(&["diagnose", "--passive", target]);
        assert_eq!(out.status.code(), Some(2), "{target}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("invalid URL '{target}'")), "{err}");
        if target == "tcp://127.0.0.1" {
            assert!(
                err.contains("needs a port") && err.contains("tcp://HOST:PORT"),
                "{err}"
            );
        }
    }
    // The help's figure is the verdict rule's.
    let help = String::from_utf8(netdoctor(&["diagnose", "--help"]).stdout).unwrap();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let min = netdoctor_core::verdict::MIN_EXCHANGES;
    assert!(
        help.contains(&format!("at least {min} completed")),
        "{help}"
    );
    // Load options make no sense without a load.
    let out = netdoctor(&["diagnose", "--passive", "-c", "5", "tcp://127.0.0.1:6379"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--passive"), "{}", stderr(&out));
    // `load` speaks HTTP(S) only and says where tcp:// works.
    let out = netdoctor(&["load", "tcp://127.0.0.1:6379"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("netdoctor diagnose` takes tcp://"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn passive_with_no_traffic_is_inconclusive_with_the_counts() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let lab = lab("quiet");
    let target = format!("tcp://{HOST_SERVER_IP}:7070");
    let out = netdoctor(&[
        "diagnose",
        "--passive",
        &target,
        "-d",
        "1s",
        "--json",
        "--netns",
        lab.server_netns(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let v = json(&out);
    assert_schema(&v);
    assert_eq!(v["verdict"], "inconclusive");
    assert_eq!(v["passive"], true);
    assert_eq!(v["target"]["protocol"], "tcp");
    let checks = v["checks"].as_array().unwrap();
    let reason = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {v:#}"))["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    for name in ["syn_probe", "http_probe", "load"] {
        assert_eq!(reason(name), "passive: no traffic sent");
    }
    assert!(
        reason("verdict").contains("0 completed request/response exchanges seen, at least 20"),
        "{v:#}"
    );
    assert_eq!(v["measurements"]["capture"]["stats"]["packets"], 0, "{v:#}");
    drop(lab);
}

#[test]
fn ctrl_c_ends_a_passive_window_early_and_still_reports() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let lab = lab("sigint");
    let target = format!("tcp://{HOST_SERVER_IP}:7070");
    let started = Instant::now();
    let mut child = spawn_diagnose(&[
        "--passive",
        &target,
        "-d",
        "60s",
        "--json",
        "--netns",
        lab.server_netns(),
    ]);
    let progress = wait_watching(&mut child);
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on the PID of the child this test spawned and has not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let _ = progress.join();
    assert!(started.elapsed() < Duration::from_secs(30), "not cut short");
    assert_eq!(out.status.code(), Some(130));
    let v = json(&out);
    assert_schema(&v);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["passive"], true);
    assert_eq!(v["verdict"], "inconclusive");
    drop(lab);
}

/// A line-protocol server: each `get KEY\n` is answered with `+VALUE KEY\n` and then a
/// 200-byte body, in two writes, Nagle on (no TCP_NODELAY).
fn line_server(lab: &HostLab, port: u16, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    let addr = SocketAddr::from((HOST_SERVER_IP, port));
    let listener = lab
        .in_ns(lab.server_netns(), move || TcpListener::bind(addr))
        .unwrap()
        .expect("bind the line server");
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut conns = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((c, _)) => {
                    let stop = stop.clone();
                    conns.push(std::thread::spawn(move || serve_lines(c, &stop)));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        for c in conns {
            let _ = c.join();
        }
    })
}

fn serve_lines(c: TcpStream, stop: &AtomicBool) {
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    let body = [b'x'; 200];
    while !stop.load(Ordering::Relaxed) {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) => {
                let key = line.trim().trim_start_matches("get ").to_string();
                if w.write_all(format!("+VALUE {key}\n").as_bytes()).is_err()
                    || w.write_all(&body).is_err()
                {
                    return;
                }
            }
            Err(_) => continue,
        }
    }
}

/// One client: `get kN` and the whole reply, until `stop` or `limit`.
fn line_client(mut c: TcpStream, stop: Arc<AtomicBool>, limit: Duration) -> JoinHandle<u64> {
    std::thread::spawn(move || {
        let end = Instant::now() + limit;
        let mut done = 0u64;
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        while !stop.load(Ordering::Relaxed) && Instant::now() < end {
            if c.write_all(format!("get k{done}\n").as_bytes()).is_err() {
                break;
            }
            let want = format!("+VALUE k{done}\n").len() + 200;
            let mut got = 0;
            let mut buf = [0u8; 512];
            while got < want {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => return done,
                    Ok(n) => got += n,
                }
            }
            done += 1;
        }
        done
    })
}

#[test]
fn passive_sees_the_line_servers_nagle_on_connections_opened_before_the_run() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let lab = lab("line");
    let stop = Arc::new(AtomicBool::new(false));
    let port = 18450;
    let server = line_server(&lab, port, stop.clone());
    let to = SocketAddr::from((HOST_SERVER_IP, port));
    // Four clients connect and warm up before the run starts (no handshake in the capture).
    let conns: Vec<TcpStream> = lab
        .in_ns(lab.client_netns(), move || {
            (0..4)
                .map(|_| TcpStream::connect_timeout(&to, Duration::from_secs(2)).unwrap())
                .collect()
        })
        .unwrap();
    let clients: Vec<_> = conns
        .into_iter()
        .map(|c| line_client(c, stop.clone(), Duration::from_secs(30)))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let target = format!("tcp://{to}");
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("passive.pcap");
    let mut child = spawn_diagnose(&[
        "--passive",
        &target,
        "-d",
        "3s",
        "--json",
        "--pcap",
        pcap.to_str().unwrap(),
        "--netns",
        lab.server_netns(),
    ]);
    let progress = wait_watching(&mut child);
    let out = child.wait_with_output().unwrap();
    // Without --passive, the same tcp:// target gets the probes only.
    let probed = netdoctor(&["diagnose", &target, "--json", "--netns", lab.server_netns()]);
    let p = json(&probed);
    assert_schema(&p);
    assert!(p["measurements"]["load"].is_null(), "{p:#}");
    assert_eq!(p["measurements"]["probe"]["syn"]["answered"], 5, "{p:#}");
    assert_eq!(
        p["measurements"]["probe"]["connect"]["method"], "connect",
        "{p:#}"
    );
    stop.store(true, Ordering::Relaxed);
    let served: u64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let _ = server.join();
    let progress = progress.join().unwrap();
    let v = json(&out);
    assert_schema(&v);
    assert_eq!(out.status.code(), Some(1), "{v:#}\n{progress}");
    assert!(served > 20, "clients got {served} replies");
    let c = &v["measurements"]["capture"];
    assert_eq!(c["stats"]["connections_with_handshake"], 0, "{c:#}");
    assert_eq!(c["exchanges"]["method"], "turns", "{c:#}");
    let f = &v["findings"][0];
    assert_eq!(f["id"], "nagle_delayed_ack", "{v:#}");
    assert_eq!(f["side"], "server", "{f:#}");
    assert!(progress.contains("no traffic sent"), "{progress}");
    assert_eq!(
        p["measurements"]["probe"]["connect"]["answered"], 5,
        "{p:#}"
    );
    let load = p["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "load");
    assert!(
        load.is_some_and(|c| c["status"] == "skipped"
            && c["reason"]
                .as_str()
                .unwrap()
                .starts_with("load is HTTP(S)-only")),
        "{p:#}"
    );
    // --pcap works as in active mode: the file holds the window, and analyze (given the
    // server port, as there is no handshake) finds the same.
    let a = netdoctor(&[
        "analyze",
        "--json",
        "--server-port",
        &port.to_string(),
        pcap.to_str().unwrap(),
    ]);
    let a = json(&a);
    assert_eq!(a["findings"][0]["id"], "nagle_delayed_ack", "{a:#}");
    assert_eq!(a["findings"][0]["side"], "server");
    drop(lab);
}

fn redis_installed() -> bool {
    ["/usr/bin/redis-server", "/usr/bin/redis-benchmark"]
        .iter()
        .all(|p| std::path::Path::new(p).exists())
}

#[test]
fn passive_redis_under_redis_benchmark_is_healthy() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    if !redis_installed() {
        eprintln!(
            "skipped: needs redis-server and redis-benchmark (apt-get install redis-server redis-tools)"
        );
        return;
    }
    let mut lab = lab("redis");
    let ip = HOST_SERVER_IP.to_string();
    let mut redis = lab.command(lab.server_netns(), "redis-server").unwrap();
    redis
        .args([
            "--port",
            "6379",
            "--bind",
            &ip,
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--daemonize", "no", "--protected-mode", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    lab.keep_child(redis.spawn().expect("start redis-server"));
    // Ready: the port answers from the client namespace.
    let to = SocketAddr::from((HOST_SERVER_IP, 6379));
    let ready = lab
        .in_ns(lab.client_netns(), move || {
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end {
                if let Ok(mut s) = TcpStream::connect_timeout(&to, Duration::from_millis(200)) {
                    let mut pong = [0u8; 7];
                    if s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut pong).is_ok() {
                        return &pong == b"+PONG\r\n";
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            false
        })
        .unwrap();
    assert!(ready, "redis-server did not answer PING");
    let mut bench = lab.command(lab.client_netns(), "redis-benchmark").unwrap();
    bench
        .args([
            "-h", &ip, "-p", "6379", "-c", "4", "-n", "2000000", "-t", "get,set", "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    lab.keep_child(bench.spawn().expect("start redis-benchmark"));
    std::thread::sleep(Duration::from_millis(300));
    let out = netdoctor(&[
        "diagnose",
        "--passive",
        "tcp://10.214.0.1:6379",
        "-d",
        "5s",
        "--json",
        "--netns",
        lab.server_netns(),
    ]);
    let v = json(&out);
    assert_schema(&v);
    assert_eq!(v["verdict"], "healthy", "{v:#}");
    assert_eq!(out.status.code(), Some(0));
    let x = &v["measurements"]["capture"]["exchanges"];
    assert!(x["count"].as_u64().unwrap() >= 20, "{x:#}");
    assert_eq!(x["method"], "turns", "{x:#}");
    // redis-server runs in the namespace: its sockets were read.
    let sockets = v["measurements"]["server_sockets"].as_array();
    assert!(
        sockets.is_some_and(|s| s.iter().any(|s| s["process"] == "redis-server")),
        "{v:#}"
    );
    drop(lab);
}
