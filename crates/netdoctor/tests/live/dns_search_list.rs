//! The Kubernetes search list on real namespaces this test creates (nd-ex-sl-cli,
//! nd-ex-sl-srv; a small python3 nameserver on 10.76.0.2:53 in the server's, stopped by PID;
//! the namespaces and /etc/netns/nd-ex-sl-cli/ removed on drop, also when an assertion fails).
//! The client's resolv.conf is a pod's (`search ns.svc.cluster.local svc.cluster.local
//! cluster.local`, `options ndots:5`), mounted by `ip netns exec`, so glibc's getaddrinfo
//! walks the same search list as netdoctor.
//!
//! The nameserver answers every question after DELAY_MS (a nameserver one round trip away):
//! `api.example.com` (2 dots) is asked as three NXDOMAIN names before the name as written.
//! Told: `dns_slow` on the client side with the three names and their cost, the direct tries
//! asked of the name that answered (before: "NXDOMAIN" for a name that resolves, and a
//! healthy verdict). Look-alikes: the same name with a trailing dot, a name with five dots, an
//! internal name whose first suffix answers (no search-list finding), a name no form of which
//! exists (`dns_name_not_found`), SERVFAIL (`dns_server_error`), a slow nameserver and no
//! search list (`dns_slow` on the nameserver's side, not the client's).

use crate::common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};

const CLI: &str = "nd-ex-sl-cli";
const SRV: &str = "nd-ex-sl-srv";
const POD: &str = "nameserver 10.76.0.2\nsearch ns.svc.cluster.local svc.cluster.local \
                   cluster.local\noptions ndots:5 timeout:1 attempts:2\n";
/// Every answer's delay in the search-list runs: 3 × 2 × 60 ms of NXDOMAIN before the answer,
/// and a median under `dns_slow`'s 100 ms nameserver threshold.
const DELAY_MS: &str = "60";

/// A nameserver on ADDR:53 answering after DELAY ms; MODE `ok`: A 10.76.0.2 for the names of
/// EXISTS, empty NOERROR for their AAAA, NXDOMAIN for every other name; `servfail`: SERVFAIL.
const SERVER: &str = r#"
import socket, struct, sys, threading
addr, mode, delay = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000.0
EXISTS = {"api.example.com", "web.ns.svc.cluster.local", "a.b.c.d.e.example"}
def answer(p):
    tid, flags = struct.unpack("!HH", p[:4])
    off, labels = 12, []
    while p[off]:
        labels.append(p[off + 1:off + 1 + p[off]].decode()); off += 1 + p[off]
    off += 1
    qtype = struct.unpack("!H", p[off:off + 2])[0]
    q = p[12:off + 4]
    name = ".".join(labels).lower()
    def msg(rcode, ans=b""):
        fl = 0x8480 | (flags & 0x0100) | rcode
        return struct.pack("!HHHHHH", tid, fl, 1, 1 if ans else 0, 0, 0) + q + ans
    if mode == "servfail": return msg(2)
    if name not in EXISTS: return msg(3)
    if qtype == 1:
        return msg(0, b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("10.76.0.2"))
    return msg(0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
print("up", flush=True)
while True:
    p, c = s.recvfrom(4096)
    threading.Timer(delay, s.sendto, (answer(p), c)).start()
"#;

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("run ip");
    assert!(o.status.success(), "ip {args:?}: {}", stderr(&o));
}

struct Lab {
    dir: std::path::PathBuf,
    server: Option<Child>,
}

