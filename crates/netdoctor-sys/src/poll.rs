//! Waiting for one descriptor to become readable, with a timeout (a listener's next
//! connection, without polling it on a timer), or for any of several ([`wait_any`]).

use std::os::fd::AsRawFd;
use std::time::Duration;

/// Waits until `fd` is readable (for a listener: a connection to accept) or `timeout` passes.
/// `Ok(true)` when readable (or in error: the next call on it says which), `Ok(false)` on
/// timeout or an interrupted wait.
pub fn wait_readable(fd: &impl AsRawFd, timeout: Duration) -> std::io::Result<bool> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `p` is one valid, writable pollfd and we pass a count of 1.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(n > 0)
}

/// Waits until one of `fds` has one of its requested events or `timeout` passes (`poll(2)`);
/// the events that came are in each entry's `revents`. `Ok(n)`: how many entries have events
/// (0 on timeout or an interrupted wait). With no entries it sleeps for `timeout` (rounded up
/// to a whole millisecond, so a short wait is not a busy loop).
pub fn wait_any(fds: &mut [libc::pollfd], timeout: Duration) -> std::io::Result<usize> {
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid, writable slice of pollfd and we pass its length.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(n as usize)
}
