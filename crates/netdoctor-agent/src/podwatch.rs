//! Pod mode's watch: one ordinary [`crate::watch`] loop per pod network namespace, each on a
//! thread that joined the namespace first (`setns`, [`netdoctor_sys::netns::join_net`]).
//! Sockets and threads made after the join belong to the pod's namespace, so the pod's capture
//! (AF_PACKET sees the pod's interfaces), its listener samples (sock_diag) and its kernel
//! counters (`/proc/thread-self/net/…`) are the pod's own, with no change to the loop.
//!
//! Joining needs CAP_SYS_ADMIN, and opening `/proc/PID/ns/net` of another user's process
//! CAP_SYS_PTRACE. Each pod's evidence goes to its own subdirectory of `--dir`
//! ([`crate::pods::evidence_subdir`]) with an even share of the size limit; each pod's capture
//! rings get an even share of the ring budget (at least the per-port minimum).
//!
//! The pods are those found at start; a pod started later is watched after the agent restarts
//! (a pod that ends stops its watch with an error in the log, the others go on).

use crate::pods::{PodNetns, Roots};
use crate::watch::{WatchConfig, WatchError, WindowResult, watch};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

/// How each pod's watch ended.
#[derive(Debug)]
pub struct PodRun {
    pub pod: String,
    /// Windows run, or why the pod's watch stopped.
    pub result: Result<u64, PodWatchError>,
}

#[derive(Debug, thiserror::Error)]
pub enum PodWatchError {
    #[error(
        "join network namespace {path} (needs CAP_SYS_ADMIN, and CAP_SYS_PTRACE over the pod's process)"
    )]
    Join {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Watch(#[from] WatchError),
}

/// Runs one watch per pod (ports: the pod's listeners) until `stop`; `on_window` gets every
/// window with its pod. `base` gives the window, limits and budgets: the capture ring budget
/// (`ring_bytes` × ports of base) and the evidence size limit are split across the pods.
pub fn watch_pods(
    base: &WatchConfig,
    roots: &Roots,
    pods: &[PodNetns],
    stop: &AtomicBool,
    on_window: &(dyn Fn(&PodNetns, &WindowResult) + Sync),
) -> Vec<PodRun> {
    let total_ports: usize = pods.iter().map(|p| p.ports.len()).sum::<usize>().max(1);
    let ring_total = base.ring_bytes * base.ports.len().max(1);
    let runs = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for pod in pods {
            let mut cfg = base.clone();
            cfg.ports = pod.ports.clone();
            cfg.ring_bytes = crate::watch::ring_share(ring_total, total_ports);
            cfg.ring = base
                .ring
                .as_ref()
                .map(|(d, keep)| (crate::pods::evidence_subdir(d, pod), *keep));
            cfg.evidence_max_bytes = (base.evidence_max_bytes / pods.len().max(1) as u64).max(1);
            let runs = &runs;
            let ns_path = pod.ns_path(roots);
            s.spawn(move || {
                let result = std::fs::File::open(&ns_path)
                    .and_then(|f| netdoctor_sys::netns::join_net(&f))
                    .map_err(|source| PodWatchError::Join {
                        path: ns_path.display().to_string(),
                        source,
                    })
                    .and_then(|()| Ok(watch(&cfg, stop, &mut || {}, &mut |w| on_window(pod, w))?));
                runs.lock().unwrap_or_else(|e| e.into_inner()).push(PodRun {
                    pod: pod.name(),
                    result,
                });
            });
        }
    });
    runs.into_inner().unwrap_or_else(|e| e.into_inner())
}
