//! The live packet capture: opened before the load (it is capturing when `start` returns),
//! analyzed on its own thread while the load runs, so memory stays bounded by the open
//! connections; optionally written to a pcap file.

use crate::host::Capture;
use crate::observer::{Observer, Outcome, RunCtx};
use netdoctor_core::analyze::{Analysis, Analyzer, AnalyzerConfig};
use netdoctor_observe::SourceSummary;
use netdoctor_observe::live::LiveConfig;
use netdoctor_observe::pcapwrite::PcapWriter;
use netdoctor_report::{CaptureSection, Check};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

type Writer = PcapWriter<BufWriter<File>>;

/// What the capture thread hands back.
struct Captured {
    analysis: Analysis,
    summary: SourceSummary,
    /// Why the pcap file could not be (completely) written.
    pcap_error: Option<String>,
}

#[derive(Default)]
pub struct CaptureObserver {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Captured, String>>>,
    /// The pcap file could not be created (the capture still runs).
    pcap_error: Option<String>,
}

impl Observer for CaptureObserver {
    fn name(&self) -> &'static str {
        "capture"
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
            .open_capture(&cfg)
            .map_err(|e| Check::skipped("capture", e.to_string()))?;
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
        let port = ctx.addr.port();
        let thread = std::thread::Builder::new()
            .name("capture".into())
            .spawn(move || analyze(&mut *cap, writer, port, &stop))
            .map_err(|e| Check::failed("capture", format!("start the capture thread: {e}")))?;
        self.thread = Some(thread);
        Ok(())
    }

    fn finish(mut self: Box<Self>, ctx: &RunCtx<'_>, out: &mut Outcome) {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread.take() else {
            return;
        };
        let pcap = ctx.plan.capture.pcap.as_ref();
        match thread.join() {
            Ok(Ok(c)) => {
                out.checks.push(Check::ok("capture"));
                let pcap_error = self.pcap_error.take().or(c.pcap_error);
                if let Some(path) = pcap {
                    out.checks.push(match &pcap_error {
                        None => Check::ok_with("pcap", format!("written to {}", path.display())),
                        Some(e) => Check::failed("pcap", e.clone()),
                    });
                }
                let written = pcap.filter(|_| pcap_error.is_none()).cloned();
                out.measurements.capture = Some(section(&c.analysis, &c.summary, ctx, written));
                out.analysis = Some(c.analysis);
            }
            Ok(Err(e)) => out.checks.push(Check::failed("capture", e)),
            Err(_) => out
                .checks
                .push(Check::failed("capture", "the capture thread panicked")),
        }
    }
}

/// The capture thread: every packet into the analyzer (and the pcap file) until `stop`.
fn analyze(
    cap: &mut dyn Capture,
    mut writer: Option<Writer>,
    port: u16,
    stop: &AtomicBool,
) -> Result<Captured, String> {
    let mut analyzer = Analyzer::new(AnalyzerConfig {
        server_port: Some(port),
        ..Default::default()
    });
    let mut pcap_error: Option<String> = None;
    let summary = cap
        .run(stop, &mut |p| {
            analyzer.push(p);
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
    Ok(Captured {
        analysis: analyzer.finish(),
        summary,
        pcap_error,
    })
}

fn section(
    a: &Analysis,
    summary: &SourceSummary,
    ctx: &RunCtx<'_>,
    pcap_file: Option<PathBuf>,
) -> CaptureSection {
    let max = ctx.plan.capture.max_packets;
    let mut warnings = summary.warnings.clone();
    warnings.extend(a.warnings.iter().cloned());
    if summary.packets >= max {
        warnings.push(format!(
            "capture stopped after {max} packets; the rest of the load was not analyzed"
        ));
    }
    CaptureSection {
        source: "live",
        snaplen: Some(ctx.plan.capture.snaplen),
        pcap_file: pcap_file.map(|p| p.display().to_string()),
        stats: a.stats.clone(),
        exchanges: a.exchanges.clone(),
        warnings,
    }
}
