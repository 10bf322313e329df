//! The host collectors around one run, as one observer: [`HostRun::start`] before the load,
//! [`HostRun::finish`] after it, both on a thread in the namespace of the server side (the
//! listener's); [`read_client_side`] on a thread in the client's namespace when it differs (for
//! a server on this host in the same namespace, call it on the same thread). What a collector
//! could not read becomes a [`SkippedCollector`] with the reason and the missing capability; the
//! rest still fills [`HostObservations`].

use std::sync::mpsc;
use std::time::Duration;

use crate::counters::{self, CounterSnapshot};
use crate::host_findings::HostObservations;
use crate::netdev::NetDevStats;
use crate::sockdiag::ListenerSampler;
use crate::{conntrack, kmsg, netdev, sockdiag, sysctl};

/// What to watch during a run.
#[derive(Clone, Debug)]
pub struct HostRunConfig {
    /// The target's port on this host, when it listens here: its listener is sampled.
    pub listener_port: Option<u16>,
    /// How often the listener is sampled.
    pub sample_every: Duration,
    /// Upper bound on listener samples (memory stays bounded on long runs).
    pub max_samples: usize,
    /// Kernel log lines this long before the start count too.
    pub kmsg_lookback: Duration,
}

impl Default for HostRunConfig {
    fn default() -> Self {
        HostRunConfig {
            listener_port: None,
            sample_every: Duration::from_millis(100),
            max_samples: 6000,
            kmsg_lookback: Duration::from_secs(5),
        }
    }
}

/// A collector that did not run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SkippedCollector {
    /// `"counters"`, `"sock_diag"`, `"kernel_log"`, `"conntrack"`, `"interfaces"`, `"sysctl"`.
    pub name: String,
    pub reason: String,
    pub missing_capability: Option<String>,
}

/// The collectors between start and finish: here, or on a thread in the server's namespace.
pub struct HostRun {
    inner: Inner,
    sampled_in: Option<String>,
    noted: Vec<SkippedCollector>,
}

type Seen = (HostObservations, Vec<SkippedCollector>);

enum Inner {
    Here(Box<State>),
    Away {
        finish: mpsc::Sender<()>,
        thread: std::thread::JoinHandle<Seen>,
    },
}

/// The collectors' state between start and finish.
struct State {
    counters: Option<CounterSnapshot>,
    netdev: Option<Vec<NetDevStats>>,
    conntrack: Option<conntrack::ConntrackUsage>,
    sampler: Option<ListenerSampler>,
    kmsg_since: u64,
    skipped: Vec<SkippedCollector>,
}

fn skip(
    skipped: &mut Vec<SkippedCollector>,
    name: &str,
    reason: String,
    cap: Option<&'static str>,
) {
    if !skipped.iter().any(|s| s.name == name) {
        skipped.push(SkippedCollector {
            name: name.to_string(),
            reason,
            missing_capability: cap.map(str::to_string),
        });
    }
}

impl HostRun {
    /// Takes the "before" readings and starts the listener sampler (on this thread's namespace).
    pub fn start(cfg: &HostRunConfig) -> HostRun {
        HostRun {
            inner: Inner::Here(Box::new(State::start(cfg))),
            sampled_in: None,
            noted: Vec::new(),
        }
    }

    /// Like [`HostRun::start`], in the network namespace of process `pid` (`/proc/PID/ns/net`)
    /// on a thread of its own that stays there until [`HostRun::finish`]; `sampled_in` names
    /// that namespace for the report. Fails (with the missing capability: joining another
    /// namespace needs CAP_SYS_ADMIN) when the namespace cannot be joined.
    pub fn start_in_netns_of(
        pid: u32,
        cfg: &HostRunConfig,
        sampled_in: String,
    ) -> Result<HostRun, SkippedCollector> {
        let fail = |op: String, e: std::io::Error| {
            let cap = netdoctor_sys::os_error::is_permission(&e).then_some("CAP_SYS_ADMIN");
            SkippedCollector {
                name: "netns".to_string(),
                reason: format!("{op}: {e}"),
                missing_capability: cap.map(str::to_string),
            }
        };
        let path = format!("/proc/{pid}/ns/net");
        let ns = std::fs::File::open(&path).map_err(|e| fail(format!("open {path}"), e))?;
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), SkippedCollector>>(1);
        let (finish, finish_rx) = mpsc::channel::<()>();
        let cfg = cfg.clone();
        let thread = std::thread::Builder::new()
            .name("host-netns".into())
            .spawn(move || -> Seen {
                if let Err(e) = netdoctor_sys::netns::join_net(&ns) {
                    let _ = ready_tx.send(Err(fail(format!("setns into {path}"), e)));
                    return Seen::default();
                }
                drop(ns);
                let state = State::start(&cfg);
                let _ = ready_tx.send(Ok(()));
                // A dropped HostRun ends the wait too (Err): the thread never outlives it long.
                let _ = finish_rx.recv();
                state.finish()
            })
            .map_err(|e| fail("spawn the namespace thread".into(), e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(HostRun {
                inner: Inner::Away { finish, thread },
                sampled_in: Some(sampled_in),
                noted: Vec::new(),
            }),
            Ok(Err(skipped)) => {
                let _ = thread.join();
                Err(skipped)
            }
            Err(_) => Err(SkippedCollector {
                name: "netns".to_string(),
                reason: "the namespace thread ended early".to_string(),
                missing_capability: None,
            }),
        }
    }

