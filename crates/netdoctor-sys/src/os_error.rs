//! The one formatter of OS errors, used by every crate of netdoctor so an error reads the same
//! wherever it comes from: `connect 127.0.0.1:1: connection refused`.

use std::io;

/// The message of an I/O error without Rust's ` (os error N)` suffix, case kept:
/// `No such file or directory (os error 2)` → `No such file or directory`.
pub fn strip_code(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    }
}

/// The message of an I/O error as the tail of a sentence: no ` (os error N)` suffix and a
/// lower-case first letter (`Connection refused (os error 111)` → `connection refused`), for
/// messages shaped `op address: what happened`.
pub fn describe(e: &io::Error) -> String {
    let s = strip_code(e);
    let mut chars = s.chars();
    match chars.next() {
        Some(f) => f.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The errno's symbolic name (`EADDRNOTAVAIL`), `errno N` for one not in the list, or `other`
/// for an error that has no errno.
pub fn errno_name(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => errno_name_of(n),
        None => "other".into(),
    }
}

/// The symbolic name of errno `n`, or `errno N`.
pub fn errno_name_of(n: i32) -> String {
    let name = match n {
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ENETDOWN => "ENETDOWN",
        libc::EAGAIN => "EAGAIN",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOBUFS => "ENOBUFS",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::EINVAL => "EINVAL",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::ENOSYS => "ENOSYS",
        libc::ESRCH => "ESRCH",
        libc::EBADF => "EBADF",
        libc::ENOPROTOOPT => "ENOPROTOOPT",
        _ => return format!("errno {n}"),
    };
    name.into()
}

/// True when the error means "not permitted" (EPERM or EACCES): a privilege is missing.
pub fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_os_errors() {
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert!(refused.to_string().contains("(os error 111)"), "{refused}");
        assert_eq!(describe(&refused), "connection refused");
        assert_eq!(strip_code(&refused), "Connection refused");
        assert_eq!(errno_name(&refused), "ECONNREFUSED");
        let enoent = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(strip_code(&enoent), "No such file or directory");
        assert_eq!(errno_name(&enoent), format!("errno {}", libc::ENOENT));
        let custom = io::Error::other("Thing broke (os error 7) at start");
        // the suffix only counts at the very end: the text stays, first letter lowered
        assert_eq!(describe(&custom), "thing broke (os error 7) at start");
        assert_eq!(errno_name(&custom), "other");
        assert_eq!(describe(&io::Error::other("")), "");
        assert!(is_permission(&io::Error::from_raw_os_error(libc::EPERM)));
        assert!(is_permission(&io::Error::from_raw_os_error(libc::EACCES)));
        assert!(!is_permission(&refused));
    }
}
