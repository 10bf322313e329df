//! Writing results and progress: results to stdout through the chosen format's sink, progress
//! to stderr.

use netdoctor_report::{Format, Lang, Report};
use std::io::{self, IsTerminal, Write};
use std::time::Duration;

/// Writes a report with the sink of `format`, its words in `lang`.
pub fn write_report(
    report: &Report,
    format: Format,
    lang: Lang,
    out: &mut dyn Write,
) -> io::Result<()> {
    format.write_report(report, lang, out)
}

/// Judges `--slo` on the report (the result goes into the report, so every sink shows it);
/// the exit code it asks for, `None` without objectives.
pub fn judge_slo(report: &mut Report, slo: Option<&netdoctor_report::Slo>) -> Option<i32> {
    let judged = slo?.evaluate(report);
    let code = judged.result.exit_code();
    report.slo = Some(judged);
    Some(code)
}

/// Writes the report as an HTML page to `path` (`--html FILE`); the error names the file.
pub fn write_html(report: &Report, lang: Lang, path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let file = std::fs::File::create(path)
        .with_context(|| format!("create HTML report {}", path.display()))?;
    let mut w = io::BufWriter::new(file);
    netdoctor_report::html::render_in(report, lang, &mut w)
        .and_then(|()| w.flush())
        .with_context(|| format!("write HTML report {}", path.display()))
}

/// True when the error (or a cause) is a closed stdout: the reader went away, end quietly.
/// Also when the I/O error sits inside a JSON serializer's error.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(io::ErrorKind::BrokenPipe)
    })
}

/// Progress on stderr: one line per stage; a live-updating line while loading when stderr is a
/// terminal. Silent when `NETDOCTOR_QUIET` is set (tests).
#[derive(Clone)]
pub struct Progress {
    enabled: bool,
    live: bool,
    /// Whole seconds of a passive window last reported on a non-terminal stderr.
    watch_reported: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// On a stderr that is not a terminal, a passive window says how far it is this often.
const WATCH_LINE_EVERY_S: u64 = 5;

impl Progress {
    pub fn new() -> Progress {
        let enabled = std::env::var_os("NETDOCTOR_QUIET").is_none();
        Progress {
            enabled,
            live: enabled && io::stderr().is_terminal(),
            watch_reported: Default::default(),
        }
    }

    /// How far a passive window is: a live line on a terminal, else a line every
    /// [`WATCH_LINE_EVERY_S`] seconds.
    pub fn watch_tick(&self, elapsed: Duration, total: Duration, exchanges: Option<u64>) {
        if !self.enabled {
            return;
        }
        let seen = exchanges
            .map(|n| {
                format!(
                    "  {} exchanges seen",
                    netdoctor_report::terminal::thousands(n)
                )
            })
            .unwrap_or_default();
        let line = format!(
            "watching {:>4.1}/{:.0}s{seen}",
            elapsed.as_secs_f64(),
            total.as_secs_f64()
        );
        if self.live {
            let _ = write!(io::stderr(), "\r\x1b[2K  {line}");
            return;
        }
        let whole = elapsed.as_secs();
        let step = whole / WATCH_LINE_EVERY_S;
        use std::sync::atomic::Ordering;
        if step > 0 && self.watch_reported.swap(step, Ordering::Relaxed) != step {
            let _ = writeln!(io::stderr(), "netdoctor: {line}");
        }
    }

    pub fn stage(&self, msg: &str) {
        if self.enabled {
            let _ = writeln!(io::stderr(), "netdoctor: {msg}");
        }
    }

    /// A live line (`\r`-rewritten) on a terminal; nothing otherwise.
    pub fn tick(&self, elapsed: Duration, total: Duration, requests: u64, errors: u64) {
        if self.live {
            let _ = write!(
                io::stderr(),
                "\r\x1b[2K  load {:>4.1}/{:.0}s  {} requests  {} errors",
                elapsed.as_secs_f64(),
                total.as_secs_f64(),
                netdoctor_report::terminal::thousands(requests),
                errors
            );
        }
    }

    /// A live `label: N packets` line (`\r`-rewritten) on a terminal; nothing otherwise.
    pub fn count(&self, label: &str, packets: u64) {
        if self.live {
            let _ = write!(
                io::stderr(),
                "\r\x1b[2K  {label}: {} packets",
                netdoctor_report::terminal::thousands(packets)
            );
        }
    }

    /// Ends a live line.
    pub fn end_ticks(&self) {
        if self.live {
            let _ = write!(io::stderr(), "\r\x1b[2K");
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
