//! What a failed probe says about where the fault lies, before any load: the errno of
//! `connect()` and the TLS verifier's reason, sorted into causes that name the side.
//!
//! - `ENETUNREACH` (no route in this namespace, or a router's "net unreachable") →
//!   [`Failure::NoRoute`];
//! - `EHOSTUNREACH` (the next hop's ARP/NDP went unanswered, or a router's "host unreachable") →
//!   [`Failure::HostUnreachable`]; the neighbour table tells which;
//! - a connect that does not finish in time → [`Failure::ConnectTimeout`] (a dropped SYN: a full
//!   queue, a firewall; or an unanswered neighbour before the kernel gives up, ~3 s);
//! - `ECONNREFUSED` → [`Failure::Refused`];
//! - a certificate the verifier refused → [`Failure::Certificate`];
//! - anything else (a reset, a bad answer, a slow server) → [`Failure::Other`]: not the client's.

use crate::ProbeError;
use netdoctor_load::tls::CertificateProblem;

/// The cause of a failed probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The system resolver failed (its own checks say why).
    Resolve,
    /// `ENETUNREACH`: no route to the network.
    NoRoute,
    /// `EHOSTUNREACH`: no ARP/NDP answer from the next hop, or a router said so.
    HostUnreachable,
    /// `connect()` did not complete before the deadline.
    ConnectTimeout,
    /// `ECONNREFUSED`: nothing listens.
    Refused,
    /// TLS certificate verification failed.
    Certificate(CertificateProblem),
    /// An HTTP/1.1 request was answered with HTTP/2 frames: the port speaks only HTTP/2.
    Http2Only,
    /// Anything else: the server's answer, its speed, a reset.
    Other,
}

impl ProbeError {
    /// The cause of this error (see the module docs).
    pub fn failure(&self) -> Failure {
        match self {
            ProbeError::Resolve { .. } => Failure::Resolve,
            ProbeError::Refused { .. } => Failure::Refused,
            ProbeError::Timeout { op: "connect", .. } => Failure::ConnectTimeout,
            ProbeError::Io {
                op: "connect",
                source,
                ..
            } => match source.raw_os_error() {
                Some(libc::ENETUNREACH) => Failure::NoRoute,
                Some(libc::EHOSTUNREACH) => Failure::HostUnreachable,
                Some(libc::ECONNREFUSED) => Failure::Refused,
                Some(libc::ETIMEDOUT) => Failure::ConnectTimeout,
                _ => Failure::Other,
            },
            ProbeError::Tls {
                certificate: Some(c),
                ..
            } => Failure::Certificate(*c),
            ProbeError::Http2Only { .. } => Failure::Http2Only,
            _ => Failure::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::net::SocketAddr;

    fn io_err(errno: i32) -> ProbeError {
        let addr: SocketAddr = "192.0.2.1:80".parse().unwrap();
        ProbeError::from_io("connect", addr, io::Error::from_raw_os_error(errno))
    }

    #[test]
    fn an_http2_settings_frame_answering_http1_is_told_from_a_status_line() {
        // nginx 1.22 `listen … http2;` (h2c only) answering `GET / HTTP/1.1`: SETTINGS,
        // WINDOW_UPDATE, GOAWAY PROTOCOL_ERROR.
        let nginx = b"\x00\x00\x12\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x80\x00\x04\x00\x01\x00\x00\x00\x05\x00\xff\xff\xff\x00\x00\x04\x08\x00\x00\x00\x00\x00\x7f\xff\x00\x00";
        assert!(crate::http::h2_settings_first(nginx));
        assert!(!crate::http::h2_settings_first(b"HTTP/1.1 200 OK\r\n"));
        // A DATA frame or a short read is not a server preface.
        assert!(!crate::http::h2_settings_first(
            b"\x00\x00\x06\x00\x00\x00\x00\x00\x01"
        ));
        assert!(!crate::http::h2_settings_first(&nginx[..8]));
        let addr: SocketAddr = "192.0.2.1:80".parse().unwrap();
        let e = ProbeError::Http2Only { addr };
        assert_eq!(e.failure(), Failure::Http2Only);
        assert!(e.to_string().contains("--http2"), "{e}");
    }

    #[test]
    fn errnos_name_the_cause() {
        assert_eq!(io_err(libc::ENETUNREACH).failure(), Failure::NoRoute);
        assert_eq!(
            io_err(libc::EHOSTUNREACH).failure(),
            Failure::HostUnreachable
        );
        assert_eq!(io_err(libc::ECONNREFUSED).failure(), Failure::Refused);
        assert_eq!(io_err(libc::ETIMEDOUT).failure(), Failure::ConnectTimeout);
        assert_eq!(io_err(libc::ECONNRESET).failure(), Failure::Other);
        // A read that fails with EHOSTUNREACH is not a connect failure.
        let addr: SocketAddr = "192.0.2.1:80".parse().unwrap();
        let read = ProbeError::from_io("read", addr, io::Error::from_raw_os_error(113));
        assert_eq!(read.failure(), Failure::Other);
        let tls = ProbeError::Tls {
            addr,
            msg: "invalid peer certificate: UnknownIssuer".into(),
            certificate: Some(CertificateProblem::Untrusted),
        };
        assert_eq!(
            tls.failure(),
            Failure::Certificate(CertificateProblem::Untrusted)
        );
        let plain = ProbeError::Tls {
            addr,
            msg: "the server answered in plain HTTP, not TLS: use http://".into(),
            certificate: None,
        };
        assert_eq!(plain.failure(), Failure::Other);
    }
}
