//! Pod mode (`watch --pods`): the listening sockets of the pods on this node, each in its own
//! network namespace, and who the pods are.
//!
//! Discovery ([`discover`]) reads only files, no namespace is joined for it:
//! 1. **Network namespaces**: every process under the proc root (`/proc`, `--proc-root`) has
//!    `PID/ns/net`; its inode names the namespace. One process per distinct namespace is kept
//!    (the lowest PID); the agent's own namespace (the host's, for a `hostNetwork` DaemonSet)
//!    is left out: `watch` without `--pods` covers it.
//! 2. **Listeners**: `PID/net/tcp` and `PID/net/tcp6` show the TCP table of that process's
//!    namespace; the ports in state LISTEN are watched (at most [`MAX_PORTS_PER_POD`], lowest
//!    first, or only the `--pods-ports` given). A namespace without a listener is skipped.
//! 3. **Pod identity**: the pod UID from `PID/cgroup` (the kubelet's cgroup names it in both
//!    drivers: `…/kubepods/burstable/pod<UID>/…` with cgroupfs,
//!    `…/kubepods-burstable-pod<UID_with_underscores>.slice/…` with systemd). The pod's
//!    namespace and name from the kubelet's log directory `/var/log/pods/<namespace>_<name>_<UID>`
//!    (`--pod-logs-dir`; present for every pod on a CRI node); if it is missing, the name alone
//!    from the last line of the kubelet's `/var/lib/kubelet/pods/<UID>/etc-hosts`
//!    (`--kubelet-pods-dir`; the pod's hostname, which is its name unless `spec.hostname` is
//!    set). When neither is readable (no UID in the cgroup: not a pod, or another runtime), the
//!    series are labelled `pod="netns-<inode>"` and no `namespace`.
//!
//! Pod annotations are not read: they live only in the API server, and reading them would need
//! a service account token, RBAC on pods and a connection to the API server, more privilege
//! than a node agent should have (the DaemonSet mounts no token). `--pods-ports` selects ports
//! instead.
//!
//! Watching then happens inside each namespace ([`crate::podwatch`]): a thread joins it with
//! `setns` and runs the ordinary watch loop there, so the capture, the sock_diag listener
//! samples and the kernel counters are the pod's.
//!
//! Cardinality: at most `--pods-max` namespaces ([`DEFAULT_MAX_PODS`]; the rest are named in the
//! log and counted in [`Discovery::over_cap`]) × [`MAX_PORTS_PER_POD`] ports.

use crate::labels::PodLabels;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Listening ports watched per pod at most (the lowest ones).
pub const MAX_PORTS_PER_POD: usize = 8;
/// Pods (network namespaces) watched at most by default (`--pods-max`).
pub const DEFAULT_MAX_PODS: usize = 32;

/// Where discovery reads: configurable so tests (and unusual nodes) can point elsewhere.
#[derive(Clone, Debug)]
pub struct Roots {
    /// The host's proc (`/proc`; needs `hostPID: true` in a pod).
    pub proc: PathBuf,
    /// The kubelet's pod directories (`/var/lib/kubelet/pods`).
    pub kubelet_pods: PathBuf,
    /// The kubelet's pod log directories (`/var/log/pods`).
    pub pod_logs: PathBuf,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            proc: PathBuf::from("/proc"),
            kubelet_pods: PathBuf::from("/var/lib/kubelet/pods"),
            pod_logs: PathBuf::from("/var/log/pods"),
        }
    }
}

/// Where a pod's name came from (the `source` label of `netdoctor_pod_listener_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameSource {
    /// `/var/log/pods/<namespace>_<name>_<uid>`: namespace and name.
    KubeletLogs,
    /// `/var/lib/kubelet/pods/<uid>/etc-hosts`: the name (hostname) only.
    EtcHosts,
    /// Nothing known: `pod="netns-<inode>"`.
    Netns,
}

impl NameSource {
    pub fn as_str(self) -> &'static str {
        match self {
            NameSource::KubeletLogs => "kubelet-logs",
            NameSource::EtcHosts => "etc-hosts",
            NameSource::Netns => "netns",
        }
    }
}

/// One pod's network namespace with its listeners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodNetns {
    /// Inode of the network namespace.
    pub netns: u64,
    /// A process in it (the lowest PID); `<proc>/<pid>/ns/net` is joined to watch it.
    pub pid: u32,
    /// The pod UID from the process's cgroup, when there is one.
    pub uid: Option<String>,
    pub labels: PodLabels,
    pub source: NameSource,
    /// Listening TCP ports watched.
    pub ports: Vec<u16>,
}

