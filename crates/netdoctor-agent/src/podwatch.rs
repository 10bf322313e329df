//! Pod mode's watch: one ordinary [`crate::watch`] loop per pod network namespace, each on a
//! thread that joined the namespace first (`setns`, [`netdoctor_sys::netns::join_net`]).
//! Sockets and threads made after the join belong to the pod's namespace, so the pod's capture
//! (AF_PACKET sees the pod's interfaces), its listener samples (sock_diag) and its kernel
//! counters (`/proc/thread-self/net/…`) are the pod's own, with no change to the loop.
//!
//! Joining needs CAP_SYS_ADMIN, and opening `/proc/PID/ns/net` of another user's process
//! CAP_SYS_PTRACE. Each pod's evidence goes to its own subdirectory of `--dir`
//! ([`crate::pods::evidence_subdir`]) with an even share of the size limit; each pod's capture
//! rings get an even share of the ring budget (at least the per-port minimum), over the pods
//! watched when it starts.
//!
//! **Pods come and go** ([`watch_pods_live`]): discovery runs again every
//! [`PodWatchOptions::rescan`] (`--pods-rescan`). A namespace found with listeners that is not
//! watched yet gets its watch ([`PodEvent::Started`]); a watched one that is no longer found (its
//! last process ended, or it has no listener left) has its watch stopped (its window in
//! progress is still reported) and then [`PodEvent::Gone`], on which the caller removes its
//! series; one whose ports or name changed is stopped and started again. The pod's thread
//! holds its namespace while it runs, so the namespace is freed once the watch stopped.

