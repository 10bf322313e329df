//! JSON sink: the report as `netdoctor.report/v1` (schema in `schema/report-v1.json`).

use crate::model::Report;
use std::io::{self, Write};

/// Writes the report as pretty-printed JSON followed by a newline.
pub fn render(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    write_pretty(report, out)
}

/// Pretty-printed JSON and a newline, made whole first and written at once: stdout is
/// line-buffered, so writing as it serializes cost one `write` per line (194 for `analyze`'s
/// report). An I/O error keeps its kind (a closed pipe stays `BrokenPipe`, so the binary can
/// end quietly).
pub fn write_pretty<T: serde::Serialize + ?Sized>(
    value: &T,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(io::Error::from)?;
    text.push(b'\n');
    out.write_all(&text)?;
    out.flush()
}

/// Reads a report back from its JSON (e.g. a saved run to compare against).
pub fn parse(text: &str) -> serde_json::Result<Report> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finding_id_is_in_the_schema_and_back() {
        // `FindingId::ALL` (which the message catalogues are checked against) and the schema's
        // list of ids must be the same set: a new id needs both.
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA_JSON).unwrap();
        let listed: std::collections::BTreeSet<String> =
            schema["$defs"]["finding"]["properties"]["id"]["enum"]
                .as_array()
                .expect("the schema lists the finding ids")
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect();
        let all: std::collections::BTreeSet<String> = netdoctor_core::FindingId::ALL
            .iter()
            .map(|i| i.as_str().to_string())
            .collect();
        assert_eq!(
            all.len(),
            netdoctor_core::FindingId::ALL.len(),
            "an id twice in ALL"
        );
        assert_eq!(listed, all);
    }
    use crate::model::{Check, CheckName, ReportCommand, Target};
    use netdoctor_core::{Evidence, Finding, FindingId, PacketRef, Severity, Side};

    fn sample() -> Report {
        let mut r = Report::new(
            ReportCommand::Diagnose,
            Target {
                input: "http://127.0.0.1:8080/".into(),
                address: Some("127.0.0.1:8080".into()),
                protocol: None,
            },
        );
        let mut f = Finding::new(
            FindingId::NagleDelayedAck,
            Severity::Critical,
            Side::Server,
            "held",
        );
        f.confidence = 0.9;
        f.impact.added_latency_ms = Some(40.0);
        f.impact.affected_fraction = Some(0.9);
        f.evidence.push(Evidence::Packets {
            connection: "a → b".into(),
            packets: vec![PacketRef {
                frame: 1,
                time: 0.0,
                ts: 1_700_000_000.0,
                dir: "S→C".into(),
                desc: "[P.] len=238".into(),
            }],
            note: "gap".into(),
        });
        r.findings.push(f);
        r.checks.push(Check::ok(CheckName::Load));
        r.checks
            .push(Check::skipped(CheckName::Capture, "needs CAP_NET_RAW"));
        r.decide(&netdoctor_core::verdict::VerdictInputs {
            exchanges: 100,
            capture_present: true,
            ..Default::default()
        });
        r
    }

    fn validator() -> jsonschema::Validator {
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA_JSON).unwrap();
        jsonschema::validator_for(&schema).expect("schema compiles")
    }

    #[test]
    fn sample_report_follows_the_schema() {
        let mut buf = Vec::new();
        render(&sample(), &mut buf).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let errors: Vec<String> = validator().iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(v["verdict"], "problem");
        assert_eq!(v["findings"][0]["id"], "nagle_delayed_ack");
        assert_eq!(v["findings"][0]["evidence"][0]["kind"], "packets");
    }

    #[test]
    fn sample_report_reads_back_from_its_json() {
        let mut first = Vec::new();
        render(&sample(), &mut first).unwrap();
        let text = std::str::from_utf8(&first).unwrap();
        assert!(!text.contains("interrupted"), "written only when true");
        let back = parse(text).unwrap();
        assert!(!back.interrupted);
        assert_eq!(back.checks[1].name, CheckName::Capture);
        assert_eq!(back.command, ReportCommand::Diagnose);
        let mut second = Vec::new();
        render(&back, &mut second).unwrap();
        assert_eq!(
            String::from_utf8(first).unwrap(),
            String::from_utf8(second).unwrap()
        );
    }

    #[test]
    fn an_interrupted_report_says_so_in_both_sinks() {
        let mut r = sample();
        r.interrupted = true;
        let mut buf = Vec::new();
        render(&r, &mut buf).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert!(validator().is_valid(&v));
        assert_eq!(v["interrupted"], true);
        assert!(
            parse(std::str::from_utf8(&buf).unwrap())
                .unwrap()
                .interrupted
        );
        let mut text = Vec::new();
        crate::terminal::render(&r, &mut text).unwrap();
        assert!(
            String::from_utf8(text)
                .unwrap()
                .contains("interrupted: the run was stopped early")
        );
    }

    #[test]
    fn root_cause_and_consequences_follow_the_schema_and_show() {
        let mut r = sample();
        let mut retrans = Finding::new(
            FindingId::SynRetransmit,
            Severity::Critical,
            Side::Host,
            "SYNs repeated",
        );
        retrans.impact.added_latency_ms = Some(1000.0);
        r.findings.push(retrans);
        r.findings.push(Finding::new(
            FindingId::ListenQueueOverflow,
            Severity::Warning,
            Side::Server,
            "accept queue full",
        ));
        r.decide(&netdoctor_core::verdict::VerdictInputs {
            exchanges: 100,
            capture_present: true,
            ..Default::default()
        });
        let mut buf = Vec::new();
        render(&r, &mut buf).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let errors: Vec<String> = validator().iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(v["findings"][0]["id"], "listen_queue_overflow");
        assert_eq!(
            v["findings"][0]["consequences"],
            serde_json::json!(["syn_retransmit"])
        );
        assert_eq!(v["findings"][1]["caused_by"], "listen_queue_overflow");
        assert!(v["findings"][2].get("caused_by").is_none());
        assert!(v["findings"][2].get("consequences").is_none());
        let mut bad = v.clone();
        bad["findings"][1]["caused_by"] = "made_up_id".into();
        assert!(!validator().is_valid(&bad));
        let back = parse(std::str::from_utf8(&buf).unwrap()).unwrap();
        assert_eq!(back.findings, r.findings);
        let mut text = Vec::new();
        crate::terminal::render(&r, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("root cause of: syn_retransmit (below)")
                && text.contains("consequence of listen_queue_overflow (above)"),
            "{text}"
        );
    }

    #[test]
    fn tail_bands_follow_the_schema_and_read_back() {
        use netdoctor_core::{Breakdown, STALL_CAUSES, Stalls};
        let mut stalls = Stalls::default();
        stalls.set(FindingId::SynRetransmit, 1019.6);
        let mut share = Stalls::default();
        share.set(FindingId::SynRetransmit, 1.0);
        let tail = Breakdown {
            latency: 1020.0,
            network: 0.2,
            server: 0.2,
            transfer: 0.0,
            stalls,
            requests: 3,
            share,
            stalled: 1.0,
        };
        let typical = Breakdown {
            latency: 2.0,
            network: 0.5,
            server: 1.5,
            requests: 997,
            ..Default::default()
        };
        let mut r = sample();
        r.measurements.capture = Some(crate::model::CaptureSection {
            source: crate::model::CaptureSource::File,
            snaplen: None,
            pcap_file: None,
            stats: Default::default(),
            exchanges: netdoctor_core::analyze::ExchangeStats {
                count: 1000,
                breakdown_p50_ms: Some(typical),
                breakdown_p90_ms: Some(typical),
                breakdown_p99_ms: Some(typical),
                breakdown_p999_ms: Some(tail),
                breakdown_max_ms: Some(tail),
                breakdown_mean_ms: Some(typical),
                ..Default::default()
            },
            warnings: vec![],
        });
        let mut buf = Vec::new();
        render(&r, &mut buf).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let errors: Vec<String> = validator().iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        let e = &v["measurements"]["capture"]["exchanges"];
        assert_eq!(e["breakdown_p999_ms"]["stalls"]["syn_retransmit"], 1019.6);
        assert_eq!(e["breakdown_max_ms"]["share"]["syn_retransmit"], 1.0);
        assert_eq!(e["breakdown_max_ms"]["stalled"], 1.0);
        assert_eq!(e["breakdown_p99_ms"]["requests"], 997);
        assert!(e["breakdown_p50_ms"].get("share").is_none(), "{e}");
        let back = parse(std::str::from_utf8(&buf).unwrap()).unwrap();
        assert_eq!(
            back.measurements
                .capture
                .unwrap()
                .exchanges
                .breakdown_max_ms,
            Some(tail)
        );
        // The schema's causes are exactly the breakdown's.
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA_JSON).unwrap();
        let names: Vec<&str> = schema["$defs"]["per_cause"]["propertyNames"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = STALL_CAUSES.iter().map(|id| id.as_str()).collect();
        assert_eq!(names, ours);
        // What breaks the contract is rejected.
        let val = validator();
        let path = ["measurements", "capture", "exchanges", "breakdown_max_ms"];
        let band = |v: &mut serde_json::Value| -> serde_json::Value {
            let mut x = v;
            for k in path {
                x = &mut x[k];
            }
            x.clone()
        };
        for (key, sub, bad) in [
            ("share", "syn_retransmit", serde_json::json!(1.5)),
            ("stalls", "made_up_cause", serde_json::json!(1.0)),
            ("requests", "", serde_json::json!(0)),
            ("stalled", "", serde_json::json!(-0.5)),
        ] {
            let mut w = v.clone();
            let mut b = band(&mut w);
            if sub.is_empty() {
                b[key] = bad;
            } else {
                b[key][sub] = bad;
            }
            w["measurements"]["capture"]["exchanges"]["breakdown_max_ms"] = b;
            assert!(!val.is_valid(&w), "{key}.{sub} accepted");
        }
    }

    #[test]
    fn schema_rejects_what_breaks_the_contract() {
        let mut buf = Vec::new();
        render(&sample(), &mut buf).unwrap();
        let good: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        let v = validator();
        let mut bad = good.clone();
        bad["findings"][0]["id"] = "made_up_id".into();
        assert!(!v.is_valid(&bad), "unknown finding id accepted");
        let mut bad = good.clone();
        bad["checks"][1].as_object_mut().unwrap().remove("reason");
        assert!(!v.is_valid(&bad), "skipped check without a reason accepted");
        let mut bad = good.clone();
        bad["checks"][0]["name"] = "Load Test".into();
        assert!(
            !v.is_valid(&bad),
            "a check name that is not snake_case accepted"
        );
        let mut bad = good;
        bad["verdict"] = "fine".into();
        assert!(!v.is_valid(&bad), "unknown verdict accepted");
    }

    #[test]
    fn schema_names_every_check() {
        let schema: serde_json::Value = serde_json::from_str(crate::SCHEMA_JSON).unwrap();
        let name = &schema["properties"]["checks"]["items"]["properties"]["name"];
        let doc = name["description"].as_str().unwrap();
        for c in CheckName::ALL {
            assert!(doc.contains(c.as_str()), "schema does not list check {c}");
            assert!(snake_case(c.as_str()), "{c} is not snake_case");
        }
    }

    /// `^[a-z][a-z0-9_]*$` by hand.
    fn snake_case(s: &str) -> bool {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }
}
