//! `sendmmsg`/`recvmmsg`: many datagrams per system call on a connected (send) or bound
//! (receive) UDP socket, for the packet-rate mode. `socket2` and `std` have no batched calls.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// One message header per iovec, each with that one buffer and no address or control data.
fn headers(iov: &mut [libc::iovec]) -> Vec<libc::mmsghdr> {
    iov.iter_mut()
        .map(|v| {
            // SAFETY: mmsghdr is a plain C struct of pointers and integers; all-zero is a valid
            // (empty) value, and the fields used are set below.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect()
}

/// Sends each buffer as one datagram to the socket's connected peer, in one call; returns how
/// many went out (fewer than `bufs.len()` when the socket buffer filled).
pub fn sendmmsg(fd: &impl AsFd, bufs: &[&[u8]]) -> io::Result<usize> {
    let mut iov: Vec<libc::iovec> = bufs
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        })
        .collect();
    let mut msgs = headers(&mut iov);
    // SAFETY: the descriptor is borrowed from an open socket for the call; `msgs` holds
    // `msgs.len()` initialised headers whose iovecs point into `bufs`, which outlive the call and
    // which the kernel only reads.
    let n = unsafe {
        libc::sendmmsg(
            fd.as_fd().as_raw_fd(),
            msgs.as_mut_ptr(),
            msgs.len() as libc::c_uint,
            0,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Receives up to `bufs.len()` datagrams in one call, waiting for the first (up to the socket's
/// receive timeout) and taking what else is queued; writes each one's length into `lens` and
/// returns how many arrived.
pub fn recvmmsg(fd: &impl AsFd, bufs: &mut [Vec<u8>], lens: &mut [usize]) -> io::Result<usize> {
    let count = bufs.len().min(lens.len());
    let mut iov: Vec<libc::iovec> = bufs[..count]
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs = headers(&mut iov);
    // SAFETY: the descriptor is borrowed from an open socket; `msgs` holds `count` headers whose
    // iovecs point into `bufs` (valid for writes of their lengths and alive for the call);
    // MSG_WAITFORONE returns once one datagram arrived; a null timeout uses the socket's.
    let n = unsafe {
        libc::recvmmsg(
            fd.as_fd().as_raw_fd(),
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    for (l, m) in lens.iter_mut().zip(&msgs[..n]) {
        *l = m.msg_len as usize;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_batch_goes_out_and_comes_back_whole() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let data: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 10 + usize::from(i)]).collect();
        let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        assert_eq!(sendmmsg(&tx, &refs).unwrap(), 8);
        let mut bufs = vec![vec![0u8; 64]; 16];
        let mut lens = [0usize; 16];
        let mut got = 0;
        while got < 8 {
            let n = recvmmsg(&rx, &mut bufs[got..], &mut lens[got..]).unwrap();
            got += n;
        }
        for i in 0..8 {
            assert_eq!(lens[i], 10 + i);
            assert!(bufs[i][..lens[i]].iter().all(|b| usize::from(*b) == i));
        }
    }
}
