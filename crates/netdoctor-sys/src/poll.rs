//! Waiting for one descriptor to become readable, with a timeout (a listener's next
//! connection, without polling it on a timer), or for any of several ([`wait_any`]), and
//! [`Wake`], which ends such a wait from another thread or a signal handler.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Ends a thread's wait from another thread (set the flag it looks at first, then call
/// [`wake`](Wake::wake)) or from a signal handler ([`write_end`](Wake::write_end) with
/// `signal_hook::low_level::pipe`): a connected pair of non-blocking Unix stream sockets, the
/// waiting thread polling one end ([`pollfd`](Wake::pollfd), [`wait`](Wake::wait)). It lets a
/// thread that only waits for a stop sleep long instead of looking at a flag on a short timer.
/// Built from `std` types, no `unsafe`.
#[derive(Debug, Clone)]
pub struct Wake(std::sync::Arc<(UnixStream, UnixStream)>);

impl Wake {
    pub fn new() -> std::io::Result<Wake> {
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        tx.set_nonblocking(true)?;
        Ok(Wake(std::sync::Arc::new((rx, tx))))
    }

    /// Wakes the waiting thread (with wake-ups already pending, the byte is dropped).
    pub fn wake(&self) {
        let _ = (&self.0.1).write(&[1]);
    }

    /// A second descriptor of the write end, for a signal handler to write to.
    pub fn write_end(&self) -> std::io::Result<OwnedFd> {
        Ok(self.0.1.try_clone()?.into())
    }

    /// Reads the pending wake-ups, so the next wait blocks again.
    pub fn clear(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.0.0).read(&mut buf), Ok(n) if n > 0) {}
    }

    /// The read end, to poll beside other descriptors ([`wait_any`]); [`clear`](Wake::clear)
    /// once it was readable.
    pub fn pollfd(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.0.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }
    }

    /// Waits until woken or `timeout` passes; `true` when woken (the wake-ups are cleared).
    pub fn wait(&self, timeout: Duration) -> std::io::Result<bool> {
        let mut fds = [self.pollfd()];
        wait_any(&mut fds, timeout)?;
        let woken = fds[0].revents != 0;
        if woken {
            self.clear();
        }
        Ok(woken)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_wake_ends_a_long_wait_and_is_cleared_by_it() {
        let w = Wake::new().unwrap();
        assert!(!w.wait(Duration::from_millis(1)).unwrap(), "not woken yet");
        // Two wake-ups before the wait: one wait takes both, the next one times out again.
        w.wake();
        w.wake();
        assert!(w.wait(Duration::from_secs(60)).unwrap());
        assert!(!w.wait(Duration::from_millis(1)).unwrap());
        // A thread waiting for a minute returns when woken (bounded here by 30 s).
        let (tx, rx) = mpsc::channel();
        let waiter = w.clone();
        let t = std::thread::spawn(move || {
            tx.send(waiter.wait(Duration::from_secs(60)).unwrap())
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(20));
        w.wake();
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(true));
        t.join().unwrap();
    }

    #[test]
    fn a_write_to_the_write_end_wakes_like_wake() {
        let w = Wake::new().unwrap();
        let mut end = std::fs::File::from(w.write_end().unwrap());
        end.write_all(&[7]).unwrap();
        assert!(w.wait(Duration::from_secs(60)).unwrap());
        assert!(!w.wait(Duration::from_millis(1)).unwrap());
    }
}
