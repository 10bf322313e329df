//! netdoctor-report: one sink per output format.
//!
//! [`model::Report`] is the JSON contract (`netdoctor.report/v1`) and reads back from its JSON.
//! Every output format is a [`Sink`] ([`TerminalSink`], [`JsonSink`]) chosen by [`Format`]; sinks
//! take any `Write`, so tests render into buffers. [`load`] holds the results of `netdoctor load`
//! and `netdoctor connect` ([`LoadReport`], [`ConnectReport`]), which the same sinks write.
//! [`compare`] compares two reports (`netdoctor.compare/v1`) and renders the comparison.
//! [`slo`] judges a report against service-level objectives (`--slo`).

pub mod compare;
pub mod html;
pub mod i18n;
pub mod json;
pub mod load;
pub mod model;
pub mod sink;
pub mod slo;
pub mod terminal;

pub use compare::{
    COMPARE_SCHEMA_ID, COMPARE_SCHEMA_JSON, Change, Compared, Comparison, OfferedRate, Origin,
};
pub use i18n::Lang;
pub use load::{ConnectReport, LoadReport};
pub use model::{
    CaptureSection, CaptureSource, Check, CheckName, CheckStatus, CountersSection, Measurements,
    ProbeSection, Report, ReportCommand, SCHEMA_ID, SCHEMA_JSON, Target, TargetProtocol,
};
pub use sink::{Format, JsonSink, Sink, TerminalSink};
pub use slo::{Slo, SloError, SloReport, SloResult};
