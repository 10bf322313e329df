//! `--slo` through the real binary: pass 0, fail 1, inconclusive 3, each on a committed
//! capture (`analyze`, whose exchanges are measured from the packets: nagle-eth.pcap has 210
//! exchanges, p99 47.9 ms), the result in the JSON (schema-checked) and in the terminal
//! report; malformed objectives are usage errors (2) naming what is wrong.

use crate::common;
use common::*;

fn analyze(capture: &str, slo: &str, extra: &[&str]) -> std::process::Output {
    let path = captures_dir().join(capture);
    let mut args = vec!["analyze", path.to_str().unwrap(), "--slo", slo];
    args.extend_from_slice(extra);
    netdoctor(&args)
}

#[test]
fn a_met_objective_exits_0_with_its_margin() {
    let o = analyze("nagle-eth.pcap", "p99<100ms", &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_schema(&v);
    let s = &v["slo"];
    assert_eq!(s["result"], "pass", "{s}");
    let obj = &s["objectives"][0];
    assert_eq!(
        (obj["metric"].as_str(), obj["source"].as_str()),
        (Some("p99"), Some("capture"))
    );
    let margin = obj["margin"].as_f64().unwrap();
    // p99 47.9 ms → about 52 ms to spare.
    assert!(
        (margin - (100.0 - obj["value"].as_f64().unwrap())).abs() < 1e-9 && margin > 40.0,
        "{obj}"
    );
    // Without --slo the same capture is a problem (Nagle): exit 1, no slo member.
    let path = captures_dir().join("nagle-eth.pcap");
    let o = netdoctor(&["analyze", path.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(json(&o).get("slo").is_none());
}

#[test]
fn a_broken_objective_exits_1_and_says_by_how_much() {
    let o = analyze("nagle-eth.pcap", "p99<10ms,p50<100ms", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("SLO: FAIL — p99<10ms,p50<100ms"), "{text}");
    let fail = text
        .lines()
        .find(|l| l.trim_start().starts_with("FAIL") && l.contains("p99<10ms"))
        .unwrap_or_else(|| panic!("no p99 line in {text}"));
    assert!(fail.contains(" over; capture)"), "{fail}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("PASS") && l.contains("to spare")),
        "{text}"
    );
}

#[test]
fn too_few_requests_for_a_percentile_exits_3() {
    // 210 complete exchanges (10 more cut by the capture's end): a p99.9 needs 1000.
    let o = analyze("nagle-eth.pcap", "p999<1s", &["--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v = json(&o);
    assert_schema(&v);
    let obj = &v["slo"]["objectives"][0];
    assert_eq!(obj["result"], "inconclusive");
    assert!(
        obj["reason"]
            .as_str()
            .unwrap()
            .contains("210 requests measured: p999 needs at least 1000"),
        "{obj}"
    );
    // A fail wins over inconclusive.
    let o = analyze("nagle-eth.pcap", "p999<1s,p50<1ms", &[]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn malformed_objectives_are_usage_errors_naming_the_problem() {
    for (spec, want) in [
        ("p99<50", "give p99 a unit: ms, s or us"),
        ("p98<50ms", "unknown objective 'p98'"),
        ("errors<0.1", "give errors in percent"),
        ("p99<<50ms", "is not a number"),
        ("", "--slo is empty"),
    ] {
        let o = analyze("nagle-eth.pcap", spec, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{spec:?}: {err}");
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") && first.contains(want),
            "{spec:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(o.stdout.is_empty(), "nothing ran");
    }
    // diagnose checks it before anything runs (the target is never contacted).
    let o = netdoctor(&["diagnose", "http://127.0.0.1:1/", "--slo", "p99<fast"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("'fast' is not a number"),
        "{}",
        stderr(&o)
    );
}
