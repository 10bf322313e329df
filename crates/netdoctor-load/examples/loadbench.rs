//! Minimal CLI over the load engine (no clap, builds in seconds) for quick experiments; the
//! benchmark proper (`bench/load-vs-peers`) runs `netdoctor load`:
//! `loadbench http[s]://127.0.0.1:18090/ -c 100 -t 2 -d 5s [--no-keepalive] [--timeout 2s] [-k]
//! [--http2] [--streams N]` (`-k`/`--insecure`: accept any TLS certificate; `--http2`: h2c with
//! prior knowledge on http://, h2 only by ALPN on https://; `--streams`: HTTP/2 streams per
//! connection).
//! Prints requests/s, latency percentiles and errors; the last line (`RESULT ...`) is for scripts.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use netdoctor_load::{LoadConfig, run};

fn parse_duration(s: &str) -> Option<Duration> {
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.parse().ok().map(Duration::from_millis);
    }
    let secs = s.strip_suffix('s').unwrap_or(s);
    secs.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
}

fn main() -> ExitCode {
    let usage = "usage: loadbench URL [-c CONNECTIONS] [-t THREADS] [-d DURATION] [--timeout DURATION] [--no-keepalive] [-k|--insecure] [--http2] [--streams N]";
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let (mut c, mut t, mut d, mut timeout, mut keepalive) = (None, None, None, None, true);
    let mut insecure = false;
    let (mut http2, mut streams) = (false, None);
    while let Some(a) = args.next() {
        let mut value = || args.next();
        let ok = match a.as_str() {
            "-c" => value()
                .and_then(|v| v.parse().ok())
                .map(|v| c = Some(v))
                .is_some(),
            "-t" => value()
                .and_then(|v| v.parse().ok())
                .map(|v| t = Some(v))
                .is_some(),
            "-d" => value()
                .and_then(|v| parse_duration(&v))
                .map(|v| d = Some(v))
                .is_some(),
            "--timeout" => value()
                .and_then(|v| parse_duration(&v))
                .map(|v| timeout = Some(v))
                .is_some(),
            "--no-keepalive" => {
                keepalive = false;
                true
            }
            "--http2" => {
                http2 = true;
                true
            }
            "--streams" => value()
                .and_then(|v| v.parse().ok())
                .map(|v| streams = Some(v))
                .is_some(),
            "-k" | "--insecure" => {
                insecure = true;
                true
            }
            _ if url.is_none() && !a.starts_with('-') => {
                url = Some(a.clone());
                true
            }
            _ => false,
        };
        if !ok {
            eprintln!("loadbench: bad argument {a:?}\n{usage}");
            return ExitCode::from(2);
        }
    }
    let Some(url) = url else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let mut cfg = match LoadConfig::from_url(&url, insecure) {
        Ok(cfg) => cfg,
        Err(e) => {
            eprintln!("loadbench: {e}");
            return ExitCode::from(2);
        }
    };
    cfg.connections = c.unwrap_or(cfg.connections);
    cfg.threads = t.unwrap_or(cfg.threads);
    cfg.duration = d.unwrap_or(cfg.duration);
    cfg.timeout = timeout.unwrap_or(cfg.timeout);
    cfg.keepalive = keepalive;
    if http2 {
        cfg.protocol = netdoctor_load::Protocol::Http2;
    }
    cfg.streams = streams.unwrap_or(cfg.streams);
    let stop = AtomicBool::new(false);
    let res = match run(&cfg, &stop, &mut |_| {}) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadbench: {e}");
            return ExitCode::from(2);
        }
    };
    let l = &res.latency_ms;
    println!(
        "{} connections, {} threads, {:.2} s: {} requests, {:.0} req/s, {:.2} MB/s",
        res.connections,
        res.threads,
        res.duration_s,
        res.requests,
        res.requests_per_s,
        res.transfer_per_s / 1e6
    );
    println!(
        "latency ms: mean {:.3} p50 {:.3} p75 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3} stdev {:.3}",
        l.mean, l.p50, l.p75, l.p90, l.p99, l.p999, l.max, l.stdev
    );
    println!("status: {:?}", res.status);
    println!("errors: {:?} total {}", res.errors, res.errors.total());
    if let Some(e) = &res.first_error {
        println!("first error: {e}");
    }
    println!(
        "RESULT rps={:.1} p50_ms={:.3} p99_ms={:.3} requests={} errors={}",
        res.requests_per_s,
        l.p50,
        l.p99,
        res.requests,
        res.errors.total()
    );
    ExitCode::SUCCESS
}
