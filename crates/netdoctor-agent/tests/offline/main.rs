//! netdoctor-agent's tests that need no root and no lab: the deploy files, the exposition and
//! native histograms, OTLP export and the web config: one test binary
//! (one link instead of one per file); cargo runs their tests on parallel threads. A new file
//! here needs its `mod` line below.

#[path = "../common/mod.rs"]
mod common;

mod deploy;
mod exposition;
mod native_histogram;
mod otlp_export;
mod web_config;
