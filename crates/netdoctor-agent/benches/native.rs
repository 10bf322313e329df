//! What the native histogram costs: per observation, per window, per scrape, next to the
//! peers in the same run (prometheus-client's classic `Histogram::observe` with the agent's 14
//! bounds, and the core's HDR histogram record that every request already pays).
//!
//! `cargo bench -p netdoctor-agent --bench native` (harness = false, plain `Instant`, best of
//! `NETDOCTOR_BENCH_ROUNDS` rounds, default 7, the median beside it: a shared machine is better
//! served by best-of-N than by statistics).
//!
//! Inputs: latencies log-uniform over 50 µs … 200 ms from a fixed xorshift seed (so every
//! observation is a fresh bucket lookup, no branch-predictor favourite), 1 M per round.

use netdoctor_agent::AgentMetrics;
use netdoctor_agent::native::NativeHistogram;
use netdoctor_core::analyze::ExchangeStats;
use prometheus_client::metrics::histogram::Histogram;
use std::hint::black_box;
use std::time::Instant;

const N: usize = 1_000_000;

fn latencies() -> Vec<f64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            // log-uniform 50 µs … 200 ms
            5e-5 * (4000f64).powf(u)
        })
        .collect()
}

/// Best and median of `rounds` runs of `f`, in ns per unit of `per`.
fn measure(rounds: usize, per: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..rounds)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_nanos() as f64 / per as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[t.len() / 2])
}

fn main() {
    let rounds: usize = std::env::var("NETDOCTOR_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let v = latencies();
    let row = |what: &str, (best, median): (f64, f64)| {
        println!(
            "{what:<58} {best:>8.2} ns  (median {median:.2})   {:.4} % of a core at 10k/s",
            best * 1e4 / 1e9 * 100.0
        );
    };
    println!("per observation, best of {rounds} rounds of {N}:");
    let native = measure(rounds, N, || {
        let mut h = NativeHistogram::default();
        for x in &v {
            h.observe_n(*x, 1);
        }
        black_box(&h);
    });
    row("native histogram observe (schema 3, this crate)", native);
    let bounds = netdoctor_agent::histogram::LATENCY_BUCKETS_S;
    let classic = measure(rounds, N, || {
        let h = Histogram::new(bounds);
        for x in &v {
            h.observe(*x);
        }
        black_box(&h);
    });
    row(
        "peer: prometheus-client classic Histogram::observe (14)",
        classic,
    );
    let us: Vec<u64> = v.iter().map(|x| (x * 1e6) as u64).collect();
    let hdr = measure(rounds, N, || {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
        for x in &us {
            h.saturating_record(*x);
        }
        black_box(&h);
    });
    row("peer: HDR record (the core's per-request cost today)", hdr);
    println!(
        "ratio native / classic {:.2}, native / HDR {:.2}",
        native.0 / classic.0,
        native.0 / hdr.0
    );

    // What the agent really does: one window's distribution (the HDR histogram's distinct
    // values with their counts) into the classic and native buckets, per request of the window.
    let mut hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3).unwrap();
    for x in &us {
        hdr.saturating_record(*x);
    }
    let x = ExchangeStats {
        count: N as u64,
        latency_cumulative: netdoctor_core::LATENCY_BOUNDS_MS
            .iter()
            .map(|ms| hdr.count_between(1, (ms * 1000.0) as u64))
            .collect(),
        latency_recorded_us: hdr
            .iter_recorded()
            .map(|r| (r.value_iterated_to(), r.count_at_value()))
            .collect(),
        ..Default::default()
    };
    let distinct = x.latency_recorded_us.len();
    let window = measure(rounds, N, || {
        let h = netdoctor_agent::histogram::LatencyHistogram::default();
        h.add_exchanges(&x);
        black_box(&h);
    });
    println!("\nper window of {N} requests ({distinct} distinct latencies at 3 digits):");
    row("add_exchanges (classic + native), per request", window);

    // A scrape: text and protobuf of a registry with one watched port.
    let m = AgentMetrics::new();
    let mut r = netdoctor_report::Report::new(
        netdoctor_report::ReportCommand::Watch,
        netdoctor_report::Target {
            input: "tcp port 80".into(),
            address: None,
            protocol: None,
        },
    );
    r.measurements.capture = Some(netdoctor_report::CaptureSection {
        source: netdoctor_report::CaptureSource::Live,
        snaplen: None,
        pcap_file: None,
        stats: Default::default(),
        exchanges: x.clone(),
        warnings: Vec::new(),
    });
    m.record_window(80, &r, 0.0);
    // Peers alternating in each round: the text answer, the protobuf answer read back from
    // the whole text (what every scrape paid before the cache), the protobuf answer with the
    // cache between two window ends, and with a window recorded before every scrape (every
    // per-port family changed: the cache's worst case; the recording is not timed).
    let scrapes = 200;
    let native = netdoctor_agent::histogram::LatencyHistogram::default();
    native.add_exchanges(&x);
    let uncached = || {
        let mut f = netdoctor_agent::protobuf::families_from_openmetrics(&m.encode()).unwrap();
        netdoctor_agent::protobuf::replace_histograms(
            &mut f,
            "netdoctor_request_duration_seconds",
            |_| Some(native.to_proto()),
        );
        netdoctor_agent::proto::encode_delimited(&f)
    };
    let mut t = [const { Vec::new() }; 4];
    for _ in 0..rounds {
        let s = Instant::now();
        for _ in 0..scrapes {
            black_box(m.encode());
        }
        t[0].push(s.elapsed().as_nanos() as f64);
        let s = Instant::now();
        for _ in 0..scrapes {
            black_box(uncached());
        }
        t[1].push(s.elapsed().as_nanos() as f64);
        let s = Instant::now();
        for _ in 0..scrapes {
            black_box(m.encode_protobuf().unwrap());
        }
        t[2].push(s.elapsed().as_nanos() as f64);
        let mut ns = 0.0;
        for k in 0..scrapes {
            m.record_window(80, &r, k as f64);
            let s = Instant::now();
            black_box(m.encode_protobuf().unwrap());
            ns += s.elapsed().as_nanos() as f64;
        }
        t[3].push(ns);
    }
    let us = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (
            v[0] / scrapes as f64 / 1000.0,
            v[v.len() / 2] / scrapes as f64 / 1000.0,
        )
    };
    let [text, plain, cached, windowed] = t.each_mut().map(us);
    println!(
        "\nper scrape, best (median) of {rounds} rounds of {scrapes}, load average {}:",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for (what, (best, med)) in [
        ("OpenMetrics text", text),
        ("protobuf, every family read back from the text", plain),
        ("protobuf, cached, no window end between scrapes", cached),
        (
            "protobuf, cached, a window recorded before each scrape",
            windowed,
        ),
    ] {
        println!("{what:<58} {best:>8.1} µs  (median {med:.1})");
    }
    println!(
        "answers: text {} bytes, protobuf {} bytes; families read back per cached scrape: {}",
        m.encode().len(),
        m.encode_protobuf().unwrap().len(),
        m.protobuf_families_read()
    );
}
