//! `load` and `connect` output, byte for byte. The files in `tests/data/load/` are what the
//! binary printed before this output moved into the report crate: `NAME.json` is the real
//! `--json` output of a run against a local server (two with errors added by hand), `NAME.txt`
//! the text the old renderer made from that same result (asked duration 1 s). Both sinks must
//! reproduce them exactly from the result read back.

use netdoctor_load::{ConnectResult, LoadResult};
use netdoctor_report::{ConnectReport, Format, LoadReport};
use std::path::PathBuf;
use std::time::Duration;

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/load")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn render<T>(format: Format, item: &T) -> String
where
    netdoctor_report::TerminalSink: netdoctor_report::Sink<T>,
    netdoctor_report::JsonSink: netdoctor_report::Sink<T>,
{
    let mut out = Vec::new();
    format.write(item, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn load_output_is_unchanged() {
    for name in [
        "load-keepalive",
        "load-rate-post",
        "load-close",
        "load-errors",
    ] {
        let json = data(&format!("{name}.json"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let report = LoadReport {
            input: v["target"]["input"].as_str().unwrap().to_string(),
            address: v["target"]["address"].as_str().unwrap().parse().unwrap(),
            method: v["method"].as_str().unwrap().to_string(),
            keepalive: v["keepalive"].as_bool().unwrap(),
            timeout: Duration::from_secs_f64(v["timeout_s"].as_f64().unwrap()),
            duration: Duration::from_secs(1),
            result: serde_json::from_value::<LoadResult>(v).unwrap(),
        };
        assert_eq!(render(Format::Json, &report), json, "{name}.json");
        assert_eq!(
            render(Format::Terminal, &report),
            data(&format!("{name}.txt")),
            "{name}.txt"
        );
    }
}

#[test]
fn connect_output_is_unchanged() {
    for (name, interrupted) in [("connect-slow", false), ("connect-errors", true)] {
        let json = data(&format!("{name}.json"));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let report = ConnectReport {
            input: v["target"]["input"].as_str().unwrap().to_string(),
            address: v["target"]["address"].as_str().unwrap().parse().unwrap(),
            timeout: Duration::from_secs_f64(v["timeout_s"].as_f64().unwrap()),
            interrupted,
            result: serde_json::from_value::<ConnectResult>(v).unwrap(),
        };
        assert_eq!(render(Format::Json, &report), json, "{name}.json");
        assert_eq!(
            render(Format::Terminal, &report),
            data(&format!("{name}.txt")),
            "{name}.txt"
        );
    }
}
