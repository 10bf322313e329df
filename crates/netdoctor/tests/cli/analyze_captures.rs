//! `netdoctor analyze` on committed captures of every supported link type and format: the same
//! answer from `tcpdump -i lo`, `-i any` (SLL2 and SLL), IPv6, raw IP, pcapng and BSD loopback.

use crate::common;
use common::*;

fn analyze(path: &std::path::Path) -> (i32, serde_json::Value) {
    let o = netdoctor(&["analyze", "--json", path.to_str().unwrap()]);
    let v = json(&o);
    assert_schema(&v);
    (o.status.code().unwrap_or(-1), v)
}

fn assert_reference_stall(file: &str, v: &serde_json::Value, code: i32) {
    assert_eq!(code, 1, "{file}: exit code");
    assert_eq!(v["verdict"], "problem", "{file}");
    let f = &v["findings"][0];
    assert_eq!(f["id"], "nagle_delayed_ack", "{file}: {v:#}");
    assert_eq!(f["side"], "server", "{file}");
    let added = f["impact"]["added_latency_ms"].as_f64().unwrap();
    assert!((35.0..=60.0).contains(&added), "{file}: added {added} ms");
    assert!(
        v["measurements"]["capture"]["exchanges"]["count"]
            .as_u64()
            .unwrap()
            > 50,
        "{file}"
    );
}

#[test]
fn every_link_type_gives_the_same_diagnosis() {
    for file in [
        "nagle-eth.pcap",    // tcpdump -i lo (Ethernet)
        "nagle-sll2.pcap",   // tcpdump -i any (Linux cooked v2)
        "nagle-sll.pcap",    // tcpdump -i any -y LINUX_SLL (cooked v1)
        "nagle-ipv6.pcap",   // [::1]
        "nagle-raw.pcap",    // raw IP
        "nagle-full.pcapng", // pcapng, full payload
    ] {
        let (code, v) = analyze(&captures_dir().join(file));
        assert_reference_stall(file, &v, code);
    }
}

