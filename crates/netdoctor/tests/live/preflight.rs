//! The preflight stage on real failures built in network namespaces this test creates
//! (netdoctor-lab's `HostLab`: `-srv` 10.214.0.1/24 and `-cli` 10.214.0.2/24 on one veth, no
//! default route): an HTTPS server with a self-signed certificate diagnosed without `-k`, an
//! address on the client's subnet that nobody holds (no ARP reply; over IPv6 no neighbour
//! advertisement, with its look-alikes), an address with no route,
//! and a nameserver behind no route. Each asserts the finding, its side and severity, the
//! verdict and exit code, and that the load never ran. Every namespace (and nginx, by PID) is
//! removed on drop, also when an assertion fails.

use crate::common::*;
use netdoctor_lab::hostcases::HostLab;
use netdoctor_lab::tls_nginx::{TlsNginx, TlsNginxConfig, TlsNginxError};
use serde_json::Value;

fn lab(tag: &str) -> HostLab {
    HostLab::create(&format!("ndpf-{tag}-{}", std::process::id()), false).expect("create netns")
}

/// One finding, critical, on `side`; verdict problem, exit 1; the load and every later stage
/// skipped because the preflight failed.
fn assert_stopped(code: i32, r: &Value, id: &str, side: &str) {
    assert_schema(r);
    assert_eq!(code, 1, "{r:#}");
    assert_eq!(r["verdict"], "problem", "{r:#}");
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{r:#}");
    let f = &findings[0];
    assert_eq!(f["id"], id, "{f:#}");
    assert_eq!(f["side"], side, "{f:#}");
    assert_eq!(f["severity"], "critical", "{f:#}");
    assert!(!f["fix"].as_str().unwrap().is_empty());
    assert_eq!(check(r, "preflight").0, "failed", "{r:#}");
    for stage in ["syn_probe", "http_probe", "load", "capture"] {
        let (status, reason) = check(r, stage);
        assert_eq!(status, "skipped", "{stage}");
        assert!(
            reason.starts_with("preflight failed: "),
            "{stage}: {reason}"
        );
    }
    assert!(r["measurements"]["load"].is_null(), "the load ran: {r:#}");
    eprintln!(
        "{id}: stopped after {:.2} s: {}",
        r["elapsed_s"].as_f64().unwrap_or(-1.0),
        f["summary"]
    );
}

fn diagnose(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["diagnose"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-d", "2s", "-c", "4", "--json"]);
    let out = netdoctor(&all);
    (out.status.code().unwrap_or(-1), json(&out))
}

#[test]
fn https_with_a_self_signed_certificate_without_k_stops_at_the_preflight_on_the_client() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let lab = lab("tls");
    let nginx = match lab
        .in_ns(lab.server_netns(), || {
            TlsNginx::start(&TlsNginxConfig::default())
        })
        .unwrap()
    {
        Ok(n) => n,
        Err(TlsNginxError::Missing(tool)) => {
            eprintln!("skipped: needs {tool} (apt-get install nginx-light openssl)");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let url = nginx.https_url();
    let (code, r) = diagnose(&[&url, "--netns", lab.server_netns()]);
    assert_stopped(code, &r, "tls_verify_failed", "client");
    let f = &r["findings"][0];
    assert!(f["fix"].as_str().unwrap().contains("-k"), "{f:#}");
    assert!(
        f["evidence"][0]["note"]
            .as_str()
            .unwrap()
            .contains("UnknownIssuer"),
        "{f:#}"
    );
    // The same server with -k: the preflight passes (unverified) and the load runs.
    let (code, r) = diagnose(&[&url, "-k", "--netns", lab.server_netns()]);
    assert_schema(&r);
    assert!(matches!(code, 0 | 1 | 3), "{r:#}");
    let (status, reason) = check(&r, "preflight");
    assert_eq!(status, "ok", "{r:#}");
    assert!(reason.contains("TLS unverified (-k)"), "{reason}");
    assert_eq!(check(&r, "load").0, "ok");
    assert!(
        !r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "tls_verify_failed" || f["id"] == "http_errors"),
        "{r:#}"
    );
    drop(nginx);
}

#[test]
fn an_address_on_the_link_that_nobody_answers_is_the_networks_and_stops_in_about_a_second() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let lab = lab("arp");
    // 10.214.0.99 is on the client's /24 but no namespace holds it: ARP goes unanswered.
    let (code, r) = diagnose(&["http://10.214.0.99:8080/", "--netns", lab.client_netns()]);
    assert_stopped(code, &r, "neighbour_unreachable", "network");
    let f = &r["findings"][0];
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("does not answer ARP"),
        "{f:#}"
    );
    let notes: Vec<&str> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["note"].as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("INCOMPLETE/FAILED")),
        "{notes:?}"
    );

    // Look-alike: the address exists and drops the SYNs (a firewall, a full queue): the
    // neighbour answered, so the preflight goes on and the load runs.
    let mut drop_syn = lab.command(lab.server_netns(), "iptables").unwrap();
    let ok = drop_syn
        .args(["-A", "INPUT", "-p", "tcp", "--dport", "8080", "-j", "DROP"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped the dropped-SYN look-alike: iptables failed (apt-get install iptables)");
        return;
    }
    let (_, r) = diagnose(&["http://10.214.0.1:8080/", "--netns", lab.client_netns()]);
    assert_schema(&r);
    let (status, reason) = check(&r, "preflight");
    assert_eq!(status, "ok", "{r:#}");
    assert!(reason.contains("answered ARP"), "{reason}");
    assert!(
        !r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "neighbour_unreachable"),
        "{r:#}"
    );
    assert_eq!(check(&r, "load").0, "ok", "{r:#}");
    assert!(!r["measurements"]["load"].is_null());
}

