//! `netdoctor analyze FILE`: the live path's detectors on a capture made elsewhere.
//!
//! FILE may be a pcap or pcapng file, gzip'd or not, a FIFO, `/dev/stdin` or `-`
//! (`tcpdump -w - | netdoctor analyze -`). With `--follow` a file still being written is read as
//! it grows until Ctrl-C or SIGTERM (a second one ends the process), `--follow-timeout` or
//! `--follow-idle`; then the report is printed as for a finished file. With `-j N` (default: the
//! available cores) the packets are read here and analyzed by N workers
//! ([`ShardedAnalyzer`]); the report is the same as with `-j 1`.

use crate::cli::AnalyzeArgs;
use crate::output::{Progress, write_report};
use crate::stop::StopOnSignals;
use netdoctor_core::RawPacket;
use netdoctor_core::analyze::order::{DEPTH, StampOrder, TimeOrder, backdated_after};
use netdoctor_core::analyze::shard::ShardedAnalyzer;
use netdoctor_core::analyze::{Analyzer, AnalyzerConfig};
use netdoctor_observe::PacketSource;
use netdoctor_observe::pcapfile::{Abort, CaptureFile, Follow, RUN_BYTES, TimeRuns};
use netdoctor_report::{
    CaptureSection, CaptureSource, Check, CheckName, Report, ReportCommand, Target,
};
use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub fn command(args: &AnalyzeArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let format = args.output.format().map_err(anyhow::Error::msg)?;
    let lang = args.output.lang().map_err(anyhow::Error::msg)?;
    let progress = Progress::new();
    let mut report = analyze(args, &progress)?;
    let slo_code = crate::output::judge_slo(&mut report, args.slo.as_ref());
    if let Some(path) = &args.html {
        crate::output::write_html(&report, lang, path)?;
        progress.stage(&format!("HTML report written to {}", path.display()));
    }
    write_report(&report, format, lang, out)?;
    Ok(slo_code.unwrap_or(report.exit_code()))
}