use crate::pods::{Options, PodNetns, Roots};
use crate::watch::{WatchConfig, WatchError, WindowResult, watch};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// What [`watch_pods_live`] tells its caller, in order for each pod: `Started`, its windows,
/// then `Ended` (its watch returned: the run's end, or an error) and, when the pod went away or
/// changed, `Gone`.
pub enum PodEvent<'a> {
    Started(&'a PodNetns),
    Window(&'a PodNetns, &'a WindowResult),
    Ended(&'a PodNetns, PodRun),
    Gone(&'a PodNetns),
}

/// Discovery again, and how often.
#[derive(Clone, Debug)]
pub struct PodWatchOptions {
    pub discovery: Options,
    /// Interval between discoveries (`Duration::MAX`: the pods found at start only).
    pub rescan: Duration,
}

/// Default interval between discoveries (`--pods-rescan`).
pub const DEFAULT_RESCAN: Duration = Duration::from_secs(10);

/// How often the supervisor looks at the stop flag and at ended watches.
const TICK: Duration = Duration::from_millis(100);

/// Runs one watch per pod (ports: the pod's listeners) until `stop`; `on_window` gets every
/// window with its pod. The pods are those given, not discovered again. `base` gives the
/// window, limits and budgets: the capture ring budget (`ring_bytes` × ports of base) and the
/// evidence size limit are split across the pods.
pub fn watch_pods(
    base: &WatchConfig,
    roots: &Roots,
    pods: &[PodNetns],
    stop: &AtomicBool,
    on_window: &(dyn Fn(&PodNetns, &WindowResult) + Sync),
) -> Vec<PodRun> {
    let opts = PodWatchOptions {
        discovery: Options::default(),
        rescan: Duration::MAX,
    };
    let runs = std::sync::Mutex::new(Vec::new());
    watch_pods_live(base, roots, &opts, pods, stop, &|e| match e {
        PodEvent::Window(p, w) => on_window(p, w),
        PodEvent::Ended(_, r) => runs.lock().unwrap_or_else(|e| e.into_inner()).push(r),
        _ => {}
    });
    runs.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// One running pod watch.
struct Running<'s> {
    pod: PodNetns,
    stop: Arc<AtomicBool>,
    thread: std::thread::ScopedJoinHandle<'s, PodRun>,
    /// Found after the start of a `--windows N` run: stopped when the run's time is up.
    late: bool,
}

/// Watches `initial` and, every `opts.rescan`, the pods discovery finds then (see the module
/// docs), until `stop`. With `base.max_windows` (N), the run lasts N windows: the pods found at
/// the start do their N windows, a pod found later is watched from then until the N windows'
/// time is up (its last window ends there, shorter), and the run ends when every watch has.
/// Events go to `on_event` from the pods' threads (`Window`) and from this one.
pub fn watch_pods_live(
    base: &WatchConfig,
    roots: &Roots,
    opts: &PodWatchOptions,
    initial: &[PodNetns],
    stop: &AtomicBool,
    on_event: &(dyn Fn(PodEvent<'_>) + Sync),
) {
    std::thread::scope(|s| {
        let mut running: BTreeMap<u64, Running<'_>> = BTreeMap::new();
        // With --windows: when the run's windows are over.
        let run_end = base.max_windows.and_then(|n| {
            Instant::now().checked_add(base.window.checked_mul(u32::try_from(n).ok()?)?)
        });
        start_pods(
            s,
            base,
            roots,
            stop,
            on_event,
            (initial, initial),
            false,
            &mut running,
        );
        let mut next_scan = Instant::now().checked_add(opts.rescan);
        let mut ended_for_good: BTreeMap<u64, PodNetns> = BTreeMap::new();
        loop {
            let stopping = stop.load(Ordering::SeqCst);
            let over = run_end.is_some_and(|t| Instant::now() >= t);
            for r in running.values() {
                if stopping || (over && r.late) {
                    r.stop.store(true, Ordering::SeqCst);
                }
            }
            // Watches that returned by themselves (their windows, or an error).
            let done: Vec<u64> = running
                .iter()
                .filter(|(_, r)| r.thread.is_finished())
                .map(|(k, _)| *k)
                .collect();
            for k in done {
                if let Some(r) = running.remove(&k) {
                    let run = join(r.thread, &r.pod);
                    on_event(PodEvent::Ended(&r.pod, run));
                    ended_for_good.insert(k, r.pod);
                }
            }
            if stopping || (base.max_windows.is_some() && running.is_empty() && over) {
                break;
            }
            if next_scan.is_some_and(|t| Instant::now() >= t) {
                next_scan = Instant::now().checked_add(opts.rescan);
                if let Ok(d) = crate::pods::discover(roots, &opts.discovery) {
                    let now: BTreeMap<u64, &PodNetns> =
                        d.pods.iter().map(|p| (p.netns, p)).collect();
                    // Gone, or changed: stop, report, forget.
                    let changed: Vec<u64> = running
                        .iter()
                        .filter(|(k, r)| now.get(k).is_none_or(|p| !same_watch(p, &r.pod)))
                        .map(|(k, _)| *k)
                        .collect();
                    for k in changed {
                        if let Some(r) = running.remove(&k) {
                            r.stop.store(true, Ordering::SeqCst);
                            let run = join(r.thread, &r.pod);
                            on_event(PodEvent::Ended(&r.pod, run));
                            on_event(PodEvent::Gone(&r.pod));
                        }
                    }
                    // A watch that ended on its own is not started again for the same pod;
                    // once the pod is gone from discovery, its series go too.
                    let gone: Vec<u64> = ended_for_good
                        .keys()
                        .filter(|k| !now.contains_key(k))
                        .copied()
                        .collect();
                    for k in gone {
                        if let Some(p) = ended_for_good.remove(&k) {
                            on_event(PodEvent::Gone(&p));
                        }
                    }
                    let new: Vec<PodNetns> = d
                        .pods
                        .iter()
                        .filter(|p| {
                            !ended_for_good.contains_key(&p.netns)
                                && !running.contains_key(&p.netns)
                        })
                        .cloned()
                        .collect();
                    if !new.is_empty() && !over {
                        let late = base.max_windows.is_some();
                        start_pods(
                            s,
                            base,
                            roots,
                            stop,
                            on_event,
                            (&new, &d.pods),
                            late,
                            &mut running,
                        );
                    }
                }
            }
            std::thread::sleep(TICK);
        }
        for (_, r) in std::mem::take(&mut running) {
            r.stop.store(true, Ordering::SeqCst);
            let run = join(r.thread, &r.pod);
            on_event(PodEvent::Ended(&r.pod, run));
        }
    });
}

/// Starts a watch for each of `pods` not running yet; budgets are split over `all`, the pods
/// discovery found with them. A `late` watch (found after the start of a run of
/// `--windows N`) runs until the supervisor stops it at the run's end.
#[allow(clippy::too_many_arguments)]
fn start_pods<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    base: &'env WatchConfig,
    roots: &'env Roots,
    stop: &'env AtomicBool,
    on_event: &'env (dyn Fn(PodEvent<'_>) + Sync),
    (pods, all): (&[PodNetns], &[PodNetns]),
    late: bool,
    running: &mut BTreeMap<u64, Running<'scope>>,
) {
    let ring_total = base.ring_bytes * base.ports.len().max(1);
    let total_ports: usize = all.iter().map(|p| p.ports.len()).sum::<usize>().max(1);
    for pod in pods {
        if running.contains_key(&pod.netns) {
            continue;
        }
        let mut cfg = base.clone();
        if late {
            cfg.max_windows = None;
        }
        cfg.ports = pod.ports.clone();
        cfg.ring_bytes = crate::watch::ring_share(ring_total, total_ports);
        cfg.ring = base
            .ring
            .as_ref()
            .map(|(d, keep)| (crate::pods::evidence_subdir(d, pod), *keep));
        cfg.evidence_max_bytes = (base.evidence_max_bytes / all.len().max(1) as u64).max(1);
        let own_stop = Arc::new(AtomicBool::new(stop.load(Ordering::SeqCst)));
        let ns_path = pod.ns_path(roots);
        let p = pod.clone();
        let flag = Arc::clone(&own_stop);
        on_event(PodEvent::Started(pod));
        let thread = s.spawn(move || {
            let result = std::fs::File::open(&ns_path)
                .and_then(|f| netdoctor_sys::netns::join_net(&f))
                .map_err(|source| PodWatchError::Join {
                    path: ns_path.display().to_string(),
                    source,
                })
                .and_then(|()| {
                    Ok(watch(&cfg, &flag, &mut || {}, &mut |w| {
                        on_event(PodEvent::Window(&p, w))
                    })?)
                });
            PodRun {
                pod: p.name(),
                result,
            }
        });
        running.insert(
            pod.netns,
            Running {
                pod: pod.clone(),
                stop: own_stop,
                thread,
                late,
            },
        );
    }
}

/// Whether discovery found the watched pod unchanged: same ports, same name (its process id
/// may change: the lowest one in the namespace may have ended).
fn same_watch(found: &PodNetns, watched: &PodNetns) -> bool {
    found.ports == watched.ports && found.labels == watched.labels && found.uid == watched.uid
}

fn join(t: std::thread::ScopedJoinHandle<'_, PodRun>, pod: &PodNetns) -> PodRun {
    t.join().unwrap_or_else(|_| PodRun {
        pod: pod.name(),
        result: Err(PodWatchError::Join {
            path: pod.name(),
            source: std::io::Error::other("the pod's watch thread panicked"),
        }),
    })
}
