//! One port's capture thread (see the module docs of [`super`]): it keeps the port's rings and
//! its long-lived analyzer, cuts a window when the main thread asks (the flag, then the wake),
//! writes the window's pcap, resizes the rings between windows, and sends each window's
//! analysis back.

use super::Wake;
use crate::host::SynSeen;
use crate::ring::EvidenceRing;
use netdoctor_core::analyze::{Analysis, Analyzer, AnalyzerConfig, CaptureStats};
use netdoctor_core::{LinkType, RawPacket};
use netdoctor_observe::fanout::LiveRings;
use netdoctor_observe::live::LiveConfig;
use netdoctor_observe::pcapwrite::PcapWriter;
use netdoctor_observe::{ObserveError, SourceSummary};
use std::io::BufWriter;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Connections evicted in one window (idle or half-open) from which the freed heap is handed
/// back to the kernel at the window's end: a flood's state is megabytes; a trim costs about a
/// millisecond, so not after every window.
const TRIM_AFTER: u64 = 1000;

/// What a capture thread sends at the end of each window.
pub(super) struct PortWindow {
    pub(super) port: u16,
    pub(super) analysis: Analysis,
    pub(super) open_connections: usize,
    pub(super) summary: Result<SourceSummary, ObserveError>,
    pub(super) pcap: Option<PathBuf>,
    pub(super) pcap_truncated: bool,
    pub(super) pcap_error: Option<String>,
}

pub(super) struct PortCtx {
    pub(super) port: u16,
    pub(super) snaplen: u32,
    pub(super) ring: Option<EvidenceRing>,
    pub(super) pcap_limit: u64,
    pub(super) idle_timeout: Duration,
    pub(super) live: LiveConfig,
    /// The size of the port's ring(s) now, and how it changes.
    pub(super) ring_size: crate::rings::RingSize,
    /// The block size of every ring of the port (the start ring's): rings grow in blocks.
    pub(super) block: u32,
    pub(super) rings: crate::rings::RingPolicy,
    pub(super) window_stop: Arc<AtomicBool>,
    pub(super) wake: Option<Wake>,
    pub(super) shutdown: Arc<AtomicBool>,
    pub(super) tx: mpsc::Sender<PortWindow>,
    pub(super) syn_seen: Arc<SynSeen>,
}

/// Nanoseconds since the epoch (the clock of the capture's timestamps).
fn now_unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The window's share of the analyzer's cumulative statistics: counts are the difference to
/// the previous window's; the time span is the window's first to last packet.
pub fn window_stats(
    prev: &CaptureStats,
    now: &CaptureStats,
    first_ts_ns: Option<i64>,
) -> CaptureStats {
    let mut s = now.since(prev);
    if s.packets == 0 {
        s.first_ts_ns = None;
        s.last_ts_ns = None;
        s.duration_s = 0.0;
    } else {
        s.first_ts_ns = first_ts_ns.or(now.first_ts_ns);
        s.duration_s = match (s.first_ts_ns, s.last_ts_ns) {
            (Some(a), Some(b)) => (b - a).max(0) as f64 / 1e9,
            _ => 0.0,
        };
    }
    s
}