    /// The network namespace the server side was read in, when it is not the caller's.
    pub fn sampled_in(&self) -> Option<&str> {
        self.sampled_in.as_deref()
    }

    /// Adds a collector that did not run (reported with the others by [`HostRun::finish`]).
    pub fn note_skipped(&mut self, s: SkippedCollector) {
        self.noted.push(s);
    }

    /// Takes the "after" readings (on the same namespace as `start`) and returns what was seen.
    pub fn finish(self) -> (HostObservations, Vec<SkippedCollector>) {
        let (obs, mut skipped) = match self.inner {
            Inner::Here(state) => state.finish(),
            Inner::Away { finish, thread } => {
                let _ = finish.send(());
                thread
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
            }
        };
        let mut all = self.noted;
        all.append(&mut skipped);
        (obs, all)
    }
}

impl State {
    fn start(cfg: &HostRunConfig) -> State {
        let mut skipped = Vec::new();
        let counters = counters::snapshot()
            .map_err(|e| skip(&mut skipped, "counters", e.to_string(), None))
            .ok();
        let netdev = netdev::read()
            .map_err(|e| {
                skip(
                    &mut skipped,
                    "interfaces",
                    e.to_string(),
                    e.missing_capability(),
                )
            })
            .ok();
        let conntrack = conntrack::read()
            .map_err(|e| {
                skip(
                    &mut skipped,
                    "conntrack",
                    e.to_string(),
                    e.missing_capability(),
                )
            })
            .ok();
        let sampler = cfg.listener_port.and_then(|port| {
            ListenerSampler::start(port, cfg.sample_every, cfg.max_samples)
                .map_err(|e| {
                    skip(
                        &mut skipped,
                        "sock_diag",
                        e.to_string(),
                        e.missing_capability(),
                    )
                })
                .ok()
        });
        State {
            counters,
            netdev,
            conntrack,
            sampler,
            kmsg_since: kmsg::now_us().saturating_sub(cfg.kmsg_lookback.as_micros() as u64),
            skipped,
        }
    }

    fn finish(mut self) -> Seen {
        let mut obs = HostObservations {
            listener: self.sampler.take().map(ListenerSampler::finish),
            ..Default::default()
        };
        let sk = &mut self.skipped;
        if let Some(before) = &self.counters {
            match counters::snapshot() {
                Ok(after) => obs.counters = counters::delta(before, &after),
                Err(e) => skip(sk, "counters", e.to_string(), None),
            }
        }
        if let Some(before) = &self.netdev {
            match netdev::read() {
                Ok(after) => obs.netdev = netdev::delta(before, &after),
                Err(e) => skip(sk, "interfaces", e.to_string(), e.missing_capability()),
            }
        }
        if self.conntrack.is_some() {
            obs.conntrack_before = self.conntrack.take();
            obs.conntrack_after = conntrack::read()
                .map_err(|e| skip(sk, "conntrack", e.to_string(), e.missing_capability()))
                .ok();
        }
        obs.server_sockets = sockdiag::state_counts()
            .map_err(|e| skip(sk, "sock_diag", e.to_string(), e.missing_capability()))
            .ok();
        obs.server_sysctls = sysctl::read()
            .map_err(|e| skip(sk, "sysctl", e.to_string(), e.missing_capability()))
            .ok();
        obs.kmsg = kmsg::read_since(self.kmsg_since)
            .map_err(|e| skip(sk, "kernel_log", e.to_string(), e.missing_capability()))
            .unwrap_or_default();
        (obs, self.skipped)
    }
}

/// Fills the client side (socket states and sysctls of the calling thread's namespace, where
/// connect() ran) into `obs`; returns what could not be read.
pub fn read_client_side(obs: &mut HostObservations) -> Vec<SkippedCollector> {
    let mut skipped = Vec::new();
    obs.client_sockets = sockdiag::state_counts()
        .map_err(|e| {
            skip(
                &mut skipped,
                "sock_diag",
                e.to_string(),
                e.missing_capability(),
            )
        })
        .ok();
    obs.client_sysctls = sysctl::read()
        .map_err(|e| {
            skip(
                &mut skipped,
                "sysctl",
                e.to_string(),
                e.missing_capability(),
            )
        })
        .ok();
    skipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_run_on_loopback_sees_its_listener_and_counters() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let run = HostRun::start(&HostRunConfig {
            listener_port: Some(port),
            sample_every: Duration::from_millis(5),
            ..Default::default()
        });
        let _c: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        let (mut obs, skipped) = run.finish();
        assert!(read_client_side(&mut obs).is_empty());
        let names: Vec<&str> = skipped.iter().map(|s| s.name.as_str()).collect();
        assert!(
            names
                .iter()
                .all(|n| *n == "kernel_log" || *n == "conntrack"),
            "{skipped:?}"
        );
        assert!(obs.delta("Tcp.ActiveOpens") >= 3, "{:?}", obs.counters);
        let series = obs.listener.unwrap();
        assert_eq!(series.port, port);
        assert!(!series.samples.is_empty());
        assert!(obs.server_sockets.unwrap().established >= 6);
        assert!(obs.client_sysctls.unwrap().local_ports().unwrap() > 0);
    }
}
