//! `watch`'s capture ring grows under kernel drops and shrinks after quiet windows, live: the
//! agent watches a loopback listener of this test in 1 s windows; the test stops the agent
//! (SIGSTOP) for 1.5 s while exchanges go on, so its 2 MiB ring (32 blocks, each handed over
//! after 10 ms) overflows and the kernel drops; after SIGCONT the next window must move the
//! ring to 4 MiB, and six quiet windows later back to 2 MiB, with no drop after the growth;
//! then SIGTERM ends the run (exit 0). Nothing here is timed: the assertions are on the order of the windows' reports. Needs root
//! (packet capture).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The agent, killed by PID on drop (also when the test fails) unless it has been reaped.
struct Agent(std::process::Child);

impl Drop for Agent {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return; // already reaped: its PID may be another process's now
        }
        // SAFETY: signals to our own child's PID with valid signal numbers.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGCONT);
            libc::kill(self.0.id() as i32, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// One short exchange with the listener's echo thread.
fn exchange(addr: std::net::SocketAddr) {
    if let Ok(mut s) = TcpStream::connect(addr) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = s.write_all(b"ping");
        let mut b = [0u8; 4];
        let _ = s.read_exact(&mut b);
    }
}

#[test]
fn a_ring_grown_under_drops_shrinks_after_quiet_windows() {
    let _turn = crate::common::file_turn(file!());
    if !crate::common::is_root() {
        eprintln!("skipped: not root (needs packet capture)");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // Echo server: answers each connection's 4 bytes and closes.
    let server = {
        let done = Arc::clone(&done);
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_nonblocking(false);
                        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                        let mut b = [0u8; 4];
                        if c.read_exact(&mut b).is_ok() {
                            let _ = c.write_all(&b);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        })
    };
    let dir = crate::common::tempdir("ringshrink");
    let out = dir.join("windows.jsonl");
    let mut agent = Agent(
        Command::new(env!("CARGO_BIN_EXE_netdoctor"))
            .args(["watch", "-p", &addr.port().to_string(), "--window", "1s"])
            .args(["--windows", "30", "--capture-rings", "1", "--json"])
            .env("NETDOCTOR_QUIET", "1")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(dir.join("err")).unwrap())
            .spawn()
            .expect("start netdoctor watch"),
    );
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    // Steady light traffic (an exchange every 5 ms: each 10 ms block gets packets) all along.
    let pace = Arc::new(AtomicU64::new(5));
    let traffic = {
        let (done, pace) = (Arc::clone(&done), Arc::clone(&pace));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                exchange(addr);
                std::thread::sleep(Duration::from_millis(pace.load(Ordering::Relaxed)));
            }
        })
    };
    let t0 = Instant::now();
    while lines().is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(30), "no window in 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The reader is away for 1.5 s: ~150 blocks handed over into a ring of 32.
    let pid = agent.0.id() as i32;
    // SAFETY: our own child's PID, valid signal numbers.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let drops = |w: &serde_json::Value| {
        w["measurements"]["capture"]["stats"]["capture_drops"]
            .as_u64()
            .unwrap_or(0)
    };
    let moves = |w: &serde_json::Value, kib: u32| {
        w["measurements"]["capture"]["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str())
            .any(|x| x.contains(&format!("moves to 1 ring(s) of {kib} KiB")))
    };
    // Then quieter: an exchange every 50 ms. The run is over once a window after the growth
    // has shrunk the ring (or after its 30 windows): SIGTERM ends the window in progress and
    // watch exits 0; the windows after the shrink add nothing to the assertions below.
    pace.store(50, Ordering::Relaxed);
    let mut terminated = false;
    let status = loop {
        if let Some(s) = agent.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "30 windows of 1 s took over 120 s"
        );
        if !terminated {
            let ws = lines();
            let shrunk = ws
                .iter()
                .position(|w| moves(w, 4096))
                .is_some_and(|g| ws[g..].iter().any(|w| moves(w, 2048)));
            if shrunk {
                // SAFETY: our own child's PID, a valid signal number.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                terminated = true;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    done.store(true, Ordering::Relaxed);
    traffic.join().unwrap();
    server.join().unwrap();
    assert!(status.success(), "{status}");
    let ws = lines();
    let summary: Vec<(u64, bool, bool)> = ws
        .iter()
        .map(|w| (drops(w), moves(w, 4096), moves(w, 2048)))
        .collect();
    let grew = ws
        .iter()
        .position(|w| moves(w, 4096))
        .unwrap_or_else(|| panic!("the ring never grew: (drops, grew, shrank) {summary:?}"));
    assert!(drops(&ws[grew]) > 0, "grown without drops: {summary:?}");
    let shrank = ws[grew..]
        .iter()
        .position(|w| moves(w, 2048))
        .map(|k| grew + k)
        .unwrap_or_else(|| panic!("the ring never shrank: {summary:?}"));
    // Six quiet windows in a row: the growth's window is followed by five more before the
    // sixth halves the ring (no flapping: nothing in between moved it).
    assert!(shrank - grew >= 6, "shrank too soon: {summary:?}");
    assert!(
        ws[grew + 1..shrank]
            .iter()
            .all(|w| !moves(w, 4096) && !moves(w, 2048) && drops(w) == 0),
        "{summary:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
