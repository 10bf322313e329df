//! netdoctor-throughput: throughput and packet rate.
//!
//! - [`client`] and [`server`]: TCP and UDP tests wire-compatible with iperf3 ([`proto`] is the
//!   control protocol, [`stream`] the data streams, [`tcp_group`] the threads that move a
//!   side's TCP streams, [`session`] one test's streams while they run), so the client runs against a stock `iperf3 -s` and `iperf3 -c` runs against the
//!   server. Parallel streams, reverse, bidirectional, a duration and a target bitrate.
//! - [`report`]: what a test measured, in the shape of iperf3's `--json`; [`text`] its text
//!   lines and iperf3's units.
//! - [`limits`]: what limited a TCP transfer, from the sender's `TCP_INFO` per interval
//!   (`receive_window_limited`, `application_limited` …), and the receiver's CPUs ([`cpu`]:
//!   softirq time per CPU, for `receiver_softirq_saturated`).
//! - [`pktrate`]: packets per second with small UDP datagrams (`sendmmsg`/`recvmmsg`), and
//!   where the lost ones went (receive-buffer, backlog and interface drop counters).
//!
//! Hand-written rather than a crate: no maintained Rust crate speaks iperf3's control protocol
//! (the protocol is small: a cookie, state bytes, length-prefixed JSON).

pub mod client;
pub mod cpu;
pub mod limits;
pub mod pktrate;
pub mod proto;
pub mod report;
pub mod server;
pub mod session;
pub mod stream;
pub mod tcp_group;
pub mod text;

pub use client::{ClientConfig, run_client};
pub use report::Report;
pub use server::{Server, ServerConfig};

use std::io;

/// Errors of a throughput test, each naming the operation and, where there is one, the address.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{op}: {}", netdoctor_sys::os_error::describe(source))]
    Io { op: String, source: io::Error },
    #[error("{0}")]
    Protocol(String),
    #[error("the server is busy running another test (it answered ACCESS_DENIED); try again later")]
    Busy,
    #[error("the server reported an error: {0}")]
    Server(String),
    #[error("the server ended the test (SERVER_TERMINATE)")]
    ServerTerminated,
    #[error("the client ended the test (CLIENT_TERMINATE)")]
    ClientTerminated,
}

impl Error {
    /// An I/O error of one operation.
    pub fn io(op: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            op: op.into(),
            source,
        }
    }
}

/// What an iperf3 error number means (the ones a server sends for a client's test; others by
/// number).
pub fn iperf_error_text(code: i32) -> String {
    let s = match code {
        5 => "test duration too long",
        6 => "too many parallel streams",
        7 => "block size too large",
        8 => "socket buffer size too large",
        10 => "MSS too large",
        13 => "not implemented",
        20 => "block size invalid",
        27 => "total requested bandwidth larger than the server's limit",
        37 => "the client's duration exceeds the server's maximum",
        106 => "unable to receive cookie from client",
        109 => "control socket closed unexpectedly",
        110 => "received an unknown control message",
        114 => "unable to receive parameters from the client",
        117 => "unable to receive results",
        144 => "no data received for the receive timeout",
        160 => "the test ran longer than the server allows",
        208 => "no such stream id",
        _ => return format!("iperf3 error {code}"),
    };
    format!("{s} (iperf3 error {code})")
}
