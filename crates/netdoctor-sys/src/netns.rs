//! `setns(2)` into a network namespace, for the calling thread only: host collectors sample a
//! server's listener inside the namespace its process runs in (`/proc/PID/ns/net`). Joining
//! another network namespace needs CAP_SYS_ADMIN (EPERM without it).

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// Moves the calling thread (only it) into the network namespace `ns` refers to (an open
/// `/proc/PID/ns/net` or `/run/netns/NAME`). Call it on a thread made for the purpose: the
/// thread stays there.
pub fn join_net(ns: &impl AsFd) -> io::Result<()> {
    // SAFETY: setns takes a descriptor (borrowed, open for the call) and a namespace type and
    // returns 0 or -1; no memory is passed. CLONE_NEWNET changes only the calling thread's
    // network namespace.
    let rc = unsafe { libc::setns(ns.as_fd().as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joining_ones_own_namespace_keeps_it() {
        let before = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
        let ns = std::fs::File::open("/proc/self/ns/net").unwrap();
        let joined = std::thread::spawn(move || {
            join_net(&ns).map(|()| std::fs::read_link("/proc/thread-self/ns/net").unwrap())
        })
        .join()
        .unwrap();
        match joined {
            Ok(after) => assert_eq!(after, before),
            // Without CAP_SYS_ADMIN even one's own namespace is refused.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM)),
        }
    }
}
