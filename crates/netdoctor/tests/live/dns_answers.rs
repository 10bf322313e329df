//! Nameservers that answer badly, on real namespaces this test creates (nd-ex-dns-cli,
//! nd-ex-dns-srv; a small python3 nameserver on 10.79.0.2:53 in the server's, stopped by PID;
//! the namespaces and /etc/netns/nd-ex-dns-cli/ removed on drop, also when an assertion fails).
//! The client's resolv.conf is its own (`ip netns exec` mounts /etc/netns/NS/resolv.conf), so
//! glibc's getaddrinfo meets the same server as netdoctor's direct tries.
//!
//! Told apart (the lab's slow-dns/dead-dns cases never answer wrongly, only slowly or not):
//! - SERVFAIL, REFUSED, and a truncated (TC) answer with nothing on TCP 53: `dns_server_error`,
//!   critical (the lookup fails), never `dns_name_not_found` (which they were before);
//! - NXDOMAIN, the look-alike: `dns_name_not_found`, no `dns_server_error`;
//! - A answered, AAAA dropped: getaddrinfo (A and AAAA in parallel) waits the timeout for
//!   AAAA: a `dns_slow` naming AAAA (the run said "healthy" before: the system lookup ran into
//!   netdoctor's cap and no finding read it); AAAA answered (empty): nothing;
//! - A answered, AAAA answered after 0.8 s: a `dns_slow` naming the slow AAAA, side network
//!   (before: a healthy verdict, 0.8 s being under getaddrinfo's 1 s threshold; at 1.5 s,
//!   "getaddrinfo took 1.5 s", side host, blaming nsswitch and the search list);
//! - a dead first nameserver before a live one (timeout 1 s): `dns_server_unreachable` alone,
//!   no `dns_slow` "getaddrinfo took 1 s" nor a `reverse_dns_timeout` blaming the PTR zone for
//!   the same second.

use crate::common::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};

const CLI: &str = "nd-ex-dns-cli";
const SRV: &str = "nd-ex-dns-srv";
const NAME: &str = "web.ndex.test";
/// Both tests use the same namespaces: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A nameserver for NAME on ADDR:53 that behaves as MODE says: `ok` (A answered, AAAA empty
/// NOERROR, other names NXDOMAIN), `nx` (everything NXDOMAIN), `servfail`, `refused`, `tc`
/// (empty NOERROR with the TC bit; no TCP listener), `dropaaaa` (A answered, AAAA never),
/// `slowaaaa` (A answered, AAAA answered after 0.8 s, without holding up other questions).
const SERVER: &str = r#"
import socket, struct, sys, threading
addr, mode = sys.argv[1], sys.argv[2]
def answer(p):
    tid, flags = struct.unpack("!HH", p[:4])
    off, labels = 12, []
    while p[off]:
        labels.append(p[off + 1:off + 1 + p[off]].decode()); off += 1 + p[off]
    off += 1
    qtype = struct.unpack("!H", p[off:off + 2])[0]
    q = p[12:off + 4]
    name = ".".join(labels).lower()
    def msg(rcode, ans=b"", tc=False):
        fl = 0x8480 | (flags & 0x0100) | rcode | (0x0200 if tc else 0)
        return struct.pack("!HHHHHH", tid, fl, 1, 1 if ans else 0, 0, 0) + q + ans
    if mode == "servfail": return msg(2)
    if mode == "refused": return msg(5)
    if mode == "tc": return msg(0, tc=True)
    if mode == "nx" or qtype == 12 or name != "web.ndex.test": return msg(3)
    if qtype == 1:
        return msg(0, b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("10.79.0.2"))
    if qtype == 28 and mode == "dropaaaa": return None
    if qtype == 28 and mode == "slowaaaa": return ("late", msg(0))
    return msg(0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
print("up", flush=True)
while True:
    p, c = s.recvfrom(4096)
    r = answer(p)
    if r is None: continue
    if isinstance(r, tuple):
        threading.Timer(0.8, s.sendto, (r[1], c)).start()
    else:
        s.sendto(r, c)
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
            dir: tempdir("dns-answers"),
            server: None,
        };
        std::fs::write(lab.dir.join("ns.py"), SERVER).unwrap();
        ip(&["netns", "add", CLI]);
        ip(&["netns", "add", SRV]);
        ip(&[
            "link", "add", "ndexdnc", "type", "veth", "peer", "name", "ndexdns",
        ]);
        ip(&["link", "set", "ndexdnc", "netns", CLI]);
        ip(&["link", "set", "ndexdns", "netns", SRV]);
        ip(&["-n", CLI, "addr", "add", "10.79.0.1/24", "dev", "ndexdnc"]);
        ip(&["-n", SRV, "addr", "add", "10.79.0.2/24", "dev", "ndexdns"]);
        // 10.79.0.9 answers ARP but drops DNS: a dead nameserver that costs timeouts.
        ip(&["-n", SRV, "addr", "add", "10.79.0.9/24", "dev", "ndexdns"]);
        for (ns, dev) in [(CLI, "ndexdnc"), (SRV, "ndexdns")] {
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        lab
    }

    /// (Re)starts the nameserver in `mode` and writes the client's resolv.conf.
    fn serve(&mut self, mode: &str, resolv: &str) {
        self.stop();
        let mut child = Command::new("ip")
            .args(["netns", "exec", SRV, "python3"])
            .arg(self.dir.join("ns.py"))
            .args(["10.79.0.2", mode])
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

    /// `netdoctor dns NAME --json` from the client namespace; prints the findings.
    fn dns(&self, tag: &str, extra: &[&str]) -> Value {
        let o = Command::new("ip")
            .args(["netns", "exec", CLI, env!("CARGO_BIN_EXE_netdoctor")])
            .args(["dns", NAME, "--json"])
            .args(extra)
            .env("NETDOCTOR_QUIET", "1")
            .output()
            .expect("run netdoctor");
        let r: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{tag}: {e}: {}", stderr(&o)));
        for f in r["findings"].as_array().into_iter().flatten() {
            eprintln!("{tag}: {} {} : {}", f["id"], f["severity"], f["summary"]);
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

fn summary<'a>(r: &'a Value, id: &str) -> &'a str {
    finding(r, id)
        .and_then(|f| f["summary"].as_str())
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(r)))
}

