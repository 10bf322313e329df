//! Sinks of one shape: each output format is a [`Sink`] that writes one result to any `Write`.
//!
//! A sink is implemented once per result type it can show: [`Report`] (diagnose, analyze) and the
//! load engine's own results ([`LoadReport`], [`ConnectReport`]). The binary picks the sink with
//! [`Format`], which `--format` (and its `--json` shorthand) selects on every command. Adding a
//! format is one new sink type, one [`Format`] variant and its name in [`Format::NAMES`].

use crate::load::{ConnectReport, LoadReport};
use crate::model::Report;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

/// Writes one result of type `T` in one output format.
pub trait Sink<T: ?Sized = Report> {
    fn write(&self, item: &T, out: &mut dyn Write) -> io::Result<()>;
}

/// The report for people: colour always written (the binary's output stream strips it when
/// stdout is not a terminal or `NO_COLOR` is set).
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalSink;

/// Machine-readable JSON (`netdoctor.report/v1`, `netdoctor.load/v1`, `netdoctor.connect/v1`).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonSink;

impl Sink<Report> for TerminalSink {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        crate::terminal::render(report, out)
    }
}

impl Sink<Report> for JsonSink {
    fn write(&self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        crate::json::render(report, out)
    }
}

impl Sink<LoadReport> for TerminalSink {
    fn write(&self, r: &LoadReport, out: &mut dyn Write) -> io::Result<()> {
        crate::load::write_load_text(r, out)
    }
}

impl Sink<LoadReport> for JsonSink {
    fn write(&self, r: &LoadReport, out: &mut dyn Write) -> io::Result<()> {
        crate::json::write_pretty(&r.json_view(), out)
    }
}

impl Sink<ConnectReport> for TerminalSink {
    fn write(&self, r: &ConnectReport, out: &mut dyn Write) -> io::Result<()> {
        crate::load::write_connect_text(r, out)
    }
}

impl Sink<ConnectReport> for JsonSink {
    fn write(&self, r: &ConnectReport, out: &mut dyn Write) -> io::Result<()> {
        crate::json::write_pretty(&r.json_view(), out)
    }
}

/// An output format, as chosen by `--format NAME` (`--json` is `--format json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Terminal,
    Json,
}

impl Format {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [Format; 2] = [Format::Terminal, Format::Json];
    /// The names `--format` accepts.
    pub const NAMES: [&'static str; 2] = ["terminal", "json"];

    pub fn name(self) -> &'static str {
        match self {
            Format::Terminal => "terminal",
            Format::Json => "json",
        }
    }

    /// Writes `item` with this format's sink and flushes `out`.
    pub fn write<T: ?Sized>(self, item: &T, out: &mut dyn Write) -> io::Result<()>
    where
        TerminalSink: Sink<T>,
        JsonSink: Sink<T>,
    {
        match self {
            Format::Terminal => TerminalSink.write(item, out),
            Format::Json => JsonSink.write(item, out),
        }?;
        out.flush()
    }
}

impl Format {
    /// Writes a [`Report`] with this format's sink in `lang` and flushes `out`. The words of
    /// the terminal report follow `lang`; the JSON is the same in every language (its keys,
    /// ids and values are the contract; only people-facing sinks are translated).
    pub fn write_report(
        self,
        report: &Report,
        lang: crate::i18n::Lang,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        match self {
            Format::Terminal => crate::terminal::render_in(report, lang, out),
            Format::Json => JsonSink.write(report, out),
        }?;
        out.flush()
    }
}

impl Format {
    /// Writes a [`Comparison`](crate::compare::Comparison) with this format's sink in `lang`
    /// and flushes `out` (the JSON is the same in every language, as for a report).
    pub fn write_comparison(
        self,
        c: &crate::compare::Comparison,
        lang: crate::i18n::Lang,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        match self {
            Format::Terminal => crate::compare::terminal::render_in(c, lang, out),
            Format::Json => JsonSink.write(c, out),
        }?;
        out.flush()
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown format '{s}' (one of: {})",
                    Format::NAMES.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for (f, name) in Format::ALL.into_iter().zip(Format::NAMES) {
            assert_eq!(f.name(), name);
            assert_eq!(name.parse::<Format>(), Ok(f));
        }
        assert!(
            "html5"
                .parse::<Format>()
                .unwrap_err()
                .contains("terminal, json")
        );
    }

    /// A writer that fails like a closed pipe.
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_stays_a_broken_pipe_in_every_format() {
        let report = Report::new(
            crate::ReportCommand::Analyze,
            crate::Target {
                input: "x.pcap".into(),
                address: None,
                protocol: None,
            },
        );
        for f in Format::ALL {
            let e = f.write(&report, &mut Closed).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::BrokenPipe, "{f}");
        }
    }
}
