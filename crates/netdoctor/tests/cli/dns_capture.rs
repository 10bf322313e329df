//! `netdoctor analyze` on captures whose story is DNS (`analyze::dns`), from the shared
//! third-party corpus (`../shared/realworld-pcaps/`; skipped when missing) and the committed
//! lab captures of `testdata/captures/make-dns.sh`: the verdict, the Chinese report, and
//! `-j 2` giving `-j 1`'s JSON.

use crate::common;

use common::corpus_file;

fn json(path: &std::path::Path, jobs: &str) -> serde_json::Value {
    let o = common::netdoctor(&["analyze", "--json", "-j", jobs, path.to_str().unwrap()]);
    let mut v = common::json(&o);
    v.as_object_mut().unwrap().remove("elapsed_s");
    v
}

#[test]
fn unanswered_nameservers_are_a_problem_in_both_languages_and_any_jobs() {
    // ppa-nowebaccess1: 7 queries for www.google.com to 4.2.2.2 and 4.2.2.1, no answer.
    let Some(p) = corpus_file("ppa-nowebaccess1.pcapng") else {
        return;
    };
    let v = json(&p, "1");
    assert_eq!(v["verdict"], "problem", "{v}");
    let ids: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["dns_server_unreachable", "dns_server_unreachable"]);
    assert_eq!(json(&p, "2"), v);
    let zh = common::zh_finding_block(&p, "dns_server_unreachable");
    assert!(
        zh.contains("一个已配置的域名服务器没有应答（超时）"),
        "{zh}"
    );
    assert!(zh.contains("#3") && zh.contains("→4.2.2.2:53"), "{zh}");
}

#[test]
fn one_query_at_the_capture_end_stays_inconclusive() {
    // ppa-udp_dnsrequest: one query, the capture ends with it.
    let Some(p) = corpus_file("ppa-udp_dnsrequest.pcapng") else {
        return;
    };
    let v = json(&p, "1");
    assert_eq!(v["verdict"], "inconclusive", "{v}");
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    let w = v["measurements"]["capture"]["warnings"].to_string();
    assert!(
        w.contains("1 DNS lookup(s) unanswered when the capture ended"),
        "{w}"
    );
    assert_eq!(json(&p, "2"), v);
}

/// The committed lab captures of `testdata/captures/make-dns.sh`: the finding ids, `-j 2`
/// giving `-j 1`'s JSON, and the Chinese blocks of the stories new there.
#[test]
fn lab_dns_captures_tell_the_same_with_any_jobs_and_in_chinese() {
    for (name, want) in [
        ("dns-refused.pcap.gz", "dns_server_error"),
        ("dns-lossy.pcap.gz", "dns_slow"),
        ("dns-ptr.pcap.gz", "reverse_dns_timeout"),
        ("dns-slow.pcap.gz", "dns_slow"),
        ("dns-tc.pcap.gz", "dns_slow"),
        // DNS over TCP (`analyze::dns::tcp`): a slow answer, a truncated answer whose TCP leg
        // was reset or dropped (the TCP path's own story of the refused or unanswered SYN
        // stays beside it).
        ("dns-tcp-slow.pcap.gz", "dns_slow"),
        ("dns-tc-slow.pcap.gz", "dns_slow,dns_slow"),
        (
            "dns-tc-rst.pcap.gz",
            "dns_server_error,server_not_listening",
        ),
        ("dns-tc-drop.pcap.gz", "dns_server_error,syn_retransmit"),
    ] {
        let p = common::captures_dir().join(name);
        let v = json(&p, "1");
        let ids: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.join(","), want, "{name}: {v}");
        assert_eq!(json(&p, "2"), v, "{name}");
    }
    let dir = common::captures_dir();
    let zh = common::zh_finding_block(&dir.join("dns-lossy.pcap.gz"), "dns_slow");
    assert!(
        zh.contains("域名服务器有应答，但68个查询中有22个没有得到应答"),
        "{zh}"
    );
    let zh = common::zh_finding_block(&dir.join("dns-ptr.pcap.gz"), "reverse_dns_timeout");
    assert!(zh.contains("反向解析（PTR查询）超时"), "{zh}");
    let zh = common::zh_finding_block(&dir.join("dns-tc.pcap.gz"), "dns_slow");
    assert!(zh.contains("TC位") && zh.contains("#3"), "{zh}");
    // The lookups' whole time with the TCP leg, and the leg that failed.
    assert!(zh.contains("每次查找共约"), "{zh}");
    let zh = common::zh_finding_block(&dir.join("dns-tc-rst.pcap.gz"), "dns_server_error");
    assert!(zh.contains("TCP") && zh.contains("#6"), "{zh}");
    // A lookup over TCP answered at once: no finding, with any jobs.
    let p = dir.join("dns-tcp.pcap.gz");
    let v = json(&p, "1");
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(json(&p, "2"), v);
}
