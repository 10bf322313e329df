//! `diagnose` on the backlog case, through the real binary, as a user would run it: the client
//! in one namespace (`--netns`), the server in another, a listen backlog of 1 and an acceptor
//! that takes one connection per 50 ms. The host observer finds the server process, samples its
//! listener in the server's namespace, and the report names `listen_queue_overflow` as the root
//! cause with `syn_retransmit` tied to it. Root only (namespaces, capture); skipped otherwise.

use crate::common::{is_root, json, netdoctor};
use netdoctor_lab::hostcases::{HOST_SERVER_IP, HostLab};
use std::io::{BufRead, BufReader};
use std::process::Stdio;

const PORT: u16 = 8282;

/// A one-connection-at-a-time HTTP server with `listen(1)` in Perl (Perl is in every Debian
/// base system): a separate process, as nginx would be, so the observer has a process to find.
const SLOW_ACCEPTOR: &str = r#"
use IO::Socket::INET;
my $s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => $ARGV[0], Listen => 1,
                              ReuseAddr => 1, Proto => "tcp") or die "listen: $!";
$| = 1; print "ready\n";
while (1) {
    select(undef, undef, undef, 0.05);
    my $c = $s->accept or next;
    while (my $l = <$c>) { last if $l =~ /^\r?\n$/; }
    print $c "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    close $c;
}
"#;

#[test]
fn backlog_case_names_the_overflow_as_root_of_syn_retransmit() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces, packet capture)");
        return;
    }
    let mut lab = HostLab::create(&format!("ndhd{}", std::process::id()), false).unwrap();
    let mut child = lab
        .command(lab.server_netns(), "perl")
        .unwrap()
        .args(["-e", SLOW_ACCEPTOR, &PORT.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start perl");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let server_pid = child.id();
    lab.keep_child(child);
    assert_eq!(ready.trim(), "ready", "the server did not start");

    let url = format!("http://{HOST_SERVER_IP}:{PORT}/");
    let out = netdoctor(&[
        "diagnose",
        "--netns",
        lab.client_netns(),
        &url,
        "-c",
        "20",
        "-d",
        "4s",
        "--json",
    ]);
    let v = json(&out);
    crate::common::assert_schema(&v);
    let findings = v["findings"].as_array().unwrap();
    let ids: Vec<&str> = findings.iter().filter_map(|f| f["id"].as_str()).collect();
    let root = findings
        .iter()
        .position(|f| f["id"] == "listen_queue_overflow")
        .unwrap_or_else(|| panic!("no listen_queue_overflow in {ids:?}"));
    let retrans = findings
        .iter()
        .position(|f| f["id"] == "syn_retransmit")
        .unwrap_or_else(|| panic!("no syn_retransmit in {ids:?}"));
    assert_eq!(findings[retrans]["caused_by"], "listen_queue_overflow");
    assert!(
        findings[root]["consequences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == "syn_retransmit"),
        "{}",
        findings[root]
    );
    assert!(root < retrans, "the root cause comes first: {ids:?}");
    assert!(findings[root].get("caused_by").is_none());
    // The listener was sampled in the server's namespace, and the check says where.
    let host = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "host")
        .expect("host check");
    let reason = host["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("server side read in the network namespace")
            && reason.contains(&format!("(pid {server_pid})")),
        "{host}"
    );
    eprintln!("findings {ids:?}; host check: {reason}");
    // eBPF counted in the same namespace, when this build has it (root and BTF are given).
    let bpf = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "bpf")
        .expect("bpf check");
    if let Some(why) = netdoctor_bpf::not_built_reason() {
        assert_eq!(bpf["status"], "skipped", "{bpf}");
        eprintln!("eBPF part skipped: eBPF observers not built: {why}");
    } else {
        assert_eq!(bpf["status"], "ok", "{bpf}");
        let kernel = &v["measurements"]["kernel"];
        assert!(
            kernel["netns"]
                .as_str()
                .unwrap()
                .ends_with(&format!("(pid {server_pid})")),
            "{kernel}"
        );
        assert!(
            kernel["state_changes"].as_array().unwrap().len() > 1,
            "{kernel}"
        );
    }
    let evidence = findings[root]["evidence"].to_string();
    assert!(
        evidence.contains(&format!("sock_diag listener :{PORT}")),
        "the sampled listener is not in the evidence: {evidence}"
    );
    drop(lab);
}