impl Lab {
    fn create() -> Lab {
        let _ = Command::new("ip").args(["netns", "del", CLI]).output();
        let _ = Command::new("ip").args(["netns", "del", SRV]).output();
        let lab = Lab {
            dir: tempdir("dns-search"),
            server: None,
        };
        std::fs::write(lab.dir.join("ns.py"), SERVER).unwrap();
        ip(&["netns", "add", CLI]);
        ip(&["netns", "add", SRV]);
        ip(&[
            "link", "add", "ndexslc", "type", "veth", "peer", "name", "ndexsls",
        ]);
        ip(&["link", "set", "ndexslc", "netns", CLI]);
        ip(&["link", "set", "ndexsls", "netns", SRV]);
        ip(&["-n", CLI, "addr", "add", "10.76.0.1/24", "dev", "ndexslc"]);
        ip(&["-n", SRV, "addr", "add", "10.76.0.2/24", "dev", "ndexsls"]);
        for (ns, dev) in [(CLI, "ndexslc"), (SRV, "ndexsls")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        lab
    }

    /// (Re)starts the nameserver and writes the client's resolv.conf.
    fn serve(&mut self, mode: &str, delay_ms: &str, resolv: &str) {
        self.stop();
        let mut child = Command::new("ip")
            .args(["netns", "exec", SRV, "python3"])
            .arg(self.dir.join("ns.py"))
            .args(["10.76.0.2", mode, delay_ms])
            .stdout(Stdio::piped())
            .spawn()
            .expect("run python3");
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "up", "nameserver did not start");
        self.server = Some(child);
        let d = format!("/etc/netns/{CLI}");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(format!("{d}/resolv.conf"), resolv).unwrap();
        std::fs::write(format!("{d}/hosts"), "127.0.0.1 localhost\n").unwrap();
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// `netdoctor dns NAME --json --no-reverse` from the client namespace; prints the findings.
    fn dns(&self, name: &str) -> Value {
        let o = Command::new("ip")
            .args(["netns", "exec", CLI, env!("CARGO_BIN_EXE_netdoctor")])
            .args(["dns", name, "--json", "--no-reverse"])
            .env("NETDOCTOR_QUIET", "1")
            .output()
            .expect("run netdoctor");
        let r: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", stderr(&o)));
        for f in r["findings"].as_array().into_iter().flatten() {
            eprintln!(
                "{name}: {} {} {} : {}",
                f["id"], f["severity"], f["side"], f["summary"]
            );
        }
        r
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{CLI}"));
        let _ = Command::new("ip").args(["netns", "del", CLI]).output();
        let _ = Command::new("ip").args(["netns", "del", SRV]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The search-list story: `dns_slow` told on the client's side.
fn search_story(r: &Value) -> Option<&Value> {
    r["findings"]
        .as_array()?
        .iter()
        .find(|f| f["id"] == "dns_slow" && f["side"] == "client")
}

fn dns<'a>(r: &'a Value, key: &str) -> &'a Value {
    &r["measurements"]["dns"][key]
}

#[test]
fn a_pods_search_list_is_told_as_the_clients_cost_and_its_look_alikes_are_not() {
    let _turn = crate::common::file_turn(file!());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut lab = Lab::create();
    lab.serve("ok", DELAY_MS, POD);

    // An external name: three NXDOMAIN suffixes, then the name as written.
    let r = lab.dns("api.example.com");
    let f = search_story(&r).unwrap_or_else(|| panic!("no search-list story: {:?}", ids(&r)));
    let s = f["summary"].as_str().unwrap();
    assert!(
        s.starts_with(
            "api.example.com: 3 names tried before the one that answered (each NXDOMAIN,"
        ),
        "{s}"
    );
    assert_eq!(f["severity"], "warning", "{s}");
    let wasted = f["impact"]["added_latency_ms"].as_f64().unwrap();
    // Three names, each A and AAAA in parallel, 60 ms apiece.
    assert!((170.0..600.0).contains(&wasted), "{wasted} ms");
    let gai_ms = dns(&r, "getaddrinfo")["elapsed_ms"].as_f64().unwrap();
    assert!(
        gai_ms >= 4.0 * 55.0,
        "getaddrinfo walked it too: {gai_ms} ms"
    );
    assert_eq!(dns(&r, "query_name"), "api.example.com.");
    let steps = dns(&r, "search")["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "api.example.com.ns.svc.cluster.local",
            "api.example.com.svc.cluster.local",
            "api.example.com.cluster.local",
            "api.example.com"
        ]
    );
    let answers = dns(&r, "servers")[0]["udp"]["tries"][0]["answers"].clone();
    assert_eq!(answers[0], "A 10.76.0.2", "{answers}");
    assert!(finding(&r, "dns_name_not_found").is_none(), "{:?}", ids(&r));
    assert_eq!(r["verdict"], "problem");

    // The same name fully qualified: asked as written only.
    let r = lab.dns("api.example.com.");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    assert!(dns(&r, "search").is_null());
    assert!(finding(&r, "dns_name_not_found").is_none(), "{:?}", ids(&r));

    // Five dots (≥ ndots): asked as written first, and it answers.
    let r = lab.dns("a.b.c.d.e.example");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    assert_eq!(dns(&r, "search")["steps"].as_array().unwrap().len(), 1);
    assert_eq!(dns(&r, "query_name"), "a.b.c.d.e.example.");

    // An internal service: the first suffix answers.
    let r = lab.dns("web");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    assert_eq!(dns(&r, "query_name"), "web.ns.svc.cluster.local.");
    assert!(finding(&r, "dns_name_not_found").is_none(), "{:?}", ids(&r));

    // A name no form of which exists: missing, not a search-list cost.
    let r = lab.dns("missing.example.com");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    let nf = finding(&r, "dns_name_not_found")
        .unwrap_or_else(|| panic!("no dns_name_not_found: {:?}", ids(&r)));
    assert!(
        nf["summary"]
            .as_str()
            .unwrap()
            .contains("for missing.example.com. A"),
        "{}",
        nf["summary"]
    );
    assert_eq!(dns(&r, "search")["steps"].as_array().unwrap().len(), 4);

    // SERVFAIL for every name: the server's failure.
    lab.serve("servfail", "0", POD);
    let r = lab.dns("api.example.com");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    assert!(finding(&r, "dns_server_error").is_some(), "{:?}", ids(&r));
    assert!(finding(&r, "dns_name_not_found").is_none(), "{:?}", ids(&r));

    // A slow nameserver and no search list: the nameserver's story, not the client's.
    lab.serve(
        "ok",
        "250",
        "nameserver 10.76.0.2\noptions timeout:1 attempts:2\n",
    );
    let r = lab.dns("api.example.com");
    assert!(search_story(&r).is_none(), "{:?}", ids(&r));
    let slow = finding(&r, "dns_slow").unwrap_or_else(|| panic!("no dns_slow: {:?}", ids(&r)));
    assert_eq!(slow["side"], "network");
    assert!(
        slow["summary"]
            .as_str()
            .unwrap()
            .contains("nameserver 10.76.0.2 is slow"),
        "{}",
        slow["summary"]
    );
}
