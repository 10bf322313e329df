//! A name with a dead address among live ones, on real namespaces this test creates
//! (nd-ex-dr-cli, nd-ex-dr-srv; nginx on 10.78.0.2:19510 in the server's, stopped by PID; the
//! namespaces and /etc/netns/nd-ex-dr-cli/ removed on drop, also when an assertion fails).
//! The name is given by the client namespace's own /etc/hosts (`ip netns exec` mounts
//! /etc/netns/NS/hosts over /etc/hosts), so netdoctor runs under `ip netns exec`.
//!
//! Told apart:
//! - dead first, live second: the preflight stops on the dead address (no ARP answer) and the
//!   finding says the name's other address accepts connections: a dead record, fixed in the
//!   name's records (curl waits 4 s on such a name before it falls back);
//! - the dead address alone: the same finding, no other address to tell, the fix points at the
//!   name's records, not "the address in the URL";
//! - two dead addresses: none of the others accepts a connection either;
//! - refused first (a host with nothing on the port), live second: the refusal's finding, with
//!   the live address beside it;
//! - the live address alone: the run passes the preflight, nothing about other addresses;
//! - live first, dead second (the resolver's order hides it): `dns_dead_record`, a warning,
//!   the dead address's connect() timed out in the evidence, the verdict a problem;
//! - live first, an IPv6 address second on a client without IPv6 routes: `dns_dead_record` as
//!   info (connect() fails at once, clients here fall back without waiting), verdict not a
//!   problem;
//! - live first, refused second: `dns_dead_record` as info (a reset: fast fallback).

use crate::common::*;
use serde_json::Value;
use std::process::Command;

const CLI: &str = "nd-ex-dr-cli";
const SRV: &str = "nd-ex-dr-srv";
const PORT: u16 = 19510;

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("run ip");
    assert!(o.status.success(), "ip {args:?}: {}", stderr(&o));
}

struct Lab {
    dir: std::path::PathBuf,
    nginx_pid: Option<u32>,
}

impl Lab {
    fn create() -> Lab {
        let _ = Command::new("ip").args(["netns", "del", CLI]).output();
        let _ = Command::new("ip").args(["netns", "del", SRV]).output();
        let mut lab = Lab {
            dir: tempdir("dead-record"),
            nginx_pid: None,
        };
        ip(&["netns", "add", CLI]);
        ip(&["netns", "add", SRV]);
        ip(&[
            "link", "add", "ndexdrc", "type", "veth", "peer", "name", "ndexdrs",
        ]);
        ip(&["link", "set", "ndexdrc", "netns", CLI]);
        ip(&["link", "set", "ndexdrs", "netns", SRV]);
        ip(&["-n", CLI, "addr", "add", "10.78.0.1/24", "dev", "ndexdrc"]);
        ip(&["-n", SRV, "addr", "add", "10.78.0.2/24", "dev", "ndexdrs"]);
        for (ns, dev) in [(CLI, "ndexdrc"), (SRV, "ndexdrs")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        let www = lab.dir.join("www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("index.html"), site_body(2000)).unwrap();
        let pid = lab.dir.join("nginx.pid");
        let conf = lab.dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "worker_processes 1; pid {pid}; error_log {dir}/error.log; daemon on;\n\
                 events {{ worker_connections 256; }}\n\
                 http {{ access_log off; server {{ listen 10.78.0.2:{PORT}; root {www}; }} }}\n",
                pid = pid.display(),
                dir = lab.dir.display(),
                www = www.display()
            ),
        )
        .unwrap();
        let o = Command::new("ip")
            .args(["netns", "exec", SRV, "nginx", "-c"])
            .arg(&conf)
            .output()
            .expect("run nginx");
        assert!(o.status.success(), "nginx: {}", stderr(&o));
        lab.nginx_pid = std::fs::read_to_string(&pid)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        assert!(lab.nginx_pid.is_some(), "nginx wrote no pid file");
        lab
    }

