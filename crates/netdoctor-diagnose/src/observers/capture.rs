//! The live packet capture: opened before the load (it is capturing when `start` returns),
//! analyzed on its own thread while the load runs, so memory stays bounded by the open
//! connections; optionally written to a pcap file. The analyzer comes back unfinished: the
//! other observers' observations join the packets before the detectors conclude.

use crate::host::Capture;
use crate::observer::{Captured, Observer, Outcome, RunCtx};
use netdoctor_core::analyze::{Analyzer, AnalyzerConfig};
use netdoctor_observe::SourceSummary;
use netdoctor_observe::live::LiveConfig;
use netdoctor_observe::pcapwrite::PcapWriter;
use netdoctor_report::{Check, CheckName};
use std::fs::File;
use std::io::BufWriter;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

type Writer = PcapWriter<BufWriter<File>>;

/// What the capture thread hands back.
struct Done {
    analyzer: Analyzer,
    summary: SourceSummary,
    /// Why the pcap file could not be (completely) written.
    pcap_error: Option<String>,
}

#[derive(Default)]
pub struct CaptureObserver {
    stop: Arc<AtomicBool>,
    /// Completed exchanges so far, updated by the capture thread (progress of a passive run).
    exchanges: Arc<AtomicU64>,
    thread: Option<JoinHandle<Result<Done, String>>>,
    /// The pcap file could not be created (the capture still runs).
    pcap_error: Option<String>,
}

impl Observer for CaptureObserver {
    fn name(&self) -> CheckName {
        CheckName::Capture
    }

    fn start(&mut self, ctx: &RunCtx<'_>) -> Result<(), Check> {
        let plan = &ctx.plan.capture;
        let cfg = LiveConfig {
            port: ctx.addr.port(),
            snaplen: plan.snaplen,
            max_packets: Some(plan.max_packets),
            interface: None,
        };
        let mut cap = ctx
            .host
            .open_capture(&cfg, rings_for(ctx.plan))
            .map_err(|e| Check::skipped(CheckName::Capture, e.to_string()))?;
        let writer = match &plan.pcap {
            Some(path) => match PcapWriter::create(path, cap.link_type(), plan.snaplen) {
                Ok(w) => Some(w),
                Err(e) => {
                    self.pcap_error = Some(e.to_string());
                    None
                }
            },
            None => None,
        };
        let stop = Arc::clone(&self.stop);
        let seen = Arc::clone(&self.exchanges);
        let analyzer = Analyzer::new(AnalyzerConfig {
            server_port: Some(ctx.addr.port()),
            // Connections that began before the capture (a passive window) are oriented by
            // this namespace's listening ports; without them, by the target port alone.
            server_ports: ctx.host.listening_ports().unwrap_or_default(),
        });
        let thread = std::thread::Builder::new()
            .name("capture".into())
            .spawn(move || analyze(&mut *cap, writer, analyzer, &stop, &seen))
            .map_err(|e| {
                Check::failed(CheckName::Capture, format!("start the capture thread: {e}"))
            })?;
        self.thread = Some(thread);
        Ok(())
    }

    fn exchanges_seen(&self) -> Option<u64> {
        self.thread
            .is_some()
            .then(|| self.exchanges.load(Ordering::Relaxed))
    }

    fn finish(mut self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome) {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread.take() else {
            return;
        };
        let pcap = ctx.plan.capture.pcap.as_ref();
        match thread.join() {
            Ok(Ok(d)) => {
                out.checks.push(match &ctx.plan.capture.snaplen_note {
                    Some(note) => Check::ok_with(CheckName::Capture, note.clone()),
                    None => Check::ok(CheckName::Capture),
                });
                let pcap_error = self.pcap_error.take().or(d.pcap_error);
                if let Some(path) = pcap {
                    out.checks.push(match &pcap_error {
                        None => Check::ok_with(
                            CheckName::Pcap,
                            format!("written to {}", path.display()),
                        ),
                        Some(e) => Check::failed(CheckName::Pcap, e.clone()),
                    });
                }
                out.capture = Some(Captured {
                    analyzer: d.analyzer,
                    summary: d.summary,
                    pcap_file: pcap.filter(|_| pcap_error.is_none()).cloned(),
                });
            }
            Ok(Err(e)) => out.checks.push(Check::failed(CheckName::Capture, e)),
            Err(_) => out.checks.push(Check::failed(
                CheckName::Capture,
                "the capture thread panicked",
            )),
        }
    }
}

/// Closed-loop loads from this many connections, or constant rates from this many requests/s,
/// can outrun one capture ring (several packets per request; measured with
/// bench/watch-rings.sh): the capture then fans out over one ring per core.
const FANOUT_CONNECTIONS: usize = 64;
const FANOUT_RATE: f64 = 20_000.0;

/// Rings for the run: one per core when the load can outrun one ring, else one (a passive
/// window, a small load: one ring's memory).
fn rings_for(plan: &crate::plan::DiagnosePlan) -> usize {
    let load = &plan.load;
    let heavy = !plan.passive
        && match load.rate {
            Some(r) => r >= FANOUT_RATE,
            None => load.connections >= FANOUT_CONNECTIONS,
        };
    if heavy {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    }
}

/// The capture thread: every packet into the analyzer (and the pcap file) until `stop`.
fn analyze(
    cap: &mut dyn Capture,
    mut writer: Option<Writer>,
    mut analyzer: Analyzer,
    stop: &AtomicBool,
    seen: &AtomicU64,
) -> Result<Done, String> {
    let mut pcap_error: Option<String> = None;
    let summary = cap
        .run(stop, &mut |p| {
            analyzer.push(p);
            seen.store(analyzer.exchanges(), Ordering::Relaxed);
            if let Some(w) = writer.as_mut()
                && let Err(e) = w.write(p)
            {
                pcap_error = Some(e.to_string());
                writer = None;
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(w) = writer
        && let Err(e) = w.finish()
    {
        pcap_error.get_or_insert(e.to_string());
    }
    analyzer.note_capture_drops(summary.drops);
    Ok(Done {
        analyzer,
        summary,
        pcap_error,
    })
}
