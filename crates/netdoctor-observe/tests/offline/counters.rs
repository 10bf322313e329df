//! Kernel counter parsing: committed samples of /proc/net/{netstat,snmp} (kernel 6.18), bad
//! layouts, deltas, and the live files of this host.

use netdoctor_observe::{ObserveError, delta, snapshot, snapshot_from};
use std::path::Path;

fn sample(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

#[test]
fn parses_committed_samples() {
    let snap = snapshot_from(&sample("netstat.txt"), &sample("snmp.txt")).unwrap();
    // Values as awk reads them from the sample files.
    assert_eq!(snap.get("TcpExt.DelayedACKs"), Some(11725));
    assert_eq!(snap.get("TcpExt.ListenOverflows"), Some(0));
    assert_eq!(snap.get("TcpExt.TCPTimeouts"), Some(2));
    assert_eq!(snap.get("Tcp.ActiveOpens"), Some(74746));
    assert_eq!(snap.get("Tcp.RetransSegs"), Some(1396));
    // MaxConn is -1: not a counter.
    assert_eq!(snap.get("Tcp.MaxConn"), None);
    // 135 TcpExt + 18 IpExt + 76 MPTcpExt; 20 Ip + 29 Icmp + 1 IcmpMsg + 14 Tcp + 9 Udp + 9 UdpLite.
    assert_eq!(snap.len(), 135 + 18 + 76 + 20 + 29 + 1 + 14 + 9 + 9);
    // The JSON form is a flat map.
    let json = serde_json::to_value(&snap).unwrap();
    assert_eq!(json["TcpExt.DelayedACKs"], 11725);
    assert_eq!(json.as_object().unwrap().len(), snap.len());
}

#[test]
fn rejects_broken_layouts() {
    let cases = [
        ("TcpExt: A B\n", "no value line"),
        ("TcpExt: A B\nTcpExt: 1\n", "2 names but 1 values"),
        ("TcpExt: A B\nIpExt: 1 2\n", "expected values for 'TcpExt'"),
        ("garbage\n", "no 'Prefix:'"),
    ];
    for (text, want) in cases {
        let err = snapshot_from(text, "").unwrap_err();
        assert!(matches!(err, ObserveError::Counters { .. }));
        let msg = err.to_string();
        assert!(msg.starts_with("parse /proc/net/netstat: "), "{msg}");
        assert!(msg.contains(want), "{msg} should contain {want}");
    }
}

#[test]
fn delta_lists_only_changes() {
    let before = snapshot_from(
        "TcpExt: ListenOverflows ListenDrops TW\nTcpExt: 1 1 5\n",
        "Tcp: CurrEstab\nTcp: 9\n",
    )
    .unwrap();
    let after = snapshot_from(
        "TcpExt: ListenOverflows ListenDrops TW New\nTcpExt: 4 1 5 2\n",
        "Tcp: CurrEstab\nTcp: 7\n",
    )
    .unwrap();
    let d = delta(&before, &after);
    let got: Vec<(&str, u64, u64)> = d
        .iter()
        .map(|c| (c.name.as_str(), c.before, c.after))
        .collect();
    assert_eq!(
        got,
        [
            ("Tcp.CurrEstab", 9, 7),
            ("TcpExt.ListenOverflows", 1, 4),
            ("TcpExt.New", 0, 2),
        ]
    );
    assert_eq!(d[0].change(), -2);
    assert!(delta(&after, &after).is_empty());
}

#[test]
fn live_proc_files_and_a_loopback_connection() {
    let before = snapshot().unwrap();
    for name in [
        "TcpExt.ListenOverflows",
        "TcpExt.ListenDrops",
        "Tcp.ActiveOpens",
        "Tcp.RetransSegs",
    ] {
        assert!(before.get(name).is_some(), "{name} missing");
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let _s = l.accept().unwrap();
    drop(c);
    let after = snapshot().unwrap();
    let d = delta(&before, &after);
    let opens = d.iter().find(|c| c.name == "Tcp.ActiveOpens").unwrap();
    // Other processes may open connections too: at least ours.
    assert!(opens.after > opens.before);
}
