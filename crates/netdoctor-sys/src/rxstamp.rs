//! Kernel receive timestamps (`SO_TIMESTAMPNS`): when a frame arrived, not when the reader woke
//! up to read it. The lab's delay bridge holds each frame from its arrival, so a reader that
//! wakes late on a busy machine does not add its wake-up time to the delay.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `SO_TIMESTAMPNS` (= `SCM_TIMESTAMPNS`): 35 on the architectures listed; the libc crate does
/// not export it for Linux/glibc.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64"
))]
const SO_TIMESTAMPNS: Option<libc::c_int> = Some(35);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64"
)))]
const SO_TIMESTAMPNS: Option<libc::c_int> = None;

/// Asks the kernel to stamp each received packet with its arrival time (wall clock); false
/// where that is unsupported. The first socket on a machine to ask turns stamping on a moment
/// later (a deferred static key): packets received before then are stamped when read.
pub fn enable(fd: &impl AsFd) -> bool {
    let Some(opt) = SO_TIMESTAMPNS else {
        return false;
    };
    crate::sockopt::set_int(fd, libc::SOL_SOCKET, opt, 1).is_ok()
}

/// One datagram or frame without waiting (`MSG_DONTWAIT`): its length and the kernel's arrival
/// stamp (if [`enable`]d), `None` when nothing is queued.
pub fn recv(fd: &impl AsFd, buf: &mut [u8]) -> io::Result<Option<(usize, Option<SystemTime>)>> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one cmsghdr with a struct timespec, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is a plain C struct; all-zero is valid and the fields used are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: the descriptor is borrowed from an open socket; the iovec points into `buf` and the
    // control pointer into `control`, both writable for the lengths given and alive for the call.
    let n = unsafe { libc::recvmsg(fd.as_fd().as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(None),
            _ => Err(e),
        };
    }
    let mut stamp = None;
    // SAFETY: recvmsg succeeded and `control` is alive: CMSG_FIRSTHDR/CMSG_NXTHDR walk the
    // control data within msg_controllen; an SCM_TIMESTAMPNS payload is a struct timespec,
    // read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && Some((*c).cmsg_type) == SO_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok(Some((n as usize, stamp)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_carries_its_arrival_time() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(enable(&rx));
        let mut buf = [0u8; 16];
        assert!(recv(&rx, &mut buf).unwrap().is_none(), "nothing queued yet");
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // The kernel turns receive stamping on for the whole machine a moment after the first
        // socket asks (a deferred static key); until then a packet is stamped when read. So
        // up to 40 tries (2 s), each read 50 ms after its send.
        let mut seen = Vec::new();
        for _ in 0..40 {
            let before = SystemTime::now();
            tx.send_to(b"stamp", rx.local_addr().unwrap()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            let after = SystemTime::now();
            let (n, at) = recv(&rx, &mut buf).unwrap().expect("the datagram");
            assert_eq!(&buf[..n], b"stamp");
            let at = at.expect("a kernel timestamp");
            assert!(at >= before, "{at:?} before the send at {before:?}");
            let age = after.duration_since(at).unwrap_or_default();
            if age >= Duration::from_millis(40) {
                return; // stamped on arrival, not when read 50 ms later
            }
            seen.push(age);
        }
        panic!("every datagram was stamped when read, not on arrival: ages {seen:?}");
    }
}
