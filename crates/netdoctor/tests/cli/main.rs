//! The netdoctor binary's tests that need no lab: usage and bad input, the committed captures
//! and the corpus through `netdoctor analyze`, completions and man pages, jobs, MCP, SLO and
//! watch arguments, and a few on servers of their own on ephemeral loopback ports. One test
//! binary (one link instead of one per file); cargo runs their tests on parallel threads. The
//! live tests (labs, the lab name nd-demo, the fixed ports) are the `live` binary beside this
//! folder, one file at a time. A new file here needs its `mod` line below.

#[path = "../common/mod.rs"]
mod common;

mod analyze_captures;
mod analyze_protocols;
mod analyze_streams;
mod appended;
mod bad_input;
mod cli_usage;
mod client_abort;
mod completions_man;
mod corpus;
mod dns_capture;
mod http_errors;
mod jobs;
mod late_dsack;
mod mcp_session;
mod peer_close;
mod realworld_corpus;
mod route_cli;
mod silent_peer;
mod slo;
mod tls_setup;
mod watch_cli;