#[test]
fn failing_answers_are_told_as_what_they_are_not_as_a_missing_name() {
    let _turn = crate::common::file_turn(file!());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut lab = Lab::create();
    let one = "nameserver 10.79.0.2\noptions timeout:1 attempts:2\n";

    for (mode, words) in [
        ("servfail", "answers SERVFAIL"),
        ("refused", "answers REFUSED"),
        ("tc", "truncates its answer"),
    ] {
        lab.serve(mode, one);
        let r = lab.dns(mode, &["--no-reverse"]);
        let s = summary(&r, "dns_server_error");
        assert!(s.contains(words), "{mode}: {s}");
        let f = finding(&r, "dns_server_error").unwrap();
        assert_eq!(f["severity"], "critical", "{mode}");
        assert!(
            finding(&r, "dns_name_not_found").is_none(),
            "{mode}: {:?}",
            ids(&r)
        );
    }

    // The look-alike: the server says the name does not exist.
    lab.serve("nx", one);
    let r = lab.dns("nx", &["--no-reverse"]);
    assert!(finding(&r, "dns_name_not_found").is_some(), "{:?}", ids(&r));
    assert!(finding(&r, "dns_server_error").is_none(), "{:?}", ids(&r));
}

#[test]
fn a_dropped_aaaa_and_a_dead_first_server_are_told_once_each() {
    let _turn = crate::common::file_turn(file!());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = lab_unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut lab = Lab::create();
    ip(&[
        "netns",
        "exec",
        SRV,
        "iptables",
        "-A",
        "INPUT",
        "-d",
        "10.79.0.9",
        "-p",
        "udp",
        "--dport",
        "53",
        "-j",
        "DROP",
    ]);
    let one = "nameserver 10.79.0.2\noptions timeout:1 attempts:2\n";

    // A at once, AAAA never: getaddrinfo waits the 1 s timeout (twice, 2-3 s here).
    lab.serve("dropaaaa", one);
    let r = lab.dns("dropaaaa", &["--no-reverse"]);
    let s = summary(&r, "dns_slow");
    assert!(s.contains("never AAAA"), "{s}");
    assert_eq!(r["verdict"], "problem");

    // The same server answering AAAA (empty): nothing to tell.
    lab.serve("ok", one);
    let r = lab.dns("ok", &["--no-reverse"]);
    assert!(finding(&r, "dns_slow").is_none(), "{:?}", ids(&r));

    // A at once, AAAA after 0.8 s (below the 1 s timeout): every lookup waits for the AAAA
    // answer. The nameserver's AAAA is named, not the host's resolver path.
    lab.serve("slowaaaa", one);
    let r = lab.dns("slowaaaa", &["--no-reverse"]);
    let f = finding(&r, "dns_slow").expect("dns_slow");
    let s = f["summary"].as_str().unwrap();
    assert!(s.contains("but AAAA only after"), "{s}");
    assert_eq!(f["side"], "network", "{f:#}");
    assert_eq!(r["findings"].as_array().unwrap().len(), 1, "{:?}", ids(&r));

    // A dead first server (1 s timeout), then the live one: every lookup, forward and
    // reverse, waits that second; one finding says so.
    lab.serve(
        "ok",
        "nameserver 10.79.0.9\nnameserver 10.79.0.2\noptions timeout:1 attempts:2\n",
    );
    let r = lab.dns("dead-first", &["--no-tcp"]);
    let s = summary(&r, "dns_server_unreachable");
    assert!(s.contains("10.79.0.9"), "{s}");
    let gai_ms = r["measurements"]["dns"]["getaddrinfo"]["elapsed_ms"]
        .as_f64()
        .expect("getaddrinfo timed");
    assert!(
        gai_ms >= 900.0,
        "the dead server's second is in the lookup: {gai_ms} ms"
    );
    assert!(finding(&r, "dns_slow").is_none(), "{:?}", ids(&r));
    assert!(
        finding(&r, "reverse_dns_timeout").is_none(),
        "{:?}",
        ids(&r)
    );
}
