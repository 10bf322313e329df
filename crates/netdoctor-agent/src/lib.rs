//! netdoctor-agent: `netdoctor watch`, the per-node agent.
//!
//! - [`watch`]: repeated passive windows over a set of ports, each analyzed by the same core
//!   detectors as `diagnose` and `analyze`, with an evidence ring of problem windows on disk.
//! - [`metrics`]: the Prometheus exposition of the windows' findings, latency and counters
//!   (`prometheus-client`), served by [`server`] on `/metrics`; [`protobuf`] writes the same
//!   families in Prometheus's protobuf format, with the request latency as a [`native`]
//!   histogram, for scrapes that ask for it ([`accept`]).
//! - [`otlp`]: the same metrics, and findings as log records, pushed to an OpenTelemetry
//!   collector over OTLP/HTTP.
//!
//! The node is the unit: fleets are aggregated by Prometheus, Grafana or an OTel collector.
//! Deployment files (DaemonSet, scrape config, dashboard) live in `deploy/` at the repository
//! root and are checked by this crate's tests.

pub mod accept;
pub mod alerts;
pub mod histogram;
pub mod host;
pub mod labels;
pub mod listeners;
pub mod metrics;
pub mod native;
pub mod otlp;
pub mod pods;
pub mod podwatch;
pub mod procstat;
pub mod proto;
pub mod protobuf;
pub mod ring;
pub mod rings;
pub mod server;
mod sockopts;
pub mod summary;
pub mod text004;
pub mod watch;
pub mod webconfig;

pub use metrics::AgentMetrics;
pub use server::MetricsServer;
pub use watch::{WatchConfig, WatchError, WindowResult, watch};
