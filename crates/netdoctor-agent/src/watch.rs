//! The watch loop: repeated passive windows over a set of ports.
//!
//! One capture thread per port keeps its AF_PACKET socket and ring
//! ([`netdoctor_observe::live::LiveCapture`], kernel BPF filter on that port) open for the whole
//! run, so no packet falls between windows: packets that arrive while a window is being closed
//! wait in the ring and count toward the next one. The main thread keeps the clock: at each
//! window end (or on a stop request) it raises every port's window flag, collects one result per
//! port, takes the kernel counters' deltas for the window, builds one
//! [`netdoctor_report::Report`] per port and hands it to the caller (metrics, OTLP, log).
//!
//! **One long-lived `Analyzer` per port** (its capture thread: [`port`]), cut into windows
//! with [`Analyzer::take_window`](netdoctor_core::analyze::Analyzer::take_window): a keep-alive
//! connection that spans windows keeps its state (handshake RTT, sequence space, the exchange
//! in progress), so a stall whose held data leaves
//! just after a window boundary is still seen, in the next window. Connections without a packet
//! for [`WatchConfig::idle_timeout`] are evicted (counted in `connections_evicted`), which bounds
//! the analyzer's memory on a long run. The analyzer's statistics are cumulative; each window's
//! report carries the window's share (see [`window_stats`]).
//!
//! Memory: each port's capture ring is mapped whole and counts in the RSS. A port starts on a
//! small ring ([`WatchConfig::ring_start_bytes`]) that doubles after a window with kernel drops,
//! up to [`WatchConfig::ring_bytes`], and is halved again after quiet windows ([`crate::rings`]). After a window that evicted many
//! connections (a flood's half-open ones, a burst of idle ones), freed heap is handed back to
//! the kernel ([`netdoctor_sys::memory::release_free_heap`]), so the RSS falls back after a
//! flood instead of staying at its peak.
//!
//! Observers per window: the capture (per port), the kernel counters (once per window, shared
//! by the ports), the host collectors ([`crate::host`]: the watched listeners through sock_diag,
//! sampled on this thread, and the kernel log), and for problem windows the server's socket
//! options (`sockopt`, as in `diagnose`), which confirm or contradict a Nagle finding.
//!
//! Problem windows (verdict `problem`) are kept in the [`EvidenceRing`] with their pcap when a
//! directory is configured. The pcap of the window in progress goes to disk as it is captured
//! (bounded by [`WatchConfig::pcap_limit_bytes`]) rather than into memory, so memory stays flat
//! whatever the traffic.
//!
//! Stopping: when `stop` is set (the binary sets it from SIGTERM/SIGINT), the window in
//! progress ends at once, is analyzed, recorded and stored like any other, and the loop
//! returns: the caller then flushes its exporters and exits 0.

mod port;

pub use port::window_stats;
use port::{PortCtx, PortWindow, port_thread};

use crate::host::{HostWatch, HostWindow, ListenerWindow, SynSeen};
use crate::ring::EvidenceRing;
use netdoctor_core::Verdict;
use netdoctor_observe::ObserveError;
use netdoctor_observe::counters::{self, CounterDelta};
use netdoctor_observe::fanout::LiveRings;
use netdoctor_observe::live::LiveConfig;
pub use netdoctor_observe::live::Wake;
use netdoctor_report::{CaptureSection, Check, CountersSection, Report, Target};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often the main thread looks at the stop flag while a window runs.
const TICK: Duration = Duration::from_millis(100);
/// The same with [`WatchConfig::stop_wake`]: the stop wakes the thread, this only bounds a
/// wake-up lost.
const WOKEN_TICK: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// TCP ports to watch (at least one).
    pub ports: Vec<u16>,
    /// Window length.
    pub window: Duration,
    /// Bytes kept per packet.
    pub snaplen: u32,
    /// Capture interface; `None` for all.
    pub interface: Option<String>,
    /// Where problem windows are kept, and how many per port.
    pub ring: Option<(PathBuf, usize)>,
    /// Size limit of the evidence directory (all ports), bytes.
    pub evidence_max_bytes: u64,
    /// Age limit of the evidence directory's entries.
    pub evidence_max_age: Option<Duration>,
    /// Largest pcap written per window and port; packets beyond it are analyzed, not written.
    pub pcap_limit_bytes: u64,
    /// Stop after this many windows (tests, one-shot runs); `None` runs until stopped.
    pub max_windows: Option<u64>,
    /// Largest capture ring of each port, in bytes (mapped whole: it counts in the RSS); each
    /// ring of a fanned-out port has at most this size.
    pub ring_bytes: usize,
    /// Ring a port starts on (at most `ring_bytes`); it grows on drops.
    pub ring_start_bytes: usize,
    /// How many capture rings a port gets ([`crate::rings`]).
    pub rings: crate::rings::RingPolicy,
    /// Connections without a packet for this long leave the analyzer.
    pub idle_timeout: Duration,
    /// How often the watched listeners are sampled (accept queue, SYN_RECV).
    pub listener_sample_every: Duration,
    /// Woken together with the `stop` flag (the binary's signal handler writes to it): the
    /// main thread then sleeps until the next window end or listener sample instead of
    /// looking at the flag every [`TICK`]. `None`: the flag is looked at every [`TICK`].
    pub stop_wake: Option<Wake>,
}

