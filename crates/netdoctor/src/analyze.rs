//! `netdoctor analyze FILE`: the live path's detectors on a capture made elsewhere.

use crate::cli::AnalyzeArgs;
use crate::output::{Progress, write_report};
use netdoctor_core::analyze::{Analyzer, AnalyzerConfig};
use netdoctor_observe::PacketSource;
use netdoctor_observe::pcapfile::CaptureFile;
use netdoctor_report::{CaptureSection, Check, Report, Target};
use std::io::Write;
use std::ops::ControlFlow;
use std::time::Instant;

pub fn command(args: &AnalyzeArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    let report = analyze(args, &Progress::new())?;
    write_report(&report, args.json, out)?;
    Ok(report.exit_code())
}

/// Reads the whole file through the analyzer. A file that cannot be read as a capture is an
/// error; a truncated tail is a warning with the packets read so far analyzed.
pub fn analyze(args: &AnalyzeArgs, progress: &Progress) -> anyhow::Result<Report> {
    let started = Instant::now();
    let mut file = CaptureFile::open(&args.file)?;
    progress.stage(&format!("reading {}", args.file.display()));
    let mut analyzer = Analyzer::new(AnalyzerConfig {
        server_port: args.server_port,
        ..Default::default()
    });
    let mut last_tick = Instant::now();
    let summary = file.for_each_packet(&mut |p| {
        analyzer.push(p);
        if p.frame % 65_536 == 0 && last_tick.elapsed().as_millis() >= 250 {
            progress.count("read", p.frame);
            last_tick = Instant::now();
        }
        ControlFlow::Continue(())
    })?;
    progress.end_ticks();
    let analysis = analyzer.finish();

    let mut report = Report::new(
        "analyze",
        Target {
            input: args.file.display().to_string(),
            address: None,
        },
    );
    let mut warnings = summary.warnings.clone();
    warnings.extend(analysis.warnings.iter().cloned());
    report.checks.push(if summary.warnings.is_empty() {
        Check::ok("capture")
    } else {
        Check::ok_with("capture", summary.warnings.join("; "))
    });
    for stage in ["syn_probe", "http_probe", "load", "counters"] {
        report
            .checks
            .push(Check::skipped(stage, "offline analysis of a capture file"));
    }
    let conclusive = analysis.exchanges.count > 0 || analysis.stats.connections > 0;
    if analysis.stats.tcp_segments == 0 {
        report.checks.push(Check::failed(
            "tcp",
            format!("{} packets read, none of them TCP", summary.packets),
        ));
    }
    report.findings = analysis.findings.clone();
    report.measurements.capture = Some(CaptureSection {
        source: "file",
        snaplen: None,
        pcap_file: None,
        stats: analysis.stats,
        exchanges: analysis.exchanges,
        warnings,
    });
    report.conclude(conclusive);
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}
