//! Findings from active probes (as opposed to packets): what a refused connection means.
//!
//! Kept for callers that build the finding directly; the analyzer path is
//! `Analyzer::observe(Observation::ConnectRefused { .. })` and the
//! [`server_not_listening`](crate::detect::server_not_listening) detector. To be removed once
//! `diagnose` feeds observations.

use crate::finding::Finding;

/// `server_not_listening`: SYNs to `addr` were answered with RST (or connect() was refused).
pub fn server_not_listening(addr: &str, syn_sent: u32, syn_refused: u32) -> Finding {
    crate::detect::server_not_listening::finding(addr, syn_sent, syn_refused)
}