/// Capture ring memory of all ports together, by default (split evenly across the ports).
pub const DEFAULT_RING_TOTAL_BYTES: usize = 16 << 20;

/// The ring of each of `ports` ports out of a total budget: an even share, at least
/// [`netdoctor_observe::live::MIN_RING_BYTES`].
pub fn ring_share(total_bytes: usize, ports: usize) -> usize {
    (total_bytes / ports.max(1)).max(netdoctor_observe::live::MIN_RING_BYTES)
}

impl WatchConfig {
    /// Block size and count of a ring of `bytes` at the configured snap length.
    pub fn geometry(&self, bytes: usize) -> (u32, u32) {
        let snaplen = if self.snaplen == 0 {
            65_535
        } else {
            self.snaplen
        };
        netdoctor_observe::live::ring_geometry_for(bytes, snaplen)
    }

    /// The ring each port starts on.
    pub fn start_ring(&self) -> usize {
        self.ring_start_bytes
            .min(self.ring_bytes)
            .max(netdoctor_observe::live::MIN_RING_BYTES)
    }

    pub fn new(ports: Vec<u16>, window: Duration) -> WatchConfig {
        let ports_len = ports.len();
        WatchConfig {
            ports,
            window,
            snaplen: 256,
            interface: None,
            ring: None,
            evidence_max_bytes: crate::ring::DEFAULT_MAX_BYTES,
            evidence_max_age: None,
            pcap_limit_bytes: 64 << 20,
            max_windows: None,
            ring_bytes: ring_share(DEFAULT_RING_TOTAL_BYTES, ports_len),
            ring_start_bytes: crate::rings::START_RING_BYTES,
            rings: crate::rings::RingPolicy::default(),
            idle_timeout: Duration::from_secs(120),
            listener_sample_every: Duration::from_secs(1),
            stop_wake: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("no port to watch (give -p PORT[,PORT…] or run where something listens)")]
    NoPorts,
    #[error("window length must be at least 1s, got {0:?}")]
    WindowTooShort(Duration),
    #[error(
        "watch needs CAP_NET_RAW to capture tcp port {0} (run as root or grant the capability); \
         without packet capture there is nothing to watch"
    )]
    NeedsCapNetRaw(u16),
    #[error("capture on tcp port {port}")]
    Capture {
        port: u16,
        #[source]
        source: ObserveError,
    },
    #[error("{what} {path}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("capture thread of tcp port {0} ended unexpectedly")]
    ThreadLost(u16),
}

/// One port's window, as handed to the caller.
#[derive(Debug, Clone)]
pub struct WindowResult {
    pub port: u16,
    /// 1-based window number.
    pub index: u64,
    pub end_unix_ms: u64,
    pub report: Report,
    /// The evidence directory's size and deletions after this window, when there is one.
    pub evidence: Option<crate::ring::RingState>,
    /// The ring entry (without extension) when the window was kept.
    pub stored: Option<PathBuf>,
    /// The port's listener over the window (sock_diag samples), when one was found.
    pub listener: Option<ListenerWindow>,
    /// Matching kernel log lines logged during the window (machine-wide).
    pub kmsg_lines: usize,
    /// Connections the port's analyzer tracks at the window's end.
    pub open_connections: usize,
}

struct PortHandle {
    port: u16,
    window_stop: Arc<AtomicBool>,
    /// Wakes the capture thread after `window_stop` is set (its waits are long otherwise).
    wake: Option<Wake>,
    thread: std::thread::JoinHandle<()>,
    syn_seen: Option<Arc<SynSeen>>,
}

impl PortHandle {
    /// Ends the capture thread's window: the flag, then the wake-up.
    fn end_window(&self) {
        self.window_stop.store(true, Ordering::SeqCst);
        if let Some(w) = &self.wake {
            w.wake();
        }
    }
}