impl PodNetns {
    /// `namespace/pod` or `netns-<inode>`, for logs and the evidence subdirectory.
    pub fn name(&self) -> String {
        match (&self.labels.namespace, &self.labels.pod) {
            (Some(n), Some(p)) => format!("{n}/{p}"),
            (None, Some(p)) => p.clone(),
            _ => format!("netns-{}", self.netns),
        }
    }

    /// The namespace file to join.
    pub fn ns_path(&self, roots: &Roots) -> PathBuf {
        roots.proc.join(self.pid.to_string()).join("ns/net")
    }
}

/// What discovery found.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    /// Watched pods, ordered by name.
    pub pods: Vec<PodNetns>,
    /// Pods with listeners left out by the cap (their names).
    pub over_cap: Vec<String>,
    /// Processes whose namespace could not be read (permission: CAP_SYS_PTRACE over them).
    pub unreadable: usize,
}

/// What to look for.
#[derive(Clone, Debug)]
pub struct Options {
    pub max_pods: usize,
    /// Only these ports (empty: every listener, up to [`MAX_PORTS_PER_POD`]).
    pub ports: Vec<u16>,
    /// Keep namespaces whose process is not in a pod cgroup (labelled by netns inode).
    pub include_non_pods: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_pods: DEFAULT_MAX_PODS,
            ports: Vec::new(),
            include_non_pods: true,
        }
    }
}

/// Finds the pods' network namespaces and listeners (see the module docs).
pub fn discover(roots: &Roots, opts: &Options) -> std::io::Result<Discovery> {
    let own = std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino())
        .ok();
    let mut by_ns: BTreeMap<u64, u32> = BTreeMap::new();
    let mut unreadable = 0;
    for e in std::fs::read_dir(&roots.proc)? {
        let Ok(e) = e else { continue };
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        match std::fs::metadata(e.path().join("ns/net")) {
            Ok(m) if Some(m.ino()) != own => {
                let slot = by_ns.entry(m.ino()).or_insert(pid);
                *slot = (*slot).min(pid);
            }
            Ok(_) => {}
            // A process that ended meanwhile, or one we may not inspect.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => unreadable += 1,
            Err(_) => {}
        }
    }
    let mut pods = Vec::new();
    for (netns, pid) in by_ns {
        let dir = roots.proc.join(pid.to_string());
        let mut ports: Vec<u16> = ["net/tcp", "net/tcp6"]
            .iter()
            .filter_map(|f| std::fs::read_to_string(dir.join(f)).ok())
            .flat_map(|t| crate::listeners::parse_listen_ports(&t))
            .filter(|p| opts.ports.is_empty() || opts.ports.contains(p))
            .collect();
        ports.sort_unstable();
        ports.dedup();
        ports.truncate(MAX_PORTS_PER_POD);
        if ports.is_empty() {
            continue;
        }
        let uid = std::fs::read_to_string(dir.join("cgroup"))
            .ok()
            .and_then(|t| pod_uid_from_cgroup(&t));
        if uid.is_none() && !opts.include_non_pods {
            continue;
        }
        let (labels, source) = match &uid {
            Some(u) => identify(roots, u, netns),
            None => (netns_labels(netns), NameSource::Netns),
        };
        pods.push(PodNetns {
            netns,
            pid,
            uid,
            labels,
            source,
            ports,
        });
    }
    pods.sort_by_key(PodNetns::name);
    let over_cap = pods
        .split_off(opts.max_pods.min(pods.len()))
        .iter()
        .map(PodNetns::name)
        .collect();
    Ok(Discovery {
        pods,
        over_cap,
        unreadable,
    })
}

fn netns_labels(netns: u64) -> PodLabels {
    PodLabels {
        namespace: None,
        pod: Some(format!("netns-{netns}")),
    }
}