    /// The client namespace's /etc/hosts: `name` → `addrs`, in this order.
    fn hosts(&self, name: &str, addrs: &[&str]) {
        let d = format!("/etc/netns/{CLI}");
        std::fs::create_dir_all(&d).unwrap();
        let mut text = String::from("127.0.0.1 localhost\n");
        for a in addrs {
            text.push_str(&format!("{a} {name}\n"));
        }
        std::fs::write(format!("{d}/hosts"), text).unwrap();
    }

    /// `netdoctor diagnose http://name:PORT/` from the client namespace.
    fn diagnose(&self, tag: &str, name: &str) -> Value {
        let url = format!("http://{name}:{PORT}/");
        let o = Command::new("ip")
            .args(["netns", "exec", CLI, env!("CARGO_BIN_EXE_netdoctor")])
            .args(["diagnose", &url, "-d", "1s", "-c", "4", "--json"])
            .env("NETDOCTOR_QUIET", "1")
            .env("NO_COLOR", "1")
            .output()
            .expect("run netdoctor");
        let r = json(&o);
        assert_schema(&r);
        for f in r["findings"].as_array().into_iter().flatten() {
            eprintln!("{tag}: {} {} : {}", f["id"], f["side"], f["summary"]);
        }
        r
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(pid) = self.nginx_pid {
            // SAFETY: kill(2) on the nginx master this test started, by its PID.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{CLI}"));
        let _ = Command::new("ip").args(["netns", "del", CLI]).output();
        let _ = Command::new("ip").args(["netns", "del", SRV]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The evidence note of the `other_addresses` probe of finding `f`, if any.
fn other_note(f: &Value) -> Option<String> {
    f["evidence"].as_array()?.iter().find_map(|e| {
        (e["probe"] == "other_addresses").then(|| e["note"].as_str().unwrap_or("").to_string())
    })
}

#[test]
fn a_dead_record_beside_a_live_one_is_told_as_the_names_fault() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let lab = Lab::create();

    // Dead first (nobody holds 10.78.0.3: no ARP answer), live second.
    lab.hosts("mixed.ex.test", &["10.78.0.3", "10.78.0.2"]);
    let r = lab.diagnose("dead+live", "mixed.ex.test");
    let f = finding(&r, "neighbour_unreachable").expect("the dead address is named");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("also resolves to 10.78.0.2:19510"), "{s}");
    assert!(s.contains("10.78.0.3 is a dead address"), "{s}");
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("Remove 10.78.0.3 from mixed.ex.test's records"),
        "{fix}"
    );
    assert!(!fix.contains("address in the URL"), "{fix}");
    let why = f["explanation"].as_str().unwrap();
    assert!(why.contains("wait for their connect timeout"), "{why}");
    let note = other_note(f).expect("other_addresses evidence");
    assert!(
        note.contains("10.78.0.2:19510 accepted a connection"),
        "{note}"
    );
    assert_eq!(r["verdict"], "problem", "{}", r["verdict"]);

    // The dead address alone: no other address to tell; the fix is about the name.
    lab.hosts("deadonly.ex.test", &["10.78.0.3"]);
    let r = lab.diagnose("dead alone", "deadonly.ex.test");
    let f = finding(&r, "neighbour_unreachable").expect("the dead address is named");
    assert!(other_note(f).is_none(), "{f}");
    assert!(!f["summary"].as_str().unwrap().contains("also resolves"));
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("correct the name's records"),
        "{}",
        f["fix"]
    );

