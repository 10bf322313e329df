//! The descriptive deltas of a comparison: the key measurements of both runs (requests/s,
//! latency percentiles, errors, SYN RTT, one request) and the kernel counters that moved in
//! either, A and B side by side with B − A. No test and no judgement: the verdict is made from
//! the findings and [`super::judge`].

use super::{CounterChange, MetricChange};
use crate::model::Report;

fn metric(
    name: &str,
    unit: &str,
    lower_is_better: bool,
    a: Option<f64>,
    b: Option<f64>,
) -> MetricChange {
    MetricChange {
        name: name.into(),
        unit: unit.into(),
        lower_is_better,
        a,
        b,
        delta: a.zip(b).map(|(a, b)| b - a),
        ratio: a.zip(b).filter(|(a, _)| *a > 0.0).map(|(a, b)| b / a),
    }
}

/// The key measurements of both runs, in the order the views show them.
pub(super) fn measurements(a: &Report, b: &Report) -> Vec<MetricChange> {
    type Get = fn(&Report) -> Option<f64>;
    let rows: [(&str, &str, bool, Get); 9] = [
        ("syn_rtt_median_ms", "ms", true, |r| {
            r.measurements.probe.as_ref()?.syn.as_ref()?.median_ms
        }),
        ("one_request_ms", "ms", true, |r| {
            Some(r.measurements.probe.as_ref()?.http.as_ref()?.total_ms)
        }),
        ("requests_per_s", "req/s", false, |r| {
            Some(r.measurements.load.as_ref()?.requests_per_s)
        }),
        ("latency_p50_ms", "ms", true, |r| {
            Some(r.measurements.load.as_ref()?.latency_ms.p50)
        }),
        ("latency_p90_ms", "ms", true, |r| {
            Some(r.measurements.load.as_ref()?.latency_ms.p90)
        }),
        ("latency_p99_ms", "ms", true, |r| {
            Some(r.measurements.load.as_ref()?.latency_ms.p99)
        }),
        ("latency_max_ms", "ms", true, |r| {
            Some(r.measurements.load.as_ref()?.latency_ms.max)
        }),
        ("requests", "count", false, |r| {
            Some(r.measurements.load.as_ref()?.requests as f64)
        }),
        ("errors", "count", true, |r| {
            Some(r.measurements.load.as_ref()?.errors.total() as f64)
        }),
    ];
    rows.iter()
        .map(|(name, unit, lower, get)| metric(name, unit, *lower, get(a), get(b)))
        .collect()
}

pub(super) fn counters(a: &Report, b: &Report) -> Vec<CounterChange> {
    let changes = |r: &Report| -> Vec<(String, i64)> {
        r.measurements
            .counters
            .iter()
            .flat_map(|c| &c.changed)
            .map(|d| {
                let c = d.change();
                let v = i64::try_from(c).unwrap_or(if c > 0 { i64::MAX } else { i64::MIN });
                (d.name.clone(), v)
            })
            .collect()
    };
    let (ca, cb) = (changes(a), changes(b));
    let mut names: Vec<&String> = ca.iter().chain(&cb).map(|(n, _)| n).collect();
    names.sort();
    names.dedup();
    let find = |c: &[(String, i64)], n: &str| c.iter().find(|(m, _)| m == n).map(|(_, v)| *v);
    names
        .into_iter()
        .map(|n| CounterChange {
            name: n.clone(),
            a: find(&ca, n),
            b: find(&cb, n),
        })
        .collect()
}