/// `ip ARGS…` in one of the lab's namespaces; its stdout (panics when it fails).
fn ip_in(lab: &HostLab, ns: &str, args: &[&str]) -> String {
    let out = lab.command(ns, "ip").unwrap().args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {}", stderr(&out));
    stdout(&out)
}

fn no_neighbour_finding(r: &Value) -> bool {
    !r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "neighbour_unreachable")
}

/// The IPv6 twin, the neighbour read over rtnetlink (RTM_GETNEIGH): fd00:214::99 is on the
/// client's /64 but nobody holds it, neighbour discovery goes unanswered, and the run stops the
/// same way; `ip -6 neigh` says the same in the same namespace. Look-alikes: a neighbour that
/// answers and serves (healthy, the entry read as `ip -6 neigh` shows it), one that answers
/// and drops the SYNs (the preflight goes on), and a target behind a router that answered (the
/// router's SYN goes nowhere: not blamed on a neighbour).
#[test]
fn an_ipv6_address_on_the_link_that_nobody_answers_is_the_networks_and_stops_the_same_way() {
    let _turn = crate::common::file_turn(file!());
    use netdoctor_route::neighbour::{self, NeighbourState};
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let lab = lab("nd6");
    let (srv, cli) = (lab.server_netns(), lab.client_netns());
    for (ns, dev, ip) in [
        (srv, "h-srv", "fd00:214::1/64"),
        (cli, "h-cli", "fd00:214::2/64"),
    ] {
        ip_in(&lab, ns, &["-6", "addr", "add", ip, "dev", dev, "nodad"]);
    }
    let (code, r) = diagnose(&["http://[fd00:214::99]:8080/", "--netns", cli]);
    assert_stopped(code, &r, "neighbour_unreachable", "network");
    let f = &r["findings"][0];
    let summary = f["summary"].as_str().unwrap();
    assert!(
        summary.contains("fd00:214::99 on the link of h-cli does not answer neighbour discovery"),
        "{f:#}"
    );
    let ev = f["evidence"].to_string();
    assert!(
        ev.contains("INCOMPLETE/FAILED (no neighbour advertisement)"),
        "{ev}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("ip -6 neigh show"),
        "{f:#}"
    );
    let theirs = ip_in(
        &lab,
        cli,
        &["-6", "neigh", "show", "fd00:214::99", "dev", "h-cli"],
    );
    assert!(
        theirs.contains("INCOMPLETE") || theirs.contains("FAILED"),
        "ip -6 neigh: {theirs:?}"
    );
    eprintln!("ip -6 neigh in the same namespace: {}", theirs.trim());

    // Look-alike: the neighbour answers and serves: healthy; the entry as `ip -6 neigh` has it.
    let server = lab
        .in_ns(srv, || {
            netdoctor_lab::builtin::BuiltinServers::start(&[(
                "[fd00:214::1]:8080".parse().unwrap(),
                true,
            )])
        })
        .unwrap()
        .expect("start the built-in server");
    let url = "http://[fd00:214::1]:8080/";
    let (code, r) = diagnose(&[url, "--netns", cli, "--rate", "300"]);
    assert_schema(&r);
    assert_eq!(check(&r, "preflight").0, "ok", "{r:#}");
    assert!(no_neighbour_finding(&r), "{r:#}");
    assert_eq!((code, r["verdict"].as_str()), (0, Some("healthy")), "{r:#}");
    let ours = lab
        .in_ns(cli, || {
            neighbour::lookup("fd00:214::1".parse().unwrap(), Some("h-cli"))
        })
        .unwrap()
        .unwrap()
        .expect("an entry for the server");
    assert_ne!(ours.state, NeighbourState::Unanswered, "{ours:?}");
    let theirs = ip_in(
        &lab,
        cli,
        &["-6", "neigh", "show", "fd00:214::1", "dev", "h-cli"],
    );
    assert!(
        theirs.contains(&ours.lladdr),
        "ours {ours:?}, ip -6 neigh {theirs:?}"
    );
    server.stop();

    // Look-alike: the neighbour answers but drops the SYNs: the preflight goes on.
    let mut drop_syn = lab.command(srv, "ip6tables").unwrap();
    let ok = drop_syn
        .args(["-A", "INPUT", "-p", "tcp", "--dport", "8080", "-j", "DROP"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        let (_, r) = diagnose(&[url, "--netns", cli]);
        assert_schema(&r);
        let (status, reason) = check(&r, "preflight");
        assert_eq!(status, "ok", "{r:#}");
        assert!(
            reason.contains("(the next hop fd00:214::1 answered neighbour discovery)"),
            "{reason}"
        );
        assert!(no_neighbour_finding(&r), "{r:#}");
        assert_eq!(check(&r, "load").0, "ok", "{r:#}");
    } else {
        eprintln!(
            "skipped the dropped-SYN look-alike: ip6tables failed (apt-get install iptables)"
        );
    }

    // Look-alike: a target behind a router (the server namespace; a blackhole route there
    // discards the packets without a word): the router answered neighbour discovery, the SYN
    // goes nowhere after it. Not blamed on a neighbour; the preflight goes on.
    ip_in(
        &lab,
        cli,
        &["-6", "route", "add", "fd00:215::/64", "via", "fd00:214::1"],
    );
    ip_in(
        &lab,
        srv,
        &["-6", "route", "add", "blackhole", "fd00:215::/64"],
    );
    let behind = "http://[fd00:215::99]:8080/";
    let (_, r) = diagnose(&[behind, "--netns", cli]);
    assert_schema(&r);
    let (status, reason) = check(&r, "preflight");
    assert_eq!(status, "ok", "{r:#}");
    assert!(
        reason.contains("route: via fd00:214::1 on h-cli"),
        "{reason}"
    );
    assert!(
        reason.contains("(the next hop fd00:214::1 answered neighbour discovery)"),
        "{reason}"
    );
    assert!(no_neighbour_finding(&r), "{r:#}");
    // Without the blackhole the router has no route and says so (ICMPv6 no route: the client's
    // connect gets ENETUNREACH): the path's, stopped at once, never the client's no_route.
    ip_in(
        &lab,
        srv,
        &["-6", "route", "del", "blackhole", "fd00:215::/64"],
    );
    let (code, r) = diagnose(&[behind, "--netns", cli]);
    assert_stopped(code, &r, "neighbour_unreachable", "network");
    let summary = r["findings"][0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("a router on the way reported \"network unreachable\""),
        "{summary}"
    );
}

#[test]
fn no_route_is_the_clients_and_a_nameserver_behind_no_route_is_not_refused() {
    let _turn = crate::common::file_turn(file!());
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let lab = lab("rt");
    // The client namespace routes only 10.214.0.0/24.
    let (code, r) = diagnose(&["http://10.215.0.1:8080/", "--netns", lab.client_netns()]);
    assert_stopped(code, &r, "no_route", "client");

    // A nameserver with no route to it: ENETUNREACH, named as such (it used to read
    // "refused"), on the client's side.
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("resolv.conf");
    std::fs::write(
        &rc,
        "nameserver 10.215.0.53\noptions timeout:1 attempts:1\n",
    )
    .unwrap();
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", lab.client_netns()])
        .arg(env!("CARGO_BIN_EXE_netdoctor"))
        .args([
            "dns",
            "srv.lab.test",
            "--no-reverse",
            "--json",
            "--resolv-conf",
        ])
        .arg(&rc)
        .env("NETDOCTOR_QUIET", "1")
        .output()
        .unwrap();
    let r = json(&out);
    assert_schema(&r);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "dns_server_unreachable")
        .unwrap_or_else(|| panic!("{r:#}"));
    let summary = f["summary"].as_str().unwrap();
    assert!(summary.contains("no route"), "{summary}");
    assert!(!summary.contains("refused"), "{summary}");
    assert_eq!(f["side"], "client", "{f:#}");
}
