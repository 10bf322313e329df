//! `pidfd_open(2)` and `pidfd_getfd(2)` (Linux ≥ 5.6): duplicate a descriptor of another
//! process into this one, e.g. a server's socket to read its options with `getsockopt`. The
//! other process is not touched; the duplicate is ours to close.
//!
//! `pidfd_getfd` needs ptrace access to the target: CAP_SYS_PTRACE over it, or the same user
//! with `kernel.yama.ptrace_scope` allowing it. EPERM means that privilege is missing (see
//! [`crate::privilege::Feature::ForeignSocketOptions`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `pidfd_open(pid, 0)`: a descriptor that refers to process `pid`.
pub fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: pidfd_open takes a pid and flags (0) and returns a new descriptor or -1; no memory
    // is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    owned(fd)
}

/// `pidfd_getfd(pidfd, fd, 0)`: a duplicate, in this process, of descriptor `fd` of the process
/// that `pidfd` refers to.
pub fn get_fd(pidfd: &impl AsFd, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_getfd takes a pidfd (borrowed, open for the call), a descriptor number of
    // that process and flags (0), and returns a new descriptor in ours or -1; no memory is passed.
    let got = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_fd().as_raw_fd(), fd, 0) };
    owned(got)
}

/// Descriptor `fd` of process `pid`, duplicated into this process ([`open`] then [`get_fd`]).
pub fn dup_from(pid: u32, fd: RawFd) -> io::Result<OwnedFd> {
    get_fd(&open(pid)?, fd)
}

fn owned(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(rc).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: `fd` was just returned by the kernel as a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn duplicates_a_socket_of_this_process() {
        // Our own process: allowed without privileges (ptrace access to oneself).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        s.set_nodelay(true).unwrap();
        let dup = dup_from(std::process::id(), s.as_raw_fd()).unwrap();
        assert_ne!(dup.as_raw_fd(), s.as_raw_fd());
        // The duplicate is the same socket: an option set on one is seen on the other.
        let nd = crate::sockopt::get_int(&dup, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap();
        assert_eq!(nd, 1);
        s.set_nodelay(false).unwrap();
        let nd = crate::sockopt::get_int(&dup, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap();
        assert_eq!(nd, 0);
    }

    #[test]
    fn bad_pid_and_bad_fd_are_errors() {
        // pid_max is at most 2^22: this pid cannot exist
        let e = open(u32::MAX / 2).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
        let me = open(std::process::id()).unwrap();
        let e = get_fd(&me, 1_000_000).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
    }
}
