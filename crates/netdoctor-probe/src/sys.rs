//! `recvmsg` with a control buffer (kernel timestamps, error queue), which `socket2` does not
//! wrap with control messages. Control messages are then parsed from bytes without further
//! `unsafe`. (Socket options go through `netdoctor_sys::sockopt`.)

use std::io;
use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{SockAddr, Socket};

/// What one `recvmsg` returned.
pub(crate) struct Received {
    /// Bytes of payload written to the data buffer.
    pub len: usize,
    /// Bytes of control messages written to the control buffer.
    pub ctrl_len: usize,
    /// Sender address, when the socket reports one.
    pub from: Option<SocketAddr>,
}

/// `recvmsg(fd, msg, flags)` into one data buffer and one control buffer.
pub(crate) fn recvmsg(
    sock: &Socket,
    buf: &mut [u8],
    ctrl: &mut [u8],
    flags: libc::c_int,
) -> io::Result<Received> {
    let fd = sock.as_raw_fd();
    // SAFETY: `try_init` hands us zeroed sockaddr storage and its length; recvmsg writes at most
    // `*len` bytes there, at most `buf.len()` bytes into `buf` and at most `ctrl.len()` bytes into
    // `ctrl`, all of which outlive the call; the msghdr is fully initialised (zeroed, then set).
    let ((len, ctrl_len), addr) = unsafe {
        SockAddr::try_init(|storage, addr_len| {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = storage.cast();
            msg.msg_namelen = *addr_len;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = ctrl.as_mut_ptr().cast();
            msg.msg_controllen = ctrl.len() as _;
            let n = libc::recvmsg(fd, &mut msg, flags);
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            *addr_len = msg.msg_namelen;
            Ok((n as usize, msg.msg_controllen as usize))
        })?
    };
    Ok(Received {
        len,
        ctrl_len: ctrl_len.min(ctrl.len()),
        from: addr.as_socket(),
    })
}

fn align(n: usize) -> usize {
    let a = size_of::<usize>();
    (n + a - 1) & !(a - 1)
}

/// One control message: (level, type, data).
pub(crate) type Cmsg<'a> = (libc::c_int, libc::c_int, &'a [u8]);

/// Splits a control buffer into messages, as `CMSG_FIRSTHDR`/`CMSG_NXTHDR` do.
pub(crate) fn cmsgs(ctrl: &[u8]) -> Vec<Cmsg<'_>> {
    let hdr = size_of::<libc::cmsghdr>();
    let mut out = Vec::new();
    let mut off = 0;
    while off + hdr <= ctrl.len() {
        let c = &ctrl[off..];
        let (len_bytes, rest) = c.split_at(size_of::<usize>());
        let Ok(len_arr) = len_bytes.try_into() else {
            break;
        };
        let cmsg_len = usize::from_ne_bytes(len_arr);
        let level = libc::c_int::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let typ = libc::c_int::from_ne_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if cmsg_len < hdr || off + cmsg_len > ctrl.len() {
            break;
        }
        out.push((level, typ, &ctrl[off + align(hdr)..off + cmsg_len]));
        off += align(cmsg_len);
    }
    out
}

/// Reads a `struct timespec` (64-bit `time_t`, as on every 64-bit Linux) at `data[i*16..]`.
pub(crate) fn timespec_at(data: &[u8], i: usize) -> Option<Duration> {
    let b = data.get(i * 16..i * 16 + 16)?;
    let sec = i64::from_ne_bytes(b[0..8].try_into().ok()?);
    let nsec = i64::from_ne_bytes(b[8..16].try_into().ok()?);
    if sec == 0 && nsec == 0 {
        return None; // "no timestamp" in scm_timestamping slots
    }
    Some(Duration::new(
        u64::try_from(sec).ok()?,
        u32::try_from(nsec).ok()?,
    ))
}

/// The receive timestamp (`SCM_TIMESTAMPNS`, CLOCK_REALTIME) among `cmsgs`.
pub(crate) fn rx_timestamp(cmsgs: &[Cmsg<'_>]) -> Option<Duration> {
    cmsgs
        .iter()
        .find(|(l, t, _)| *l == libc::SOL_SOCKET && *t == libc::SCM_TIMESTAMPNS)
        .and_then(|(_, _, d)| timespec_at(d, 0))
}

/// The software transmit timestamp (`SCM_TIMESTAMPING` slot 0) from an error-queue message.
pub(crate) fn tx_timestamp(cmsgs: &[Cmsg<'_>]) -> Option<Duration> {
    cmsgs
        .iter()
        .find(|(l, t, _)| *l == libc::SOL_SOCKET && *t == libc::SCM_TIMESTAMPING)
        .and_then(|(_, _, d)| timespec_at(d, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(buf: &mut Vec<u8>, level: i32, typ: i32, data: &[u8]) {
        let hdr = size_of::<libc::cmsghdr>();
        let start = buf.len();
        buf.extend_from_slice(&(hdr + data.len()).to_ne_bytes());
        buf.extend_from_slice(&level.to_ne_bytes());
        buf.extend_from_slice(&typ.to_ne_bytes());
        buf.resize(start + align(hdr), 0);
        buf.extend_from_slice(data);
        buf.resize(start + align(hdr + data.len()), 0);
    }

    fn ts(sec: i64, nsec: i64) -> Vec<u8> {
        let mut v = sec.to_ne_bytes().to_vec();
        v.extend_from_slice(&nsec.to_ne_bytes());
        v
    }

    #[test]
    fn parses_control_messages() {
        let mut buf = Vec::new();
        push(&mut buf, libc::SOL_IP, libc::IP_RECVERR, &[1, 2, 3]); // odd length: padding follows
        let mut three = ts(0, 0);
        three.extend(ts(0, 0));
        three.extend(ts(0, 0));
        three[..16].copy_from_slice(&ts(5, 6));
        push(&mut buf, libc::SOL_SOCKET, libc::SCM_TIMESTAMPING, &three);
        push(&mut buf, libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &ts(7, 8));
        let c = cmsgs(&buf);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].2, &[1, 2, 3]);
        assert_eq!(tx_timestamp(&c), Some(Duration::new(5, 6)));
        assert_eq!(rx_timestamp(&c), Some(Duration::new(7, 8)));
        // truncated buffer: no panic, only complete messages
        assert!(cmsgs(&buf[..buf.len() - 1]).len() < 3);
        assert!(cmsgs(&[0u8; 3]).is_empty());
    }
}