#[test]
fn bsd_loopback_link_type() {
    // Rewrite the Ethernet capture as LINKTYPE_NULL (4-byte host-order address family instead
    // of the 14-byte Ethernet header), as a BSD/macOS `tcpdump -i lo0` would write it.
    let src = std::fs::read(captures_dir().join("nagle-eth.pcap")).unwrap();
    assert_eq!(
        &src[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap expected"
    );
    let mut out = src[..24].to_vec();
    out[20..24].copy_from_slice(&0u32.to_le_bytes()); // LINKTYPE_NULL
    let mut i = 24;
    while i + 16 <= src.len() {
        let caplen = u32::from_le_bytes(src[i + 8..i + 12].try_into().unwrap()) as usize;
        let origlen = u32::from_le_bytes(src[i + 12..i + 16].try_into().unwrap());
        let data = &src[i + 16..i + 16 + caplen];
        let ethertype = u16::from_be_bytes([data[12], data[13]]);
        let family: u32 = if ethertype == 0x86dd { 30 } else { 2 };
        let mut rec = src[i..i + 8].to_vec();
        rec.extend_from_slice(&((caplen - 10) as u32).to_le_bytes());
        rec.extend_from_slice(&(origlen - 10).to_le_bytes());
        rec.extend_from_slice(&family.to_le_bytes());
        rec.extend_from_slice(&data[14..]);
        out.extend_from_slice(&rec);
        i += 16 + caplen;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nagle-null.pcap");
    std::fs::write(&path, out).unwrap();
    let (code, v) = analyze(&path);
    assert_reference_stall("nagle-null.pcap", &v, code);
}

#[test]
fn healthy_and_slow_server_captures() {
    let (code, v) = analyze(&captures_dir().join("healthy-eth.pcap"));
    assert_eq!((code, v["verdict"].as_str()), (0, Some("healthy")), "{v:#}");
    assert!(v["findings"].as_array().unwrap().is_empty(), "{v:#}");

    let (code, v) = analyze(&captures_dir().join("slow-eth.pcap"));
    assert_eq!(code, 1);
    assert_eq!(v["findings"][0]["id"], "slow_server_processing", "{v:#}");
    assert_eq!(v["findings"][0]["side"], "server");
    let added = v["findings"][0]["impact"]["added_latency_ms"]
        .as_f64()
        .unwrap();
    assert!((20.0..=80.0).contains(&added), "server time {added} ms");
}

#[test]
fn lab_captures_name_their_causes() {
    for (file, id) in [
        ("loss.pcap", "packet_loss_retransmission"),
        ("rto.pcap", "retransmission_timeout"),
        ("zero-window.pcap", "zero_window"),
        ("syn-retransmit.pcap", "syn_retransmit"),
        ("reset.pcap", "connection_reset"),
    ] {
        let (code, v) = analyze(&captures_dir().join(file));
        assert_eq!(code, 1, "{file}: {v:#}");
        let ids: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["id"].as_str())
            .collect();
        assert!(ids.contains(&id), "{file}: {ids:?}");
    }
}

/// `--html FILE` writes a self-contained page next to the usual output, with the finding and
/// its flow graph.
#[test]
fn analyze_writes_an_html_report_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("nagle.html");
    let file = captures_dir().join("nagle-eth.pcap");
    let out = netdoctor(&[
        "analyze",
        "--json",
        "--html",
        html.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(json(&out)["findings"][0]["id"], "nagle_delayed_ack");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"),
        "{}",
        &page[..80]
    );
    assert!(page.contains("nagle_delayed_ack"));
    assert!(page.contains("class=\"ladder\""), "no flow graph");
    assert!(!page.contains("<script"));
    // A file that cannot be written is an error that names it, not silence.
    let bad = netdoctor(&[
        "analyze",
        "--html",
        "/nonexistent-dir/x.html",
        file.to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("/nonexistent-dir/x.html"),
        "{}",
        stderr(&bad)
    );
}

/// A bulk transfer's capture (`lab start --case small-rmem`, captured in the client namespace):
/// the finding names the receiver's window, and the page charts the transfer (throughput bars,
/// in flight against the window) without any script.
#[test]
fn analyze_charts_a_bulk_transfer() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("bulk.html");
    let file = captures_dir().join("bulk-rmem.pcap.gz");
    let out = netdoctor(&[
        "analyze",
        "--json",
        "--html",
        html.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(ids.contains(&"receive_window_limited"), "{ids:?}");
    let bulk = &report["measurements"]["capture"]["stats"]["bulk"];
    assert!(
        bulk[0]["bins"].as_array().is_some_and(|b| b.len() >= 2),
        "{bulk}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Bulk transfers"), "no bulk section");
    assert_eq!(
        page.matches("<polyline").count(),
        2,
        "in flight and window lines"
    );
    assert!(!page.contains("<script"));
}

#[test]
fn a_sub_millisecond_typical_request_is_not_explained_by_a_tail_finding() {
    // client-input-drop: the client's host dropped some of the server's packets; the loss
    // (first finding) stalls a few requests by milliseconds while a typical one takes 0.10 ms
    // of network, server and transfer. The verdict must not say the loss explains most of
    // the latency (it did while the typical request was under 1 ms).
    let o = netdoctor(&[
        "analyze",
        captures_dir()
            .join("client-input-drop.pcap")
            .to_str()
            .unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let verdict = text
        .lines()
        .find(|l| l.starts_with("Verdict:"))
        .unwrap_or_else(|| panic!("no verdict line: {text}"));
    assert!(verdict.contains("the first one accounts for"), "{verdict}");
    assert!(!verdict.contains("explains most"), "{verdict}");
    assert!(verdict.contains("of a typical request's 0."), "{verdict}");
}

/// A capture on several NIC queues: a file is read again in timestamp order and gets the
/// original's verdict (`healthy-eth.pcap`, healthy); standard input cannot be read again, so
/// it keeps the file's order and says what that may fake. With `-j 2` the same report.
#[test]
fn frames_out_of_timestamp_order_are_read_in_timestamp_order() {
    let path = captures_dir().join("reorder-eth.pcap.gz");
    let p = path.to_str().unwrap();
    let reports: Vec<serde_json::Value> = ["1", "2"]
        .iter()
        .map(|j| json_ok(&netdoctor(&["analyze", "--json", "-j", j, p])))
        .collect();
    for v in &reports {
        assert_schema(v);
        assert_eq!(v["verdict"], "healthy", "{v:#}");
        assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v:#}");
        let cap = &v["measurements"]["capture"];
        assert!(cap["stats"]["quality"]["sorted_frames"].as_u64() > Some(100));
        let said = cap["warnings"].to_string();
        assert!(said.contains("analyzed in timestamp order"), "{said}");
        assert!(!said.contains("never captured"), "{said}");
    }
    assert_eq!(reports[0]["findings"], reports[1]["findings"]);
    assert_eq!(
        reports[0]["measurements"]["capture"]["stats"],
        reports[1]["measurements"]["capture"]["stats"]
    );

    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_netdoctor"))
        .args(["analyze", "--json", "-"])
        .env("NETDOCTOR_QUIET", "1")
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    let v = json(&piped);
    let said = v["measurements"]["capture"]["warnings"].to_string();
    assert!(
        said.contains("analyzed in the file's order") && said.contains("reordercap"),
        "{said}"
    );
}

/// syn_retransmit's explanation tells only what happened: no clause about "0 connections"
/// (it once read "the SYN was repeated on 0 connections (...), and the SYN/ACK on 1 (...). 0
/// connections never completed"), and it still counts what did.
#[test]
fn syn_retransmit_says_nothing_about_zero_connections() {
    for (file, said) in [
        (
            "listen-full.pcap",
            "the SYN/ACK was repeated on 1 connection",
        ),
        (
            "banner-ack-lost.pcap",
            "the SYN/ACK was repeated on 1 connection",
        ),
        ("syn-tail.pcap", "the SYN was repeated on 6 connections"),
        (
            "route-lossy.pcap",
            "2 of them never completed the handshake",
        ),
    ] {
        let (_, v) = analyze(&captures_dir().join(file));
        let f = finding(&v, "syn_retransmit").unwrap_or_else(|| panic!("{file}: {v:#}"));
        let x = f["explanation"].as_str().unwrap().replace('\n', " ");
        assert!(x.contains(said), "{file}: {x}");
        for zero in [" 0 connection", " on 0 ", "0 of them"] {
            assert!(!x.contains(zero), "{file}: {zero:?} in {x}");
        }
    }
}
