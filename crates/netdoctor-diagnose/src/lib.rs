//! netdoctor-diagnose: the layered method as a library, apart from the CLI.
//!
//! ```text
//! DiagnosePlan ─► resolve ─► preflight ─► probes ─► observers start ─► load (observers tick)
//!                    │ a client or path failure stops here                          │
//!                    ▼                                                observers finish
//!                  Report ◄── verdict ◄── detectors ◄── observations, packets ◄─────┘
//! ```
//!
//! - [`plan`]: what a run will do, with the defaults the CLI and `demo` share.
//! - [`host`]: every OS source behind the [`Host`] trait ([`SystemHost`] is the machine).
//! - [`observer`] and [`observers`]: capture, counters, the server's socket options, all of one
//!   shape; adding one is a file and a line.
//! - [`route`]: the DNS checks of a target given by name (a name that does not resolve is a
//!   diagnosis); the trace of a routed target is the observer `observers::TraceObserver`.
//! - [`preflight`]: route, neighbour, connect, TLS verification and one request before any
//!   load; a failure that is the client's or the path's ends the run with its finding.
//! - `other_addrs`: a name with several addresses gets one connect() to each other one during
//!   the preflight; when the first failed, the stopping finding tells whether the others
//!   accept connections (a dead record beside live ones).
//! - `dead_record`: the first address is live but another is dead, refused or unreachable
//!   from here: `dns_dead_record`.
//! - `keepalive`: after a load that asked for keep-alive and got a connection per request, a
//!   short keep-alive probe measures what that costs (for `short_connections`).
//! - `lost_answer`: requests that timed out while the server's kernel resent its answer and
//!   none of it reached the client are the path's (side network), not the server's.
//! - `pmtu`: when the answers look lost on the path, a probe of which packet sizes get through
//!   names a path MTU black hole `mss_mtu_problem`.
//! - [`run()`]: the orchestration; an interrupt ends the load early and still reports.
//! - [`fake`]: a recorded host, so the orchestration is tested without root.

mod base_rtt;
mod dead_record;
pub mod fake;
pub mod host;
mod keepalive;
mod lost_answer;
pub mod observer;
pub mod observers;
mod other_addrs;
pub mod plan;
mod pmtu;
pub mod preflight;
mod qdisc;
pub mod route;
mod run;
mod syn_path;
mod verdict;

pub use host::{Capture, Host, SystemHost};
pub use plan::{CapturePlan, DiagnosePlan, LoadPlan, TargetSpec};
pub use run::{DiagnoseError, Progress, Silent, run};
