//! Pod mode without Kubernetes: three network namespaces made here, each with an HTTP server
//! on the same port 8080 (a process started in it), and the kubelet's files faked under a
//! temporary root: a proc root whose `PID/ns` and `PID/net` are the real ones (symlinks) and
//! whose `PID/cgroup` names a pod UID, a `/var/log/pods` with `<namespace>_<name>_<uid>` for
//! the first pod and a kubelet `pods/<uid>/etc-hosts` for the second; the third has no pod
//! cgroup. Discovery must find the three listeners with their names (the third by its netns
//! inode), and the watch must see each pod's traffic in that pod's series only.
//! Needs root (namespaces, setns, capture); everything made is removed on drop. The pods are
//! `netdoctor_lab::fakepod`'s, shared with the CLI's live `watch --pods` test.

use netdoctor_agent::pods::{self, NameSource, Options, Roots};
use netdoctor_agent::{AgentMetrics, WatchConfig};
use netdoctor_lab::fakepod::{self, FakePod, PORT};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const UID_A: &str = "11111111-2222-4333-8444-555555555555";
const UID_B: &str = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";

/// A running (bound) packet socket in the network namespace of `pid`: the watch's capture
/// there is open, so the traffic sent from now on is seen.
fn capturing(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/net/packet"))
        .unwrap_or_default()
        .lines()
        .skip(1)
        .any(|l| l.split_whitespace().nth(5) == Some("1"))
}

/// Three fake pods (namespaces with a server each); `None` without `ip netns`.
fn setup(n: usize) -> Option<Vec<FakePod>> {
    (0..n)
        .map(|i| FakePod::start(&format!("ndagent{}p{i}", std::process::id() % 100_000)))
        .collect()
}

fn get(pod: &FakePod, n: usize) {
    for _ in 0..n {
        pod.get().expect("a request to the pod's server");
    }
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
    let pids: Vec<u32> = ns.iter().map(FakePod::pid).collect();
    // Pod A: systemd cgroup driver, named by the kubelet's log directory.
    ns[0].proc_entry(&roots.proc, &fakepod::cgroup_systemd(UID_A));
    std::fs::create_dir_all(roots.pod_logs.join(format!("shop_web-1_{UID_A}"))).unwrap();
    // Pod B: cgroupfs driver, no log directory, named by its etc-hosts.
    ns[1].proc_entry(&roots.proc, &fakepod::cgroup_cgroupfs(UID_B));
    std::fs::create_dir_all(roots.kubelet_pods.join(UID_B)).unwrap();
    std::fs::write(
        roots.kubelet_pods.join(UID_B).join("etc-hosts"),
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.244.0.9\tcache-0\n",
    )
    .unwrap();
    // The third: not in a pod cgroup.
    ns[2].proc_entry(&roots.proc, "0::/system.slice/other.service\n");
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
            get(&ns[0], 5);
            get(&ns[1], 2);
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
