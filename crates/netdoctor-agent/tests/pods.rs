//! Pod mode without Kubernetes: three network namespaces made here, each with an HTTP server
//! on the same port 8080 (a process started in it), and the kubelet's files faked under a
//! temporary root: a proc root whose `PID/ns` and `PID/net` are the real ones (symlinks) and
//! whose `PID/cgroup` names a pod UID, a `/var/log/pods` with `<namespace>_<name>_<uid>` for
//! the first pod and a kubelet `pods/<uid>/etc-hosts` for the second; the third has no pod
//! cgroup. Discovery must find the three listeners with their names (the third by its netns
//! inode), and the watch must see each pod's traffic in that pod's series only.
//! Needs root (namespaces, setns, capture); everything made is removed on drop.

use netdoctor_agent::pods::{self, NameSource, Options, Roots};
use netdoctor_agent::{AgentMetrics, WatchConfig};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const PORT: u16 = 8080;
const UID_A: &str = "11111111-2222-4333-8444-555555555555";
const UID_B: &str = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";

/// The namespaces and servers of the test, removed on drop.
struct Netns {
    names: Vec<String>,
    servers: Vec<Child>,
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.servers {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// A running (bound) packet socket in the network namespace of `pid`: the watch's capture
/// there is open, so the traffic sent from now on is seen.
fn capturing(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/net/packet"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| l.split_whitespace().nth(5) == Some("1"))
}

fn listening(pid: u32, port: u16) -> bool {
    let t = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap_or_default();
    netdoctor_agent::listeners::parse_listen_ports(&t).contains(&port)
}

fn setup(n: usize) -> Option<Netns> {
    let mut ns = Netns {
        names: Vec::new(),
        servers: Vec::new(),
    };
    for i in 0..n {
        let name = format!("ndagent{}p{i}", std::process::id() % 100_000);
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        ns.names.push(name.clone());
        Command::new("ip")
            .args(["-n", &name, "link", "set", "lo", "up"])
            .status()
            .ok()?;
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &name,
                "/usr/bin/python3",
                "-m",
                "http.server",
            ])
            .args([&PORT.to_string(), "--bind", "127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        ns.servers.push(child);
    }
    let t0 = Instant::now();
    while !ns.servers.iter().all(|c| listening(c.id(), PORT)) {
        if t0.elapsed() > Duration::from_secs(10) {
            panic!("the test's servers did not listen within 10 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(ns)
}

/// A fake proc root: `PID/ns` and `PID/net` link to the real ones, `PID/cgroup` is given.
fn fake_proc(root: &Path, pid: u32, cgroup: &str) {
    let d = root.join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink(format!("/proc/{pid}/ns"), d.join("ns")).unwrap();
    std::os::unix::fs::symlink(format!("/proc/{pid}/net"), d.join("net")).unwrap();
    std::fs::write(d.join("cgroup"), cgroup).unwrap();
}

fn get(ns: &str, n: usize) {
    netdoctor_lab::in_netns(ns, || {
        for _ in 0..n {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", PORT)).unwrap();
            s.write_all(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
            let mut b = Vec::new();
            let _ = s.read_to_end(&mut b);
        }
    })
    .expect("enter namespace");
}

#[test]
fn finds_and_labels_the_listeners_of_each_pod_namespace() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (needs network namespaces, setns and packet capture)");
        return;
    }
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: needs python3 (apt-get install python3)");
        return;
    }
    let Some(ns) = setup(3) else {
        eprintln!("skipped: needs ip netns (apt-get install iproute2)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots {
        proc: tmp.path().join("proc"),
        kubelet_pods: tmp.path().join("kubelet/pods"),
        pod_logs: tmp.path().join("log/pods"),
    };
    let pids: Vec<u32> = ns.servers.iter().map(Child::id).collect();
    // Pod A: systemd cgroup driver, named by the kubelet's log directory.
    fake_proc(
        &roots.proc,
        pids[0],
        &format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-1.scope\n",
            UID_A.replace('-', "_")
        ),
    );
    std::fs::create_dir_all(roots.pod_logs.join(format!("shop_web-1_{UID_A}"))).unwrap();
    // Pod B: cgroupfs driver, no log directory, named by its etc-hosts.
    fake_proc(
        &roots.proc,
        pids[1],
        &format!("0::/kubepods/besteffort/pod{UID_B}/0123\n"),
    );
    std::fs::create_dir_all(roots.kubelet_pods.join(UID_B)).unwrap();
    std::fs::write(
        roots.kubelet_pods.join(UID_B).join("etc-hosts"),
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.244.0.9\tcache-0\n",
    )
    .unwrap();
    // The third: not in a pod cgroup.
    fake_proc(&roots.proc, pids[2], "0::/system.slice/other.service\n");
    let inode = |pid: u32| {
        std::fs::metadata(format!("/proc/{pid}/ns/net"))
            .unwrap()
            .ino()
    };

    let d = pods::discover(&roots, &Options::default()).expect("discover");
    eprintln!("{:#?}", d.pods);
    assert_eq!(d.pods.len(), 3, "one entry per namespace with a listener");
    let by_ns: BTreeMap<u64, &pods::PodNetns> = d.pods.iter().map(|p| (p.netns, p)).collect();
    let a = by_ns[&inode(pids[0])];
    assert_eq!(a.labels.namespace.as_deref(), Some("shop"));
    assert_eq!(a.labels.pod.as_deref(), Some("web-1"));
    assert_eq!(a.uid.as_deref(), Some(UID_A));
    assert_eq!(a.source, NameSource::KubeletLogs);
    assert_eq!(a.ports, vec![PORT]);
    let b = by_ns[&inode(pids[1])];
    assert_eq!(b.labels.namespace, None);
    assert_eq!(b.labels.pod.as_deref(), Some("cache-0"));
    assert_eq!(b.source, NameSource::EtcHosts);
    assert_eq!(b.ports, vec![PORT]);
    let c = by_ns[&inode(pids[2])];
    assert_eq!(c.uid, None);
    assert_eq!(c.source, NameSource::Netns);
    assert_eq!(
        c.labels.pod.as_deref(),
        Some(format!("netns-{}", inode(pids[2])).as_str())
    );
    // The cap keeps the first pods by name and names the rest.
    let capped = pods::discover(
        &roots,
        &Options {
            max_pods: 1,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(capped.pods.len(), 1);
    assert_eq!(capped.over_cap.len(), 2);
    // A port filter that matches nothing leaves nothing to watch.
    let none = pods::discover(
        &roots,
        &Options {
            ports: vec![9],
            ..Options::default()
        },
    )
    .unwrap();
    assert!(none.pods.is_empty());

    // Watch the three from inside their namespaces; traffic only to pods A (5 requests) and
    // B (2 requests).
    let metrics = AgentMetrics::new();
    let mut cfg = WatchConfig::new(vec![PORT], Duration::from_secs(2));
    cfg.max_windows = Some(2);
    let stop = AtomicBool::new(false);
    let seen: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            // Ready signal: the captures in pods A and B are open (a fixed wait raced a slow
            // start: requests sent before the capture opened were not counted).
            let t0 = Instant::now();
            while !(capturing(pids[0]) && capturing(pids[1])) {
                assert!(
                    t0.elapsed() < Duration::from_secs(20),
                    "the pods' captures did not open within 20 s"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            get(&ns.names[0], 5);
            get(&ns.names[1], 2);
        });
        let runs = netdoctor_agent::podwatch::watch_pods(&cfg, &roots, &d.pods, &stop, &|p, w| {
            metrics.record_window_in(&p.labels, w.port, &w.report, 1.0);
            let n = w
                .report
                .measurements
                .capture
                .as_ref()
                .map_or(0, |c| c.exchanges.count);
            *seen.lock().unwrap().entry(p.name()).or_default() += n;
        });
        for r in &runs {
            assert!(r.result.is_ok(), "pod {}: {:?}", r.pod, r.result);
        }
    });
    let seen = seen.into_inner().unwrap();
    eprintln!("exchanges per pod: {seen:?}");
    assert_eq!(seen["shop/web-1"], 5, "pod A's own requests");
    assert_eq!(seen["cache-0"], 2, "pod B's own requests");
    assert_eq!(seen[&c.name()], 0, "no traffic went to the third");
    let text = metrics.encode();
    assert!(
        text.contains(r#"netdoctor_requests_total{port="8080",namespace="shop",pod="web-1"} 5"#),
        "{text}"
    );
    assert!(text.contains(r#"netdoctor_requests_total{port="8080",pod="cache-0"} 2"#));
    assert!(text.contains(&format!(
        r#"netdoctor_requests_total{{port="8080",pod="netns-{}"}} 0"#,
        inode(pids[2])
    )));
    drop(ns);
}