/// How a capture is read: in file order, its in-order runs merged by timestamp (with the
/// frames backdated), or through the reorder buffer.
enum Pass<'f> {
    /// Merged by timestamp while the record headers are walked (may stop: `None`).
    Walking(&'f CaptureFile),
    File(&'f mut CaptureFile),
    Runs(TimeRuns<'f>, u64),
    Reorder(&'f mut CaptureFile),
}

/// One analyzer on this thread, or `-j N` workers fed by this thread.
enum Engine {
    One(Box<Analyzer>),
    Sharded(Box<ShardedAnalyzer>),
}

/// Reads the whole capture through the analyzer. Input that cannot be read as a capture is an
/// error; a truncated tail is a warning with the packets read so far analyzed.
pub fn analyze(args: &AnalyzeArgs, progress: &Progress) -> anyhow::Result<Report> {
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let (follow, _signals) = if args.follow {
        let signals = StopOnSignals::new(&stop, &[libc::SIGINT, libc::SIGTERM]);
        let follow = Follow {
            stop: Arc::clone(&stop),
            timeout: args.follow_timeout,
            idle: args.follow_idle,
            poll: Duration::from_millis(100),
        };
        (Some(follow), Some(signals))
    } else {
        (None, None)
    };
    let mut file = CaptureFile::open_with(&args.file, follow)?;
    let shown = if args.file.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        args.file.display().to_string()
    };
    progress.stage(&format!(
        "reading {shown}{}{}",
        if file.is_gzip() { " (gzip)" } else { "" },
        if args.follow {
            " as it grows (Ctrl-C to stop and report)"
        } else {
            ""
        }
    ));
    let cfg = AnalyzerConfig {
        server_port: args.server_port,
        ..Default::default()
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| default_jobs(&args.file, args.follow));
    // A regular file is read in timestamp order when it holds a backdated frame
    // (netdoctor_core::analyze::order); a pipe or a followed file keeps file order and its
    // warning. A mapped classic pcap is merged by timestamp while its record headers are walked a
    // chunk ahead on the reader's thread (`merge_walking`), which finds its in-order runs (one for
    // a file in order) as it goes; the rare file that stops that merge (a run that starts before
    // frames already analyzed, as `mergecap -a` writes, more than MAX_RUNS runs, a record cut
    // short in a file out of order) is analyzed again from the start with its headers walked first
    // (`time_runs`: in `jobs` parts at once on a large file) and its runs merged (`TimeRuns`, up
    // to MAX_RUNS), or as below. Any other uncompressed file's stamps are walked first
    // ([`first_backdated`]) and a file out of order goes through TimeOrder; a gzip'd one (a walk
    // would decompress it twice) is analyzed in file order until its first backdated frame and
    // then again. An uncompressed file is so analyzed once.
    let backdated_note = |frame: u64| {
        progress.stage(&format!(
            "frame {frame} is stamped before the frame ahead of it: reading {shown} in \
             timestamp order"
        ));
    };
    let rereads = rereadable(&args.file, args.follow);
    let scanned = rereads && !file.is_gzip();
    let read = |pass: Pass<'_>| {
        // --dump-flags lists flags in frame order from one analyzer: it stays on one thread.
        let mut analyzer = if jobs > 1 && args.dump_flags.is_none() {
            // Frames read in place from the map go to the workers as offsets into it; the
            // reader then drops pages only behind the workers.
            let shared = match &pass {
                Pass::Walking(file) => file.share_map(),
                Pass::File(file) => file.share_map(),
                Pass::Runs(runs, _) => Some(runs.share_map()),
                Pass::Reorder(_) => None,
            };
            let sharded = match shared {
                Some(m) => {
                    let hold = m.hold;
                    ShardedAnalyzer::with_region(
                        cfg.clone(),
                        jobs,
                        m.bytes,
                        Box::new(move |n| hold.done_through(n)),
                        Some(netdoctor_sys::mmap::warm_lines),
                    )
                }
                None => ShardedAnalyzer::new(cfg.clone(), jobs),
            };
            // Threads balanced by the CPU time they use, not the time that passes.
            let sharded = sharded.timed_by(netdoctor_sys::rusage::thread_cpu_time);
            // The reader that merges runs or reorders frames takes fewer connections.
            Engine::Sharded(Box::new(match &pass {
                Pass::Walking(_) => sharded.walking_and_merging(),
                Pass::File(_) => sharded,
                Pass::Runs(..) | Pass::Reorder(_) => sharded.merging_by_time(),
            }))
        } else if args.dump_flags.is_some() {
            Engine::One(Box::new(Analyzer::new(cfg.clone()).record_flags()))
        } else {
            Engine::One(Box::new(Analyzer::new(cfg.clone())))
        };
        let mut last_tick = Instant::now();
        // Frames handed on (merged by timestamp, frame numbers do not count up).
        let mut fed = 0u64;
        let mut feed = |p: &RawPacket<'_>| {
            match &mut analyzer {
                Engine::One(a) => a.push(p),
                Engine::Sharded(a) => a.push(p),
            }
            fed += 1;
            if fed.is_multiple_of(65_536) && last_tick.elapsed().as_millis() >= 250 {
                progress.count("read", fed);
                last_tick = Instant::now();
            }
        };
        // The frames stamped before the frame ahead of them, in file order.
        let mut stamps = StampOrder::new();
        let mut backdated_at = None;
        let mut merged = None;
        let mut sorted = 0;
        let summary = match pass {
            Pass::Walking(file) => {
                let walked = file.merge_walking(MAX_RUNS, &backdated_after, &mut feed);
                match walked {
                    Some(Ok(w)) => {
                        if let Some(frame) = w.first_backdated {
                            backdated_note(frame);
                            progress
                                .stage(&format!("{} runs in timestamp order: merged them", w.runs));
                        }
                        merged = Some((w.runs, w.moved));
                        sorted = w.backdated;
                        w.summary
                    }
                    stopped => {
                        progress.end_ticks();
                        if let Engine::Sharded(a) = analyzer {
                            a.abandon();
                        }
                        if let Some(Err(why)) = stopped {
                            progress.stage(&format!(
                                "{}: walking {shown} before the analysis",
                                stop_reason(why)
                            ));
                        }
                        return Ok(None);
                    }
                }
            }
            Pass::Runs(runs, backdated) => {
                progress.stage(&format!(
                    "{} runs in timestamp order: merging them",
                    runs.len()
                ));
                let (summary, moved) = runs.for_each(&mut feed);
                merged = Some((runs.len(), moved));
                sorted = backdated;
                summary
            }
            Pass::Reorder(file) => {
                let mut order = TimeOrder::new();
                let summary = file.for_each_packet(&mut |p| {
                    stamps.push(p.ts_ns);
                    order.push(p, &mut feed);
                    ControlFlow::Continue(())
                })?;
                order.finish(&mut feed);
                sorted = stamps.backdated();
                summary
            }
            Pass::File(file) => file.for_each_packet(&mut |p| {
                if rereads && !scanned && stamps.push(p.ts_ns) {
                    backdated_at = Some(p.frame);
                    return ControlFlow::Break(());
                }
                feed(p);
                ControlFlow::Continue(())
            })?,
        };
        progress.end_ticks();
        let analysis = match analyzer {
            Engine::One(mut a) => {
                a.note_sorted_frames(sorted);
                if let Some(path) = &args.dump_flags {
                    let mut flags = a.take_flags();
                    flags.sort_by_key(|(frame, _)| *frame);
                    dump_flags(path, &flags)?;
                }
                a.finish()
            }
            Engine::Sharded(mut a) => {
                a.note_sorted_frames(sorted);
                a.finish()
            }
        };
        anyhow::Ok(Some((summary, analysis, backdated_at, merged)))
    };
    // Read by the full walk first when the merge during the walk stops (or the file is not
    // mapped).
    let walked = if scanned && file.is_mapped() {
        read(Pass::Walking(&file))?
    } else {
        None
    };
    let (summary, analysis, merged) = if let Some((summary, analysis, _, merged)) = walked {
        (summary, analysis, merged)
    } else if scanned {
        let reopen = || CaptureFile::open_with(&args.file, None);
        // Opened again: the stopped merge's hold on the map is not this reading's.
        let reopened;
        let walk = if file.is_mapped() {
            reopened = reopen()?;
            &reopened
        } else {
            &file
        };
        let (summary, analysis, _, merged) = match walk.time_runs(MAX_RUNS, jobs, &backdated_after)
        {
            Some((runs, backdated)) if backdated > 0 => {
                if let Some(frame) = runs.first_backdated() {
                    backdated_note(frame);
                }
                whole(read(Pass::Runs(runs, backdated))?)?
            }
            Some(_) => whole(read(Pass::File(&mut reopen()?))?)?,
            None => match first_backdated(&mut reopen()?) {
                Some(frame) => {
                    backdated_note(frame);
                    whole(read(Pass::Reorder(&mut reopen()?))?)?
                }
                None => whole(read(Pass::File(&mut reopen()?))?)?,
            },
        };
        (summary, analysis, merged)
    } else {
        let (mut summary, mut analysis, backdated_at, mut merged) =
            whole(read(Pass::File(&mut file))?)?;
        if let Some(frame) = backdated_at {
            progress.stage(&format!(
                "frame {frame} is stamped before the frame ahead of it: reading {shown} again \
                 in timestamp order"
            ));
            let mut again = CaptureFile::open_with(&args.file, None)?;
            (summary, analysis, _, merged) = whole(read(Pass::Reorder(&mut again))?)?;
        }
        (summary, analysis, merged)
    };

    let mut report = Report::new(
        ReportCommand::Analyze,
        Target {
            input: args.file.display().to_string(),
            address: None,
            protocol: None,
        },
    );
    let mut warnings = summary.warnings.clone();
    warnings.extend(analysis.warnings.iter().cloned());
    let mut notes = summary.warnings.clone();
    if let Some(note) = merged.and_then(|(runs, moved)| appended_note(runs, moved)) {
        notes.push(note);
    }
    if let Some(end) = file.follow_end() {
        notes.push(format!("followed the file until {end}"));
    }
    report.checks.push(if notes.is_empty() {
        Check::ok(CheckName::Capture)
    } else {
        Check::ok_with(CheckName::Capture, notes.join("; "))
    });
    for stage in [
        CheckName::SynProbe,
        CheckName::HttpProbe,
        CheckName::Load,
        CheckName::Counters,
    ] {
        report
            .checks
            .push(Check::skipped(stage, "offline analysis of a capture file"));
    }
    let inputs = analysis.verdict_inputs();
    if analysis.stats.tcp_segments == 0 {
        report.checks.push(Check::failed(
            CheckName::Tcp,
            format!("{} packets read, none of them TCP", summary.packets),
        ));
    }
    report.findings = analysis.findings.clone();
    report.measurements.capture = Some(CaptureSection {
        source: CaptureSource::File,
        snaplen: None,
        pcap_file: None,
        stats: analysis.stats,
        exchanges: analysis.exchanges,
        warnings,
    });
    report.decide(&inputs);
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// A pass that is not [`Pass::Walking`] never stops before the end of the file.
fn whole<T>(pass: Option<T>) -> anyhow::Result<T> {
    pass.ok_or_else(|| anyhow::anyhow!("a pass over the capture stopped before its end"))
}

/// Why the merge during the walk stopped, for the progress line.
fn stop_reason(why: Abort) -> &'static str {
    match why {
        Abort::Late => "frames far out of time order (captures appended?)",
        Abort::Runs => "too many runs of frames in time order",
        Abort::Lead => "runs of frames in time order far apart",
        Abort::Odd => "an odd record or frames out of order in a file cut short",
    }
}

