//! Pinning the load threads to CPUs (`Pinning`: the default `Auto`, `--pin-threads`,
//! `--no-pin-threads`), seen from /proc while a run lasts.
//!
//! A binary of its own, and one test at a time (a lock): the threads are found by their names
//! (`load-0`, `load-1`, …), which every concurrent run in the same process would share.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::Server;
use netdoctor_load::{LoadConfig, Pinning, run};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A short 200 to every request.
fn start_server() -> Server {
    Server::start(|_, s| s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
}

/// The CPUs a thread named `name` of this process may run on (from /proc), if one exists.
fn cpus_of_thread(name: &str) -> Option<String> {
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            return status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string());
        }
    }
    None
}

/// Runs `threads` load threads (one connection each) with `pinning` against a fresh server,
/// checks the counts, and returns each thread's CPU list as /proc showed it during the run.
/// Progress runs on the calling thread every 250 ms while the load threads live; a busy machine
/// may start a thread late, so it looks again until each thread is seen (and on one CPU when
/// `pinned`), or 10 s passed.
fn cpus_while_running(threads: usize, pinning: Pinning, pinned: bool) -> Vec<Option<String>> {
    let server = start_server();
    let mut cfg = LoadConfig::new(server.target.clone());
    cfg.connections = threads;
    cfg.threads = threads;
    cfg.duration = std::time::Duration::from_secs(20);
    cfg.pinning = pinning;
    let stop = AtomicBool::new(false);
    let mut seen: Vec<Option<String>> = Vec::new();
    let mut calls = 0;
    let res = run(&cfg, &stop, &mut |_| {
        calls += 1;
        seen = (0..threads)
            .map(|i| cpus_of_thread(&format!("load-{i}")))
            .collect();
        let settled = seen.iter().all(|s| {
            s.as_deref()
                .is_some_and(|v| !pinned || !v.contains([',', '-']))
        });
        if settled || calls >= 40 {
            stop.store(true, Ordering::SeqCst);
        }
    })
    .unwrap();
    assert!(res.requests > 0, "no requests: {res:?}");
    assert_eq!(res.errors.total(), 0, "{res:?}");
    let served = server.requests.load(Ordering::SeqCst);
    assert!(
        served >= res.requests && served <= res.requests + threads as u64,
        "server {served}, client {}",
        res.requests
    );
    seen
}

/// `--pin-threads`: each load thread runs on one allowed CPU (thread i on the i-th, modulo), and
/// the run counts as an unpinned one does.
#[test]
fn pinned_threads_run_on_one_cpu_each_and_count_the_same() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let allowed = netdoctor_sys::affinity::allowed_cpus().unwrap();
    let seen = cpus_while_running(3, Pinning::Always, true);
    for (i, s) in seen.iter().enumerate() {
        let want = allowed[i % allowed.len()].to_string();
        assert_eq!(s.as_deref(), Some(want.as_str()), "load-{i}: {seen:?}");
    }
}

/// Keeps one CPU busy (a spinning thread) until dropped, at most 60 s: the default then sees
/// a busy machine whatever else runs beside the test.
struct Hog(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Hog {
    fn start() -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && std::time::Instant::now() < end {
                std::hint::spin_loop();
            }
        });
        Hog(stop, Some(h))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

/// On a busy machine (a spinning thread keeps one CPU busy) the default pins one thread per
/// allowed CPU when the threads are as many as those CPUs, and not when they are fewer;
/// `--no-pin-threads` leaves every thread free to run on all of them. (The quiet machine's
/// choice, left to the scheduler, is the unit tests' `Pinning::cpus`: no test can make CI
/// quiet.)
#[test]
fn default_pins_one_thread_per_cpu_and_never_leaves_them_free() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let allowed = netdoctor_sys::affinity::allowed_cpus().unwrap();
    if allowed.len() < 2 {
        eprintln!(
            "skipped: needs 2 allowed CPUs (this process has {})",
            allowed.len()
        );
        return;
    }
    let free = |seen: &[Option<String>]| {
        seen.iter()
            .all(|s| s.as_deref().is_some_and(|v| v.contains([',', '-'])))
    };
    let _hog = Hog::start();
    if allowed.len() <= 8 {
        let seen = cpus_while_running(allowed.len(), Pinning::Auto, true);
        for (i, s) in seen.iter().enumerate() {
            let want = allowed[i].to_string();
            assert_eq!(s.as_deref(), Some(want.as_str()), "load-{i}: {seen:?}");
        }
    }
    let fewer = cpus_while_running(allowed.len() - 1, Pinning::Auto, false);
    assert!(
        free(&fewer),
        "fewer threads than CPUs were pinned: {fewer:?}"
    );
    let never = cpus_while_running(allowed.len().min(8), Pinning::Never, false);
    assert!(free(&never), "pinned without asking: {never:?}");
}