/// Runs windows until `stop` is set or `max_windows` were done, calling `on_start` once every
/// capture is open (the ready signal) and `on_window` for every port's window. Returns the
/// number of windows run.
pub fn watch(
    cfg: &WatchConfig,
    stop: &AtomicBool,
    on_start: &mut dyn FnMut(),
    on_window: &mut dyn FnMut(&WindowResult),
) -> Result<u64, WatchError> {
    if cfg.ports.is_empty() {
        return Err(WatchError::NoPorts);
    }
    if cfg.window < Duration::from_secs(1) {
        return Err(WatchError::WindowTooShort(cfg.window));
    }
    let ring = match &cfg.ring {
        Some((dir, keep)) => Some(
            EvidenceRing::open(dir, *keep)
                .map_err(|source| WatchError::Io {
                    what: "create evidence directory",
                    path: dir.display().to_string(),
                    source,
                })?
                .with_limits(cfg.evidence_max_bytes, cfg.evidence_max_age),
        ),
        None => None,
    };
    // Open every capture before starting anything: a missing privilege fails the run at once.
    let mut captures = Vec::new();
    for &port in &cfg.ports {
        let lc = LiveConfig {
            port,
            snaplen: cfg.snaplen,
            max_packets: None,
            interface: cfg.interface.clone(),
        };
        let cap =
            LiveRings::open_geometry(&lc, cfg.geometry(cfg.start_ring()), cfg.rings.initial())
                .map_err(|source| match source {
                    ObserveError::NeedsCapNetRaw => WatchError::NeedsCapNetRaw(port),
                    source => WatchError::Capture { port, source },
                })?;
        captures.push((port, lc, cap));
    }
    let shutdown = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel::<PortWindow>();
    let mut handles = Vec::new();
    for (port, live, mut cap) in captures {
        let seen = Arc::new(SynSeen::default());
        let window_stop = Arc::new(AtomicBool::new(false));
        // Without it (no descriptors left) the capture polls its stop flag every 50 ms.
        let wake = Wake::new().ok();
        if let Some(w) = &wake {
            cap.set_wake(w);
        }
        let ctx = PortCtx {
            port,
            snaplen: cfg.snaplen,
            ring: ring.clone(),
            pcap_limit: cfg.pcap_limit_bytes,
            idle_timeout: cfg.idle_timeout,
            live,
            ring_size: crate::rings::RingSize::new(cfg.start_ring(), cfg.ring_bytes),
            block: cfg.geometry(cfg.start_ring()).0,
            rings: cfg.rings,
            window_stop: Arc::clone(&window_stop),
            wake: wake.clone(),
            shutdown: Arc::clone(&shutdown),
            tx: tx.clone(),
            syn_seen: Arc::clone(&seen),
        };
        let thread = std::thread::Builder::new()
            .name(format!("capture-{port}"))
            .spawn(move || port_thread(cap, ctx))
            .map_err(|source| WatchError::Io {
                what: "spawn capture thread for port",
                path: port.to_string(),
                source,
            })?;
        handles.push(PortHandle {
            port,
            window_stop,
            wake,
            thread,
            // The capture on all interfaces sees every SYN to the port: the listener sampler
            // may skip its SYN_RECV dump while none came (see `crate::host`).
            syn_seen: cfg.interface.is_none().then_some(seen),
        });
    }
    drop(tx);
    on_start();
    let result = run_windows(
        cfg,
        stop,
        &shutdown,
        &handles,
        &rx,
        ring.as_ref(),
        on_window,
    );
    // Whatever happened, end the threads: shutdown first, then end their current window.
    shutdown.store(true, Ordering::SeqCst);
    for h in &handles {
        h.end_window();
    }
    for h in handles {
        let _ = h.thread.join();
    }
    if let Some(r) = &ring {
        r.remove_current();
    }
    result
}