/// The first frame of `file` stamped before the frame ahead of it (as
/// [`StampOrder`] judges), reading stamps only. A file that cannot be read to there gives
/// `None`: the analysis reads it in file order and reports what it finds.
///
/// For a file the mapped walk (`CaptureFile::time_runs`) does not take (pcapng, a record cut
/// short or too long, too many runs). The walk costs ~4 % of an analysis pass
/// (bench/README.md), and spares the pass a file with a late backdated frame would otherwise
/// make in file order up to it and throw away.
fn first_backdated(file: &mut CaptureFile) -> Option<u64> {
    let mut stamps = StampOrder::new();
    let mut at = None;
    file.for_each_packet(&mut |p| {
        if stamps.push(p.ts_ns) {
            at = Some(p.frame);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    })
    .ok()?;
    at
}

/// Runs of frames in timestamp order a file read merged by timestamp may have
/// ([`netdoctor_observe::pcapfile::TimeRuns`]): [`RUN_BYTES`] each, 16 MiB for all. A file
/// with more (every other frame backdated) goes through the reorder buffer.
const MAX_RUNS: usize = (16 << 20) / RUN_BYTES;

/// The capture check's line for a file read merged by timestamp whose frames moved further
/// than a reorder buffer mends (`None` for a multi-queue capture's jitter): what it looks like
/// and what was done, so a slow or surprising reading has its reason in the report.
fn appended_note(runs: usize, moved: u64) -> Option<String> {
    (moved > DEPTH as u64).then(|| {
        format!(
            "the file is {runs} runs of frames in time order that overlap (captures appended \
             one after another, as `mergecap -a` writes): analyzed merged by timestamp, a frame \
             moved up to {moved} places"
        )
    })
}

/// A regular file read once to its end (not standard input, a FIFO or a followed file).
fn rereadable(path: &std::path::Path, follow: bool) -> bool {
    !follow && path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Capture bytes per worker below which another worker does not pay: starting the threads,
/// routing and replaying cost more than a few MB of packets take on one core (measured in
/// bench/README.md).
pub const BYTES_PER_WORKER: u64 = 16 << 20;

/// `-j` when not given: the available cores, but one worker per [`BYTES_PER_WORKER`] of a
/// regular file at most (a small capture stays on one thread); the size of a pipe or of a file
/// followed as it grows is unknown, so they get the cores. A gzip'd file counts its compressed
/// size (a lower bound).
pub fn default_jobs(path: &std::path::Path, follow: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let size = (path.as_os_str() != "-" && !follow)
        .then(|| std::fs::metadata(path).ok())
        .flatten()
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len());
    match size {
        Some(bytes) => {
            let fit = usize::try_from(bytes / BYTES_PER_WORKER).unwrap_or(usize::MAX);
            cores.min(fit.max(1))
        }
        None => cores,
    }
}

/// Writes `frame<TAB>flag,flag` lines (`--dump-flags`).
fn dump_flags(
    path: &std::path::Path,
    flags: &[(u64, netdoctor_core::analyze::SegFlags)],
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let f = std::fs::File::create(path)
        .with_context(|| format!("--dump-flags: cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    for (frame, fl) in flags {
        writeln!(w, "{frame}\t{fl}")?;
    }
    w.flush()
        .with_context(|| format!("--dump-flags: cannot write {}", path.display()))?;
    Ok(())
}
