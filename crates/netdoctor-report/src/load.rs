//! What `netdoctor load` and `netdoctor connect` show: wrk-like text and one JSON object
//! (`"schema": "netdoctor.load/v1"` / `"netdoctor.connect/v1"`), for the [`TerminalSink`] and
//! [`JsonSink`].
//!
//! [`TerminalSink`]: crate::TerminalSink
//! [`JsonSink`]: crate::JsonSink

use netdoctor_load::{ConnectResult, LoadResult, Percentiles};
use serde::Serialize;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// A finished `load` run with the settings the text and JSON show.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// The URL as the user typed it.
    pub input: String,
    pub address: SocketAddr,
    pub method: String,
    pub keepalive: bool,
    /// The per-request timeout.
    pub timeout: Duration,
    /// The duration asked for (the result has the one measured).
    pub duration: Duration,
    pub result: LoadResult,
}

/// A finished `connect` run with the settings the text and JSON show.
#[derive(Debug, Clone)]
pub struct ConnectReport {
    /// The target as the user typed it.
    pub input: String,
    pub address: SocketAddr,
    /// The per-connect timeout.
    pub timeout: Duration,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
    pub result: ConnectResult,
}

#[derive(Serialize)]
struct TargetJson<'a> {
    input: &'a str,
    address: String,
}

/// `netdoctor.load/v1`: settings, then the load engine's result inline.
#[derive(Serialize)]
pub(crate) struct LoadJson<'a> {
    schema: &'static str,
    target: TargetJson<'a>,
    method: &'a str,
    keepalive: bool,
    timeout_s: f64,
    #[serde(flatten)]
    result: &'a LoadResult,
}

/// `netdoctor.connect/v1`: settings, then the benchmark's result inline.
#[derive(Serialize)]
pub(crate) struct ConnectJson<'a> {
    schema: &'static str,
    target: TargetJson<'a>,
    timeout_s: f64,
    #[serde(flatten)]
    result: &'a ConnectResult,
}

impl LoadReport {
    pub(crate) fn json_view(&self) -> LoadJson<'_> {
        LoadJson {
            schema: "netdoctor.load/v1",
            target: TargetJson {
                input: &self.input,
                address: self.address.to_string(),
            },
            method: &self.method,
            keepalive: self.keepalive,
            timeout_s: self.timeout.as_secs_f64(),
            result: &self.result,
        }
    }
}

impl ConnectReport {
    pub(crate) fn json_view(&self) -> ConnectJson<'_> {
        ConnectJson {
            schema: "netdoctor.connect/v1",
            target: TargetJson {
                input: &self.input,
                address: self.address.to_string(),
            },
            timeout_s: self.timeout.as_secs_f64(),
            result: &self.result,
        }
    }
}

/// wrk's units: `812.00us`, `2.01ms`, `1.20s`.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.2}us", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else if ms < 60_000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else {
        format!("{:.2}m", ms / 60_000.0)
    }
}

/// wrk's byte units: `38.01MB`.
pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2}{}", UNITS[u])
}

fn write_percentiles(l: &Percentiles, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "  Latency Distribution")?;
    for (label, v) in [
        ("50%", l.p50),
        ("75%", l.p75),
        ("90%", l.p90),
        ("99%", l.p99),
        ("99.9%", l.p999),
        ("max", l.max),
    ] {
        writeln!(out, "  {label:>6}  {:>10}", fmt_ms(v))?;
    }
    Ok(())
}

