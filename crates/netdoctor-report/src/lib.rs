//! netdoctor-report: one sink per output format.
//!
//! [`model::Report`] is the JSON contract (`netdoctor.report/v1`); [`json`] writes it as JSON and
//! [`terminal`] writes it for people. Sinks take any `Write`, so tests render into buffers.

pub mod html;
pub mod json;
pub mod model;
pub mod terminal;

pub use model::{
    CaptureSection, Check, CheckStatus, CountersSection, Measurements, ProbeSection, Report,
    SCHEMA_ID, SCHEMA_JSON, Target,
};
