//! The few syscalls the probe engine needs that socket2 does not wrap: IP_RECVERR /
//! IPV6_RECVERR and the error queue (`recvmsg(MSG_ERRQUEUE)`, which carries the ICMP or ICMPv6
//! error and the address of the router that sent it), a receive that also returns the sender
//! (a raw ICMPv6 socket reads no IP header), and `poll(2)` over many probe sockets.

use super::packet::Family;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An ICMP error the kernel queued on a socket (IP_RECVERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedError {
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// The router or host that sent the ICMP message.
    pub offender: Option<IpAddr>,
    /// The offender's scope id (the index of the interface the error arrived on) when it is
    /// an IPv6 link-local address; 0 otherwise.
    pub scope_id: u32,
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

/// Turns on IP_RECVERR (IPv4) or IPV6_RECVERR: ICMP errors for this socket are queued with
/// their sender's address.
pub fn enable_recverr(sock: &impl AsRawFd, family: Family) -> std::io::Result<()> {
    let one: libc::c_int = 1;
    let (level, name) = match family {
        Family::V4 => (libc::SOL_IP, libc::IP_RECVERR),
        Family::V6 => (libc::SOL_IPV6, libc::IPV6_RECVERR),
    };
    // SAFETY: valid fd; the option value is a c_int whose size is passed.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
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
    // the IP_RECVERR / IPV6_RECVERR header as documented in ip(7) and ipv6(7); the offender is
    // read as the sockaddr its family field names.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let (level, ty) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            let v4 = level == libc::SOL_IP && ty == libc::IP_RECVERR;
            let v6 = level == libc::SOL_IPV6 && ty == libc::IPV6_RECVERR;
            if v4 || v6 {
                let ee = libc::CMSG_DATA(cmsg) as *const libc::sock_extended_err;
                let ee_val = std::ptr::read_unaligned(ee);
                if ee_val.ee_origin != libc::SO_EE_ORIGIN_ICMP
                    && ee_val.ee_origin != libc::SO_EE_ORIGIN_ICMP6
                {
                    return Ok(None);
                }
                let off = libc::SO_EE_OFFENDER(ee);
                let (offender, scope_id) = sockaddr_ip(off.cast()).unzip();
                return Ok(Some(QueuedError {
                    icmp_type: ee_val.ee_type,
                    icmp_code: ee_val.ee_code,
                    offender,
                    scope_id: scope_id.unwrap_or(0),
                    received,
                }));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(None)
}

/// The address of a sockaddr_in or sockaddr_in6 (by its family field) and its scope id
/// (`sin6_scope_id`: the kernel sets it to the receiving interface's index for a link-local
/// sender, for queued errors (`ipv6_recv_error`) and datagrams alike; 0 otherwise and for
/// IPv4); `None` for other families.
///
/// # Safety
/// `sa` must point at readable memory at least as large as a `sockaddr_in6`.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr_storage) -> Option<(IpAddr, u32)> {
    // SAFETY: the caller guarantees sa is readable for a sockaddr_in6 (the larger of the two);
    // each is read only when the family field says it is one.
    unsafe {
        let family = std::ptr::read_unaligned(sa.cast::<libc::sa_family_t>());
        if family == libc::AF_INET as libc::sa_family_t {
            let sin = std::ptr::read_unaligned(sa.cast::<libc::sockaddr_in>());
            Some((
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))),
                0,
            ))
        } else if family == libc::AF_INET6 as libc::sa_family_t {
            let sin6 = std::ptr::read_unaligned(sa.cast::<libc::sockaddr_in6>());
            Some((
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)),
                sin6.sin6_scope_id,
            ))
        } else {
            None
        }
    }
}

/// One datagram read by [`recv_nonblocking`].
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub len: usize,
    /// Kernel arrival time, when timestamps are on.
    pub at: Option<SystemTime>,
    /// The sender's address.
    pub from: Option<IpAddr>,
    /// The sender's scope id (link-local IPv6; see [`QueuedError::scope_id`]), 0 otherwise.
    pub scope_id: u32,
}

/// Receives one datagram without blocking: its length, kernel arrival time (when timestamps
/// are on) and sender; `Ok(None)` when nothing is waiting.
pub fn recv_nonblocking(sock: &impl AsRawFd, buf: &mut [u8]) -> std::io::Result<Option<Received>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16]; // 128 bytes, 8-aligned for cmsghdr
    // SAFETY: sockaddr_storage is plain data; zeroed is a valid empty value (family 0).
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: msghdr is plain data; zeroed is a valid empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut name as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = std::mem::size_of_val(&name) as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live buffers (name, iov over buf, control) of the lengths given.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n >= 0 {
        // SAFETY: msg comes from the successful recvmsg above; control is still alive.
        let at = unsafe { timestamp_of(&msg) };
        // SAFETY: name is a live sockaddr_storage (larger than sockaddr_in6), zeroed when the
        // socket reports no sender.
        let (from, scope_id) = unsafe { sockaddr_ip(&name) }.unzip();
        return Ok(Some(Received {
            len: n as usize,
            at,
            from,
            scope_id: scope_id.unwrap_or(0),
        }));
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
