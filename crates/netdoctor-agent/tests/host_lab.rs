//! `watch` in a lab namespace whose server has a listen backlog of 1 and a slow acceptor, while
//! 20 clients connect at once: the window's report names `listen_queue_overflow` on the watched
//! port, from the listener samples (accept queue at its limit) and the window's counter deltas,
//! and the window result carries the sampled listener. Needs root (namespaces, capture); the
//! lab removes its namespaces on drop, also when an assertion fails.

use netdoctor_agent::{WatchConfig, WindowResult, watch};
use netdoctor_core::FindingId;
use netdoctor_lab::hostcases::{self, HostLab};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn a_full_accept_queue_is_a_listen_queue_overflow_in_the_window() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: not root (needs network namespaces and packet capture)");
        return;
    }
    let mut lab = HostLab::create(&format!("nd-wh-{}", std::process::id() % 100_000), false)
        .expect("create lab");
    let addr = hostcases::backlog_server(&mut lab, 8181, 1, Duration::from_millis(100)).unwrap();
    let srv = lab.server_netns().to_string();
    let mut cfg = WatchConfig::new(vec![8181], Duration::from_secs(5));
    cfg.max_windows = Some(1);
    cfg.listener_sample_every = Duration::from_millis(50);
    let (ready_tx, ready_rx) = mpsc::channel();
    let windows: Vec<WindowResult> = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            netdoctor_lab::in_netns(&srv, || {
                let stop = AtomicBool::new(false);
                let mut got = Vec::new();
                watch(
                    &cfg,
                    &stop,
                    &mut || {
                        let _ = ready_tx.send(());
                    },
                    &mut |w| got.push(w.clone()),
                )
                .map(|_| got)
            })
        });
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("watch ready");
        let outcome = hostcases::burst_clients(&lab, addr, 20, Duration::from_secs(4)).unwrap();
        eprintln!(
            "clients: {} of {} connected",
            outcome.connected, outcome.attempts
        );
        watcher
            .join()
            .expect("watch thread")
            .expect("enter namespace")
            .expect("watch")
    });
    assert_eq!(windows.len(), 1);
    let w = &windows[0];
    let l = w.listener.as_ref().expect("listener sampled");
    eprintln!("listener {l:?}; findings {:#?}", w.report.findings);
    assert_eq!(l.backlog, 1);
    assert!(l.full_samples > 0, "{l:?}");
    let f = w
        .report
        .findings
        .iter()
        .find(|f| f.id == FindingId::ListenQueueOverflow)
        .expect("listen_queue_overflow in the window");
    assert!(f.summary.contains("port 8181"), "{}", f.summary);
    assert_eq!(w.report.verdict, netdoctor_core::Verdict::Problem);
    drop(lab);
}
