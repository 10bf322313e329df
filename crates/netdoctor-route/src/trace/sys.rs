//! The few syscalls the probe engine needs that socket2 does not wrap: IP_RECVERR and its error
//! queue (`recvmsg(MSG_ERRQUEUE)`, which carries the ICMP error and the address of the router
//! that sent it), and `poll(2)` over many probe sockets.

use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An ICMP error the kernel queued on a socket (IP_RECVERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedError {
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// The router or host that sent the ICMP message.
    pub offender: Option<IpAddr>,
    /// When the kernel received it (SO_TIMESTAMPNS), if timestamps are on.
    pub received: Option<SystemTime>,
}

/// `SO_TIMESTAMPNS` (= `SCM_TIMESTAMPNS`) on the architectures where it is 35; the libc crate
/// does not export it for Linux/glibc.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64"
))]
const SO_TIMESTAMPNS: libc::c_int = 35;

/// Asks the kernel to stamp received packets and queued errors with their arrival time, so
/// RTTs do not include the time poll(2) takes to wake us. Returns false where unsupported.
pub fn enable_rx_timestamps(sock: &impl AsRawFd) -> bool {
    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv64"
    ))]
    {
        let one: libc::c_int = 1;
        // SAFETY: valid fd; the option value is a c_int whose size is passed.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_TIMESTAMPNS,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    }
    #[cfg(not(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv64"
    )))]
    {
        let _ = sock;
        false
    }
}

/// The SCM_TIMESTAMPNS control message of `msg`, if any.
///
/// # Safety
/// `msg` must come from a successful recvmsg(2) with its control buffer still alive.
unsafe fn timestamp_of(msg: &libc::msghdr) -> Option<SystemTime> {
    #[cfg(any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "riscv64"
    ))]
    // SAFETY: the caller guarantees msg describes a filled control buffer; CMSG_* walk it
    // within msg_controllen; a SCM_TIMESTAMPNS payload is a struct timespec.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == SO_TIMESTAMPNS {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const libc::timespec);
                return Some(UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    let _ = msg;
    None
}

/// Turns on IP_RECVERR: ICMP errors for this socket are queued with their sender's address.
pub fn enable_recverr(sock: &impl AsRawFd) -> std::io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: valid fd; the option value is a c_int whose size is passed.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_IP,
            libc::IP_RECVERR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads one entry of the socket's error queue, if any. Only ICMP-originated entries are
/// returned; others (local errors) come back as `Ok(None)` after being drained.
pub fn recv_errqueue(sock: &impl AsRawFd) -> std::io::Result<Option<QueuedError>> {
    let mut data = [0u8; 512];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: data.len(),
    };
    let mut control = [0u64; 64]; // 512 bytes, 8-aligned for cmsghdr
    // SAFETY: msghdr is plain data; zeroed is a valid empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live buffers (iov, control) of the lengths given.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut msg,
            libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: msg comes from the successful recvmsg above; control is still alive.
    let received = unsafe { timestamp_of(&msg) };
    // SAFETY: the kernel filled msg_control with msg_controllen bytes of cmsgs; the CMSG_*
    // macros walk them within those bounds; sock_extended_err and the offender sockaddr follow
    // the IP_RECVERR header as documented in ip(7).
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_IP && (*cmsg).cmsg_type == libc::IP_RECVERR {
                let ee = libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err;
                let ee_val = std::ptr::read_unaligned(ee);
                if ee_val.ee_origin != libc::SO_EE_ORIGIN_ICMP {
                    return Ok(None);
                }
                let off = libc::SO_EE_OFFENDER(ee) as *const libc::sockaddr_in;
                let sin = std::ptr::read_unaligned(off);
                let offender = (sin.sin_family == libc::AF_INET as libc::sa_family_t)
                    .then(|| IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                return Ok(Some(QueuedError {
                    icmp_type: ee_val.ee_type,
                    icmp_code: ee_val.ee_code,
                    offender,
                    received,
                }));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(None)
}

/// Receives one datagram without blocking: its length and kernel arrival time (when
/// timestamps are on); `Ok(None)` when nothing is waiting.
pub fn recv_nonblocking(
    sock: &impl AsRawFd,
    buf: &mut [u8],
) -> std::io::Result<Option<(usize, Option<SystemTime>)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16]; // 128 bytes, 8-aligned for cmsghdr
    // SAFETY: msghdr is plain data; zeroed is a valid empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live buffers (iov over buf, control) of the lengths given.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n >= 0 {
        // SAFETY: msg comes from the successful recvmsg above; control is still alive.
        let ts = unsafe { timestamp_of(&msg) };
        return Ok(Some((n as usize, ts)));
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Ok(None),
        _ => Err(e),
    }
}

/// poll(2) on `fds` (events already set); returns after at most `timeout`.
pub fn poll(fds: &mut [libc::pollfd], timeout: Duration) -> std::io::Result<usize> {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: fds is a valid, writable slice of pollfd of the length passed.
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

/// A pollfd for `fd` waiting on `events`.
pub fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}