/// The scheduling policy of the thread named `name` (field 41 of /proc/self/task/TID/stat).
fn policy_of_thread(name: &str) -> Option<i32> {
    stat_field_of_thread(name, 41)
}

/// Field `field` (1-based, as in proc(5)) of the stat file of the thread named `name`.
fn stat_field_of_thread(name: &str, field: usize) -> Option<i32> {
    for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            return stat_field(&std::fs::read_to_string(t.path().join("stat")).ok()?, field);
        }
    }
    None
}

/// The nice value of this thread (`/proc/thread-self/stat`).
fn own_nice() -> Option<i32> {
    stat_field(&std::fs::read_to_string("/proc/thread-self/stat").ok()?, 19)
}

fn stat_field(stat: &str, field: usize) -> Option<i32> {
    // Fields after the command name start at field 3 (the state).
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(field - 3)?.parse().ok()
}

/// `LoadConfig::batch_sched` (default on, `--no-batch-sched`): closed-loop load threads run as
/// SCHED_BATCH, or keep the policy of the thread that started them (SCHED_OTHER unless the test
/// itself runs under `chrt`) when it is off or at a constant rate; the run counts the same.
#[test]
fn load_threads_run_as_sched_batch_unless_turned_off() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let inherited = netdoctor_sys::affinity::current_thread_policy().unwrap();
    let inherited_nice = own_nice().expect("own nice value");
    for (batch, rate, pinning, want) in [
        (true, None, Pinning::Always, libc::SCHED_BATCH),
        (true, None, Pinning::Never, libc::SCHED_BATCH),
        (false, None, Pinning::Always, inherited),
        (true, Some(500.0), Pinning::Always, inherited),
    ] {
        let server = start_server();
        let mut cfg = LoadConfig::new(server.target.clone());
        cfg.connections = 2;
        cfg.threads = 2;
        cfg.duration = std::time::Duration::from_secs(20);
        assert!(cfg.batch_sched, "on by default");
        cfg.batch_sched = batch;
        cfg.rate = rate;
        cfg.pinning = pinning;
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        let mut nices = Vec::new();
        let mut calls = 0;
        let res = run(&cfg, &stop, &mut |_| {
            calls += 1;
            seen = (0..2)
                .map(|i| policy_of_thread(&format!("load-{i}")))
                .collect();
            nices = (0..2)
                .map(|i| nice_of_thread(&format!("load-{i}")))
                .collect();
            if seen.iter().all(Option::is_some) || calls >= 40 {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        assert!(res.requests > 0, "no requests: {res:?}");
        assert_eq!(res.errors.total(), 0, "{res:?}");
        assert_eq!(
            seen,
            vec![Some(want); 2],
            "batch_sched = {batch}, rate {rate:?}"
        );
        // Pinned SCHED_BATCH threads also give way to a server in the same session: nice
        // raised to BATCH_NICE, never lowered; the others (unpinned ones too: at nice 5 the
        // scheduler stacks them) keep the nice value they were started with.
        let want_nice = if want == libc::SCHED_BATCH && batch && pinning == Pinning::Always {
            inherited_nice.max(netdoctor_load::BATCH_NICE)
        } else {
            inherited_nice
        };
        assert_eq!(
            nices,
            vec![Some(want_nice); 2],
            "nice, batch_sched = {batch}, rate {rate:?}, {pinning:?}"
        );
    }
}

/// The nice value of the thread named `name` (field 19 of /proc/self/task/TID/stat).
fn nice_of_thread(name: &str) -> Option<i32> {
    stat_field_of_thread(name, 19)
}
