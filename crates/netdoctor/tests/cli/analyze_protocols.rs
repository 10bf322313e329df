//! `netdoctor analyze` on the committed non-HTTP captures (`testdata/captures/make-proto.sh`):
//! exchanges found from direction turns on TLS and on a line protocol picked up mid-stream
//! give the same diagnosis as the core tests, in JSON (schema-checked) and in the terminal.

use crate::common;
use common::*;

fn analyze(file: &str) -> (i32, serde_json::Value) {
    let path = captures_dir().join(file);
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    let v = json(&o);
    assert_schema(&v);
    (o.status.code().unwrap_or(-1), v)
}

#[test]
fn turns_find_server_nagle_on_tls_and_mid_stream_line_protocol() {
    for file in ["tls-nagle.pcap", "line-midstream.pcap"] {
        let (code, v) = analyze(file);
        assert_eq!(code, 1, "{file}: exit code");
        assert_eq!(v["verdict"], "problem", "{file}");
        let f = &v["findings"][0];
        assert_eq!(f["id"], "nagle_delayed_ack", "{file}: {v:#}");
        assert_eq!(f["side"], "server", "{file}");
        let x = &v["measurements"]["capture"]["exchanges"];
        assert_eq!(x["method"], "turns", "{file}");
        assert!(x["count"].as_u64().unwrap() >= 40, "{file}: {x}");
    }
}

#[test]
fn tls_with_nodelay_and_redis_are_healthy_and_the_terminal_says_how() {
    for file in ["tls-healthy.pcap", "redis-healthy.pcap"] {
        let (code, v) = analyze(file);
        assert_eq!(code, 0, "{file}: {v:#}");
        assert_eq!(v["verdict"], "healthy", "{file}");
        assert_eq!(
            v["measurements"]["capture"]["exchanges"]["method"], "turns",
            "{file}"
        );
    }

    let path = captures_dir().join("tls-healthy.pcap");
    let o = netdoctor(&["analyze", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("exchanges found from direction turns"),
        "{out}"
    );
}
