//! The protobuf exposition: the request latency of a real capture (the committed Nagle case)
//! as a native histogram whose buckets hold each exchange where its latency says, beside the
//! classic buckets; every series of the text answer in the protobuf answer with the same
//! value; and the endpoint answering protobuf only to a scrape that asks for it.

use crate::common;

use netdoctor_agent::proto::{self, MetricFamily, MetricType};
use netdoctor_agent::{AgentMetrics, MetricsServer};
use netdoctor_core::analyze::ExchangeStats;
use netdoctor_report::{CaptureSection, Report, Target};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::Arc;

const HIST: &str = "netdoctor_request_duration_seconds";
const ACCEPT_PB: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
    encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,*/*;q=0.1";

/// A watch window over the committed Nagle capture, analyzed by the core.
fn nagle_window() -> (Report, ExchangeStats) {
    let a = common::analyze_nagle_capture();
    let mut r = Report::new(
        netdoctor_report::ReportCommand::Watch,
        Target {
            input: "tcp port 80".into(),
            address: None,
            protocol: None,
        },
    );
    r.findings = a.findings.clone();
    r.measurements.capture = Some(CaptureSection {
        source: netdoctor_report::CaptureSource::Live,
        snaplen: None,
        pcap_file: None,
        stats: a.stats.clone(),
        exchanges: a.exchanges.clone(),
        warnings: Vec::new(),
    });
    (r, a.exchanges)
}

fn family<'a>(fams: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
    fams.iter()
        .find(|f| f.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no family {name}"))
}

/// (bucket index, count) of the native histogram's positive buckets, from spans and deltas.
fn native_buckets(h: &proto::Histogram) -> BTreeMap<i32, u64> {
    let mut out = BTreeMap::new();
    let mut deltas = h.positive_delta.iter();
    let (mut idx, mut count) = (0i32, 0i64);
    for s in &h.positive_span {
        idx += s.offset.unwrap_or(0);
        for _ in 0..s.length.unwrap_or(0) {
            count += deltas.next().expect("a delta per bucket");
            assert!(count >= 0, "negative bucket count");
            if count > 0 {
                out.insert(idx, count as u64);
            }
            idx += 1;
        }
    }
    assert!(deltas.next().is_none(), "more deltas than buckets");
    out
}

#[test]
fn native_buckets_hold_each_exchange_of_a_real_capture() {
    let (r, x) = nagle_window();
    assert!(x.count >= 20 && !x.latency_recorded_us.is_empty(), "{x:?}");
    let m = AgentMetrics::new();
    m.record_window(80, &r, 1.0);
    let fams = proto::decode_delimited(&m.encode_protobuf().unwrap()).expect("prost decodes");
    let f = family(&fams, HIST);
    assert_eq!(f.r#type, Some(MetricType::Histogram as i32));
    let h = f.metric[0].histogram.as_ref().unwrap();
    let schema = h.schema.expect("native: schema");
    assert_eq!(schema, 3, "a capture's range needs no reduction");
    assert_eq!(h.zero_count, Some(0), "latencies are ≥ 1 µs");
    assert!(h.zero_threshold.is_some_and(|z| z > 0.0 && z < 1e-6));

    // Every exchange with a latency is counted once, in the bucket its value falls in:
    // (2^((i-1)/8), 2^(i/8)], computed here with logarithms, not the agent's bit arithmetic.
    let with_latency: u64 = x.latency_recorded_us.iter().map(|(_, n)| n).sum();
    assert_eq!(with_latency, x.count - x.incomplete);
    assert_eq!(h.sample_count, Some(with_latency));
    let mut want: BTreeMap<i32, u64> = BTreeMap::new();
    for (us, n) in &x.latency_recorded_us {
        let i = ((*us as f64 / 1e6).log2() * f64::from(1 << schema)).ceil() as i32;
        *want.entry(i).or_default() += n;
    }
    let got = native_buckets(h);
    assert_eq!(got, want);
    assert_eq!(got.values().sum::<u64>(), with_latency);
    // Both the stalled (≥ 35 ms) and the fast exchanges are there.
    let bound = |i: i32| 2f64.powf(f64::from(i) / 8.0);
    assert!(got.keys().any(|i| bound(*i) > 0.035) && got.keys().any(|i| bound(*i) < 0.035));

    // The median from the native buckets is the exchanges' own (HDR) median, within one
    // bucket (9 %).
    let mut seen = 0;
    let p50_bucket = got
        .iter()
        .find(|(_, n)| {
            seen += **n;
            seen * 2 >= with_latency
        })
        .map(|(i, _)| *i)
        .unwrap();
    let p50_s = x.latency_ms.p50 / 1000.0;
    assert!(
        p50_s > bound(p50_bucket - 1) * 0.999 && p50_s <= bound(p50_bucket) * 1.001,
        "p50 {p50_s} s outside native bucket {p50_bucket}"
    );

    // The classic buckets are still there, the same as the text format's.
    assert_eq!(h.bucket.len(), netdoctor_core::LATENCY_BOUNDS_MS.len());
    for (b, c) in h.bucket.iter().zip(&x.latency_cumulative) {
        assert_eq!(b.cumulative_count, Some(*c), "{b:?}");
    }
}

/// Series of the 0.0.4 text as (name, sorted labels) → value, read here independently of the
/// agent's own reader.
fn text_series(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, v) = l.rsplit_once(' ').unwrap();
        let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
        let labels = labels.strip_suffix('}').unwrap();
        let mut ls: Vec<String> = labels
            .split("\",")
            .filter(|s| !s.is_empty())
            .map(|s| {
                let (k, v) = s.split_once("=\"").unwrap();
                let v = v.trim_end_matches('"');
                // Bounds as numbers, so 0.001 and 1e-3 are one series.
                let v = if k == "le" || k == "quantile" {
                    format!("{}", v.parse::<f64>().unwrap())
                } else {
                    v.to_string()
                };
                format!("{k}={v}")
            })
            .collect();
        ls.sort();
        let v = if v == "+Inf" {
            f64::INFINITY
        } else {
            v.parse().unwrap()
        };
        out.insert(format!("{name}{{{}}}", ls.join(",")), v);
    }
    out
}

/// The series Prometheus ingests from protobuf families (classic view of histograms).
fn proto_series(fams: &[MetricFamily]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for f in fams {
        let name = f.name.clone().unwrap();
        for m in &f.metric {
            let base: Vec<String> = m
                .label
                .iter()
                .map(|l| {
                    format!(
                        "{}={}",
                        l.name.as_deref().unwrap(),
                        l.value.as_deref().unwrap()
                    )
                })
                .collect();
            let mut put = |suffix: &str, extra: Option<String>, v: f64| {
                let mut ls = base.clone();
                ls.extend(extra);
                ls.sort();
                out.insert(format!("{name}{suffix}{{{}}}", ls.join(",")), v);
            };
            if let Some(c) = m.counter {
                put("", None, c.value.unwrap());
            } else if let Some(g) = m.gauge {
                put("", None, g.value.unwrap());
            } else if let Some(u) = m.untyped {
                put("", None, u.value.unwrap());
            } else if let Some(s) = &m.summary {
                for q in &s.quantile {
                    put(
                        "",
                        Some(format!("quantile={}", q.quantile.unwrap())),
                        q.value.unwrap(),
                    );
                }
                put("_sum", None, s.sample_sum.unwrap());
                put("_count", None, s.sample_count.unwrap() as f64);
            } else if let Some(h) = &m.histogram {
                for b in &h.bucket {
                    let le = format!("le={}", b.upper_bound.unwrap());
                    put("_bucket", Some(le), b.cumulative_count.unwrap() as f64);
                }
                let count = h.sample_count.unwrap() as f64;
                put("_bucket", Some("le=inf".into()), count);
                put("_sum", None, h.sample_sum.unwrap());
                put("_count", None, count);
            } else {
                panic!("metric without a value in {name}");
            }
        }
    }
    out
}

#[test]
fn the_protobuf_answer_has_every_series_of_the_text_answer() {
    let (r, _) = nagle_window();
    let m = AgentMetrics::new();
    m.record_window(80, &r, 1.0);
    m.record_host(
        80,
        Some(&netdoctor_agent::host::ListenerWindow::default()),
        3,
    );
    m.record_evidence(&netdoctor_agent::ring::RingState::default());
    let fams = proto::decode_delimited(&m.encode_protobuf().unwrap()).unwrap();
    // Text after protobuf: the process metrics are refreshed on each encode. CPU time only
    // grows; resident memory moves either way (other tests in this binary allocate and free on
    // their own threads), so it only has to be there in both.
    let mut text = text_series(&m.encode_text_004());
    let mut pb = proto_series(&fams);
    let k = "process_cpu_seconds_total{}";
    let (t, p) = (text.remove(k), pb.remove(k));
    assert!(t.is_some() && p.is_some() && p <= t, "{k}: {p:?} vs {t:?}");
    let k = "process_resident_memory_bytes{}";
    let (t, p) = (text.remove(k), pb.remove(k));
    assert!(
        t.is_some_and(|v| v > 0.0) && p.is_some_and(|v| v > 0.0),
        "{k}: {p:?} vs {t:?}"
    );
    assert!(text.len() > 30, "{}", text.len());
    let only_text: Vec<_> = text.keys().filter(|k| !pb.contains_key(*k)).collect();
    let only_pb: Vec<_> = pb.keys().filter(|k| !text.contains_key(*k)).collect();
    assert!(
        only_text.is_empty() && only_pb.is_empty(),
        "text only {only_text:?}, protobuf only {only_pb:?}"
    );
    for (k, v) in &text {
        assert_eq!(pb[k], *v, "{k}");
    }
    // Types: counters as counters (named with _total), the summary as a summary.
    let ty = |n: &str| family(&fams, n).r#type;
    assert_eq!(
        ty("netdoctor_requests_total"),
        Some(MetricType::Counter as i32)
    );
    assert_eq!(
        ty("netdoctor_finding_active"),
        Some(MetricType::Gauge as i32)
    );
    assert_eq!(
        ty("netdoctor_window_request_duration_seconds"),
        Some(MetricType::Summary as i32)
    );
}

#[test]
fn the_endpoint_answers_protobuf_only_when_asked() {
    let (r, _) = nagle_window();
    let m = Arc::new(AgentMetrics::new());
    m.record_window(80, &r, 1.0);
    let srv = MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::clone(&m)).unwrap();
    let get = |accept: &str| -> (String, Vec<u8>) {
        let mut s = std::net::TcpStream::connect(srv.local_addr()).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}\r\n").unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&out[..end]).to_string();
        (head, out[end + 4..].to_vec())
    };
    let (head, body) = get(&format!("Accept: {ACCEPT_PB}\r\n"));
    assert!(
        head.contains(&format!("Content-Type: {}", proto::CONTENT_TYPE)),
        "{head}"
    );
    let fams = proto::decode_delimited(&body).expect("length-delimited MetricFamily messages");
    let h = family(&fams, HIST).metric[0].histogram.clone().unwrap();
    assert!(h.schema.is_some() && !h.positive_delta.is_empty());
    let (head, body) = get("Accept: application/openmetrics-text;version=1.0.0\r\n");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(
        String::from_utf8(body)
            .unwrap()
            .trim_end()
            .ends_with("# EOF")
    );
    let (head, body) = get("");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(
        String::from_utf8(body)
            .unwrap()
            .contains("# TYPE netdoctor_requests_total counter")
    );
}