fn run_windows(
    cfg: &WatchConfig,
    stop: &AtomicBool,
    shutdown: &AtomicBool,
    handles: &[PortHandle],
    rx: &mpsc::Receiver<PortWindow>,
    ring: Option<&EvidenceRing>,
    on_window: &mut dyn FnMut(&WindowResult),
) -> Result<u64, WatchError> {
    let t0 = Instant::now();
    let mut index = 0u64;
    let mut before = counters::snapshot();
    let syn_seen = handles.iter().map(|h| h.syn_seen.clone()).collect();
    let mut host = HostWatch::start(&cfg.ports, cfg.listener_sample_every).with_syn_seen(syn_seen);
    loop {
        index += 1;
        let deadline = t0 + cfg.window * u32::try_from(index).unwrap_or(u32::MAX);
        let window_start = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            host.tick(now);
            let tick = if cfg.stop_wake.is_some() {
                WOKEN_TICK
            } else {
                TICK
            };
            let pause = tick
                .min(deadline - now)
                .min(host.until_next(now).max(TICK / 10));
            match &cfg.stop_wake {
                Some(w) => {
                    let _ = w.wait(pause);
                }
                None => std::thread::sleep(pause),
            }
        }
        let last = stop.load(Ordering::Relaxed) || cfg.max_windows.is_some_and(|m| index >= m);
        if last {
            shutdown.store(true, Ordering::SeqCst);
        }
        for h in handles {
            h.end_window();
        }
        let mut got = Vec::with_capacity(handles.len());
        for h in handles {
            match rx.recv() {
                Ok(w) => got.push(w),
                Err(_) => return Err(WatchError::ThreadLost(h.port)),
            }
        }
        got.sort_by_key(|w| w.port);
        let after = counters::snapshot();
        let counter_result = match (&before, &after) {
            (Ok(b), Ok(a)) => Ok(counters::delta(b, a)),
            (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
        };
        before = after;
        let hosts = host.take_window(counter_result.as_deref().ok());
        let end_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let elapsed = window_start.elapsed().as_secs_f64();
        for w in got {
            let hw = hosts.iter().find(|h| h.port == w.port).cloned();
            let open_connections = w.open_connections;
            let listener = hw.as_ref().and_then(|h| h.listener.clone());
            let kmsg_lines = hw.as_ref().map_or(0, |h| h.kmsg_lines.len());
            let (mut report, pcap) = window_report(w, hw, &counter_result, cfg.snaplen, elapsed);
            if report.verdict == Verdict::Problem {
                crate::sockopts::sample_socket_options(&mut report);
            }
            let mut stored = None;
            if let Some(r) = ring {
                if report.verdict == Verdict::Problem {
                    let json = serde_json::to_vec_pretty(&report).unwrap_or_default();
                    stored = Some(
                        r.store(end_unix_ms, report_port(&report), &json, pcap.as_deref())
                            .map_err(|source| WatchError::Io {
                                what: "store window in",
                                path: r.dir().display().to_string(),
                                source,
                            })?,
                    );
                } else if let Some(p) = &pcap {
                    let _ = std::fs::remove_file(p);
                }
            }
            on_window(&WindowResult {
                port: report_port(&report),
                index,
                end_unix_ms,
                report,
                stored,
                evidence: ring.map(EvidenceRing::state),
                listener,
                kmsg_lines,
                open_connections,
            });
        }
        if last {
            return Ok(index);
        }
    }
}

/// The watched port, kept in the report's target (`tcp port N`).
fn report_port(r: &Report) -> u16 {
    r.target
        .input
        .rsplit(' ')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

/// Builds the report of one port's window.
fn window_report(
    w: PortWindow,
    host: Option<HostWindow>,
    counters: &Result<Vec<CounterDelta>, String>,
    snaplen: u32,
    elapsed_s: f64,
) -> (Report, Option<PathBuf>) {
    let mut report = Report::new(
        netdoctor_report::ReportCommand::Watch,
        Target {
            input: format!("tcp port {}", w.port),
            address: None,
            protocol: None,
        },
    );
    let mut warnings = Vec::new();
    match &w.summary {
        Ok(s) => {
            warnings.extend(s.warnings.iter().cloned());
            report.checks.push(if s.warnings.is_empty() {
                Check::ok(netdoctor_report::CheckName::Capture)
            } else {
                Check::ok_with(netdoctor_report::CheckName::Capture, s.warnings.join("; "))
            });
        }
        Err(e) => report.checks.push(Check::failed(
            netdoctor_report::CheckName::Capture,
            e.to_string(),
        )),
    }
    warnings.extend(w.analysis.warnings.iter().cloned());
    if w.pcap_truncated {
        warnings.push(
            "the window's pcap reached its size limit; later packets were analyzed but not written"
                .into(),
        );
    }
    if let Some(e) = &w.pcap_error {
        warnings.push(format!("writing the window's pcap failed: {e}"));
    }
    match counters {
        Ok(changed) => {
            report
                .checks
                .push(Check::ok(netdoctor_report::CheckName::Counters));
            report.measurements.counters = Some(CountersSection {
                changed: changed.clone(),
            });
        }
        Err(e) => report.checks.push(Check::failed(
            netdoctor_report::CheckName::Counters,
            e.clone(),
        )),
    }
    let pcap_file = w.pcap.as_ref().map(|p| p.display().to_string());
    report.findings = w.analysis.findings;
    if let Some(h) = host {
        report.findings.extend(h.findings);
        netdoctor_core::finding::rank(&mut report.findings);
        report.checks.push(h.check);
    }
    report.measurements.capture = Some(CaptureSection {
        source: netdoctor_report::CaptureSource::Live,
        snaplen: Some(snaplen),
        pcap_file,
        stats: w.analysis.stats,
        exchanges: w.analysis.exchanges,
        warnings,
    });
    let exchanges = report
        .measurements
        .capture
        .as_ref()
        .map_or(0, |c| c.exchanges.count);
    report.decide(&netdoctor_core::verdict::VerdictInputs {
        exchanges,
        capture_present: true,
        ..Default::default()
    });
    report.elapsed_s = elapsed_s;
    (report, w.pcap)
}