/// The pod's namespace and name from the kubelet's files (see the module docs).
fn identify(roots: &Roots, uid: &str, netns: u64) -> (PodLabels, NameSource) {
    if let Ok(rd) = std::fs::read_dir(&roots.pod_logs) {
        let suffix = format!("_{uid}");
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(ns_name) = name.strip_suffix(&suffix)
                && let Some((ns, pod)) = ns_name.split_once('_')
                && !ns.is_empty()
                && !pod.is_empty()
            {
                return (
                    PodLabels {
                        namespace: Some(ns.to_string()),
                        pod: Some(pod.to_string()),
                    },
                    NameSource::KubeletLogs,
                );
            }
        }
    }
    let hosts = roots.kubelet_pods.join(uid).join("etc-hosts");
    if let Some(name) = std::fs::read_to_string(hosts)
        .ok()
        .as_deref()
        .and_then(hostname_from_etc_hosts)
    {
        return (
            PodLabels {
                namespace: None,
                pod: Some(name),
            },
            NameSource::EtcHosts,
        );
    }
    (netns_labels(netns), NameSource::Netns)
}

/// The pod's hostname in the kubelet's etc-hosts: the first name of the last entry (the
/// kubelet appends `<podIP>\t<hostname>[.<subdomain>…]` after the localhost lines).
pub fn hostname_from_etc_hosts(text: &str) -> Option<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _ip = f.next()?;
            f.next()
        })
        .rfind(|h| !h.starts_with("localhost") && !h.starts_with("ip6-"))
        .map(|h| h.split('.').next().unwrap_or(h).to_string())
        .filter(|h| is_dns_label(h))
}

/// The pod UID in a `/proc/PID/cgroup` text, if the process is in a kubelet pod cgroup.
pub fn pod_uid_from_cgroup(text: &str) -> Option<String> {
    for line in text.lines() {
        let path = line.splitn(3, ':').nth(2).unwrap_or(line);
        if !path.contains("kubepods") {
            continue;
        }
        for seg in path.split('/') {
            // cgroupfs: `pod<uid>`; systemd: `kubepods-<qos>-pod<uid_>.slice`.
            let Some(i) = seg.rfind("pod") else { continue };
            let rest = seg[i + 3..].trim_end_matches(".slice");
            let uid = rest.replace('_', "-");
            if is_uid(&uid) {
                return Some(uid);
            }
        }
    }
    None
}

fn is_uid(s: &str) -> bool {
    s.len() == 36
        && s.chars().enumerate().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// One line for the log: `namespace/pod (kubelet-logs, netns …, pid …, ports [...])`.
pub fn describe(p: &PodNetns) -> String {
    format!(
        "{} ({}, netns {}, pid {}, ports {:?})",
        p.name(),
        p.source.as_str(),
        p.netns,
        p.pid,
        p.ports
    )
}

/// Where a pod's evidence goes: a subdirectory of `--dir` per pod.
pub fn evidence_subdir(dir: &Path, p: &PodNetns) -> PathBuf {
    dir.join(p.name().replace('/', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0f3c2a1e-5b6d-4c7e-8f90-a1b2c3d4e5f6";

    #[test]
    fn the_pod_uid_comes_from_either_cgroup_driver() {
        let cgroupfs = format!("0::/kubepods/burstable/pod{UID}/0123abcd\n");
        assert_eq!(pod_uid_from_cgroup(&cgroupfs).as_deref(), Some(UID));
        let systemd = format!(
            "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/cri-containerd-0123.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(pod_uid_from_cgroup(&systemd).as_deref(), Some(UID));
        let v1 = format!("12:memory:/kubepods/pod{UID}/abc\n11:cpu:/kubepods/pod{UID}/abc\n");
        assert_eq!(pod_uid_from_cgroup(&v1).as_deref(), Some(UID));
        assert_eq!(
            pod_uid_from_cgroup("0::/user.slice/session-1.scope\n"),
            None
        );
        // `pod` in a non-kubelet path, or a malformed UID, is not a pod.
        assert_eq!(
            pod_uid_from_cgroup(&format!("0::/system.slice/pod{UID}\n")),
            None
        );
        assert_eq!(pod_uid_from_cgroup("0::/kubepods/podnot-a-uid/x\n"), None);
    }

    #[test]
    fn the_hostname_is_the_last_kubelet_entry() {
        let t = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n10.244.1.7\tweb-7d9f-x2x\n";
        assert_eq!(hostname_from_etc_hosts(t).as_deref(), Some("web-7d9f-x2x"));
        let fqdn = "127.0.0.1\tlocalhost\n10.244.1.8\tdb-0.db.shop.svc.cluster.local\tdb-0\n";
        assert_eq!(hostname_from_etc_hosts(fqdn).as_deref(), Some("db-0"));
        assert_eq!(hostname_from_etc_hosts("127.0.0.1 localhost\n"), None);
        assert_eq!(hostname_from_etc_hosts("10.0.0.1 Bad_Name\n"), None);
    }
}
