//! The error of the host collectors (sock_diag, kmsg, conntrack, netdev, sysctl): one line that
//! names what failed and, when the cause is a permission, the capability that is missing.

use std::io;

/// Why a host collector could not read what it needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// A file under /proc, /sys or /dev could not be read.
    #[error("{what}: read {path}: {message}{}", needs_suffix(*needs))]
    Read {
        /// What the collector wanted, e.g. `"kernel log"`.
        what: &'static str,
        path: String,
        message: String,
        /// The capability whose absence caused the failure, when it was a permission problem.
        needs: Option<&'static str>,
    },
    /// A file was read but does not have the layout the kernel documents.
    #[error("{what}: parse {path}: {message}")]
    Parse {
        what: &'static str,
        path: String,
        message: String,
    },
    /// The kernel does not offer the facility here (module not loaded, file absent).
    #[error("{what}: not available: {reason}")]
    Unavailable { what: &'static str, reason: String },
    /// A netlink request failed.
    #[error("{what}: {op}: {message}{}", needs_suffix(*needs))]
    Netlink {
        what: &'static str,
        op: &'static str,
        message: String,
        needs: Option<&'static str>,
    },
}

fn needs_suffix(needs: Option<&'static str>) -> String {
    match needs {
        Some(cap) => format!(" (needs {cap})"),
        None => String::new(),
    }
}

impl HostError {
    /// The capability a permission failure asks for, if that was the cause.
    pub fn missing_capability(&self) -> Option<&'static str> {
        match self {
            HostError::Read { needs, .. } | HostError::Netlink { needs, .. } => *needs,
            _ => None,
        }
    }
}

/// The message of an I/O error without Rust's " (os error N)" suffix.
pub(crate) fn message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// Reads a whole file; a permission error names `cap` as the missing capability.
pub(crate) fn read_file(
    what: &'static str,
    path: &str,
    cap: Option<&'static str>,
) -> Result<String, HostError> {
    std::fs::read_to_string(path).map_err(|e| read_error(what, path, &e, cap))
}

pub(crate) fn read_error(
    what: &'static str,
    path: &str,
    e: &io::Error,
    cap: Option<&'static str>,
) -> HostError {
    if e.kind() == io::ErrorKind::NotFound {
        return HostError::Unavailable {
            what,
            reason: format!("{path} does not exist"),
        };
    }
    HostError::Read {
        what,
        path: path.to_string(),
        message: message(e),
        needs: if e.kind() == io::ErrorKind::PermissionDenied {
            cap
        } else {
            None
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_name_the_capability() {
        let e = io::Error::from_raw_os_error(libc::EPERM);
        let err = read_error("kernel log", "/dev/kmsg", &e, Some("CAP_SYSLOG"));
        assert_eq!(
            err.to_string(),
            "kernel log: read /dev/kmsg: Operation not permitted (needs CAP_SYSLOG)"
        );
        assert_eq!(err.missing_capability(), Some("CAP_SYSLOG"));
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        let err = read_error("conntrack", "/x", &e, None);
        assert!(matches!(err, HostError::Unavailable { .. }), "{err}");
    }
}