/// One port: capture windows until shutdown, one analyzer for the whole run (see the module
/// docs). At a window's end the capture thread takes the window from the analyzer (the
/// detectors' reports over the window's aggregates and a sweep of idle connections: no
/// per-connection work beyond the sweep), closes the window's pcap and returns to the ring.
pub(super) fn port_thread(mut cap: LiveRings, mut ctx: PortCtx) {
    // `SCHED_BATCH`: the same share of the CPU, but a wake-up to read the ring does not
    // preempt the watched server on its CPU (the agent should add nothing to its requests'
    // latency). No privilege needed; failing to set it changes nothing else.
    let _ = netdoctor_sys::affinity::set_current_thread_batch();
    let mut analyzer = Analyzer::new(AnalyzerConfig {
        server_port: Some(ctx.port),
        ..AnalyzerConfig::default()
    })
    .idle_timeout(ctx.idle_timeout);
    // The capture's drop count is cumulative over the socket's life.
    let mut drops_so_far = 0u64;
    let mut prev_stats = CaptureStats::default();
    let mut window = 0u64;
    loop {
        window += 1;
        let pcap_path = ctx.ring.as_ref().map(|r| r.current_pcap(ctx.port, window));
        let mut pcap_error = None;
        let mut writer = match &pcap_path {
            Some(p) => match std::fs::File::create(p)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    PcapWriter::new(BufWriter::new(f), LinkType::Raw, ctx.snaplen)
                        .map_err(|e| e.to_string())
                }) {
                Ok(w) => Some(w),
                Err(e) => {
                    pcap_error = Some(e);
                    None
                }
            },
            None => None,
        };
        let mut written = 0u64;
        let mut truncated = false;
        let mut first_ts: Option<i64> = None;
        let started = Instant::now();
        let mut on_packet = |p: &RawPacket<'_>| {
            first_ts.get_or_insert(p.ts_ns);
            ctx.syn_seen.note(p.data, ctx.port);
            analyzer.push(p);
            if let Some(w) = writer.as_mut() {
                let size = 16 + p.data.len() as u64;
                if written + size > ctx.pcap_limit {
                    truncated = true;
                } else if let Err(e) = w.write(p) {
                    pcap_error.get_or_insert(e.to_string());
                } else {
                    written += size;
                }
            }
            ControlFlow::Continue(())
        };
        let summary = cap.run_flow(&ctx.window_stop, &mut on_packet);
        ctx.window_stop.store(false, Ordering::SeqCst);
        let mut summary = summary;
        let mut window_drops = 0;
        if let Ok(s) = &mut summary {
            let drops = s.drops.saturating_sub(drops_so_far);
            ctx.syn_seen.set_unsure(drops > 0);
            window_drops = drops;
            drops_so_far = s.drops;
            let before = ctx.ring_size;
            let (more, size) = ctx.rings.next_plan(
                cap.rings(),
                &mut ctx.ring_size,
                s.packets,
                drops,
                s.ring_fill,
                started.elapsed(),
            );
            if more != cap.rings() || size != before.bytes {
                let blocks = (size / ctx.block as usize).max(4) as u32;
                match LiveRings::open_geometry(&ctx.live, (ctx.block, blocks), more) {
                    Ok(mut c) => {
                        // The old rings take no more packets and are read to their end into
                        // this window; the new ones, capturing since they opened, skip what
                        // the old ones already gave (see `LiveRings::hand_over`).
                        s.packets += cap.hand_over(&mut c, &mut on_packet);
                        // Drops between the window's statistics and the old rings' stop are
                        // this window's too (the new sockets count from zero).
                        window_drops += cap.drops().saturating_sub(s.drops);
                        s.warnings.push(format!(
                            "{} packets/s, {drops} dropped, ring at most {:.0} % full: the \
                             capture moves to {more} ring(s) of {} KiB (PACKET_FANOUT past one) \
                             from the next window",
                            (s.packets as f64 / started.elapsed().as_secs_f64().max(1e-3)) as u64,
                            s.ring_fill * 100.0,
                            size >> 10
                        ));
                        cap = c;
                        if let Some(w) = &ctx.wake {
                            cap.set_wake(w);
                        }
                        // The new sockets count their drops from zero.
                        drops_so_far = 0;
                        if size < before.bytes {
                            // The old ring's pages are unmapped; hand back what the window's
                            // analysis freed as well.
                            netdoctor_sys::memory::release_free_heap();
                        }
                    }
                    Err(e) => {
                        ctx.ring_size = before;
                        s.warnings
                            .push(format!("could not open {more} capture rings: {e}"))
                    }
                }
            }
        }
        analyzer.note_capture_drops(window_drops);
        let mut analysis = analyzer.take_window(now_unix_ns());
        let cumulative = std::mem::take(&mut analysis.stats);
        analysis.stats = window_stats(&prev_stats, &cumulative, first_ts);
        if analysis.stats.connections_evicted + analysis.stats.half_open_evicted >= TRIM_AFTER {
            netdoctor_sys::memory::release_free_heap();
        }
        prev_stats = cumulative;
        let mut pcap = None;
        if let Some(w) = writer {
            match w.finish() {
                Ok(()) => pcap = pcap_path,
                Err(e) => {
                    pcap_error.get_or_insert(e.to_string());
                }
            }
        }
        let sent = ctx.tx.send(PortWindow {
            port: ctx.port,
            analysis,
            open_connections: analyzer.open_connections(),
            summary,
            pcap,
            pcap_truncated: truncated,
            pcap_error,
        });
        if sent.is_err() || ctx.shutdown.load(Ordering::SeqCst) {
            return;
        }
    }
}