    // Two dead addresses: none of the others accepts either.
    lab.hosts("twodead.ex.test", &["10.78.0.3", "10.78.0.5"]);
    let r = lab.diagnose("dead+dead", "twodead.ex.test");
    let f = finding(&r, "neighbour_unreachable").expect("the dead address is named");
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.contains("none of twodead.ex.test's 1 other address"),
        "{s}"
    );
    assert!(!s.contains("dead address among"), "{s}");
    assert!(
        other_note(f)
            .unwrap()
            .contains("10.78.0.5:19510 did not accept")
    );

    // The live address alone: the preflight passes, nothing about other addresses.
    lab.hosts("live.ex.test", &["10.78.0.2"]);
    let r = lab.diagnose("live", "live.ex.test");
    assert!(finding(&r, "neighbour_unreachable").is_none(), "{r}");
    for f in r["findings"].as_array().into_iter().flatten() {
        assert!(other_note(f).is_none(), "{f}");
    }
    assert_ne!(r["verdict"], "problem", "{}", r["verdict"]);

    // Live first, dead second: the run's address is fine, the name's other record is not.
    lab.hosts("livedead.ex.test", &["10.78.0.2", "10.78.0.3"]);
    let r = lab.diagnose("live+dead", "livedead.ex.test");
    assert_eq!(r["target"]["address"], "10.78.0.2:19510", "{}", r["target"]);
    let f = finding(&r, "dns_dead_record").expect("the dead second record is found");
    assert_eq!(f["severity"], "warning", "{f}");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("10.78.0.3:19510 did not answer"), "{s}");
    assert!(s.contains("10.78.0.2:19510 (the run's) accepts"), "{s}");
    assert!(
        f["explanation"]
            .as_str()
            .unwrap()
            .contains("wait for their connect timeout"),
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("Remove 10.78.0.3 from livedead.ex.test's records"),
        "{f}"
    );
    assert_eq!(f["evidence"][0]["probe"], "dead_record_silent", "{f}");
    assert_eq!(r["verdict"], "problem", "{}", r["verdict"]);

    // Live first, an IPv6 record second: the client has no IPv6 route (only ::1 and
    // link-local), so connect() fails at once: not a wait here.
    lab.hosts("livev6.ex.test", &["10.78.0.2", "fd00:78::3"]);
    let r = lab.diagnose("live+v6", "livev6.ex.test");
    let f = finding(&r, "dns_dead_record").expect("the unroutable AAAA record is told");
    assert_eq!(f["severity"], "info", "{f}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("no IPv6 route here"),
        "{f}"
    );
    assert_eq!(f["evidence"][0]["probe"], "dead_record_unreachable", "{f}");
    assert_ne!(r["verdict"], "problem", "{}", r["verdict"]);

    // Refused first: 10.78.0.3 now belongs to the server, with nothing on the port.
    ip(&["-n", SRV, "addr", "add", "10.78.0.3/24", "dev", "ndexdrs"]);
    ip(&["-n", CLI, "neigh", "flush", "dev", "ndexdrc"]);
    lab.hosts("refused.ex.test", &["10.78.0.3", "10.78.0.2"]);
    let r = lab.diagnose("refused+live", "refused.ex.test");
    let f = r["findings"]
        .as_array()
        .and_then(|a| a.last())
        .expect("a stopping finding");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("also resolves to 10.78.0.2:19510"), "{s}");
    let why = f["explanation"].as_str().unwrap();
    assert!(
        why.contains("fall back to the next address at once"),
        "{why}"
    );
    assert!(
        other_note(f)
            .unwrap()
            .contains("10.78.0.2:19510 accepted a connection")
    );

    // Live first, refused second: a reset, clients fall back at once: info, not a problem.
    lab.hosts("liverefused.ex.test", &["10.78.0.2", "10.78.0.3"]);
    let r = lab.diagnose("live+refused", "liverefused.ex.test");
    let f = finding(&r, "dns_dead_record").expect("the refusing record is told");
    assert_eq!(f["severity"], "info", "{f}");
    assert!(
        f["summary"]
            .as_str()
            .unwrap()
            .contains("10.78.0.3:19510 refused the connection (RST)"),
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("Start the service on 10.78.0.3 (port 19510)"),
        "{f}"
    );
    assert_ne!(r["verdict"], "problem", "{}", r["verdict"]);
}
