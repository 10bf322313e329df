//! The reference lab: reproduces netdoctor's reference case locally with real nginx.
//!
//! `Lab::start` builds two network namespaces, `<name>-srv` and `<name>-cli`, joined by a veth
//! pair (server 10.213.0.1/24, client 10.213.0.2/24, loopback up in both), and starts Debian's
//! nginx in the server namespace with two server blocks serving nginx's default 615-byte page:
//! port 8080 with `tcp_nodelay on;` and port 8081 with `tcp_nodelay off;`. From the client
//! namespace, `wrk -c 100` against :8081 shows the Nagle / delayed-ACK stall (p50 ≈ 40 ms) and
//! :8080 does not (p50 ≈ 1–2 ms). Measured on veth: on ≈ 40–55k req/s, p50 1.4–2 ms; off ≈ 2.2k
//! req/s, p50 44 ms. nginx runs with `tcp_nopush off` on purpose: with Debian's packaged
//! `tcp_nopush on`, TCP_CORK merges headers and body into one segment and the stall disappears
//! (see the `nginx` module). No offload changes (ethtool) were needed.
//!
//! Everything is created with the `ip` command (iproute2) through `std::process::Command` —
//! simple, and exactly what an SRE would type to rebuild or inspect the lab by hand. The veth pair
//! is created directly inside the two namespaces (`ip link add ... netns <srv> type veth peer ...
//! netns <cli>`), so it never appears in the root namespace and nothing of the host's network
//! configuration (sysctls, qdiscs, firewall) is touched.
//!
//! State lives in `state_dir` (default `/run/netdoctor/lab-<name>`): the nginx config, the page,
//! nginx's pid file and error log, and `lab.state`, a small `key=value` file (hand-written to keep
//! the crate free of a JSON dependency; it holds a few fields: name, namespaces, nginx PID, the
//! process that started the lab, built-in or nginx servers). [`stop`] tears down everything a lab
//! with a given config may have left — by the nginx PID from the pid file, never by process name —
//! and is idempotent, so it also cleans up after a crash. [`cleanup_on_signal`] runs it on
//! SIGINT/SIGTERM/SIGHUP so Ctrl-C during `netdoctor demo` leaves nothing behind. A SIGKILL
//! leaves no chance to clean up: [`list_labs`] and [`stop_all`] find such leftovers by their
//! state dirs, and [`remove_abandoned`] removes a lab whose starting process is gone.
//!
//! Files: `config` (which lab, its servers), `lifecycle` (start, attach, the guard), `readiness`
//! (wait until both servers answer), `status`, `teardown` (stop one lab), `leftovers` (find,
//! list and stop every lab left under `/run/netdoctor`), `signals`, `state` (the state file), `error`; `netns`, `nginx`
//! and `builtin` as before; `cases` (`lab start --case`: the classic causes as scenarios, run by
//! a detached case process whose PID, extra namespaces and `/etc/netns` dirs the state file
//! records, so `stop` ends and removes them); `tools` (is an external tool installed; the
//! one-line skip of tests whose tool is missing); `ports` (ports for tests that never collide:
//! a held closed port, a port below the ephemeral range for another process to bind);
//! `bulk_lab` (client — router — throughput server, one transfer limit per case); `fakepod`
//! (a namespace with an HTTP server and its fake kubelet proc entry, for pod-mode tests).

pub mod builtin;
pub mod bulk_lab;
pub mod cases;
mod config;
mod error;
pub mod fakepod;
pub mod forwarder;
pub mod h2case;
pub mod hostcases;
mod leftovers;
mod lifecycle;
pub mod nameserver;
mod netns;
mod nginx;
pub mod ports;
mod readiness;
pub mod route_lab;
mod signals;
mod state;
mod status;
mod teardown;
pub mod tls_nginx;
pub mod tools;

use std::fs;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

pub use config::{LabConfig, LabServer};
pub use error::LabError;
pub use leftovers::{
    LabEntry, StoppedLab, list_labs, list_labs_in, remove_abandoned, stop_all, stop_all_in,
};
pub use lifecycle::{Lab, LabGuard};
pub use netns::{in_netns, netns_exists};
pub use nginx::DEFAULT_PAGE;
pub use signals::cleanup_on_signal;
pub use status::{CaseProcess, CaseStatus, LabStatus, ServerStatus};
pub use teardown::stop;

pub(crate) use config::lab_servers;
#[cfg(test)]
pub(crate) use {lifecycle::StartOptions, state::State};

/// Address of the server end of the veth pair (nginx listens here).
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 1);
/// Address of the client end of the veth pair.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 213, 0, 2);
/// Prefix length of the lab subnet.
pub const PREFIX_LEN: u8 = 24;
/// Port of the server with `tcp_nodelay on;`.
pub const PORT_NODELAY_ON: u16 = 8080;
/// Port of the server with `tcp_nodelay off;`.
pub const PORT_NODELAY_OFF: u16 = 8081;
/// Name of the veth end inside the server namespace.
pub const SERVER_IF: &str = "nd-srv";
/// Name of the veth end inside the client namespace.
pub const CLIENT_IF: &str = "nd-cli";
/// Parent of the default state dirs (`/run/netdoctor/lab-<name>`).
pub const DEFAULT_STATE_PARENT: &str = "/run/netdoctor";
/// Where Debian installs nginx.
pub const DEFAULT_NGINX: &str = "/usr/sbin/nginx";

/// How long `start` waits for both servers to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `stop` gives nginx to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serializes start and teardown within this process, so a signal arriving during `start` tears
/// down only after `start` has finished creating things (nothing is created after the teardown).
static LIFECYCLE: Mutex<()> = Mutex::new(());

pub(crate) fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests;
