//! The probe error type: every variant names the operation and the address (or host) it concerns,
//! and keeps the OS error as its `source()` so a caller printing the chain shows it once.

use std::io;
use std::net::SocketAddr;

/// Why a probe failed. `Display` names the operation and the address; OS errors are `source()`.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Name resolution failed (or returned no address).
    #[error("resolve {host}: {msg}")]
    Resolve {
        /// The host name as given.
        host: String,
        /// The resolver's message, e.g. "name or service not known".
        msg: String,
    },
    /// The target answered the connection attempt with a RST: nothing listens there.
    #[error("connect {addr}: connection refused")]
    Refused {
        /// The target address.
        addr: SocketAddr,
    },
    /// An operation did not finish within the configured timeout.
    #[error("{op} {addr}: timed out")]
    Timeout {
        /// The operation: "connect", "write", "read".
        op: &'static str,
        /// The target address.
        addr: SocketAddr,
    },
    /// Any other I/O error.
    #[error("{op} {addr}")]
    Io {
        /// The operation: "connect", "write", "read".
        op: &'static str,
        /// The target address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed (certificate, protocol, a server that is not TLS).
    #[error("tls handshake with {addr}: {msg}")]
    Tls {
        /// The target address.
        addr: SocketAddr,
        /// Why, with the next step (e.g. `--insecure`, `use http://`).
        msg: String,
        /// The certificate problem when verification refused the server's certificate.
        certificate: Option<netdoctor_load::tls::CertificateProblem>,
    },
    /// An HTTP/1.1 request was answered with HTTP/2 frames (a SETTINGS frame first): the
    /// port speaks only HTTP/2 (cleartext h2c with prior knowledge, e.g. nginx's
    /// `listen … http2;` without `ssl`).
    #[error(
        "http {addr}: the server answered an HTTP/1.1 request with HTTP/2 frames: it speaks only HTTP/2 (h2c) on this port; use --http2"
    )]
    Http2Only {
        /// The target address.
        addr: SocketAddr,
    },
    /// The server's answer is not valid HTTP/1.x (or the connection closed too early).
    #[error("http {addr}: {msg}")]
    Http {
        /// The target address.
        addr: SocketAddr,
        /// What was wrong.
        msg: String,
    },
}

impl ProbeError {
    /// Maps an I/O error of `op` on `addr` to `Refused`, `Timeout` or `Io`.
    pub(crate) fn from_io(op: &'static str, addr: SocketAddr, err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::ConnectionRefused if op == "connect" => ProbeError::Refused { addr },
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ProbeError::Timeout { op, addr },
            _ => ProbeError::Io {
                op,
                addr,
                source: err,
            },
        }
    }
}