/// The wrk-like text report of a load run.
pub fn write_load_text(report: &LoadReport, out: &mut dyn Write) -> io::Result<()> {
    let r = &report.result;
    writeln!(
        out,
        "Running {} test @ {}",
        fmt_ms(report.duration.as_secs_f64() * 1000.0),
        report.input
    )?;
    writeln!(
        out,
        "  {} threads and {} connections ({}, {} {})",
        r.threads,
        r.connections,
        if report.keepalive {
            "keep-alive"
        } else {
            "one connection per request"
        },
        report.method,
        report.address
    )?;
    if let Some(p) = &r.protocol
        && p != "http/1.1"
    {
        let streams = r.h2.as_ref().map_or(1, |h| h.streams);
        writeln!(
            out,
            "  protocol {p}, {streams} concurrent stream{} per connection",
            if streams == 1 { "" } else { "s" }
        )?;
    }
    if let Some(rate) = r.rate {
        writeln!(
            out,
            "  constant rate {rate} req/s: latency measured from each request's intended send time \
             (coordinated omission corrected)"
        )?;
    }
    let l = &r.latency_ms;
    writeln!(
        out,
        "  Thread Stats   {:>10} {:>10} {:>10}",
        "Avg", "Stdev", "Max"
    )?;
    writeln!(
        out,
        "    Latency      {:>10} {:>10} {:>10}",
        fmt_ms(l.mean),
        fmt_ms(l.stdev),
        fmt_ms(l.max)
    )?;
    write_percentiles(l, out)?;
    writeln!(
        out,
        "  {} requests in {:.2}s, {} read",
        r.requests,
        r.duration_s,
        fmt_bytes(r.bytes_read as f64)
    )?;
    let e = &r.errors;
    if e.total() > 0 {
        writeln!(
            out,
            "  Errors: connect {}, read {}, write {}, timeout {}, status {}{}",
            e.connect,
            e.read,
            e.write,
            e.timeout,
            e.status,
            if e.stream > 0 {
                format!(", stream {}", e.stream)
            } else {
                String::new()
            }
        )?;
        if let Some(first) = &r.first_error {
            writeln!(out, "  First error: {first}")?;
        }
    }
    if r.status.len() > 1 || r.status.keys().any(|c| !(200..400).contains(c)) {
        let codes: Vec<String> = r.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        writeln!(out, "  Status codes: {}", codes.join(", "))?;
    }
    if let Some(h) = &r.h2 {
        let list = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(c, n)| format!("{c}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !h.rst_stream.is_empty() {
            writeln!(out, "  RST_STREAM received: {}", list(&h.rst_stream))?;
        }
        if !h.goaway.is_empty() {
            writeln!(out, "  GOAWAY received: {}", list(&h.goaway))?;
        }
        if !h.grpc_status.is_empty() {
            writeln!(out, "  gRPC status: {}", list(&h.grpc_status))?;
        }
    }
    writeln!(out, "Requests/sec: {:>10.2}", r.requests_per_s)?;
    writeln!(out, "Transfer/sec: {:>10}", fmt_bytes(r.transfer_per_s))?;
    if let Some(rate) = r.rate
        && r.duration_s > 0.0
        && r.requests_per_s < rate * 0.9
    {
        writeln!(
            out,
            "Note: achieved {:.0} req/s of the {rate} asked: the server (or {} connections) could \
             not keep up; the latencies include the wait.",
            r.requests_per_s, r.connections
        )?;
    }
    Ok(())
}

/// The text report of a connect benchmark.
pub fn write_connect_text(report: &ConnectReport, out: &mut dyn Write) -> io::Result<()> {
    let r = &report.result;
    let addr = report.address;
    writeln!(
        out,
        "Connect benchmark @ {addr}: {} connects, {} at a time, timeout {}{}",
        r.attempts,
        r.concurrency,
        fmt_ms(report.timeout.as_secs_f64() * 1000.0),
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        }
    )?;
    let l = &r.latency_ms;
    writeln!(
        out,
        "  Connect time   {:>10} {:>10} {:>10}",
        "Avg", "Stdev", "Max"
    )?;
    writeln!(
        out,
        "                 {:>10} {:>10} {:>10}",
        fmt_ms(l.mean),
        fmt_ms(l.stdev),
        fmt_ms(l.max)
    )?;
    write_percentiles(l, out)?;
    writeln!(
        out,
        "  {} connected, {} failed in {:.2}s",
        r.connected, r.failed, r.duration_s
    )?;
    writeln!(out, "Connects/sec: {:>10.2}", r.connects_per_s)?;
    if r.syn_retransmit_suspects > 0 || r.syn_retransmits > 0 {
        writeln!(
            out,
            "SYN retransmit suspects: {} ({} connected after 1 s or more, {} timed out); SYN \
             retransmissions counted by the kernel: {}. A full listen queue (ListenOverflows in \
             `nstat`), a firewall or packet loss drops SYNs; each drop costs at least 1 s.",
            r.syn_retransmit_suspects, r.slow_connects, r.timeouts, r.syn_retransmits
        )?;
    }
    if !r.errors.is_empty() {
        let by: Vec<String> = r.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(out, "Failures by errno: {}", by.join(", "))?;
        if let Some(first) = &r.first_error {
            writeln!(out, "  First failure: {first}")?;
        }
        if r.errors.contains_key("EADDRNOTAVAIL") {
            writeln!(
                out,
                "  EADDRNOTAVAIL: local ports ran out. Every port of net.ipv4.ip_local_port_range \
                 toward {addr} is in use or in TIME_WAIT; widen the range, reuse connections \
                 (keep-alive, pooling), or spread over more server addresses."
            )?;
        }
        if r.errors.contains_key("ECONNREFUSED") {
            writeln!(
                out,
                "  ECONNREFUSED: nothing listens on {addr} (or the listen queue overflowed with \
                 tcp_abort_on_overflow = 1)."
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_wrk() {
        assert_eq!(fmt_ms(0.812), "812.00us");
        assert_eq!(fmt_ms(2.013), "2.01ms");
        assert_eq!(fmt_ms(1200.0), "1.20s");
        assert_eq!(fmt_bytes(615.0), "615.00B");
        assert_eq!(fmt_bytes(39_856_000.0), "38.01MB");
    }
}
