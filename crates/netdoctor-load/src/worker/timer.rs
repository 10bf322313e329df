//! The timerfd that wakes the event loop for the next due request (µs precision; mio's poll
//! timeout is rounded up to whole milliseconds).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

/// A relative CLOCK_MONOTONIC timerfd that wakes the event loop for the next due request.
pub(super) struct Timer {
    pub(super) fd: OwnedFd,
    /// When it is set to fire (None: disarmed).
    pub(super) armed: Option<Instant>,
}

impl Timer {
    pub(super) fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no memory arguments; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Timer { fd, armed: None })
    }

    /// Makes sure the timer fires by `due`; false when it cannot (then poll with a timeout).
    /// Setting the timer clears its expiration count, so its edge-triggered readiness fires
    /// again at the next expiry without a read.
    pub(super) fn arm(&mut self, due: Instant, now: Instant) -> bool {
        if self.armed.is_some_and(|a| a <= due && a > now) {
            return true;
        }
        let rel = due.saturating_duration_since(now);
        if rel.is_zero() {
            return false;
        }
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: rel.as_secs() as libc::time_t,
                tv_nsec: rel.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: the descriptor is our timerfd; `spec` is a valid itimerspec and the old value
        // pointer may be null.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return false;
        }
        self.armed = Some(due);
        true
    }
}
