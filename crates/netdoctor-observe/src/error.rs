//! The one error type of this crate: each variant prints as one line that names the operation
//! and the file or address it concerns.

use std::io;
use std::path::Path;

/// Why a capture file cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadCaptureKind {
    /// The file has no bytes.
    Empty,
    /// The file does not start with a pcap or pcapng magic number.
    NotCapture,
    /// A link type netdoctor does not decode (the pcap LINKTYPE_* number).
    UnsupportedLinkType(u32),
    /// A length field is larger than the snap length or the 256 KiB limit.
    HostileLength,
    /// Anything else that does not follow the format.
    Malformed,
}

/// Errors of the observers.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// A file operation failed, e.g. `open capture.pcap: No such file or directory`.
    #[error("{op} {path}: {message}")]
    Io {
        op: &'static str,
        path: String,
        kind: io::ErrorKind,
        message: String,
    },
    /// A capture file's content cannot be used.
    #[error("{path}: {message}")]
    BadCapture {
        path: String,
        kind: BadCaptureKind,
        message: String,
    },
    /// Opening a packet socket was refused.
    #[error(
        "packet capture needs CAP_NET_RAW (run as root); the rest of the diagnosis works without it"
    )]
    NeedsCapNetRaw,
    /// A system call of the live capture failed (`op` names the call and its object).
    #[error("{op}: {message}")]
    Capture {
        op: String,
        errno: Option<i32>,
        message: String,
    },
    /// A packet cannot be written into a capture file.
    #[error("write packet {frame} to {path}: {message}")]
    BadPacket {
        path: String,
        frame: u64,
        message: String,
    },
    /// A kernel counter file does not have the expected layout.
    #[error("parse {file}: {message}")]
    Counters { file: String, message: String },
}

/// The message of an I/O error without Rust's " (os error N)" suffix (see
/// `netdoctor_sys::os_error`).
pub(crate) fn io_message(e: &io::Error) -> String {
    netdoctor_sys::os_error::strip_code(e)
}

pub(crate) fn io_error(op: &'static str, path: &Path, e: &io::Error) -> ObserveError {
    ObserveError::Io {
        op,
        path: path.display().to_string(),
        kind: e.kind(),
        message: io_message(e),
    }
}

/// An error of the live capture from `errno`.
pub(crate) fn sys_error(op: impl Into<String>, e: &io::Error) -> ObserveError {
    ObserveError::Capture {
        op: op.into(),
        errno: e.raw_os_error(),
        message: io_message(e),
    }
}
