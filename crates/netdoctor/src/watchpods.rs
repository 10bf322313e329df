//! `watch --pods`: the pods' watch threads ([`netdoctor_agent::podwatch::watch_pods_live`])
//! hand their events to this thread, which owns the outputs: a pod found is named in
//! `netdoctor_pod_listener_info` and the log, its windows are recorded, a pod gone has its
//! series removed (from `/metrics` here, from OTLP by the caller: [`PodOutput::Gone`]).

use netdoctor_agent::metrics::PodListenerLabels;
use netdoctor_agent::pods::{PodNetns, Roots, describe};
use netdoctor_agent::podwatch::{PodEvent, PodRun, PodWatchOptions, watch_pods_live};
use netdoctor_agent::{AgentMetrics, WatchConfig, WindowResult};
use std::sync::atomic::AtomicBool;

enum Msg {
    Started(PodNetns),
    Window(PodNetns, Box<WindowResult>),
    Ended(PodNetns, PodRun),
    Gone(PodNetns),
}

/// The listener info series of a pod.
fn listener_labels(p: &PodNetns) -> Vec<PodListenerLabels> {
    p.ports
        .iter()
        .map(|port| PodListenerLabels {
            port: port.to_string(),
            pod: p.labels.clone(),
            pod_uid: p.uid.clone().unwrap_or_default(),
            netns: p.netns.to_string(),
            source: p.source.as_str().to_string(),
        })
        .collect()
}

/// What the caller's outputs get: a pod's window to record, or a pod gone (its series leave
/// the outputs that push, such as OTLP; `/metrics` is handled here).
pub enum PodOutput<'a> {
    Window(&'a PodNetns, &'a WindowResult),
    Gone(&'a PodNetns),
}

/// Runs the pods' watches until `stop` (see the module docs); returns (watches that failed,
/// watches run).
#[allow(clippy::too_many_arguments)]
pub fn run(
    cfg: &WatchConfig,
    roots: &Roots,
    opts: &PodWatchOptions,
    initial: &[PodNetns],
    stop: &AtomicBool,
    output: &mut dyn FnMut(PodOutput<'_>),
    metrics: &AgentMetrics,
    slo: Option<&netdoctor_report::Slo>,
    quiet: bool,
) -> anyhow::Result<(usize, usize)> {
    let objectives: Vec<String> = slo
        .map(|s| s.objectives.iter().map(|o| o.text.clone()).collect())
        .unwrap_or_default();
    let (tx, rx) = std::sync::mpsc::channel::<Msg>();
    let (mut failed, mut count) = (0, 0);
    std::thread::scope(|s| {
        let supervisor = s.spawn(move || {
            let tx = std::sync::Mutex::new(tx);
            let send = |m: Msg| {
                let _ = tx.lock().unwrap_or_else(|e| e.into_inner()).send(m);
            };
            watch_pods_live(cfg, roots, opts, initial, stop, &|e| match e {
                PodEvent::Started(p) => send(Msg::Started(p.clone())),
                PodEvent::Window(p, w) => send(Msg::Window(p.clone(), Box::new(w.clone()))),
                PodEvent::Ended(p, r) => send(Msg::Ended(p.clone(), r)),
                PodEvent::Gone(p) => send(Msg::Gone(p.clone())),
            });
        });
        for m in rx {
            match m {
                Msg::Started(p) => {
                    for l in listener_labels(&p) {
                        metrics.record_pod_listener(&l);
                    }
                    if !quiet {
                        eprintln!("netdoctor: watching pod {}", describe(&p));
                    }
                }
                Msg::Window(p, w) => output(PodOutput::Window(&p, &w)),
                Msg::Ended(p, r) => {
                    count += 1;
                    match r.result {
                        Ok(n) if !quiet => {
                            eprintln!("netdoctor: pod {}: stopped after {n} windows", p.name())
                        }
                        Ok(_) => {}
                        Err(e) => {
                            failed += 1;
                            eprintln!("netdoctor: pod {}: {:#}", p.name(), anyhow::Error::new(e));
                        }
                    }
                }
                Msg::Gone(p) => {
                    let n =
                        metrics.forget_pod(&p.labels, &p.ports, &objectives, &listener_labels(&p));
                    output(PodOutput::Gone(&p));
                    if !quiet {
                        eprintln!("netdoctor: pod {} is gone: {n} series removed", p.name());
                    }
                }
            }
        }
        supervisor.join()
    })
    .map_err(|_| anyhow::anyhow!("--pods: the watch thread panicked"))?;
    Ok((failed, count))
}
