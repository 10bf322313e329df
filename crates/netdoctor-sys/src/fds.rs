//! Descriptors this process inherited: `close_range(3, ~0, CLOSE_RANGE_CLOEXEC)` (Linux ≥
//! 5.11) marks every descriptor above stderr close-on-exec, so the processes netdoctor starts
//! (a lab's daemons, nginx, tcpdump) do not keep them.
//!
//! Why: a caller's descriptors that were not opened close-on-exec pass through exec. A lab
//! started under `flock LOCK netdoctor lab start …` handed flock's lock to the lab's daemon,
//! which held it for its whole life and blocked every later `flock LOCK` until `lab stop`
//! (session 22). Everything netdoctor opens itself is close-on-exec already (Rust's default);
//! this reaches only what came from the caller. netdoctor's own use of those descriptors is
//! not affected (close-on-exec acts at exec, in children).

use std::io;

/// Marks every descriptor ≥ 3 close-on-exec. An old kernel without `close_range` (ENOSYS) or
/// without its CLOEXEC flag (EINVAL) leaves them as they were: the error says so, and the
/// caller may ignore it (children then inherit them, as before).
pub fn cloexec_inherited() -> io::Result<()> {
    // SAFETY: close_range takes two descriptor numbers and a flag and passes no memory; with
    // CLOSE_RANGE_CLOEXEC it only sets FD_CLOEXEC on open descriptors in the range, so no
    // descriptor owned by any Rust object is closed.
    let rc = unsafe {
        libc::close_range(
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::process::Command;

    /// A descriptor opened without close-on-exec (as flock's lock reaches its command) is
    /// inherited by a child before the call, and not after it.
    #[test]
    fn a_child_no_longer_inherits_what_we_inherited() {
        let file = std::fs::File::open("/proc/self/status").expect("open");
        // SAFETY: fcntl(F_DUPFD) on a descriptor we own returns a new descriptor (without
        // FD_CLOEXEC) or -1; no memory is passed. The duplicate is closed below.
        let dup = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 3) };
        assert!(dup >= 3, "dup: {}", io::Error::last_os_error());
        let child_has = |fd: i32| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("test -e /proc/self/fd/{fd}"))
                .status()
                .expect("run sh")
                .success()
        };
        assert!(
            child_has(dup),
            "the duplicate should pass through exec before the call"
        );
        cloexec_inherited().expect("close_range");
        assert!(!child_has(dup), "the duplicate still reached the child");
        // SAFETY: fcntl(F_GETFD) reads the flags of a descriptor we own; no memory is passed.
        let flags = unsafe { libc::fcntl(dup, libc::F_GETFD) };
        assert!(
            flags >= 0 && flags & libc::FD_CLOEXEC != 0,
            "the duplicate was closed, not marked"
        );
        // SAFETY: closing the duplicate made above, which nothing else owns.
        unsafe { libc::close(dup) };
    }
}
